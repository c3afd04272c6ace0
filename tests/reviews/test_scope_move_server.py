"""Issue 42, finding 1, against a real server process with real users signing in with their
passwords: the probe's exact sequence (approve 403 → move the procedure into the namespace where the
user approves → approve → move it back) no longer lends approver rights. The probe's admin (manage on
the agent, approve only in tenant-b) may not move the procedure at all; a tenant admin who manages
both namespaces may move it, approve it in tenant-b, but not carry the ACTIVE version back into the
agent's namespace past its gate. The agent API never serves the version.

PostgreSQL only: the server process (tests/conftest.py `gunicorn_server`) shares the test database."""

from __future__ import annotations

import re

import pytest
import requests
from django.urls import reverse
from guardian.shortcuts import assign_perm

from library.api.tokens import token_create
from library.models import ApiToken, AuditEvent, Procedure, ProcedureVersion, Status
from library.services import namespace_create
from tests.conftest import make_passing_eval
from tests.reviews.operations_helpers import make_user

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def _sign_in(base: str, username: str) -> requests.Session:
    """Signs in through the sign-in form with the user's password, as the probe did."""
    session = requests.Session()
    page = session.get(f"{base}/accounts/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    landing = session.post(
        f"{base}/accounts/login/",
        data={"username": username, "password": f"pw-{username}", "csrfmiddlewaretoken": token},
        headers={"Referer": f"{base}/accounts/login/"},
        timeout=30,
    )
    assert landing.status_code == 200 and "/accounts/login/" not in landing.url, username
    session.headers.update({"X-CSRFToken": session.cookies["csrftoken"], "Referer": f"{base}/"})
    return session


def _probe(base: str, session: requests.Session, candidate, *, read_token: str) -> list[int]:
    """approve → move into tenant-b → approve → move back to default; the status of each."""
    approve = f"{base}{reverse('reviews:version_approve', args=[candidate.pk])}"
    scope = f"{base}{reverse('reviews:procedure_scope', args=[candidate.procedure_id])}"
    move = {"roles": "", "priority": "0", "confidence": "medium", "reason": "the probe"}
    decide = {"comment": "approved", "confirm": "on"}
    codes = []
    for url, data in (
        (approve, decide),
        (scope, {**move, "namespace": "tenant-b"}),
        (approve, decide),
        (scope, {**move, "namespace": "default"}),
    ):
        codes.append(session.post(url, data=data, allow_redirects=False, timeout=60).status_code)
    return codes


def _served(base: str, read_token: str) -> list[str]:
    response = requests.get(
        f"{base}/api/v1/agents/support_agent/procedures",
        headers={"Authorization": f"Bearer {read_token}"},
        timeout=30,
    )
    assert response.status_code == 200
    return [p["id"] for p in response.json()["procedures"]]


def test_the_probes_sequence_no_longer_lends_approver_rights(gunicorn_server, candidate, agent, admin_user):
    # given tenant-b, a passing eval on the candidate, a read token, and the probe's two admins
    base = gunicorn_server
    tenant_b = namespace_create(name="tenant-b", user=admin_user)
    default = candidate.procedure.namespace
    make_passing_eval(candidate)
    read_token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="probe", user=admin_user)[1]
    probe_admin = make_user("probe_admin", is_staff=True)
    for perm in ("manage_agent", "manage_agent_procedures"):
        assign_perm(f"library.{perm}", probe_admin, agent)
    assign_perm("library.approve_namespace_procedures", probe_admin, tenant_b)
    tenant_admin = make_user("tenant_admin", is_staff=True)
    for namespace in (default, tenant_b):
        assign_perm("library.manage_namespace_procedures", tenant_admin, namespace)
    assign_perm("library.approve_namespace_procedures", tenant_admin, tenant_b)

    # when the probe's admin runs the sequence: no approval (403), no move (403), no approval (403),
    # and the move back is "nothing changed" (400)
    assert _probe(base, _sign_in(base, "probe_admin"), candidate, read_token=read_token) == [403, 403, 403, 400]
    procedure = Procedure.objects.get(pk=candidate.procedure_id)
    assert procedure.namespace == default
    assert ProcedureVersion.objects.get(pk=candidate.pk).status == Status.CANDIDATE

    # when a tenant admin who manages both namespaces runs it: the move and the approval in tenant-b
    # go through, the move back with the ACTIVE version is refused (409)
    assert _probe(base, _sign_in(base, "tenant_admin"), candidate, read_token=read_token) == [403, 302, 302, 409]
    version = ProcedureVersion.objects.get(pk=candidate.pk)
    assert version.status == Status.ACTIVE and version.approved_by == tenant_admin
    assert Procedure.objects.get(pk=candidate.procedure_id).namespace == tenant_b

    # then the agent is never served the version neither admin could approve in its namespace
    assert _served(base, read_token) == []
    # and the one move is audited with both namespaces and who made it
    moves = AuditEvent.objects.filter(action=AuditEvent.Action.SCOPE, procedure_id=candidate.procedure_id)
    assert [(m.actor, m.before["namespace"], m.after["namespace"]) for m in moves] == [
        (tenant_admin, "default", "tenant-b")
    ]
