"""The conflict scan across an agent's active set: one procedure requires what another forbids, or
two apply to the same situation (stored embeddings) with different required tools; approving a
candidate that creates a conflict is refused unless the approver acknowledges it; the scan records
open conflicts, audits changes, clears them when they go; the on-demand scan's permission matrix."""

from __future__ import annotations

import pytest
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library import services
from library.conflicts import conflicts_for_candidate, conflicts_scan, find_conflicts, requires_what_other_forbids
from library.models import AuditEvent, Source, Status, VersionConflict, VersionEmbedding
from tests.conftest import make_passing_eval
from tests.reviews.operations_helpers import agent_manager

pytestmark = pytest.mark.django_db


def _propose(agent, proposer, *, key, intent="refund_over_limit", applies_when, steps, tools, forbidden=()):
    return services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name=intent),
        key=key,
        applies_when=applies_when,
        steps=steps,
        required_tools=tools,
        forbidden_actions=list(forbidden),
        source=Source.MANUAL,
        proposed_by=proposer,
    )


@pytest.fixture
def agent_approver(agent, reviewers_group):
    from tests.reviews.operations_helpers import make_user

    user = make_user("agent_approver", group=reviewers_group)
    assign_perm("library.approve_agent_procedures", user, agent)
    return user


@pytest.fixture
def guard(agent, proposer, agent_approver):
    """ACTIVE: a guard that forbids calling createApproval and promising refund dates outright (and
    one conditional line that is not a contradiction by itself)."""
    version = _propose(
        agent,
        proposer,
        key="refund.guard",
        intent="order_status",
        applies_when="The customer wants to know the status of an existing order.",
        steps=["Look up the order with lookupOrder({{order_id}}).", "Tell the status with replyTemplates('status')."],
        tools=["lookupOrder", "replyTemplates"],
        forbidden=[
            "Never call createApproval.",
            "Never promise a refund date.",
            "Do not call replyTemplates('refund_promised') before createApproval.",
        ],
    )
    make_passing_eval(version)
    return services.version_approve(version=version, user=agent_approver)


@pytest.fixture
def conflicting(agent, proposer):
    """A candidate that requires createApproval and promises a refund date."""
    version = _propose(
        agent,
        proposer,
        key="refund.fast",
        applies_when="The customer asks for a refund above the agent's limit.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Create an approval with createApproval({{order_id}}).",
            "Promise a refund date to the customer with replyTemplates('refund_date').",
        ],
        tools=["lookupOrder", "createApproval", "replyTemplates"],
    )
    make_passing_eval(version)
    return version


def test_requires_what_the_other_forbids_by_tool_and_by_step(guard, conflicting):
    found = requires_what_other_forbids(conflicting, guard)
    assert found[0] == {"forbidden": "Never call createApproval.", "tools": ["createApproval"]}
    assert found[1]["forbidden"] == "Never promise a refund date."
    assert found[1]["step"].startswith("Promise a refund date")
    assert len(found) == 2  # the conditional replyTemplates line is not a contradiction by itself
    assert requires_what_other_forbids(guard, conflicting) == []


def test_an_exact_forbidden_call_conflicts_but_another_use_of_the_tool_does_not(agent, proposer):
    a = _propose(
        agent,
        proposer,
        key="refund.a",
        applies_when="A.",
        steps=["Reply with replyTemplates('refund_date').", "y", "z"],
        tools=["replyTemplates"],
    )
    b = _propose(
        agent,
        proposer,
        key="refund.b",
        applies_when="B.",
        steps=["x", "y", "z"],
        tools=[],
        forbidden=["Do not call replyTemplates('refund_date')."],
    )
    c = _propose(
        agent,
        proposer,
        key="refund.c",
        applies_when="C.",
        steps=["Reply with replyTemplates('status').", "y", "z"],
        tools=["replyTemplates"],
    )
    assert requires_what_other_forbids(a, b) == [
        {"forbidden": "Do not call replyTemplates('refund_date').", "step": "Reply with replyTemplates('refund_date')."}
    ]
    assert requires_what_other_forbids(c, b) == []


def test_same_situation_with_different_tools_uses_stored_embeddings(agent, proposer):
    a = _propose(
        agent,
        proposer,
        key="refund.a",
        applies_when="The customer asks for a refund above the agent's limit.",
        steps=["x", "y", "z"],
        tools=["createApproval"],
    )
    b = _propose(
        agent,
        proposer,
        key="refund.b",
        applies_when="A customer asks for a refund above the agent's limit.",
        steps=["x", "y", "z"],
        tools=["issueRefund"],
    )
    c = _propose(
        agent,
        proposer,
        key="order.c",
        intent="order_status",
        applies_when="The customer wants to change the delivery address.",
        steps=["x", "y", "z"],
        tools=["updateAddress"],
    )
    conflicts = find_conflicts([a, b, c])
    assert [(x.kind, {x.a.pk, x.b.pk}) for x in conflicts] == [("same_situation", {a.pk, b.pk})]
    assert conflicts[0].detail["similarity"] >= 0.8
    # a and b (same intent, different tools) needed vectors, stored once; c (another intent) did not
    assert set(VersionEmbedding.objects.filter(version__in=[a, b, c]).values_list("version_id", flat=True)) == {
        a.pk,
        b.pk,
    }


def test_approval_is_blocked_until_the_conflict_is_acknowledged(guard, conflicting, agent_approver):
    assert len(conflicts_for_candidate(conflicting)) == 1
    blockers = services.approval_blockers(conflicting, agent_approver)
    assert any(b.startswith("Conflict") for b in blockers)
    with pytest.raises(services.LifecycleError, match="Conflict"):
        services.version_approve(version=conflicting, user=agent_approver)
    conflicting.refresh_from_db()
    assert conflicting.status == Status.CANDIDATE
    services.version_approve(
        version=conflicting, user=agent_approver, acknowledge_conflicts=True, comment="manager on call"
    )
    conflicting.refresh_from_db()
    assert conflicting.status == Status.ACTIVE
    ack = AuditEvent.objects.get(action=AuditEvent.Action.CONFLICT_ACK)
    assert ack.actor == agent_approver and ack.after["conflicts"][0]["kind"] == "requires_forbidden"


def test_scan_opens_keeps_and_clears_conflicts_with_audit_rows(agent, guard, conflicting):
    # the candidate with a passing eval is "about to be ACTIVE": the scan sees it
    assert conflicts_scan(agent=agent) == {"open": 1, "opened": 1, "cleared": 0}
    row = VersionConflict.objects.get()
    assert (row.version_a_id, row.version_b_id) == (guard.pk, conflicting.pk) and row.kind == "requires_forbidden"
    assert conflicts_scan(agent=agent) == {"open": 1, "opened": 0, "cleared": 0}
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CONFLICT_SCAN).count() == 1
    manager = agent_manager(agent)
    services.version_retire(version=guard, user=manager, reason="replaced")
    assert conflicts_scan(agent=agent, user=manager) == {"open": 0, "opened": 0, "cleared": 1}
    assert VersionConflict.objects.get().cleared_at is not None
    assert AuditEvent.objects.filter(action=AuditEvent.Action.CONFLICT_SCAN).count() == 2


def test_scan_view_permission_matrix_and_agent_page(
    client, agent, guard, conflicting, reviewer, outsider, agent_approver
):
    url = reverse("reviews:ops_conflicts_scan", args=[agent.name])
    assert client.post(url).status_code == 302 and "login" in client.post(url)["Location"]
    client.force_login(outsider)
    assert client.post(url).status_code == 404
    for user in (reviewer, agent_approver):
        client.force_login(user)
        assert client.post(url).status_code == 403
    assert not VersionConflict.objects.exists()
    manager = agent_manager(agent)
    client.force_login(manager)
    assert client.post(url).status_code == 302
    page = client.get(reverse("reviews:ops_agent", args=[agent.name])).content.decode()
    assert f'data-conflict="{VersionConflict.objects.get().pk}"' in page and "createApproval" in page


def test_approve_page_asks_to_acknowledge_and_the_post_needs_it(client, guard, conflicting, agent_approver):
    client.force_login(agent_approver)
    url = reverse("reviews:version_approve", args=[conflicting.pk])
    page = client.get(url).content.decode()
    assert 'name="acknowledge_conflicts"' in page and "forbids it" in page
    response = client.post(url, {"confirm": "on"})
    assert response.status_code == 409
    conflicting.refresh_from_db()
    assert conflicting.status == Status.CANDIDATE
    assert client.post(url, {"confirm": "on", "acknowledge_conflicts": "on"}).status_code == 302
    conflicting.refresh_from_db()
    assert conflicting.status == Status.ACTIVE
