"""The running DoctorApp, typed: Textual types a screen's `self.app` as the base App, which has
none of the app's own state (data, session, fail, show_diagnosis). No import of tui.app at run
time (it imports the screens), so no cycle."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from textual.message_pump import MessagePump

    from allreduce_doctor.tui.app import DoctorApp


def doctor_app(node: MessagePump) -> DoctorApp:
    """node.app as the DoctorApp it is: every screen and dialog of this package is pushed by
    DoctorApp (tui/app.py), the one App the package runs. A cast: nothing is checked at run time."""
    return cast("DoctorApp", node.app)
