"""One line per finding in LBNL NHC's style: `ERROR: allreduce-doctor: CAUSE: DETAIL`.

NHC prints a failed check as "ERROR:  nhc:  Health check failed:  MESSAGE" and drains with
the message as the reason (mej/nhc, nhc's die()); we keep its shape so log scrapers that
match `ERROR:` lines keep working. Unknowns are WARNING lines, ERROR under --strict.
"""

from __future__ import annotations

LEADER = "allreduce-doctor:"
MAX_NAMES = 4


def finding_detail(finding: dict) -> str:
    """'enp155s0np0: <title>': the witnesses (ports, GPUs, variables) then what is wrong."""
    value = finding.get("value")
    names = [str(r["name"]) for r in value if isinstance(r, dict) and r.get("name")] if isinstance(value, list) else []
    title = " ".join(str(finding.get("title") or "").split())
    if not names:
        return title
    listed = ", ".join(names[:MAX_NAMES]) + (f" (+{len(names) - MAX_NAMES} more)" if len(names) > MAX_NAMES else "")
    return f"{listed}: {title}" if title else listed


def finding_lines(d: dict) -> list[str]:
    return [f"ERROR: {LEADER} {f.get('cause')}: {finding_detail(f)}" for f in d.get("findings") or []]


def unknown_lines(d: dict, strict: bool) -> list[str]:
    word = "ERROR" if strict else "WARNING"
    return [f"{word}: {LEADER} unknown: {i.get('node')}: {' '.join(str(i.get('reason') or '').split())}"
            for i in d.get("inconclusive") or []]


def not_applicable_detail(d: dict) -> str:
    """Why nothing was judged (the not_applicable end's summary), on one line."""
    summary = " ".join(str((d.get("healthy") or {}).get("summary") or "").split())
    return summary or "neither NVIDIA GPUs nor RDMA devices were found on this node"


def render_nhc(d: dict, strict: bool = False) -> str:
    """Nothing at all when healthy (NHC prints nothing on success). A node with nothing to diagnose is
    said (a container that lost its HCAs must not pass in silence): WARNING, ERROR under --strict."""
    lines = finding_lines(d)
    if d.get("verdict") == "inconclusive":
        lines += unknown_lines(d, strict)
    elif d.get("verdict") == "not_applicable":
        lines.append(f"{'ERROR' if strict else 'WARNING'}: {LEADER} not_applicable: {not_applicable_detail(d)}")
    return "".join(line + "\n" for line in lines)
