"""Approval's conflict check compares appliesWhen embeddings. Computing one may load the model and
take seconds, so version_approve computes them before it takes the agent, procedure and version
row locks, and the check under the locks only reads them; when the active set changed in between
and needs a vector that was not computed, the decision is abandoned (locks released), the vector
computed, and decided again (issue 40, "Also"). Checked by watching the embedding call: it never
runs inside the decision's transaction (a transactional test: outside it no atomic block is open)."""

from __future__ import annotations

import pytest
from django.db import connection

from library import embeddings, services
from library.models import AuditEvent, Source, Status, VersionEmbedding
from tests.conftest import make_active, make_passing_eval

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def same_situation(agent, intent, proposer, admin_user):
    """An ACTIVE procedure of the candidate's intent that requires other tools: the pair the
    same-situation check embeds."""
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.escalate",
        applies_when="The customer asks for a refund above the agent's limit and wants a supervisor.",
        steps=["Look up the order with lookupOrder({{order_id}}).", "Escalate with createApproval({{order_id}})."],
        required_tools=["lookupOrder", "createApproval"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    return make_active(version, admin_user)


@pytest.fixture
def embed_calls(monkeypatch):
    """Every call of the embedding model, with whether a transaction was open at the time."""
    calls: list[bool] = []
    real = embeddings.embed

    def watched(texts, *args, **kwargs):
        calls.append(connection.in_atomic_block)
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(embeddings, "embed", watched)
    return calls


def _approve(candidate, admin_user):
    make_passing_eval(candidate)
    return services.version_approve(version=candidate, user=admin_user, comment="ok", acknowledge_conflicts=True)


def test_approval_embeds_before_it_takes_the_row_locks(candidate, same_situation, admin_user, embed_calls):
    # given neither version's appliesWhen is embedded yet
    VersionEmbedding.objects.all().delete()
    # when the candidate is approved
    approved = _approve(candidate, admin_user)
    # then both were embedded, and never inside the decision's transaction
    assert approved.status == Status.ACTIVE
    assert embed_calls and not any(embed_calls), embed_calls
    assert set(VersionEmbedding.objects.values_list("version_id", flat=True)) == {candidate.pk, same_situation.pk}


def test_a_vector_the_active_set_needs_after_the_lock_is_computed_outside_it_and_decided_again(
    candidate, same_situation, admin_user, embed_calls, monkeypatch
):
    # given the vectors computed before the lock miss the ones the active set needs under it (as
    # when another version became ACTIVE in between)
    from library.services import transitions

    VersionEmbedding.objects.all().delete()
    real = transitions.vectors_for_candidate
    first = []

    def stale(version):
        if not first:
            first.append(version.pk)
            return {}
        return real(version)

    monkeypatch.setattr(transitions, "vectors_for_candidate", stale)
    decisions = []
    real_decision = transitions._decision
    monkeypatch.setattr(transitions, "_decision", lambda decide: decisions.append(1) or real_decision(decide))
    # when the candidate is approved
    approved = _approve(candidate, admin_user)
    # then the first decision was abandoned, the vectors computed outside any transaction, the
    # second decision went through, and the conflict check saw the pair
    assert approved.status == Status.ACTIVE and len(decisions) == 2
    assert embed_calls and not any(embed_calls), embed_calls
    assert VersionEmbedding.objects.filter(version_id__in=[candidate.pk, same_situation.pk]).count() == 2
    assert AuditEvent.objects.filter(action=AuditEvent.Action.APPROVE, version=candidate).count() == 1


def test_the_conflict_check_under_a_lock_refuses_to_embed(candidate, same_situation):
    from library.conflicts import VectorsMissing, conflicts_for_candidate

    with pytest.raises(VectorsMissing) as missing:
        conflicts_for_candidate(candidate, vectors={})
    assert {v.pk for v in missing.value.versions} == {candidate.pk, same_situation.pk}
