"""Node facts from the host tool outputs and container specs a paste shows, in the shapes the probes
make (probes/*.yaml), so the trunk decides a paste as it decides a node:

  `ulimit -l` / `ulimit -a`, `docker run --ulimit memlock`, --cap-add IPC_LOCK, a pod's capabilities
                                 -> job.limits (then job.memlock: the trunk's memlock step)
  `docker run` without /dev/infiniband, a pod spec without an RDMA resource
                                 -> rdma.devices_seen (the trunk's uverbs step)
  `lsmod`                        -> gpu.peermem (then gpu.gdr: the trunk's GPUDirect step)
  `dcb pfc show dev IF`          -> net.pfc_dcb (then net.qos: the RoCE PFC steps)
  `df -h /dev/shm`, --shm-size, a pod's /dev/shm emptyDir -> log.host.shm, read by the ranked differential
  `grep . /sys/class/infiniband/*/ports/*/*` (state, phys_state, rate, link_layer, lid, sm_lid)
                                 -> rdma.ports, read with the rdma_ports probe's own parsers (probes/rdma.yaml)
  the same dump's counters/ and hw_counters/, `rdma statistic show`, `perfquery [-x] LID PORT`
                                 -> rdma.counters / rdma.hw_counters / rdma.peer_counters, unknown as on a node:
                                    one sample has no rate (probes/runner.py: "one sample gives no rate"), and
                                    the reason says so. perfquery is what the rdma_peer_counters probe runs
                                    (probes/rdma.yaml); a pasted one may be any port's, and decides none.

Nothing is made from what the text does not show: a `lsmod | grep` excerpt without the module proves no
absence, a pod-spec fragment without its resources says nothing of its devices (parsers/containers.py).
"""

from __future__ import annotations

import re

from allreduce_doctor.errors import ParseError
from allreduce_doctor.evidence.node_facts import port_record
from allreduce_doctor.observations import MISSING, OK, Observation
from allreduce_doctor.parsers import parse

SHM_DEFAULT = 64 << 20  # docker's and the CRI runtimes' default /dev/shm (parsers/containers.py)
_PEERMEM = ("nvidia_peermem", "nv_peer_mem")  # probes/host.yaml peermem: /sys/module/<name>


def _first(blocks: list[dict], tool: str) -> dict | None:
    return next((b for b in blocks if b["tool"] == tool and b["value"] is not None), None)


def container(blocks: list[dict], launch: dict) -> dict | None:
    """The container the paste starts: a `docker run` line (env.py), else the pod spec blocks merged
    (a value the first block leaves unknown taken from a later one)."""
    run = launch.get("container")
    if run:
        return run
    spec: dict | None = None
    for b in blocks:
        if b["tool"] != "k8s_pod" or b["value"] is None:
            continue
        if spec is None:
            spec = dict(b["value"], source=b["where"])
            continue
        for key, value in b["value"].items():
            if key == "rdma_resources":
                spec[key] = sorted(set(spec[key]) | set(value))
            elif spec.get(key) is None or value is True:  # unknown takes any value; a device or a capability given wins
                spec[key] = spec[key] if value is None else value
    return spec


def _limits(blocks: list[dict], spec: dict | None) -> Observation | None:
    ulimit = _first(blocks, "ulimit")
    soft = ulimit["value"]["memlock"] if ulimit else (spec or {}).get("memlock")
    cap = (spec or {}).get("cap_ipc_lock")
    if soft is None and cap is None:
        return None
    where = ", ".join(w for w in ((ulimit or {}).get("where"), (spec or {}).get("source") if cap is not None
                                  or ulimit is None else None) if w)
    value = {"pid": None, "memlock_soft": soft, "memlock_hard": None, "cap_ipc_lock": cap, "user_ns": None}
    return Observation("job.limits", value, OK, where, "", "evidence:ulimit")


def _devices(spec: dict | None) -> Observation | None:
    """libibverbs opens /dev/infiniband/uverbs* in the job's mount namespace (probes/job_view.py job_uverbs):
    a container given none of them (no --device /dev/infiniband, not --privileged; no RDMA resource) has none."""
    if not spec or spec.get("ib_devices") is None:
        return None
    present = bool(spec["ib_devices"])
    given = ", ".join(spec.get("rdma_resources") or []) or ("--privileged" if spec.get("privileged") else "/dev/infiniband")
    reason = (f"the pasted {spec['runtime']} container is given {given}" if present else
              f"the pasted {spec['runtime']} container is given no RDMA device (no /dev/infiniband device, no RDMA "
              "resource, not privileged)")
    return Observation("rdma.devices_seen", {"present": present, "from": "container spec", "devices": None}, OK,
                       spec["source"], reason, "evidence:container")


def _peermem(blocks: list[dict]) -> Observation | None:
    """A listed nvidia_peermem / nv_peer_mem row: loaded; a whole `lsmod` (its header) without one: not loaded."""
    complete = None
    for b in blocks:
        if b["tool"] != "lsmod" or b["value"] is None:
            continue
        if set(_PEERMEM) & set(b["value"]["modules"]):
            return Observation("gpu.peermem", True, OK, b["where"], "", "evidence:lsmod")
        if b["value"]["complete"] and complete is None:
            complete = b
    if complete is None:
        return None
    return Observation("gpu.peermem", False, OK, complete["where"], "lsmod lists neither nvidia_peermem nor nv_peer_mem",
                       "evidence:lsmod")


def _pfc(blocks: list[dict]) -> Observation | None:
    """net.pfc_dcb records, one per pasted `dcb pfc show dev IF` (the interface must be named)."""
    records, wheres, seen = [], [], set()
    for b in blocks:
        if b["tool"] == "dcb_pfc" and b["value"] and b.get("iface") and b["iface"] not in seen:
            seen.add(b["iface"])
            records.append(dict(b["value"], name=b["iface"], netdev=b["iface"]))
            wheres.append(b["where"])
    return Observation("net.pfc_dcb", records, OK, ", ".join(wheres), "", "evidence:dcb_pfc") if records else None


_PORT_FILE_RE = re.compile(r"^/sys/class/infiniband/([\w.-]+)/ports/([0-9]+)/(state|phys_state|rate|link_layer|lid|sm_lid)$")
_DEV_FILE_RE = re.compile(r"^/sys/class/infiniband/([\w.-]+)/(hca_type|fw_ver)$")
# probes/rdma.yaml rdma_ports: the parser of each file (lid and sm_lid are read as text there too)
_PORT_PARSERS = {"state": "ib_state", "phys_state": "ib_phys_state", "rate": "ib_rate"}


def _sysfs_ports(blocks: list[dict]) -> Observation | None:
    """rdma.ports from a pasted dump of the port files: a port is listed when its state or physical state is."""
    ports: dict[tuple[str, str], dict] = {}
    devices: dict[str, dict] = {}
    wheres = []
    for b in blocks:
        if b["tool"] != "sysfs_dump" or b["value"] is None:
            continue
        for path, text in b["value"]["files"].items():
            if m := _DEV_FILE_RE.match(path):
                devices.setdefault(m.group(1), {})[m.group(2)] = text
            elif m := _PORT_FILE_RE.match(path):
                dev, num, name = m.groups()
                try:
                    value = parse(_PORT_PARSERS[name], text) if name in _PORT_PARSERS else text
                except ParseError:
                    value = None  # unreadable: unknown, as the probe's failed field
                ports.setdefault((dev, num), {"where": b["where"]})[name] = value
        wheres.append(b["where"])
    records = [port_record(dev, num, fields.pop("where"), **devices.get(dev, {}), **fields)
               for (dev, num), fields in sorted(ports.items()) if fields.get("state") or fields.get("phys_state")]
    return Observation("rdma.ports", records, OK, ", ".join(dict.fromkeys(wheres)), "", "evidence:sysfs_dump") \
        if records else None


def _one_sample(blocks: list[dict]) -> list[Observation]:
    """Counters pasted once: the node's sampled facts, unknown with the reason (a rate needs two samples)."""
    shown: dict[str, list[str]] = {}
    for b in blocks:
        if b["tool"] == "sysfs_dump" and b["value"]:
            groups = {g for port in b["value"]["ports"].values() for g in port}
            for group in groups:
                shown.setdefault("rdma.counters" if group == "counters" else "rdma.hw_counters", []).append(b["where"])
        elif b["tool"] == "rdma_statistic" and b["value"]:
            shown.setdefault("rdma.hw_counters", []).append(b["where"])
        elif b["tool"] == "perfquery" and b["value"]:
            shown.setdefault("rdma.peer_counters", []).append(b["where"])
    return [Observation(fact, None, MISSING, ", ".join(wheres),
                        f"one pasted sample ({', '.join(wheres[:3])}) has no rate: paste the same counters twice, "
                        "10 s apart, while the job runs", "evidence:counters") for fact, wheres in shown.items()]


def observations(blocks: list[dict], launch: dict) -> list[Observation]:
    """The node facts above that the paste shows (one host's blocks: node_facts.one_host)."""
    spec = container(blocks, launch)
    found = (_limits(blocks, spec), _devices(spec), _peermem(blocks), _pfc(blocks), _sysfs_ports(blocks))
    return [o for o in found if o is not None] + _one_sample(blocks)


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB"


def shm(blocks: list[dict], launch: dict) -> dict | None:
    """/dev/shm's size where the job runs: a `df` row mounted on /dev/shm, else the container's --shm-size or
    /dev/shm volume, else its runtime's 64 MiB default (`default` True: the text sets no size)."""
    for b in blocks:
        if b["tool"] == "df" and b["value"]:
            row = next((r for r in b["value"] if r["mount"] == "/dev/shm" and r["size_bytes"]), None)
            if row is not None:
                return {"bytes": row["size_bytes"], "default": False, "source": b["where"],
                        "text": f"df: /dev/shm {row['size']} ({row['filesystem']})"}
    spec = container(blocks, launch)
    if spec and spec.get("shm_bytes"):
        said = "no --shm-size, --ipc host or /dev/shm volume: the runtime's default" if spec["shm_default"] else "set"
        return {"bytes": spec["shm_bytes"], "default": spec["shm_default"], "source": spec["source"],
                "text": f"{spec['runtime']} container /dev/shm {_size(spec['shm_bytes'])} ({said})"}
    return None


def shm_gap(host: dict | None, errors: dict) -> list[tuple[str, str, str]]:
    """container_shm_too_small when the text shows /dev/shm at 64 MiB or less: NCCL's SHM transport and its
    proxy allocate segments of several MiB per peer pair there (src/misc/shmutils.cc ncclShmOpen; NCCL
    troubleshooting, Docker: "--shm-size=1g"). A df row shows it; a runtime's default counts only beside an
    NCCL line the signature table gives that cause to (a default is what the text leaves unset)."""
    from allreduce_doctor.evidence import signatures

    seen = (host or {}).get("shm")
    if not seen or seen["bytes"] > SHM_DEFAULT:
        return []
    if seen["default"] and not any(c.cause == "container_shm_too_small" for kind in errors
                                   for c in signatures.candidates().get(kind, ())):
        return []
    line = f"{seen['source']}: {seen['text']}: at most 64 MiB, where NCCL's shared-memory segments need several MiB per GPU pair"
    return [("container_shm_too_small", line, "paste `df -h /dev/shm` where the job runs; give the container "
             "--shm-size=1g (Kubernetes: an emptyDir with medium: Memory at /dev/shm)")]


def memlock_gap(facts) -> list[tuple[str, str, str]]:
    """container_missing_ib_devices when the pasted limit cannot pin one of NCCL's 512 KiB LL buffers and no
    CAP_IPC_LOCK lifts it (probes/derive_job_view.py job_memlock, the trunk's memlock step): the step stays open
    while the text does not show the node's RDMA ports, but the limit itself was observed."""
    memlock = facts.get("job.memlock") if facts is not None else None
    fabric = facts.get("node.fabric") if facts is not None else None
    if memlock is None or not memlock.ok or not (memlock.value or {}).get("problem"):
        return []
    if fabric is not None and fabric.ok and (fabric.value or {}).get("fabric") == "none":
        return []  # no RDMA device: NCCL pins nothing for the network
    return [("container_missing_ib_devices", str(memlock.reason),
             "run `ulimit -l` where the ranks run (inside the container, under the launcher): it must be unlimited; "
             "docker run --ulimit memlock=-1 or --cap-add IPC_LOCK")]
