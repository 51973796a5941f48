"""`allreduce-doctor healthcheck`: fast, non-interactive, bounded; for Slurm and cron.

Only argparse at module level: the CLI builds every parser on each start.
"""

from __future__ import annotations

import argparse

FORMATS = ("nhc", "prometheus", "npd", "json")
EPILOG = """\
exit codes: 0 nothing found, 1 fault found (or 3 and 4 under --strict), 2 bad input,
3 inconclusive, 4 nothing to diagnose (no GPUs and no RDMA devices), 70 internal error.
With --format npd: 0 OK, 1 NonOK, 2 Unknown (inconclusive or nothing to diagnose; node-problem-detector).

examples:
  allreduce-doctor healthcheck                          # settings only, within 10 s
  allreduce-doctor healthcheck --drain --resume         # Slurm HealthCheckProgram
  allreduce-doctor healthcheck --interval 2 --textfile /var/lib/node_exporter/textfile/allreduce_doctor.prom
  allreduce-doctor healthcheck --format npd             # node-problem-detector custom plugin

See docs/integrations.md for slurm.conf, systemd, node_exporter, NPD and Kubernetes."""


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "healthcheck", description="Check this node's settings within a time budget and print one NHC-style line per "
        "finding (nothing when healthy). Unknown is not a fault unless --strict.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--snapshot", metavar="PATH", help="check a bundle (directory or .tar.gz) instead of this node")
    p.add_argument("--fabric", choices=("auto", "ib", "roce"), default="auto", help="which branch to walk (default auto)")
    p.add_argument("--budget", type=float, default=10.0, metavar="SECONDS",
                   help="total time budget, never exceeded; what is not done is unknown (default 10)")
    p.add_argument("--interval", type=float, metavar="SECONDS",
                   help="also sample the counters SECONDS apart (default: settings only, no counter window)")
    p.add_argument("--strict", action="store_true", help="an unknown check is a fault (exit 1, drained with --drain)")
    p.add_argument("--format", choices=FORMATS, default="nhc",
                   help="stdout: nhc lines (default), prometheus metrics, npd one-liner, or the json diagnosis")
    p.add_argument("--textfile", metavar="PATH",
                   help="also write the metrics atomically to PATH (*.prom) for node_exporter's textfile collector")
    slurm = p.add_argument_group("Slurm")
    slurm.add_argument("--drain", action="store_true",
                       help='on a fault, drain the node: scontrol update ... state=drain reason="ard: CAUSE"')
    slurm.add_argument("--resume", action="store_true",
                       help="when healthy, resume the node, only if allreduce-doctor drained it")
    slurm.add_argument("--node", metavar="NAME",
                       help="the Slurm node name (default: $SLURMD_NODENAME, else this host's short name)")
    return p


def run(args) -> int:
    from allreduce_doctor.healthcheck.flow import healthcheck

    return healthcheck(args)
