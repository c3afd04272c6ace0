"""reviews/panels.py: the evidence and eval panels take whatever keys exist."""

import pytest
from django.template.loader import render_to_string

from library.models import AgentSession, EvalRun
from reviews.panels import (
    Evidence,
    Excerpt,
    ExcerptLine,
    build_eval_panel,
    build_evidence,
    contrast_sentence,
    intent_results,
)

MINED = {  # the shape library/mining/drafting.py stores
    "intent": "refund_over_limit",
    "skeleton": ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"],
    "support": 118,
    "resolved": 140,
    "failed": 60,
    "failedWithSkeleton": 9,
    "supportRate": 0.843,
    "failedWithSkeletonRate": 0.15,
    "skeletonLift": 5.6,
    "escalatedExcluded": 12,
    "withoutOutcome": 3,
    "tools": [
        {"tool": "lookupOrder", "resolved": 140, "failed": 60, "lift": 1.0, "inSkeleton": True},
        {"tool": "createApproval", "resolved": 118, "failed": 9, "lift": 5.6, "inSkeleton": True},
        {"tool": "issueRefund", "resolved": 2, "failed": 30, "lift": 0.03, "inSkeleton": False},
    ],
    "pairs": [
        {
            "before": "createApproval",
            "after": "replyTemplates",
            "resolved": 118,
            "failed": 9,
            "lift": 5.6,
            "inSkeleton": True,
        }
    ],
    "forbidden": [
        {
            "action": "Do not promise a refund date before approval.",
            "feature": "calls replyTemplates with no createApproval before it",
            "resolved": 4,
            "failed": 51,
            "failLift": 12.1,
        }
    ],
    "alternatives": [{"skeleton": ["lookupOrder", "replyTemplates"], "support": 22}],
    "sessionIds": ["s-1", "s-2", "s-3", "s-4"],
    "excerpts": [
        {
            "sessionId": "s-1",
            "excerpt": [
                {"role": "user", "text": "Refund {{order_id}} please, it was {{amount}}"},
                {"role": "tool_call", "tool": "lookupOrder", "args": {"order_id": "{{order_id}}"}, "ok": True},
                {"role": "tool_call", "tool": "createApproval", "args": {}, "ok": False},
                {"role": "note", "text": "2 more tool calls"},
            ],
        }
    ],
    "summary": "118 of 140 resolved sessions followed lookupOrder → checkReturnWindow → createApproval → replyTemplates; 9 of 60 failed sessions did.",
}


@pytest.mark.django_db
def test_mined_evidence_gives_the_contrast_skeleton_and_excerpts(candidate):
    candidate.evidence = MINED
    candidate.skeleton = MINED["skeleton"]
    evidence = build_evidence(candidate)
    assert (evidence.support, evidence.resolved, evidence.failed, evidence.failed_with_skeleton) == (118, 140, 60, 9)
    assert evidence.resolved_share == "84 %" and evidence.failed_share == "15 %"
    assert evidence.summary.startswith("118 of 140 resolved sessions followed")
    assert evidence.tool_lines[0] == "createApproval: 118 of 140 resolved vs 9 of 60 failed (lift 5.6)"
    assert (
        evidence.tool_lines[-1] == "issueRefund (not in the procedure): 2 of 140 resolved vs 30 of 60 failed (lift 0.0)"
    )
    assert evidence.order_lines == [
        "createApproval before replyTemplates: 118 of 140 resolved vs 9 of 60 failed (lift 5.6)"
    ]
    assert evidence.forbidden_lines[0].startswith(
        "“Do not promise a refund date before approval.” — sessions in which the agent calls replyTemplates"
    )
    assert evidence.alternatives == ["lookupOrder → replyTemplates (22 sessions)"]
    [excerpt] = evidence.excerpts
    assert excerpt.title == "session s-1" and evidence.session_count == 4
    # the miner quotes resolved sessions only: its excerpts say so (others may quote anything)
    assert excerpt.outcome == ""
    candidate.evidence = {**MINED, "skeletonTest": {"lift": 5.6}}
    assert [x.outcome for x in build_evidence(candidate).excerpts] == ["resolved"]
    candidate.evidence = MINED
    assert [(line.who, line.text) for line in excerpt.lines] == [
        ("user", "Refund {{order_id}} please, it was {{amount}}"),
        ("tool call", 'lookupOrder({"order_id": "{{order_id}}"})'),
        ("tool call", "createApproval({})  ✗ failed"),
        ("note", "2 more tool calls"),
    ]
    assert dict(evidence.other) == {"escalated sessions left out": "12", "without outcome": "3"}


STATISTICS = {  # what the miner adds: distinct tasks, intervals, p-values, a backtest
    **MINED,
    "unit": "distinct tasks",
    "skeletonTest": {
        "resolved": 118,
        "resolvedOf": 140,
        "failed": 0,
        "failedOf": 60,
        "lift": "inf",
        "liftLow": 5.1,
        "liftHigh": None,
        "pValue": 1e-30,
        "pAdjusted": 4e-30,
        "tests": 4,
        "alpha": 0.05,
        "credible": True,
        "resolvedRate": {"count": 118, "of": 140, "rate": 0.8429, "low": 0.7735, "high": 0.8939},
        "failedRate": {"count": 0, "of": 60, "rate": 0.0, "low": 0.0, "high": 0.0602},
    },
    "tools": [
        {
            "tool": "createApproval",
            "resolved": 118,
            "failed": 9,
            "lift": 5.619,
            "liftLow": 2.7,
            "liftHigh": 12.4,
            "pValue": 3e-21,
            "inSkeleton": True,
        }
    ],
    "backtest": {
        "share": 0.25,
        "heldBackSessions": 66,
        "heldBackTasks": 66,
        "verdict": "contradicts",
        "contradicted": True,
        "pValue": 0.9,
        "followers": {"count": 8, "of": 33, "rate": 0.2424, "low": 0.128, "high": 0.41},
        "others": {"count": 30, "of": 33, "rate": 0.9091, "low": 0.764, "high": 0.969},
    },
    "variants": [
        {
            "skeleton": ["lookupOrder", "verifyIdentity", "createApproval"],
            "support": 25,
            "supportSessions": 30,
            "failedTasks": 1,
            "differs": "adds verifyIdentity",
        }
    ],
    "arguments": [
        {
            "step": 4,
            "tool": "replyTemplates",
            "key": "template",
            "value": "approval_pending",
            "resolved": 118,
            "resolvedOf": 118,
            "failed": 0,
            "failedOf": 60,
            "pValue": 1e-40,
            "separates": True,
        }
    ],
}


@pytest.mark.django_db
def test_mined_statistics_and_backtest_are_shown(candidate, client, reviewer):
    candidate.evidence = STATISTICS
    evidence = build_evidence(candidate)
    assert evidence.unit == "tasks"
    assert (
        evidence.tool_lines[0]
        == "createApproval: 118 of 140 resolved vs 9 of 60 failed (lift 5.6, 95 % 2.70–12.40, p < 0.001)"
    )
    assert evidence.statistics.startswith(
        "Skeleton: lift ∞, 95 % 5.10–∞, p < 0.001; Bonferroni-adjusted p < 0.001 over 4"
    )
    assert evidence.rate_lines[0] == "Share of resolved tasks that followed it: 84 % (95 % 77–89 %)"
    assert (
        evidence.backtest["contradicted"] and evidence.backtest["followers"] == "8 of 33 succeeded, 24 % (95 % 13–41 %)"
    )
    assert evidence.variant_lines[0].startswith("lookupOrder → verifyIdentity → createApproval: 25 tasks (30 sessions)")
    assert "separates the outcomes" in evidence.argument_lines[0]


@pytest.mark.django_db
def test_evidence_that_only_names_sessions_shows_their_stored_excerpts(candidate, agent):
    from reviews.selectors import evidence_sessions

    AgentSession.objects.create(
        agent=agent,
        session_id="s-9",
        resolved=True,
        escalated=False,
        redacted_excerpt=[{"role": "user", "text": "Where is {{order_id}}?"}],
    )
    candidate.evidence = {"sessionIds": ["s-9", "gone", 7]}
    sessions = evidence_sessions(candidate)
    assert [s.session_id for s in sessions] == ["s-9"]
    evidence = build_evidence(candidate, sessions)
    assert evidence.excerpts[0].outcome == "resolved" and evidence.excerpts[0].lines[0].text == "Where is {{order_id}}?"
    candidate.evidence = MINED  # inline excerpts: no session query at all
    assert evidence_sessions(candidate) == []


@pytest.mark.django_db
def test_a_hand_written_version_has_empty_evidence(candidate):
    evidence = build_evidence(candidate)
    assert evidence.is_empty and not evidence.has_contrast


@pytest.mark.django_db
def test_odd_evidence_values_degrade_instead_of_failing(candidate):
    candidate.evidence = {
        "support": "lots",
        "resolved": None,
        "tools": ["x", {"tool": "t"}],
        "excerpts": ["user: hi", {"text": "inline"}],
    }
    evidence = build_evidence(candidate)
    assert evidence.support is None and not evidence.has_contrast
    assert [x.lines[0].text for x in evidence.excerpts] == ["user: hi", "inline"]


def test_contrast_sentence_reads_the_numbers():
    assert contrast_sentence(
        {"tool": "createApproval", "resolvedWith": 118, "resolvedTotal": 140, "failedWith": 9, "failedTotal": 60}
    ) == ("createApproval: 118 of 140 resolved vs 9 of 60 failed")
    assert contrast_sentence({"weird": 1}) == '{"weird": 1}'


@pytest.mark.django_db
def test_eval_panel_rows_target_first_with_deltas(candidate):
    run = EvalRun(
        version=candidate,
        content_hash=candidate.content_hash,
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        verdict_detail={
            "reason": "refund_over_limit improved (p = 0.004); no other intent got worse.",
            "intents": {
                "order_status": {
                    "baseline": {"passed": 9, "total": 10},
                    "candidate": {"passed": 9, "total": 10},
                    "verdict": "unchanged",
                },
                "refund_over_limit": {
                    "baseline": {"passed": 2, "total": 10},
                    "candidate": {"passed": 9, "total": 10},
                    "p_value": 0.0039,
                    "verdict": "improved",
                },
            },
        },
    )
    rows = intent_results(run, target_intent="refund_over_limit")
    assert [(r.intent, r.baseline, r.candidate, r.delta, r.is_target) for r in rows] == [
        ("refund_over_limit", "2/10", "9/10", "+70 pts", True),
        ("order_status", "9/10", "9/10", "±0 pts", False),
    ]
    assert "p = 0.0039" in rows[0].note
    panel = build_eval_panel(candidate, run, current_set_hash=None)
    assert panel.reason.startswith("refund_over_limit improved") and not panel.in_progress


@pytest.mark.django_db
def test_eval_panel_in_progress_and_baseline_moved(candidate):
    run = EvalRun(
        version=candidate,
        content_hash=candidate.content_hash,
        state=EvalRun.State.RUNNING,
        cases_total=40,
        cases_done=10,
        baseline_hash="old",
    )
    panel = build_eval_panel(candidate, run, current_set_hash="new")
    assert panel.in_progress and panel.percent == 25 and panel.baseline_moved
    assert build_eval_panel(candidate, run, current_set_hash="old").baseline_moved is False
    assert build_eval_panel(candidate, None, current_set_hash=None).run is None


@pytest.mark.django_db
def test_an_approved_versions_run_is_not_reported_as_stale(candidate):
    run = EvalRun(
        version=candidate,
        content_hash=candidate.content_hash,
        state=EvalRun.State.DONE,
        verdict=EvalRun.Verdict.PASS,
        baseline_hash="before",
    )
    candidate.status = "ACTIVE"
    assert build_eval_panel(candidate, run, current_set_hash="after").baseline_moved is False


@pytest.mark.django_db
def test_eval_panel_reads_the_eval_runners_verdict_detail(candidate):
    """The shape library.evals.eval_runs stores (library.evals.verdict.judge)."""
    detail = {
        "verdict": "pass",
        "reasons": ["refund_over_limit improved: 1 → 4 of 4 (p = 0.0625).", "No other intent got worse."],
        "target_intent": "refund_over_limit",
        "test": "McNemar's exact test (binomial, p = 1/2, one-sided per direction)",
        "thresholds": {"alpha": 0.1, "min_cases": 4},
        "intents": [
            {
                "intent": "refund_over_limit",
                "target": True,
                "cases": 4,
                "paired": 4,
                "errors": 0,
                "baseline_passed": 1,
                "candidate_passed": 4,
                "improved": 3,
                "regressed": 0,
                "p_improve": 0.0625,
                "p_regress": 1.0,
                "baseline_rate": 0.25,
                "candidate_rate": 1.0,
                "status": "improved",
                "notes": [],
            },
            {
                "intent": "order_status",
                "target": False,
                "cases": 3,
                "paired": 3,
                "errors": 1,
                "baseline_passed": 3,
                "candidate_passed": 3,
                "improved": 0,
                "regressed": 0,
                "p_improve": 1.0,
                "p_regress": 1.0,
                "baseline_rate": 1.0,
                "candidate_rate": 1.0,
                "status": "unchanged",
                "notes": ["1 case errored"],
            },
        ],
    }
    run = EvalRun(
        version=candidate,
        content_hash=candidate.content_hash,
        state=EvalRun.State.DONE,
        verdict="pass",
        verdict_detail=detail,
    )
    panel = build_eval_panel(candidate, run, current_set_hash=None)
    assert panel.reason == "refund_over_limit improved: 1 → 4 of 4 (p = 0.0625). No other intent got worse."
    target, other = panel.rows
    assert (target.intent, target.baseline, target.candidate, target.delta, target.verdict, target.is_target) == (
        "refund_over_limit",
        "1/4",
        "4/4",
        "+75 pts",
        "improved",
        True,
    )
    assert "p\u00a0=\u00a00.0625 / p\u00a0=\u00a01" in target.note and target.sign_tests
    assert "3 improved" in target.note and "sign test" not in target.note  # said once, under the table
    assert "improved (first) or regressed (second)" in panel.tests_words
    assert (other.baseline, other.candidate, other.delta, other.verdict) == ("3/3", "3/3", "±0 pts", "unchanged")
    assert "1 error;" in other.note and "1 case errored" in other.note
    assert ("alpha", "0.1") in panel.thresholds and panel.thresholds[-1][0] == "test"


def test_one_session_reads_in_the_singular():
    from reviews.panels import _sides

    one = {"followers": {"count": 1, "of": 1}, "others": {"count": 0, "of": 1}}
    assert _sides(one) == "1 of 1 session that follows it succeeded vs 0 of 1 that does not"
    many = {"followers": {"count": 2, "of": 3}, "others": {"count": 0, "of": 4}}
    assert _sides(many) == "2 of 3 sessions that follow it succeeded vs 0 of 4 that do not"


def test_a_coding_sessions_commands_and_output_are_shown_as_code():
    # the SWE-bench excerpts' file listings and diffs were set in the page's proportional font
    lines = [
        ExcerptLine("user", "model_to_dict() returns all fields"),
        ExcerptLine("read", "cat django/forms/models.py"),
    ]
    page = render_to_string(
        "reviews/_evidence.html", {"evidence": Evidence(coding=True, excerpts=[Excerpt("s", lines)])}
    )
    assert '<span class="text">model_to_dict() returns all fields</span>' in page  # the issue stays prose
    assert '<span class="text code">cat django/forms/models.py</span>' in page
    chat = render_to_string("reviews/_evidence.html", {"evidence": Evidence(excerpts=[Excerpt("s", lines)])})
    assert "text code" not in chat
