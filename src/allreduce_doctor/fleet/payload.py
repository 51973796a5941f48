"""What `fleet` sends to each node: one Python script, read by `python3 -I -S -` from stdin.

The script carries, as a base64 zip, the allreduce_doctor package (less the terminal UI and the
exporters), the probe catalogue (probes/*.yaml, where resources.py looks for packaged data) and
PyYAML's pure-Python modules (its C extension is left out: the node's libyaml is not assumed).
`-I -S` keeps the node's own site-packages out, so the same code runs on every node. The node
needs python3 (3.11 or newer) and sshd, nothing else; the script unpacks into a private
temporary folder and removes it when it ends.
"""

from __future__ import annotations

import base64
import io
import zipfile
from functools import lru_cache
from pathlib import Path

import yaml

import allreduce_doctor
from allreduce_doctor.resources import probe_files

REMOTE_COMMAND = "{python} -I -S -"
LEFT_OUT = ("tui", "export")  # front ends the node never runs
_EPOCH = (2024, 1, 1, 0, 0, 0)  # fixed member times: the same code gives the same payload

_BOOTSTRAP = """\
# allreduce-doctor fleet: collect this node (read-only) and print the bundle on stdout.
import base64, io, sys, tempfile, zipfile
if sys.version_info < (3, 11):
    sys.stdout.write("ALLREDUCE-DOCTOR-ERROR python3 on this node is %d.%d; allreduce-doctor needs 3.11 or newer "
                     "(point --remote-python at one)\\n" % sys.version_info[:2])
    sys.exit(3)
PAYLOAD = "{payload}"
with tempfile.TemporaryDirectory(prefix="allreduce-doctor-") as tmp:
    zipfile.ZipFile(io.BytesIO(base64.b64decode(PAYLOAD))).extractall(tmp + "/lib")
    sys.path.insert(0, tmp + "/lib")
    from allreduce_doctor.fleet.remote import main
    code = main(tmp, {interval!r})
sys.exit(code)
"""


def _add(archive: zipfile.ZipFile, name: str, data: bytes) -> None:
    info = zipfile.ZipInfo(name, date_time=_EPOCH)
    info.compress_type = zipfile.ZIP_DEFLATED
    archive.writestr(info, data)


@lru_cache(maxsize=1)
def package_zip() -> bytes:
    """The zip the node unpacks: allreduce_doctor/..., allreduce_doctor/data/probes/, yaml/."""
    buf = io.BytesIO()
    package = Path(allreduce_doctor.__file__).resolve().parent
    with zipfile.ZipFile(buf, "w") as archive:
        for path in sorted(package.rglob("*.py")):
            rel = path.relative_to(package)
            if rel.parts[0] in LEFT_OUT or "__pycache__" in rel.parts:
                continue
            _add(archive, f"allreduce_doctor/{rel.as_posix()}", path.read_bytes())
        for path in probe_files():
            _add(archive, f"allreduce_doctor/data/probes/{path.name}", path.read_bytes())
        for path in sorted(Path(yaml.__file__).resolve().parent.glob("*.py")):
            _add(archive, f"yaml/{path.name}", path.read_bytes())
    return buf.getvalue()


def remote_script(interval: float) -> bytes:
    """The whole program the node reads on stdin."""
    payload = base64.b64encode(package_zip()).decode("ascii")
    return _BOOTSTRAP.format(payload=payload, interval=float(interval)).encode("ascii")


def remote_command(python: str) -> str:
    return REMOTE_COMMAND.format(python=python)
