"""Why a runner could not produce an outcome for a case. The eval counts these as *errors* of the
case, never as failed cases: the candidate did nothing wrong when the agent timed out or was busy.

Their own module because both the runners (runners.py) and the per-agent concurrency gate
(slots.py) raise them, and the gate is used by the runners. Pure Python."""

from __future__ import annotations


class RunnerError(Exception):
    """The runner could not produce an outcome. Counted as an error, not as a failed case."""


class NoFreeSlot(RunnerError):
    """Counted as a runner error: the agent was too busy, the candidate did nothing wrong."""
