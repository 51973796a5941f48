"""docs/integrations.md and its example files stay true: each is loaded or parsed, and every
allreduce-doctor command line in them is accepted by the real argument parser."""

from __future__ import annotations

import configparser
import json
import re
import shlex
from pathlib import Path

import yaml

from allreduce_doctor.cli import build_parser
from tests.healthcheck.conftest import ROOT

DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
TEXTFILE_DIR = "/var/lib/node_exporter/textfile_collector"


def parse_command(words: list[str]):
    """The argparse namespace of `allreduce-doctor ARGS` (SystemExit if a flag is wrong)."""
    assert Path(words[0]).name == "allreduce-doctor", words
    return build_parser().parse_args(words[1:])


def shell_command(text: str) -> list[str]:
    """The allreduce-doctor command of a shell snippet (continuations joined, up to ';')."""
    joined = text.replace("\\\n", " ")
    line = next(part for part in re.split(r"[;\n]", joined) if "allreduce-doctor healthcheck" in part)
    words = shlex.split(line)
    return words[words.index("allreduce-doctor"):] if "allreduce-doctor" in words else words


def test_the_slurm_wrapper_runs_a_valid_healthcheck():
    text = (EXAMPLES / "allreduce-doctor-healthcheck.sh").read_text()
    assert text.startswith("#!/bin/sh\n") and text.rstrip().endswith("exit 0")
    args = parse_command(shell_command(text))
    assert (args.command, args.drain, args.resume, args.budget) == ("healthcheck", True, True, 10.0)
    assert args.textfile == f"{TEXTFILE_DIR}/allreduce_doctor.prom"


def test_slurm_conf_lines_name_the_wrapper():
    settings = {}
    for line in (EXAMPLES / "slurm.conf").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, line
            settings[key] = value
    assert settings == {"HealthCheckProgram": "/usr/local/sbin/allreduce-doctor-healthcheck", "HealthCheckInterval": "300",
                        "HealthCheckNodeState": "ANY", "Epilog": "/usr/local/sbin/allreduce-doctor-healthcheck"}
    guide = (DOCS / "integrations.md").read_text()
    for key, value in settings.items():
        assert f"{key}={value}" in guide


def test_systemd_service_and_timer():
    service = configparser.ConfigParser(interpolation=None, strict=False)
    service.optionxform = str
    service.read_string((EXAMPLES / "allreduce-doctor-healthcheck.service").read_text())
    args = parse_command(shlex.split(service["Service"]["ExecStart"]))
    assert (args.command, args.interval, args.textfile) == ("healthcheck", 2.0, f"{TEXTFILE_DIR}/allreduce_doctor.prom")
    assert service["Service"]["SuccessExitStatus"].split() == ["1", "3"]  # verdicts, not failures
    assert float(service["Service"]["TimeoutStartSec"]) > args.budget
    timer = configparser.ConfigParser(interpolation=None, strict=False)
    timer.optionxform = str
    timer.read_string((EXAMPLES / "allreduce-doctor-healthcheck.timer").read_text())
    assert timer["Timer"]["OnUnitActiveSec"] == "5min" and timer["Install"]["WantedBy"] == "timers.target"


def test_node_exporter_flag_matches_the_textfile_directory():
    assert f"--collector.textfile.directory={TEXTFILE_DIR}" in (DOCS / "integrations.md").read_text()


def test_npd_custom_plugin_monitor_config():
    config = json.loads((EXAMPLES / "allreduce-doctor-npd.json").read_text())
    assert config["plugin"] == "custom"  # the only plugin NPD supports (types/config.go Validate)
    conditions = {c["type"] for c in config["conditions"]}
    global_timeout = float(config["pluginConfig"]["timeout"].rstrip("s"))
    assert config["pluginConfig"]["max_output_length"] == 80
    for rule in config["rules"]:
        assert rule["type"] in ("permanent", "temporary")
        if rule["type"] == "permanent":
            assert rule["condition"] in conditions  # NPD refuses a permanent rule without a default condition
        args = parse_command([rule["path"], *rule["args"]])
        assert (args.command, args.format) == ("healthcheck", "npd")
        assert args.budget < float(rule["timeout"].rstrip("s")) <= global_timeout


def test_daemonset_sketch():
    doc = yaml.safe_load((EXAMPLES / "allreduce-doctor-daemonset.yaml").read_text())
    assert doc["kind"] == "DaemonSet" and doc["apiVersion"] == "apps/v1"
    spec = doc["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["hostPID"] is True
    container = spec["containers"][0]
    args = parse_command(shell_command(container["args"][0]))
    mount = container["volumeMounts"][0]["mountPath"]
    assert args.command == "healthcheck" and Path(args.textfile).parent == Path(mount)
    assert spec["volumes"][0]["hostPath"]["path"] == TEXTFILE_DIR


def test_the_guide_links_every_example_and_lists_each_way_in():
    guide = (DOCS / "integrations.md").read_text()
    for path in EXAMPLES.iterdir():
        assert f"(examples/{path.name})" in guide, path.name
    for way in ("allreduce-doctor healthcheck --drain --resume", "--textfile PATH", "--format prometheus",
                "--format npd", "--strict", "--budget 10", "--interval S"):
        assert way in guide, way


def test_the_readme_lists_each_way_in():
    readme = (ROOT / "README.md").read_text()
    for way in ("allreduce-doctor healthcheck", "--drain", "--resume", "--textfile", "prometheus", "npd",
                "docs/integrations.md"):
        assert way in readme, way
