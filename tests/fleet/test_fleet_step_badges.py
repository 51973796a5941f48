"""Issue 30 item 1: a fleet check that sees its problem is FAIL in every output. Before, its JSON badge
was empty, so the text (which marks every finding's step) said [FAIL] and the Markdown, GitHub and
Jira tickets (which mark only the root cause's step) said `pass` for "Every setting agrees across the
nodes" and "No node is a numeric outlier" of a four-host paste."""

from __future__ import annotations

from allreduce_doctor.cli import main
from allreduce_doctor.export.ticket import build_ticket
from allreduce_doctor.fleet.fleet_diagnosis import fleet_diagnosis  # noqa: F401  (the builder under test)
from tests.evidence.helpers import OUTPUTS, fixture_body
from tests.evidence.test_paste_from_bundle import diagnose_paste

SETTINGS, OUTLIERS = "Every setting agrees across the nodes", "No node is a numeric outlier (median and MAD)"


def four_hosts() -> str:
    """Four hosts' ibstat (the real NDR H100 output) and NCCL_IB_HCA; gpu04's ports at 200 and an older
    firmware, gpu03 with a narrower NCCL_IB_HCA."""
    ibstat = fixture_body(OUTPUTS / "ibstat-ndr-h100-ib-all-active.txt").rstrip("\n")
    parts = []
    for host in ("gpu01", "gpu02", "gpu03", "gpu04"):
        own = ibstat.replace("Rate: 400", "Rate: 200").replace("28.41.1000", "28.39.1002") if host == "gpu04" else ibstat
        hca = "mlx5_0,mlx5_1" if host == "gpu03" else "mlx5"
        parts += [f"root@{host}:~# ibstat", own, f"root@{host}:~# env | grep NCCL", f"NCCL_IB_HCA={hca}"]
    return "\n".join(parts) + "\n"


def test_fleet_steps_that_see_their_problem_are_fail_everywhere(tmp_path, capsys):
    code, data = diagnose_paste(tmp_path, capsys, four_hosts())
    assert code == 1
    badges = {s["title"]: s["badge"] for s in data["path"]}
    assert (badges[SETTINGS], badges[OUTLIERS]) == ("fail", "fail")
    ticket = build_ticket(data)
    marks = {s["title"]: s["mark"] for s in ticket.path}
    assert (marks[SETTINGS], marks[OUTLIERS]) == ("FAIL", "FAIL")
    path = tmp_path / "paste.txt"
    for fmt, row in (("markdown", f"| FAIL | {SETTINGS} | yes |"), ("github", f"| FAIL | {SETTINGS} | yes |"),
                     ("jira", f"|FAIL|{SETTINGS}|yes|")):
        args = ["--format", fmt] if fmt == "markdown" else ["--export", fmt]
        assert main(["diagnose", "--evidence", str(path), *args]) == 1
        assert row in capsys.readouterr().out, fmt
    assert main(["diagnose", "--evidence", str(path)]) == 1
    text = capsys.readouterr().out
    assert f"  [FAIL] {SETTINGS}\n" in text and f"  [FAIL] {OUTLIERS}\n" in text


def test_a_fleet_check_that_passes_or_cannot_tell_says_so():
    from allreduce_doctor.fleet.fleet_diagnosis import _Builder

    b = _Builder({}, {})
    b.step("fleet.a", "A", "no", "fine")
    b.step("fleet.b", "B", "unknown", "unsure")
    assert [s.badge for s in b.d.path] == ["pass", "unknown"]
