"""Eval replays, the library's half: checking a replayed case against its expectations
(`checks`), the verdict statistics (`verdict`, pure Python), the runners that execute a case
against an agent (`runners`, plus the demo agent's simulator in `simulator`), the payload a runner
receives (`payload`), the per-agent concurrency gate (`slots`) and regression-case import
(`cases`). The Celery tasks that drive a run, and the run services, live in `reviews`.
"""
