"""The sample clock every fake Host in the tests shares: a sample index and its time."""

from __future__ import annotations


class SampleClock:
    """Host.sample / sample_time / next_sample without sleeping; `_last_sample` caps the index."""

    _sample: int = 0
    _time: float = 0.0
    _last_sample: int | None = None

    @property
    def sample(self) -> int:
        return self._sample

    def sample_time(self) -> float:
        return self._time

    def next_sample(self, interval: float) -> None:
        step = self._sample + 1
        self._sample = step if self._last_sample is None else min(step, self._last_sample)
        self._time += interval
