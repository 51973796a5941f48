"""Planted secrets of every shape never leave the node: not in what LiveHost answers, not in a
bundle (the writer redacts token shapes again), not in any ticket format."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import time

import pytest

from allreduce_doctor.export import FORMATS, render_export
from allreduce_doctor.hosts.live import LiveHost
from allreduce_doctor.hosts.recording import RecordingHost
from allreduce_doctor.redact import filter_env, keep_cmdline, redact_argv
from tests.export.goldens import stored_diagnosis

# Built from parts so no complete token sits in the repository.
TOKENS = {
    "github": "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa12",
    "github_pat": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnop",
    "gitlab": "glpat-" + "xY3zW9vU8tS7rQ6pO5nM",
    "huggingface": "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "slack": "xoxp-" + "1234567890-0987654321-abcdef",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "google": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "jwt": "eyJhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiIxMjM0NTY3ODkwIn0" + ".dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "pem": "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEowIBAAKCAQEAplantedkeybody\n-----END RSA " + "PRIVATE KEY-----",
}
PLAIN = {  # secrets with no recognisable shape: only the name or the flag gives them away
    "NCCL_AUTH_TOKEN": "plain-nccl-auth-value",
    "UCX_SECRET_KEY": "plain-ucx-secret-value",
    "CUDA_MPS_PASSWORD": "plain-cuda-password-value",
    "NCCL_PLUGIN_CREDENTIAL": "plain-credential-value",
}
ARGV_SECRETS = ["--password", "plain-flag-password", "--api-key", "plain-flag-apikey", "--token=plain-flag-token"]
EVERY_SECRET = [*TOKENS.values(), *PLAIN.values(), "plain-flag-password", "plain-flag-apikey", "plain-flag-token",
                "MIIEowIBAAKCAQEAplantedkeybody"]


def _leaks(text: str) -> list[str]:
    return [s for s in EVERY_SECRET if s in text or s.replace("\n", "\\n") in text]


def test_the_redactor_catches_every_shape():
    env = {**PLAIN, **{f"NCCL_NOTE_{k.upper()}": f"see {v}" for k, v in TOKENS.items()},
           "NCCL_IB_PKEY": "0x8001", "NCCL_IB_HCA": "mlx5_0", "HOME": "/root"}
    seen = filter_env(env)
    assert seen["NCCL_IB_PKEY"] == "0x8001" and seen["NCCL_IB_HCA"] == "mlx5_0" and "HOME" not in seen
    assert all(seen[name] == "<redacted>" for name in PLAIN)
    argv = redact_argv(["python", "train.py", *ARGV_SECRETS, *TOKENS.values(), "--lr", "0.1"])
    assert argv[:7] == ["python", "train.py", "--password", "<redacted>", "--api-key", "<redacted>",
                        "--token=<redacted>"]
    assert argv[-2:] == ["--lr", "0.1"]
    assert _leaks(repr(seen) + repr(argv)) == []


def test_proc_cmdline_keeps_only_what_the_probes_read():
    line = "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro rd.luks.key=/secret.key iommu=pt intel_iommu=on quiet\n"
    assert keep_cmdline(line) == "iommu=pt intel_iommu=on\n"


@pytest.fixture
def planted_process():
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "NCCL_DEBUG": "INFO", **PLAIN,
           "NCCL_DEBUG_FILE": f"/tmp/nccl.{TOKENS['github']}.log"}
    argv = [sys.executable, "-c", "import time; time.sleep(30)", *ARGV_SECRETS, *TOKENS.values()]
    proc = subprocess.Popen(argv, env=env)
    time.sleep(0.3)
    yield proc
    proc.kill()
    proc.wait()


def test_no_planted_secret_reaches_the_bundle_or_a_ticket(planted_process, tmp_path):
    out = tmp_path / "bundle"
    recorder = RecordingHost(LiveHost(), out)
    found = [p for p in recorder.processes() if p.pid == planted_process.pid]
    assert found, "the planted process carries NCCL_* variables and must be found"
    assert found[0].env["NCCL_DEBUG"] == "INFO"
    recorder.read("/proc/cmdline")
    recorder.finish()
    bundle_text = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "NCCL_AUTH_TOKEN" in bundle_text  # the variable is there, its value is not
    assert _leaks(bundle_text) == []

    diagnosis = copy.deepcopy(stored_diagnosis("roce-pfc-off"))
    raw = {"pid": 1, "name": "python", "env": {**PLAIN, "NCCL_DEBUG_FILE": f"/tmp/{TOKENS['gitlab']}"},
           "cmdline": ["python", *ARGV_SECRETS, *TOKENS.values()]}
    diagnosis["evidence"].append({"node": "x", "fact": "nccl.processes", "status": "ok", "reason": "",
                                  "source": "psutil", "expected": "-", "observed": [raw]})
    for fmt in FORMATS:
        assert _leaks(render_export(diagnosis, fmt)) == [], fmt


def test_the_bundle_writer_redacts_token_shapes_itself(tmp_path):
    from allreduce_doctor.snapshot.writer import MemberWriter

    MemberWriter(tmp_path, "b").write("files/etc/x", f"key={TOKENS['aws']} pem={TOKENS['pem']}".encode())
    assert (tmp_path / "files/etc/x").read_text() == "key=<redacted> pem=<redacted>"
