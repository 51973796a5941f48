"""Write (or --check) the exporter golden files: PYTHONPATH=src python -m tests.export.make_golden

For each scenario bundle: golden/NAME/diagnosis.json.gz (the bundle's diagnosis, regenerated with
--diagnose or when absent) and the ticket in every format rendered from it. Review the diff by eye.
"""

from __future__ import annotations

import argparse
import sys

from tests.export.goldens import FILES, GOLDEN, diagnose_bundle, render_all, scenarios, store_diagnosis, stored_diagnosis


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--diagnose", action="store_true", help="diagnose the bundles again (the runbooks changed)")
    parser.add_argument("--check", action="store_true", help="only report goldens that are missing or differ")
    args = parser.parse_args(argv)
    stale = []
    for name in scenarios():
        folder = GOLDEN / name
        if args.diagnose or not (folder / "diagnosis.json.gz").exists():
            if args.check:
                stale.append(f"{name}/diagnosis.json.gz (missing)")
                continue
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
