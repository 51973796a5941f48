"""`allreduce-doctor completion SHELL`: the shell's tab-completion script for every command and
option, generated from the real argument parser by shtab (iterative/shtab, `shtab.complete`), so it
never drifts from the options. shtab is optional: `pip install 'allreduce-doctor[completion]'`.

Only argparse at the top: shtab and the other commands' parsers are imported inside run().
"""

from __future__ import annotations

import argparse

SHELLS = ("bash", "zsh", "fish")  # shtab's tcsh script leaves out the commands' own options
INSTALL = {
    "bash": "allreduce-doctor completion bash > ~/.local/share/bash-completion/completions/allreduce-doctor",
    "zsh": "allreduce-doctor completion zsh > \"${fpath[1]}/_allreduce-doctor\"",
    "fish": "allreduce-doctor completion fish > ~/.config/fish/completions/allreduce-doctor.fish",
}


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "completion", description="Print the tab-completion script of SHELL for every command and option (generated "
        "by shtab from the argument parser itself).", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="install:\n" + "\n".join(f"  {line}" for line in INSTALL.values()))
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")
    return p


def run(args) -> int:
    import sys

    from allreduce_doctor.errors import DoctorError

    try:
        import shtab
    except ImportError:
        raise DoctorError("shell completion needs shtab: pip install 'allreduce-doctor[completion]' "
                          "(pipx: pipx inject allreduce-doctor shtab)") from None
    sys.stdout.write(shtab.complete(args.build_parser(), shell=args.shell))
    return 0
