"""A short run of the hostile-export fuzz (benchmarks/fuzz_bundles.py runs 100 and 500 bundles)."""

from __future__ import annotations

from benchmarks.fuzz_bundles import FORMATS, fuzz_exports


def test_hostile_exports_render_clean():
    outcomes, failures = fuzz_exports(12, seed=15)
    assert failures == []
    assert set(outcomes) <= {"clean", "refused (one line)"}
    assert sum(outcomes.values()) == 12 * len(FORMATS)
