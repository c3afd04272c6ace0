"""Rendering snapshots: the exact text an agent's instruction receives, for a few representative
records. A change to the format shows up here as a diff against clients/python/tests/snapshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

from procmem_client.rendering import estimate_tokens, measure, render_procedure, render_procedures, render_with_length

SNAPSHOTS = Path(__file__).parent / "snapshots"

REFUND = {
    "id": "refund.over_limit",
    "version": 3,
    "steps": [
        "Look up the order with lookupOrder({{order_id}}).",
        "Check the return window with checkReturnWindow({{order_id}}).",
        "Create an approval request with createApproval({{order_id}}, {{amount}}).",
        "Tell the customer the expected wait with replyTemplates('approval_pending').",
    ],
    "forbiddenActions": ["Do not promise a refund date before approval.", "Never issue the refund yourself."],
}
NO_LESSONS = {
    "id": "order.status",
    "version": 1,
    "steps": ["Look up the order with lookupOrder({{order_id}}).", "Read the carrier status.", "Reply with replyTemplates('order_status')."],
    "forbiddenActions": [],
}
UNICODE_AND_SPACING = {
    "id": "airline.cancel_reservation",
    "version": 12,
    "steps": ["  Read the reservation with get_reservation_details({{reservation_id}}).  ", "Confirm “yes” with the customer — explicitly.", "Cancel with cancel_reservation({{reservation_id}})."],
    "forbiddenActions": ["don't cancel basic economy after 24 hours without insurance", "  ", "DO NOT: transfer to a human before checking the policy."],
}


@pytest.mark.parametrize(
    "name,record",
    [("refund_over_limit_v3", REFUND), ("order_status_no_lessons", NO_LESSONS), ("unicode_and_spacing", UNICODE_AND_SPACING)],
)
def test_render_procedure_matches_snapshot(name, record):
    assert render_procedure(record) == (SNAPSHOTS / f"{name}.txt").read_text(encoding="utf-8")


def test_two_procedures_in_ranker_order_match_snapshot():
    text = render_procedures([REFUND, NO_LESSONS])
    assert text == (SNAPSHOTS / "two_procedures.txt").read_text(encoding="utf-8")
    assert text.count("\n\nProcedure ") == 1


def test_lengths_in_characters_and_estimated_tokens():
    rendered = render_with_length([REFUND])
    assert rendered["text"] == render_procedure(REFUND)
    assert rendered["chars"] == len(rendered["text"]) == 387
    assert rendered["tokens"] == 97  # ceil(387 / 4)
    assert measure("") == {"text": "", "chars": 0, "tokens": 0}
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert render_procedures([]) == ""
