"""The ranked differential reads a cause's attributes from the catalogue, not from a copy of its own:
flip `between_hosts` or `shows` there and the ranking follows."""

from __future__ import annotations

import dataclasses

from allreduce_doctor.runbook import causes
from tests.evidence.helpers import diagnose_json, ranked
from tests.evidence.test_shm_system_error import ONE_HOST, SYSTEM_ERROR


def _flip(monkeypatch, cause: str, **changes) -> None:
    monkeypatch.setitem(causes.CAUSES, cause, dataclasses.replace(causes.CAUSES[cause], **changes))


def test_a_job_on_one_host_drops_exactly_the_causes_the_catalogue_says_need_two(tmp_path, monkeypatch):
    _, d, _ = diagnose_json(tmp_path, ONE_HOST)  # also loads the shipped Doctor before the catalogue changes
    assert ranked(d) == ["container_shm_too_small"]
    _flip(monkeypatch, "wrong_socket_ifname", between_hosts=False)
    _, d, _ = diagnose_json(tmp_path, ONE_HOST)
    assert ranked(d) == ["wrong_socket_ifname", "container_shm_too_small"]


def _reasons(d: dict) -> str:
    return " | ".join(i["reason"] for i in d["inconclusive"])


def test_the_reporters_symptom_favours_the_causes_whose_shows_holds_it(tmp_path, monkeypatch):
    # a system error weighs its candidates 3:2:1 (candidates.yaml order), and both socket causes show as a
    # hang (x1.5): the first stays ahead. Once the catalogue says it does not show as a hang, the two tie.
    _, d, _ = diagnose_json(tmp_path, SYSTEM_ERROR, "--symptom", "hang")
    assert ranked(d) == ["wrong_socket_ifname", "container_network_isolation", "container_shm_too_small"]
    assert "the text suggests wrong_socket_ifname but does not decide it" in _reasons(d)
    _flip(monkeypatch, "wrong_socket_ifname", shows=())
    _, d, _ = diagnose_json(tmp_path, SYSTEM_ERROR, "--symptom", "hang")
    assert "the text suggests wrong_socket_ifname or container_network_isolation and does not tell them apart" \
        in _reasons(d)
