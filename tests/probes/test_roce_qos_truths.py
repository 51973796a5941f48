"""RoCE settings that were unjudged (issue 13: the PFC buffer map, the CNP priority, PCIe back-pressure, and the
site's pfc_priority), at their edges: the declared priority, the PFC buffer map, the CNP priority,
bnxt_re's congestion control, PCIe back-pressure before loss, and a LAG device's bond members."""

from __future__ import annotations

from allreduce_doctor.doctor import Doctor
from allreduce_doctor.hosts.base import HostIdentity
from allreduce_doctor.observations import MISSING, OK, Observation, Observations
from allreduce_doctor.probes import derive_counters
from allreduce_doctor.probes.derive_roce import roce_priority, roce_traffic
from allreduce_doctor.probes.enumerate import Enumerator
from allreduce_doctor.runbook.walk import decide
from tests.probes.counter_inputs import _RUNBOOKS, ETH_FIRST, ETH_GROWTH, HW_FIRST, HW_GROWTH, grown, outcome, record, roce_port
from tests.scenarios.fakehost import FakeHost

MLNX_QOS = {"name": "eth0", "pfc_enabled": [3], "trust": "dscp", "dscp2prio": {},
            "prio2buffer": [0, 0, 0, 1, 0, 0, 0, 0], "buffers": [130944, 130944, 0, 0, 0, 0, 0, 0]}


def ok(value) -> Observation:
    return Observation("", value, OK)


def missing() -> Observation:
    return Observation("", None, MISSING, reason="not observed")


def _priority(qos=None, policy=None, **facts):
    inputs = {"rdma.compute_ports": ok([{"name": "mlx5_0/1", "netdev": "eth0", "link_layer": "Ethernet"}]),
              "net.qos": ok([dict(MLNX_QOS, **(qos or {}))]),
              "nccl.env": ok({"vars": {"NCCL_IB_TC": "106"}, "job_found": True}),
              "net.ecn_np": missing(), "net.ecn_rp": missing(), "rdma.tclass": missing(),
              "site.policy": ok(policy or {}), **{k: ok(v) for k, v in facts.items()}}
    return roce_priority(inputs).value


def _check(node: str, rows: list[dict], fact: str = "roce.priority") -> str:
    if not _RUNBOOKS:
        outcome("roce.loss", roce_port())  # loads the shipped runbooks once
    facts = Observations()
    facts.add(Observation(fact, rows, OK))
    return decide(_RUNBOOKS[0].node(node), facts, {}).step.outcome


def test_the_declared_pfc_priority_is_judged_against_nccls_priority_and_pfc():
    same = _priority(policy={"pfc_priority": 3, "source": "site.toml"})[0]
    other = _priority(policy={"pfc_priority": 4, "source": "site.toml"})[0]
    assert (same["off_declared"], same["off_declared_why"]) == (False, "")
    assert (other["off_declared"], other["off_declared_why"]) == (True, (
        "NCCL's traffic lands on priority 3, the site declares 4; PFC is on [3], not on the declared priority 4"))
    assert [_check("roce.declared_priority", [r]) for r in (same, other)] == ["no", "yes"]


def test_nothing_declared_or_a_lossy_fabric_leaves_the_priority_unjudged():
    for policy in ({}, {"roce_mode": "lossy", "pfc_priority": 4}):
        row = _priority(policy=policy)[0]
        assert row["off_declared"] is False and _check("roce.declared_priority", [row]) == "no"
    unreadable = _priority(qos={"pfc_enabled": None}, policy={"pfc_priority": 3})[0]
    assert unreadable["off_declared"] is None and _check("roce.declared_priority", [unreadable]) == "unknown"


def test_nccls_pfc_priority_needs_a_buffer_with_room_and_sharing_buffer_0_is_only_noted():
    own = _priority()[0]
    shared = _priority(qos={"prio2buffer": [0] * 8})[0]
    empty = _priority(qos={"buffers": [130944, 0, 0, 0, 0, 0, 0, 0]})[0]
    assert (own["buffer"], own["buffer_size"], own["buffer_bad"]) == (1, 130944, False)
    # every priority in buffer 0 is what `mlnx_qos --pfc` alone leaves: noted, not a fault
    assert (shared["buffer_bad"], shared["buffer_why"]) == (False, "buffer 0 also holds lossy priorities [0, 1, 2, 4, 5, 6, 7] (noted, not a fault)")
    assert (empty["buffer_bad"], empty["buffer_why"]) == (True, "priority 3 maps to buffer 1, whose size is 0")
    assert [_check("roce.pfc_buffer", [r]) for r in (own, shared, empty)] == ["no", "no", "yes"]


def test_a_tool_without_a_buffer_map_is_not_judged():
    dcb = _priority(qos={"prio2buffer": None, "buffers": None})[0]
    assert (dcb["buffer_known"], dcb["buffer_bad"]) == (False, None)
    assert _check("roce.pfc_buffer", [dcb]) == "no"


def test_the_cnp_priority_from_mlnx_ofed_or_the_inbox_debugfs():
    apart = _priority(**{"net.cnp_mlnx": [{"name": "eth0", "cnp_dscp": 48, "cnp_802p_prio": 6}]})[0]
    shared = _priority(**{"net.cnp_mlnx": [{"name": "eth0", "cnp_dscp": 26, "cnp_802p_prio": 6}]})[0]
    inbox = _priority(**{"net.cc_mlx5": [{"name": "eth0", "np_cnp_dscp": 24, "np_cnp_prio": 6}]})[0]
    unread = _priority()[0]
    assert [(r["cnp_priority"], r["cnp_shares_data"]) for r in (apart, shared, inbox, unread)] == [
        (6, False), (3, True), (3, True), (None, None)]
    assert [_check("roce.cnp_priority", [r]) for r in (apart, shared, unread)] == ["no", "yes", "no"]


def test_bnxt_re_congestion_control_is_read_from_debugfs():
    dcb = {"prio2buffer": None, "buffers": None}
    on = _priority(qos=dcb, **{"net.cc_bnxt": [{"name": "eth0", "enable_cc": 1, "tos_ecn": 1}]})[0]
    off = _priority(qos=dcb, **{"net.cc_bnxt": [{"name": "eth0", "enable_cc": 0, "tos_ecn": 1}]})[0]
    no_ect = _priority(qos=dcb, **{"net.cc_bnxt": [{"name": "eth0", "enable_cc": 1, "tos_ecn": 0}]})[0]
    unread = _priority(qos=dcb)[0]
    assert [r["ecn_on_priority"] for r in (on, off, no_ect, unread)] == [True, False, False, None]
    assert [_check("roce.ecn", [r]) for r in (on, off, unread)] == ["no", "yes", "unknown"]
    traffic = roce_traffic({"roce.priority": ok([off]), "net.ethtool_stats": missing()}).value[0]
    assert traffic["ecn_off"] is True


PCIE = {"outbound_pci_stalled_rd_events": 0, "outbound_pci_stalled_wr_events": 0, "outbound_pci_buffer_overflow": 0,
        "rx_pci_signal_integrity": 0, "tx_pci_signal_integrity": 0}


def _pausing(tx_pause_us: int, stall: int, pcie: bool = True) -> Observation:
    first = dict(ETH_FIRST, **PCIE) if pcie else ETH_FIRST
    growth = dict(ETH_GROWTH, tx_prio3_pause_duration=tx_pause_us)
    if pcie:
        growth["outbound_pci_stalled_wr_events"] = stall
    return roce_port((first, grown(first, growth)))


def test_pcie_back_pressure_is_checked_with_transmit_pause_before_loss():
    source = _pausing(420_000, 1)
    assert (source.value[0]["pcie_stall"], source.value[0]["pause_tx_fraction"]) == (1, 0.42)
    assert [outcome(n, source) for n in ("roce.pcie_stall", "roce.pause_storm")] == ["yes", "yes"]
    clean_pcie = _pausing(420_000, 0)
    assert [outcome(n, clean_pcie) for n in ("roce.pcie_stall", "roce.pause_storm")] == ["no", "yes"]
    stall_without_pause = _pausing(150_000, 3)  # 15% is the edge: not above it
    assert [outcome(n, stall_without_pause) for n in ("roce.pcie_stall", "roce.pause_storm")] == ["no", "no"]


def test_a_nic_without_pcie_counters_is_judged_by_its_pause_alone():
    obs = _pausing(420_000, 0, pcie=False)
    assert "pcie_stall" in obs.value[0]["lacks"] and obs.reason == ""
    assert [outcome(n, obs) for n in ("roce.pcie_stall", "roce.pause_storm")] == ["no", "yes"]


def _lag_host() -> FakeHost:
    ib, net = "/sys/class/infiniband", "/sys/class/net"
    files = {f"{ib}/{dev}/ports/1/link_layer": "Ethernet" for dev in ("mlx5_bond_0", "mlx5_2")}
    files.update({f"{ib}/mlx5_bond_0/device/net/ens1f0np0/ifindex": "4", f"{ib}/mlx5_2/device/net/ens2np0/ifindex": "6"})
    links = {f"{net}/ens1f0np0/master": "/sys/devices/virtual/net/bond1",
             f"{net}/bond1/lower_ens1f0np0": "../ens1f0np0", f"{net}/bond1/lower_ens1f1np1": "../ens1f1np1",
             # a plain RoCE device whose netdev is enslaved too: not a LAG device, not expanded
             f"{net}/ens2np0/master": "/sys/devices/virtual/net/bond2", f"{net}/bond2/lower_ens2np0": "../ens2np0",
             f"{net}/bond2/lower_ens3np0": "../ens3np0"}
    return FakeHost(files=files, links=links, identity=HostIdentity("n", "6.8.0", 0, True))


def test_a_lag_device_enumerates_every_bond_member():
    items = Enumerator(_lag_host(), Doctor.load().catalogue.enumerators).items("roce_netdev")
    assert [(i["name"], i["device"], i["bond"]) for i in items] == [
        ("ens1f0np0", "mlx5_bond_0", "bond1"), ("ens1f1np1", "mlx5_bond_0", "bond1"), ("ens2np0", "mlx5_2", "bond2")]


def test_loss_on_the_second_bond_member_is_found():
    port = {"name": "mlx5_bond_0/1", "netdev": "ens1f0np0", "link_layer": "Ethernet", "state": {"name": "ACTIVE"},
            "rate_gbps": 400}
    quiet = (ETH_FIRST, grown(ETH_FIRST, ETH_GROWTH))
    lossy = (ETH_FIRST, grown(ETH_FIRST, dict(ETH_GROWTH, rx_prio3_discards=48_000)))
    members = [{"name": m, "device": "mlx5_bond_0", "port": "1", "netdev": m} for m in ("ens1f0np0", "ens1f1np1")]
    obs = derive_counters.roce_counters({
        "rdma.compute_ports": ok([port]),
        "net.ethtool_stats": ok([record("ens1f0np0", "ethtool", *quiet), record("ens1f1np1", "ethtool", *lossy)]),
        "rdma.hw_counters": ok([record("mlx5_bond_0/1", "hw_counters", HW_FIRST, grown(HW_FIRST, HW_GROWTH))]),
        "roce.priority": ok([{"name": m, "priority": 3, "pfc_on_priority": True} for m in ("ens1f0np0", "ens1f1np1")]),
        "net.roce_members": ok(members)})
    assert [(r["name"], r["port"], r["discards_ppm"]) for r in obs.value] == [
        ("ens1f0np0", "mlx5_bond_0/1", 0.0), ("ens1f1np1", "mlx5_bond_0/1", 33149.171)]
    assert outcome("roce.loss", obs) == "yes"
