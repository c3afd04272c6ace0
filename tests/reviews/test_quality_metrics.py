"""Quality of use per version and agent (adherence, tool-call accuracy, conflict rate, stale use),
reviewer figures and the bad-write escape rate: every figure checked against values computed by
hand on a small fixture, the pages and the JSON (queries counted), and who may see them."""

from __future__ import annotations

from datetime import datetime, time, timedelta
from itertools import count
from unittest import mock

import pytest
from django.urls import reverse
from django.utils import timezone
from guardian.shortcuts import assign_perm
from scipy import stats

from library import services
from library.models import AgentSession, Intent, ProcedureVersion, Source, Status
from reviews.metrics import decisions, quality, reads, rollup
from reviews.metrics.rates import Rate, wilson_interval
from reviews.models import AgentDayQuality, VersionDayQuality
from tests.conftest import make_passing_eval

pytestmark = pytest.mark.django_db

_ids = count(1)
HOUR = timedelta(hours=1)


def _at(days_ago: int):
    return timezone.make_aware(datetime.combine(timezone.localdate() - timedelta(days=days_ago), time(12)))


def _session(agent, *refs, calls=(), days_ago=0, ended_at=None):
    return AgentSession.objects.create(
        agent=agent,
        session_id=f"q{next(_ids)}",
        injected=[{"id": k, "version": n} for k, n in refs],
        tool_calls=[{"name": c, "ok": True} for c in calls],
        ended_at=ended_at or _at(days_ago),
        resolved=True,
    )


def _propose(agent, intent, key, required, forbidden=(), proposer=None, hours_old=0):
    # the candidate is created `hours_old` hours ago (content and creation time never change after)
    with mock.patch("django.utils.timezone.now", return_value=timezone.now() - hours_old * HOUR):
        return services.procedure_propose(
            agent=agent,
            intent=intent,
            key=key,
            applies_when=f"The situation of {key}.",
            steps=[f"Call {tool}({{{{order_id}}}})." for tool in required],
            required_tools=list(required),
            forbidden_actions=list(forbidden),
            source=Source.MANUAL,
            proposed_by=proposer,
        )


def _approve(version, user):
    make_passing_eval(version)
    return services.version_approve(version=version, user=user, comment="ok", acknowledge_conflicts=True)


A, B, C = ("refund.over_limit", 1), ("order.status", 1), ("address.change", 1)


@pytest.fixture
def world(agent, intent, proposer, reviewer, admin_user):
    """Three served procedures — A forbids issueRefund outright, which B requires (a conflict);
    C conflicts with neither — and the decisions of two people, then eleven sessions."""
    agent.tools = [*agent.tools, "issueRefund"]
    agent.save(update_fields=["tools"])
    orders = agent.intents.get(name="order_status")
    address = Intent.objects.create(agent=agent, name="address_change")
    # admin approves A (6 h old), B1 (2 h), C (30 h) and later B2 (just created)
    a = _approve(
        _propose(
            agent,
            intent,
            A[0],
            ["lookupOrder", "createApproval"],
            ["Never call issueRefund.", "Do not call replyTemplates before createApproval."],
            proposer,
            6,
        ),
        admin_user,
    )
    b1 = _approve(_propose(agent, orders, B[0], ["lookupOrder", "issueRefund"], (), proposer, 2), admin_user)
    c = _approve(_propose(agent, address, C[0], ["lookupOrder", "replyTemplates"], (), proposer, 30), admin_user)
    # reviewer approves F (1 h old), rejects D (4 h) and E (8 h), and edits G (a superseding
    # rejection: not a decision)
    f = _propose(agent, address, "address.other", ["lookupOrder", "replyTemplates"], (), proposer, 1)
    assign_perm("library.approve_procedure", reviewer, f.procedure)
    f = _approve(f, reviewer)
    for key, hours in (("refund.d", 4), ("refund.e", 8)):
        services.version_reject(
            version=_propose(agent, intent, key, ["lookupOrder"], (), proposer, hours), user=reviewer, reason="no"
        )
    g = _propose(agent, intent, "refund.g", ["lookupOrder"], (), proposer, 50)
    services.version_revise(
        version=g,
        user=reviewer,
        applies_when=g.applies_when,
        steps=[*g.steps, "Reply."],
        required_tools=g.required_tools,
        forbidden_actions=g.forbidden_actions,
    )
    # A's review-by date passed two days ago; B's passed five days ago until a re-review just now
    today = timezone.localdate()
    ProcedureVersion.objects.filter(pk=a.pk).update(review_by=today - timedelta(days=2))
    ProcedureVersion.objects.filter(pk=b1.pk).update(review_by=today - timedelta(days=5))
    b1 = services.version_review_confirm(version=ProcedureVersion.objects.get(pk=b1.pk), user=admin_user)
    reviewed_at = b1.audit_events.get(action="review").at
    # escapes: C retired, F erased, B2 replaced by a rollback to B1; B1 was replaced by B2's approval (not an escape)
    b2 = services.version_revise(
        version=b1,
        user=reviewer,
        applies_when=b1.applies_when,
        steps=[*b1.steps, "Reply."],
        required_tools=b1.required_tools,
        forbidden_actions=b1.forbidden_actions,
    )
    b2 = _approve(b2, admin_user)
    services.version_retire(version=c, user=admin_user, reason="wrong")
    services.version_erase(version=f, user=admin_user, ground="poisoned", reason="bad")
    services.version_rollback(version=ProcedureVersion.objects.get(pk=b1.pk), user=admin_user, reason="v2 misbehaves")

    _session(agent, A, calls=["lookupOrder", "checkReturnWindow", "createApproval"])  # s1
    _session(agent, A, calls=["createApproval", "lookupOrder"])  # s2
    _session(agent, A, B, calls=["lookupOrder", "issueRefund", "createApproval"], days_ago=1)  # s3
    _session(agent, A, C, calls=["lookupOrder", "lookupOrder", "replyTemplates"], days_ago=2)  # s4
    _session(agent, B, calls=["issueRefund", "lookupOrder"], days_ago=3)  # s5
    _session(agent, B, calls=["lookupOrder", "issueRefund"], days_ago=6)  # s6
    _session(agent, B, calls=[], ended_at=reviewed_at + timedelta(seconds=1))  # s7
    _session(
        agent,
        A,
        B,
        C,
        calls=["issueRefund", "issueRefund", "lookupOrder", "createApproval", "replyTemplates"],
        days_ago=1,
    )  # s8
    _session(agent, calls=["issueRefund"])  # s9: no procedure
    _session(agent, ("refund.over_limit", 99), calls=["issueRefund"])  # s10: unknown version
    _session(agent, A, A, calls=["lookupOrder", "createApproval"], days_ago=1)  # s11: listed twice
    rollup.metrics_refresh(agent=agent)
    return {
        "a": ProcedureVersion.objects.get(pk=a.pk),
        "b": ProcedureVersion.objects.get(pk=b1.pk),
        "c": c,
        "f": f,
        "b2": b2,
    }


def test_version_figures_match_hand_computed_values(world):
    start, end = reads.window(30)
    figures = quality.version_quality([world["a"].pk, world["b"].pk, world["c"].pk], start, end)
    a, b, c = figures[world["a"].pk], figures[world["b"].pk], figures[world["c"].pk]
    # A in s1 s2 s3 s4 s8 s11; followed (lookupOrder … createApproval) in s1 s3 s8 s11
    assert (a.sessions, a.adherence) == (6, Rate(4, 6))
    # two required calls in each of the six; issueRefund once in s3, twice in s8
    assert (a.accuracy, a.forbidden_calls) == (Rate(12, 15), 3)
    assert a.conflict == Rate(2, 6)  # s3 and s8 also gave B
    assert a.stale == Rate(5, 6)  # review-by two days ago: s4 (that day) is not past it
    # B in s3 s5 s6 s7 s8; followed in s3 and s6; 2+2+2+0+3 required calls, it forbids nothing
    assert (b.sessions, b.adherence, b.accuracy, b.forbidden_calls) == (5, Rate(2, 5), Rate(9, 9), 0)
    assert b.conflict == Rate(2, 5)
    # the date in force: five days ago before the re-review (s3 s5 s8 past it, s6 not), 180 days after (s7)
    assert b.stale == Rate(3, 5)
    # C in s4 and s8, followed in both, 3 + 2 required calls, no conflict, not stale
    assert (c.sessions, c.adherence, c.accuracy, c.conflict, c.stale) == (
        2,
        Rate(2, 2),
        Rate(5, 5),
        Rate(0, 2),
        Rate(0, 2),
    )
    days = quality.version_quality_days(world["a"].pk, start, end)
    today = timezone.localdate()
    assert (days[today].sessions, days[today].adherence, days[today].stale) == (2, Rate(1, 2), Rate(2, 2))  # s1 s2


def test_agent_figures_match_hand_computed_values(agent, world):
    start, end = reads.window(30)
    result = quality.agent_quality(agent, start, end)
    total = result.total
    # served: s1–s8 and s11 (s9 got nothing, s10 an unknown version); s3 s4 s8 got two or more
    assert (total.sessions, total.multi) == (9, 3)
    assert total.adherence == Rate(4 + 2 + 2, 6 + 5 + 2)
    assert total.accuracy == Rate(12 + 9 + 5, 12 + 9 + 5 + 3)
    assert total.conflict == Rate(2, 9)  # s3, s8
    assert total.stale == Rate(6, 9)  # s1 s2 s3 s5 s8 s11
    yesterday = timezone.localdate() - timedelta(days=1)
    assert (result.days[yesterday].sessions, result.days[yesterday].conflict) == (3, Rate(2, 3))  # s3 s8 s11


def test_wilson_intervals_by_hand_and_as_binomtest_gives_them():
    # 4 of 6: centre (p + z²/2n)/(1 + z²/n) = 0.98680/1.64024 = 0.60162, half-width
    # z/(1 + z²/n)·sqrt(p(1−p)/n + z²/4n²) = 1.19492·0.25242 = 0.30163 → 0.2999 … 0.9032
    low, high = Rate(4, 6).interval
    assert (low, high) == (pytest.approx(0.2999, abs=2e-4), pytest.approx(0.9032, abs=2e-4))
    # 0 of 2: low 0, high z²/(n + z²) = 3.8415/5.8415 = 0.6576
    assert wilson_interval(0, 2) == (pytest.approx(0.0, abs=1e-12), pytest.approx(0.6576, abs=2e-4))
    assert Rate(0, 0).interval is None and Rate(0, 0).interval_percent == ""
    for hits, total in ((0, 1), (1, 3), (7, 7), (12, 15), (500, 1000), (3, 100_000)):
        ci = stats.binomtest(hits, total).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson_interval(hits, total) == (pytest.approx(ci.low, abs=1e-12), pytest.approx(ci.high, abs=1e-12))


def test_reviewer_figures_match_hand_computed_values(agent, world):
    start, end = reads.window(30)
    figures = {f.user: f for f in decisions.reviewer_figures(agent, start, end)}
    # admin approved A (6 h after its creation), B1 (2 h), C (30 h), B2 (~0 h): median (2 + 6) / 2
    assert (figures["admin"].approval, figures["admin"].median_hours) == (Rate(4, 4), pytest.approx(4.0, abs=0.02))
    # reviewer approved F (1 h), rejected D (4 h) and E (8 h); G's superseding rejection left out
    assert (figures["reviewer"].approval, figures["reviewer"].median_hours) == (
        Rate(1, 3),
        pytest.approx(4.0, abs=0.02),
    )
    assert list(figures) == ["admin", "reviewer"]


def test_escape_rate_matches_hand_computed_values(agent, world):
    start, end = reads.window(30)
    # today every approval is younger than 14 days: none counted, three escapes listed, two pending (A, B1)
    today = decisions.escape_figures(agent, start, end)
    assert (today.rate, today.pending) == (Rate(0, 0), 2)
    assert sorted((e.label, e.how) for e in today.escapes) == [
        ("address.change v1", "retired"),
        ("address.other v1", "erased"),
        ("order.status v2", "rolled back"),
    ]
    # 20 days on, all five approvals are old enough: C, F and B2 escaped
    later = decisions.escape_figures(agent, start, end, now=timezone.now() + timedelta(days=20))
    assert (later.rate, later.pending) == (Rate(3, 5), 0)


def test_follows_in_order_is_a_subsequence_test():
    assert quality.follows_in_order(["a", "b"], ["x", "a", "y", "b"])
    assert not quality.follows_in_order(["a", "b"], ["b", "a"])
    assert not quality.follows_in_order(["a", "a"], ["a"])
    assert quality.follows_in_order([], [])


def test_incremental_refresh_recomputes_only_new_days_and_a_full_one_agrees(agent, world):
    before = sorted(VersionDayQuality.objects.values_list("version_id", "day", "sessions", "followed", "stale"))
    AgentSession.objects.update(received_at=timezone.now() - timedelta(hours=1))
    _session(agent, A, calls=["lookupOrder", "createApproval"], days_ago=4)
    assert rollup.metrics_refresh(agent=agent).days == 1
    four_days_ago = timezone.localdate() - timedelta(days=4)
    row = VersionDayQuality.objects.get(version=world["a"], day=four_days_ago)
    assert (row.sessions, row.followed, row.stale) == (1, 1, 0)  # four days ago A was not past its date yet
    rollup.metrics_refresh(agent=agent, full=True)
    after = sorted(VersionDayQuality.objects.values_list("version_id", "day", "sessions", "followed", "stale"))
    assert [r for r in after if r[1] != four_days_ago] == before
    assert AgentDayQuality.objects.get(agent=agent, day=four_days_ago).served == 1


def test_pages_show_the_figures_with_a_fixed_number_of_queries(
    client, admin_user, agent, world, django_assert_num_queries
):
    client.force_login(admin_user)
    with django_assert_num_queries(22):  # 16 of the page, 6 of the quality section
        page = client.get(reverse("reviews:ops_metrics", args=[agent.name]))
    assert page.status_code == 200
    html = page.content.decode()
    report = page.context["quality"]
    assert report.total.adherence == Rate(8, 13) and [r.user for r in report.reviewers] == ["admin", "reviewer"]
    assert 'id="quality-figures"' in html and "61.5 %" in html  # 8 of 13
    assert html.count('class="interval-row"') == len(report.versions) + 2
    with django_assert_num_queries(16):  # 12 of the page, 2 of the quality section, 2 saying why it has no eval result
        page = client.get(reverse("reviews:ops_version_metrics", args=[world["a"].pk]))
    assert page.status_code == 200
    assert "66.7 %" in page.content.decode() and page.context["quality"].figures.adherence == Rate(4, 6)


def test_json_gives_the_figures_with_intervals(client, admin_user, agent, world, django_assert_num_queries):
    client.force_login(admin_user)
    with django_assert_num_queries(11):
        body = client.get(reverse("reviews:ops_metrics_json", args=[agent.name]), {"days": 30}).json()
    assert body["agentFigures"]["adherence"]["hits"] == 8 and body["agentFigures"]["adherence"]["total"] == 13
    assert body["agentFigures"]["conflictRate"]["ci95"] == pytest.approx(list(wilson_interval(2, 9)))
    assert body["agentFigures"]["toolCallAccuracy"]["forbiddenCalls"] == 3
    a = next(v for v in body["versions"] if v["id"] == "refund.over_limit")
    assert (a["staleUse"]["hits"], a["staleUse"]["total"]) == (5, 6)
    assert {r["user"]: r["approved"] for r in body["reviewers"]} == {"admin": 4, "reviewer": 1}
    assert body["badWriteEscape"]["pending"] == 2 and len(body["badWriteEscape"]["escapes"]) == 3
    version = client.get(reverse("reviews:ops_version_metrics_json", args=[world["b"].pk])).json()
    assert (version["adherence"]["hits"], version["adherence"]["total"], version["status"]) == (2, 5, Status.ACTIVE)
    assert len(version["days"]) == 4  # s7 today, s3 and s8 yesterday, s5, s6


def test_outsiders_get_404_and_signed_out_users_the_sign_in_page(client, outsider, agent, world):
    client.force_login(outsider)
    for url in (
        reverse("reviews:ops_metrics", args=[agent.name]),
        reverse("reviews:ops_metrics_json", args=[agent.name]),
        reverse("reviews:ops_version_metrics", args=[world["a"].pk]),
        reverse("reviews:ops_version_metrics_json", args=[world["a"].pk]),
    ):
        assert client.get(url).status_code == 404, url
    client.logout()
    response = client.get(reverse("reviews:ops_metrics_json", args=[agent.name]))
    assert response.status_code == 302 and "/login" in response["Location"]
    assert client.post(reverse("reviews:ops_metrics_json", args=[agent.name])).status_code in (302, 405)
