"""A paste of several hosts, diagnosed as a small fleet of pasted hosts.

Each host's part of the paste (evidence/hosts.py) is diagnosed as that host's node by its own
Session (the trunk/IB/RoCE runbooks unchanged), and the fleet Diagnosis (fleet/fleet_diagnosis.py) is
built over them: its verdict rule (any fault -> fault, else any inconclusive -> inconclusive, ...),
its comparison of the hosts' settings, its report. The UNATTRIBUTED part (lines naming no host) is
diagnosed too but is never healthy: a healthy walk over it is inconclusive, as no node is known to
be the one it shows.

JSON (`diagnose --evidence` of such a paste): the fleet Diagnosis (every report and exporter reads
it, with its `fleet` key), plus
  hosts       [{host, ...that host's own Diagnosis...}], one per part in paste order, UNATTRIBUTED last
  root_cause  the worst host's root cause, with `host` (the worst host) and `hosts` (every host that
              has it): the most severe cause (critical, major, minor) a host found on its own, the
              first such host in paste order on a tie. Only when no host has a cause of its own is it
              the comparison's (a setting that differs between the hosts), without `host`.
A paste of one host keeps the one-node Diagnosis, unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from allreduce_doctor.errors import DoctorError
from allreduce_doctor.evidence.hosts import MAX_HOSTS, UNATTRIBUTED
from allreduce_doctor.fleet.analyze import node_result
from allreduce_doctor.fleet.fleet_diagnosis import fleet_diagnosis
from allreduce_doctor.status import HEALTHY, INCONCLUSIVE, verdict_headline

ONE_NODE_FORMATS = ("prometheus", "npd")  # metrics of the node they run on: never a paste of several
MAX_REPORTS = 8  # hosts whose whole report follows the fleet's in text and Markdown (faults first)
NO_HOST = ("these lines name no host (no prompt `root@HOST:~#`, `ssh HOST` or NCCL `host:pid:tid` before them), "
           "so they are no node's facts: paste them under the prompt of the host they come from")


def several_hosts(session) -> bool:
    """Whether this diagnose is a paste of several hosts (pasted evidence, no node or bundle read)."""
    return bool(session.options.evidence_hosts) and session.host.kind == "evidence"


def diagnose_hosts(session, fmt: str | None = None) -> dict:
    """The fleet Diagnosis of a paste of several hosts (module docstring), as JSON-ready data."""
    from allreduce_doctor import __version__
    from allreduce_doctor.session import Session

    parts = session.options.evidence_hosts
    if fmt in ONE_NODE_FORMATS:
        raise DoctorError(f"--format {fmt} describes one node; this paste names {len(parts)} hosts "
                          f"({', '.join(list(parts)[:4])}): give one host's outputs alone")
    results, own = {}, {}
    for host, part in parts.items():
        options = replace(session.options, evidence=part.observations, evidence_report=part.report,
                          evidence_hosts={}, pasted_host=host, answers=dict(session.options.answers))
        host_session = Session(session.doctor, session.host, options)
        diagnosis = host_session.diagnose()
        if host == UNATTRIBUTED and diagnosis.verdict == HEALTHY:
            diagnosis.verdict, diagnosis.healthy = INCONCLUSIVE, None
            diagnosis.inconclusive.append({"node": "evidence.host", "reason": NO_HOST})
        results[host] = node_result(host, diagnosis, host_session.observations, host, None, session.doctor)
        own[host] = {"host": host, **diagnosis.to_dict()}
    n = len(parts)
    data = fleet_diagnosis(results, {}, {"source": f"pasted evidence, {n} hosts", "tool_version": __version__,
                                         "probe_catalogue": session.catalogue.digest,
                                         "runbook_hash": session.doctor.runbook_hash}, pasted=True)
    rc = data.get("root_cause")
    having = [h for h, r in results.items() if rc and (r.get("root_cause") or {}).get("id") == rc["id"]]
    if rc and having:  # having holds hosts only under a root cause
        data["root_cause"] = {**rc, "host": having[0], "hosts": having}
    data["hosts"] = list(own.values())
    for line in (session.options.evidence_report or {}).get("host_conflicts") or []:
        data.setdefault("warnings", []).append(f"the hosts set {line} (each host is diagnosed with its own value)")
    left_out = (session.options.evidence_report or {}).get("hosts_left_out")
    if left_out:
        data.setdefault("warnings", []).append(f"more than {MAX_HOSTS} hosts pasted: these were not diagnosed "
                                               f"({', '.join(left_out[:8])}{', ...' if len(left_out) > 8 else ''})")
    return data


def render_hosts(data: dict, fmt: str) -> str:
    """The fleet report of the pasted hosts, then each host's own report (text, Markdown)."""
    from allreduce_doctor.fleet.fleet_report import render_fleet
    from allreduce_doctor.report import render

    base = render_fleet(data, fmt)
    if fmt == "json":
        return base
    hosts = sorted(data["hosts"], key=lambda d: d["verdict"] != "fault")[:MAX_REPORTS]
    out = [base]
    for own in hosts:
        headline = verdict_headline(own["verdict"], (own.get("context") or {}).get("source"))
        cause = f": {own['root_cause']['id']}" if own.get("root_cause") else ""
        if fmt == "markdown":
            out.append(f"\n---\n\n# Host {own['host']}: {headline}{cause}\n\n")
        else:
            out.append(f"\n{'=' * 20} host {own['host']}: {headline}{cause} {'=' * 20}\n")
        out.append(render(own, fmt))
    left = len(data["hosts"]) - len(hosts)
    if left:
        out.append(f"\n({left} more hosts: their verdicts are in the fleet table above; --format json has each one's diagnosis)\n")
    return "".join(out)


def write_report(session, args) -> int:
    """`diagnose --evidence` of a paste of several hosts: the report (or ticket) and the exit code."""
    from allreduce_doctor.output import write_output
    from allreduce_doctor.status import verdict_exit

    data = diagnose_hosts(session, args.format)
    if args.export:
        from allreduce_doctor.export import render_export

        write_output(render_export(data, args.export), args.output)
    else:
        write_output(render_hosts(data, args.format or "text"), args.output)
    return verdict_exit(data.get("verdict"))
