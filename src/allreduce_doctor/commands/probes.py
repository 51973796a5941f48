"""`allreduce-doctor probes`: the probe catalogue: every file and command the tool may touch.

Only argparse-level code at module level: the CLI builds this parser on each start of the command.
"""

from __future__ import annotations

from allreduce_doctor.output import write_output
from allreduce_doctor.status import EXIT_HEALTHY, TOOL_EXIT_HELP


def add_parser(sub) -> None:
    probes = sub.add_parser("probes", epilog=TOOL_EXIT_HELP,
                            description="Every file and command the tool may touch on a node.")
    psub = probes.add_subparsers(dest="probes_command", metavar="ACTION", required=True)
    psub.add_parser("list", help="every file and command the tool may touch, with timeout and root need")



def run(args) -> int:
    from allreduce_doctor.doctor import load_catalogue

    catalogue = load_catalogue()
    rows = []
    for spec in catalogue.probes.values():
        if spec.kind in ("derive", "evidence"):
            continue
        timeout = f"{spec.timeout:g}s" if spec.kind in ("command", "chain") else "-"
        each = f" (each {spec.foreach})" if spec.foreach else ""
        for target in spec.touches():
            rows.append((spec.id, spec.kind, timeout, "root" if spec.root else "", target + each))
    width = max(len(r[0]) for r in rows)
    lines = [f"{'PROBE':<{width}}  {'KIND':<8} {'TIMEOUT':<7} {'ROOT':<4}  TOUCHES"]
    lines += [f"{r[0]:<{width}}  {r[1]:<8} {r[2]:<7} {r[3]:<4}  {r[4]}" for r in rows]
    lines.append("")
    lines.append("Enumerators (what probes fan out over):")
    for enum in catalogue.enumerators.values():
        lines.append(f"  {enum.name}: {enum.glob or 'from ' + enum.source}")
        lines += [f"    reads {t}" for t in (*enum.read.values(), *enum.first.values(), *enum.links.values())]
    write_output("\n".join(lines) + "\n", None)
    return EXIT_HEALTHY
