"""The chained probe that reads the switch side of each IB port (brief peer, review MF-8)."""

from __future__ import annotations

import pytest

from allreduce_doctor.doctor import load_catalogue
from allreduce_doctor.errors import ProbeSpecError
from allreduce_doctor.hosts.base import CommandResult, HostIdentity
from allreduce_doctor.probes.execute import run_instance
from allreduce_doctor.probes.spec import load_catalogue as load_specs
from tests.scenarios import tools as T
from tests.snapshot.snapshot_helpers import FakeHost

PORT = {"device": "mlx5_4", "port": "1", "name": "mlx5_4/1"}
NODEINFO = ["smpquery", "-C", "mlx5_4", "-P", "1", "-D", "nodeinfo", "0,1"]
PORTINFO = ["smpquery", "-C", "mlx5_4", "-P", "1", "-D", "portinfo", "0,1"]
PERFQUERY = ["perfquery", "-C", "mlx5_4", "-P", "1", "16", "21"]
TOOLS = {"smpquery": "/usr/sbin/smpquery", "perfquery": "/usr/sbin/perfquery"}
ROOT = HostIdentity("gpu-node-017", "6.8.0", 0, True)


def spec():
    return load_catalogue().probes["rdma_peer_counters"]


def ok(argv, text):
    return CommandResult(argv, 0, stdout=text)


def host(nodeinfo=None, portinfo=None, perfquery=None, ident=ROOT, whiches=TOOLS) -> FakeHost:
    answers = {"rdma_peer_counters.1/mlx5_4/1": nodeinfo or ok(NODEINFO, T.smp_nodeinfo(4)),
               "rdma_peer_counters.2/mlx5_4/1": portinfo or ok(PORTINFO, T.smp_portinfo(4)),
               "rdma_peer_counters.3/mlx5_4/1": perfquery or ok(PERFQUERY, T.perfquery(T.N.Node("ib"), 4, False))}
    return FakeHost(whiches=dict(whiches), ident=ident, commands={(0, k): v for k, v in answers.items()})


def test_the_peer_lid_and_port_from_the_smps_make_the_perfquery_argv():
    out = run_instance(spec(), host(), PORT)
    assert (out.status, out.source) == ("ok", " ".join(PERFQUERY))
    assert out.value["via"] == {"peer_port": 21, "peer_type": "Switch", "peer_guid": "0xfc6a1c0300e10004", "peer_lid": 16}
    assert (out.value["symbol_error"], out.value["link_downed"]) == (3, 1)


def test_the_probe_lists_each_command_it_may_run():
    assert spec().touches() == ["smpquery -C {device} -P {port} -D nodeinfo 0,{port}",
                                "smpquery -C {device} -P {port} -D portinfo 0,{port}",
                                "perfquery -C {device} -P {port} {peer_lid} {peer_port}"]


def test_a_peer_without_a_lid_ends_the_chain_before_perfquery():
    fake = host(portinfo=ok(PORTINFO, T.smp_portinfo(4, lid=-4)))
    out = run_instance(spec(), fake, PORT)
    assert (out.status, out.value) == ("missing", None)
    assert out.reason == ("the peer port has no LID (no subnet manager assigned one, or the fabric is not LID-routed)"
                          " (peer_lid = 0)")


def test_a_value_that_is_not_a_plain_token_never_reaches_an_argv():
    """A device's answer cannot add an option (such as -R, reset) to a later command."""
    fake = host(nodeinfo=ok(NODEINFO, T.smp_nodeinfo(4).replace("LocalPort:.......................21",
                                                                "LocalPort:.......................-R")))
    out = run_instance(spec(), fake, PORT)
    assert (out.status, out.reason) == ("error", "LocalPort is '-R': not a plain value to pass on")


def test_a_user_who_cannot_open_umad_needs_root():
    failed = CommandResult(NODEINFO, 255, stdout="smpquery: iberror: failed: Failed to open 'mlx5_4' port '1'\n",
                           stderr="ibwarn: [48213] mad_rpc_open_port2: can't open UMAD port (mlx5_4:1)\n")
    out = run_instance(spec(), host(nodeinfo=failed, ident=HostIdentity("n", "6.8.0", 1000, False)), PORT)
    assert (out.status, out.reason) == (
        "missing", "needs root (exit status 255: ibwarn: [48213] mad_rpc_open_port2: can't open UMAD port (mlx5_4:1))")


def test_root_whose_smp_fails_has_an_error_not_a_permission_problem():
    failed = CommandResult(PORTINFO, 255, stdout="smpquery: iberror: failed: operation portinfo: port info query failed\n")
    out = run_instance(spec(), host(portinfo=failed), PORT)
    assert (out.status, out.reason) == ("error", "exit status 255: smpquery: iberror: failed: operation portinfo: port info query failed")


def test_without_infiniband_diags_the_peer_is_missing():
    out = run_instance(spec(), host(whiches={}), PORT)
    assert (out.status, out.reason) == ("missing", "smpquery is not installed (not on PATH)")


def _catalogue(tmp_path, chain: str):
    path = tmp_path / "p.yaml"
    path.write_text("enumerators:\n  e: {glob: '/x/{device}'}\nprobes:\n  - id: p\n    provides: a.b\n"
                    "    foreach: e\n    chain:\n" + chain)
    return load_specs([path])


@pytest.mark.parametrize("chain, message", [
    ("      - command: [a, '{device}']\n", "p.yaml:7:5: probe 'p': 'chain' must be a list of two or more steps"),
    ("      - command: [a, '{lid}']\n        take: {lid: Lid}\n      - command: [b]\n",
     "p.yaml:8:9: probe 'p' step 1 uses {lid} before a step takes it"),
    ("      - command: [a]\n        expect: {lid: '^1'}\n      - command: [b]\n",
     "p.yaml:9:9: probe 'p' step 1: 'expect' names lid, which it does not take"),
    ("      - command: [a]\n        takes: {lid: Lid}\n      - command: [b]\n",
     "p.yaml:9:9: probe 'p' step 1: unknown key 'takes' did you mean 'take'?"),
    ("      - command: a b\n      - command: [b]\n",
     "p.yaml:8:9: probe 'p': 'command' must be an argv list of strings, never a shell string"),
])
def test_a_bad_chain_is_one_line_with_its_place(tmp_path, chain, message):
    with pytest.raises(ProbeSpecError) as err:
        _catalogue(tmp_path, chain)
    assert str(err.value) == message


# -- the judgement: the peer's link errors between the two samples --------------------------------
from tests.probes.counter_inputs import IB_FIRST, PEER_FIRST, grown, ib_port, outcome, peer_port, reason  # noqa: E402


def test_symbol_errors_growing_at_the_switch_port_are_found():
    derived = peer_port(PEER_FIRST, grown(PEER_FIRST, {"symbol_error": 212, "port_rcv_errors": 9}))
    row = derived.value[0]
    assert (row["peer_link_errors"], row["grew"]) == (221, {"symbol_error": 212, "port_rcv_errors": 9})
    assert row["peer"] == "Switch 0xfc6a1c0300e10004 port 21 (LID 16)"
    assert outcome("ib.peer_errors", derived) == "yes"


def test_old_errors_that_do_not_move_are_history_not_a_fault():
    assert outcome("ib.peer_errors", peer_port()) == "no"


def test_growth_at_the_switch_port_stands_on_an_idle_window():
    own = ib_port(IB_FIRST, dict(IB_FIRST))
    assert outcome("ib.peer_errors", peer_port(PEER_FIRST, grown(PEER_FIRST, {"link_downed": 1}), own)) == "yes"


def test_no_growth_on_an_idle_window_is_not_measured():
    derived = peer_port(own=ib_port(IB_FIRST, dict(IB_FIRST)))
    assert outcome("ib.peer_errors", derived) == "unknown"
    assert reason("ib.peer_errors", derived) == (
        "ib.peer_counters: the window was idle: re-run under load with `--interval 10` (mlx5_0/1)")


def test_a_symbol_error_counter_pinned_at_its_maximum_is_unknown():
    pinned = {**PEER_FIRST, "symbol_error": 65535}
    derived = peer_port(pinned, dict(pinned))
    assert outcome("ib.peer_errors", derived) == "unknown"
    assert reason("ib.peer_errors", derived) == (
        "ib.peer_counters: symbol_error is pinned at its maximum (65535): clear the port counters with "
        "`perfquery -R` (root) and re-measure (mlx5_0/1)")


def test_a_switch_port_read_once_is_unknown_not_healthy():
    """Absolute non-zero errors and no second sample: history only."""
    from allreduce_doctor.observations import MISSING, Observation
    from allreduce_doctor.probes import derive_peer

    port = {"name": "mlx5_0/1", "link_layer": "InfiniBand", "state": {"name": "ACTIVE"}, "rate_gbps": 400}
    derived = derive_peer.ib_peer_errors({
        "rdma.compute_ports": Observation("rdma.compute_ports", [port]),
        "rdma.peer_counters": Observation("rdma.peer_counters", None, MISSING, reason="the second counter sample could not be read"),
        "ib.counters": ib_port()})
    assert (derived.status, derived.reason) == ("missing", "the switch side was not read: the second counter sample could not be read")


def test_probes_list_shows_each_command_of_the_chain_with_its_timeout(capsys):
    from allreduce_doctor.commands.probes import run as cmd_probes

    assert cmd_probes(None) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("rdma_peer_counters ")]
    assert [row[1:5] for row in rows] == [["chain", "10s", "root", "smpquery"]] * 2 + [["chain", "10s", "root", "perfquery"]]
