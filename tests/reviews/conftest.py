"""Fixtures of the review workspace tests: signed-in clients per role and candidates in bulk."""

from __future__ import annotations

import pytest
from django.test import Client


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def agent_admin(agent, reviewers_group):
    """A reviewer who administers `agent` (its tools, tokens, webhooks and settings)."""
    from django.contrib.auth import get_user_model
    from guardian.shortcuts import assign_perm

    user = get_user_model().objects.create_user("agent_admin", password="pw-agent_admin")
    user.groups.add(reviewers_group)
    assign_perm("library.manage_agent", user, agent)
    return user


@pytest.fixture
def reviewer_client(reviewer):
    return client_for(reviewer)


@pytest.fixture
def approver_client(approver):
    return client_for(approver)


@pytest.fixture
def outsider_client(outsider):
    return client_for(outsider)


HTMX = {"HTTP_HX_REQUEST": "true"}


def bulk_candidates(
    agent, intent, count: int, *, prefix: str = "bulk", quarantined_every: int = 0, with_evidence: bool = True
):
    """`count` CANDIDATE versions of `count` new procedures, inserted in bulk (these tests measure
    pages, not the proposing service, which tests/library covers)."""
    from library.models import Procedure, ProcedureVersion, Source, content_hash

    procedures = Procedure.objects.bulk_create(
        [Procedure(agent=agent, intent=intent, key=f"{prefix}.p{i:05d}") for i in range(count)]
    )
    versions = []
    for i, procedure in enumerate(procedures):
        steps = [
            f"Look up the order with lookupOrder({{{{order_id}}}}) variant {i}.",
            "Reply with replyTemplates('x').",
        ]
        content = dict(
            applies_when=f"The customer asks about case {i}.",
            steps=steps,
            required_tools=["lookupOrder", "replyTemplates"],
            forbidden_actions=[],
        )
        flagged = bool(quarantined_every) and i % quarantined_every == 0
        versions.append(
            ProcedureVersion(
                procedure=procedure,
                number=1,
                source=Source.MINED,
                content_hash=content_hash(**content),
                evidence={"support": (i * 7) % 200, "resolved": 200, "failed": 50, "failedWithSkeleton": 3}
                if with_evidence
                else {},
                quarantined=flagged,
                quarantine_reasons=[
                    {"category": "skip_approval", "reason": "test", "field": "steps[1]", "excerpt": "x"}
                ]
                if flagged
                else [],
                **content,
            )
        )
    return ProcedureVersion.objects.bulk_create(versions)


@pytest.fixture
def promoter(candidate):
    """Holds the promote right on the candidate's procedure (reviews/views/releases.py)."""
    from guardian.shortcuts import assign_perm

    from tests.conftest import _user

    user = _user("promoter")
    assign_perm("library.promote_procedure", user, candidate.procedure)
    return user


@pytest.fixture
def approved_in_staging(agent, candidate, approver, reviewer):
    """v1 ACTIVE; then the agent gets staging and v2 is approved on a pass against staging's set:
    APPROVED, released to staging, not yet evaluated against production's. Returns (v1, v2)."""
    from library import services
    from tests.conftest import make_active

    make_active(candidate, approver)
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    v2 = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when,
        steps=[
            *candidate.steps[:-1],
            "Tell the customer the expected wait (two days) with replyTemplates('approval_pending').",
        ],
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    make_active(v2, approver)
    candidate.refresh_from_db()
    v2.refresh_from_db()
    return candidate, v2
