"""Writing a report or document where the user asked: stdout, a device, or a file."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from allreduce_doctor.errors import DoctorError


def write_output(text: str, output: str | None) -> None:
    """Write `text` to stdout (no output, or "-") or to the file `output`."""
    if not output or output == "-":
        sys.stdout.write(text)
        return
    try:
        target = Path(output)
        if target.exists() and not target.is_file():  # /dev/null, a FIFO: write in place, never replace it
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        tmp = f"{output}.tmp-{os.getpid()}"
        Path(tmp).write_text(text, encoding="utf-8")
        os.replace(tmp, output)  # a regular file appears whole or not at all
    except OSError as err:
        raise DoctorError(f"cannot write {output}: {err.strerror or err}") from None
