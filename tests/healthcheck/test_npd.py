"""--format npd: node-problem-detector's custom plugin protocol (0 OK, 1 NonOK, 2 Unknown; <= 80 bytes)."""

from __future__ import annotations

from allreduce_doctor.metrics.npd import render_npd
from tests.healthcheck.conftest import EXAMPLES, doctor


def test_diagnose_npd_fault_is_non_ok_with_the_cause_first():
    proc = doctor("diagnose", "--snapshot", str(EXAMPLES / "roce-pfc-off.tar.gz"), "--format", "npd")
    assert (proc.returncode, proc.stderr) == (1, "")
    assert proc.stdout == "pfc_not_enabled: enp155s0np0: PFC is not enabled on the RoCE priority: the fa...\n"
    assert len(proc.stdout.strip()) == 80


def test_healthcheck_npd_healthy_is_ok():
    proc = doctor("healthcheck", "--snapshot", str(EXAMPLES / "ib-healthy.tar.gz"), "--format", "npd")
    assert (proc.returncode, proc.stdout) == (0, "nothing found on this node\n")


def test_inconclusive_is_unknown_and_non_ok_under_strict(unknown_qos):
    plain = doctor("healthcheck", "--snapshot", unknown_qos, "--format", "npd")
    strict = doctor("healthcheck", "--snapshot", unknown_qos, "--format", "npd", "--strict")
    assert (plain.returncode, strict.returncode) == (2, 1)
    assert plain.stdout.startswith("inconclusive: roce.pfc: roce.priority is missing")


def test_more_findings_are_counted_in_the_line():
    d = {"verdict": "fault", "findings": [{"cause": "a", "title": "first"}, {"cause": "b", "title": "second"}]}
    assert render_npd(d) == "a (+1 more): first\n"


def test_the_line_is_cut_at_80_bytes_on_a_character_boundary():
    # NPD cuts stdout "if stdout is longer than max_output_length bytes" (plugin.go): bytes, not characters
    def line(title):
        return render_npd({"verdict": "fault", "findings": [{"cause": "pfc_not_enabled", "title": title}]}).rstrip("\n")

    german = line("Übertragung gestört – " * 6)  # 2-byte and 3-byte characters
    assert german == "pfc_not_enabled: Übertragung gestört – Übertragung gestört – Übertra..."
    assert (len(german), len(german.encode("utf-8"))) == (71, 80)
    split = line("a" * 59 + "€" * 10)  # bytes 76-78 are one "€": byte 77 would split it
    assert split == "pfc_not_enabled: " + "a" * 59 + "..."
    assert len(split.encode("utf-8")) == 79


def test_a_split_character_is_dropped_whole():
    from allreduce_doctor.metrics.npd import cut_bytes

    assert cut_bytes("ab€€", 7) == "ab..."  # "ab€" is 5 bytes, over the 4 left before "..."
    assert cut_bytes("abc€", 7) == "abc€"  # exactly 6 bytes: not cut
    assert cut_bytes("a" * 80, 80) == "a" * 80
