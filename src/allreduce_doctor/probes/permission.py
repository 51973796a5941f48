"""What the tool cannot see for permissions: such a fact is missing with NEEDS_ROOT in its reason,
and the Diagnosis context lists it (`needs_root`): the verdict is then partial."""

from __future__ import annotations

from allreduce_doctor.observations import MISSING

NEEDS_ROOT = "needs root"
# strerror(EPERM) and strerror(EACCES) as a tool prints them (glibc): util-linux dmesg says
# "read kernel buffer failed: Operation not permitted" under kernel.dmesg_restrict=1 without
# CAP_SYSLOG (kernel/printk/printk.c check_syslog_permissions returns -EPERM).
PERMISSION_WORDS = ("Operation not permitted", "Permission denied")


def needs_root(observations) -> list[str]:
    """The facts missing because this user may not see them (sorted)."""
    return sorted(o.fact for o in observations.values() if o.status == MISSING and NEEDS_ROOT in (o.reason or ""))
