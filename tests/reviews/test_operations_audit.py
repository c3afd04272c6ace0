"""The audit log page: filters, pagination, the htmx partial, and the CSV export (streamed,
formula cells escaped)."""

from __future__ import annotations

import csv
import io

import pytest
from django.urls import reverse

from library.models import AuditEvent
from library.services import audit
from reviews.audit import csv_cell
from tests.reviews.operations_helpers import activate

pytestmark = pytest.mark.django_db


def _csv(response) -> list[list[str]]:
    assert response.streaming
    body = b"".join(response.streaming_content).decode("utf-8")
    return list(csv.reader(io.StringIO(body)))


@pytest.mark.parametrize(
    "value, expected",
    [
        ('=HYPERLINK("http://evil","x")', '\'=HYPERLINK("http://evil","x")'),
        ("+1+2", "'+1+2"),
        ("-2+3", "'-2+3"),
        ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
        ("\t=1", "'\t=1"),
        ("\r=1", "'\r=1"),
        ("plain reason", "plain reason"),
        ("a=b", "a=b"),
        (None, ""),
        (3, "3"),
        ({"status": "ACTIVE"}, '{"status": "ACTIVE"}'),
    ],
)
def test_csv_cell_escapes_formula_starts(value, expected):
    assert csv_cell(value) == expected


def test_csv_export_escapes_formulas_in_every_column(client, admin_user, agent, candidate):
    audit(
        action=AuditEvent.Action.RETIRE,
        actor_label="=cmd|' /C calc'!A0",
        agent=agent,
        procedure=candidate.procedure,
        reason="@SUM(1+1)*cmd",
        before={"x": 1},
        after={},
    )
    audit(action=AuditEvent.Action.RETIRE, actor=admin_user, agent=agent, reason="-1+1", after={"status": "RETIRED"})
    client.force_login(admin_user)
    rows = _csv(client.get(reverse("reviews:ops_audit_csv"), {"action": "retire"}))
    assert rows[0] == ["at", "action", "who", "agent", "procedure", "version", "reason", "before", "after"]
    data = sorted(rows[1:], key=lambda r: r[2])
    assert [(r[2], r[6]) for r in data] == [("'=cmd|' /C calc'!A0", "'@SUM(1+1)*cmd"), ("admin", "'-1+1")]
    assert data[0][4] == "refund.over_limit" and data[1][8] == '{"status": "RETIRED"}'
    for row in rows[1:]:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r"))


def test_csv_export_applies_the_filters(client, admin_user, agent, candidate, approver):
    activate(candidate, approver)
    client.force_login(admin_user)
    rows = _csv(client.get(reverse("reviews:ops_audit_csv"), {"user": "approver"}))
    assert [r[1] for r in rows[1:]] == ["approve"]
    response = client.get(reverse("reviews:ops_audit_csv"))
    assert response["Content-Type"].startswith("text/csv")
    assert 'attachment; filename="procmem-audit-' in response["Content-Disposition"]


def test_audit_filters_by_agent_procedure_user_and_action(
    client, admin_user, agent, candidate, other_procedure, approver
):
    activate(candidate, approver)
    client.force_login(admin_user)
    url = reverse("reviews:ops_audit")

    def actions(**params):
        return [(e.action, e.procedure.key if e.procedure else None) for e in client.get(url, params).context["page"]]

    assert actions(procedure="refund.over_limit") == [
        ("approve", "refund.over_limit"),
        ("propose", "refund.over_limit"),
    ]
    assert actions(user="approver") == [("approve", "refund.over_limit")]
    assert actions(action="propose") == [("propose", "order.status"), ("propose", "refund.over_limit")]
    assert actions(agent="support_agent", action="approve", user="proposer") == []
    assert len(actions(agent="support_agent")) == 3
    assert actions(agent="no_such_agent") == []


def test_audit_paginates_and_the_htmx_request_gets_only_the_results(client, admin_user, agent):
    for i in range(60):
        audit(action=AuditEvent.Action.SETTINGS, actor=admin_user, agent=agent, reason=f"change {i}")
    client.force_login(admin_user)
    first = client.get(reverse("reviews:ops_audit"))
    assert first.context["page"].paginator.num_pages == 3 and len(first.context["page"]) == 25
    assert first.context["page"][0].reason == "change 59"
    second = client.get(
        reverse("reviews:ops_audit"), {"page": 3}, headers={"HX-Request": "true", "HX-Target": "audit-results"}
    )
    html = second.content.decode()
    assert "<html" not in html and html.strip().startswith('<div id="audit-results">')
    assert "change 0" in html and "change 59" not in html
    assert "HX-Request" in second["Vary"]


def test_audit_access(client, outsider, reviewer, agent):
    url, csv_url = reverse("reviews:ops_audit"), reverse("reviews:ops_audit_csv")
    assert reverse("login") in client.get(url)["Location"]
    assert reverse("login") in client.get(csv_url)["Location"]
    htmx = client.get(url, headers={"HX-Request": "true"})
    assert htmx.status_code == 200 and reverse("login") in htmx["HX-Redirect"]
    client.force_login(outsider)
    assert client.get(url).status_code == 404
    assert client.get(csv_url).status_code == 404
    client.force_login(reviewer)
    assert client.get(url).status_code == 200


def test_audit_page_shows_before_and_after_per_field(client, admin_user, agent, candidate, approver):
    from library import services

    version = activate(candidate, approver)
    services.version_retire(version=version, user=admin_user, reason="=not a formula here")
    client.force_login(admin_user)
    page = client.get(reverse("reviews:ops_audit"), {"action": "retire"})
    (event,) = page.context["page"]
    # the retirement records that no retirement eval was run (issue 27): eval skipped
    assert event.changes == [("eval", "", "skipped"), ("status", "ACTIVE", "RETIRED"), ("version", "1", "1")]
    assert '<span class="before">ACTIVE</span> → <span class="after">RETIRED</span>' in page.content.decode()
    assert "version:</span> <span>1</span>" in page.content.decode()  # unchanged: shown once


def test_an_outcome_change_shows_the_session_id_verbatim_and_only_what_changed(client, admin_user, agent):
    """A label change shows "hA-otel-1 · rating: 5.0 → 4.0": the id as sent (not "h a-otel-1"), the
    one field that changed, not the same cut prefix on both sides."""
    label = {"resolved": True, "escalated": False, "rating": 5.0, "pendingUntil": None}
    audit(
        action=AuditEvent.Action.OUTCOMES,
        actor=admin_user,
        agent=agent,
        reason="1 outcome via api: 1 label changed",
        before={"hA-otel-1": label},
        after={"hA-otel-1": {**label, "rating": 4.0}},
    )
    client.force_login(admin_user)
    page = client.get(reverse("reviews:ops_audit"), {"action": "outcomes"})
    (event,) = page.context["page"]
    assert event.changes == [("hA-otel-1 · rating", "5.0", "4.0")]
    html = page.content.decode()
    assert 'hA-otel-1 · rating:</span> <span class="before">5.0</span> → <span class="after">4.0</span>' in html
    assert "h a-otel-1" not in html


def test_a_case_change_shows_its_keys_in_words_and_tool_names_verbatim(client, admin_user, agent):
    before = {"case": 7, "intent": "order_status", "expected_tools": ["lookupOrder"], "is_active": True}
    audit(
        action=AuditEvent.Action.CASE_CHANGE,
        actor=admin_user,
        agent=agent,
        reason="edited",
        before=before,
        after={**before, "expected_tools": ["lookupOrder", "createApproval"], "is_active": False},
    )
    client.force_login(admin_user)
    (event,) = client.get(reverse("reviews:ops_audit"), {"action": "case_change"}).context["page"]
    assert event.changes == [  # in the order of the keys (case, expected_tools, intent, is_active)
        ("case", "7", "7"),
        ("expected tools", "lookupOrder", "lookupOrder, createApproval"),
        ("intent", "order_status", "order_status"),
        ("active", "yes", "no"),
    ]


def test_a_row_with_many_fields_shows_four_and_folds_the_rest(client, admin_user, agent):
    # an imported regression case has a dozen fields: the row stays short, the rest one click away
    after = {f"field_{index:02}": f"value {index}" for index in range(12)}
    audit(action=AuditEvent.Action.CASE_CHANGE, actor=admin_user, agent=agent, reason="imported", after=after)
    client.force_login(admin_user)
    html = client.get(reverse("reviews:ops_audit"), {"action": "case_change"}).content.decode()
    row = html[html.index('<td class="changes">') :]
    row = row[: row.index("</td>")]
    folded = row[row.index('<details class="more-changes">') :]
    assert row.count("<div>") == 12 and folded.count("<div>") == 8
    # the summary names what it folds, not "8 more fields" (the review pass could not tell what hid there)
    summary = "<summary>also field 04, field 05, field 06, field 07 and 4 other fields</summary>"
    assert summary in folded and folded.endswith("</details>")


def test_a_folded_summary_names_the_fields_and_counts_the_figures():
    from reviews.audit import fold_changes

    named = [(f"field {index}", "", "x") for index in range(6)]
    assert fold_changes(named[:5]).folded == []  # five fit: folding one would not save a line
    assert fold_changes(named).folded_summary == "also field 4 and field 5"
    figures = [("", f"{index} resolved", f"{index} resolved") for index in range(2, 8)]
    assert fold_changes(named[:5] + figures[:1]).folded_summary == "also field 4 and 1 more figure"


def test_a_long_text_changed_deep_inside_is_cut_to_where_it_differs():
    from reviews.audit import focused

    before = "Look up the order with lookupOrder and read its status to the customer. " * 3 + "Then close."
    after = before.replace("Then close.", "Then ask whether anything else is needed.")
    old, new = focused(before, after)
    assert old != new and old.startswith("…") and new.startswith("…")
    assert "Then close." in old and "Then ask whether" in new


def test_a_mining_run_reads_in_words_without_its_snapshot_keys(client, admin_user):
    """The review pass found "versions: 7" (a version's id) and "counts · …: 0" on the demo's mining row."""
    from library.demo import seed_demo

    # given the demo's mining run (one candidate, refund.over_limit v2)
    agent = seed_demo().agent
    event = AuditEvent.objects.get(action=AuditEvent.Action.MINE, agent=agent)
    counts = event.after["counts"]
    client.force_login(admin_user)
    # when
    page = client.get(reverse("reviews:ops_audit"), {"action": "mine"})
    # then
    (row,) = page.context["page"]
    html = page.content.decode()
    cell = html[html.index('<td class="changes">') :]
    cell = cell[: cell.index("</td>")]
    assert "<div><span>1 version proposed</span></div>" in cell
    assert f"<div><span>{counts['sessions']:,} sessions</span></div>" in cell
    assert f"{counts['withoutIntent']} without an intent (not mined)" in cell
    # every count in view as one sentence, not folded behind "15 more fields"; a count of 0 left out
    assert "<details" not in cell and "more fields" not in cell
    assert f"{counts['resolved']} resolved, {counts['failed']} failed" in cell
    assert counts["quarantined"] == 0 and "quarantined" not in cell
    assert ("mining run", "", str(event.after["miningRun"])) in row.changes
    for raw in ("versions:", "counts", "withoutIntent", "tooFewToolCalls", "miningRun", " · "):
        assert raw not in cell, raw


def test_an_unknown_nested_key_reads_in_words_not_as_a_path(client, admin_user, agent):
    # given a snapshot the page has no reader for, with a nested object under a camelCase key
    audit(action=AuditEvent.Action.SETTINGS, actor=admin_user, agent=agent, after={"webhookTargets": {"retryCount": 3}})
    client.force_login(admin_user)
    (event,) = client.get(reverse("reviews:ops_audit"), {"action": "settings"}).context["page"]
    assert event.changes == [("webhook targets · retry count", "", "3")]


def test_a_finished_eval_run_reads_its_totals_in_words(client, admin_user, agent):
    totals = {
        "cases": 8,
        "paired": 7,
        "errors": 1,
        "baseline_passed": 3,
        "candidate_passed": 6,
        "improved": 3,
        "regressed": 0,
    }
    after = {"run": 4, "state": "done", "verdict": "pass", "totals": totals}
    audit(action=AuditEvent.Action.EVAL_FINISH, actor_label="eval", agent=agent, after=after)
    client.force_login(admin_user)
    (event,) = client.get(reverse("reviews:ops_audit"), {"action": "eval_finish"}).context["page"]
    said = [what for key, what, _ in event.changes if not key]
    assert said == [
        "8 cases",
        "passed without the candidate: 3 of 7 paired",
        "passed with it: 6 of 7 paired",
        "3 improved",
        "0 regressed",
        "1 error",
    ]
    assert ("verdict", "", "pass") in event.changes and not any("totals" in key for key, _, _ in event.changes)
