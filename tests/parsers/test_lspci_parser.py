import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def only(fixture_text, name):
    devices = parse("lspci_vvv", fixture_text(name))
    assert len(devices) == 1
    return devices[0]


def test_bridge_acs_redirect_on(fixture_text):
    dev = only(fixture_text, "lspci-vvv-bridge-acs-redirect-on.txt")
    assert dev["bdf"] == "0000:82:00.0"
    assert dev["name"].startswith("PCI bridge: PMC-Sierra Inc. Device 4128")
    assert dev["numa_node"] == 1
    assert dev["acs_ctl"] == {
        "SrcValid": True,
        "TransBlk": False,
        "ReqRedir": True,
        "CmpltRedir": True,
        "UpstreamFwd": True,
        "EgressCtrl": False,
        "DirectTrans": False,
    }
    assert dev["acs_redirect"] is True
    assert dev["lnkcap"] == {"speed_gts": 16.0, "width": 2}


def test_switch_port_acs_off(fixture_text):
    dev = only(fixture_text, "lspci-vvv-pex890xx-switch-port-acs-off.txt")
    assert dev["bdf"] == "0000:17:01.0"
    assert dev["acs_redirect"] is False
    assert set(dev["acs_ctl"].values()) == {False}
    assert dev["driver"] == "pcieport"


def test_switch_port_speed_downgraded(fixture_text):
    dev = only(fixture_text, "lspci-vvv-switch-port-speed-downgraded.txt")
    assert dev["lnkcap"] == {"speed_gts": 32.0, "width": 16}
    assert dev["lnksta"] == {"speed_gts": 16.0, "width": 16, "speed_note": "downgraded", "width_note": "ok"}


def test_cx7_gen5_x16_ok(fixture_text):
    dev = only(fixture_text, "lspci-vvv-mlx5-cx7-gen5-x16-ok.txt")
    assert dev["bdf"] == "0000:1a:00.0"
    assert dev["name"] == "Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]"
    assert (dev["numa_node"], dev["driver"]) == (0, "mlx5_core")
    assert dev["lnksta"] == {"speed_gts": 32.0, "width": 16, "speed_note": "ok", "width_note": "ok"}
    assert dev["acs_ctl"] is None and dev["acs_redirect"] is False and dev["access_denied"] is False


def test_gpu_h100(fixture_text):
    dev = only(fixture_text, "lspci-vvv-gpu-h100-gen5.txt")
    assert (dev["bdf"], dev["driver"], dev["numa_node"]) == ("0000:19:00.0", "nvidia", 0)
    assert dev["lnkcap"] == {"speed_gts": 32.0, "width": 16}


def test_many_devices_in_one_output(fixture_text):
    names = [
        "lspci-vvv-pex890xx-switch-port-acs-off.txt",
        "lspci-vvv-gpu-h100-gen5.txt",
        "lspci-vvv-mlx5-cx7-gen5-x16-ok.txt",
        "lspci-vvv-bridge-acs-redirect-on.txt",
    ]
    devices = parse("lspci_vvv", "\n".join(fixture_text(n) for n in names))
    assert [d["bdf"] for d in devices] == ["0000:17:01.0", "0000:19:00.0", "0000:1a:00.0", "0000:82:00.0"]
    assert [d["acs_redirect"] for d in devices] == [False, False, False, True]


def test_non_root_access_denied_is_unknown_not_fine():
    text = (
        "0000:1a:00.0 Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n"
        "\tNUMA node: 0\n"
        "\tCapabilities: <access denied>\n"
        "\tKernel driver in use: mlx5_core\n"
    )
    [dev] = parse("lspci_vvv", text)
    assert dev["access_denied"] is True
    assert dev["lnksta"] is None and dev["acs_ctl"] is None and dev["acs_redirect"] is None


def test_old_lspci_without_link_notes():
    text = "03:00.0 Infiniband controller: Mellanox Technologies MT27800 Family [ConnectX-5]\n\t\tLnkSta:\tSpeed 8GT/s, Width x8, TrErr- Train- SlotClk+\n"
    [dev] = parse("lspci_vvv", text)
    assert dev["lnksta"] == {"speed_gts": 8.0, "width": 8, "speed_note": None, "width_note": None}


@pytest.mark.parametrize("text", ["", "\n", "Control: I/O+ Mem+\nNUMA node: 0\n"])
def test_empty_or_garbled(text):
    with pytest.raises(ParseError):
        parse("lspci_vvv", text)
