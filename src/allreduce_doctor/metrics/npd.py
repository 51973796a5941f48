"""node-problem-detector's custom plugin protocol: one line on stdout and an exit status.

kubernetes/node-problem-detector v1.36.0 pkg/custompluginmonitor/plugin/plugin.go: exit 0 is OK,
1 is NonOK, any other status is Unknown; stdout is trimmed and cut "at position max_output_length
if stdout is longer than max_output_length bytes" (Go's len of a string: bytes; default 80,
pkg/custompluginmonitor/types/config.go), so the cause comes first, and the line is cut here to
80 bytes on a UTF-8 character boundary (NPD's own cut could split a character).
"""

from __future__ import annotations

from allreduce_doctor.metrics.nhc import finding_detail, not_applicable_detail

NPD_OK, NPD_NON_OK, NPD_UNKNOWN = 0, 1, 2
# not_applicable (no GPUs, no RDMA) is neither OK nor a fault: Unknown, NonOK under --strict.
NPD_EXIT = {"healthy": NPD_OK, "fault": NPD_NON_OK, "inconclusive": NPD_UNKNOWN, "not_applicable": NPD_UNKNOWN}
MAX_OUTPUT_LENGTH = 80


def npd_exit(verdict: str | None, strict: bool = False) -> int:
    if strict and verdict in ("inconclusive", "not_applicable"):
        return NPD_NON_OK
    return NPD_EXIT.get(verdict or "", NPD_UNKNOWN)


def render_npd(d: dict) -> str:
    verdict = d.get("verdict")
    findings = d.get("findings") or []
    if findings:
        first = findings[0]
        more = f" (+{len(findings) - 1} more)" if len(findings) > 1 else ""
        message = f"{first.get('cause')}{more}: {finding_detail(first)}"
    elif verdict == "healthy":
        message = "nothing found on this node"
    elif verdict == "not_applicable":
        message = f"not_applicable: {not_applicable_detail(d)}"
    else:
        unknown = (d.get("inconclusive") or [{}])[0]
        message = f"inconclusive: {unknown.get('node', '?')}: {unknown.get('reason', '')}"
    message = " ".join(message.split())
    return cut_bytes(message, MAX_OUTPUT_LENGTH) + "\n"


def cut_bytes(message: str, limit: int) -> str:
    """`message` in at most `limit` UTF-8 bytes, ending "..." when cut, never inside a character."""
    data = message.encode("utf-8")
    if len(data) <= limit:
        return message
    return data[: limit - 3].decode("utf-8", errors="ignore") + "..."  # drops only a split last character
