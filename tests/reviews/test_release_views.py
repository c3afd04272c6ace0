"""The operations pages of environments and rollouts: who may see them (404 otherwise) and who may
act (403 otherwise), what promote, withdraw, complete and roll back do through the pages, the
environments on the agent settings page, and the rollout's arms checked against hand-computed
figures."""

from __future__ import annotations

import math

import pytest
from django.urls import reverse

from library import services
from library.models import AgentSession, AuditEvent, ProcedureRelease, Rollout, Status
from reviews.metrics.arms import rollout_arms
from tests.conftest import _user, make_passing_eval
from tests.reviews.conftest import client_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def staged(approved_in_staging):
    """v1 ACTIVE; v2 APPROVED in staging, with its promotion eval: a pass against production's set."""
    v1, v2 = approved_in_staging
    make_passing_eval(v2)
    return v1, v2


@pytest.fixture
def rollout(staged, promoter):
    services.version_promote(version=staged[1], user=promoter, environment="production", reason="a fifth", share=20)
    return Rollout.objects.get()


def _urls(version, rollout_pk):
    return {
        "promote": reverse("reviews:ops_promote", args=[version.pk]),
        "withdraw": reverse("reviews:ops_withdraw", args=[version.pk]) + "?environment=staging",
        "rollout": reverse("reviews:ops_rollout", args=[rollout_pk]),
        "complete": reverse("reviews:ops_rollout_complete", args=[rollout_pk]),
        "rollback": reverse("reviews:ops_rollout_rollback", args=[rollout_pk]),
    }


def test_who_may_not_see_the_agent_gets_404_everywhere(staged, rollout, outsider):
    client = client_for(outsider)
    for name, url in _urls(staged[1], rollout.pk).items():
        assert client.get(url).status_code in (404, 405), name
        if name != "rollout":  # a page, not an action (POST is 405)
            assert client.post(url, {"reason": "x", "environment": "production"}).status_code == 404, name
    assert Rollout.objects.get().state == Rollout.State.RUNNING


def test_who_may_see_but_not_promote_gets_403_and_nothing_changes(staged, rollout, approver):
    client = client_for(approver)  # approves the procedure, may not promote it
    urls = _urls(staged[1], rollout.pk)
    assert client.get(urls["rollout"]).status_code == 200
    for name in ("promote", "withdraw"):
        assert client.get(urls[name]).status_code == 403, name
    for name in ("promote", "withdraw", "complete", "rollback"):
        assert client.post(urls[name], {"reason": "x", "environment": "production"}).status_code == 403, name
    assert Rollout.objects.get().state == Rollout.State.RUNNING
    assert ProcedureRelease.objects.filter(version=staged[1]).exists()


def test_promote_page_promotes_to_production(staged, promoter):
    v1, v2 = staged
    client = client_for(promoter)
    url = reverse("reviews:ops_promote", args=[v2.pk])
    page = client.get(url)
    assert page.status_code == 200 and b'value="production"' in page.content and b'value="staging"' not in page.content
    assert client.post(url, {"environment": "production", "reason": ""}).status_code == 400
    response = client.post(url, {"environment": "production", "share": "", "reason": "a week in staging"})
    assert response.status_code == 302
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status) == (Status.RETIRED, Status.ACTIVE)
    assert client.post(url, {"environment": "production", "reason": "again"}).status_code == 409


def test_promote_page_starts_a_rollout_and_refuses_a_bad_share(staged, promoter):
    client = client_for(promoter)
    url = reverse("reviews:ops_promote", args=[staged[1].pk])
    assert client.post(url, {"environment": "production", "share": "abc", "reason": "r"}).status_code == 400
    assert client.post(url, {"environment": "production", "share": "0", "reason": "r"}).status_code == 400
    response = client.post(url, {"environment": "production", "share": "20", "reason": "a fifth first"})
    rollout = Rollout.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("reviews:ops_rollout", args=[rollout.pk])
    assert rollout.share == 20 and rollout.started_by == promoter


def test_withdraw_page_rolls_staging_back(staged, promoter):
    client = client_for(promoter)
    url = reverse("reviews:ops_withdraw", args=[staged[1].pk])
    assert client.post(url, {"environment": "staging", "reason": ""}).status_code == 400
    assert client.post(url, {"environment": "staging", "reason": "staging agent escalates"}).status_code == 302
    staged[1].refresh_from_db()
    assert staged[1].status == Status.RETIRED and not ProcedureRelease.objects.exists()
    assert client.get(url + "?environment=staging").status_code == 200  # a stale link says so


def test_complete_and_rollback_through_the_rollout_page(staged, rollout, promoter):
    client = client_for(promoter)
    page = client.get(reverse("reviews:ops_rollout", args=[rollout.pk]))
    assert page.status_code == 200 and b"Complete: v2 for every session" in page.content
    assert client.post(reverse("reviews:ops_rollout_complete", args=[rollout.pk]), {"reason": ""}).status_code == 400
    assert (
        client.post(reverse("reviews:ops_rollout_complete", args=[rollout.pk]), {"reason": "better"}).status_code == 302
    )
    staged[1].refresh_from_db()
    assert staged[1].status == Status.ACTIVE
    assert (
        client.post(reverse("reviews:ops_rollout_rollback", args=[rollout.pk]), {"reason": "late"}).status_code == 409
    )
    assert AuditEvent.objects.filter(action=AuditEvent.Action.ROLLOUT_COMPLETE, actor=promoter).exists()


def test_rollback_through_the_rollout_page(staged, rollout, promoter):
    response = client_for(promoter).post(
        reverse("reviews:ops_rollout_rollback", args=[rollout.pk]), {"reason": "escalates"}
    )
    assert response.status_code == 302
    rollout.refresh_from_db()
    staged[0].refresh_from_db()
    assert rollout.state == Rollout.State.ROLLED_BACK and staged[0].status == Status.ACTIVE


def test_procedure_page_shows_environments_and_the_promote_button(staged, rollout, promoter, approver, agent):
    url = reverse("reviews:ops_procedure", args=[agent.name, "refund.over_limit"])
    page = client_for(promoter).get(url).content.decode()
    assert 'id="env-staging"' in page and "released here" in page and "to 20 % of the sessions" in page
    assert "Promote v2" in page
    assert "Promote v2" not in client_for(approver).get(url).content.decode()


def test_agent_settings_page_edits_environments(agent, admin_user):
    client = client_for(admin_user)
    url = reverse("reviews:agent_settings", args=[agent.name])
    form = {
        "tools": "\n".join(agent.tools),
        "procedural_memory_enabled": "on",
        "injection_cap": 2,
        "support_threshold": 20,
        "review_target_hours": 72,
        "pattern-TOTAL_FORMS": "0",  # no redaction pattern rows (the page's formset)
        "pattern-INITIAL_FORMS": "0",
        "family_rule-TOTAL_FORMS": "0",  # nor task family rule rows (its other formset)
        "family_rule-INITIAL_FORMS": "0",
        "environments": "staging qa",
        "reason": "a staging cluster",
        "min_tool_calls": 3,
        "significance_level": 0.05,
        "backtest_share": 0.25,
    }
    assert client.post(url, form).status_code == 302
    agent.refresh_from_db()
    assert agent.environments == ["staging", "qa"]
    assert client.post(url, {**form, "environments": "Staging!"}).status_code == 400
    assert 'value="staging qa"' in client.get(url).content.decode()


def _wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def test_arms_figures_match_hand_computed_values(staged, rollout, agent):
    # given: 10 rollout sessions (8 resolved), 20 control sessions (10 resolved, 2 more unlabelled),
    # and sessions that do not count: another version, no arm, another procedure
    def report(n, *, version, arm, resolved, prefix):
        for i in range(n):
            injected = [{"id": "refund.over_limit", "version": version, **({"arm": arm} if arm else {})}]
            AgentSession.objects.create(
                agent=agent, session_id=f"{prefix}-{i}", injected=injected, resolved=resolved(i)
            )

    report(10, version=2, arm="rollout", resolved=lambda i: i < 8, prefix="r")
    report(22, version=1, arm="control", resolved=lambda i: None if i >= 20 else i < 10, prefix="c")
    report(5, version=1, arm="rollout", resolved=lambda i: True, prefix="wrong")
    report(5, version=1, arm=None, resolved=lambda i: True, prefix="noarm")
    # when
    comparison = rollout_arms(rollout)
    rollout_arm, control = comparison.arms
    # then
    assert (rollout_arm.sessions, rollout_arm.rate.total, rollout_arm.rate.hits) == (10, 10, 8)
    assert (control.sessions, control.rate.total, control.rate.hits) == (22, 20, 10)
    for figures, (k, n) in ((rollout_arm, (8, 10)), (control, (10, 20))):
        low, high = _wilson(k, n)
        assert figures.low == pytest.approx(low, abs=1e-9) and figures.high == pytest.approx(high, abs=1e-9)
    # Fisher's exact test on [[8, 2], [10, 10]]: two-sided p = sum of the tables no likelier than it
    assert comparison.p_value == pytest.approx(_fisher_two_sided(8, 2, 10, 10), rel=1e-9)
    page = (
        client_for(_user("viewer_admin", is_superuser=True))
        .get(reverse("reviews:ops_rollout", args=[rollout.pk]))
        .content.decode()
    )
    assert (
        "80.0 %" in page
        and "50.0 %" in page
        and f"{100 * _wilson(8, 10)[0]:.1f}–{100 * _wilson(8, 10)[1]:.1f} %" in page
    )


def _fisher_two_sided(a: int, b: int, c: int, d: int) -> float:
    row1, col1, n = a + b, a + c, a + b + c + d

    def prob(x: int) -> float:
        return math.comb(col1, x) * math.comb(n - col1, row1 - x) / math.comb(n, row1)

    observed = prob(a)
    return sum(prob(x) for x in range(max(0, row1 + col1 - n), min(row1, col1) + 1) if prob(x) <= observed * (1 + 1e-7))


def test_an_arm_without_outcomes_says_so_in_words(staged, rollout, promoter):
    """The arms table read "—" for the rate and the interval of an arm no labelled session reached
    yet; as on the metrics pages, the page says what is missing."""
    page = client_for(promoter).get(reverse("reviews:ops_rollout", args=[rollout.pk])).content.decode()
    arms = page[page.index('id="arms"') : page.index("</section>", page.index('id="arms"'))]
    assert "—" not in arms
    for arm in ("rollout", "control"):
        row = arms[arms.index(f'id="arm-{arm}"') :]
        row = row[: row.index("</tr>")]
        assert '<span class="muted none">no outcomes yet</span>' in row and "nothing to count yet" in row, row
    assert arms.count('<text class="none"') == 2  # the chart's rows too, where a dot and a line would be
    assert "No labelled sessions in one of the arms yet." in arms


def test_the_arms_tables_columns_align_as_their_headings(staged, rollout, promoter):
    """The rate cell became right-aligned (class num, as on the metrics pages) under a left-aligned
    heading, its figure far from it; each column's heading and cells now align alike."""
    import re

    page = client_for(promoter).get(reverse("reviews:ops_rollout", args=[rollout.pk])).content.decode()
    arms = page[page.index('id="arms"') : page.index("</table>", page.index('id="arms"'))]
    headings = ["num" in attrs for attrs in re.findall(r"<th(?=[ >])([^>]*)>", arms)]
    assert headings == [False, False, True, True, True, True, False]
    for arm in ("rollout", "control"):
        row = arms[arms.index(f'id="arm-{arm}"') :]
        cells = ['class="num"' in attrs for attrs in re.findall(r"<td([^>]*)>", row[: row.index("</tr>")])]
        assert cells == headings, (arm, cells)
