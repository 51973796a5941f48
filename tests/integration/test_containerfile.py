"""The Containerfile: its file list is what the wheel build needs, every probe tool is in the image
or named as absent, it runs as a non-root user, its entry point and default command are valid, the
DaemonSet and NPD examples name it, and the entry point runs `--version` from a clean venv exactly as
the image installs it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from allreduce_doctor.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
TEXT = (ROOT / "Containerfile").read_text()
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
VENV = "/opt/allreduce-doctor"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", "\n".join(line for line in TEXT.splitlines() if not line.startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in joined.splitlines() if line.strip()]


def stages() -> list[list[tuple[str, str]]]:
    out: list[list[tuple[str, str]]] = []
    for op, args in instructions():
        if op == "FROM":
            out.append([])
        out[-1].append((op, args))
    return out


def comment_list(label: str) -> str:
    block = " ".join(line.lstrip("# ") for line in TEXT.splitlines() if line.startswith("#"))
    return re.search(rf"{label}(.*?)(?:\.|$)", block).group(1)


def test_the_build_stage_copies_what_the_wheel_needs_and_nothing_else():
    build = stages()[0]
    copied = set()
    for op, args in build:
        if op == "COPY":
            *sources, _ = shlex.split(args)
            copied |= set(sources)
    needed = {"pyproject.toml", PYPROJECT["project"]["readme"], "src",
              *PYPROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["force-include"]}
    assert copied == needed
    assert all((ROOT / source).exists() for source in copied)
    ignored = [line for line in (ROOT / ".dockerignore").read_text().splitlines() if line and not line.startswith("#")]
    assert not any(Path(i).parts[0] in copied for i in ignored)  # nothing the build copies is ignored


def test_every_probe_tool_is_in_the_image_or_named_as_absent():
    from allreduce_doctor.doctor import load_catalogue

    tools = {p.argv[0] for p in load_catalogue().probes.values() if getattr(p, "argv", None)}
    present = dict(re.findall(r"([\w-]+(?: and [\w-]+)?) \(([\w-]+)\)", comment_list("Probe tools in the image:")))
    in_image = {t: pkg for names, pkg in present.items() for t in names.split(" and ")}
    absent = set(re.findall(r"[\w-]+", re.sub(r"\([^)]*\)", "", comment_list("Not in the image \\(reported missing where absent\\):"))))
    assert tools <= set(in_image) | absent, tools - set(in_image) - absent
    install = next(args for op, args in stages()[-1] if op == "RUN" and "apt-get install" in args)
    assert set(in_image.values()) <= set(install.split())


def test_it_runs_as_a_non_root_user_with_a_valid_entry_point():
    final = dict(stages()[-1][1:])  # the last stage's instructions (one of each kind that matters here)
    user = final["USER"].split(":")
    assert user[0].isdigit() and int(user[0]) != 0 and int(user[1]) != 0
    assert json.loads(final["ENTRYPOINT"]) == ["allreduce-doctor"]
    args = build_parser().parse_args(json.loads(final["CMD"]))
    assert (args.command, args.budget) == ("healthcheck", 10.0)
    assert final["ENV"].startswith(f"PATH={VENV}/bin:")


def test_the_examples_name_the_image():
    tag = re.search(r"podman build -t (\S+) -f Containerfile", TEXT).group(1)
    assert tag.endswith(f"/allreduce-doctor:{PYPROJECT['project']['version']}")
    daemonset = yaml.safe_load((ROOT / "docs/examples/allreduce-doctor-daemonset.yaml").read_text())
    spec = daemonset["spec"]["template"]["spec"]
    assert spec["containers"][0]["image"] == tag
    mounts = {m["mountPath"]: m.get("readOnly", False) for m in spec["containers"][0]["volumeMounts"]}
    assert (mounts["/sys"], mounts["/dev/infiniband"]) == (True, True)
    npd = json.loads((ROOT / "docs/examples/allreduce-doctor-npd.json").read_text())
    assert {r["path"] for r in npd["rules"]} == {f"{VENV}/bin/allreduce-doctor"}
    assert tag in (ROOT / "docs/integrations.md").read_text()


@pytest.mark.slow
def test_the_entry_point_runs_from_a_clean_venv_as_the_image_installs_it(tmp_path):
    wheels = tmp_path / "wheels"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                            str(wheels), str(ROOT)], capture_output=True, text=True, timeout=300)
    if built.returncode != 0 and "No module named 'hatchling'" in built.stderr:
        pytest.skip("hatchling is not installed (pip install '.[test]' installs it)")
    assert built.returncode == 0, built.stderr
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    wheel = next(wheels.glob("allreduce_doctor-*.whl"))
    subprocess.run([str(venv / "bin/pip"), "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True, timeout=300)
    proc = subprocess.run(["allreduce-doctor", "--version"], capture_output=True, text=True, timeout=60,
                          env={"PATH": f"{venv}/bin:/usr/bin:/bin"}, cwd=tmp_path)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"allreduce-doctor {PYPROJECT['project']['version']}\n", "")
