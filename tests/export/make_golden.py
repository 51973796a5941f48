"""Write (or --check) the exporter goldens of the KEPT scenarios: PYTHONPATH=src python -m tests.export.make_golden

Only goldens.KEPT (an InfiniBand fault, a RoCE fault, a healthy node) have full documents; every
other scenario is checked by content in test_golden.py and needs nothing written. For each kept
scenario: golden/NAME/diagnosis.json.gz (the bundle's diagnosis, regenerated with --diagnose or
when absent) and the ticket in every format rendered from it. Review the diff by eye.
"""

from __future__ import annotations

import argparse
import sys

from tests.export.goldens import FILES, GOLDEN, KEPT, diagnose_bundle, goldens, render_all, store_diagnosis, stored_diagnosis


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--diagnose", action="store_true", help="diagnose the bundles again (the runbooks changed)")
    parser.add_argument("--check", action="store_true", help="only report goldens that are missing or differ")
    args = parser.parse_args(argv)
    stale = [f"{name}/ (not a kept scenario: remove the folder)" for name in goldens() if name not in KEPT]
    for name in KEPT:
        folder = GOLDEN / name
        if args.diagnose or not (folder / "diagnosis.json.gz").exists():
            if args.check:
                if not (folder / "diagnosis.json.gz").exists():
                    stale.append(f"{name}/diagnosis.json.gz (missing)")
                    continue
                if diagnose_bundle(name) != stored_diagnosis(name):
                    stale.append(f"{name}/diagnosis.json.gz (today's diagnosis differs)")
            else:
                folder.mkdir(parents=True, exist_ok=True)
                store_diagnosis(name, diagnose_bundle(name))
        for fmt, text in render_all(stored_diagnosis(name)).items():
            path = folder / FILES[fmt]
            if path.exists() and path.read_text() == text:
                continue
            if args.check:
                stale.append(f"{name}/{FILES[fmt]}")
            else:
                path.write_text(text)
                print(f"wrote {path.relative_to(GOLDEN.parent)}")
    for item in stale:
        print(f"stale: {item}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
