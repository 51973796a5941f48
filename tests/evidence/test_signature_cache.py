"""The signature and candidate tables come from the knowledge cache when nothing changed, and
from the YAML otherwise: a tampered or stale cache is never used, and a hit parses no YAML."""

import pytest

from allreduce_doctor import knowledge_cache
from allreduce_doctor.evidence import signatures as sig


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    sig.signatures.cache_clear()
    sig.candidates.cache_clear()
    yield tmp_path / "allreduce-doctor"
    sig.signatures.cache_clear()
    sig.candidates.cache_clear()


def _reload():
    sig.signatures.cache_clear()
    sig.candidates.cache_clear()
    return sig.signatures(), sig.candidates()


def test_a_hit_parses_no_yaml_and_gives_the_same_tables(fresh, monkeypatch):
    parsed = _reload()
    assert sorted(p.name for p in fresh.iterdir()) == ["signatures-candidates.json", "signatures-signatures.json"]
    monkeypatch.setattr(sig, "parse_yaml", lambda *a, **k: pytest.fail("parsed YAML on a cache hit"))
    assert _reload() == parsed


def test_a_tampered_cache_is_not_used(fresh, monkeypatch):
    parsed = _reload()
    cached = fresh / "signatures-signatures.json"
    cached.write_bytes(cached.read_bytes().replace(b"NCCL", b"XXXX", 1))
    calls = []
    real = sig.parse_yaml
    monkeypatch.setattr(sig, "parse_yaml", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    assert _reload() == parsed
    assert [name.rsplit("/", 1)[-1] for name in calls] == ["signatures.yaml"]


def test_a_stale_cache_is_not_used(fresh, monkeypatch):
    _reload()
    monkeypatch.setattr(knowledge_cache, "cache_key", lambda files: "another key")  # a file or the code changed
    calls = []
    real = sig.parse_yaml
    monkeypatch.setattr(sig, "parse_yaml", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    _reload()
    assert len(calls) == 2
