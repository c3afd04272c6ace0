"""A mergeable log-bucket histogram of instruction lengths (the DDSketch idea): each bucket spans
2 % of its value, so a p95 read from it is within 1 % of the exact nearest-rank value whatever the
number of sessions, and merging days is adding counts. The rollup stores one per version and day."""

from __future__ import annotations

import math
from collections import defaultdict


class CharsHistogram:
    """A mergeable histogram with relative accuracy ALPHA: a value x > 0 falls in bucket
    ceil(log_γ x) with γ = (1 + α) / (1 − α); the bucket's representative value 2γ^i / (γ + 1) is
    within α of every value in it. Zero has its own bucket (index 0 is reserved for it)."""

    ALPHA = 0.01
    GAMMA = (1 + ALPHA) / (1 - ALPHA)
    _LOG_GAMMA = math.log(GAMMA)

    def __init__(self, counts: dict[int, int] | None = None) -> None:
        self.counts: dict[int, int] = defaultdict(int)
        for key, value in (counts or {}).items():
            self.counts[int(key)] += int(value)

    @classmethod
    def index(cls, value: float) -> int:
        if value <= 0:
            return 0
        # +1 keeps index 0 free for zero; values in (0, 1] land in bucket 1.
        return max(1, math.ceil(math.log(value) / cls._LOG_GAMMA) + 1)

    @classmethod
    def representative(cls, index: int) -> float:
        if index <= 0:
            return 0.0
        return 2 * cls.GAMMA ** (index - 1) / (cls.GAMMA + 1)

    def add(self, value: float, count: int = 1) -> None:
        self.counts[self.index(value)] += count

    def merge(self, other: dict[str, int] | dict[int, int] | CharsHistogram) -> None:
        items = other.counts.items() if isinstance(other, CharsHistogram) else other.items()
        for key, value in items:
            self.counts[int(key)] += int(value)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def quantile(self, q: float) -> float | None:
        """Nearest-rank quantile: the smallest value with at least q of the values at or below it."""
        total = self.total
        if total == 0:
            return None
        rank = max(1, math.ceil(q * total))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                return self.representative(index)
        return self.representative(max(self.counts))  # unreachable: seen reaches total

    def to_json(self) -> dict[str, int]:
        return {str(k): v for k, v in sorted(self.counts.items()) if v}


def merge_counts(target: dict[int, int], source: dict) -> None:
    """Adds the bucket counts of `source` (a stored histogram, keys may be strings) into `target`."""
    for key, value in source.items():
        key = int(key)
        target[key] = target.get(key, 0) + value
