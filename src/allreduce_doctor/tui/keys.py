"""The keys that work on every screen: the app's bindings, read by the help dialog too."""

from __future__ import annotations

from textual.binding import Binding

APP_BINDINGS = [
    Binding("q", "quit_app", "Quit", tooltip="quit (exit code: 0 healthy, 1 fault, 3 inconclusive, 4 nothing to diagnose, 2 error)"),
    Binding("question_mark", "help", "Help", key_display="?", tooltip="this list of keys"),
    Binding("t", "toggle_theme", "Theme", show=False, tooltip="switch between the dark and the light theme"),
]
