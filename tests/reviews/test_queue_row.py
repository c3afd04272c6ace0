"""One row of the queue as the page shows it (reviews/views/queue_row.py reads what it
shows in one query and builds its HTML): what people and miners wrote is escaped,
the claim cell, the eval pill, the comment count, the evidence and the group headers."""

from datetime import timedelta

import pytest
from django.utils import timezone

from library import services
from library.models import EvalRun, Source
from reviews.models import CandidateClaim
from reviews.services import candidate_claim, comment_create
from tests.reviews.conftest import client_for

pytestmark = pytest.mark.django_db
QUEUE = "/queue/"


def _row(html: str, key: str) -> str:
    """The <tr> of the procedure `key` in the page."""
    start = html.index(f"<strong>{key}</strong>")
    return html[html.rindex("<tr data-queue-row", 0, start) : html.index("</tr>", start) + len("</tr>")]


def test_a_row_escapes_what_people_and_miners_wrote(agent, intent, proposer, reviewer):
    services.procedure_propose(
        agent=agent,
        intent=intent,
        key="odd.text",
        applies_when="When <script>alert(\"x\")</script> & 'y' happens.",
        steps=["Reply with replyTemplates('x')."],
        required_tools=["replyTemplates"],
        forbidden_actions=[],
        source=Source.IMPORTED,
        actor_label="test",
        evidence={"support": 3, "resolved": "<b>9</b>"},
    )
    row = _row(client_for(reviewer).get(QUEUE).content.decode(), "odd.text")
    assert "<script>" not in row and "<b>" not in row
    assert "When &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#x27;y&#x27; happens." in row
    assert (
        '<span title="resolved tasks or sessions that follow it">3</span>'
        '<span class="muted small"> of &lt;b&gt;9&lt;/b&gt; resolved</span>' in row
    )


def test_every_field_a_row_shows_is_escaped(agent, intent, proposer, reviewer):
    """'<script>' in every text a row shows that someone wrote or named: the procedure id, the
    appliesWhen, the agent's and intent's names, the proposer's and the claimant's user names and
    the evidence (written here past the forms' validation, as a bulk insert or an import could)."""
    from django.contrib.auth import get_user_model

    from library.models import Agent, Intent, Procedure, ProcedureVersion

    script = '<script>alert("x")</script>'
    version = services.procedure_propose(
        agent=agent,
        intent=intent,
        key="odd.fields",
        applies_when=f"When {script} happens.",
        steps=["Reply with replyTemplates('x')."],
        required_tools=["replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
        evidence={"support": 3, "resolved": script},
    )
    Procedure.objects.filter(pk=version.procedure_id).update(key=f"odd.{script}")
    Agent.objects.filter(pk=agent.pk).update(name=f"agent{script}")
    Intent.objects.filter(pk=intent.pk).update(name=f"intent{script}")
    get_user_model().objects.filter(pk=proposer.pk).update(username=f"proposer{script}")
    claimant = get_user_model().objects.get(pk=reviewer.pk)
    candidate_claim(version=ProcedureVersion.objects.get(pk=version.pk), user=claimant)
    get_user_model().objects.filter(pk=reviewer.pk).update(username=f"claimant{script}")
    page = client_for(proposer).get(QUEUE).content.decode()
    start = page.index("<tr data-queue-row")
    rows = page[start : page.rindex("</tr>")]
    assert "<script>" not in rows
    escaped = "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"
    for shown in (
        f"odd.{escaped}",
        f"When {escaped} happens.",
        f"agent{escaped}",
        f"intent{escaped}",
        f"by proposer{escaped}",
        f">claimant{escaped}</span>",
        f" of {escaped} resolved</span>",
    ):
        assert shown in rows, shown


def test_the_claim_cell_says_who_holds_the_candidate(candidate, reviewer, proposer, outsider):
    candidate_claim(version=candidate, user=reviewer)
    mine = _row(client_for(reviewer).get(QUEUE).content.decode(), "refund.over_limit")
    assert '<span class="claimed claimed-me"' in mine and ">you</span>" in mine
    assert f'data-release="{candidate.pk}"' in mine and "data-claim" not in mine
    theirs = _row(client_for(proposer).get(QUEUE).content.decode(), "refund.over_limit")
    assert '<span class="claimed"' in theirs and ">reviewer</span>" in theirs
    assert "data-release" not in theirs and "data-claim" not in theirs
    # a member who may not review sees who holds it, and neither a checkbox nor a button
    row = _row(client_for(outsider).get(QUEUE).content.decode(), "refund.over_limit")
    assert ">reviewer</span>" in row and 'type="checkbox"' not in row and "<button" not in row


def test_an_expired_claim_leaves_the_candidate_free_to_claim(candidate, reviewer, proposer):
    candidate_claim(version=candidate, user=reviewer)
    now = timezone.now()
    CandidateClaim.objects.filter(version=candidate).update(
        claimed_at=now - timedelta(hours=30), expires_at=now - timedelta(hours=6)
    )
    row = _row(client_for(proposer).get(QUEUE).content.decode(), "refund.over_limit")
    assert "claimed" not in row.split('claim-cell">')[1]
    assert f'data-claim="{candidate.pk}">Claim</button>' in row


@pytest.mark.parametrize(
    ("runs", "pill"),
    [
        ([], '<span class="muted">none</span>'),
        ([("queued", "")], '<span class="pill pill-running">⟳ queued</span>'),
        ([("done", "fail")], '<span class="pill pill-fail">✗ fail</span>'),
        ([("failed", "")], '<span class="pill">failed</span>'),
        # the latest run counts, and a passing one of the same content whatever came after
        ([("done", "pass"), ("failed", "")], '<span class="pill pill-pass">✓ passing</span>'),
    ],
)
def test_the_eval_pill_shows_the_current_contents_runs(candidate, reviewer, runs, pill):
    for state, verdict in runs:
        EvalRun.objects.create(version=candidate, content_hash=candidate.content_hash, state=state, verdict=verdict)
    # a run of other content does not count
    EvalRun.objects.create(version=candidate, content_hash="older", state="running")
    assert pill in _row(client_for(reviewer).get(QUEUE).content.decode(), "refund.over_limit")


def test_a_row_counts_the_comments_on_its_version(candidate, reviewer, proposer):
    page = client_for(reviewer).get(QUEUE).content.decode()
    assert "💬" not in _row(page, "refund.over_limit")
    comment_create(version=candidate, user=reviewer, body="Looks right.")
    comment_create(version=candidate, user=proposer, body="Thanks.")
    row = _row(client_for(reviewer).get(QUEUE).content.decode(), "refund.over_limit")
    assert '<span class="muted small" title="comments on this version">💬 2</span>' in row


def test_sorted_by_group_each_intent_gets_a_header(candidate, other_procedure, reviewer):
    page = client_for(reviewer).get(QUEUE + "?sort=group").content.decode()
    assert page.index('<th colspan="8">support_agent · order_status</th>') < page.index("<strong>order.status</strong>")
    assert page.index('<th colspan="8">support_agent · refund_over_limit</th>') < page.index(
        "<strong>refund.over_limit</strong>"
    )


def test_a_candidate_proposed_this_minute_has_waited_just_now(candidate, reviewer, monkeypatch):
    # timesince wrote "0 minutes" for the demo's freshly mined candidate
    client = client_for(reviewer)
    row = _row(client.get(QUEUE).content.decode(), "refund.over_limit")
    assert ">just now</span>" in row and "0 minutes" not in row
    later = candidate.created_at + timedelta(minutes=5, seconds=1)
    monkeypatch.setattr("reviews.views.queue_row.timezone.now", lambda: later)
    row = _row(client.get(QUEUE).content.decode(), "refund.over_limit")
    assert ">5\xa0minutes</span>" in row


def test_the_evidence_cell_says_what_it_counts_and_when_there_is_none(candidate, reviewer):
    """The demo's queue read "—" for a hand-written candidate and a bare "118 of 140" for the mined one."""
    row = _row(client_for(reviewer).get(QUEUE).content.decode(), candidate.procedure.key)
    assert "—" not in row
    assert '<span class="muted" title="no mined evidence: written by hand, imported or captured">none</span>' in row
