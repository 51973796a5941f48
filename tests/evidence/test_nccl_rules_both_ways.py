"""NCCL's own reading of a setting, live or pasted: a job's NCCL_IB_HCA, NCCL_NET_GDR_LEVEL,
NCCL_SOCKET_IFNAME and NCCL_IB_TIMEOUT, read from the node's job and pasted as `export` lines beside
the node's own tool outputs (ibstat, nvidia-smi topo -m, lspci -vvv) and NCCL's version line, get
the same judgement (issue 27: the NCCL rules both sides need, written once in nccl_rules/).

hypothesis draws NCCL's spellings: case (names are strcmp/strncmp-matched), `^` and `=` prefixes in
NCCL's order, ports, v2.30.7's rail:plane fields, the old level numbering, strtoll's 0x/octal.
"""

from __future__ import annotations

import contextlib
import io
import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.cli import main
from allreduce_doctor.doctor import Doctor
from allreduce_doctor.session import Options, Session
from tests.scenarios import nodes as N
from tests.scenarios import tools as T
from tests.scenarios.build import MICROCHIP_SWITCH, fake_host

VERSIONS = st.sampled_from(["2.21.5", "2.23.4", "2.29.2", "2.30.7"])
_DEV = st.sampled_from(["mlx5_0", "mlx5_1", "mlx5_7", "mlx5", "MLX5_0", "mlx5_3", " mlx5_2"])
_PORT = st.sampled_from(["", ":1", ":2", ":1:0:0", "::0:0", ":0", ":"])
HCA = st.builds(lambda pre, items: pre + ",".join(items), st.sampled_from(["", "^", "=", "^=", "=^"]),
                st.lists(st.builds(str.__add__, _DEV, _PORT), min_size=1, max_size=4))
SETTINGS = st.fixed_dictionaries({}, optional={
    "NCCL_IB_HCA": HCA,
    "NCCL_NET_GDR_LEVEL": st.sampled_from(["LOC", "loc", "NVL", "nvl", "C2C", "PIX", "pix", "PXB", "P2C", "PHB",
                                           "SYS", "0", "1", "2", "0x1", "9", "", "x"]),
    "NCCL_SOCKET_IFNAME": st.sampled_from(["bond0", "BOND0", "=bond0", "^=bond0", "^bond", "bond0:1", "=bond",
                                           "docker0", "^docker,lo", "=lo", "eth"]),
    "NCCL_IB_TIMEOUT": st.sampled_from(["0", "14", "17", "18", "19", "20", "22", "32", "0x12", "022", "", "abc"]),
})
# The steps these settings decide, on both sides (trunk.tuning reads the IB timeout).
STEPS = ("trunk.ib_hca", "trunk.gdr", "trunk.tuning", "trunk.socket_ifname")
# What the paste shows as fully as the node does (the ports, the topology, the version): NCCL_IB_HCA's
# selection is decided the same way pasted. GDR's other conditions (nvidia_peermem, DMA-BUF) are not
# in these outputs, so a GDR fault the level makes must be one pasted; "no fault" may be unknown.
DECIDED_BOTH_WAYS = ("trunk.ib_hca",)
FAULT_BOTH_WAYS = ("trunk.gdr",)


def _node(env: dict, version: str, pxb: bool) -> N.Node:
    layout = dict(topo=T.topo_pxb(), switch_name=MICROCHIP_SWITCH) if pxb else {}
    return N.Node("ib", env={"NCCL_IB_HCA": None, "NCCL_SOCKET_IFNAME": None, **env},
                  nccl_lib=f"/usr/lib/x86_64-linux-gnu/libnccl.so.{version}", **layout)


def _node_path(node: N.Node) -> dict:
    data = Session(Doctor.load(), fake_host(node), Options(interval=0)).diagnose().to_dict()
    return {p["node"]: p for p in data["path"]}


def _paste_path(tmp_path, node: N.Node, env: dict, version: str) -> dict:
    host = fake_host(node)
    outputs = {("ibstat",): T.ibstat(node), ("nvidia-smi", "topo", "-m"): node.topo or T.reference(
        "nvidia-smi-topo-m-h100-8gpu-8nic.txt"), ("lspci", "-vvv"): T.lspci_vvv(node)}
    assert host is not None
    text = "".join(f"$ {' '.join(argv)}\n{out}\n" for argv, out in outputs.items())
    text += f"gpu-node-017:4242:4242 [0] NCCL INFO NCCL version {version}+cuda12.4\n"
    text += "".join(f'export {k}="{v}"\n' for k, v in env.items())  # quoted: values may hold spaces
    path = tmp_path / "paste.txt"
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(path), "--format", "json"])
    return {p["node"]: p for p in json.loads(out.getvalue())["path"]}


def _gdr(path: dict) -> str | None:
    """The GDR step's outcome: the trunk's on a node; a paste with NCCL's lines walks nccl_log.gdr."""
    step = path.get("trunk.gdr") or path.get("nccl_log.gdr")
    return step and step["outcome"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=SETTINGS, version=VERSIONS, pxb=st.booleans())
def test_nccl_settings_pasted_or_read_get_the_same_judgement(tmp_path, env, version, pxb):
    node = _node(env, version, pxb)
    live, paste = _node_path(node), _paste_path(tmp_path, node, env, version)
    for step in STEPS:
        if step in live and step in paste:
            want = live[step]["outcome"]
            assert paste[step]["outcome"] in (want, "unknown"), (step, env, version, live[step], paste[step])
            pasted_var = step != "trunk.ib_hca" or "NCCL_IB_HCA" in env  # an unpasted variable is unknown
            if (step in DECIDED_BOTH_WAYS and pasted_var) or (step in FAULT_BOTH_WAYS and want == "yes"):
                assert paste[step]["outcome"] == want, (step, env, version, live[step], paste[step])
    if "trunk.gdr" in live and "trunk.gdr" not in paste and _gdr(paste) is not None:
        want = _gdr(live)
        assert _gdr(paste) in ((want,) if want == "yes" else (want, "unknown")), (env, version, live["trunk.gdr"],
                                                                                  paste["nccl_log.gdr"])


def test_rail_grammar_of_nccl_2_30_is_healthy_both_ways(tmp_path):
    """`=mlx5_0:1:0:0,...` selects port 1 of each rail at v2.30.7-1 (and, atoi'd, at v2.21.5-1)."""
    env = {"NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}:1:{i}:0" for i in range(8))}
    for version in ("2.30.7", "2.21.5"):
        node = _node(env, version, pxb=False)
        assert _node_path(node)["trunk.ib_hca"]["outcome"] == "no"
        assert _paste_path(tmp_path, node, env, version)["trunk.ib_hca"]["outcome"] == "no"


def test_an_empty_port_field_reads_by_version_both_ways(tmp_path):
    """`mlx5_0::0:0`: port 0 (nothing) before v2.30.7-1, every port from it (utils.cc parseStringList)."""
    env = {"NCCL_IB_HCA": "=" + ",".join(f"mlx5_{i}::0:0" for i in range(8))}
    for version, outcome in (("2.30.7", "no"), ("2.29.2", "yes")):
        node = _node(env, version, pxb=False)
        assert _node_path(node)["trunk.ib_hca"]["outcome"] == outcome
        assert _paste_path(tmp_path, node, env, version)["trunk.ib_hca"]["outcome"] == outcome


def test_gdr_level_pix_on_pxb_and_lowercase_loc_both_ways(tmp_path):
    """PIX on a PXB layout turns GDR off (paths.cc ncclTopoCheckGdr); `loc` is no level (strcmp)."""
    for env, pxb, outcome in (({"NCCL_NET_GDR_LEVEL": "PIX"}, True, "yes"), ({"NCCL_NET_GDR_LEVEL": "loc"}, False, "no"),
                              ({"NCCL_NET_GDR_LEVEL": "NVL"}, False, "yes")):
        node = _node(env, "2.21.5", pxb)
        assert _node_path(node)["trunk.gdr"]["outcome"] == outcome, env
        pasted = _gdr(_paste_path(tmp_path, node, env, "2.21.5"))
        assert pasted == outcome if outcome == "yes" else pasted in ("no", "unknown"), (env, pasted)
