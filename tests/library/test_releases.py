"""Environments, promotion and staged rollouts: the services (row lock, audit, permission), what the
agent API serves per environment and session, the arms reported sessions record, and the database
refusing every release, rollout or status change that would serve an unapproved version (on
PostgreSQL, through raw SQL)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, InternalError, connection, transaction
from django.urls import reverse
from django.utils import timezone
from guardian.shortcuts import assign_perm
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from library import environments, services
from library.agents import settings as agent_settings
from library.api.tokens import token_create
from library.models import AgentSession, ApiToken, AuditEvent, ProcedureRelease, Rollout, Status, VersionTombstone
from tests.conftest import _user, make_active, make_passing_eval

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

DB_ERRORS = (IntegrityError, InternalError)


def refused(callable_):
    with pytest.raises(DB_ERRORS):
        with transaction.atomic():
            callable_()


def raw(sql: str, params: list | None = None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params or [])


@pytest.fixture
def promoter(db, candidate):
    user = _user("promoter")
    assign_perm("library.promote_procedure", user, candidate.procedure)
    return user


@pytest.fixture
def v1(candidate, approver):
    """refund.over_limit v1 ACTIVE in production (approved before the agent had staging)."""
    make_active(candidate, approver)
    candidate.refresh_from_db()
    return candidate


@pytest.fixture
def staging_agent(agent, v1):
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    return agent


def _revise(version, reviewer, step: str):
    return services.version_revise(
        version=version,
        user=reviewer,
        applies_when=version.applies_when,
        steps=[*version.steps[:-1], step],
        required_tools=version.required_tools,
        forbidden_actions=version.forbidden_actions,
        reason="edit",
    )


@pytest.fixture
def v2(staging_agent, v1, reviewer, approver):
    """v2 approved while the agent has staging: APPROVED, in staging (on a pass against staging's
    set), with a pass against production's set too (its promotion eval), so that it may go on."""
    version = _revise(
        v1, reviewer, "Tell the customer the expected wait (two days) with replyTemplates('approval_pending')."
    )
    make_active(version, approver)
    version.refresh_from_db()
    make_passing_eval(version)
    return version


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


def fetch(client, token, **params):
    return client.get(
        reverse("api:active_set", kwargs={"agent": "support_agent"}), params, HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def served_versions(response) -> dict[str, int]:
    return {p["id"]: p["version"] for p in response.json()["procedures"]}


# ------------------------------------------------------------------------------ staging first


def test_approval_with_staging_goes_to_staging_and_production_keeps_the_active(v1, v2):
    v1.refresh_from_db()
    assert v2.status == Status.APPROVED and v2.approved_by is not None and v2.approval_eval_run_id
    assert v1.status == Status.ACTIVE
    release = ProcedureRelease.objects.get(procedure=v2.procedure)
    assert (release.environment, release.version_id) == ("staging", v2.pk)
    actions = list(AuditEvent.objects.filter(version=v2).values_list("action", flat=True))
    assert AuditEvent.Action.APPROVE in actions and AuditEvent.Action.STAGE in actions


def test_without_staging_approval_is_active_as_before(v1, reviewer, approver):
    v2 = _revise(v1, reviewer, "Reply with replyTemplates('approval_pending').")
    make_active(v2, approver)
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status) == (Status.RETIRED, Status.ACTIVE)
    assert not ProcedureRelease.objects.exists()


def test_api_serves_each_environment_with_its_own_etag(client, read_token, v1, v2):
    production, staging = fetch(client, read_token), fetch(client, read_token, environment="staging")
    assert served_versions(production) == {"refund.over_limit": 1}
    assert served_versions(staging) == {"refund.over_limit": 2}
    assert staging.json()["environment"] == "staging" and "environment" not in production.json()
    assert production["ETag"] != staging["ETag"]
    assert fetch(client, read_token, environment="production")["ETag"] == production["ETag"]
    again = client.get(
        reverse("api:active_set", kwargs={"agent": "support_agent"}),
        {"environment": "staging"},
        HTTP_AUTHORIZATION=f"Bearer {read_token}",
        HTTP_IF_NONE_MATCH=staging["ETag"],
    )
    assert again.status_code == 304


def test_unknown_environment_is_a_400_that_names_the_known_ones(client, read_token, v2):
    response = fetch(client, read_token, environment="qa")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unknown_environment" and error["parameter"] == "environment"
    assert "'qa' is unknown" in error["message"] and "production, staging" in error["message"]


def test_promotion_to_production_is_its_own_permission(v1, v2, approver, promoter):
    with pytest.raises(PermissionDenied):
        services.version_promote(version=v2, user=approver, environment="production", reason="looks good")
    services.version_promote(version=v2, user=promoter, environment="production", reason="staging fine for a week")
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status) == (Status.RETIRED, Status.ACTIVE) and v2.review_by is not None
    assert not ProcedureRelease.objects.exists()
    event = AuditEvent.objects.get(version=v2, action=AuditEvent.Action.PROMOTE)
    assert event.actor == promoter and event.reason == "staging fine for a week"
    assert event.before["status"] == "APPROVED" and event.after["status"] == "ACTIVE"


def test_promotion_needs_a_reason_and_an_approved_version(v1, v2, promoter):
    with pytest.raises(ValidationError):
        services.version_promote(version=v2, user=promoter, environment="production", reason=" ")
    with pytest.raises(services.LifecycleError):
        services.version_promote(version=v1, user=promoter, environment="production", reason="again")
    with pytest.raises(ValidationError):
        services.version_promote(version=v2, user=promoter, environment="moon", reason="x")


def test_withdraw_from_staging_serves_production_there_again(client, read_token, v1, v2, promoter):
    services.version_withdraw(version=v2, user=promoter, environment="staging", reason="broke the staging agent")
    v2.refresh_from_db()
    assert v2.status == Status.RETIRED
    assert served_versions(fetch(client, read_token, environment="staging")) == {"refund.over_limit": 1}
    assert AuditEvent.objects.filter(version=v2, action=AuditEvent.Action.WITHDRAW).exists()


def test_a_newer_approval_replaces_the_staged_version(v1, v2, reviewer, approver):
    v3 = _revise(
        v2, reviewer, "Tell the customer the expected wait (three days) with replyTemplates('approval_pending')."
    )
    make_active(v3, approver)
    v2.refresh_from_db()
    v3.refresh_from_db()
    assert (v2.status, v3.status) == (Status.RETIRED, Status.APPROVED)
    assert ProcedureRelease.objects.get(environment="staging").version_id == v3.pk


def test_other_environments_are_released_to_by_promotion(client, read_token, staging_agent, v2, promoter):
    staging_agent.environments = ["staging", "qa"]
    staging_agent.save(update_fields=["environments"])
    services.version_promote(version=v2, user=promoter, environment="qa", reason="qa run")
    assert served_versions(fetch(client, read_token, environment="qa")) == {"refund.over_limit": 2}
    with pytest.raises(ValidationError):
        services.version_promote(version=v2, user=promoter, environment="qa", reason="x", share=20)


# ------------------------------------------------------------------------------ rollouts


def test_rollout_serves_a_share_by_session_and_says_the_arm(client, read_token, v1, v2, promoter):
    services.version_promote(version=v2, user=promoter, environment="production", reason="try on a fifth", share=20)
    rollout = Rollout.objects.get()
    assert (rollout.state, rollout.share, rollout.version_id, rollout.control_version_id) == (
        "running",
        20,
        v2.pk,
        v1.pk,
    )
    arms = Counter()
    for n in range(300):
        body = fetch(client, read_token, session=f"s-{n}").json()
        (record,) = body["procedures"]
        assert body["arms"] == {"refund.over_limit": record["arm"]}
        assert record["version"] == (2 if record["arm"] == "rollout" else 1)
        arms[record["arm"]] += 1
    assert 30 <= arms["rollout"] <= 90  # 20 % of 300 = 60; the hash is uniform
    # deterministic: the same session gets the same arm every time
    first = fetch(client, read_token, session="s-7").json()["arms"]
    assert all(fetch(client, read_token, session="s-7").json()["arms"] == first for _ in range(3))
    # without a session id: the control
    assert fetch(client, read_token).json()["arms"] == {"refund.over_limit": "control"}


def test_select_gives_the_session_its_arm(client, read_token, v1, v2, promoter):
    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=50)
    session = next(
        f"s-{n}"
        for n in range(100)
        if environments.rollout_arm(rollout_id=Rollout.objects.get().pk, share=50, session=f"s-{n}") == "rollout"
    )
    response = client.get(
        reverse("api:select", kwargs={"agent": "support_agent"}),
        {"task": "refund above my limit for order 12", "session": session},
        HTTP_AUTHORIZATION=f"Bearer {read_token}",
    )
    body = response.json()
    assert body["arms"] == {"refund.over_limit": "rollout"}
    assert [(p["id"], p["version"], p["arm"]) for p in body["injected"]] == [("refund.over_limit", 2, "rollout")]


def test_complete_rollout_makes_it_active(v1, v2, promoter):
    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=20)
    rollout = services.rollout_complete(
        rollout=Rollout.objects.get(), user=promoter, reason="rollout arm resolves more"
    )
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert rollout.state == Rollout.State.COMPLETED
    assert (v1.status, v2.status) == (Status.RETIRED, Status.ACTIVE)
    assert not ProcedureRelease.objects.exists()
    assert AuditEvent.objects.filter(version=v2, action=AuditEvent.Action.ROLLOUT_COMPLETE).exists()
    with pytest.raises(services.LifecycleError):
        services.rollout_rollback(rollout=rollout, user=promoter, reason="too late")


def test_rollback_rollout_keeps_production_and_staging(client, read_token, v1, v2, promoter):
    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=20)
    services.rollout_rollback(rollout=Rollout.objects.get(), user=promoter, reason="rollout arm escalates more")
    v1.refresh_from_db()
    v2.refresh_from_db()
    assert (v1.status, v2.status) == (Status.ACTIVE, Status.APPROVED)
    assert "arms" not in fetch(client, read_token, session="s-1").json()
    assert served_versions(fetch(client, read_token, environment="staging")) == {"refund.over_limit": 2}


def test_while_a_rollout_runs_the_control_stays(v1, v2, promoter, reviewer, approver, agent):
    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=20)
    manager = _user("manager")
    assign_perm("library.manage_agent_procedures", manager, agent)
    with pytest.raises(services.LifecycleError, match="rollout"):
        services.version_retire(version=v1, user=manager, reason="no")
    with pytest.raises(services.LifecycleError, match="rollout"):
        services.version_promote(version=v2, user=promoter, environment="production", reason="again", share=30)
    v3 = _revise(v2, reviewer, "Reply with replyTemplates('approval_pending') and the case number.")
    with pytest.raises(services.LifecycleError, match="rollout"):
        make_active(v3, approver)


@pytest.mark.parametrize("share", [0, -5, 101, True, "20"])
def test_share_out_of_range_is_refused(v2, promoter, share):
    with pytest.raises(ValidationError):
        services.version_promote(version=v2, user=promoter, environment="production", reason="x", share=share)
    assert not Rollout.objects.exists()


def test_rollout_without_permission_is_refused(v2, approver):
    with pytest.raises(PermissionDenied):
        services.version_promote(version=v2, user=approver, environment="production", reason="x", share=20)


def test_erasing_a_version_in_rollout_ends_it_and_drops_it_everywhere(client, read_token, v1, v2, promoter, agent):
    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=99)
    manager = _user("manager")
    assign_perm("library.manage_agent_procedures", manager, agent)
    services.version_erase(version=v2, user=manager, ground=VersionTombstone.Ground.POISONED, reason="poisoned")
    assert Rollout.objects.get().state == Rollout.State.ROLLED_BACK
    assert not ProcedureRelease.objects.exists()
    for params in ({}, {"environment": "staging"}, {"session": "s-1"}):
        body = fetch(client, read_token, **params).json()
        assert served_versions(fetch(client, read_token, **params)) == {"refund.over_limit": 1}
        assert "arms" not in body


def test_reported_sessions_record_the_arm(client, agent, admin_user, v2):
    token = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    item = {
        "session_id": "s-arm",
        "intent": "refund_over_limit",
        "task": "refund",
        "outcome": {"resolved": True},
        "tool_calls": [{"name": "lookupOrder"}],
        "injected": [{"id": "refund.over_limit", "version": 2, "arm": "rollout"}],
    }
    response = client.post(
        reverse("api:sessions"), json.dumps(item), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 200, response.content
    assert AgentSession.objects.get(session_id="s-arm").injected == [
        {"id": "refund.over_limit", "version": 2, "arm": "rollout"}
    ]
    bad = {**item, "session_id": "s-bad", "injected": [{"id": "refund.over_limit", "version": 2, "arm": "treatment"}]}
    response = client.post(
        reverse("api:sessions"), json.dumps(bad), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 422 and "injected[0].arm" in response.content.decode()


@hsettings(max_examples=200, deadline=None)
@given(session=st.text(min_size=1, max_size=200), share=st.integers(1, 99), rollout_id=st.integers(1, 2**31))
def test_arm_is_deterministic_and_one_of_two(session, share, rollout_id):
    arm = environments.rollout_arm(rollout_id=rollout_id, share=share, session=session)
    assert arm in ("rollout", "control") and arm == environments.rollout_arm(
        rollout_id=rollout_id, share=share, session=session
    )


# ------------------------------------------------------------------------------ environments in the agent settings


def test_environments_are_edited_audited_and_kept_while_in_use(v2, agent, admin_user):
    with pytest.raises(ValidationError, match="staging still serves"):
        agent_settings.agent_settings_update(agent=agent, user=admin_user, changes={"environments": []})
    agent_settings.agent_settings_update(
        agent=agent, user=admin_user, changes={"environments": "staging qa"}, reason="a qa cluster"
    )
    agent.refresh_from_db()
    assert agent.environments == ["staging", "qa"]
    event = AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).latest("at")
    assert event.before == {"environments": ["staging"]} and event.after == {"environments": ["staging", "qa"]}
    for bad in (["Staging"], ["staging", "staging"], [""], "a" * 40, [1]):
        with pytest.raises(ValidationError):
            agent_settings.agent_settings_update(agent=agent, user=admin_user, changes={"environments": bad})


@hsettings(max_examples=100, deadline=None)
@given(value=st.one_of(st.text(max_size=60), st.lists(st.text(max_size=40), max_size=12), st.integers(), st.none()))
def test_clean_environments_never_crashes(value):
    try:
        names = environments.clean_environments(value)
    except ValidationError:
        return
    assert "production" not in names and len(set(names)) == len(names)


# ------------------------------------------------------------------------------ the database refuses


def _approved_columns(version):
    run = make_passing_eval(version)
    return [version.approved_by_id or 1, run.pk, version.pk]


@pytest.mark.postgres
def test_database_refuses_a_release_or_rollout_of_an_unapproved_version(v2, reviewer, approver, promoter):
    v3 = _revise(v2, reviewer, "Reply with replyTemplates('approval_pending') and the case number.")
    now = timezone.now()
    refused(lambda: raw("UPDATE library_procedurerelease SET version_id = %s WHERE version_id = %s", [v3.pk, v2.pk]))
    refused(
        lambda: ProcedureRelease.objects.create(
            procedure=v3.procedure, environment="qa", version=v2, released_by=approver, released_at=now
        )
    )
    refused(
        lambda: ProcedureRelease.objects.create(
            procedure=v3.procedure, environment="production", version=v2, released_by=approver, released_at=now
        )
    )
    refused(
        lambda: Rollout.objects.create(
            procedure=v3.procedure, version=v3, share=20, reason="x", started_by=promoter, started_at=now
        )
    )
    refused(
        lambda: Rollout.objects.create(
            procedure=v3.procedure, version=v2, share=20, reason="x", started_by=promoter, started_at=now
        )
    )  # control must be the ACTIVE
    # promise 2: no path by raw SQL turns a candidate into an approved or active version without an approval
    refused(lambda: raw("UPDATE library_procedureversion SET status = 'APPROVED' WHERE id = %s", [v3.pk]))
    refused(lambda: raw("UPDATE library_procedureversion SET status = 'ACTIVE' WHERE id = %s", [v3.pk]))


@pytest.mark.postgres
def test_database_keeps_released_and_rollout_versions_in_their_status(v1, v2, promoter, agent):
    refused(lambda: raw("UPDATE library_procedureversion SET status = 'RETIRED' WHERE id = %s", [v2.pk]))
    refused(lambda: raw("UPDATE library_procedureversion SET status = 'ACTIVE' WHERE id = %s", [v2.pk]))
    refused(lambda: raw("UPDATE library_agent SET environments = '[]'::jsonb WHERE id = %s", [agent.pk]))
    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=20)
    refused(lambda: raw("UPDATE library_procedureversion SET status = 'RETIRED' WHERE id = %s", [v1.pk]))
    refused(lambda: raw("UPDATE library_rollout SET share = 50"))
    refused(lambda: raw("UPDATE library_rollout SET share = 100, state = 'running'"))
    refused(lambda: raw("DELETE FROM library_rollout"))
    now = timezone.now()
    refused(
        lambda: Rollout.objects.create(
            procedure=v2.procedure,
            version=v2,
            control_version=v1,
            share=30,
            reason="x",
            started_by=promoter,
            started_at=now,
        )
    )
    services.rollout_rollback(rollout=Rollout.objects.get(), user=promoter, reason="no")
    refused(lambda: raw("UPDATE library_rollout SET state = 'completed'"))


@pytest.mark.postgres
def test_database_refuses_a_share_outside_0_to_100(v1, v2, promoter):
    now = timezone.now()
    for share in (0, 100):
        refused(
            lambda: Rollout.objects.create(
                procedure=v2.procedure,
                version=v2,
                control_version=v1,
                share=share,
                reason="x",
                started_by=promoter,
                started_at=now,
            )
        )


def test_a_procedure_outside_the_agents_namespace_is_served_in_no_environment(client, read_token, v1, v2, promoter):
    from library.models import Namespace, Procedure

    services.version_promote(version=v2, user=promoter, environment="production", reason="try", share=50)
    elsewhere = Namespace.objects.create(name="other_team")
    Procedure.objects.filter(pk=v2.procedure_id).update(namespace=elsewhere)
    for params in ({}, {"environment": "staging"}, {"session": "s-1"}, {"session": "s-2"}):
        body = fetch(client, read_token, **params).json()
        assert body["procedures"] == [] and "arms" not in body, params
