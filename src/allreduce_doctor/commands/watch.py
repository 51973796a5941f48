"""`allreduce-doctor watch`: live per-port counter rates (argparse only at import time)."""

from __future__ import annotations

import argparse
import sys

from allreduce_doctor.status import EXIT_BAD_INPUT, EXIT_HEALTHY, EXIT_INTERNAL, EXIT_NOT_APPLICABLE, PROG

# As diagnose and healthcheck: no RDMA port to watch is "nothing to diagnose here", never a healthy 0.
WATCH_EXIT_HELP = (f"exit codes: {EXIT_HEALTHY} done, {EXIT_BAD_INPUT} bad input, {EXIT_NOT_APPLICABLE} no RDMA port "
                   f"to watch, {EXIT_INTERNAL} internal error.")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "watch", description="Per-port counter rates (pause frames per priority, CNPs, ECN marks, out-of-sequence, "
        "retransmissions, discards, xmit_wait, symbol errors), refreshed every interval. On a terminal it "
        "opens the watch screen; on a pipe it prints one interval as text.",
        epilog=f"examples:\n  {PROG} watch --interval 2\n  {PROG} watch --snapshot node.tar.gz | less\n\n{WATCH_EXIT_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--snapshot", metavar="PATH", help="replay the counter samples recorded in a bundle")
    p.add_argument("--interval", type=float, default=1.0, metavar="SECONDS",
                   help="seconds between samples (default 1)")


def run(args: argparse.Namespace) -> int:
    from allreduce_doctor.doctor import load_catalogue
    from allreduce_doctor.ranges import check_interval
    from allreduce_doctor.tui.state import short_path, watch_host

    check_interval(args.interval, live=True)  # rates per interval: the live range, everywhere
    host = watch_host(args.snapshot, "snapshot" if args.snapshot else "live")
    name = host.identity().hostname or "?"
    label = f"{name} ({'bundle ' + short_path(args.snapshot) if args.snapshot else 'live'})"
    catalogue = load_catalogue()
    if sys.stdout.isatty() and sys.stdin.isatty():
        from allreduce_doctor.tui.app import run_watch

        return run_watch(catalogue, host, args.interval, label)
    from allreduce_doctor.tui.watch_model import CounterSource, Watch, render_text

    source, watch = CounterSource(catalogue, host, args.interval), Watch()
    ports, seconds = source.tick()
    watch.add(ports)
    mode = "1 recorded interval" if args.snapshot else "live"
    sys.stdout.write(render_text(watch, f"allreduce-doctor watch | {label} | {mode} | rates per second over {seconds or args.interval:g}s"))
    return EXIT_HEALTHY if watch.latest else EXIT_NOT_APPLICABLE
