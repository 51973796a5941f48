"""nccl.net_plugin: whether this node's NCCL network is an external net plugin, and what is
judged of it (issue 26): loaded by the job, EFA devices in the job's container, libfabric with
its efa provider, FI_PROVIDER, FI_EFA_USE_DEVICE_RDMA on instances that need GPUDirect RDMA.

EFA ports report link layer IB_LINK_LAYER_UNSPECIFIED (linux drivers/infiniband/hw/efa/efa_verbs.c
efa_port_link_layer), which sysfs prints as `Unknown` (drivers/infiniband/core/sysfs.c
link_layer_show), and NCCL's own IB transport skips such ports: EC2 reaches EFA through the
aws-ofi-nccl plugin. GCP A3 / A3 Mega have no RDMA device at all: GPUDirect-TCPX / TCPXO plugins
carry NCCL's traffic over gVNIC netdevs. The node's fabric (node.fabric) is left to derive.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from allreduce_doctor.nccl_rules import plugin_abi
from allreduce_doctor.nccl_rules.versions import version_tuple
from allreduce_doctor.observations import OK, Observation

Inputs = dict[str, Observation]

# aws-ofi-nccl src/platform-aws.cpp platform_data_map (v1.21.1): gdr_required for p4d/p4de.24xlarge,
# p5/p5e (regex ^p5(e?\..*), but p5.4xlarge has its own entry without), p5en and p6-b200. There
# config_endpoint fails with "GDR disabled on GDR-supported instance type" when GPUDirect is off.
GDR_REQUIRED = re.compile(r"^(p4de?\.24xlarge|p5e?\.(?!4xlarge$).+|p5en\..+|p6-b200\..+)$")
# libfabric reads boolean variables as 0/no/false/off (src/common.c fi_param_get_bool via ofi_str_toint)
_FALSE = {"0", "no", "false", "off", "n", "f"}
# Net names the plugins register (ncclNet_t.name): aws-ofi-nccl "AWS Libfabric" (up to 1.13) and
# "Libfabric" (src/nccl_ofi_interface_nvidia.cpp); nccl-plugin-gpudirecttcpx "GPUDirectTCPX_v7"
# (src/nccl_plugin.cc); TCPXO's "FasTrak"; HPC-X's SHARP plugin "IBext". NCCL compares NCCL_NET
# with them case-insensitively (src/net.cc / src/plugin/net.cc).
_KIND_BY_NET = (("libfabric", "ofi"), ("gpudirecttcpx", "tcpx"), ("fastrak", "tcpxo"), ("ibext", "ib-sharp"))
_VERSION = re.compile(r"(\d+\.\d+\.\d+)")


def _value(inputs: Inputs, fact: str):
    obs = inputs.get(fact)
    return obs.value if obs is not None and obs.status == OK else None


def plugin_kind(path: str, env: dict) -> str:
    """ofi, tcpx, tcpxo, ib-sharp or other, from the plugin's path and the job's variables."""
    low = path.lower()
    if "ofi" in low or "amazon" in low or "aws" in low:
        return "ofi"
    if "tcpxo" in low or "fastrak" in low or any(k.startswith("NCCL_FASTRAK_") for k in env):
        return "tcpxo"
    if "tcpx" in low or any(k.startswith("NCCL_GPUDIRECTTCPX_") for k in env):
        return "tcpx"
    if "sharp" in low or "hpcx" in low:
        return "ib-sharp"
    return "other"


def _named(env: dict) -> str:
    """The plugin kind the job's variables ask for ('' when none): NCCL_NET naming a plugin's
    network, NCCL_NET_PLUGIN set (not 'none'), or the TCPX/TCPXO plugins' own variables."""
    net = env.get("NCCL_NET", "").lower()
    kind = next((k for word, k in _KIND_BY_NET if word in net), "")
    if kind:
        return kind
    named = env.get("NCCL_NET_PLUGIN", "")
    if named and named.lower() != "none":
        return plugin_kind(named, env)
    if any(k.startswith(("NCCL_FASTRAK_", "NCCL_GPUDIRECTTCPX_")) for k in env):
        return plugin_kind("", env)
    return ""


def _loaded(job: dict | None, log_net: str, platform: str) -> tuple[bool | None, str]:
    """(loaded?, why): the job maps a libnccl-net*.so, or the log names the plugin's network; not
    loaded when none is on the job's library path (nothing NCCL's dlopen could find) or the log
    says Socket; else unknown: NCCL dlopens the plugin at its first communicator (src/net.cc
    ncclNetPluginInit), so a job that has not initialized NCCL yet maps none."""
    plugins = [m for m in (job or {}).get("mapped") or [] if "libnccl-net" in m]
    if plugins:
        return True, f"the job maps {plugins[0]}"
    kind = next((k for word, k in _KIND_BY_NET if word in log_net.lower()), "") if log_net else ""
    if kind:
        return True, f"the log says `Using network {log_net}`"
    if log_net.lower() == "socket":
        return False, "the log says `Using network Socket`"
    if job is None:
        return None, ("no running NCCL job: run during the job, or paste NCCL_DEBUG=INFO's `NET/Plugin` and "
                      + ("`NET/OFI` lines" if platform == "efa" else "`Using network` lines"))
    if job.get("mapped") is None:
        return None, "the job's /proc/PID/maps was not scanned whole (or the bundle predates the plugin scan)"
    if job.get("plugin_on_path") == []:
        return False, "no libnccl-net*.so on the job's library path (LD_LIBRARY_PATH, ld.so.conf.d, /usr/lib)"
    return None, "the plugin is on the job's path but not mapped yet: NCCL loads it at its first communicator"


def _efa_provider(job: dict | None, env: dict) -> bool | None:
    """Whether the libfabric the job maps has efa. Yes: it maps libefa-fi.so (the DSO provider,
    lib<name>-fi.so: libfabric src/fabric.c ofi_ini_dir), its libfabric is the EFA installer's
    (/opt/amazon/efa, built with efa) or one with libfabric/libefa-fi.so beside it. No: it maps a
    libfabric with none of these and no rdma-core libefa (efa built into libfabric links libefa,
    its efadv calls), while no FI_PROVIDER filter may have dropped a provider. Else unknown:
    libefa may have been mapped by NCCL's own IB transport, which loads every verbs provider."""
    if job is None:
        return None
    mapped = job.get("mapped") or []
    fabric = next((m for m in mapped if "/libfabric.so" in m), None)
    names = [x.rsplit("/", 1)[-1] for x in mapped + (job.get("rdma_mapped") or [])]
    if any(n.startswith("libefa-fi.so") for n in names):
        return True
    if fabric is None:
        return None
    beside = f"{fabric.rsplit('/', 1)[0]}/libfabric/libefa-fi.so"
    if fabric.startswith("/opt/amazon/efa/") or beside in (job.get("files") or []):
        return True
    if not any(n.startswith(("libefa.so", "libefa-rdmav")) for n in names) and not env.get("FI_PROVIDER"):
        return False
    return None


def _provider_forced(env: dict) -> str:
    """FI_PROVIDER's value when it keeps libfabric from efa: a list without efa, or ^ naming it
    (libfabric src/fabric.c ofi_create_filter: names split on ',', '^' negates)."""
    raw = env.get("FI_PROVIDER", "")
    if not raw:
        return ""
    negated, names = raw.startswith("^"), [n.strip().lower() for n in raw.lstrip("^").split(",")]
    efa = any(n == "efa" or n.startswith("efa;") for n in names)
    return raw if efa == negated else ""


def abi(job: dict | None, nccl_version, log: dict) -> dict:
    """Whether the plugin defines an interface version (`ncclNetPlugin_vN`) this NCCL looks up
    (nccl_rules/plugin_abi.py): `mismatch` true when it defines none of them, so NCCL closes it
    and runs on its internal transports. The log decides when it shows the search: `Loaded net
    plugin (vN)`, or its last word with none found; `Failed to find ncclNetPlugin_vN` lines with
    the log's network internal (IB, Socket). Else the library NCCL opens (mapped by the job, or
    the first its dlopen finds on the job's path) is read for its dynamic symbols."""
    tried = plugin_abi.tried(version_tuple(nccl_version))
    out: dict = {"tried": list(tried) if tried else None, "plugin": None, "exports": None, "mismatch": None}
    said = plugin_abi.from_log(log.get("plugin_abi"), str(log.get("network") or ""))
    if said is not None:
        return dict(out, **said)
    exports = (job or {}).get("exports") or {}
    mapped = [m for m in (job or {}).get("mapped") or [] if "libnccl-net" in m]
    if mapped:  # NCCL closes a plugin it finds no version in (dlclose; ncclClosePluginLib from 2.26)
        versions = plugin_abi.exported(exports.get(mapped[0]))
        found = plugin_abi.chosen(plugin_abi.tried(version_tuple(nccl_version)), versions)
        return dict(out, plugin=mapped[0], exports=list(versions) if versions is not None else None, mismatch=False,
                    why=f"the job maps {mapped[0]}: NCCL keeps a plugin open only when it found a version it supports"
                    + (f" (v{found})" if found else ""))
    path = next((p for p in (job or {}).get("opened") or [] if p in exports), None)
    if path is None and job is not None and job.get("plugin_on_path") == []:
        return dict(out, mismatch=False, why="no libnccl-net*.so on the job's library path: no plugin to mismatch")
    if path is None:
        why = "no running job" if job is None else "no plugin library NCCL would open was found to read"
        return dict(out, why=why)
    versions = plugin_abi.exported(exports[path])
    found = plugin_abi.chosen(tried, versions)
    out.update(plugin=path, exports=list(versions) if versions is not None else None)
    shown = ", ".join(f"v{v}" for v in versions or ()) or "no ncclNetPlugin_v* symbol"
    looks = f"NCCL {nccl_version} looks up " + ", ".join(f"v{v}" for v in tried or ())
    if versions is None:
        return dict(out, why=f"{path}: its dynamic symbols could not be read")
    if tried is None:
        return dict(out, why=f"{path} defines {shown}; which versions NCCL {nccl_version or '(version unknown)'} "
                             "looks up is not known here")
    if found is False:
        return dict(out, mismatch=True, why=f"{path} defines {shown}; {looks}: none match")
    return dict(out, mismatch=False, why=f"{path} defines {shown}; {looks}: it loads v{found}")


def net_plugin(inputs: Inputs) -> Observation:
    devices = _value(inputs, "net.plugin_devices") or {}
    env = (_value(inputs, "nccl.env") or {}).get("vars") or {}
    job = _value(inputs, "nccl.job_net")
    log_net = str((_value(inputs, "log.nccl") or {}).get("network") or "")
    efa = list(devices.get("efa") or [])
    if not efa:  # an EFA port's link layer is Unknown (efa_port_link_layer); the driver link may be absent
        efa = sorted({p.get("device") for p in _value(inputs, "rdma.ports") or []
                      if p.get("link_layer") == "Unknown" and str(p.get("device", "")).startswith(("rdmap", "efa"))})
    gvnic = list(devices.get("gvnic") or [])
    platform = "efa" if efa else "gvnic" if len(gvnic) >= 2 else ""
    plugins = [m for m in (job or {}).get("mapped") or [] if "libnccl-net" in m]
    path = plugins[0] if plugins else ""
    named = _named(env)
    kind = plugin_kind(path, env) if path else named or {"efa": "ofi"}.get(platform, "")
    if kind == "other" and any("libfabric" in m for m in (job or {}).get("mapped") or []):
        kind = "ofi"  # a plain libnccl-net.so beside libfabric is aws-ofi-nccl (its default name before 1.15)
    wanted = bool(platform or path or named)
    loaded, why = _loaded(job, log_net, platform)
    product = str((_value(inputs, "node.dmi") or {}).get("product_name") or "").strip()
    rdma_off = env.get("FI_EFA_USE_DEVICE_RDMA", "1").strip().lower() in _FALSE
    uverbs = (job or {}).get("uverbs")
    version = _VERSION.search(path)
    value = {
        "wanted": wanted, "platform": platform, "kind": kind, "efa_devices": efa, "gvnic": gvnic,
        "loaded": loaded, "loaded_why": why, "plugin": path or None,
        "plugin_version": version.group(1) if version else None,
        "nccl_version": (_value(inputs, "nccl.version") or {}).get("version"),
        "instance": product or None,
        # EFA only (null elsewhere; the runbook asks for platform efa first)
        "job_devices": bool(uverbs) if uverbs is not None else None,
        "libfabric": next((m for m in (job or {}).get("mapped") or [] if "/libfabric.so" in m), None),
        "efa_provider": _efa_provider(job, env),
        "provider_forced": _provider_forced(env),
        "gdr_off": (bool(GDR_REQUIRED.match(product)) if product else None) if rdma_off else False,
        "abi": abi(job, (_value(inputs, "nccl.version") or {}).get("version"), _value(inputs, "log.nccl") or {}),
    }
    if platform != "efa":
        value.update(job_devices=None, libfabric=None, efa_provider=None, provider_forced="", gdr_off=False)
    reason = "" if wanted else "no EFA device, no gVNIC multi-NIC layout and no net plugin mapped or named by the job"
    return Observation("", value, OK, reason=reason)


DERIVATIONS: dict[str, Callable[[Inputs], Observation]] = {"net_plugin": net_plugin}
