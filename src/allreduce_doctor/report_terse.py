"""The terse text report's folds: a reason that repeats is one line with a count, not one line per check.

A paste alone reads no node, so every check of the node says "no node was read" in its own words (a
9-line paste gave 164 lines, 19 of them that reason). The default text report folds: the unknown checks
that share a reason become one line in the decision path and one under Inconclusive; the checks the text
did not show (n.a. with one meaning) one line. `--verbose` prints every check as before; the JSON is
never folded. Only a reason shared by MIN_FOLD checks or more folds: two lines stay two lines.
"""

from __future__ import annotations

import re
from collections import Counter

MIN_FOLD = 3
# A reason's parts that name a fact or probe ("rdma.ports", "node.fabric is missing") chain the reason to
# its root; they repeat without saying why, so they never head a fold.
_NAME = re.compile(r"[\w.\-]+( is missing)?")
_HINT = "paste "


def _parts(reason: str) -> list[str]:
    """A reason's parts: each missing fact's chain ("; "), each link of it (": ")."""
    return [p.strip() for chain in reason.split("; ") for p in chain.split(": ") if p.strip()]


def _heads(reason: str) -> set[str]:
    return {p for p in _parts(reason) if not _NAME.fullmatch(p) and not p.startswith(_HINT)}


def fold_inconclusive(items: list[dict]) -> dict[str, list[dict]]:
    """{shared reason: its items} for each reason MIN_FOLD or more items share, the commonest first (greedy)."""
    left: list[dict] = list(items)
    groups: dict[str, list[dict]] = {}
    while True:
        counts = Counter(h for item in left for h in _heads(item.get("reason") or ""))
        best = max(((n, len(h), h) for h, n in counts.items() if n >= MIN_FOLD), default=None)
        if best is None:
            return groups
        members = [item for item in left if best[2] in _heads(item.get("reason") or "")]
        groups[best[2]] = members
        left = [item for item in left if item not in members]


def _hints(members: list[dict]) -> str:
    """The pastes the members ask for, each once, in order: "paste `ibstat`, `sudo dmesg`"."""
    seen = dict.fromkeys(p[len(_HINT):] for m in members for p in _parts(m.get("reason") or "") if p.startswith(_HINT))
    return f"; paste {', '.join(seen)}" if seen else ""


def inconclusive_lines(items: list[dict]) -> list[str]:
    """The Inconclusive section's lines: folded reasons as one line with a count, the rest as they are."""
    groups = fold_inconclusive(items)
    group_of = {id(m): reason for reason, members in groups.items() for m in members}
    out, done = [], set()
    for item in items:
        reason = group_of.get(id(item))
        if reason is None:
            out.append(f"  - {item.get('node')}: {item.get('reason')}")
        elif reason not in done:
            done.add(reason)
            members = groups[reason]
            out.append(f"  - {len(members)} checks: {reason}{_hints(members)} (--verbose lists each)")
    return out


def folded_steps(path: list[dict], badges: list[str], inconclusive: list[dict]) -> dict[int, str | None]:
    """{index in path: the one line that stands for its fold, or None to leave the step out} for the
    unknown steps that share a folded Inconclusive reason and the n.a. steps that share a meaning."""
    groups = fold_inconclusive(inconclusive)
    reason_of = {m.get("node"): reason for reason, members in groups.items() for m in members}
    keyed: dict[tuple[str, str], list[int]] = {}
    for i, (step, badge) in enumerate(zip(path, badges)):
        if badge == "unknown" and step.get("node") in reason_of:
            keyed.setdefault(("unknown", reason_of[step["node"]]), []).append(i)
        elif badge == "n.a." and step.get("means"):
            keyed.setdefault(("n.a.", step["means"]), []).append(i)
    out: dict[int, str | None] = {}
    for (badge, reason), where in keyed.items():
        if len(where) < MIN_FOLD:
            continue
        word = "undecided" if badge == "unknown" else "not judged"
        out[where[0]] = f"{len(where)} checks {word}: {reason}" + (" (see Inconclusive)" if badge == "unknown" else "")
        out.update(dict.fromkeys(where[1:]))
    return out
