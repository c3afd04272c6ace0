"""A claim's copies of its version's place in the queue (status, quarantine, support, age, agent,
intent), which "assigned to me" reads instead of the versions: the database fills them on insert and
keeps them true on every change of the version or its procedure, whoever writes (a service, a bulk
insert, a queryset update). Runs on PostgreSQL and on SQLite, each with its own triggers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from library.models import Procedure, ProcedureVersion, Source, Status, content_hash
from library.services import version_reject
from reviews.models import CandidateClaim
from reviews.selectors import neg_support
from reviews.services import candidate_claim
from tests.reviews.conftest import bulk_candidates, client_for

QUEUE = "/queue/"
# evidence whose support the queue reads as a number, and some it reads as 0
EVIDENCE = [
    {"support": 42},
    {"support": "17"},
    {"support": 0},
    {"support": 999999999},
    {"support": 1000000000},
    {"support": -3},
    {"support": 5.5},
    {"support": "abc"},
    {"support": None},
    {"support": [1]},
    {},
]


def _versions_with(agent, intent, evidences: list[dict]) -> list[ProcedureVersion]:
    procedures = Procedure.objects.bulk_create(
        [Procedure(agent=agent, intent=intent, key=f"keys.p{i:03d}") for i in range(len(evidences))]
    )
    versions = []
    for i, (procedure, evidence) in enumerate(zip(procedures, evidences)):
        content = dict(applies_when=f"Case {i}.", steps=[f"Step {i}."], required_tools=[], forbidden_actions=[])
        versions.append(
            ProcedureVersion(
                procedure=procedure,
                number=1,
                source=Source.MINED,
                content_hash=content_hash(**content),
                evidence=evidence,
                quarantined=i % 3 == 0,
                **content,
            )
        )
    return ProcedureVersion.objects.bulk_create(versions)


def _copies(claim: CandidateClaim) -> tuple:
    claim.refresh_from_db()
    return (
        claim.version_status,
        claim.quarantined,
        claim.neg_support,
        claim.version_created_at,
        claim.agent_id,
        claim.intent_id,
    )


def _truth(version: ProcedureVersion) -> tuple:
    row = ProcedureVersion.objects.annotate(ns=neg_support()).select_related("procedure").get(pk=version.pk)
    return (row.status, row.quarantined, row.ns, row.created_at, row.procedure.agent_id, row.procedure.intent_id)


@pytest.mark.django_db
def test_a_claim_copies_its_versions_place_in_the_queue(agent, intent, reviewer):
    versions = _versions_with(agent, intent, EVIDENCE)
    claims = [candidate_claim(version=v, user=reviewer) for v in versions]
    assert [_copies(c) for c in claims] == [_truth(v) for v in versions]
    assert [c.neg_support for c in claims][:6] == [-42, -17, 0, -999999999, 0, 0]


@pytest.mark.django_db
def test_the_database_overrules_what_an_insert_says(agent, intent, reviewer):
    # given a bulk insert with wrong copies (as any writer could send)
    versions = bulk_candidates(agent, intent, 3, quarantined_every=2)
    other = agent.intents.get(name="order_status")
    now = timezone.now()
    claims = CandidateClaim.objects.bulk_create(
        [
            CandidateClaim(
                version=v,
                assignee=reviewer,
                claimed_at=now,
                expires_at=now + timedelta(hours=1),
                version_status=Status.REJECTED,
                quarantined=not v.quarantined,
                neg_support=12345,
                version_created_at=now - timedelta(days=9),
                agent=agent,
                intent=other,
            )
            for v in versions
        ]
    )
    # then the rows hold the versions' own values
    assert [_copies(c) for c in claims] == [_truth(v) for v in versions]


@pytest.mark.django_db
def test_a_decision_takes_the_claim_out_of_assigned_to_me(agent, intent, reviewer):
    decided, raw, kept = bulk_candidates(agent, intent, 3)
    claims = [candidate_claim(version=v, user=reviewer) for v in (decided, raw, kept)]
    client = client_for(reviewer)
    assert len(client.get(QUEUE + "?assigned=me").context["rows"]) == 3
    # when one is rejected through the service and one by a plain update (no service)
    version_reject(version=decided, user=reviewer, reason="duplicate")
    ProcedureVersion.objects.filter(pk=raw.pk).update(status=Status.REJECTED)
    # then their claims say so in the same transaction, and the queue shows the one left
    assert [_copies(c)[0] for c in claims] == [Status.REJECTED, Status.REJECTED, Status.CANDIDATE]
    response = client.get(QUEUE + "?assigned=me")
    assert [v.pk for v in response.context["rows"]] == [kept.pk]
    assert [g.count for a in response.context["groups"] for g in a.intents] == [1]


@pytest.mark.django_db
def test_moving_a_procedure_to_another_intent_moves_its_claims(agent, intent, reviewer):
    (version,) = bulk_candidates(agent, intent, 1)
    claim = candidate_claim(version=version, user=reviewer)
    other = agent.intents.get(name="order_status")
    Procedure.objects.filter(pk=version.procedure_id).update(intent=other)
    assert _copies(claim)[-1] == other.pk == _truth(version)[-1]
    response = client_for(reviewer).get(QUEUE + "?assigned=me&intent=order_status")
    assert [v.pk for v in response.context["rows"]] == [version.pk]


@pytest.mark.django_db
def test_an_expired_claim_taken_again_keeps_its_copies(agent, intent, reviewer, proposer):
    (version,) = bulk_candidates(agent, intent, 1, quarantined_every=1)
    claim = candidate_claim(version=version, user=reviewer)
    past = timezone.now() - timedelta(hours=2)
    CandidateClaim.objects.filter(pk=claim.pk).update(claimed_at=past, expires_at=past + timedelta(hours=1))
    assert client_for(reviewer).get(QUEUE + "?assigned=me").context["quarantined_rows"] == []
    again = candidate_claim(version=version, user=proposer)
    assert again.pk == claim.pk and _copies(again) == _truth(version)
    assert [v.pk for v in client_for(proposer).get(QUEUE + "?assigned=me").context["quarantined_rows"]] == [version.pk]


@pytest.mark.django_db
def test_assigned_to_me_combines_with_the_version_filters(candidate, approver, agent, intent):
    """ "Waiting for me" and "passing" are read from the versions, quarantine from the copies."""
    flagged, plain = bulk_candidates(agent, intent, 2, quarantined_every=2)
    for version in (candidate, flagged, plain):
        candidate_claim(version=version, user=approver)
    client = client_for(approver)

    def shown(query):
        response = client.get(QUEUE + "?assigned=me&" + query)
        return {v.pk for v in list(response.context["quarantined_rows"]) + list(response.context["rows"])}

    assert shown("") == {candidate.pk, flagged.pk, plain.pk}
    assert shown("mine=1") == {candidate.pk}  # the approver holds the right on this procedure only
    assert shown("quarantined=yes") == {flagged.pk}
    assert shown("quarantined=no&passing=no") == {candidate.pk, plain.pk}
    assert shown("passing=yes") == set()
