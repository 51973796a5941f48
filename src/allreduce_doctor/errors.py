"""One error family, one handler at the edge (status.run_guarded), one line for the user.

Every error the user can cause (bad runbook, damaged bundle, garbage input, missing file)
is a DoctorError whose str() is the complete message. Anything else escaping is a bug.
"""


class DoctorError(Exception):
    """An error the user can fix; str(err) is the one line we print (exit code: status.py)."""


class BundleError(DoctorError):
    """A snapshot bundle is damaged, unsafe or unreadable."""


class RunbookError(DoctorError):
    """A runbook file is invalid; the message carries file:line:col."""


class ProbeSpecError(DoctorError):
    """A probe spec file is invalid; the message carries file:line."""


class ConditionError(DoctorError):
    """A condition expression does not parse or does not evaluate."""


class ParseError(DoctorError):
    """A parser could not read a tool's output."""
