"""reviews/panels.py: the evidence and eval panels take whatever keys exist."""

import pytest

from library.models import AgentSession, EvalRun
from reviews.panels import build_eval_panel, build_evidence, contrast_sentence, intent_results


@pytest.mark.django_db
def test_mined_evidence_gives_the_contrast_skeleton_and_excerpts(candidate, agent):
    session = AgentSession.objects.create(
        agent=agent, session_id="s-1", resolved=True, escalated=False,
        redacted_excerpt=[{"role": "user", "text": "Refund {{order_id}} please"}, {"tool": "lookupOrder", "args": {"order_id": "{{order_id}}"}}],
    )
    candidate.evidence = {"support": 118, "resolved": 140, "failed": 60, "failedWithSkeleton": 9, "sessions": ["s-1"], "minedAt": "2026-11-29"}
    candidate.skeleton = ["lookupOrder", "createApproval"]
    evidence = build_evidence(candidate, [session])
    assert (evidence.support, evidence.resolved, evidence.failed, evidence.failed_with_skeleton) == (118, 140, 60, 9)
    assert evidence.resolved_share == "84%" and evidence.failed_share == "15%"
    assert evidence.skeleton == ["lookupOrder", "createApproval"]
    assert evidence.excerpts[0].outcome == "resolved"
    assert [(line.who, line.text) for line in evidence.excerpts[0].lines][0] == ("user", "Refund {{order_id}} please")
    assert evidence.excerpts[0].lines[1].who == "tool"
    assert evidence.other == [("minedAt", "2026-11-29")]


@pytest.mark.django_db
def test_a_hand_written_version_has_empty_evidence(candidate):
    evidence = build_evidence(candidate)
    assert evidence.is_empty and not evidence.has_contrast


@pytest.mark.django_db
def test_odd_evidence_values_degrade_instead_of_failing(candidate):
    candidate.evidence = {"support": "lots", "resolved": None, "excerpts": ["user: hi", {"text": "inline"}]}
    evidence = build_evidence(candidate)
    assert evidence.support is None and not evidence.has_contrast
    assert [x.lines[0].text for x in evidence.excerpts] == ["user: hi", "inline"]


def test_contrast_sentence_reads_the_numbers():
    assert contrast_sentence({"tool": "createApproval", "resolvedWith": 118, "resolvedTotal": 140, "failedWith": 9, "failedTotal": 60}) == (
        "createApproval: 118 of 140 resolved vs 9 of 60 failed"
    )
    assert contrast_sentence({"weird": 1}) == '{"weird": 1}'


@pytest.mark.django_db
def test_eval_panel_rows_target_first_with_deltas(candidate):
    run = EvalRun(
        version=candidate, content_hash=candidate.content_hash, state=EvalRun.State.DONE, verdict=EvalRun.Verdict.PASS,
        verdict_detail={
            "reason": "refund_over_limit improved (p = 0.004); no other intent got worse.",
            "intents": {
                "order_status": {"baseline": {"passed": 9, "total": 10}, "candidate": {"passed": 9, "total": 10}, "verdict": "unchanged"},
                "refund_over_limit": {"baseline": {"passed": 2, "total": 10}, "candidate": {"passed": 9, "total": 10}, "p_value": 0.0039, "verdict": "improved"},
            },
        },
    )
    rows = intent_results(run, target_intent="refund_over_limit")
    assert [(r.intent, r.baseline, r.candidate, r.delta, r.is_target) for r in rows] == [
        ("refund_over_limit", "2/10", "9/10", "+70 pts", True),
        ("order_status", "9/10", "9/10", "±0", False),
    ]
    assert "p = 0.0039" in rows[0].note
    panel = build_eval_panel(candidate, run, current_active_hash=None)
    assert panel.reason.startswith("refund_over_limit improved") and not panel.in_progress


@pytest.mark.django_db
def test_eval_panel_in_progress_and_baseline_moved(candidate):
    run = EvalRun(version=candidate, content_hash=candidate.content_hash, state=EvalRun.State.RUNNING, cases_total=40, cases_done=10, baseline_hash="old")
    panel = build_eval_panel(candidate, run, current_active_hash="new")
    assert panel.in_progress and panel.percent == 25 and panel.baseline_moved
    assert build_eval_panel(candidate, run, current_active_hash="old").baseline_moved is False
    assert build_eval_panel(candidate, None, current_active_hash=None).run is None


@pytest.mark.django_db
def test_an_approved_versions_run_is_not_reported_as_stale(candidate):
    run = EvalRun(version=candidate, content_hash=candidate.content_hash, state=EvalRun.State.DONE, verdict=EvalRun.Verdict.PASS, baseline_hash="before")
    candidate.status = "ACTIVE"
    assert build_eval_panel(candidate, run, current_active_hash="after").baseline_moved is False
