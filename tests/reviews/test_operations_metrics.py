"""Metrics per version: figures from the rollup checked against hand-computed values on a small
fixture, the incremental refresh, the p95 histogram, the drop test and the warning it raises."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, time, timedelta
from itertools import count

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from library.models import AgentSession, EvalCaseResult, RegressionCase
from reviews.metrics import alerts, reads, rollup
from reviews.metrics.histogram import CharsHistogram
from reviews.metrics.rates import Rate, resolution_drop_test
from reviews.models import (
    IntentDayRollup,
    MetricAlert,
    MetricsState,
    Notification,
    NotificationKind,
    NotificationPreference,
    VersionDayRollup,
)
from reviews.signals import metric_warning
from tests.reviews.operations_helpers import activate

pytestmark = pytest.mark.django_db

_ids = count(1)


def _at(days_ago: int, hour: int = 12):
    day = timezone.localdate() - timedelta(days=days_ago)
    return timezone.make_aware(datetime.combine(day, time(hour)))


def session(agent, intent, *, days_ago=0, injected=(), resolved=True, escalated=False, chars=None, model="m-1"):
    return AgentSession.objects.create(
        agent=agent,
        session_id=f"s{next(_ids)}",
        intent=intent,
        resolved=resolved,
        escalated=escalated,
        injected=list(injected),
        instruction_chars=chars,
        model=model,
        ended_at=_at(days_ago),
    )


@pytest.fixture
def v1(candidate, approver):
    version = activate(candidate, approver)
    # the approving eval run: candidate arm 9 of 10 cases of its intent pass (+1 errored, +1 other intent)
    run = version.approval_eval_run
    intent = version.procedure.intent
    other = version.procedure.agent.intents.get(name="order_status")
    for i in range(12):
        case = RegressionCase.objects.create(
            agent=version.procedure.agent, intent=intent if i < 11 else other, task=f"case {i}"
        )
        passed = None if i == 10 else (i < 9 or i == 11)
        EvalCaseResult.objects.create(run=run, case=case, arm=EvalCaseResult.Arm.CANDIDATE, passed=passed)
        EvalCaseResult.objects.create(run=run, case=case, arm=EvalCaseResult.Arm.BASELINE, passed=False)
    return version


@pytest.fixture
def fixture_sessions(agent, intent, v1):
    ref = {"id": "refund.over_limit", "version": 1}
    other_intent = agent.intents.get(name="order_status")
    # today, model m-1
    for i in range(8):
        session(agent, intent, injected=[ref], resolved=True, chars=1000 + 100 * i)
    session(agent, intent, injected=[ref], resolved=True, escalated=True, chars=1800)  # escalated: not a success
    session(agent, intent, injected=[ref], resolved=False, chars=1900)
    session(agent, intent, injected=[ref], resolved=None, chars=5000)  # no outcome: selected, not labelled
    session(agent, intent, injected=[ref, ref], resolved=None, chars=6000)  # listed twice: counted once
    for resolved in (True, True, False, False, False):
        session(agent, intent, injected=[], resolved=resolved)
    session(agent, intent, injected=[{"id": "refund.over_limit", "version": 99}], resolved=True)  # unknown version
    for _ in range(6):
        session(agent, other_intent, injected=[], resolved=True)
    # yesterday, model m-0 (v1 was not ACTIVE yet, but a cached client still injected it)
    for resolved in (True, False, False, False):
        session(agent, intent, days_ago=1, injected=[], resolved=resolved, model="m-0")
    session(agent, intent, days_ago=1, injected=[ref], resolved=True, chars=100, model="m-0")
    session(agent, intent, days_ago=1, injected=[ref], resolved=True, chars=200, model="m-0")
    rollup.metrics_refresh(agent=agent)


def test_version_figures_match_hand_computed_values(agent, v1, fixture_sessions):
    start, end = reads.window(30)
    (fig,) = reads.version_figures([v1], start, end, daily=True)
    assert fig.selected == 14  # 12 today + 2 yesterday
    assert fig.with_rate == Rate(10, 12)  # 8 today + 2 yesterday resolved; 12 labelled
    assert fig.without_rate == Rate(4, 10)  # bare 2/5 + unknown version 1/1 today, bare 1/4 yesterday
    assert fig.bare_rate == Rate(5, 18)  # today only (v1 ACTIVE since today): 5 bare of 18 sessions
    assert fig.eval_rate == Rate(9, 10)  # errored case and the other intent's case left out
    # p95 (nearest rank 14 of 14) is 6000; the histogram is within 1 %
    assert fig.p95_chars == pytest.approx(6000, rel=0.01)
    by_day = {d.day: d for d in fig.days}
    today, yesterday = timezone.localdate(), timezone.localdate() - timedelta(days=1)
    assert (by_day[today].selected, by_day[today].with_rate, by_day[today].without_rate, by_day[today].bare_rate) == (
        12,
        Rate(8, 10),
        Rate(3, 6),
        Rate(5, 18),
    )
    assert (
        by_day[yesterday].selected,
        by_day[yesterday].with_rate,
        by_day[yesterday].without_rate,
        by_day[yesterday].bare_rate,
    ) == (2, Rate(2, 2), Rate(1, 4), Rate(0, 0))
    assert (by_day[yesterday].model, by_day[today].model) == ("m-0", "m-1")
    assert fig.difference_points == f"{(10 / 12 - 4 / 10) * 100:+.1f} pts"


def test_model_change_is_marked_on_the_day_it_happened(agent, fixture_sessions):
    start, end = reads.window(30)
    changes = reads.model_changes(reads.dominant_models(agent, start, end))
    assert [(c.day, c.before, c.after) for c in changes] == [(timezone.localdate(), "m-0", "m-1")]


def test_refresh_is_incremental_and_never_counts_twice(agent, intent, v1, fixture_sessions):
    rows_before = sorted(IntentDayRollup.objects.values_list("day", "intent_id", "model", "sessions", "resolved"))
    # a second refresh with nothing new changes nothing
    rollup.metrics_refresh(agent=agent)
    assert (
        sorted(IntentDayRollup.objects.values_list("day", "intent_id", "model", "sessions", "resolved")) == rows_before
    )
    # a late session for three days ago: only that day is recomputed and added (the fixture's
    # sessions were received an hour ago, outside the refresh's overlap window)
    AgentSession.objects.update(received_at=timezone.now() - timedelta(hours=1))
    session(
        agent,
        intent,
        days_ago=3,
        injected=[{"id": "refund.over_limit", "version": 1}],
        resolved=False,
        model="m-0",
        chars=300,
    )
    result = rollup.metrics_refresh(agent=agent)
    assert result.days == 1 and not result.full
    start, end = reads.window(30)
    (fig,) = reads.version_figures([v1], start, end)
    assert (fig.selected, fig.with_rate) == (15, Rate(10, 13))
    # a full rebuild gives the same figures
    rollup.metrics_refresh(agent=agent, full=True)
    (again,) = reads.version_figures([v1], start, end)
    assert (again.selected, again.with_rate, again.without_rate, again.bare_rate) == (
        fig.selected,
        fig.with_rate,
        fig.without_rate,
        fig.bare_rate,
    )


def test_a_row_on_the_last_day_a_date_holds_does_not_stop_the_refresh(agent, intent, v1, fixture_sessions):
    # a session stored before ingestion refused far-future times (ended_at 9999-12-31)
    late = session(agent, intent, resolved=True, chars=10)
    AgentSession.objects.filter(pk=late.pk).update(ended_at=datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC))
    # the incremental refresh reads that day and the full rebuild reads every day, without an OverflowError
    assert rollup.metrics_refresh(agent=agent).days >= 1
    assert (
        rollup.metrics_refresh(agent=agent, full=True).sessions_read == AgentSession.objects.filter(agent=agent).count()
    )


def test_a_session_committed_late_inside_the_overlap_is_picked_up(agent, intent, v1, fixture_sessions):
    late = session(agent, intent, injected=[{"id": "refund.over_limit", "version": 1}], resolved=True, chars=10)
    # it was received before the watermark (its transaction committed after the last refresh read)
    state = MetricsState.objects.get(agent=agent)
    AgentSession.objects.filter(pk=late.pk).update(received_at=state.refreshed_until - timedelta(minutes=2))
    rollup.metrics_refresh(agent=agent)
    assert (
        VersionDayRollup.objects.filter(version=v1, day=timezone.localdate()).values_list("sessions", flat=True).get()
        == 13
    )


def test_histogram_p95_is_within_one_percent_of_the_exact_nearest_rank_value():
    values = [37 * i % 4999 + 1 for i in range(1, 1001)]
    hist = CharsHistogram()
    for v in values:
        hist.add(v)
    exact = sorted(values)[math.ceil(0.95 * len(values)) - 1]
    assert hist.quantile(0.95) == pytest.approx(exact, rel=0.01)
    merged = CharsHistogram(hist.to_json())
    merged.merge(CharsHistogram({str(CharsHistogram.index(0)): 3}))
    assert merged.total == 1003 and CharsHistogram().quantile(0.95) is None


def test_drop_test_against_hand_computed_z():
    # 50 of 100 vs 10 of 10: pooled 60/110, z = 0.5 / sqrt(0.54545 · 0.45455 · 0.11) = 3.028, p = 0.0012
    test = resolution_drop_test(observed=Rate(50, 100), expected=Rate(10, 10), alpha=0.01, min_sessions=30)
    assert test.z == pytest.approx(3.028, abs=0.001) and test.p_value == pytest.approx(0.00123, abs=0.00002)
    assert test.significant
    # 60 of 100 vs 9 of 10: z = 1.871, p = 0.031 — within noise at α = 0.01
    test = resolution_drop_test(observed=Rate(60, 100), expected=Rate(9, 10), alpha=0.01, min_sessions=30)
    assert test.z == pytest.approx(1.871, abs=0.001) and not test.significant
    # too few sessions, no eval figure, or a rate above the eval: never significant
    assert not resolution_drop_test(observed=Rate(0, 29), expected=Rate(10, 10), min_sessions=30).significant
    assert not resolution_drop_test(observed=Rate(0, 100), expected=Rate(0, 0)).significant
    assert not resolution_drop_test(observed=Rate(100, 100), expected=Rate(5, 10)).significant


def test_warning_opens_once_notifies_admins_and_approvers_and_clears_on_recovery(
    agent, intent, v1, approver, admin_user, reviewer, django_capture_on_commit_callbacks
):
    ref = {"id": "refund.over_limit", "version": 1}
    for i in range(40):
        session(agent, intent, injected=[ref], resolved=i < 15)  # 37.5 % vs 90 % in the eval: z = 2.97
    NotificationPreference.objects.create(user=approver, kind=NotificationKind.METRIC_WARNING, in_app=True, email=True)
    sent = []
    metric_warning.connect(lambda sender, **kw: sent.append(kw), weak=False, dispatch_uid="test-metric-warning")
    try:
        rollup.metrics_refresh(agent=agent)
        with django_capture_on_commit_callbacks(execute=True):
            opened = alerts.metric_warnings_check(agent=agent)
        with django_capture_on_commit_callbacks(execute=True):
            assert alerts.metric_warnings_check(agent=agent) == []  # still open: not sent again
    finally:
        metric_warning.disconnect(dispatch_uid="test-metric-warning")
    assert [a.version for a in opened] == [v1]
    assert [kw["version_id"] for kw in sent] == [v1.pk]
    assert "15 of 40" not in sent[0]["message"] and "37.5 %" in sent[0]["message"]
    recipients = set(
        Notification.objects.filter(kind=NotificationKind.METRIC_WARNING).values_list("user__username", flat=True)
    )
    assert recipients == {"admin", "approver"}  # the superuser and the procedure's approver, not the reviewer
    assert [m.to for m in mail.outbox] == [["approver@example.com"]]
    # recovery: 60 more resolved sessions bring the rate to 75/100 — within noise of 9/10
    for _ in range(60):
        session(agent, intent, injected=[ref], resolved=True)
    rollup.metrics_refresh(agent=agent)
    alerts.metric_warnings_check(agent=agent)
    assert MetricAlert.objects.get().cleared_at is not None


def test_metrics_pages_show_figures_and_the_model_marker(
    client, admin_user, agent, v1, fixture_sessions, django_assert_max_num_queries
):
    client.force_login(admin_user)
    with django_assert_max_num_queries(26):  # 20, and the quality of use (6)
        page = client.get(reverse("reviews:ops_metrics", args=[agent.name]))
    assert page.status_code == 200
    figures = {f.version.pk: f for f in page.context["figures"]}
    assert figures[v1.pk].with_rate == Rate(10, 12)
    html = page.content.decode()
    assert "83.3 %" in html and 'class="model-change"' in html
    with django_assert_max_num_queries(20):
        page = client.get(reverse("reviews:ops_version_metrics", args=[v1.pk]), {"days": 7})
    assert page.status_code == 200
    html = page.content.decode()
    assert html.count("<svg") == 5  # four charts, and the quality of use per day
    assert "m-0 → m-1" in html
    assert "eval 90.0 %" in html


def test_the_session_count_says_it_counts_sessions_with_an_intent(client, admin_user, agent, intent):
    # given: the demo's case, sessions without an intent beside those with one
    for _ in range(3):
        session(agent, intent)
    session(agent, None)
    rollup.metrics_refresh(agent=agent)
    client.force_login(admin_user)
    # when
    html = client.get(reverse("reviews:ops_metrics", args=[agent.name])).content.decode()
    # then: 3 is not the sessions list's 4 unless the page says what it counts
    assert "From 3 reported sessions with an intent in this window" in " ".join(html.split())


def test_metrics_pages_are_hidden_from_outsiders(client, outsider, agent, v1):
    client.force_login(outsider)
    assert client.get(reverse("reviews:ops_metrics", args=[agent.name])).status_code == 404
    assert client.get(reverse("reviews:ops_version_metrics", args=[v1.pk])).status_code == 404


def test_refresh_precomputes_each_windows_p95_equal_to_merging_the_days(agent, intent, v1, fixture_sessions):
    state = MetricsState.objects.get(agent=agent)
    assert state.window_p95["as_of"] == timezone.localdate().isoformat()
    for days in rollup.WINDOWS:
        start, end = reads.window(days)
        (merged,) = reads.version_figures([v1], start, end, daily=True)  # daily: merges the day histograms
        assert state.window_p95["windows"][str(days)][str(v1.pk)] == merged.p95_chars
    # a session 10 days ago only reaches the 30-day and longer windows
    session(agent, intent, days_ago=10, injected=[{"id": "refund.over_limit", "version": 1}], chars=90000)
    rollup.metrics_refresh(agent=agent, full=True)
    windows = MetricsState.objects.get(agent=agent).window_p95["windows"]
    assert windows["7"][str(v1.pk)] == pytest.approx(6000, rel=0.01)
    assert windows["30"][str(v1.pk)] == pytest.approx(90000, rel=0.01)  # nearest rank 15 of 15


def test_refresh_task_and_command_fill_the_rollup_and_skip_a_vanished_agent(agent, intent, v1):
    from io import StringIO

    from django.core.management import call_command

    from reviews.tasks import metrics_refresh_agent, metrics_refresh_all

    session(agent, intent, injected=[{"id": "refund.over_limit", "version": 1}], resolved=True, chars=500)
    assert metrics_refresh_all.delay().get() == 1  # eager in tests: the per-agent task ran too
    assert VersionDayRollup.objects.get(version=v1).sessions == 1
    assert metrics_refresh_agent.delay(agent.pk + 1000).get() == {
        "agent_id": agent.pk + 1000,
        "skipped": "agent is gone",
    }
    session(agent, intent, injected=[], resolved=False)
    out = StringIO()
    call_command("refresh_metrics", "--agent", agent.name, stdout=out)
    assert "support_agent: incremental refresh, 1 day, 2 sessions read, 0 warnings opened" in out.getvalue()
    assert IntentDayRollup.objects.get(intent=intent).bare_sessions == 1


def test_agent_daily_counts_bare_sessions_only_for_intents_that_had_an_active_procedure(agent, v1, fixture_sessions):
    start, end = reads.window(30)
    days = {row["day"]: row for row in reads.agent_daily(agent, start, end)}
    today, yesterday = timezone.localdate(), timezone.localdate() - timedelta(days=1)
    # today: refund_over_limit (v1 ACTIVE) has 5 bare of 18; order_status had no ACTIVE procedure
    assert days[today]["bare"] == Rate(5, 18)
    assert days[today]["sessions"] == 24 and days[today]["resolution"] == Rate(8 + 2 + 1 + 6, 10 + 5 + 1 + 6)
    # yesterday v1 was not ACTIVE yet: no intent had a procedure
    assert days[yesterday]["bare"] == Rate(0, 0) and days[yesterday]["model"] == "m-0"


def _eval_row(page) -> str:
    text = " ".join(page.content.decode().split())
    return re.search(r"<th>Eval result \(candidate arm, this intent\)</th>(.*?)</tr>", text).group(1)


def test_a_version_approved_by_a_run_without_a_replay_says_why_it_has_no_eval_result(
    client, admin_user, outsider, candidate, approver
):
    # given: the demo's refund.over_limit v1, approved with a passing run recorded without a replay
    version = activate(candidate, approver)
    client.force_login(admin_user)
    # when
    page = client.get(reverse("reviews:ops_version_metrics", args=[version.pk]))
    # then: no "— (0 of 0)", which reads as a measured result, but the reason
    row = _eval_row(page)
    assert "(0 of 0)" not in row
    assert f"none: eval run #{version.approval_eval_run_id} replayed no cases" in row
    client.force_login(outsider)
    assert client.get(reverse("reviews:ops_version_metrics", args=[version.pk])).status_code == 404


def test_a_run_without_a_case_of_the_versions_intent_is_named_as_such(client, admin_user, candidate, approver):
    version = activate(candidate, approver)
    other = version.procedure.agent.intents.get(name="order_status")
    case = RegressionCase.objects.create(agent=version.procedure.agent, intent=other, task="other intent")
    EvalCaseResult.objects.create(
        run=version.approval_eval_run, case=case, arm=EvalCaseResult.Arm.CANDIDATE, passed=True
    )
    client.force_login(admin_user)
    row = _eval_row(client.get(reverse("reviews:ops_version_metrics", args=[version.pk])))
    assert "(0 of 0)" not in row
    assert f"had no case of intent {version.procedure.intent.name}" in row


def test_a_version_without_sessions_says_so_in_words_not_as_0_of_0(client, admin_user, outsider, agent, v1):
    """The review pass read "Resolution rate with it — (0 of 0)" and tooltips of "0 of 0": with
    nothing to count, each figure says what is missing."""
    # given: an ACTIVE version no session has received yet
    rollup.metrics_refresh(agent=agent)
    client.force_login(admin_user)
    # when
    agent_page = client.get(reverse("reviews:ops_metrics", args=[agent.name])).content.decode()
    version_page = client.get(reverse("reviews:ops_version_metrics", args=[v1.pk])).content.decode()
    # then
    for html in (agent_page, version_page):
        text = " ".join(html.split())
        assert "0 of 0" not in text and "(0 of 0" not in text
    row = agent_page[agent_page.index(f'data-version="{v1.number}"') :]
    row = " ".join(row[: row.index("</tr>")].split())
    assert row.count("no outcomes yet") == 2 and "nothing to compare" in row and "none recorded" in row
    assert "no approvals at least 14 days old yet" in agent_page
    version_text = " ".join(version_page.split())
    assert (
        '<th>Resolution rate with it</th><td class="num"><span class="muted none">no sessions with an outcome yet'
        in (version_text)
    )
    assert "no sessions of the intent yet" in version_text
    client.force_login(outsider)
    assert client.get(reverse("reviews:ops_version_metrics", args=[v1.pk])).status_code == 404


def test_an_interval_chart_row_without_observations_says_so():
    from reviews.metrics.interval_chart import interval_chart

    chart = interval_chart(title="Adherence", items=[("a v1", Rate(0, 0)), ("b v1", Rate(3, 4))])
    assert chart.rows[0].title == "a v1: nothing to count yet" and chart.rows[0].x is None
    assert chart.rows[1].title.startswith("b v1: 75.0 % (3 of 4, 95 % CI")
