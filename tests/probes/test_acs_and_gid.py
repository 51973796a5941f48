"""ACS judged on the switch ports above GPUs and NICs (DirectTrans+ with ATS accepted), the GID
NCCL uses named with its GID, type and netdev, and NCCL_IB_ADDR_RANGE in its automatic choice
(issue 13 FA-5, C-4; issue 14 item 3)."""

from __future__ import annotations

import pytest

from allreduce_doctor.domain import NO_ADDRESS, nccl_addr_range, nccl_auto_gid
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.parsers import parse
from allreduce_doctor.probes.derive import pci_acs
from allreduce_doctor.probes.derive_roce import gid_choice

ACS_OFF = "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- EgressCtrl- DirectTrans-"
ACS_REDIRECT = "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-"
ACS_DIRECT = "SrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans+"


def _port(bdf: str, kind: str, bus: str, acs: str | None) -> str:
    lines = [f"{bdf} PCI bridge: Broadcom / LSI PEX890xx PCIe Gen 5 Switch (rev b0)",
             f"\tBus: primary=00, secondary={bus}, subordinate={bus}, sec-latency=0",
             f"\tCapabilities: [68] Express (v2) {kind}, MSI 00"]
    if acs is not None:
        lines += ["\tCapabilities: [1cc v1] Access Control Services", f"\t\tACSCtl:\t{acs}"]
    return "\n".join(lines + ["\tKernel driver in use: pcieport"])


def _nic(bus: str, ats: str | None) -> str:
    lines = [f"{bus}:00.0 Infiniband controller: Mellanox Technologies MT2910 Family [ConnectX-7]",
             "\tCapabilities: [60] Express (v2) Endpoint, MSI 00"]
    if ats is not None:
        lines += ["\tCapabilities: [480 v1] Address Translation Service (ATS)",
                  f"\t\tATSCtl:\tEnable{ats}, Smallest Translation Unit: 00"]
    return "\n".join(lines + ["\tKernel driver in use: mlx5_core"])


def _gpu(bus: str) -> str:
    return f"{bus}:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)\n\tKernel driver in use: nvidia"


def acs_of(*stanzas: str) -> Observation:
    return pci_acs({"pci.lspci": Observation("pci.lspci", parse("lspci_vvv", "\n".join(stanzas)), OK)})


def test_the_parser_reads_ats_and_what_each_device_is_to_nccl():
    nic_on, nic_off, nic_none, gpu, bridge = parse("lspci_vvv", "\n".join(
        [_nic("1a", "+"), _nic("3c", "-"), _nic("4d", None), _gpu("19"), _port("17:01.0", "Downstream Port", "19", ACS_OFF)]))
    assert [d["ats_enabled"] for d in (nic_on, nic_off, nic_none)] == [True, False, False]
    assert [d["kind"] for d in (nic_on, gpu, bridge)] == ["nic", "gpu", None]
    [denied] = parse("lspci_vvv", "1a:00.0 Ethernet controller: Mellanox Technologies MT2910\n\tCapabilities: <access denied>\n")
    assert denied["ats_enabled"] is None and denied["kind"] == "nic"


@pytest.mark.parametrize("acs, ats, redirect, accepted", [
    (ACS_OFF, None, False, None),
    (ACS_REDIRECT, None, True, None),
    (ACS_REDIRECT, "+", True, None),  # ATS alone: the untranslated requests are still redirected
    (ACS_DIRECT, "-", True, None),  # Direct Translated P2P with nothing translated
    (ACS_DIRECT, "+", False, "DirectTrans+ with ATS enabled on 0000:1a:00.0"),
])
def test_a_switch_port_above_a_nic_redirects_unless_directtrans_meets_ats(acs, ats, redirect, accepted):
    obs = acs_of(_port("e0:01.0", "Downstream Port", "1a", acs), _nic("1a", ats))
    [port] = obs.value
    assert (obs.status, port["name"], port["redirect"], port["accepted"]) == (OK, "0000:e0:01.0", redirect, accepted)
    assert port["serves"] == "0000:1a:00.0 (nic)"


def test_root_ports_and_bridges_above_no_gpu_or_nic_are_not_judged():
    obs = acs_of(_port("00:01.0", "Root Port", "1a", ACS_REDIRECT), _port("82:00.0", "Downstream Port", "83", ACS_REDIRECT),
                 _nic("1a", None))
    assert (obs.status, obs.value) == (OK, [])


def test_a_gpu_port_is_judged_with_the_ats_of_the_nic_beside_it_under_the_switch():
    switch = "\n".join([_port("16:00.0", "Upstream Port", "17", ACS_OFF).replace("subordinate=17", "subordinate=1a")])
    stanzas = [switch, _port("17:01.0", "Downstream Port", "19", ACS_DIRECT), _gpu("19"),
               _port("17:02.0", "Downstream Port", "1a", ACS_DIRECT), _nic("1a", "+")]
    by_name = {p["name"]: p for p in acs_of(*stanzas).value}
    assert by_name["0000:17:01.0"]["redirect"] is False and by_name["0000:17:01.0"]["nic_ats"] == "0000:1a:00.0=True"
    assert by_name["0000:16:00.0"]["serves"] == "0000:19:00.0 (gpu), 0000:1a:00.0 (nic)"


def test_an_unreadable_port_or_ats_is_unknown_and_missing_lspci_blocks():
    hidden = "e0:01.0 PCI bridge: Broadcom\n\tBus: primary=00, secondary=1a, subordinate=1a\n\tCapabilities: <access denied>"
    [port] = acs_of(hidden, _nic("1a", None)).value
    assert port["redirect"] is None
    nic_hidden = "1a:00.0 Infiniband controller: Mellanox Technologies\n\tCapabilities: <access denied>"
    [port] = acs_of(_port("e0:01.0", "Downstream Port", "1a", ACS_DIRECT), nic_hidden).value
    assert port["redirect"] is None
    blocked = pci_acs({"pci.lspci": Observation("pci.lspci", None, MISSING, reason="needs root")})
    assert (blocked.status, blocked.reason) == (MISSING, "pci.lspci: needs root")


def _gid(addr: str, kind: str, version: int, ipv4: str | None = None) -> dict:
    return {"gid": addr, "kind": kind, "version": version, "ipv4": ipv4}


LL = "fe80:0000:0000:0000:0e42:a1ff:fe5d:4d00"
V4 = "0000:0000:0000:0000:0000:ffff:0a00:0111"  # 10.0.1.17
V6 = "fd00:0000:0000:0010:0e42:a1ff:fe5d:4d00"
TABLE = {0: _gid(LL, "link_local", 1), 1: _gid(LL, "link_local", 2), 2: _gid(V6, "global", 1), 3: _gid(V6, "global", 2),
         4: _gid(V4, "ipv4", 1, "10.0.1.17"), 5: _gid(V4, "ipv4", 2, "10.0.1.17")}


@pytest.mark.parametrize("text, family, version, subnet, note", [
    ("", "AF_INET", (2, 21, 5), None, ""),
    ("10.0.0.0/16", "AF_INET", (2, 21, 5), "10.0.0.0/16", "NCCL_IB_ADDR_RANGE=10.0.0.0/16"),
    ("10.0.1.17/16", "AF_INET", (2, 21, 5), "10.0.0.0/16", "NCCL_IB_ADDR_RANGE=10.0.1.17/16"),  # host bits masked
    ("10.0.0.0/0", "AF_INET", (2, 21, 5), None, ""),
    ("10.0.0.0/33", "AF_INET", (2, 21, 5), None, "NCCL_IB_ADDR_RANGE mask /33 is too long for AF_INET: NCCL ignores the range"),
    ("10.0.0.0/x", "AF_INET", (2, 21, 5), None, ""),  # strtol reads no number: 0 bits, no filter
    ("fd00::/16", "AF_INET", (2, 21, 5), None, "NCCL_IB_ADDR_RANGE address 'fd00::' is not AF_INET: NCCL ignores the range"),
    ("fd00::/16", "AF_INET6", (2, 21, 5), "fd00::/16", "NCCL_IB_ADDR_RANGE=fd00::/16"),
    ("10.0.0.0", "AF_INET", (2, 23, 4), None, "NCCL_IB_ADDR_RANGE=10.0.0.0 has no '/BITS': NCCL ignores it"),
])
def test_nccl_reads_the_address_range_as_envibaddrrange_does(text, family, version, subnet, note):
    got, said = nccl_addr_range(text, family, version)
    assert (str(got) if got is not None else None, said) == (subnet, note)


def test_a_range_without_bits_before_2_23_or_at_an_unknown_version_is_undecided():
    for version in ((2, 21, 5), (2, 22, 3), None):
        with pytest.raises(ValueError, match="NCCL 2.21-2.22 crash on it"):
            nccl_addr_range("10.0.0.0", "AF_INET", version)
    assert nccl_addr_range("10.0.0.0/-1", "AF_INET", (2, 21, 5))[0] == NO_ADDRESS


@pytest.mark.parametrize("text, family, index", [
    (None, "AF_INET", 5),
    ("10.0.0.0/16", "AF_INET", 5),
    ("192.168.0.0/16", "AF_INET", 0),  # nothing in range: index 0 stays, the link-local v1 GID
    ("10.0.0.0/-1", "AF_INET", 0),
    ("fd00::/16", "AF_INET6", 3),
    ("fc00::/16", "AF_INET6", 0),
])
def test_the_automatic_choice_keeps_only_the_gids_in_the_range(text, family, index):
    subnet = nccl_addr_range(text, family, (2, 21, 5))[0] if text else None
    assert nccl_auto_gid(TABLE, family, 2, subnet) == index


def _choice(env: dict, ndev: str = "enp26s0np0", version: str = "2.21.5") -> dict:
    entries = [dict(e, port="mlx5_0/1", index=i, type="RoCE v2" if e["version"] == 2 else "IB/RoCE v1",
                    ndev=ndev if e["kind"] == "ipv4" else "enp26s0np0") for i, e in TABLE.items()]
    inputs = {"rdma.gids": Observation("", entries, OK),
              "rdma.compute_ports": Observation("", [{"name": "mlx5_0/1", "link_layer": "Ethernet", "netdev": "enp26s0np0"}], OK),
              "nccl.env": Observation("", {"vars": env}, OK), "nccl.version": Observation("", {"version": version}, OK)}
    [choice] = gid_choice(inputs).value
    return choice


def test_the_choice_names_the_gid_its_type_and_netdev_and_says_a_vlan_netdev():
    c = _choice({"NCCL_IB_GID_INDEX": "5"})
    assert (c["index"], c["gid"], c["type"], c["ndev"], c["ndev_note"], c["routable"]) == (5, V4, "RoCE v2", "enp26s0np0", None, True)
    c = _choice({"NCCL_IB_GID_INDEX": "5"}, ndev="enp26s0np0.100")
    assert c["ndev_note"] == "GID on enp26s0np0.100, not the port's netdev enp26s0np0 (a VLAN or macvlan address)"
    assert c["routable"] is True  # a VLAN's GID routes: it is said, not a fault


def test_a_range_that_matches_no_gid_is_said_and_lands_on_index_0():
    c = _choice({"NCCL_IB_ADDR_RANGE": "192.168.0.0/16"})
    assert (c["mode"], c["index"], c["routable"], c["range_matched"]) == ("auto", 0, False, False)
    assert c["how"] == ("NCCL 2.21.5 picks the AF_INET RoCE v2 GID on its own; NCCL_IB_ADDR_RANGE=192.168.0.0/16 "
                        "matches no AF_INET GID on this port: NCCL keeps index 0")
    c = _choice({"NCCL_IB_ADDR_RANGE": "10.0.0.0/8"})
    assert (c["index"], c["routable"], c["range_matched"]) == (5, True, True)


def test_nccl_before_2_21_has_no_range_and_a_malformed_one_is_unknown_where_nccl_crashes():
    c = _choice({"NCCL_IB_ADDR_RANGE": "192.168.0.0/16"}, version="2.20.5")
    assert (c["index"], c["how"]) == (0, "NCCL 2.20.5 uses GID index 0 unless NCCL_IB_GID_INDEX is set")
    c = _choice({"NCCL_IB_ADDR_RANGE": "10.0.0.0"}, version="2.22.3")
    assert (c["index"], c["routable"]) == (None, None)
    assert _choice({"NCCL_IB_ADDR_RANGE": "10.0.0.0"}, version="2.23.4")["index"] == 5


SCENARIOS = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures" / "scenarios"


def _report(capsys, name: str, fmt: str) -> str:
    from allreduce_doctor.cli import main

    main(["diagnose", "--snapshot", str(SCENARIOS / name / "bundle.tar.gz"), "--format", fmt, "--interval", "0"])
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_every_report_names_the_gid_its_type_and_netdev_in_the_deciding_evidence_row(capsys, fmt):
    out = _report(capsys, "roce-gid-link-local", fmt)
    row = next(line for line in out.splitlines() if "roce.gid_choice" in line and "gid_index" in line or
               line.startswith("  roce.gid_choice:"))
    assert 'index=1 gid="fe80:0000:0000:0000:0e42:a1ff:fe5d:4d00" kind="link_local" type="RoCE v2"' in row, row
    assert "8 checked" not in row


def test_the_text_report_says_the_range_that_matched_no_gid(capsys):
    out = _report(capsys, "roce-gid-addr-range-no-match", "text")
    assert "FAULT FOUND: wrong_gid_index" in out
    assert 'mlx5_0/1: index=0 gid="fe80:0000:0000:0000:0e42:a1ff:fe5d:4d00" kind="link_local" type="IB/RoCE v1"' in out
