"""Session: one source (a live node, a bundle, pasted text) run through the Doctor.

A Session observes its Host, walks the runbooks, and builds the Diagnosis (with its context,
the bundle it read and the evidence it used). It owns re-answering operator questions: the
terminal UI asks it to walk again with new answers. The CLI, the terminal UI and the fleet all
build Sessions here, from a Doctor and Options, never from a command line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime

from allreduce_doctor.busbw import summary as busbw_summary
from allreduce_doctor.doctor import BRANCHES, Doctor
from allreduce_doctor.errors import DoctorError
from allreduce_doctor.hosts.base import Host
from allreduce_doctor.observations import OK, Observation, Observations
from allreduce_doctor.probes.runner import ProbeRunner, Progress
from allreduce_doctor.ranges import check_interval
from allreduce_doctor.site import KEYS as SITE_KEYS
from allreduce_doctor.site import normalize as normalize_site

ANSWERS_FACT = "operator.answers"  # operator answers are evidence too: checks can read their values
SITE_FACT = "site.declared"  # the site file's policy; nothing declared is a definite {}


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
    site: dict = field(default_factory=dict)  # the declared fabric policy (site.load_site), {} when none
    symptom: str | None = None  # hang | slow | crash | error: what the reporter saw (ranks candidates)
    evidence_hosts: dict = field(default_factory=dict)  # a paste of several hosts: host -> EvidenceResult
    pasted_host: str | None = None  # the host this paste part is of (fleet/pasted.py): the Diagnosis's host

    def __post_init__(self) -> None:
        check_interval(self.interval)


def _site_setting(name: str, value: str) -> None:
    normalize_site({name: value}, f"--answer {name}")


def _measured_busbw(name: str, value: str) -> None:
    """A measured busbw is a positive, finite number of GB/s (nccl-tests prints no negative or infinite
    bandwidth: busbw = algbw x factor, algbw = bytes / time)."""
    try:
        number = float(value.split()[0])
    except (ValueError, IndexError):
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise DoctorError(f"--answer {name}={value}: expected a bus bandwidth in GB/s, more than 0, e.g. {name}=350")


def _hardware(name: str, value: str) -> None:
    """The topology parts the ceiling model asks for (ceiling.py: gpu_model, nvswitch, nvlink_links, pcie_gen, and
    across nodes nics_per_node, nic_rate_gbps, nic_pcie_gen, nic_pcie_width, gdr)."""
    from allreduce_doctor.ceiling import (
        ANSWER_GDR,
        ANSWER_LINKS,
        ANSWER_MODEL,
        ANSWER_NIC_RATE,
        ANSWER_NVSWITCH,
        model_key,
        model_keys,
    )

    if name == ANSWER_MODEL and model_key(value) is None:
        raise DoctorError(f"--answer {name}={value}: expected a GPU model of the ceiling table: {', '.join(model_keys())}")
    if name in (ANSWER_NVSWITCH, ANSWER_GDR) and value.lower() not in ("yes", "no"):
        raise DoctorError(f"--answer {name}={value}: expected yes or no")
    if name == ANSWER_NIC_RATE:
        try:
            if 0 < float(value) <= MAX_NIC_GBPS:
                return
        except ValueError:
            pass
        raise DoctorError(f"--answer {name}={value}: expected a NIC's line rate in Gb/s, more than 0 and at most "
                          f"{MAX_NIC_GBPS:g}, e.g. {name}=400")
    if name not in (ANSWER_MODEL, ANSWER_NVSWITCH, ANSWER_GDR) and not value.isdigit():
        raise DoctorError(f"--answer {name}={value}: expected a number, e.g. {name}={18 if name == ANSWER_LINKS else 5}")
    allowed = _hardware_counts().get(name)
    if allowed is not None and int(value) not in allowed:
        span = f"{min(allowed)} to {max(allowed)}" if len(allowed) == max(allowed) - min(allowed) + 1 \
            else ", ".join(map(str, sorted(allowed)))
        raise DoctorError(f"--answer {name}={value}: expected {span}")


MAX_NIC_GBPS = 1600.0  # Gb/s: twice the fastest port shipping (InfiniBand XDR and 800GbE, ConnectX-8)
MAX_NICS = 64  # NICs per node: as validate's --gpus-per-node, more than any node holds
PCIE_WIDTHS = {1, 2, 4, 8, 12, 16, 32}  # the link widths PCIe defines (PCI-SIG base spec; lspci LnkSta xN)


def _hardware_counts() -> dict[str, set[int]]:
    """The whole-number answers' values: PCIe generations and NVLink counts of the ceiling table
    (hardware/ceilings.yaml), PCIe link widths, and NICs per node."""
    from allreduce_doctor.ceiling import (
        ANSWER_LINKS,
        ANSWER_NIC_PCIE_GEN,
        ANSWER_NIC_PCIE_WIDTH,
        ANSWER_NICS,
        ANSWER_PCIE_GEN,
        table,
    )

    data = table()
    gens = {int(gen) for gen in data["pcie"]}
    links = max(int(model.get("links") or 0) for model in data["models"].values())
    return {ANSWER_PCIE_GEN: gens, ANSWER_NIC_PCIE_GEN: gens, ANSWER_LINKS: set(range(links + 1)),
            ANSWER_NIC_PCIE_WIDTH: PCIE_WIDTHS, ANSWER_NICS: set(range(1, MAX_NICS + 1))}


# Answers that are not questions' choices: the site policy (site.KEYS), a measured busbw and the hardware's parts.
HARDWARE_ANSWERS = ("gpu_model", "nvswitch", "nvlink_links", "pcie_gen", "nics_per_node", "nic_rate_gbps",
                    "nic_pcie_gen", "nic_pcie_width", "gdr")
FREE_ANSWERS = {**{name: _site_setting for name in SITE_KEYS}, "measured_busbw": _measured_busbw,
                **{name: _hardware for name in HARDWARE_ANSWERS}}


def parse_answers(pairs: list[str], known: dict[str, list[str]] | None = None) -> dict[str, str]:
    """`--answer NAME=VALUE` pairs as a mapping. DoctorError on a malformed pair and, given the
    runbooks' questions (`known`: answer name -> choices), on a name or a value they do not have."""
    from allreduce_doctor.suggest import closest, hint

    answers = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name:
            raise DoctorError(f"--answer {pair!r}: expected NAME=VALUE, e.g. --answer validated_scale=two_nodes")
        if known is not None and name in FREE_ANSWERS:
            FREE_ANSWERS[name](name, value)  # a declared site setting or a measured figure, checked as such
        elif known is not None and name not in known:
            names = sorted(known) + sorted(FREE_ANSWERS)
            raise DoctorError(f"--answer {name}: no question or setting has this name (known: {', '.join(names)})"
                              + hint(closest(name, names)))
        elif known is not None and value not in known[name]:
            raise DoctorError(f"--answer {name}={value}: expected one of {', '.join(known[name])}"
                              + hint(closest(value, known[name])))
        answers[name] = value
    return answers


class Session:
    def __init__(self, doctor: Doctor, host: Host, options: Options | None = None) -> None:
        self.doctor = doctor
        self.host = host
        self.options = options or Options()
        self.observations = Observations()
        self.warnings: list[str] = []  # one line each, shown at the top of the Diagnosis

    @property
    def catalogue(self):
        return self.doctor.catalogue

    def observe(self) -> Observations:
        """Run the probes the walk can need: the trunk's and the node's fabric branch's."""
        opts = self.options
        runner = ProbeRunner(self.catalogue, self.host, opts.interval, opts.progress, opts.deadline)
        given = Observations()
        given.add(self._answers_observation())
        given.add(Observation(SITE_FACT, dict(opts.site), OK, opts.site.get("source", ""), "", "site_declared"))
        for obs in opts.evidence:  # pasted evidence: decides like any observation
            given.add(obs)
        first = runner.run({"node.fabric"}, known=given)
        fabric_obs = first.get("node.fabric")
        self.warnings = []
        if opts.fabric != "auto":
            fabric_obs, warning = forced_fabric(opts.fabric, fabric_obs)
            first.add(fabric_obs)
            self.warnings += [warning] if warning else []
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
        bandwidth = busbw_summary(self.observations)
        if self.options.evidence and self.host.kind == "evidence":  # pasted text alone: a ranked differential
            from allreduce_doctor.evidence.differential import Paste, rank

            log, ports = self.observations.get("log.nccl"), self.observations.get("rdma.compute_ports")
            job = self.observations.get("log.job")
            rank(diagnosis, self.doctor.runbooks, Paste(log.value if log.ok else None, ports.value if ports.ok else None,
                                                        job.value if job.ok else None, self.options.symptom, bandwidth,
                                                        self.observations))
        diagnosis.context = self.context()
        diagnosis.bundle = self.options.bundle
        diagnosis.evidence_used = self.options.evidence_report
        diagnosis.warnings = list(self.warnings)
        diagnosis.bandwidth = bandwidth
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
        pasted = [self.options.pasted_host] if self.options.pasted_host and not ident.hostname else []
        log_hosts = [] if ident.hostname else pasted or self._log_hosts()
        context = {
            "host": ident.hostname or _host_label(log_hosts),
            "kernel": ident.kernel,
            "source": self.host.kind,
            "fabric": self._fabric(),
            "tool_version": __version__,
            "probe_catalogue": self.catalogue.digest,
            "runbook_hash": self.doctor.runbook_hash,
            "diagnosed_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "collected_at": (getattr(self.host, "manifest", None) or {}).get("created"),
            "versions": self._versions(ident.kernel),
            "needs_root": needs_root(self.observations),  # non-empty: the verdict is partial
        }
        if log_hosts:  # a paste names its ranks' hosts: they are the Diagnosis's nodes (and its fingerprint's)
            context["hosts"] = log_hosts
        return context

    def _log_hosts(self) -> list[str]:
        """The hosts pasted NCCL lines carry in their `host:pid:tid` prefix, sorted."""
        log = self.observations.get("log.nccl")
        value = log.value if log.ok and isinstance(log.value, dict) else {}
        return [str(h) for h in value.get("host_names") or []]

    def _versions(self, kernel: str) -> dict:
        """Versions a ticket needs, from what was observed (None when nothing said)."""
        ports = self.observations.get("rdma.ports")
        firmware = sorted({p.get("fw_ver") for p in ports.value or [] if p.get("fw_ver")}) if ports.ok else []
        log = self.observations.get("log.nccl")
        nccl = (log.value or {}).get("version") if log.ok and isinstance(log.value, dict) else None
        return {"kernel": kernel or None, "nic_firmware": firmware or None, "nccl": nccl}


def _host_label(hosts: list[str]) -> str:
    """One line naming the hosts of a paste: all of them up to three, then a count."""
    return ", ".join(hosts[:3]) + (f" +{len(hosts) - 3} more" if len(hosts) > 3 else "")


FABRIC_PORTS = {"ib": ("ib_ports", "InfiniBand"), "roce": ("eth_ports", "RoCE")}


def forced_fabric(forced: str, observed: Observation) -> tuple[Observation, str]:
    """`--fabric` picks the branch; it never creates ports. The node.fabric to walk, and a one-line
    warning when the ports the node has contradict the flag (their own branch is walked then)."""
    value = observed.value if observed.status == OK and isinstance(observed.value, dict) else None
    if value is None:  # the ports could not be read: the flag picks the branch, the ports stay unknown
        return Observation("node.fabric", {"fabric": forced}, OK, f"--fabric {forced}", probe="fabric",
                           reason=f"ports not read ({observed.reason or observed.status})"), ""
    key, name = FABRIC_PORTS[forced]
    if value.get(key):  # the node has such ports (maybe beside the other kind): walk that branch
        return Observation("node.fabric", dict(value, fabric=forced), OK, f"--fabric {forced}", probe="fabric"), ""
    have = ", ".join(f"{value.get(k, 0)} {n}" for k, n in FABRIC_PORTS.values())
    actual = value.get("fabric")
    walked = f"walking the {FABRIC_PORTS[actual][1]} branch the ports show" if actual in FABRIC_PORTS \
        else "no RDMA branch applies"
    return observed, f"--fabric {forced} ignored: this node has no {name} ports ({have}); {walked}"


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
