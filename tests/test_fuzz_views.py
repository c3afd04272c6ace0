"""Fuzzing every view of the URLconf (Hypothesis): whatever path parameters, query parameters and
form fields a signed-in admin or reviewer sends, no view answers 500, and a refused request (any
4xx) changes no row.

The routes come from the URLconf itself, so a new view is fuzzed without touching this file. The
parameter names are the ones the code reads (`request.GET.get("…")`, `request.POST…`, form fields),
collected from the sources; values mix plausible ones (existing names and ids) with hostile ones
(NUL, lone surrogates, huge numbers, very long text, JSON fragments)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SKIPPED_PREFIXES = ("django-admin/", "static/")  # Django's own admin; static files
SKIPPED_NAMES = {"logout"}  # would sign the fuzzing client out


def _routes() -> list[tuple[str, list[tuple[str, str]]]]:
    """(route template, [(parameter, converter)]) for every view, e.g.
    ("ops/agents/{agent}/", [("agent", "str")])."""
    found: list[tuple[str, list[tuple[str, str]]]] = []

    def walk(patterns, prefix: str) -> None:
        for entry in patterns:
            route = str(entry.pattern)
            if isinstance(entry, URLResolver):
                walk(entry.url_patterns, prefix + route)
            elif isinstance(entry, URLPattern):
                full = prefix + route
                if full.startswith(SKIPPED_PREFIXES) or entry.name in SKIPPED_NAMES or full.startswith("^"):
                    continue
                params = re.findall(r"<(?:(\w+):)?(\w+)>", full)
                template = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", full)
                found.append((template, [(name, conv or "str") for conv, name in params]))

    walk(get_resolver().url_patterns, "")
    return sorted(set((t, tuple(p)) for t, p in found))  # type: ignore[arg-type]


def _parameter_names() -> list[str]:
    names: set[str] = set()
    pattern = re.compile(r"request\.(?:GET|POST)\.(?:get|getlist)\(\s*\"([A-Za-z_0-9]+)\"")
    field = re.compile(r"^\s+([a-z_][a-z_0-9]*)\s*=\s*forms\.\w+Field\(", re.M)
    for source in [*ROOT.glob("reviews/**/*.py"), *ROOT.glob("library/**/*.py")]:
        text = source.read_text()
        names.update(pattern.findall(text))
        names.update(field.findall(text))
    return sorted(names)


ROUTES = _routes()
PARAMETERS = _parameter_names()

hostile_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(
        [
            "\x00",
            "a\x00b",
            "\ud800",
            "x" * 5000,
            "-1",
            "0",
            str(2**63),
            str(10**30),
            "1e400",
            "NaN",
            "[]",
            "{}",
            '{"a": [1, {"b": null}]}',
            "../../etc/passwd",
            "<script>",
            "support_agent",
            "refund.over_limit",
            "read",
            "ingest",
            "json",
            "csv",
            "7",
            "30",
            "true",
            "on",
        ]
    ),
)
path_values = {
    "int": st.one_of(st.integers(min_value=0, max_value=50), st.integers(min_value=0, max_value=10**30)),
    "str": hostile_text.filter(lambda s: s != "" and "/" not in s),
    "slug": st.one_of(
        st.sampled_from(["support_agent", "nobody"]), st.from_regex(r"[-a-zA-Z0-9_]{1,70}", fullmatch=True)
    ),
    "path": hostile_text.filter(lambda s: s != ""),
}


def _row_counts() -> tuple[int, ...]:
    tables = [
        m._meta.db_table for m in apps.get_models() if m._meta.app_label in {"library", "reviews"} and m._meta.managed
    ]
    with connection.cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(f'(SELECT count(*) FROM "{t}")' for t in tables))
        return tuple(cursor.fetchone())


@pytest.fixture
def demo(db):
    from library.demo import seed_demo

    seed_demo()
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    return {"admin": users.get(username="admin"), "reviewer": users.get(username="reviewer")}


def _url(template: str, params, values) -> str:
    from urllib.parse import quote

    return "/" + template.format(
        **{name: quote(str(values[name]), safe="", errors="surrogatepass") for name, _conv in params}
    )


@pytest.mark.parametrize("who", ["admin", "reviewer"])
def test_no_view_answers_500(demo, who):
    """One test per user (the demo data is seeded once), every route in turn."""
    client = Client(raise_request_exception=False)
    client.force_login(demo[who])
    answered: dict[str, set[int]] = {}
    real = _real_values()
    for template, params in ROUTES:
        _fuzz_route(client, template, params, answered.setdefault(template, set()), real)
    # the fuzzing reached the views: many routes answered something other than a refusal at least once
    # (a reviewer may open about half of them)
    reached = [t for t, codes in answered.items() if any(code < 400 for code in codes)]
    assert len(reached) >= len(ROUTES) // 3, answered


def _real_values() -> dict[str, st.SearchStrategy]:
    """Half of the path values name things that exist, so the fuzzing gets past the 404s."""
    from library.models import Agent, EvalRun, Procedure, ProcedureVersion, RegressionCase

    ids = sorted(
        {
            pk
            for model in (ProcedureVersion, Procedure, EvalRun, RegressionCase)
            for pk in model.objects.values_list("pk", flat=True)
        }
    )
    names = [*Agent.objects.values_list("name", flat=True), *Procedure.objects.values_list("key", flat=True)]
    return {
        conv: st.one_of(st.sampled_from(ids if conv == "int" else names), strategy)
        for conv, strategy in path_values.items()
    }


def _fuzz_route(client: Client, template: str, params, answered: set[int], real) -> None:
    @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    @given(
        values=st.fixed_dictionaries({name: real.get(conv, real["str"]) for name, conv in params}),
        query=st.dictionaries(
            st.sampled_from(PARAMETERS), hostile_text.filter(lambda s: "\ud800" not in s), max_size=4
        ),
        form=st.dictionaries(st.sampled_from(PARAMETERS), hostile_text.filter(lambda s: "\ud800" not in s), max_size=6),
        method=st.sampled_from(["get", "post"]),
        htmx=st.booleans(),
    )
    def one(values, query, form, method, htmx):
        url = _url(template, params, values)
        headers = {"HX-Request": "true"} if htmx else {}
        before = _row_counts()
        if method == "get":
            response = client.get(url, query, headers=headers)
        else:
            response = client.post(url + "?" + "&".join(f"{k}=1" for k in query), form, headers=headers)
        answered.add(response.status_code)
        assert response.status_code != 500, f"{method.upper()} {url} {query or ''} {form or ''} → 500"
        if 400 <= response.status_code < 500:
            assert _row_counts() == before, (
                f"{method.upper()} {url} {form} was refused ({response.status_code}) but changed rows"
            )

    one()
