"""Every mutating view of the review workspace, for the people who must not pass:

- anonymous → redirect to sign-in (an htmx request gets HX-Redirect to the sign-in page instead,
  so the form does not land inside a fragment);
- signed in without the permission (the outsider holds no role) → 403;
- a hidden object → 404. Hidden means: a primary key that does not exist, or an object of an agent
  outside `library.permissions.agents_visible_to(user)`.

The state is checked to be unchanged after each refusal.
"""

import pytest
from django.urls import reverse

from library.models import EvalRun, Procedure, ProcedureVersion, Status
from reviews.models import Comment
from tests.reviews.conftest import HTMX

pytestmark = pytest.mark.django_db

MISSING = 999_999


def _run(candidate):
    return EvalRun.objects.create(
        version=candidate, content_hash=candidate.content_hash, state=EvalRun.State.RUNNING, cases_total=4
    )


# name → (url builder, POST data). The builder takes the candidate (or None for "hidden").
MUTATIONS = {
    "reject": (lambda v: reverse("reviews:version_reject", kwargs={"pk": v.pk if v else MISSING}), {"reason": "no"}),
    "comment": (lambda v: reverse("reviews:version_comment", kwargs={"pk": v.pk if v else MISSING}), {"body": "hi"}),
    "edit": (
        lambda v: reverse("reviews:version_edit", kwargs={"pk": v.pk if v else MISSING}),
        {"applies_when": "Changed.", "steps": "a\nb\nc", "forbidden_actions": ""},
    ),
    "approve": (lambda v: reverse("reviews:version_approve", kwargs={"pk": v.pk if v else MISSING}), {"confirm": "on"}),
    "eval_start": (lambda v: reverse("reviews:version_eval_start", kwargs={"pk": v.pk if v else MISSING}), {}),
    "eval_cancel": (lambda v: reverse("reviews:eval_cancel", kwargs={"pk": _run(v).pk if v else MISSING}), {}),
    "bulk_reject": (lambda v: reverse("reviews:queue_bulk_reject"), None),  # data built per case
    "propose": (lambda v: reverse("reviews:procedure_new"), None),
}


def _data(name, candidate, hidden=False):
    if name == "bulk_reject":
        return {"versions": [MISSING if hidden else candidate.pk], "reason": "dup"}
    if name == "propose":
        return {
            "agent": "no_such_agent" if hidden else candidate.procedure.agent.name,
            "intent": candidate.procedure.intent_id,
            "key": "hand.written",
            "applies_when": "When.",
            "steps": "a\nb\nc",
            "forbidden_actions": "",
        }
    return MUTATIONS[name][1]


def _unchanged(candidate):
    candidate.refresh_from_db()
    assert candidate.status == Status.CANDIDATE
    assert ProcedureVersion.objects.filter(procedure=candidate.procedure).count() == 1
    assert not Procedure.objects.filter(key="hand.written").exists()
    assert not Comment.objects.exists()


@pytest.mark.parametrize("name", MUTATIONS)
def test_anonymous_is_sent_to_sign_in(client, candidate, name):
    target = MUTATIONS[name][0](candidate)
    response = client.post(target, _data(name, candidate))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/?next=")
    _unchanged(candidate)


@pytest.mark.parametrize("name", MUTATIONS)
def test_anonymous_htmx_request_gets_a_client_redirect(client, candidate, name):
    target = MUTATIONS[name][0](candidate)
    response = client.post(
        target, _data(name, candidate), HTTP_HX_CURRENT_URL=f"http://testserver/versions/{candidate.pk}/", **HTMX
    )
    assert response.status_code == 200
    assert response["HX-Redirect"] == f"/accounts/login/?next=/versions/{candidate.pk}/"
    _unchanged(candidate)


@pytest.mark.parametrize("name", MUTATIONS)
def test_signed_in_without_permission_is_403(outsider_client, candidate, name):
    response = outsider_client.post(MUTATIONS[name][0](candidate), _data(name, candidate))
    assert response.status_code == 403
    _unchanged(candidate)


@pytest.mark.parametrize("name", MUTATIONS)
def test_hidden_object_is_404(reviewer_client, candidate, name):
    response = reviewer_client.post(MUTATIONS[name][0](None), _data(name, candidate, hidden=True))
    assert response.status_code == 404
    _unchanged(candidate)


def test_objects_of_an_agent_hidden_from_the_user_are_404(reviewer_client, candidate, monkeypatch):
    """Narrowing the rulebook's agents_visible_to hides every object of that agent, reads and writes alike."""
    from library.models import Agent

    monkeypatch.setattr(
        "library.permissions.agents_visible_to", lambda user: Agent.objects.exclude(pk=candidate.procedure.agent_id)
    )
    pages = [
        reverse("reviews:version", kwargs={"pk": candidate.pk}),
        reverse("reviews:procedure", kwargs={"pk": candidate.procedure_id}),
        reverse("reviews:version_eval_panel", kwargs={"pk": candidate.pk}),
    ]
    for page in pages:
        assert reviewer_client.get(page).status_code == 404, page
    for name in ("reject", "comment", "approve", "eval_start"):
        assert reviewer_client.post(MUTATIONS[name][0](candidate), _data(name, candidate)).status_code == 404, name
    assert reviewer_client.get("/queue/").context["page"].count == 0
    _unchanged(candidate)


def test_eval_run_of_a_hidden_agent_is_404_and_stays_running(reviewer_client, candidate, other_procedure, monkeypatch):
    from library.models import Agent

    foreign = _run(other_procedure.versions.get())
    hidden_agent = other_procedure.agent_id
    monkeypatch.setattr("library.permissions.agents_visible_to", lambda user: Agent.objects.exclude(pk=hidden_agent))
    assert reviewer_client.post(reverse("reviews:eval_cancel", kwargs={"pk": foreign.pk})).status_code == 404
    foreign.refresh_from_db()
    assert foreign.state == EvalRun.State.RUNNING


@pytest.mark.parametrize(
    "page",
    [
        "/queue/",
        "/versions/{v}/",
        "/versions/{v}/edit/",
        "/versions/{v}/approve/",
        "/procedures/{p}/",
        "/procedures/new/",
    ],
)
def test_pages_need_sign_in(client, candidate, page):
    response = client.get(page.format(v=candidate.pk, p=candidate.procedure_id))
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_reading_is_open_to_every_signed_in_member_but_writing_is_not(outsider_client, candidate):
    assert outsider_client.get(f"/versions/{candidate.pk}/").status_code == 200
    html = outsider_client.get(f"/versions/{candidate.pk}/").content.decode()
    assert "Reject with a reason" not in html and "Start an eval run" not in html
    assert outsider_client.get(f"/versions/{candidate.pk}/edit/").status_code == 403
    assert outsider_client.get("/procedures/new/").status_code == 403


def test_get_is_not_a_write(reviewer_client, candidate):
    for name in ("reject", "comment", "eval_start"):
        assert reviewer_client.get(MUTATIONS[name][0](candidate)).status_code == 405
    _unchanged(candidate)


def test_writes_need_the_csrf_token(reviewer, candidate):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(reviewer)
    assert client.post(MUTATIONS["reject"][0](candidate), {"reason": "no"}).status_code == 403
    _unchanged(candidate)
