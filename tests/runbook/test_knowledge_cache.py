"""The Doctor's knowledge cache: used only when it is exactly what a full load would give."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from allreduce_doctor import knowledge_cache
from allreduce_doctor.doctor import Doctor, _knowledge_files, _shipped

ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "tests" / "fixtures" / "scenarios" / "roce-pfc-off" / "bundle.tar.gz"
CHILD = (
    "import json, sys\n"
    "from allreduce_doctor.doctor import Doctor\n"
    "from allreduce_doctor.hosts.snapshot import SnapshotHost\n"
    "from allreduce_doctor.session import Options, Session\n"
    "d = Session(Doctor.load(), SnapshotHost(sys.argv[1]), Options('auto', 0, {})).diagnose()\n"
    "print(json.dumps({'cause': d.root_cause['id'], 'title': d.root_cause['title'],\n"
    "                  'networkx': 'networkx' in sys.modules}))\n"
)


def diagnose_in_child(cache_home: Path) -> dict:
    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home), "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", CHILD, str(BUNDLE)], env=env, capture_output=True, text=True,
                         timeout=60, check=True)
    return json.loads(out.stdout)


def cache_file(cache_home: Path) -> Path:
    return cache_home / "allreduce-doctor" / knowledge_cache.FILE_NAME


def rewrite_payload(path: Path, edit, keep_checksum: bool) -> None:
    header_line, _, payload = path.read_bytes().partition(b"\n")
    header = json.loads(header_line)
    payload = edit(payload)
    if not keep_checksum:
        import hashlib

        header["sha256"] = hashlib.sha256(payload).hexdigest()
    path.write_bytes(json.dumps(header).encode() + b"\n" + payload)


def test_a_miss_checks_and_writes_then_a_hit_walks_without_networkx(tmp_path):
    first = diagnose_in_child(tmp_path)
    assert first == {"cause": "pfc_not_enabled", "title": first["title"], "networkx": True}
    assert cache_file(tmp_path).is_file()
    second = diagnose_in_child(tmp_path)
    assert second == {**first, "networkx": False}


def test_a_tampered_payload_is_never_used(tmp_path):
    truth = diagnose_in_child(tmp_path)
    title = truth["title"].encode()
    rewrite_payload(cache_file(tmp_path), lambda p: p.replace(title, b"forged title"), keep_checksum=True)
    again = diagnose_in_child(tmp_path)
    assert again == {**truth, "networkx": True}  # the checksum did not match: full load
    assert title in cache_file(tmp_path).read_bytes()  # and the cache was written anew


def test_a_payload_naming_a_class_outside_the_whitelist_is_never_used(tmp_path):
    truth = diagnose_in_child(tmp_path)
    rewrite_payload(cache_file(tmp_path), lambda p: p.replace(b'{"@":"Outcome"', b'{"@":"Popen"', 1),
                    keep_checksum=False)
    with pytest.raises(knowledge_cache.CacheMiss, match="unknown class 'Popen'"):
        knowledge_cache.read(knowledge_cache.cache_key(_knowledge_files()), (Doctor,), cache_file(tmp_path))
    assert diagnose_in_child(tmp_path) == {**truth, "networkx": True}


def test_a_stale_cache_is_never_used(tmp_path):
    path = tmp_path / "knowledge.json"
    assert knowledge_cache.write("old-key", {"doctor": "from before the runbooks changed"}, path)
    with pytest.raises(knowledge_cache.CacheMiss, match="stale"):
        knowledge_cache.read("new-key", (), path)
    assert knowledge_cache.read("old-key", (), path) == {"doctor": "from before the runbooks changed"}


def test_the_key_changes_with_any_knowledge_file(tmp_path):
    files = [tmp_path / "a.yaml", tmp_path / "b.yaml"]
    files[0].write_text("runbook: a\n")
    files[1].write_text("runbook: b\n")
    before = knowledge_cache.cache_key(files)
    files[1].write_text("runbook: b \n")
    assert knowledge_cache.cache_key(files) != before


def test_an_unreadable_cache_is_a_miss(tmp_path):
    path = tmp_path / "knowledge.json"
    path.write_bytes(b"\x00not json")
    with pytest.raises(knowledge_cache.CacheMiss, match="unreadable"):
        knowledge_cache.read("k", (), path)


def test_an_unwritable_cache_dir_still_diagnoses(tmp_path):
    blocked = tmp_path / "a-file-not-a-folder"
    blocked.write_text("")
    assert knowledge_cache.write("k", {"x": 1}, blocked / "allreduce-doctor" / "knowledge.json") is False
    result = diagnose_in_child(blocked)
    assert result["cause"] == "pfc_not_enabled" and result["networkx"] is True


def test_the_cached_knowledge_is_the_checked_knowledge(tmp_path):
    checked = Doctor.load(validate=True)
    path = tmp_path / "knowledge.json"
    assert knowledge_cache.write("k", checked, path)
    cached = knowledge_cache.read("k", (Doctor,), path)
    assert cached.runbook_hash == checked.runbook_hash
    assert cached.catalogue == checked.catalogue
    assert cached.runbooks.runbooks == checked.runbooks.runbooks
    assert cached.runbooks.root == checked.runbooks.root
    assert set(cached.runbooks.graph.edges) == set(checked.runbooks.graph.edges)  # rebuilt on demand
    assert _shipped().runbook_hash == checked.runbook_hash


def test_a_relative_xdg_cache_home_is_ignored_and_no_home_means_no_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert knowledge_cache.cache_dir() == tmp_path / ".cache" / "allreduce-doctor"
    monkeypatch.setenv("HOME", "")
    monkeypatch.setattr(os.path, "expanduser", lambda p: p)
    assert knowledge_cache.cache_dir() is None
    assert knowledge_cache.write("k", {"x": 1}) is False
    with pytest.raises(knowledge_cache.CacheMiss, match="no cache dir"):
        knowledge_cache.read("k")


def test_runbook_validate_checks_afresh_even_with_a_cache(tmp_path):
    diagnose_in_child(tmp_path)  # the cache is written
    script = ("import sys\nfrom allreduce_doctor.cli import main\ncode = main(['runbook', 'validate'])\n"
              "print(code, 'networkx' in sys.modules)\n")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.splitlines()[-1] == "0 True"
    assert out.stdout.startswith("ok: 5 runbooks (ib, nccl_log, plugin, roce, trunk), ")
