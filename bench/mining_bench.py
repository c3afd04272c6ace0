"""Benchmark: mining 100,000 and 1,000,000 stored sessions in PostgreSQL (docs/benchmarks.md).

    .venv/bin/python bench/mining_bench.py [--db procmem_bench_mining] [--sizes 100000,1000000] [--repeat 3] [--trials 4]

Creates (or reuses) a dedicated database, migrates it, bulk-loads the sessions with one
INSERT … SELECT over generate_series per agent (20 intents, ~30 skeleton variants each, ~70 %
resolved, ~25 % failed — failed tasks' sessions skip createApproval —, 5 % without outcome, 3 %
without intent; every task tried 4 times, its
trials spread over time and over skeleton variants, so that support counts distinct tasks and the
newest quarter of each intent is held back for the backtest), then for every size measures, each
phase in a fresh process so that peak memory is the phase's own:

- read:  a plain read of the same rows and columns the miner reads — every session of the agent with
         the columns its result depends on (intent, task key, resolved, escalated, skeleton, model, and
         end time, receipt time and id, which decide whether it is held back) streamed into Python
         through a server-side cursor;
- read4: the narrower read earlier runs compared against — (intent, resolved, escalated, skeleton)
         only — reported alongside for continuity;
- mine:  mining_run_execute for the agent (distinct-task aggregation, the statistics of every group
         and feature, the backtest of every candidate, the run report), inside a transaction that
         is rolled back afterwards so that every repetition mines the same library state.

Prints a JSON line per measurement and a Markdown table (time = median of --repeat timed runs;
peak = max RSS of the process, and tracemalloc's peak of Python allocations during the phase from
one more run of each phase with tracemalloc on — tracing every allocation slows Python code down
several times, and the two phases allocate very differently, so timed runs do not trace).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench import common  # noqa: E402

INTENTS = 20
VARIANTS = 30
TOOLS = [
    "lookupOrder",
    "checkReturnWindow",
    "createApproval",
    "replyTemplates",
    "verifyIdentity",
    "searchCatalog",
    "updateAddress",
    "think",
]


def setup_django(db: str) -> None:
    os.environ["DATABASE_URL"] = f"postgres://postgres@127.0.0.1:5432/{db}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("CELERY_BROKER_URL", "memory://")
    import django

    django.setup()


def variant_skeletons() -> list[list[str]]:
    """Deterministic skeleton variants: a core procedure with optional extra steps and repeats."""
    import random

    rng = random.Random(7)
    variants = []
    for v in range(VARIANTS):
        core = ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"]
        skeleton = list(core)
        if v % 3 == 1:
            skeleton.insert(0, "verifyIdentity")
        if v % 5 == 2:
            skeleton.insert(1, "think")
        if v % 4 == 3:
            skeleton.insert(2, rng.choice(["searchCatalog", "updateAddress"]))
        if v % 7 == 4:
            skeleton.remove("createApproval")
        if v % 6 == 5:
            skeleton.insert(1, "lookupOrder")  # a consecutive repeat, collapsed by the miner
        variants.append(skeleton)
    return variants


def load(size: int, trials: int = 4) -> str:
    """Loads `size` sessions for agent bench_<size> (bench_<size>_x<trials> when a task has other than
    4 sessions) unless already there. Returns the agent name. With 4 trials a task's sessions share
    its outcome (the classic shape); with any other number the outcome and the variant are drawn
    per session, so that followers and the others meet within tasks (the shape of MINT's repeated
    tasks), and the sessions come from 4 model families."""
    from django.db import connection

    from library.models import Agent, AgentSession, Intent

    name = f"bench_{size}" if trials == 4 else f"bench_{size}_x{trials}"
    # what decides the outcome and the variant: the task (classic), or the session itself
    key = "(g %% %(tasks)s)" if trials == 4 else "(g / 7)"  # g / 7: not aligned with the task cycle
    agent, _ = Agent.objects.get_or_create(name=name, defaults={"tools": TOOLS, "support_threshold": 20})
    if (
        AgentSession.objects.filter(agent=agent).count() == size
        and not AgentSession.objects.filter(agent=agent, task_key="").exists()
    ):
        return name
    AgentSession.objects.filter(agent=agent).delete()
    intents = [Intent.objects.get_or_create(agent=agent, name=f"intent_{i:02d}")[0].pk for i in range(INTENTS)]
    variants = variant_skeletons()
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_variant")
        cursor.execute(
            "CREATE TEMP TABLE bench_variant (v int PRIMARY KEY, skeleton jsonb, excerpt jsonb, calls jsonb)"
        )
        for index, skeleton in enumerate(variants):
            excerpt = [{"role": "user", "text": "Hi, I'm {{person}}, refund {{order_id}} please"}] + [
                {"role": "tool_call", "tool": tool, "args": {"order_id": "{{order_id}}"}, "ok": True}
                for tool in skeleton
            ]
            calls = [{"name": tool, "args": {"order_id": "ORD-12345"}, "ok": True} for tool in skeleton]
            cursor.execute(
                "INSERT INTO bench_variant VALUES (%s, %s, %s, %s)",
                [index, json.dumps(skeleton), json.dumps(excerpt), json.dumps(calls)],
            )
        cursor.execute(
            """
            INSERT INTO library_agentsession
                (agent_id, session_id, task_key, intent_id, task, resolved, escalated, rating, skeleton, tool_calls,
                 redacted_excerpt, injected, instruction_chars, model, ended_at, received_at, raw_purged, source_format, channel)
            SELECT %(agent)s, 'b-' || g, 'bt-' || (g %% %(tasks)s),
                   CASE WHEN g %% 33 = 0 THEN NULL ELSE (%(intents)s::bigint[])[1 + ((g %% %(tasks)s) * 7) %% %(n_intents)s] END,
                   'I want a refund for ORD-12345',
                   CASE WHEN g %% 20 = 0 THEN NULL ELSE ((KEY / 20) %% 4 <> 1) END,
                   (g %% 50 = 3),
                   NULL,
                   v.skeleton, v.calls, v.excerpt, '[]'::jsonb, 1800,
                   (ARRAY['gpt-4-0613', 'claude-2', 'llama-2-70b-chat', 'mistral-7b-instruct'])[1 + g %% 4],
                   now() - (g || ' seconds')::interval, now(), false, 'procmem', ''
            FROM generate_series(1, %(size)s) AS g
            JOIN bench_variant v ON v.v = CASE WHEN (KEY / 20) %% 4 = 1 THEN 4 + 7 * ((g * 13) %% 4) ELSE ((g * 31) %% 97) %% %(n_variants)s END
            """.replace("KEY", key),
            {
                "agent": agent.pk,
                "intents": intents,
                "n_intents": INTENTS,
                "size": size,
                "n_variants": len(variants),
                "tasks": size // trials,
            },
        )
    print(json.dumps({"loaded": size, "agent": name, "seconds": round(time.perf_counter() - started, 1)}), flush=True)
    return name


READ_COLUMNS = {
    "read": ("intent_id", "task_key", "resolved", "escalated", "skeleton", "model", "ended_at", "received_at", "id"),
    "read4": ("intent_id", "resolved", "escalated", "skeleton"),
}


def phase_read(agent_name: str, columns: tuple[str, ...]) -> dict:
    from library.models import AgentSession

    rows = 0
    started = time.perf_counter()
    for _row in (
        AgentSession.objects.filter(agent__name=agent_name).order_by().values_list(*columns).iterator(chunk_size=5000)
    ):
        rows += 1
    return {"rows": rows, "seconds": time.perf_counter() - started}


class Rollback(Exception):
    pass


def phase_mine(agent_name: str) -> dict:
    from django.db import transaction

    from library.mining.mining_runs import mining_run_execute
    from library.models import Agent

    agent = Agent.objects.get(name=agent_name)
    result = {}
    started = time.perf_counter()
    try:
        with transaction.atomic():
            run = mining_run_execute(agent=agent)
            result = {
                "sessions": run.counts["sessions"],
                "candidates": run.counts["candidates"],
                "groups": run.counts["groups"],
            }
            raise Rollback
    except Rollback:
        pass
    result["seconds"] = time.perf_counter() - started
    return result


def child(args) -> None:
    setup_django(args.db)
    if args.trace:
        tracemalloc.start()
    result = phase_mine(args.agent) if args.phase == "mine" else phase_read(args.agent, READ_COLUMNS[args.phase])
    if args.trace:
        _current, peak = tracemalloc.get_traced_memory()
        result["tracemalloc_peak_mb"] = round(peak / 2**20, 2)
    result.update(
        phase=args.phase,
        agent=args.agent,
        traced=args.trace,
        max_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    )
    print(json.dumps(result), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", default="procmem_bench_mining")
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--trials", type=int, default=4, help="sessions per task (4: the classic shape; e.g. 50: repeated tasks)"
    )
    parser.add_argument("--phase", choices=["read", "read4", "mine"], help=argparse.SUPPRESS)
    parser.add_argument("--agent", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase:
        return child(args)

    common.ensure_database(f"postgres://postgres@127.0.0.1:5432/{args.db}")
    setup_django(args.db)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    sizes = [int(s) for s in args.sizes.split(",")]
    agents = {size: load(size, args.trials) for size in sizes}
    # a table in use has been vacuumed by autovacuum (visibility map set, so index-only scans stay
    # in the index); a freshly bulk-loaded one has not: measure the former, for both phases
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE library_agentsession")
    table = []
    print(json.dumps({"loadavg_start": os.getloadavg()}), flush=True)
    for size in sizes:
        measurements: dict[str, list[dict]] = {"read": [], "read4": [], "mine": []}
        traced: dict[str, dict] = {}
        for trace in [False] * args.repeat + [True]:
            # interleaved, so that cache warmth is shared fairly; the traced run skips the full read,
            # whose per-row datetime conversions tracemalloc slows down tenfold (its RSS is reported)
            for phase in ("read4", "mine") if trace else ("read", "read4", "mine"):
                out = (
                    subprocess.run(
                        [sys.executable, __file__, "--db", args.db, "--phase", phase, "--agent", agents[size]]
                        + (["--trace"] if trace else []),
                        check=True,
                        capture_output=True,
                        text=True,
                    )
                    .stdout.strip()
                    .splitlines()[-1]
                )
                print(out, flush=True)
                if trace:
                    traced[phase] = json.loads(out)
                else:
                    measurements[phase].append(json.loads(out))
        read_s = statistics.median(m["seconds"] for m in measurements["read"])
        read4_s = statistics.median(m["seconds"] for m in measurements["read4"])
        mine_s = statistics.median(m["seconds"] for m in measurements["mine"])
        table.append(
            {
                "sessions": size,
                "read_s": round(read_s, 2),
                "mine_s": round(mine_s, 2),
                "ratio": round(mine_s / read_s, 2),
                "read4_s": round(read4_s, 2),
                "ratio4": round(mine_s / read4_s, 2),
                "read_rss_mb": max(m["max_rss_mb"] for m in measurements["read"]),
                "mine_rss_mb": max(m["max_rss_mb"] for m in measurements["mine"]),
                "read_py_peak_mb": traced["read4"]["tracemalloc_peak_mb"],
                "mine_py_peak_mb": traced["mine"]["tracemalloc_peak_mb"],
                "candidates": measurements["mine"][0]["candidates"],
                "trials": args.trials,
            }
        )
    print(json.dumps({"loadavg_end": os.getloadavg()}), flush=True)
    print()
    print(f"sessions per task: {args.trials}")
    print(
        "| sessions | plain read (s) | mining (s) | mining / read | 4-column read (s) | mining / 4-column read | peak RSS read (MB) | peak RSS mining (MB) | Python peak 4-column read (MB) | Python peak mining (MB) | candidates |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for row in table:
        print(
            f"| {row['sessions']:,} | {row['read_s']} | {row['mine_s']} | {row['ratio']} | {row['read4_s']} | {row['ratio4']} | {row['read_rss_mb']} | {row['mine_rss_mb']} | {row['read_py_peak_mb']} | {row['mine_py_peak_mb']} | {row['candidates']} |"
        )


if __name__ == "__main__":
    main()
