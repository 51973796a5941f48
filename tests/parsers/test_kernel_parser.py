import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def test_cmdline_iommu_pt(fixture_text):
    cmdline = parse("proc_cmdline", fixture_text("proc-cmdline-iommu-pt.txt"))
    assert cmdline["args"] == {
        "BOOT_IMAGE": "/vmlinuz-5.15.0-101-generic",
        "root": "/dev/mapper/ubuntu--vg-ubuntu--lv",
        "ro": True,
        "iommu": "pt",
    }
    assert (cmdline["iommu"], cmdline["iommu_passthrough"]) == ("pt", True)


@pytest.mark.parametrize(
    "text, mode, passthrough",
    [
        ("ro quiet amd_iommu=on iommu=pt", "pt", True),
        ("ro intel_iommu=on", "on", False),
        ("ro intel_iommu=on,sm_on", "on", False),
        ("ro amd_iommu=off", "off", False),
        ("ro intel_iommu=on iommu.passthrough=1", "pt", True),
        ("ro quiet splash", "default", False),
        ('root=UUID=abc ro console="ttyS0,115200"', "default", False),
        ("ro intel_iommu=igfx_off", None, False),
    ],
)
def test_cmdline_iommu_modes(text, mode, passthrough):
    result = parse("proc_cmdline", text + "\n")
    assert (result["iommu"], result["iommu_passthrough"]) == (mode, passthrough)


def test_cmdline_quotes_and_unbalanced_quote():
    assert parse("proc_cmdline", 'dyndbg="module mlx5_core +p" ro')["args"]["dyndbg"] == "module mlx5_core +p"
    assert parse("proc_cmdline", 'foo="bar ro')["args"]["ro"] is True


def test_cmdline_empty():
    with pytest.raises(ParseError):
        parse("proc_cmdline", "\n")


def test_dmesg_mlx5_pcie_bandwidth(fixture_text):
    lines = parse("dmesg_lines", fixture_text("dmesg-mlx5_core-probe-pcie-bandwidth.txt"))
    kinds = [line["kind"] for line in lines]
    assert kinds.count("pcie_bandwidth") == 2
    assert "pcie_bandwidth_limited" not in kinds
    assert lines[4]["text"].endswith("63.008 Gb/s available PCIe bandwidth (8.0 GT/s PCIe x8 link)")


def test_dmesg_pcie_bandwidth_limited():
    line = (
        "[    5.1] mlx5_core 0000:3b:00.0: 63.008 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x8 "
        "link at 0000:3a:00.0 (capable of 252.048 Gb/s with 16.0 GT/s PCIe x16 link)"
    )
    assert parse("dmesg_lines", line) == [{"text": line, "kind": "pcie_bandwidth_limited"}]


def test_dmesg_peermem(fixture_text):
    lines = parse("dmesg_lines", fixture_text("dmesg-nvidia-peermem-invalid-context.txt"))
    assert [line["kind"] for line in lines] == ["peermem_error"] * 7 + ["other"]


def test_syslog_link_flapping(fixture_text):
    lines = parse("dmesg_lines", fixture_text("syslog-ib-link-flapping.txt"))
    flaps = [line for line in lines if line["kind"] == "link_flap"]
    assert len(flaps) == 12
    assert sum("lost carrier" in line["text"] for line in flaps) == 6
    assert lines[0]["kind"] == "other"


def test_dmesg_empty_is_an_empty_list():
    assert parse("dmesg_lines", "") == []
