"""Session: load runbooks and probes, observe a Host, walk, produce a Diagnosis.

The same Session serves the headless commands and the terminal UI.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import OK, Observation, Observations
from allreduce_doctor.probes.runner import Progress, ProbeRunner
from allreduce_doctor.probes.spec import Catalogue, load_catalogue
from allreduce_doctor.resources import probe_files, runbook_files

ROOT_RUNBOOK = "trunk"
BRANCHES = {"ib": "ib", "roce": "roce"}


def load_probe_catalogue() -> Catalogue:
    return load_catalogue(probe_files())


def load_shipped_runbooks(catalogue: Catalogue, paths: list[Path] | None = None):
    from allreduce_doctor.runbook.loader import load_runbooks

    return load_runbooks(list(paths or runbook_files()), catalogue.facts(), root=None if paths else ROOT_RUNBOOK)


@dataclass
class Session:
    host: Host
    fabric: str = "auto"
    interval: float = 1.0
    answers: dict[str, str] = field(default_factory=dict)
    progress: Progress | None = None
    extra_observations: list[Observation] = field(default_factory=list)
    deadline: float | None = None  # time.monotonic() value: probes not started by then stay unknown

    def __post_init__(self) -> None:
        self.catalogue = load_probe_catalogue()
        self.runbooks = load_shipped_runbooks(self.catalogue)
        digest = hashlib.sha256()
        for path in runbook_files():
            digest.update(path.read_bytes())
        self.runbook_hash = digest.hexdigest()[:16]
        self.observations = Observations()

    def observe(self) -> Observations:
        """Run the probes the walk can need: the trunk's and the node's fabric branch's."""
        runner = ProbeRunner(self.catalogue, self.host, self.interval, self.progress, self.deadline)
        given = Observations()
        # Operator answers are evidence too: checks can read values (e.g. a measured busbw).
        given.add(Observation("operator.answers", dict(self.answers), OK, "--answer", "", "operator_answers"))
        for obs in self.extra_observations:  # pasted evidence: decides like any observation
            given.add(obs)
        first = runner.run({"node.fabric"}, known=given)
        fabric_obs = first.get("node.fabric")
        if self.fabric != "auto":
            forced = dict(fabric_obs.value or {}, fabric=self.fabric)
            fabric_obs = Observation("node.fabric", forced, OK, f"--fabric {self.fabric}", "", "fabric")
            first.add(fabric_obs)
        fabric = (fabric_obs.value or {}).get("fabric") if fabric_obs.status == OK else None
        wanted = self.facts_for(fabric)
        rest = runner.run(wanted - set(first.facts), known=first)
        for obs in first.values():
            rest.add(obs)
        self.observations = rest
        return rest

    def facts_for(self, fabric: str | None) -> set[str]:
        """Facts read by the trunk and by the branch of this fabric (both branches if unknown)."""
        ids = {ROOT_RUNBOOK} | ({BRANCHES[fabric]} if fabric in BRANCHES else set(BRANCHES.values()))
        return set().union(*(self.runbooks.runbooks[i].facts for i in ids if i in self.runbooks.runbooks))

    def diagnose(self):
        from allreduce_doctor.runbook.walk import walk

        if not self.observations.facts:
            self.observe()
        fabric = (self.observations.get("node.fabric").value or {}).get("fabric")
        branch = [BRANCHES[fabric]] if fabric in BRANCHES else []
        diagnosis = walk(self.runbooks, self.observations, self.answers, also_sweep=branch)
        diagnosis.context = self.context()
        return diagnosis

    def context(self) -> dict:
        """Where the diagnosis came from: host, bundle or live, versions of the catalogue."""
        from allreduce_doctor import __version__

        ident = self.host.identity()
        return {
            "host": ident.hostname,
            "kernel": ident.kernel,
            "source": self.host.kind,
            "fabric": (self.observations.get("node.fabric").value or {}).get("fabric"),
            "tool_version": __version__,
            "probe_catalogue": self.catalogue.digest,
            "runbook_hash": self.runbook_hash,
            "diagnosed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "collected_at": (getattr(self.host, "manifest", None) or {}).get("created"),
            "versions": self._versions(ident.kernel),
        }

    def _versions(self, kernel: str) -> dict:
        """Versions a ticket needs, from what was observed (None when nothing said)."""
        ports = self.observations.get("rdma.ports")
        firmware = sorted({p.get("fw_ver") for p in ports.value or [] if p.get("fw_ver")}) if ports.ok else []
        log = self.observations.get("log.nccl")
        nccl = (log.value or {}).get("version") if log.ok and isinstance(log.value, dict) else None
        return {"kernel": kernel or None, "nic_firmware": firmware or None, "nccl": nccl}
