"""The lifecycle's refusals: a status change the current state does not allow, and a decision
that lost a race (views answer 409)."""

from __future__ import annotations


class LifecycleError(Exception):
    """A status change that the current state does not allow; the message says why."""


class DecisionConflict(LifecycleError):
    """A decision that lost a race with another one on the same procedure (views answer 409)."""
