"""What a container is given, from the text that starts it: a `docker|podman|nerdctl run` line and a
Kubernetes pod spec (YAML, or a fragment of one). Both give one shape:

    {"runtime", "privileged", "host_network", "host_ipc", "ib_devices", "cap_ipc_lock",
     "memlock", "shm_bytes", "shm_default", "rdma_resources", "gpus"}

A value the text does not settle is None, never a default guessed as observed: `shm_default` says
when the size is the runtime's documented default (the text sets none), so a reader can say so.

Sources:
- docker run reference (docs.docker.com/reference/cli/docker/container/run): `--shm-size` ("If you
  omit the size entirely, the system uses 64m"), `--ipc host`, `--device`, `--privileged`, `--cap-add`,
  `--ulimit memlock=SOFT[:HARD]` (bytes, -1 unlimited), `--network host`; podman-run(1) takes the same.
- The default capability sets of moby (oci/caps/defaults.go DefaultCapabilities), containerd
  (oci/spec.go populateDefaultUnixSpec) and podman (containers/common pkg/config default
  capabilities) hold no CAP_IPC_LOCK: a container gets it only by --cap-add or --privileged.
- Kubernetes Pod API: spec.hostNetwork, spec.hostIPC, containers[].securityContext.privileged and
  .capabilities.add, containers[].resources.limits (extended resources: `rdma/NAME` from Mellanox
  k8s-rdma-shared-dev-plugin, `vpc.amazonaws.com/efa` from aws-efa-k8s-device-plugin), and an
  emptyDir with medium: Memory mounted at /dev/shm (its sizeLimit, else unlimited up to the node's memory);
  without one the sandbox's /dev/shm is 64 MiB (containerd internal/cri defaultShmSize, CRI-O shm_size).
"""

from __future__ import annotations

import re
import shlex

from allreduce_doctor.parsers import parser
from allreduce_doctor.parsers._util import fail, lines, require
from allreduce_doctor.parsers.host_tools import size_bytes

RUN_RE = re.compile(r"^\s*(?:\S*/)?(docker|podman|nerdctl)\s+(?:container\s+)?run\b")
DOCKER_SHM_DEFAULT = 64 << 20  # docker run reference: --shm-size, "the system uses 64m"
_K8S_UNITS = {"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40,
              "k": 10**3, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
_K8S_SIZE_RE = re.compile(r"^([0-9]{1,15}(?:\.[0-9]{1,6})?)(Ki|Mi|Gi|Ti|k|K|M|G|T)?$")
# Extended resources that hand a pod RDMA devices (the device plugins named in the module docstring).
RDMA_RESOURCE_RE = re.compile(r"^(?:rdma/[\w.-]+|vpc\.amazonaws\.com/efa|nvidia\.com/(?:hostdev|rdma)[\w.-]*)$")
# Resources that say nothing of RDMA devices; any other extended resource (an SR-IOV pool's arbitrary name)
# may carry them, so its presence leaves ib_devices unknown.
_PLAIN_RESOURCES = re.compile(r"^(?:cpu|memory|ephemeral-storage|hugepages-\w+|nvidia\.com/(?:gpu|mig-[\w.-]+)"
                              r"|amd\.com/gpu|pods)$")


def _empty(runtime: str) -> dict:
    return {"runtime": runtime, "privileged": None, "host_network": None, "host_ipc": None, "ib_devices": None,
            "cap_ipc_lock": None, "memlock": None, "shm_bytes": None, "shm_default": False, "rdma_resources": [],
            "gpus": None}


def k8s_quantity(text: str) -> int | None:
    """A Kubernetes quantity: '16Gi' -> 17179869184, '1G' -> 10**9 (apimachinery resource.Quantity)."""
    m = _K8S_SIZE_RE.match(text.strip().strip("'\""))
    return int(float(m.group(1)) * _K8S_UNITS[m.group(2) or ""]) if m else None


def _memlock(value: str) -> int | str | None:
    """--ulimit memlock=SOFT[:HARD]: the soft limit, bytes; -1 is unlimited."""
    soft = value.split(":", 1)[0].strip()
    if soft == "-1" or soft.lower() == "unlimited":
        return "unlimited"
    return int(soft) if soft.isascii() and soft.isdigit() else None


def _options(tokens: list[str]) -> list[tuple[str, str | None]]:
    """(option, value) pairs up to the image: `--opt=value`, `--opt value`, and flags."""
    takes = {"--shm-size", "--ipc", "--device", "--cap-add", "--cap-drop", "--ulimit", "--network", "--net", "-v",
             "--volume", "--mount", "--gpus", "-e", "--env", "--name", "-p", "--publish", "-w", "--workdir", "--runtime",
             "--user", "-u", "--entrypoint", "--env-file", "--label", "-l", "--hostname", "-h", "--ip", "--memory", "-m",
             "--cpus", "--pull", "--platform", "--security-opt", "--userns", "--pid", "--add-host", "--dns"}
    out: list[tuple[str, str | None]] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("-") or tok == "--":
            break  # the image: what follows is the container's command
        name, sep, value = tok.partition("=")
        if sep:
            out.append((name, value))
        elif name in takes and i + 1 < len(tokens):
            out.append((name, tokens[i + 1]))
            i += 1
        else:
            out.append((name, None))
        i += 1
    return out


@parser("container_run")
def parse_container_run(text: str) -> dict:
    """A `docker|podman|nerdctl run` command line (continuation backslashes joined) -> the shape above."""
    require(text, "a `docker run` line")
    joined = " ".join(line.rstrip("\\").strip() for line in lines(text))
    m = RUN_RE.search(joined)
    if m is None:
        raise fail("a `docker run` / `podman run` line", text)
    try:
        tokens = shlex.split(joined[m.end():], comments=False)
    except ValueError:  # an unbalanced quote in a pasted line
        tokens = joined[m.end():].split()
    out = _empty(m.group(1))
    out.update(privileged=False, host_network=False, host_ipc=False, cap_ipc_lock=False)
    devices = False
    for name, value in _options(tokens):
        value = value or ""
        if name == "--privileged":
            out["privileged"] = True
        elif name in ("--network", "--net"):
            out["host_network"] = value == "host"
        elif name == "--ipc":
            out["host_ipc"] = value == "host"
        elif name == "--shm-size":
            out["shm_bytes"] = size_bytes(value)  # docker: powers of 1024, a bare number bytes
        elif name == "--cap-add" and value.upper().removeprefix("CAP_") in ("IPC_LOCK", "ALL"):
            out["cap_ipc_lock"] = True
        elif name == "--ulimit" and value.startswith("memlock="):
            out["memlock"] = _memlock(value[len("memlock="):])
        elif name in ("--device", "-v", "--volume", "--mount") and "/dev/infiniband" in value:
            devices = True
        elif name == "--gpus":
            out["gpus"] = value
    if out["privileged"]:  # --privileged: every capability and every host device
        out["cap_ipc_lock"], devices = True, True
    out["ib_devices"] = devices
    if out["shm_bytes"] is None and not out["host_ipc"]:
        out["shm_bytes"], out["shm_default"] = DOCKER_SHM_DEFAULT, True
    return out


_KEY_RE = re.compile(r"^(\s*)(?:-\s+)?[\"']?([\w./-]+)[\"']?\s*:\s*(.*?)\s*$")
_ITEM_RE = re.compile(r"^\s*-\s+[\"']?([\w.-]+)[\"']?\s*$")
_TRUE = ("true", "yes", "on")


def _flow_items(value: str) -> list[str]:
    """`["IPC_LOCK", "SYS_PTRACE"]` -> the names."""
    return [v.strip().strip("'\"") for v in value.strip("[] ").split(",") if v.strip()]


_FLOW_RE = re.compile(r"[\"']?([\w./-]+)[\"']?\s*:\s*(\[[^\]]*\]|[^,{}\[\]]*)")


def _pairs(line: str) -> list[tuple[bool, str, str]]:
    """(at column 0, key, value) of a YAML line: `key: value`, `- key: value`, or the pairs of a flow
    mapping (`- { name: devinf, hostPath: { path: /dev/infiniband }}`)."""
    if "{" in line:
        return [(False, k, v.strip().strip("'\"")) for k, v in _FLOW_RE.findall(line.split("{", 1)[1])]
    m = _KEY_RE.match(line)
    return [(not m.group(1), m.group(2), m.group(3).strip("'\""))] if m else []


def _take(out: dict, key: str, value: str) -> dict | None:
    """Read one key into `out`, or return what it adds to the pod's lists and flags."""
    low = value.lower()
    if key == "hostNetwork":
        out["host_network"] = low in _TRUE
    elif key == "hostIPC":
        out["host_ipc"] = low in _TRUE
    elif key == "privileged":
        out["privileged"] = low in _TRUE
    elif key == "securityContext":
        return {"seen_security": True}
    elif key == "add" and value:
        return {"caps": _flow_items(value)}
    elif key in ("limits", "requests"):
        return {"seen_resources": True}
    elif "/" in key or key in ("cpu", "memory"):
        if key in ("nvidia.com/gpu", "amd.com/gpu") and value.isascii() and value.isdigit():
            out["gpus"] = max(int(value), out["gpus"] or 0)
        return {"resources": [key]}  # a Multus `k8s.v1.cni.cncf.io/networks` annotation counts as another resource
    elif key == "path" and value.startswith("/dev/infiniband"):
        return {"hostpath_ib": True}
    elif key == "medium" and value == "Memory":
        return {"shm_memory": True}
    elif key == "sizeLimit":
        return {"size_limit": k8s_quantity(value)}
    elif key == "mountPath" and value.rstrip("/") == "/dev/shm":
        return {"shm_mounted": True}
    return None


@parser("k8s_pod_spec")
def parse_k8s_pod_spec(text: str) -> dict:
    """A pod spec or a fragment of one (read line by line: a fragment is no valid YAML document) -> the
    shape above. ib_devices: True with an RDMA resource, a /dev/infiniband hostPath or privileged; False
    only when the text shows a container's resources and nothing else can hand it RDMA devices."""
    require(text, "a Kubernetes pod spec")
    out = _empty("kubernetes")
    seen: dict = {"resources": [], "caps": []}  # what _take found: lists, flags, size_limit
    in_add = False
    keys = 0
    manifest: set[str] = set()
    for line in lines(text):
        item = _ITEM_RE.match(line)
        if in_add and item:
            seen["caps"].append(item.group(1))
            continue
        pairs = _pairs(line)
        in_add = False
        for top, key, value in pairs:
            keys += 1
            in_add = key == "add" and not value
            if key in ("apiVersion", "kind") and top:
                manifest.add(key)
            for name, got in (_take(out, key, value) or {}).items():
                if isinstance(got, list):
                    seen[name] += got
                else:
                    seen[name] = got if name == "size_limit" else seen.get(name) or got
    if keys == 0:
        raise fail("a Kubernetes pod spec (key: value lines)", text)
    whole = manifest == {"apiVersion", "kind"}
    resources = seen["resources"]
    rdma = [r for r in resources if RDMA_RESOURCE_RE.match(r)]
    out["rdma_resources"] = sorted(set(rdma))
    if seen["caps"] or seen.get("seen_security"):
        out["cap_ipc_lock"] = any(c.upper().removeprefix("CAP_") in ("IPC_LOCK", "ALL") for c in seen["caps"])
    if out["privileged"]:
        out["cap_ipc_lock"] = True
    other = [r for r in resources if not RDMA_RESOURCE_RE.match(r) and not _PLAIN_RESOURCES.match(r)]
    if rdma or seen.get("hostpath_ib") or out["privileged"]:
        out["ib_devices"] = True
    elif seen.get("seen_resources") and not other and (seen.get("seen_security") or whole):
        # the container's resources and its securityContext (or the whole manifest) shown, and no extended
        # resource or network annotation that could hand it RDMA devices (an SR-IOV pool, Multus)
        out["ib_devices"] = False
    if seen.get("shm_memory") and seen.get("shm_mounted"):
        out["shm_bytes"] = seen.get("size_limit")  # None: no sizeLimit, the node's memory bounds it
    elif whole and not seen.get("shm_mounted") and not out["host_ipc"]:
        # no /dev/shm volume: the runtime's own 64 MiB (containerd CRI defaultShmSize, CRI-O shm_size "64m")
        out["shm_bytes"], out["shm_default"] = DOCKER_SHM_DEFAULT, True
    return out
