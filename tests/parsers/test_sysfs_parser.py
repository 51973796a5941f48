import pytest

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import parse


def sysfs_files(fixture_text, name: str) -> dict[str, str]:
    """The 'grep -r .'-style fixtures: one `path:contents` line per sysfs file."""
    files = {}
    for line in fixture_text(name).splitlines():
        path, _, contents = line.partition(":")
        files[path.split("/ports/1/")[-1].split("/")[-1]] = contents
    return files


def test_cx7_ib_port_files(fixture_text):
    files = sysfs_files(fixture_text, "sysfs-class-infiniband-cx7-ndr-ib-port.txt")
    assert parse("ib_state", files["state"]) == {"code": 4, "name": "ACTIVE"}
    assert parse("ib_phys_state", files["phys_state"]) == {"code": 5, "name": "LinkUp"}
    assert parse("ib_rate", files["rate"]) == {"gbps": 400.0, "width": 4, "speed": "NDR"}
    assert parse("text", files["link_layer"]) == "InfiniBand"
    assert parse("text", files["hca_type"]) == "MT4129"
    assert parse("int", files["port_xmit_data"]) == 230442669431839
    assert parse("int", files["excessive_buffer_overrun_errors"]) == 15


def test_bf3_roce_bond_rate(fixture_text):
    files = sysfs_files(fixture_text, "sysfs-class-infiniband-bf3-roce-bond-port.txt")
    assert parse("ib_rate", files["rate"]) == {"gbps": 200.0, "width": 2, "speed": "NDR"}
    assert parse("text", files["link_layer"]) == "Ethernet"


def test_link_downed_saturated_value(fixture_text):
    values = {
        line.split("/")[4]: parse("int", line.partition(":")[2])
        for line in fixture_text("sysfs-infiniband-link_downed-all-devices.txt").splitlines()
    }
    assert values["mlx5_1"] == 255
    assert sum(values.values()) == 255


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("400 Gb/sec (4X NDR)\n", {"gbps": 400.0, "width": 4, "speed": "NDR"}),
        ("2.5 Gb/sec (1X SDR)", {"gbps": 2.5, "width": 1, "speed": "SDR"}),
        ("100 Gb/sec (4X EDR)", {"gbps": 100.0, "width": 4, "speed": "EDR"}),
        ("56 Gb/sec (4X FDR)", {"gbps": 56.0, "width": 4, "speed": "FDR"}),
        ("10 Gb/sec (4X FDR10)", {"gbps": 10.0, "width": 4, "speed": "FDR10"}),
        ("400", {"gbps": 400.0, "width": None, "speed": None}),
    ],
)
def test_ib_rate_variants(raw, expected):
    assert parse("ib_rate", raw) == expected


@pytest.mark.parametrize(
    "name, raw, expected",
    [
        ("ib_state", "4: ACTIVE", {"code": 4, "name": "ACTIVE"}),
        ("ib_state", "1: DOWN\n", {"code": 1, "name": "DOWN"}),
        ("ib_state", "ACTIVE", {"code": 4, "name": "ACTIVE"}),
        ("ib_state", "PORT_ACTIVE", {"code": 4, "name": "ACTIVE"}),
        ("ib_state", "PORT_INIT (2)", {"code": 2, "name": "INIT"}),
        ("ib_phys_state", "5: LinkUp", {"code": 5, "name": "LinkUp"}),
        ("ib_phys_state", "2: Polling", {"code": 2, "name": "Polling"}),
        ("ib_phys_state", "7: Phy Test", {"code": 7, "name": "Phy Test"}),
        ("ib_phys_state", "LINK_UP (5)", {"code": 5, "name": "LinkUp"}),
        ("pci_speed", "32.0 GT/s PCIe\n", 32.0),
        ("pci_speed", "32 GT/s", 32.0),
        ("pci_speed", "16.0 GT/s PCIe", 16.0),
        ("pci_speed", "2.5 GT/s PCIe", 2.5),
        ("int", "0x1f", 31),
        ("int", " 42\n", 42),
        ("netdev_speed", "400000\n", 400000),
        ("netdev_speed", "-1", None),
        ("netdev_speed", "Unknown", None),
        ("text", "", ""),
        ("text", "  mlx5_0 \n", "mlx5_0"),
    ],
)
def test_scalar_values(name, raw, expected):
    assert parse(name, raw) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8", ("link_local", None)),
        ("0000:0000:0000:0000:0000:ffff:ac13:003c", ("ipv4", "172.19.0.60")),
        ("::ffff:27.105.179.3", ("ipv4", "27.105.179.3")),
        ("0000:0000:0000:0000:0000:0000:0000:0000\n", ("empty", None)),
        ("fe80:0000:0000:0000:0015:5dff:fd34:11eb", ("link_local", None)),
        ("2001:0db8:0000:0000:0000:0000:0000:0001", ("global", None)),
    ],
)
def test_gid_kinds(raw, expected):
    result = parse("gid", raw)
    assert (result["kind"], result["ipv4"]) == expected
    assert len(result["gid"]) == 39 and result["gid"] == result["gid"].lower()


def test_gid_in_the_kernels_spelling_reads_as_ipaddress_reads_it():
    """The kernel's %pI6 spelling skips ipaddress: the same dict for every kind and every edge."""
    import ipaddress
    import random

    from allreduce_doctor.parsers import sysfs

    edges = ["0000:0000:0000:0000:0000:0000:0000:0000", "0000:0000:0000:0000:0000:ffff:0000:0000",
             "0000:0000:0000:0000:0000:ffff:ffff:ffff", "0000:0000:0000:0000:0001:ffff:0a00:0001",
             "0000:0000:0000:0000:0000:fffe:0a00:0001", "fe80:0000:0000:0000:0000:0000:0000:0000",
             "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0:0000:0000:0000:0000:0000:0000:0001",
             "fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "0000:0000:0000:0000:0000:0000:0000:0001"]
    rng = random.Random(16)
    gids = edges + [ipaddress.IPv6Address(rng.getrandbits(128)).exploded for _ in range(300)]
    gids += [ipaddress.IPv6Address((0xFFFF << 32) | rng.getrandbits(32)).exploded for _ in range(50)]
    for gid in gids:
        assert sysfs._KERNEL_GID.fullmatch(gid)
        assert sysfs._kernel_gid(gid) == _gid_by_ipaddress(gid), gid
    assert sysfs._KERNEL_GID.fullmatch("FE80:0000:0000:0000:0E42:A1FF:FE5D:4DB8") is None  # not the kernel's: ipaddress
    compressed = [str(ipaddress.IPv6Address(g)) for g in gids] + [g.upper() for g in gids[:50]]
    compressed += [f"::ffff:{ipaddress.IPv4Address(rng.getrandbits(32))}" for _ in range(50)] + ["::1.2.3.4", "1::", "::"]
    for gid in compressed:  # every other spelling: inet_pton, as ipaddress reads it
        assert parse("gid", gid) == _gid_by_ipaddress(gid), gid
    for bad in ("fe80::1::2", "1:2:3:4:5:6:7:8:9", "::ffff:01.2.3.4", "12345::", "::ffff:1.2.3"):
        with pytest.raises(ParseError):
            parse("gid", bad)


def _gid_by_ipaddress(gid: str) -> dict:
    import ipaddress

    addr = ipaddress.IPv6Address(gid)
    if int(addr) == 0:
        return {"gid": addr.exploded, "kind": "empty", "ipv4": None}
    if addr.ipv4_mapped is not None:
        return {"gid": addr.exploded, "kind": "ipv4", "ipv4": str(addr.ipv4_mapped)}
    kind = "link_local" if addr in ipaddress.IPv6Network("fe80::/10") else "global"
    return {"gid": addr.exploded, "kind": kind, "ipv4": None}


def test_gid_is_normalised_to_full_form():
    assert parse("gid", "fe80::ac0:ebff:fef0:28b2")["gid"] == "fe80:0000:0000:0000:0ac0:ebff:fef0:28b2"


def test_gid_type():
    assert parse("gid_type", "RoCE v2\n") == {"type": "RoCE v2", "version": 2}
    assert parse("gid_type", "IB/RoCE v1") == {"type": "IB/RoCE v1", "version": 1}


def test_key_value_nccl_conf():
    text = '# site defaults\n\nNCCL_IB_HCA=mlx5\nexport NCCL_IB_GID_INDEX="3"\nNCCL_DEBUG = INFO\n'
    assert parse("key_value", text) == {"NCCL_IB_HCA": "mlx5", "NCCL_IB_GID_INDEX": "3", "NCCL_DEBUG": "INFO"}
    assert parse("key_value", "") == {}


@pytest.mark.parametrize(
    "name, raw",
    [
        ("int", "N/A (no PMA)"),
        ("int", ""),
        ("pci_speed", "Unknown"),
        ("ib_state", "BOGUS STATE"),
        ("ib_rate", "fast"),
        ("gid", "fe80::zz"),
        ("gid", "fe80::1%eth0"),
        ("gid_type", "RoCE v3"),
        ("netdev_speed", "fast"),
        ("netdev_speed", ""),
        ("key_value", "this is not a config"),
    ],
)
def test_bad_input_raises_one_line_parse_error(name, raw):
    with pytest.raises(ParseError) as err:
        parse(name, raw)
    assert "\n" not in str(err.value) and str(err.value).startswith("expected")
