"""Eval replays: the runs (`eval_runs`: start, dispatch, chunks, verdict, cancel, recovery) and their
Celery tasks (`tasks`), checking a replayed case against its expectations (`checks`), the verdict
statistics (`verdict`, pure Python), the runners that execute a case against an agent (`runners`,
their errors in `errors`, plus the demo agent's simulator in `simulator`), the payload a runner
receives (`payload`, rendered by procmem_client.rendering as agents receive it), the per-agent concurrency
gate (`slots`), an agent's eval settings (`configuration`) and regression-case import (`cases`).
"""
