"""The record of a validate run, and its replay.

A record is a folder:

    validate.json            format, tool version, the plan, each step's result, each round
    steps/NN-NAME.out        each benchmark's output (stdout, then stderr)
    rounds/NNN/NODE.tar.gz   every node's bundle of every round (round 0: idle, before launch)

The live run judges its own record through replay(), so `validate`, `diagnose --snapshot DIR` and
`fleet --snapshots DIR` give the same Diagnosis from the same folder. Reading never trusts it:
paths must stay inside the folder, sizes are bounded, damage gives one clear line.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from allreduce_doctor.errors import DoctorError

RECORD_FILE = "validate.json"
FORMAT = 1
MAX_RECORD_BYTES = 16 << 20
MAX_OUTPUT_CHARS = 4 << 20


def is_record(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / RECORD_FILE).is_file()


def write_record(root: Path, data: dict) -> Path:
    path = root / RECORD_FILE
    path.write_text(json.dumps({"format": FORMAT, **data}, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def load_record(root: Path) -> dict:
    path = root / RECORD_FILE
    try:
        if path.stat().st_size > MAX_RECORD_BYTES:
            raise DoctorError(f"{path}: over {MAX_RECORD_BYTES >> 20} MiB, not a validate record")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise DoctorError(f"{path}: cannot read it ({err.strerror or err})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DoctorError(f"{path}: damaged validate record ({err})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise DoctorError(f"{path}: not a validate record of format {FORMAT}")
    for key in ("plan", "steps", "rounds"):
        if key not in data:
            raise DoctorError(f"{path}: damaged validate record (no {key!r})")
    return data


def inside(root: Path, relative: str) -> Path:
    """root/relative, refusing anything that leaves root (.., absolute paths, links)."""
    path = (root / relative).resolve()
    if not str(relative) or Path(relative).is_absolute() or not path.is_relative_to(root.resolve()):
        raise DoctorError(f"{root / RECORD_FILE}: the path {relative!r} leaves the record")
    return path


def node_figures(obs, kernel: str | None, doctor) -> dict:
    """What the judge needs from one bundle: the fleet's node record (its numbers are compared
    between nodes for stragglers), the runbooks' own counter checks (runbook/load_checks.py), NICs,
    line rate, the NICs' PCIe link, GPUs and whether a job runs there."""
    from allreduce_doctor.ceiling_node import nic_pcie
    from allreduce_doctor.fleet.node_settings import node_record  # lazily: diagnose asks is_record of every bundle
    from allreduce_doctor.runbook.load_checks import judge_bundle  # the runbooks: only when judging

    rec = node_record(obs, kernel)
    fabric = rec["settings"].get("fabric")
    ports = [p for p in obs.rows("rdma.compute_ports") if (p.get("state") or {}).get("name") == "ACTIVE"]
    rates = Counter(p["rate_gbps"] for p in ports if isinstance(p.get("rate_gbps"), (int, float)))
    gpus = obs.get("pci.gpus")
    env = obs.get("nccl.env")
    pcie = nic_pcie(obs)  # the rails' PCIe link: it caps each NIC's share of the ceiling
    return {"numbers": rec["numbers"], "checks": judge_bundle(obs, doctor, fabric), "fabric": fabric,
            "nics": len(ports) or None, "line_gbps": rates.most_common(1)[0][0] if rates else None,
            "gpus": len(gpus.value) if gpus.ok and isinstance(gpus.value, list) else None,
            "nic_pcie": list(pcie[:2]) if pcie[0] else None,
            "job_found": bool(env.ok and isinstance(env.value, dict) and env.value.get("job_found"))}


def read_round(root: Path, bundles: dict[str, str], doctor) -> tuple[dict[str, dict], dict[str, str]]:
    """({node: figures}, {node: why unreadable}) for one round's bundles."""
    from allreduce_doctor.hosts.snapshot import SnapshotHost
    from allreduce_doctor.session import Options, Session

    figures, failed = {}, {}
    for node, relative in bundles.items():
        path = inside(root, relative)  # a record pointing outside itself is refused whole
        try:
            host = SnapshotHost(path)
            obs = Session(doctor, host, Options(interval=0)).observe()
            figures[node] = node_figures(obs, host.identity().kernel, doctor)
        except DoctorError as err:
            failed[node] = f"unreadable bundle: {err}"
    return figures, failed


def read_outputs(root: Path, steps: list[dict]) -> dict[int, str]:
    out = {}
    for index, step in enumerate(steps):
        if step.get("output"):
            try:
                out[index] = inside(root, step["output"]).read_text(encoding="utf-8", errors="replace")[:MAX_OUTPUT_CHARS]
            except OSError as err:
                out[index] = f"(output unreadable: {err.strerror or err})"
    return out


def replay(path: str | Path, doctor=None) -> dict:
    """The Diagnosis (JSON-ready) of a record folder: the same for the live run and every replay."""
    from allreduce_doctor.doctor import Doctor
    from allreduce_doctor.validate.judge import judge
    from allreduce_doctor.validate.plan import Plan

    root = Path(path)
    data = load_record(root)
    doctor = doctor or Doctor.load()
    rounds = []
    for r in data["rounds"]:
        figures, unreadable = read_round(root, dict(r.get("bundles") or {}), doctor)
        rounds.append({"index": r["index"], "step": r.get("step"), "started": r.get("started"), "nodes": figures,
                       "failed": {**(r.get("failed") or {}), **unreadable}})
    try:
        plan = Plan.from_dict(data["plan"])
    except TypeError as err:
        raise DoctorError(f"{root / RECORD_FILE}: damaged plan ({err})") from None
    context = {"source": f"validate record {root}", "tool_version": data.get("tool_version"),
               "started_at": data.get("started_at"), "interrupted": data.get("interrupted")}
    return judge(plan, rounds, data["steps"], read_outputs(root, data["steps"]), context, doctor)
