"""The candidate page: diff against ACTIVE, evidence, eval panel, lint, edit, comments, reject and
the confirmed approval — and what the page and the server refuse."""

import re

import pytest
from django.urls import reverse

from library import services
from library.models import AuditEvent, EvalRun, ProcedureVersion, Source, Status
from reviews.models import Comment, Thread
from tests.conftest import make_passing_eval
from tests.reviews.conftest import HTMX, bulk_candidates, client_for

pytestmark = pytest.mark.django_db


def url(name, version, **extra):
    return reverse(f"reviews:{name}", kwargs={"pk": version.pk, **extra})


@pytest.fixture
def active_v1(agent, intent, proposer, admin_user):
    """refund.over_limit v1 ACTIVE (approved by admin), as in the demo data."""
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.over_limit",
        applies_when="The customer asks for money back for an expensive order of hundreds of EUR, more than the agent may refund on its own.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            "Tell the customer with replyTemplates('refund_pending') that the refund is being processed.",
        ],
        required_tools=["lookupOrder", "checkReturnWindow", "replyTemplates"],
        forbidden_actions=["Do not refund an order outside its return window."],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    make_passing_eval(version)
    return services.version_approve(version=version, user=admin_user)


@pytest.fixture
def mined_v2(active_v1, agent, intent):
    return services.procedure_propose(
        agent=agent,
        intent=intent,
        key="refund.over_limit",
        applies_when="The customer asks for money back for an expensive order of hundreds of EUR, more than the agent may refund on its own.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Check the return window with checkReturnWindow({{order_id}}).",
            "Create an approval request with createApproval({{order_id}}).",
            "Tell the customer the expected wait with replyTemplates('approval_pending').",
        ],
        required_tools=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        forbidden_actions=[
            "Do not refund an order outside its return window.",
            "Do not promise a refund date before approval.",
        ],
        source=Source.MINED,
        actor_label="miner",
        skeleton=["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
        evidence={"support": 118, "resolved": 140, "failed": 60, "failedWithSkeleton": 9},
    )


@pytest.fixture
def refund_approver(db, reviewers_group, active_v1):
    from guardian.shortcuts import assign_perm

    from tests.conftest import _user

    user = _user("refund_approver", reviewers_group)
    assign_perm("library.approve_procedure", user, active_v1.procedure)
    return user


def test_diff_against_the_active_version_per_field(reviewer_client, mined_v2, active_v1):
    response = reviewer_client.get(url("version", mined_v2))
    assert response.status_code == 200
    assert response.context["base"] == active_v1
    fields = {f.name: f for f in response.context["fields"]}
    assert not fields["appliesWhen"].has_changed()
    assert fields["steps"].summary == "1 changed, 1 added"
    assert [r.kind for r in fields["steps"].rows] == ["same", "same", "added", "changed"]
    html = response.content.decode()
    # unchanged fields are folded, changed ones open, changes carry signs and labels
    assert re.search(r'<details class="field field-unchanged" data-field="appliesWhen">', html)
    assert 'data-field="steps"' in html and 'class="field field-changed" data-field="steps"' in html
    assert '<span class="sr-only">added</span>' in html and "<ins>" in html
    assert "Comparing <strong>v2</strong> with <strong>v1</strong>" in html


def test_a_new_procedure_says_so(reviewer_client, candidate):
    html = reviewer_client.get(url("version", candidate)).content.decode()
    assert "<strong>New procedure</strong>" in html


def test_diff_against_any_other_version_and_its_partial(reviewer_client, mined_v2, active_v1, reviewer):
    v3 = services.version_revise(
        version=mined_v2,
        user=reviewer,
        applies_when=mined_v2.applies_when,
        steps=mined_v2.steps[:3] + ["Reply."],
        required_tools=mined_v2.required_tools,
        forbidden_actions=mined_v2.forbidden_actions,
    )
    response = reviewer_client.get(url("version", v3) + f"?against={mined_v2.pk}")
    assert response.context["base"] == mined_v2
    partial = reviewer_client.get(url("version", v3) + f"?against={mined_v2.pk}", HTTP_HX_TARGET="diff", **HTMX)
    assert (
        b"<html" not in partial.content and b"Comparing <strong>v3</strong> with <strong>v2</strong>" in partial.content
    )
    assert "HX-Target" in partial["Vary"]


def test_diff_against_a_version_of_another_procedure_is_hidden(reviewer_client, mined_v2, other_procedure):
    foreign = other_procedure.versions.get()
    assert reviewer_client.get(url("version", mined_v2) + f"?against={foreign.pk}").status_code == 404
    assert reviewer_client.get(url("version", mined_v2) + "?against=abc").status_code == 404


def test_evidence_panel_shows_the_contrast_and_skeleton(reviewer_client, mined_v2):
    html = reviewer_client.get(url("version", mined_v2)).content.decode()
    assert "<strong>118 of 140</strong> resolved sessions" in html and "<strong>9 of 60</strong> failed" in html
    assert "<code>createApproval</code>" in html


def test_procedure_text_is_always_escaped(reviewer_client, agent, intent, proposer):
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="xss.test",
        applies_when="When <b>bold</b> things happen.",
        steps=["Reply <script>alert('x')</script> with replyTemplates('x').", "Then <img src=x onerror=alert(1)>."],
        required_tools=["replyTemplates"],
        forbidden_actions=["Do not <i>italicise</i>."],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    thread = Thread.objects.create(version=version, created_by=proposer)
    Comment.objects.create(thread=thread, version=version, author=proposer, body="<script>alert('c')</script>")
    for page in (url("version", version), reverse("reviews:procedure", kwargs={"pk": version.procedure_id}), "/queue/"):
        html = client_for(proposer).get(page).content.decode()
        assert "<script>alert" not in html and "<img src=x" not in html and "<b>bold</b>" not in html
    html = client_for(proposer).get(url("version", version)).content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "&lt;script&gt;alert(&#x27;c&#x27;)&lt;/script&gt;" in html


def test_lint_is_shown(reviewer_client, mined_v2, agent):
    agent.tools = ["lookupOrder", "checkReturnWindow", "replyTemplates"]
    agent.save()
    response = reviewer_client.get(url("version", mined_v2))
    rules = [f.rule for f in response.context["lint"]]
    assert "missing_tool" in rules
    assert 'data-rule="missing_tool"' in response.content.decode()


# ------------------------------------------------------------------------------------------- approve


def test_approve_is_disabled_with_the_reasons_for_a_reviewer(reviewer_client, mined_v2):
    make_passing_eval(mined_v2)
    html = reviewer_client.get(url("version", mined_v2)).content.decode()
    assert re.search(r'<button type="button" class="primary" id="approve-button" disabled', html)
    assert "You do not hold the approve permission" in html
    assert f'href="/versions/{mined_v2.pk}/approve/"' not in html


def test_approve_is_disabled_without_a_passing_eval_even_for_an_approver(refund_approver, mined_v2):
    html = client_for(refund_approver).get(url("version", mined_v2)).content.decode()
    assert 'id="approve-button" disabled' in html and "No passing eval run on this exact content yet." in html


def test_approver_is_offered_approve_and_must_confirm(refund_approver, mined_v2, active_v1):
    make_passing_eval(mined_v2)
    client = client_for(refund_approver)
    html = client.get(url("version", mined_v2)).content.decode()
    assert f'id="approve-button" href="/versions/{mined_v2.pk}/approve/"' in html
    confirm = client.get(url("version_approve", mined_v2), **HTMX)
    assert b"I have read the diff" in confirm.content and confirm["HX-Retarget"] == "#decision"
    # without the confirmation tick nothing happens
    refused = client.post(url("version_approve", mined_v2), {"comment": "ok"})
    assert refused.status_code == 400 and b"Tick the confirmation" in refused.content
    assert ProcedureVersion.objects.get(pk=mined_v2.pk).status == Status.CANDIDATE


def test_approval_makes_it_active_and_the_page_shows_the_retired_one(refund_approver, mined_v2, active_v1):
    make_passing_eval(mined_v2)
    client = client_for(refund_approver)
    response = client.post(url("version_approve", mined_v2), {"confirm": "on", "comment": "looks right"})
    assert response.status_code == 302 and response["Location"] == url("version", mined_v2)
    mined_v2.refresh_from_db()
    active_v1.refresh_from_db()
    assert (mined_v2.status, mined_v2.approved_by, active_v1.status) == (Status.ACTIVE, refund_approver, Status.RETIRED)
    html = client.get(response["Location"]).content.decode()
    assert "is the ACTIVE version: approved by <strong>refund_approver</strong>" in html
    assert "v1 was RETIRED by this approval" in html


def test_approval_by_htmx_returns_the_page_body(refund_approver, mined_v2):
    make_passing_eval(mined_v2)
    response = client_for(refund_approver).post(url("version_approve", mined_v2), {"confirm": "on"}, **HTMX)
    assert response.status_code == 200 and b"<html" not in response.content
    assert b"is the ACTIVE version" in response.content and b"Approved refund.over_limit v2" in response.content


def test_forged_approve_post_by_a_reviewer_is_403(reviewer_client, mined_v2):
    make_passing_eval(mined_v2)
    response = reviewer_client.post(url("version_approve", mined_v2), {"confirm": "on"})
    assert response.status_code == 403
    assert ProcedureVersion.objects.get(pk=mined_v2.pk).status == Status.CANDIDATE


def test_forged_approve_post_without_a_passing_eval_is_409(refund_approver, mined_v2):
    response = client_for(refund_approver).post(url("version_approve", mined_v2), {"confirm": "on"}, **HTMX)
    assert response.status_code == 409 and response["HX-Retarget"] == "#flash"
    assert b"No passing eval run" in response.content
    assert ProcedureVersion.objects.get(pk=mined_v2.pk).status == Status.CANDIDATE


def test_approver_who_edited_the_version_is_refused_403(refund_approver, mined_v2):
    edited = services.version_revise(
        version=mined_v2,
        user=refund_approver,
        applies_when=mined_v2.applies_when + " Edited.",
        steps=mined_v2.steps,
        required_tools=mined_v2.required_tools,
        forbidden_actions=mined_v2.forbidden_actions,
    )
    make_passing_eval(edited)
    client = client_for(refund_approver)
    assert "You made the last edit" in client.get(url("version", edited)).content.decode()
    assert client.post(url("version_approve", edited), {"confirm": "on"}).status_code == 403


def test_approving_twice_is_refused_409(refund_approver, mined_v2):
    make_passing_eval(mined_v2)
    client = client_for(refund_approver)
    assert client.post(url("version_approve", mined_v2), {"confirm": "on"}).status_code == 302
    assert client.post(url("version_approve", mined_v2), {"confirm": "on"}).status_code == 409


# ------------------------------------------------------------------------------------------- reject, comment, edit


def test_reject_with_a_reason(reviewer_client, reviewer, mined_v2):
    assert reviewer_client.post(url("version_reject", mined_v2), {"reason": ""}).status_code == 400
    response = reviewer_client.post(url("version_reject", mined_v2), {"reason": "duplicate of v1"})
    assert response.status_code == 302
    mined_v2.refresh_from_db()
    assert (mined_v2.status, mined_v2.status_reason) == (Status.REJECTED, "duplicate of v1")
    assert "Rejected: duplicate of v1" in reviewer_client.get(url("version", mined_v2)).content.decode()
    assert reviewer_client.post(url("version_reject", mined_v2), {"reason": "again"}).status_code == 409


def test_comment_thread(reviewer_client, reviewer, mined_v2):
    response = reviewer_client.post(url("version_comment", mined_v2), {"body": "Why createApproval first?"}, **HTMX)
    assert response.status_code == 200 and b"<html" not in response.content
    assert b"Why createApproval first?" in response.content and b"<strong>reviewer</strong> on v2" in response.content
    assert AuditEvent.objects.filter(action=AuditEvent.Action.COMMENT, version=mined_v2, actor=reviewer).exists()
    assert reviewer_client.post(url("version_comment", mined_v2), {"body": "   "}).status_code == 400
    assert Comment.objects.filter(version=mined_v2).count() == 1


def test_edit_creates_a_new_version_and_says_the_old_eval_no_longer_counts(reviewer_client, reviewer, mined_v2):
    make_passing_eval(mined_v2)
    form = reviewer_client.get(url("version_edit", mined_v2)).content.decode()
    assert "The old eval no longer counts" in form and "creates a <strong>new candidate version</strong>" in form
    response = reviewer_client.post(
        url("version_edit", mined_v2),
        {
            "applies_when": mined_v2.applies_when,
            "steps": "\n".join(mined_v2.steps[:3] + ["Tell the customer a manager decides within two business days."]),
            "required_tools": mined_v2.required_tools,
            "forbidden_actions": "\n".join(mined_v2.forbidden_actions),
            "reason": "clearer wait",
        },
    )
    v3 = ProcedureVersion.objects.get(procedure=mined_v2.procedure, number=3)
    assert response.status_code == 302 and response["Location"] == url("version", v3)
    assert (v3.status, v3.edited_by, v3.based_on_id) == (Status.CANDIDATE, reviewer, mined_v2.pk)
    mined_v2.refresh_from_db()
    assert mined_v2.status == Status.REJECTED and mined_v2.status_reason == "Superseded by v3"
    page = reviewer_client.get(url("version", v3))
    assert "no longer count" in page.content.decode()
    assert (
        page.context["eval"].run is None
        and "No passing eval run on this exact content yet." in page.context["blockers"]
    )


def test_edit_with_no_change_or_bad_input_shows_the_form_again(reviewer_client, mined_v2):
    same = {
        "applies_when": mined_v2.applies_when,
        "steps": "\n".join(mined_v2.steps),
        "required_tools": mined_v2.required_tools,
        "forbidden_actions": "\n".join(mined_v2.forbidden_actions),
    }
    response = reviewer_client.post(url("version_edit", mined_v2), same)
    assert response.status_code == 400 and b"Nothing changed" in response.content
    response = reviewer_client.post(
        url("version_edit", mined_v2), {**same, "steps": "", "required_tools": ["noSuchTool"]}
    )
    assert response.status_code == 400
    assert set(response.context["form"].errors) == {"steps", "required_tools"}
    assert ProcedureVersion.objects.filter(procedure=mined_v2.procedure).count() == 2


# ------------------------------------------------------------------------------------------- eval panel


def test_eval_panel_shows_the_latest_run_for_this_content_and_polls_while_running(reviewer_client, mined_v2, active_v1):
    EvalRun.objects.create(
        version=mined_v2, content_hash="0" * 64, state=EvalRun.State.DONE, verdict=EvalRun.Verdict.FAIL
    )
    run = EvalRun.objects.create(
        version=mined_v2, content_hash=mined_v2.content_hash, state=EvalRun.State.RUNNING, cases_total=20, cases_done=5
    )
    response = reviewer_client.get(url("version", mined_v2))
    assert response.context["eval"].run == run
    html = response.content.decode()
    assert f'hx-get="/versions/{mined_v2.pk}/eval/" hx-trigger="every 2s"' in html and "5 of 20 cases" in html
    # the polled partial, still running: polling continues, no decision panel sent along
    poll = reviewer_client.get(url("version_eval_panel", mined_v2), **HTMX)
    assert b"every 2s" in poll.content and b"hx-swap-oob" not in poll.content and b"<html" not in poll.content
    # finished: no more polling, the verdict, and the decision panel refreshed out of band
    EvalRun.objects.filter(pk=run.pk).update(
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        cases_done=20,
        verdict_detail={
            "reason": "refund_over_limit improved",
            "intents": {"refund_over_limit": {"baseline": [2, 10], "candidate": [9, 10]}},
        },
    )
    poll = reviewer_client.get(url("version_eval_panel", mined_v2), **HTMX).content.decode()
    assert "every 2s" not in poll and "✓ PASS" in poll and "refund_over_limit improved" in poll
    assert '<div id="decision" hx-swap-oob="true">' in poll and "+70 pts" in poll
    # without htmx the panel URL leads to the page
    assert reviewer_client.get(url("version_eval_panel", mined_v2))["Location"] == url("version", mined_v2) + "#eval"


def test_eval_panel_says_what_the_sign_tests_are_once_and_each_row_only_its_figures(reviewer_client, mined_v2):
    """The review pass found the long sentence about the tests repeated in every intent row."""
    intent = {"paired": 4, "baseline_passed": 2, "candidate_passed": 2, "p_improve": 1.0, "p_regress": 1.0}
    names = ("refund_over_limit", "order_status", "cancel_order")
    EvalRun.objects.create(
        version=mined_v2,
        content_hash=mined_v2.content_hash,
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.FAIL,
        verdict_detail={
            "intents": [{**intent, "intent": name, "p_improve": 0.0625 * (i + 1)} for i, name in enumerate(names)]
        },
    )
    html = reviewer_client.get(url("version", mined_v2)).content.decode()
    panel = html[html.index('<table class="table eval-table">') : html.index('id="eval-tests-words"') + 400]
    assert panel.count("exact one-sided sign tests") == 1 and "beyond chance" not in panel
    assert "two exact one-sided sign tests on the cases whose result changed" in panel
    assert "improved (first) or regressed (second) if the candidate changed nothing" in panel
    for p in ("0.0625", "0.125", "0.188"):
        assert f"p\u00a0=\u00a0{p} / p\u00a0=\u00a01" in panel  # no-break spaces: a figure never wraps


def test_eval_panel_says_when_the_active_set_moved(reviewer_client, mined_v2):
    EvalRun.objects.create(
        version=mined_v2,
        content_hash=mined_v2.content_hash,
        baseline_hash="stale",
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
    )
    html = reviewer_client.get(url("version", mined_v2)).content.decode()
    assert "The active set changed since this run started" in html
    assert "The active set changed since the eval run started; start a new run." in html  # the blocker


def test_start_eval_run_calls_the_eval_service(reviewer_client, mined_v2):
    response = reviewer_client.post(url("version_eval_start", mined_v2), **HTMX)
    assert response.status_code == 200
    run = EvalRun.objects.filter(version=mined_v2).latest("created_at")
    assert run.content_hash == mined_v2.content_hash


# ------------------------------------------------------------------------------------------- query counts


def test_candidate_page_queries_do_not_grow_with_the_queue(
    django_assert_num_queries, refund_approver, mined_v2, agent, intent
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    make_passing_eval(mined_v2)
    client = client_for(refund_approver)
    bulk_candidates(agent, intent, 10, prefix="small")
    first = Thread.objects.create(version=mined_v2, created_by=refund_approver)
    Comment.objects.create(thread=first, version=mined_v2, author=refund_approver, body="first")
    client.get(url("version", mined_v2))  # warm the embedding model and caches
    with CaptureQueriesContext(connection) as small:
        assert client.get(url("version", mined_v2)).status_code == 200
    bulk_candidates(agent, intent, 990, prefix="large")
    threads = Thread.objects.bulk_create(
        [Thread(version=mined_v2, created_by=refund_approver, anchor="step", step=1 + i % 3) for i in range(30)]
    )
    Comment.objects.bulk_create(
        [Comment(thread=t, version=mined_v2, author=refund_approver, body=f"c{i}") for i, t in enumerate(threads)]
    )
    with django_assert_num_queries(len(small.captured_queries)):
        response = client.get(url("version", mined_v2))
    assert response.status_code == 200 and len(response.context["threads"]) == 31
    assert response.context["unresolved_threads"] == 31


def test_a_write_by_htmx_refreshes_the_navigation_counts(refund_approver, mined_v2):
    make_passing_eval(mined_v2)
    client = client_for(refund_approver)
    assert "For my approval" in client.get("/queue/").content.decode()
    html = client.post(url("version_approve", mined_v2), {"confirm": "on"}, **HTMX).content.decode()
    # nothing waits for this approver any more: the counts are swapped out of band, now empty
    assert '<span id="nav-for-me" hx-swap-oob="true"></span>' in html
    assert 'id="nav-queue" hx-swap-oob="true"' in html
