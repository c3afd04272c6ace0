"""Benchmark: the metrics pages over 1,000,000 sessions, against a plain page of the same app.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_bench7 .venv/bin/python -m bench.metrics_page

What it does, in one run:
1. (Re)creates the dedicated bench database named in DATABASE_URL (never the default one), migrates
   it and seeds the demo data plus 20 more procedures with ACTIVE versions (through the services).
2. Bulk-loads N sessions (default 1,000,000) with one INSERT … SELECT over generate_series: 90
   days, 4 intents, 80 % with a procedure injected (one in ten of those with a second one), the
   agent's model changing from demo-model-1 to demo-model-2 30 days ago; tool calls are the
   procedure's required tools, in order or (one in four) swapped, plus (one in eleven) a call to
   a tool one procedure forbids; five versions are past their review-by date.
3. Builds the metrics rollup from scratch (`metrics_refresh(full=True)`), then times an incremental
   refresh after 1,000 new sessions — the Celery beat task's regular job.
4. Times, in-process through Django's test client as a signed-in admin (middleware, views,
   templates, DEBUG off), R requests each of: the agent metrics page (30 and 90 days, with the
   quality of use, reviewers and escapes), one version's metrics page (90 days, five charts), the
   agent's metrics JSON (90 days), and the review queue (the plain page), interleaved so all pages
   see the same machine state. Reports p50, p95 and p50 as a multiple of the plain page's.
5. For comparison, times the one query a page would need without the rollup: the resolution rate
   of one version straight from the session table.
Results are printed and appended to bench/RESULTS.md under "Metrics pages" (with --no-append, only printed).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "RESULTS.md"
DEFAULT_DB_URL = "postgres://postgres@127.0.0.1:5432/procmem_bench7"


def _prepare_environment(db_url: str) -> None:
    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.test_settings")
    os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))


def _recreate_database(db_url: str) -> None:
    name = urlparse(db_url).path.lstrip("/")
    if name in {"postgres", "root", "test", "template0", "template1"} or not name.startswith("procmem_bench"):
        raise SystemExit(f"refusing to recreate {name!r}: the bench database's name must start with procmem_bench")
    from bench.common import recreate_database

    recreate_database(db_url)


def _seed(extra_procedures: int):
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from library import services
    from library.demo import seed_demo
    from library.models import EvalRun, Intent, Source
    from library.selectors import active_set_hash

    result = seed_demo()
    agent = result.agent
    agent.current_model = "demo-model-2"
    agent.tools = sorted({*agent.tools, "issueRefund"})  # a tool some bench procedures require and others forbid
    agent.save(update_fields=["current_model", "tools"])
    users = {u.username: u for u in get_user_model().objects.all()}
    intents = list(Intent.objects.filter(agent=agent).order_by("name"))
    for i in range(extra_procedures):
        intent = intents[i % len(intents)]
        version = services.procedure_propose(
            agent=agent,
            intent=intent,
            key=f"bench.procedure_{i:02d}",
            applies_when=f"Bench procedure {i} for {intent.name}.",
            steps=[
                "Look up the order with lookupOrder({{order_id}}).",
                f"Do step {i}.",
                "Refund with issueRefund({{order_id}})." if i % 5 == 1 else "Reply with replyTemplates('done').",
            ],
            # every fifth requires issueRefund, which the ones before them forbid (a conflict when served together)
            required_tools=["lookupOrder", "issueRefund"] if i % 5 == 1 else ["lookupOrder", "replyTemplates"],
            # every fifth forbids a tool outright: the tool-call accuracy counts calls to it
            forbidden_actions=["Never call issueRefund."] if i % 5 == 0 else [],
            source=Source.MANUAL,
            proposed_by=users["reviewer"],
        )
        now = timezone.now()
        EvalRun.objects.create(
            version=version,
            content_hash=version.content_hash,
            baseline_hash=active_set_hash(agent),
            state=EvalRun.State.DONE,
            verdict=EvalRun.Verdict.PASS,
            runner="bench",
            started_at=now,
            finished_at=now,
        )
        services.version_approve(version=version, user=users["admin"], comment="bench", acknowledge_conflicts=True)
    # five versions past their review-by date (the stale-use figure)
    from library.models import ProcedureVersion, Status

    stale = (
        ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE)
        .order_by("pk")
        .values_list("pk", flat=True)[:5]
    )
    ProcedureVersion.objects.filter(pk__in=list(stale)).update(review_by=timezone.localdate() - timedelta(days=45))
    return agent


def _bulk_load_sessions(agent, count: int, *, prefix: str, days: int = 90, received_now: bool = False) -> float:
    """One INSERT … SELECT over generate_series; returns seconds. Sessions are received two seconds
    after they end, or all now (`received_now`: the late arrivals the incremental refresh picks up)."""
    from django.db import connection

    from library.models import ProcedureVersion, Status

    versions = list(
        ProcedureVersion.objects.filter(procedure__agent=agent, status=Status.ACTIVE)
        .select_related("procedure")
        .order_by("procedure__key")
    )

    def calls(tools: list[str]) -> str:
        return json.dumps([{"name": t, "ok": True} for t in tools]).replace("'", "''")

    values = ", ".join(
        f"({i}, {v.procedure.intent_id}, '{v.procedure.key}', {v.number}, '{calls(v.required_tools)}'::jsonb, "
        f"'{calls(v.required_tools[::-1])}'::jsonb)"
        for i, v in enumerate(versions)
    )
    k = len(versions)
    sql = f"""
        INSERT INTO library_agentsession
            (agent_id, session_id, intent_id, task, task_key, resolved, escalated, rating, skeleton, tool_calls,
             redacted_excerpt, injected, instruction_chars, model, ended_at, received_at, raw_purged, source_format, channel)
        SELECT %s, %s || g, v.intent_id, '', 'task-' || (g %% 5000), (hashtext(g::text) %% 100 + 100) %% 100 < 70, (g %% 17 = 0), NULL,
               '[]'::jsonb,
               (CASE WHEN g %% 4 = 0 THEN v.swapped ELSE v.calls END)
                 || (CASE WHEN g %% 11 = 0 THEN '[{{"name": "issueRefund", "ok": true}}]'::jsonb ELSE '[]'::jsonb END),
               '[]'::jsonb,
               CASE WHEN g %% 5 = 0 THEN '[]'::jsonb
                    WHEN g %% 10 = 1 THEN jsonb_build_array(jsonb_build_object('id', v.key, 'version', v.number),
                                                            jsonb_build_object('id', w.key, 'version', w.number))
                    ELSE jsonb_build_array(jsonb_build_object('id', v.key, 'version', v.number)) END,
               CASE WHEN g %% 5 = 0 THEN NULL ELSE 600 + (g * 7919) %% 1400 END,
               CASE WHEN (g %% {days}) < 30 THEN 'demo-model-2' ELSE 'demo-model-1' END,
               t.ended_at, CASE WHEN %s THEN now() ELSE t.ended_at + interval '2 seconds' END, false, 'bench', ''
        FROM generate_series(1::bigint, %s) AS g
        CROSS JOIN LATERAL (SELECT now() - make_interval(days => (g %% {days})::int, secs => ((g * 13) %% 80000)::double precision) AS ended_at) AS t
        JOIN (VALUES {values}) AS v(idx, intent_id, key, number, calls, swapped) ON v.idx = g %% {k}
        JOIN (VALUES {values}) AS w(idx, intent_id, key, number, calls, swapped) ON w.idx = (g + 1) %% {k}
    """
    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(sql, [agent.pk, prefix, received_now, count])
        cursor.execute("ANALYZE library_agentsession")
    return time.perf_counter() - started


def _time_pages(client, urls: dict[str, str], repeats: int) -> dict[str, list[float]]:
    timings: dict[str, list[float]] = {name: [] for name in urls}
    for name, url in urls.items():  # warm-up: template loading, first connection, query plans
        response = client.get(url)
        assert response.status_code == 200, (name, response.status_code)
    for _ in range(repeats):
        for name, url in urls.items():
            started = time.perf_counter()
            response = client.get(url)
            timings[name].append((time.perf_counter() - started) * 1000)
            assert response.status_code == 200
    return timings


def _time_quality_section(agent, repeats: int) -> list[float]:
    """The quality-of-use section alone (its six queries, intervals, charts and partial), as the
    90-day agent page builds it."""
    from django.template.loader import render_to_string

    from reviews.metrics import reads
    from reviews.metrics.quality_report import agent_quality_report

    start, end = reads.window(90)
    versions = reads.versions_with_metrics(agent, start, end)
    timings = []
    for _ in range(repeats + 1):
        started = time.perf_counter()
        report = agent_quality_report(agent, versions, start, end)
        render_to_string("reviews/ops/_quality.html", {"quality": report, "agent": agent, "days": 90})
        timings.append((time.perf_counter() - started) * 1000)
    return timings[1:]  # the first is the warm-up


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


HEADING = "## Metrics pages"


def _append_to_section(text: str, report: str) -> str:
    """Appends the report at the end of the "## Metrics pages" section (creating it at the end of the
    file), so the other benchmarks keep their own sections."""
    if not text.strip():
        text = "# Benchmark results\n"
    if HEADING not in text:
        return text.rstrip("\n") + f"\n\n{HEADING} (bench/metrics_page.py)\n\n{report}\n"
    start = text.index(HEADING)
    following = text.find("\n## ", start + len(HEADING))
    end = len(text) if following == -1 else following + 1
    section = text[start:end].rstrip("\n") + "\n\n" + report + "\n"
    return text[:start] + section + ("\n" + text[end:] if following != -1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=1_000_000)
    parser.add_argument("--requests", type=int, default=40, help="timed requests per page")
    parser.add_argument("--procedures", type=int, default=20, help="extra ACTIVE procedures besides the demo's")
    parser.add_argument("--no-append", action="store_true", help="print only; do not append to bench/RESULTS.md")
    args = parser.parse_args()

    db_url = os.environ.get("DATABASE_URL") or DEFAULT_DB_URL
    if not db_url.startswith("postgres"):
        raise SystemExit("the benchmark needs PostgreSQL: DATABASE_URL=postgres://…/procmem_bench7")
    _prepare_environment(db_url)
    _recreate_database(db_url)

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.urls import reverse

    from library.models import AgentSession, ProcedureVersion, Status
    from reviews.metrics.rollup import metrics_refresh

    call_command("migrate", verbosity=0)
    agent = _seed(args.procedures)
    load_s = _bulk_load_sessions(agent, args.sessions, prefix="b")
    total = AgentSession.objects.filter(agent=agent).count()

    started = time.perf_counter()
    full = metrics_refresh(agent=agent, full=True)
    full_s = time.perf_counter() - started
    _bulk_load_sessions(agent, 1000, prefix="late", days=2, received_now=True)
    started = time.perf_counter()
    incremental = metrics_refresh(agent=agent)
    incremental_s = time.perf_counter() - started
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviews_versiondayrollup; ANALYZE reviews_intentdayrollup")
        cursor.execute("SELECT count(*) FROM reviews_versiondayrollup")
        version_rows = cursor.fetchone()[0]
        cursor.execute("SELECT count(*) FROM reviews_intentdayrollup")
        intent_rows = cursor.fetchone()[0]

    version = ProcedureVersion.objects.get(
        procedure__agent=agent, procedure__key="refund.over_limit", status=Status.ACTIVE
    )
    client = Client()
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.get(username="admin"))
    urls = {
        "agent metrics, 30 days": reverse("reviews:ops_metrics", args=[agent.name]) + "?days=30",
        "agent metrics, 90 days": reverse("reviews:ops_metrics", args=[agent.name]) + "?days=90",
        "version metrics, 90 days (5 charts)": reverse("reviews:ops_version_metrics", args=[version.pk]) + "?days=90",
        "agent metrics JSON, 90 days": reverse("reviews:ops_metrics_json", args=[agent.name]) + "?days=90",
        "plain page: review queue": reverse("reviews:queue"),
    }
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    timings = _time_pages(client, urls, args.requests)
    timings["of the 90-day agent page: the quality of use (figures + partial)"] = _time_quality_section(
        agent, args.requests
    )

    # Without the rollup: one version's resolution rate straight from the sessions (one of the
    # dozen figures a page shows).
    with connection.cursor() as cursor:
        started = time.perf_counter()
        cursor.execute(
            """SELECT count(*) FILTER (WHERE resolved AND NOT coalesce(escalated, false)), count(resolved)
               FROM library_agentsession WHERE agent_id = %s AND injected @> %s::jsonb""",
            [agent.pk, f'[{{"id": "refund.over_limit", "version": {version.number}}}]'],
        )
        cursor.fetchone()
        raw_ms = (time.perf_counter() - started) * 1000

    now = datetime.now(UTC)
    lines = [
        f"### Metrics pages over {total:,} sessions — {now:%Y-%m-%d %H:%M} UTC",
        "",
        f"Command: `DATABASE_URL={db_url} .venv/bin/python -m bench.metrics_page"
        + (f" --sessions {args.sessions}" if args.sessions != 1_000_000 else "")
        + (f" --requests {args.requests}" if args.requests != 40 else "")
        + "`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"PostgreSQL {connection.pg_version // 10000}.{connection.pg_version % 100}; in-process Django test client, "
        f"DEBUG off, signed in as a superuser; {args.requests} timed requests per page after one warm-up, interleaved.",
        "",
        f"Load (`uptime`) before the timed requests: {load}",
        "",
        "| page | p50 ms | p95 ms | max ms | p50 / plain page |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    baseline = statistics.median(timings["plain page: review queue"])
    for name, values in timings.items():
        lines.append(
            f"| {name} | {statistics.median(values):.1f} | {_p(values, 0.95):.1f} | {max(values):.1f} | "
            f"{statistics.median(values) / baseline:.2f}× |"
        )
    lines += [
        "",
        f"- bulk load of {args.sessions:,} sessions (INSERT … SELECT generate_series): {load_s:.1f} s",
        f"- full rollup build (`metrics_refresh(full=True)`): {full_s:.1f} s for {full.sessions_read:,} sessions, "
        f"{full.days} days → {intent_rows:,} intent-day rows, {version_rows:,} version-day rows",
        f"- incremental refresh after 1,000 new sessions (the beat task's job): {incremental_s:.2f} s, "
        f"{incremental.days} days recomputed",
        f"- without the rollup, ONE figure (one version's resolution rate, `injected @> …` over the session table): {raw_ms:.0f} ms",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if not args.no_append:
        RESULTS.write_text(
            _append_to_section(RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "", report),
            encoding="utf-8",
        )
        print(f"appended to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
