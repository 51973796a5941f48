"""Session: one source (a live node, a bundle, pasted text) run through the Doctor.

A Session observes its Host, walks the runbooks, and builds the Diagnosis (with its context,
the bundle it read and the evidence it used). It owns re-answering operator questions: the
terminal UI asks it to walk again with new answers. The CLI, the terminal UI and the fleet all
build Sessions here, from a Doctor and Options, never from a command line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone

from allreduce_doctor.doctor import BRANCHES, Doctor
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import OK, Observation, Observations
from allreduce_doctor.probes.runner import Progress, ProbeRunner

ANSWERS_FACT = "operator.answers"  # operator answers are evidence too: checks can read their values
MAX_INTERVAL = 600.0


@dataclass
class Options:
    fabric: str = "auto"  # auto | ib | roce: which branch to walk
    interval: float = 1.0  # seconds between the two counter samples
    answers: dict[str, str] = field(default_factory=dict)  # question name -> choice
    evidence: list[Observation] = field(default_factory=list)  # from pasted text (evidence.load_evidence)
    evidence_report: dict | None = None  # what the pasted text gave, for the report
    bundle: str | None = None  # the bundle the host reads, as the user named it
    progress: Progress | None = None  # probe progress callback (the TUI's, or stderr's)
    deadline: float | None = None  # time.monotonic() value: probes not started by then stay unknown

    def __post_init__(self) -> None:
        check_interval(self.interval)


def check_interval(seconds: float) -> float:
    if not 0 <= seconds <= MAX_INTERVAL:
        raise DoctorError(f"--interval {seconds:g}: expected 0 to {MAX_INTERVAL:g} seconds")
    return seconds


def parse_answers(pairs: list[str]) -> dict[str, str]:
    """`--answer NAME=VALUE` pairs as a mapping (DoctorError on a malformed pair)."""
    answers = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise DoctorError(f"--answer {pair!r}: expected NAME=VALUE, e.g. --answer validated_scale=two_nodes")
        answers[name.strip()] = value.strip()
    return answers


class Session:
    def __init__(self, doctor: Doctor, host: Host, options: Options | None = None) -> None:
        self.doctor = doctor
        self.host = host
        self.options = options or Options()
        self.observations = Observations()

    @property
    def catalogue(self):
        return self.doctor.catalogue

    def observe(self) -> Observations:
        """Run the probes the walk can need: the trunk's and the node's fabric branch's."""
        opts = self.options
        runner = ProbeRunner(self.catalogue, self.host, opts.interval, opts.progress, opts.deadline)
        given = Observations()
        given.add(self._answers_observation())
        for obs in opts.evidence:  # pasted evidence: decides like any observation
            given.add(obs)
        first = runner.run({"node.fabric"}, known=given)
        fabric_obs = first.get("node.fabric")
        if opts.fabric != "auto":
            forced = dict(fabric_obs.value or {}, fabric=opts.fabric)
            fabric_obs = Observation("node.fabric", forced, OK, f"--fabric {opts.fabric}", "", "fabric")
            first.add(fabric_obs)
        fabric = (fabric_obs.value or {}).get("fabric") if fabric_obs.status == OK else None
        rest = runner.run(self.doctor.facts_for(fabric) - set(first.facts), known=first)
        for obs in first.values():
            rest.add(obs)
        self.observations = rest
        return rest

    def diagnose(self):
        """Walk the observations (observing first if nothing was) into a Diagnosis."""
        from allreduce_doctor.runbook.walk import walk

        if not self.observations.facts:
            self.observe()
        fabric = self._fabric()
        branch = [BRANCHES[fabric]] if fabric in BRANCHES else []
        diagnosis = walk(self.doctor.runbooks, self.observations, self.options.answers, also_sweep=branch)
        diagnosis.context = self.context()
        diagnosis.bundle = self.options.bundle
        diagnosis.evidence_used = self.options.evidence_report
        return diagnosis

    def reanswer(self, answers: dict[str, str]):
        """Walk again with new answers. Nothing is probed again: only the facts derived from the
        answers are recomputed, then the same diagnose() as the first walk."""
        self.options.answers = dict(answers)
        if not self.observations.facts:
            return self.diagnose()
        stale = _dependents(self.catalogue, ANSWERS_FACT) & set(self.observations.facts)
        known = Observations()
        for obs in self.observations.values():
            if obs.fact not in stale and obs.fact != ANSWERS_FACT:
                known.add(obs)
        known.add(self._answers_observation())
        if stale:
            known = ProbeRunner(self.catalogue, self.host, self.options.interval).run(stale, known=known)
        self.observations = known
        return self.diagnose()

    def _answers_observation(self) -> Observation:
        return Observation(ANSWERS_FACT, dict(self.options.answers), OK, "--answer", "", "operator_answers")

    def _fabric(self) -> str | None:
        return (self.observations.get("node.fabric").value or {}).get("fabric")

    def context(self) -> dict:
        """Where the diagnosis came from: host, bundle or live, versions of the catalogue."""
        from allreduce_doctor import __version__
        from allreduce_doctor.probes.permission import needs_root

        ident = self.host.identity()
        return {
            "host": ident.hostname,
            "kernel": ident.kernel,
            "source": self.host.kind,
            "fabric": self._fabric(),
            "tool_version": __version__,
            "probe_catalogue": self.catalogue.digest,
            "runbook_hash": self.doctor.runbook_hash,
            "diagnosed_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "collected_at": (getattr(self.host, "manifest", None) or {}).get("created"),
            "versions": self._versions(ident.kernel),
            "needs_root": needs_root(self.observations),  # non-empty: the verdict is partial
        }

    def _versions(self, kernel: str) -> dict:
        """Versions a ticket needs, from what was observed (None when nothing said)."""
        ports = self.observations.get("rdma.ports")
        firmware = sorted({p.get("fw_ver") for p in ports.value or [] if p.get("fw_ver")}) if ports.ok else []
        log = self.observations.get("log.nccl")
        nccl = (log.value or {}).get("version") if log.ok and isinstance(log.value, dict) else None
        return {"kernel": kernel or None, "nic_firmware": firmware or None, "nccl": nccl}


def _dependents(catalogue, fact: str) -> set[str]:
    """Derived facts that read `fact`, directly or through other derived facts."""
    found: set[str] = set()
    grew = True
    while grew:
        grew = False
        for spec in catalogue.probes.values():
            if spec.kind == "derive" and spec.provides not in found and ({fact} | found) & set(spec.inputs):
                found.add(spec.provides)
                grew = True
    return found
