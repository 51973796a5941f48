"""One rule, two sources: a setting read from the node's job and the same setting pasted as text
reach the same runbook step with the same outcome (issue 11: pasted text is one more source of
the node's facts, not a second rule engine).

The node side is a scenario node (tests/scenarios) whose job runs with the setting; the paste side is
`export NAME=VALUE` lines diagnosed as evidence only. For each shared rule the step's outcome must
agree whatever the values (hypothesis draws them, real and virtual interfaces, forced tuning, ...).
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
from tests.scenarios.build import fake_host

# The trunk steps that read the job's NCCL variables, and the variables each reads.
IFACES = st.sampled_from(["bond0", "eth0", "ens1f0", "ib0", "docker0", "br-5f3a", "virbr0", "veth12ab", "lo",
                          "cni0", "^docker,lo", "=bond0", "flannel.1", "cali7e3", "lxdbr0"])
SETTINGS = st.fixed_dictionaries({}, optional={
    "NCCL_SOCKET_IFNAME": IFACES,
    "NCCL_IB_DISABLE": st.sampled_from(["0", "1"]),
    "NCCL_P2P_DISABLE": st.sampled_from(["0", "1"]),
    "NCCL_P2P_LEVEL": st.sampled_from(["LOC", "loc", "NVL", "SYS", "0", "5"]),
    "NCCL_MAX_NCHANNELS": st.sampled_from(["1", "2", "8", "16", "32"]),
    "NCCL_PROTO": st.sampled_from(["LL", "LL128", "Simple", "^LL", "^Simple", "LL,LL128,Simple"]),
    "NCCL_BUFFSIZE": st.sampled_from(["65536", "1048576", "4194304", "8388608"]),
    # brief node (MF-6): transport, GPUDirect and IB transport overrides
    "NCCL_NET": st.sampled_from(["Socket", "socket", "IB", "AWS Libfabric"]),
    "NCCL_NET_GDR_LEVEL": st.sampled_from(["LOC", "loc", "0", "PIX", "SYS", "5"]),
    "NCCL_IB_ADAPTIVE_ROUTING": st.sampled_from(["0", "1"]),
    "NCCL_IB_TIMEOUT": st.sampled_from(["10", "14", "18", "20", "22"]),
    "NCCL_IB_RETRY_CNT": st.sampled_from(["3", "7"]),
})
# Steps that read the job's variables: both sources may never give opposite answers.
STEPS = {"trunk.ib_disable_env", "trunk.p2p_env", "trunk.tuning", "trunk.gdr"}
# Of those, the steps the variables alone decide: a fault read from the node is a fault pasted.
# (trunk.tuning also reads how many NICs NCCL uses, which `export` lines do not show.)
BY_VARIABLES_ALONE = {"trunk.ib_disable_env", "trunk.p2p_env"}
# NCCL_SOCKET_IFNAME: the node also knows which interfaces exist; the paste does not, so only
# "virtual or loopback" (knowable from the name) must agree.
SOCKET = "trunk.socket_ifname"


def _node_path(env: dict) -> dict:
    node = N.Node("ib", env={"NCCL_SOCKET_IFNAME": None, **env})
    data = Session(Doctor.load(), fake_host(node), Options(interval=0)).diagnose().to_dict()
    return {p["node"]: p for p in data["path"]}


def _paste_path(tmp_path, env: dict) -> dict:
    path = tmp_path / "paste.txt"
    path.write_text("".join(f"export {k}={v}\n" for k, v in env.items()) or "export NCCL_DEBUG=INFO\n")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["diagnose", "--evidence", str(path), "--format", "json"])
    return {p["node"]: p for p in json.loads(out.getvalue())["path"]}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(env=SETTINGS)
def test_a_setting_pasted_or_read_decides_the_same_step_the_same_way(tmp_path, env):
    node, paste = _node_path(env), _paste_path(tmp_path, env)
    for step in STEPS:
        # A step the walk did not reach on one side (an earlier fault) says nothing; where both
        # reached it, the node's answer is what the paste must give (or unknown when the paste lacks
        # a fact the step also reads: never the opposite answer).
        if step in node and step in paste:
            assert paste[step]["outcome"] in (node[step]["outcome"], "unknown"), (step, env, node[step], paste[step])
            if node[step]["outcome"] == "yes" and step in BY_VARIABLES_ALONE:
                assert paste[step]["outcome"] == "yes", (step, env)
    spec = env.get("NCCL_SOCKET_IFNAME")
    if spec and SOCKET in node and SOCKET in paste and node[SOCKET]["outcome"] == "yes" \
            and "virtual" in json.dumps(node[SOCKET]["value"]):
        assert paste[SOCKET]["outcome"] == "yes", (env, paste[SOCKET])


def test_a_docker_user_bridge_is_virtual_on_both_sides(tmp_path):
    """The drift the issue found: br-5f3a was a fault pasted and healthy read from the node."""
    env = {"NCCL_SOCKET_IFNAME": "br-5f3a"}
    node, paste = _node_path(env), _paste_path(tmp_path, env)
    assert node[SOCKET]["outcome"] == paste[SOCKET]["outcome"] == "yes"
