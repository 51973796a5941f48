"""The OFI net plugin named in the text (NCCL reaches EFA only through it): its path ranks the plugin
not loaded first, a plain libnccl-net.so is not it, and an OFI failure beside it ranks first."""

from __future__ import annotations

from allreduce_doctor.evidence import signatures
from tests.evidence.helpers import diagnose_json as _diagnose
from tests.evidence.helpers import ranked as _ranked

# -- the OFI net plugin named: NCCL reaches EFA only through it (a dlopen by name) ------------------
OFI = "On our p5 nodes the image has no /opt/amazon/ofi-nccl/lib in LD_LIBRARY_PATH and training is slow.\n"


def test_a_named_ofi_plugin_path_ranks_the_plugin_not_loaded_first(tmp_path):
    rc, d, path = _diagnose(tmp_path, OFI, "--symptom", "slow")
    assert rc == 3 and _ranked(d)[:2] == ["net_plugin_not_loaded", "efa_ofi_misconfigured"]
    first = d["findings"][0]
    assert (first["confidence"], first["supporting"]) == ("low", [f"{path}:1: {OFI.strip()}"])
    assert first["next_step"] == ("paste the `NET/Plugin` and `Using network` lines of one rank (NCCL_DEBUG=INFO) "
                                  "and the job's LD_LIBRARY_PATH")


def test_a_plain_libnccl_net_so_is_not_the_ofi_plugin():
    # HPC-X's SHARP plugin (IBext) is libnccl-net.so as well.
    assert signatures.match("ls /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so") is None


def test_an_ofi_failure_beside_the_named_plugin_ranks_the_failure_first(tmp_path):
    warn = "ip-10-0-0-1:79:79 [0] get_ofi_provider:312 NCCL WARN NET/OFI Could not find any optimal provider\n"
    _, d, _ = _diagnose(tmp_path, OFI + warn)
    assert _ranked(d)[0] == "efa_ofi_misconfigured"
