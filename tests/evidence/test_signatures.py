"""Every row of the signature table (signatures/signatures.yaml) cites a primary source and
recognizes the lines in its examples, as pasted: bare, under an NCCL prefix, behind a launcher
tag or a timestamp, quoted from mail or commented out. The table loads through the one YAML
loader and a bad row is a located error."""

from __future__ import annotations

import pytest

from allreduce_doctor.evidence import signatures
from allreduce_doctor.evidence.signatures import SignatureError
from tests.evidence.helpers import facts, load_text

ROWS = signatures.signatures()
EXAMPLES = [(row.kind, line) for row in ROWS for line in row.examples]
# Host lines a tool recognizer reads first (lspci's ACSCtl, dmesg's DMAR): there the node fact is
# made (log.host, kernel.dmesg) and the runbooks decide; the row still names the lone line.
TOOL_READ = {"acs_redirect", "iommu_fault", "peermem_error", "pcie_aer_uncorrected", "nic_fw_fatal", "nic_module_event"}
PREFIXES = ("", "gpu-node-7:4242:4301 [3] ", "[1,3]<stdout>:", "2025-05-10T23:09:41Z ", "> ", "# ", "  - ")


def _with_prefix(prefix: str, line: str) -> str:
    if prefix.startswith("gpu-node") and "NCCL " not in line:  # the NCCL prefix goes before the level
        return f"{prefix}NCCL WARN {line}"
    return prefix + line


def test_every_row_cites_a_source_with_versions():
    assert len(ROWS) >= 40
    for row in ROWS:
        assert row.source["repo"].count("/") == 1 and row.source["path"] and row.source["versions"], row.kind
        assert row.says and row.examples, row.kind


@pytest.mark.parametrize("prefix", PREFIXES, ids=["bare", "nccl", "mpirun", "stamp", "mail", "comment", "bullet"])
@pytest.mark.parametrize("kind,line", EXAMPLES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(EXAMPLES)])
def test_example_line_is_its_own_kind(tmp_path, kind, line, prefix):
    text = _with_prefix(prefix, line)
    result = load_text(tmp_path, text + "\n")  # never refused
    errors = {o.fact: o.value for o in result.observations}["log.nccl"]["errors"]
    if kind in TOOL_READ and not errors:
        assert signatures.match(text).kind == kind
        assert result.report["files"][0]["segments"][0]["kind"] in ("pcie_fragment", "lspci", "kernel_log")
    else:
        assert list(errors) == [kind], errors


def test_each_kind_has_candidates_that_are_catalogue_causes():
    from allreduce_doctor.runbook.causes import CAUSES

    table = signatures.candidates()
    for kind, cands in table.items():
        for cand in cands:
            assert cand.cause in CAUSES and not CAUSES[cand.cause].healthy, (kind, cand.cause)
            assert cand.next_step and cand.basis, (kind, cand.cause)


def test_a_bad_pattern_is_a_located_error(tmp_path, monkeypatch):
    (tmp_path / "signatures.yaml").write_text(
        "signatures:\n- kind: x\n  match: '(['\n  says: s\n  blocking: true\n"
        "  source: {repo: a/b, path: p, versions: [v1]}\n  examples: [x]\n")
    monkeypatch.setattr(signatures, "data_dir", lambda name: tmp_path)
    signatures.signatures.cache_clear()
    try:
        with pytest.raises(SignatureError, match=r"signatures.yaml:2: signature 'x': bad pattern"):
            signatures.signatures()
    finally:
        signatures.signatures.cache_clear()


FRAGMENTS = {
    # A lone WARN message, without NCCL's prefix, inside prose (NVIDIA/nccl#1267's title).
    "address_family": "we got ncclSocketInit: connecting to address with family 0 is neither AF_INET(2) "
                      "nor AF_INET6(10) on one node\n",
    # A mail quote of a log (NVIDIA/nccl#394).
    "gid_change": "> node01: VM-0-14-centos:106:196 [0] transport/net_ib.cc:73 NCCL WARN NET/IB : "
                  "Got async event : GID table change\n",
    # An nccl-tests failure line, which has no NCCL prefix (NVIDIA/nccl-tests#264).
    "fabric_manager": "Test CUDA failure common.cu:941 'system not yet initialized'\n",
    # A Python stack's last line naming NCCL's result string (pytorch).
    "system_error": "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, "
                    "NCCL version 2.10.3\n",
}


@pytest.mark.parametrize("kind", sorted(FRAGMENTS))
def test_fragments_with_a_signal_are_read_not_refused(tmp_path, kind):
    assert list(facts(tmp_path, FRAGMENTS[kind])["log.nccl"]["errors"]) == [kind]


def test_a_quoted_connection_line_is_a_transport(tmp_path):
    text = "9[1a000] -> 2[6b000] [send] via NET/IB/0/GDRDMA\n9[1a000] -> 2[6b000] [receive] via NET/IB/1\n"
    assert facts(tmp_path, text)["log.nccl"]["transports"] == ["NET/IB/0/GDRDMA", "NET/IB/1"]


def test_text_without_a_signal_is_refused_with_what_to_paste(tmp_path):
    from allreduce_doctor.evidence import NOTHING, EvidenceError

    with pytest.raises(EvidenceError) as err:
        load_text(tmp_path, "the job is slow since Tuesday, any idea?\n")
    assert str(err.value).endswith(NOTHING) and "NCCL_DEBUG_SUBSYS=INIT,NET" in NOTHING
