"""Benchmark of the review pages: server time of

- the queue page with 100,000 candidates (first page, default sort, signed in as an approver, so the
  "waiting for me" count and subqueries are part of it), and filtered to "assigned to me" and
  "unassigned" (1 in 50 candidates is claimed);
- search over them: an exact tool name (`createApproval`, in 1 of 8 candidates), a procedure id,
  and words ("refunds over the limit", stemmed, in 1 of 25), each ranked, counted and highlighted;
- the candidate page with a 40-step diff (every third step edited, two inserted, one removed);

each against an empty page of the same app (base layout, same middleware, sign-in and navigation)
measured in the same run. Target: p50 under 100 ms for every page.

Server time is measured in-process with Django's test client (request → middleware → view →
template → response), which excludes the network and the browser; the timed requests render
templates as a server does, without the test client's copy of every template's context
(`server_rendering`). The data lives in a fresh
database `bench_<your database>_review_pages` that is created and dropped by the run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_h4 \
        .venv/bin/python -m bench.review_pages [--candidates 100000] [--requests 60]

Results are printed and, with --record, appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.test_settings")
# Persistent connections, as a production deployment runs them; otherwise every request of every
# page (the empty one too) pays for a new PostgreSQL connection.
os.environ.setdefault("DB_CONN_MAX_AGE", "60")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import django  # noqa: E402
from django.conf import settings  # noqa: E402

STEPS = 40
SERVER_RENDER = None  # Template._render as Django defines it (main() keeps it)


# The empty page: the base layout through the same middleware, sign-in and navigation.
def empty_page(request):
    from django.shortcuts import render

    return render(request, "base.html", {})


def _urlpatterns():
    from django.contrib.auth.decorators import login_required
    from django.urls import include, path

    return [path("bench/empty/", login_required(empty_page), name="bench_empty"), path("", include("procmem_site.urls"))]


TOPICS = [
    "a refund over the limit", "a late delivery", "a damaged parcel", "changing the delivery address",
    "cancelling a subscription", "a duplicate charge", "a missing invoice", "upgrading the plan",
    "a password reset", "a gift card balance", "an exchange for another size", "a warranty claim",
    "a loyalty discount", "a payment that failed", "splitting a shipment", "a lost parcel",
    "tax on an invoice", "a bulk order", "a price match", "closing the account", "a voucher code",
    "a return label", "an order stuck in customs", "a wrong item", "refunds above the agent's limit",
]
TOOL_SETS = [["lookupOrder", "replyTemplates"], ["lookupOrder", "checkReturnWindow", "replyTemplates"],
             ["lookupCustomer", "replyTemplates"], ["lookupOrder", "issueVoucher"], ["lookupCustomer", "updateAddress"],
             ["lookupOrder", "trackParcel"], ["lookupInvoice", "replyTemplates"], ["lookupOrder", "createApproval", "replyTemplates"]]


def _bulk_candidates(agent, intents, count: int) -> None:
    """Candidates in bulk, spread over the agent's intents and 25 topics, each with one of 8 tool
    sets (1 in 8 uses createApproval), some quarantined, with evidence; 1 in 50 claimed by the
    approver. The database trigger writes each one's search document, as for any insert."""
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from library.models import Procedure, ProcedureVersion, Source, content_hash
    from reviews.models import CandidateClaim

    approver = get_user_model().objects.get(username="approver")
    batch = 2000
    for start in range(0, count, batch):
        size = min(batch, count - start)
        procedures = Procedure.objects.bulk_create(
            [Procedure(agent=agent, intent=intents[(start + i) % len(intents)], key=f"bench.p{start + i:06d}") for i in range(size)]
        )
        versions = []
        for offset, procedure in enumerate(procedures):
            i = start + offset
            tools = TOOL_SETS[i % len(TOOL_SETS)]
            content = dict(
                applies_when=f"The customer asks about {TOPICS[i % len(TOPICS)]} (bench case {i}).",
                steps=[f"Call {tool}({{{{order_id}}}}) and note what it returned for case {i}." for tool in tools],
                required_tools=tools,
                forbidden_actions=["Do not promise a date the agent cannot keep."],
            )
            versions.append(
                ProcedureVersion(
                    procedure=procedure, number=1, source=Source.MINED, content_hash=content_hash(**content),
                    evidence={"support": (i * 37) % 500, "resolved": 500, "failed": 100, "failedWithSkeleton": i % 40},
                    quarantined=i % 97 == 0,
                    quarantine_reasons=[{"category": "skip_approval", "reason": "bench", "field": "steps[1]", "excerpt": "x"}] if i % 97 == 0 else [],
                    **content,
                )
            )
        created = ProcedureVersion.objects.bulk_create(versions)
        now = timezone.now()
        CandidateClaim.objects.bulk_create(
            [CandidateClaim(version=v, assignee=approver, assigned_by=approver, claimed_at=now, expires_at=now + timedelta(hours=24),
                            **CandidateClaim.keys_of(v))
             for n, v in enumerate(created) if (start + n) % 50 == 0]
        )


def _forty_step_candidate(agent, intent, reviewer, editor):
    """v1 with 40 steps, and v2 edited from it: every third step reworded, two inserted, one removed."""
    from library import services
    from library.models import Source

    tools = ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"]
    steps = [f"Step {i}: call {tools[i % 4]}({{{{order_id}}}}) and note the result for the customer record." for i in range(1, STEPS + 1)]
    v1 = services.procedure_propose(
        agent=agent, intent=intent, key="bench.forty_steps", applies_when="A long deterministic workflow written as a procedure.",
        steps=steps, required_tools=tools, forbidden_actions=["Do not promise a refund date before approval."],
        source=Source.MANUAL, proposed_by=reviewer,
    )
    edited = [s.replace("note the result", "write down what it returned") if i % 3 == 0 else s for i, s in enumerate(steps)]
    edited.insert(10, "Ask the customer to confirm the order number before going on.")
    edited.insert(25, "Check with checkReturnWindow({{order_id}}) once more if the customer changed the order.")
    del edited[33]
    return services.version_revise(
        version=v1, user=editor, applies_when=v1.applies_when + " Edited.", steps=edited, required_tools=tools,
        forbidden_actions=v1.forbidden_actions + ["Do not skip the identity check for repeat customers."],
    )


@contextmanager
def server_rendering():
    """Templates rendered as a server renders them. setup_test_environment() makes every template
    render send a signal on which the test client copies the template's whole context (a queue
    page renders over 1,000 templates and includes): work no server does, about 10 % of a page's
    time. The timed requests run without it; the warm-up and the context reads keep it."""
    from django.template.base import Template

    instrumented, Template._render = Template._render, SERVER_RENDER
    try:
        yield
    finally:
        Template._render = instrumented


def _time(client, url: str, requests: int) -> tuple[list[float], int, int]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(5):  # warm: templates, the embedding model, connection
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        client.get(url)
    query_count = len(queries)  # now: the next request resets the connection's query log
    samples = []
    with server_rendering():
        for _ in range(requests):
            start = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
    return samples, query_count, len(response.content)


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--record", action="store_true", help="append the results to bench/RESULTS.md")
    parser.add_argument(
        "--keep", action="store_true",
        help="keep the bench database after the run and reuse it (migrated) on the next, skipping the seeding when it holds the candidates",
    )
    args = parser.parse_args()

    settings.ROOT_URLCONF = __name__
    db = settings.DATABASES["default"]
    base_name = Path(db["NAME"]).stem if db["ENGINE"].endswith("sqlite3") else db["NAME"]
    db["TEST"] = {"NAME": f"bench_{base_name}_review_pages"}
    django.setup()
    global urlpatterns
    urlpatterns = _urlpatterns()

    from django.db import connection
    from django.test import Client
    from django.template.base import Template
    from django.test.utils import setup_test_environment, teardown_test_environment

    global SERVER_RENDER
    SERVER_RENDER = Template._render  # before setup_test_environment() instruments it
    setup_test_environment()
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=args.keep)
    try:
        from django.urls import reverse

        from library.demo import seed_demo
        from library.models import Agent, ProcedureVersion, Status

        from django.contrib.auth import get_user_model

        started = time.perf_counter()
        users = get_user_model().objects
        forty = ProcedureVersion.objects.filter(procedure__key="bench.forty_steps").order_by("-number").first() if args.keep else None
        seeded = args.keep and forty is not None and ProcedureVersion.objects.filter(procedure__key__startswith="bench.p").count() == args.candidates
        if not seeded:
            if args.keep:  # a kept database of another size: start afresh
                connection.creation.destroy_test_db(db["NAME"], verbosity=0, keepdb=False)
                connection.creation.create_test_db(verbosity=0, autoclobber=True)
            seed_demo()
            agent = Agent.objects.get(name="support_agent")
            intents = list(agent.intents.all())
            _bulk_candidates(agent, intents, args.candidates)
            forty = _forty_step_candidate(agent, intents[0], users.get(username="reviewer"), users.get(username="admin"))
        candidates = ProcedureVersion.objects.filter(status=Status.CANDIDATE).count()
        if connection.vendor == "postgresql":
            # fresh statistics and visibility map, as autovacuum keeps them on a database that has
            # been running (without the map, index-only scans visit the table anyway)
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
        setup_s = time.perf_counter() - started

        client = Client()
        client.force_login(users.get(username="approver"))
        queue, search = reverse("reviews:queue"), reverse("reviews:search")
        pages = {
            "empty page (base layout)": "/bench/empty/",
            f"queue, {candidates:,} candidates": queue,
            "queue, assigned to me": queue + "?assigned=me",
            "queue, unassigned": queue + "?assigned=none",
            "search `createApproval` (candidates)": search + "?q=createApproval&status=CANDIDATE",
            "search `bench.p004242` (an id)": search + "?q=bench.p004242",
            "search `refunds over the limit`": search + "?q=refunds+over+the+limit",
            "search `createApproval` + unassigned": search + "?q=createApproval&status=CANDIDATE&assigned=none",
            f"candidate page, {STEPS}-step diff": reverse("reviews:version", kwargs={"pk": forty.pk}),
        }
        results = {}
        matches = {}
        for label, url in pages.items():
            results[label] = _time(client, url, args.requests)
            if url.startswith(search):
                matches[label] = client.get(url).context["page"].paginator.count
        diff_rows = len([f for f in client.get(pages[f"candidate page, {STEPS}-step diff"]).context["fields"] if f.name == "steps"][0].rows)
    finally:
        connection.creation.destroy_test_db(db["NAME"], verbosity=0, keepdb=args.keep)
        teardown_test_environment()

    engine = "PostgreSQL" if connection.vendor == "postgresql" else "SQLite"
    lines = [
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC · {engine} · Python {platform.python_version()} · "
        f"{args.requests} requests per page after 5 warm-up requests · setup {setup_s:.1f} s · "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end · "
        f"steps rows in the 40-step diff: {diff_rows} · search matches: "
        + ", ".join(f"{label.split('`')[1]}{' + unassigned' if 'unassigned' in label else ''} {n:,}" for label, n in matches.items()),
        "",
        "| page | p50 ms | p95 ms | p50 minus empty page | queries | HTML KB |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    empty_p50 = statistics.median(results["empty page (base layout)"][0])
    verdicts = []
    for label, (samples, queries, size) in results.items():
        p50 = statistics.median(samples)
        lines.append(f"| {label} | {p50:.1f} | {_pct(samples, 0.95):.1f} | {p50 - empty_p50:+.1f} | {queries} | {size / 1024:.0f} |")
        if label != "empty page (base layout)":
            verdicts.append(f"{label}: p50 {p50:.1f} ms {'<' if p50 < 100 else '≥'} 100 ms target")
    lines += ["", "Target p50 < 100 ms: " + "; ".join(verdicts) + "."]
    report = "\n".join(lines)
    print(report)
    if args.record:
        command = "DATABASE_URL=" + os.environ.get("DATABASE_URL", "(unset: SQLite)") + " .venv/bin/python -m bench.review_pages " + " ".join(sys.argv[1:])
        path = ROOT / "bench" / "RESULTS.md"
        existing = path.read_text() if path.exists() else "# Benchmark results\n"
        if "## Review pages" not in existing:
            existing = existing.rstrip("\n") + "\n\n## Review pages\n"
        section_start = existing.index("## Review pages")
        next_section = existing.find("\n## ", section_start + 1)
        entry = f"\n`{command}`\n\n{report}\n"
        if next_section == -1:
            updated = existing.rstrip("\n") + "\n" + entry
        else:
            updated = existing[:next_section].rstrip("\n") + "\n" + entry + existing[next_section:]
        path.write_text(updated)
        print(f"\nappended to {path.relative_to(ROOT)}")
    return 0


urlpatterns: list = []

if __name__ == "__main__":
    sys.exit(main())
