"""The demo data of `make demo` and `manage.py seed_demo`: users, agent, procedures (seed.py),
regression cases (evals.py) and sessions that mine into a candidate (sessions.py). Callers use
what this face hands on."""

from .seed import DEMO_AGENT, DEMO_PLAYGROUND_TASKS, DEMO_USERS, DemoResult, seed_demo

__all__ = ["DEMO_AGENT", "DEMO_PLAYGROUND_TASKS", "DEMO_USERS", "DemoResult", "seed_demo"]
