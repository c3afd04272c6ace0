"""Benchmark: eval-run orchestration on real Celery workers (Redis) and PostgreSQL.

1. Overhead per case with a runner that answers at once, on one worker process: the wall time of a
   whole run (start → verdict stored) divided by its cases (each case runs twice, once per arm).
2. With a runner that takes 50 ms, the speed-up from one to two worker processes.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_h5 CELERY_BROKER_URL=redis://127.0.0.1:6379/5 \\
        .venv/bin/python -m bench.eval_orchestration [--cases 60] [--repeats 3] [--append]

It migrates the database it is given, creates a fresh agent with regression cases, starts its own
`celery worker --concurrency 1` processes on the broker, and stops them at the end. Nothing else
should consume that broker's queue while it runs. `--append` adds the results to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789abcdef0123456789")
os.environ.setdefault("ALLOWED_HOSTS", "localhost")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def instant_runner(*, case, instruction, procedures):
    """Answers at once: the expected call, a reply."""
    return {"tool_calls": [{"name": "lookupOrder", "args": {}}], "reply": "done"}


def sleep_runner(*, case, instruction, procedures):
    """Takes 50 ms, like a fast agent endpoint."""
    time.sleep(0.05)
    return instant_runner(case=case, instruction=instruction, procedures=procedures)


def _setup_django():
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)


def _make_agent(cases: int, label: str):
    from django.contrib.auth import get_user_model

    from library import services
    from library.models import Agent, Intent, RegressionCase, Source
    from library.permissions import ensure_reviewers_group

    reviewer, _ = get_user_model().objects.get_or_create(username="bench_reviewer")
    reviewer.groups.add(ensure_reviewers_group())
    agent = Agent.objects.create(
        name=f"bench_{label}_{int(time.time() * 1000)}", tools=["lookupOrder"], eval_runner="python"
    )
    target = Intent.objects.create(agent=agent, name="target")
    other = Intent.objects.create(agent=agent, name="other")
    RegressionCase.objects.bulk_create(
        RegressionCase(
            agent=agent, intent=target if i % 2 == 0 else other, task=f"case {i}", expected_tools=["lookupOrder"]
        )
        for i in range(cases)
    )
    version = services.procedure_propose(
        agent=agent,
        intent=target,
        key="bench.target",
        applies_when="Benchmark cases.",
        steps=["Call lookupOrder.", "Reply.", "Stop."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        source=Source.MANUAL,
        actor_label="bench",
    )
    return agent, version, reviewer


def _start_workers(count: int, log_dir: Path) -> list[subprocess.Popen]:
    from procmem_site.celery import app

    procs = []
    names = []
    for index in range(count):
        name = f"bench-eval-{index}-{os.getpid()}@localhost"
        log = open(log_dir / f"worker-{index}.log", "w")
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "procmem_site",
                    "worker",
                    "--pool",
                    "prefork",
                    "--concurrency",
                    "1",
                    "--loglevel",
                    "WARNING",
                    "--hostname",
                    name,
                    "--without-mingle",
                    "--without-gossip",
                    "--without-heartbeat",
                ],
                cwd=ROOT,
                env=dict(os.environ),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        )
        names.append(name)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        replies = app.control.ping(destination=names, timeout=1.0) or []
        if len(replies) == count:
            return procs
    raise SystemExit(f"workers did not start; see {log_dir}")


def _stop_workers(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _one_run(version, reviewer) -> float:
    """Seconds from the start of the run to its stored verdict (the database's own timestamps)."""
    from library.evals import eval_runs as evals
    from library.models import EvalRun

    run = evals.eval_run_start(version=version, user=reviewer)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.is_finished:
            break
        time.sleep(0.05)
    else:
        raise SystemExit(f"eval run {run.pk} did not finish")
    if run.state != EvalRun.State.DONE:
        raise SystemExit(f"eval run {run.pk} ended {run.state}: {run.failure_reason}")
    return (run.finished_at - run.created_at).total_seconds()


def _scenario(path: str, cases: int, repeats: int, workers: int, log_dir: Path) -> list[float]:
    agent, version, reviewer = _make_agent(cases, path.rsplit(":", 1)[-1])
    agent.eval_python_path = path
    agent.save()
    procs = _start_workers(workers, log_dir)
    try:
        _one_run(version, reviewer)  # warm-up: imports, connections
        return [_one_run(version, reviewer) for _ in range(repeats)]
    finally:
        _stop_workers(procs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60, help="regression cases per run (each runs twice)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--append", action="store_true", help="append the results to bench/RESULTS.md")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres") or not os.environ.get(
        "CELERY_BROKER_URL", ""
    ).startswith("redis"):
        raise SystemExit("set DATABASE_URL=postgres://… and CELERY_BROKER_URL=redis://… (see the docstring)")
    _setup_django()
    from django.conf import settings

    log_dir = ROOT / "var" / "bench-eval"
    log_dir.mkdir(parents=True, exist_ok=True)
    arms = 2 * args.cases
    instant = _scenario("bench.eval_orchestration:instant_runner", args.cases, args.repeats, 1, log_dir)
    # 1 and 2 workers alternate, so that both see the same background load on this shared machine
    slow1: list[float] = []
    slow2: list[float] = []
    for _ in range(args.repeats):
        slow1 += _scenario("bench.eval_orchestration:sleep_runner", args.cases, 1, 1, log_dir)
        slow2 += _scenario("bench.eval_orchestration:sleep_runner", args.cases, 1, 2, log_dir)
    t_instant, t1, t2 = statistics.median(instant), statistics.median(slow1), statistics.median(slow2)
    load = os.getloadavg()
    lines = [
        f"- when: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores (shared), load average at the end {load[0]:.2f}",
        f"- runs of {args.cases} cases = {arms} case-arms, chunks of {settings.PROCMEM_EVAL_CHUNK_SIZE} cases, "
        f"median of {args.repeats} runs, each after a warm-up run on freshly started workers (1- and 2-worker runs "
        f"alternate); time = start of the run → verdict stored",
        f"- instant runner, 1 worker process: run {t_instant * 1000:.0f} ms → **{t_instant * 1000 / args.cases:.1f} ms per case** "
        f"({t_instant * 1000 / arms:.1f} ms per case-arm) of orchestration overhead (all runs: {', '.join(f'{x:.2f}' for x in instant)} s)",
        f"- 50 ms runner, 1 worker process: {t1:.2f} s (ideal {arms * 0.05:.2f} s; runs {', '.join(f'{x:.2f}' for x in slow1)} s)",
        f"- 50 ms runner, 2 worker processes: {t2:.2f} s (runs {', '.join(f'{x:.2f}' for x in slow2)} s)",
        f"- **speed-up 1 → 2 workers: {t1 / t2:.2f}x** (target ≥ 1.8x)",
    ]
    print("\n".join(lines))
    if args.append:
        results = ROOT / "bench" / "RESULTS.md"
        header = "" if results.exists() else "# Benchmark results\n"
        command = (
            "DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_h5 CELERY_BROKER_URL=redis://127.0.0.1:6379/5 "
            f".venv/bin/python -m bench.eval_orchestration --cases {args.cases} --repeats {args.repeats} --append"
        )
        with open(results, "a", encoding="utf-8") as handle:
            handle.write(f"{header}\n## Eval orchestration\n\n```sh\n{command}\n```\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
