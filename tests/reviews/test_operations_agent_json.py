"""Retire and roll back through the operations pages, and the agent JSON (/api/v1/) follows at
once: the procedure leaves and returns, the ETag changes, and a rolled-back version that misses a
tool the agent has now is refused in the JSON just as the operations page shows it."""

from __future__ import annotations

import pytest
from django.urls import reverse

from library import services
from library.api.tokens import token_create
from tests.reviews.operations_helpers import activate, revise_and_activate

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("readonly_shares_default")]


@pytest.fixture
def read_token(agent):
    return token_create(agent=agent, scope="read", name="ops-test")[1]


def _fetch(client, agent, token, etag=None):
    headers = {"Authorization": f"Bearer {token}"}
    if etag:
        headers["If-None-Match"] = etag
    return client.get(reverse("api:active_set", args=[agent.name]), headers=headers)


def _served(response) -> dict[str, int]:
    return {p["id"]: p["version"] for p in response.json()["procedures"]}


def test_retire_and_rollback_views_change_the_agent_json_and_its_etag(
    client, agent, candidate, approver, reviewer, admin_user, read_token
):
    v1 = activate(candidate, approver)
    v2 = revise_and_activate(v1, reviewer, approver, step="Log the request with replyTemplates('logged').")
    before = _fetch(client, agent, read_token)
    assert _served(before) == {"refund.over_limit": 2}
    assert _fetch(client, agent, read_token, before["ETag"]).status_code == 304

    client.force_login(admin_user)
    client.post(reverse("reviews:ops_retire", args=[v2.pk]), {"reason": "bad wording"})
    retired = _fetch(client, agent, read_token, before["ETag"])
    assert retired.status_code == 200 and _served(retired) == {}
    client.post(reverse("reviews:ops_rollback", args=[v1.pk]), {"reason": "back to v1"})
    rolled = _fetch(client, agent, read_token, retired["ETag"])
    assert rolled.status_code == 200 and _served(rolled) == {"refund.over_limit": 1}
    assert len({before["ETag"], retired["ETag"], rolled["ETag"]}) == 3


def test_a_rolled_back_version_missing_a_tool_is_refused_in_the_json_as_on_the_page(
    client, agent, candidate, approver, reviewer, admin_user, read_token
):
    v1 = activate(candidate, approver)
    revise_and_activate(v1, reviewer, approver, step="Log the request with replyTemplates('logged').")
    # the agent loses createApproval, which both versions need
    services.agent_set_tools(
        agent=agent, tools=["lookupOrder", "checkReturnWindow", "replyTemplates"], user=admin_user, reason="t"
    )
    client.force_login(admin_user)
    client.post(reverse("reviews:ops_rollback", args=[v1.pk]), {"reason": "back to v1"})
    data = _fetch(client, agent, read_token).json()
    assert data["procedures"] == []
    assert [(r["id"], r["version"], r["missingTools"]) for r in data["refused"]] == [
        ("refund.over_limit", 1, ["createApproval"])
    ]
    page = client.get(reverse("reviews:ops_agent", args=[agent.name]))
    assert [(v.procedure.key, v.number, missing) for v, missing, _ in page.context["refused"]] == [
        ("refund.over_limit", 1, ["createApproval"])
    ]
    # the API recorded the refusal once; the page shows since when
    assert page.context["refused"][0][2] is not None
