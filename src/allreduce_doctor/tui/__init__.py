"""The terminal UI (Textual): one front end over the same Session as the headless commands.

Only `allreduce_doctor.tui.app` and what it loads import Textual; its command (commands/watch.py) stays argparse-only."""
