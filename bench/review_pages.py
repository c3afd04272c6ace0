"""Benchmark of the review pages: server time of

- the queue page (first page, default sort, signed in as an approver, so the "waiting for me" count
  and subqueries are part of it), and filtered to "assigned to me" and "unassigned" (1 in 50
  candidates is claimed);
- search over the candidates: an exact tool name (`createApproval`, in 1 of 8 candidates), a
  procedure id, and words ("refunds over the limit", stemmed, in 1 of 25), each ranked, counted and
  highlighted;
- the candidate page with a 40-step diff (every third step edited, two inserted, one removed);

at two sizes of the queue in the same run (by default 10,000 and 100,000 bulk candidates plus the
demo's 4, one database each), against an empty page of the same app (base layout, same
middleware, sign-in and navigation) in the same database. The timed requests alternate between
the sizes in rounds, so both see the same machine. Targets: a page of the larger queue costs
≤ 1.3× the same page of the smaller one (a page shows 50 rows whatever the queue's size) and the
queue ≤ 4× the empty page; p50 under 100 ms for every page.

Server time is measured in-process with Django's test client (request → middleware → view →
template → response), which excludes the network and the browser; the timed requests render
templates as a server does, without the test client's copy of every template's context
(`server_rendering`). Each size's data lives in a fresh database `bench_<your database>_review_pages_<n>`
that is created and dropped by the run (kept and reused with --keep); the process's default
connection is switched between them.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_h4 \
        .venv/bin/python -m bench.review_pages [--candidates 10000,100000] [--requests 60] [--rounds 6] [--keep]

Results are printed and, with --record, appended to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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

    return [
        path("bench/empty/", login_required(empty_page), name="bench_empty"),
        path("", include("procmem_site.urls")),
    ]


TOPICS = [
    "a refund over the limit",
    "a late delivery",
    "a damaged parcel",
    "changing the delivery address",
    "cancelling a subscription",
    "a duplicate charge",
    "a missing invoice",
    "upgrading the plan",
    "a password reset",
    "a gift card balance",
    "an exchange for another size",
    "a warranty claim",
    "a loyalty discount",
    "a payment that failed",
    "splitting a shipment",
    "a lost parcel",
    "tax on an invoice",
    "a bulk order",
    "a price match",
    "closing the account",
    "a voucher code",
    "a return label",
    "an order stuck in customs",
    "a wrong item",
    "refunds above the agent's limit",
]
TOOL_SETS = [
    ["lookupOrder", "replyTemplates"],
    ["lookupOrder", "checkReturnWindow", "replyTemplates"],
    ["lookupCustomer", "replyTemplates"],
    ["lookupOrder", "issueVoucher"],
    ["lookupCustomer", "updateAddress"],
    ["lookupOrder", "trackParcel"],
    ["lookupInvoice", "replyTemplates"],
    ["lookupOrder", "createApproval", "replyTemplates"],
]


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
            [
                Procedure(agent=agent, intent=intents[(start + i) % len(intents)], key=f"bench.p{start + i:06d}")
                for i in range(size)
            ]
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
                    procedure=procedure,
                    number=1,
                    source=Source.MINED,
                    content_hash=content_hash(**content),
                    evidence={"support": (i * 37) % 500, "resolved": 500, "failed": 100, "failedWithSkeleton": i % 40},
                    quarantined=i % 97 == 0,
                    quarantine_reasons=[
                        {"category": "skip_approval", "reason": "bench", "field": "steps[1]", "excerpt": "x"}
                    ]
                    if i % 97 == 0
                    else [],
                    **content,
                )
            )
        created = ProcedureVersion.objects.bulk_create(versions)
        now = timezone.now()
        CandidateClaim.objects.bulk_create(
            [
                CandidateClaim(
                    version=v,
                    assignee=approver,
                    assigned_by=approver,
                    claimed_at=now,
                    expires_at=now + timedelta(hours=24),
                    **CandidateClaim.keys_of(v),
                )
                for n, v in enumerate(created)
                if (start + n) % 50 == 0
            ]
        )


def _forty_step_candidate(agent, intent, reviewer, editor):
    """v1 with 40 steps, and v2 edited from it: every third step reworded, two inserted, one removed."""
    from library import services
    from library.models import Source

    tools = ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"]
    steps = [
        f"Step {i}: call {tools[i % 4]}({{{{order_id}}}}) and note the result for the customer record."
        for i in range(1, STEPS + 1)
    ]
    v1 = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="bench.forty_steps",
        applies_when="A long deterministic workflow written as a procedure.",
        steps=steps,
        required_tools=tools,
        forbidden_actions=["Do not promise a refund date before approval."],
        source=Source.MANUAL,
        proposed_by=reviewer,
    )
    edited = [
        s.replace("note the result", "write down what it returned") if i % 3 == 0 else s for i, s in enumerate(steps)
    ]
    edited.insert(10, "Ask the customer to confirm the order number before going on.")
    edited.insert(25, "Check with checkReturnWindow({{order_id}}) once more if the customer changed the order.")
    del edited[33]
    return services.version_revise(
        version=v1,
        user=editor,
        applies_when=v1.applies_when + " Edited.",
        steps=edited,
        required_tools=tools,
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


def _warm(client, url: str) -> tuple[int, int]:
    """Five warm-up requests (templates, the embedding model, the connection); then the query count
    of one more and its size."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for _ in range(5):
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    return len(queries), len(response.content)


def _timed(client, url: str, requests: int) -> list[float]:
    samples = []
    with server_rendering():
        for _ in range(requests):
            start = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200
    return samples


def _profile(size: Size, prefix: str, requests: int = 20) -> None:
    import cProfile
    import pstats

    label = next(label for label in size.pages if label.startswith(prefix))
    _use(size)
    profiler = cProfile.Profile()
    with server_rendering():
        profiler.enable()
        for _ in range(requests):
            size.client.get(size.pages[label])
        profiler.disable()
    print(f"\nprofile of {requests} requests of {label!r} at {size.count:,} candidates", file=sys.stderr)
    stats = pstats.Stats(profiler, stream=sys.stderr)
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumulative").print_stats(60)


def _pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


@dataclass
class Size:
    """One bench database: `count` bulk candidates plus the demo's, its own connection, a client
    signed in there, and the pages to time."""

    count: int
    wrapper: Any = None
    client: Any = None
    pages: dict[str, str] = field(default_factory=dict)
    candidates: int = 0
    setup_s: float = 0.0
    diff_rows: int = 0
    matches: dict[str, int] = field(default_factory=dict)
    samples: dict[str, list[float]] = field(default_factory=dict)
    queries: dict[str, int] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)


def _open(size: Size, base: dict, keep: bool) -> None:
    """Creates (or, with --keep, reuses) the size's database on its own connection and seeds it."""
    from django.db import connections
    from django.db.utils import load_backend

    settings_dict = copy.deepcopy(base)
    settings_dict["TEST"]["NAME"] = f"{base['TEST']['NAME']}_{size.count}"
    size.wrapper = load_backend(settings_dict["ENGINE"]).DatabaseWrapper(settings_dict, "default")
    connections["default"] = size.wrapper  # every query of the ORM, the views and the client from here on
    size.wrapper.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=keep)
    started = time.perf_counter()
    _seed(size.count, keep)
    size.setup_s = time.perf_counter() - started
    print(f"{size.count:,} candidates ready in {size.setup_s:.1f} s", file=sys.stderr, flush=True)


def _seed(count: int, keep: bool) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from library.demo import seed_demo
    from library.models import Agent, ProcedureVersion

    users = get_user_model().objects
    forty = (
        ProcedureVersion.objects.filter(procedure__key="bench.forty_steps").order_by("-number").first()
        if keep
        else None
    )
    if (
        keep
        and forty is not None
        and ProcedureVersion.objects.filter(procedure__key__startswith="bench.p").count() == count
    ):
        seeded = True
    else:
        seeded = False
    if not seeded:
        if keep:  # a kept database of another size: start afresh
            name = connection.settings_dict["NAME"]
            connection.creation.destroy_test_db(name, verbosity=0, keepdb=False)
            connection.settings_dict["NAME"] = name
            connection.creation.create_test_db(verbosity=0, autoclobber=True)
        seed_demo()
        agent = Agent.objects.get(name="support_agent")
        intents = list(agent.intents.all())
        _bulk_candidates(agent, intents, count)
        _forty_step_candidate(agent, intents[0], users.get(username="reviewer"), users.get(username="admin"))
    if connection.vendor == "postgresql":
        # fresh statistics and visibility map, as autovacuum keeps them on a database that has
        # been running (without the map, index-only scans visit the table anyway)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")


def _use(size: Size) -> None:
    from django.db import connections

    connections["default"] = size.wrapper


def _prepare_pages(size: Size) -> None:
    from django.contrib.auth import get_user_model
    from django.test import Client
    from django.urls import reverse

    from library.models import ProcedureVersion, Status

    _use(size)
    size.candidates = ProcedureVersion.objects.filter(status=Status.CANDIDATE).count()
    forty = ProcedureVersion.objects.filter(procedure__key="bench.forty_steps").order_by("-number").first()
    size.client = Client()
    size.client.force_login(get_user_model().objects.get(username="approver"))
    queue, search = reverse("reviews:queue"), reverse("reviews:search")
    size.pages = {
        "empty page (base layout)": "/bench/empty/",
        "queue": queue,
        "queue, assigned to me": queue + "?assigned=me",
        "queue, unassigned": queue + "?assigned=none",
        "search `createApproval` (candidates)": search + "?q=createApproval&status=CANDIDATE",
        "search `bench.p004242` (an id)": search + "?q=bench.p004242",
        "search `refunds over the limit`": search + "?q=refunds+over+the+limit",
        "search `createApproval` + unassigned": search + "?q=createApproval&status=CANDIDATE&assigned=none",
        f"candidate page, {STEPS}-step diff": reverse("reviews:version", kwargs={"pk": forty.pk}),
    }
    for label, url in size.pages.items():
        size.queries[label], size.sizes[label] = _warm(size.client, url)
        size.samples[label] = []
        if url.startswith(search):
            size.matches[label] = size.client.get(url).context["page"].paginator.count
    diff = size.client.get(size.pages[f"candidate page, {STEPS}-step diff"]).context["fields"]
    size.diff_rows = len([f for f in diff if f.name == "steps"][0].rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--candidates",
        default="10000,100000",
        help="comma-separated bulk candidate counts, one bench database each (the demo adds its own 4)",
    )
    parser.add_argument("--requests", type=int, default=60, help="timed requests per page and size")
    parser.add_argument(
        "--rounds", type=int, default=6, help="the timed requests alternate between the sizes in this many rounds"
    )
    parser.add_argument("--record", action="store_true", help="append the results to bench/RESULTS.md")
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the bench databases after the run and reuse them (migrated) on the next, skipping the seeding when they hold the candidates",
    )
    parser.add_argument(
        "--profile",
        metavar="PAGE",
        help="after the timing, profile 20 requests of the page whose label starts with PAGE (e.g. queue) at the largest size (cProfile, to stderr)",
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.candidates.split(",") if n.strip()]

    settings.ROOT_URLCONF = __name__
    db = settings.DATABASES["default"]
    base_name = Path(db["NAME"]).stem if db["ENGINE"].endswith("sqlite3") else db["NAME"]
    django.setup()
    from django.db import connections

    base = copy.deepcopy(connections["default"].settings_dict)  # completed with Django's defaults
    base["TEST"]["NAME"] = f"bench_{base_name}_review_pages"
    global urlpatterns
    urlpatterns = _urlpatterns()

    from django.template.base import Template
    from django.test.utils import setup_test_environment, teardown_test_environment

    global SERVER_RENDER
    SERVER_RENDER = Template._render  # before setup_test_environment() instruments it
    setup_test_environment()
    sizes = [Size(count) for count in counts]
    try:
        for size in sizes:
            _open(size, base, args.keep)
        for size in sizes:
            _prepare_pages(size)
        print("pages warm; timing", file=sys.stderr, flush=True)
        per_round = max(1, args.requests // args.rounds)
        for _ in range(args.rounds):  # alternating, so that every size sees the same machine
            for size in sizes:
                _use(size)
                for label, url in size.pages.items():
                    size.samples[label] += _timed(size.client, url, per_round)
        if args.profile:
            _profile(sizes[-1], args.profile)
    finally:
        for size in sizes:
            if size.wrapper is not None:
                _use(size)
                size.wrapper.creation.destroy_test_db(size.wrapper.settings_dict["NAME"], verbosity=0, keepdb=args.keep)
        teardown_test_environment()

    report = _report(sizes, args, per_round)
    print(report)
    if args.record:
        _record(report)
    return 0


def _report(sizes: list[Size], args, per_round: int) -> str:
    engine = "PostgreSQL" if sizes[0].wrapper.vendor == "postgresql" else "SQLite"
    p50 = {(size.count, label): statistics.median(samples) for size in sizes for label, samples in size.samples.items()}
    empty = "empty page (base layout)"
    lines = [
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {engine} · Python {platform.python_version()} · "
        f"{len(next(iter(sizes[0].samples.values())))} requests per page and size after 5 warm-up requests, alternating between "
        f"the sizes in {args.rounds} rounds of {per_round} · setup "
        + ", ".join(f"{s.setup_s:.1f} s" for s in sizes)
        + f" · {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end · steps rows in the 40-step diff: "
        + f"{sizes[0].diff_rows} · search matches at {sizes[-1].candidates:,}: "
        + ", ".join(
            f"{label.split('`')[1]}{' + unassigned' if 'unassigned' in label else ''} {n:,}"
            for label, n in sizes[-1].matches.items()
        ),
        "",
        "| page | "
        + " | ".join(f"p50 ms at {s.candidates:,} | p95 ms | × empty" for s in sizes)
        + " | queries | HTML KB |",
        "| --- | " + " | ".join("---: | ---: | ---:" for _ in sizes) + " | ---: | ---: |",
    ]
    for label in sizes[0].samples:
        cells = []
        for s in sizes:
            cells.append(
                f"{p50[(s.count, label)]:.1f} | {_pct(s.samples[label], 0.95):.1f} | {p50[(s.count, label)] / p50[(s.count, empty)]:.2f}"
            )
        queries = "/".join(str(s.queries[label]) for s in sizes)
        lines.append(f"| {label} | " + " | ".join(cells) + f" | {queries} | {sizes[-1].sizes[label] / 1024:.0f} |")
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        verdicts = []
        for label in ("queue", "queue, assigned to me", "queue, unassigned"):
            growth = p50[(large.count, label)] / p50[(small.count, label)]
            to_empty = p50[(large.count, label)] / p50[(large.count, empty)]
            verdicts.append(
                f"{label}: {growth:.2f}× at {large.candidates:,} vs {small.candidates:,} (target ≤ 1.3×: {'met' if growth <= 1.3 else 'NOT met'}),"
                f" {to_empty:.2f}× the empty page (target ≤ 4×: {'met' if to_empty <= 4 else 'NOT met'})"
            )
        lines += ["", "; ".join(verdicts) + "."]
    slow = [
        f"{label} {p50[(s.count, label)]:.0f} ms at {s.candidates:,}"
        for s in sizes
        for label in s.samples
        if p50[(s.count, label)] >= 100
    ]
    lines += [
        "",
        "Target p50 < 100 ms: " + ("met by every page." if not slow else "not met by " + "; ".join(slow) + "."),
    ]
    return "\n".join(lines)


def _record(report: str) -> None:
    command = (
        "DATABASE_URL="
        + os.environ.get("DATABASE_URL", "(unset: SQLite)")
        + " .venv/bin/python -m bench.review_pages "
        + " ".join(sys.argv[1:])
    )
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


urlpatterns: list = []

if __name__ == "__main__":
    sys.exit(main())
