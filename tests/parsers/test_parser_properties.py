"""Registry-wide checks: every parser, every fixture, and arbitrary text."""

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allreduce_doctor.errors import ParseError
from allreduce_doctor.parsers import PARSER_MODULES, parse, registry

PARSER_NAMES = sorted(registry())

# Which parser reads which fixture (every fixture file must appear here).
FIXTURE_PARSERS = {
    "dcb-j-app-show-dscp.txt": "dcb_app",
    "dcb-j-pfc-show-prio3-stats.txt": "dcb_pfc",
    "dmesg-mlx5_core-probe-pcie-bandwidth.txt": "dmesg_lines",
    "dmesg-nvidia-peermem-invalid-context.txt": "dmesg_lines",
    "ethtool-S-mlx5-cx4-global-pause-no-pfc.txt": "ethtool_stats",
    "ethtool-S-mlx5-cx4lx-host-sending-global-pause.txt": "ethtool_stats",
    "ethtool-S-mlx5-prio-counters-all-traffic-prio0.txt": "ethtool_stats",
    "ethtool-ifname-1000baseT-softroce.txt": "ethtool_link",
    "ethtool-ifname-speed-unknown-vm.txt": "ethtool_link",
    "ethtool-speed-lanes-400g-fragment.txt": "ethtool_link",
    "ibdev2netdev-h100-ib-cx7-plus-cx6-eth.txt": "ibdev2netdev",
    "ibstat-hdr-a100-ibpanic.txt": "ibstat",
    "ibstat-mixed-ib-eth-a100.txt": "ibstat",
    "ibstat-ndr-h100-ib-all-active.txt": "ibstat",
    "ibstat-roce-h100-all-active.txt": "ibstat",
    "ibstat-roce-h100-some-down-polling.txt": "ibstat",
    "ibstatus-hdr-a100-active.txt": "ibstatus",
    "ibstatus-roce-100g-ethernet.txt": "ibstatus",
    "ibv_devinfo-v-softroce-rxe-mtu1024.txt": "ibv_devinfo",
    "ibv_devinfo-vv-connectx6dx-roce-bond.txt": "ibv_devinfo",
    "lspci-vvv-bridge-acs-redirect-on.txt": "lspci_vvv",
    "lspci-vvv-gpu-h100-gen5.txt": "lspci_vvv",
    "lspci-vvv-mlx5-cx7-gen5-x16-ok.txt": "lspci_vvv",
    "lspci-vvv-pex890xx-switch-port-acs-off.txt": "lspci_vvv",
    "lspci-vvv-switch-port-speed-downgraded.txt": "lspci_vvv",
    "mlnx_qos-dscp-trust-pfc.txt": "mlnx_qos",
    "mlnx_qos-pfc-prio3-fragment.txt": "mlnx_qos",
    "nvidia-smi-nvlink-s-a100-8gpu.txt": "nvidia_smi_nvlink",
    "nvidia-smi-nvlink-s-all-inactive.txt": "nvidia_smi_nvlink",
    "nvidia-smi-q-h100-sxm-fabric-completed.txt": "nvidia_smi_fabric",
    "nvidia-smi-q-h100nvl-fabric-na.txt": "nvidia_smi_fabric",
    "nvidia-smi-q-h200-vm.txt": "nvidia_smi_fabric",
    "nvidia-smi-topo-m-h100-8gpu-8nic.txt": "nvidia_smi_topo",
    "proc-cmdline-iommu-pt.txt": "proc_cmdline",
    "show_gids-empty-in-container.txt": "show_gids",
    "show_gids-roce-connectx6-ipv4.txt": "show_gids",
    # one sysfs file per line; test_sysfs_parser.py feeds each line to the scalar parsers
    "sysfs-class-infiniband-bf3-roce-bond-port.txt": None,
    "sysfs-class-infiniband-cx7-ndr-ib-port.txt": None,
    "sysfs-infiniband-link_downed-all-devices.txt": None,
    "syslog-ib-link-flapping.txt": "dmesg_lines",
    "ibstat-ports-line.txt": "ibstat",
    "perfquery-x-extended-zero.txt": "perfquery",
    "smpquery-portinfo-ibsim-switch-port.txt": "ib_portinfo",
    "ethtool-ifname-partner-advertised-100g.txt": "ethtool_modes",
    "proc-cmdline-no-iommu-arch.txt": "proc_cmdline",
    # outside samples read by test_outside_samples.py: a failure message, a sysfs value, a listing
    "ethtool-S-node_exporter-error.txt": None,
    "sysfs-counter-no-pma.txt": None,
    "sysfs-class-net-with-bonding_masters.txt": None,
    # another tool's output a parser refuses (test_wrong_tool_outputs.py)
    "nvidia-smi-nvlink-e-h100-error-counters.txt": None,
    "perfquery-x-two-ports.txt": None,
    "nccom-test-all_reduce-trn1-slurm.txt": None,
}

# Parsers that read markers and tokens, not columns or indentation: a web copy that collapsed
# whitespace must give the same value.
WHOLE_FILE = sorted((f, p) for f, p in FIXTURE_PARSERS.items() if p is not None)
LAYOUT_FREE = [(f, p) for f, p in WHOLE_FILE if p not in ("dmesg_lines", "dcb_app", "dcb_pfc", "proc_cmdline")]


def test_registry_names():
    assert sorted(
        [
            "text", "int", "ib_state", "ib_phys_state", "ib_rate", "pci_speed", "gid", "gid_type",
            "key_value", "netdev_speed", "ibstat", "ibstatus", "ibv_devinfo", "show_gids",
            "ibdev2netdev", "ethtool_stats", "ethtool_link", "mlnx_qos", "dcb_pfc", "dcb_app",
            "lspci_vvv", "lspci_tree", "rdma_link", "nvidia_smi_topo", "nvidia_smi_nvlink", "nvidia_smi_fabric",
            "proc_cmdline", "dmesg_lines", "mad_fields", "perfquery", "perfquery_ext", "ib_portinfo", "ethtool_modes",
            # pasted host tools and dumps (parsers/host_tools.py, rdma_dumps.py, nccl_topo.py)
            "df", "fi_info", "ibv_devices", "lsmod", "nccl_topo_xml", "rdma_statistic", "sysfs_dump",
            "ulimit_memlock",
            # container specs (parsers/containers.py)
            "container_run", "k8s_pod_spec",
        ]
    ) == PARSER_NAMES
    modules = {fn.__module__.rsplit(".", 1)[-1] for fn in registry().values()}
    assert modules == set(PARSER_MODULES)


def test_every_fixture_is_mapped(all_fixture_texts):
    assert sorted(all_fixture_texts) == sorted(FIXTURE_PARSERS)


@pytest.mark.parametrize("fixture, name", WHOLE_FILE)
def test_fixture_values_are_json_clean(fixture, name, fixture_text, json_clean):
    json_clean(parse(name, fixture_text(fixture)), fixture)


@pytest.mark.parametrize("fixture, name", LAYOUT_FREE)
@pytest.mark.parametrize("variant", ["collapsed", "trailing", "crlf"])
def test_layout_variants_parse_the_same(fixture, name, variant, fixture_text):
    text = fixture_text(fixture)
    if variant == "collapsed":  # web copy: indentation lost, runs of blanks squeezed
        changed = "\n".join(re.sub(r"[ \t]+", " ", line).strip() for line in text.splitlines())
    elif variant == "trailing":
        changed = "\n".join(line + "  \t" for line in text.splitlines())
    else:
        changed = text.replace("\n", "\r\n")
    assert parse(name, changed) == parse(name, text)


@st.composite
def near_valid(draw, texts: list[str]):
    """A slice of a real output with a little noise spliced in."""
    lines = draw(st.sampled_from(texts)).splitlines(keepends=True)
    start = draw(st.integers(0, len(lines)))
    chunk = "".join(lines[start : draw(st.integers(start, len(lines)))])
    at = draw(st.integers(0, len(chunk)))
    return chunk[:at] + draw(st.text(max_size=12)) + chunk[at:]


@pytest.mark.parametrize("name", PARSER_NAMES)
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_text_returns_json_or_raises_parse_error(name, data, all_fixture_texts, json_clean):
    """The raw registered function is called (not parse(), which would wrap a ValueError
    into ParseError and hide the bug)."""
    texts = list(all_fixture_texts.values())
    text = data.draw(
        st.one_of(
            st.text(),
            st.binary(max_size=300).map(lambda b: b.decode("latin-1")),
            near_valid(texts),
        ),
        label="text",
    )
    try:
        value = registry()[name](text)
    except ParseError as err:
        assert "\n" not in str(err)
        return
    json_clean(value, name)
