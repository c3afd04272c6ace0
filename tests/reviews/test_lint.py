"""reviews/lint.py: each rule on a case that triggers it and one that does not."""

import pytest

from reviews.lint import ActiveProcedure, forbidden_conflicts, lint_content, lint_version, overlap_findings

TOOLS = ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"]


def _lint(**over):
    content = dict(
        applies_when="The customer asks for a refund above the limit.",
        steps=["Look up the order with lookupOrder({{order_id}}).", "Reply with replyTemplates('x')."],
        required_tools=["lookupOrder", "replyTemplates"],
        forbidden_actions=["Do not promise a refund date before approval."],
        agent_tools=TOOLS,
    )
    content.update(over)
    return {f.rule: f for f in lint_content(**content)}


def test_clean_content_has_no_findings():
    assert _lint() == {}


def test_required_tool_missing_from_the_agent():
    finding = _lint(required_tools=["lookupOrder", "replyTemplates", "issueRefund"])["missing_tool"]
    assert finding.severity == "error" and "issueRefund" in finding.message


def test_step_using_an_undeclared_tool():
    finding = _lint(
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Call createApproval({{order_id}}).",
            "Reply with replyTemplates('x').",
        ]
    )["undeclared_tool"]
    assert "Step 2" in finding.message and "createApproval" in finding.message


def test_tool_name_inside_a_longer_word_is_not_a_use():
    assert "undeclared_tool" not in _lint(
        steps=["Use lookupOrderHistory to read the past.", "Reply with replyTemplates('x')."]
    )


def test_step_contradicting_a_forbidden_action():
    finding = _lint(
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Promise the customer a refund date.",
            "Reply with replyTemplates('x').",
        ]
    )["forbidden_conflict"]
    assert "Step 2" in finding.message and "promise a refund date" in finding.message


def test_a_step_that_repeats_the_prohibition_is_not_a_conflict():
    assert (
        forbidden_conflicts(
            ["Do not promise a refund date; say approval is pending."],
            ["Do not promise a refund date before approval."],
        )
        == []
    )
    assert (
        forbidden_conflicts(
            ["Tell the customer the refund is being processed."], ["Do not promise a refund date before approval."]
        )
        == []
    )


def test_more_than_eight_steps():
    steps = [f"Step {i} with replyTemplates('x')." for i in range(9)]
    assert "too_many_steps" in _lint(steps=steps)
    assert "too_many_steps" not in _lint(steps=steps[:8])


def test_policy_findings_are_shown_as_errors():
    finding = _lint(
        quarantine_reasons=[
            {
                "category": "skip_approval",
                "reason": "tells the agent to skip an approval",
                "field": "steps[2]",
                "excerpt": "skip the approval",
            }
        ]
    )["policy"]
    assert finding.severity == "error" and "skip an approval" in finding.message and finding.field == "steps[2]"


def test_overlap_with_another_active_procedure_by_embedding_similarity():
    others = [
        ActiveProcedure(
            "refund.within_limit", 1, "The customer asks for a refund within the amount the agent may grant on its own."
        ),
        ActiveProcedure("order.status", 1, "The customer asks where their order is or when it will arrive."),
    ]
    findings = overlap_findings(
        "The customer asks for a refund larger than the amount the agent may grant on its own.", others
    )
    assert [f.rule for f in findings] == ["overlap"]
    assert "refund.within_limit" in findings[0].message and "order.status" not in findings[0].message


def test_no_overlap_without_other_active_procedures():
    assert overlap_findings("anything", []) == []


@pytest.mark.django_db
def test_lint_version_reads_the_agents_current_tools(candidate, agent):
    assert lint_version(candidate, other_active=[]) == []
    agent.tools = ["lookupOrder", "replyTemplates"]
    agent.save()
    candidate.refresh_from_db()
    rules = [f.rule for f in lint_version(candidate, other_active=[])]
    assert rules == ["missing_tool"]
