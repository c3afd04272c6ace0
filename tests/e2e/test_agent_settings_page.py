"""The agent settings page in Chromium (issue 39 item 5): its settings in sections, redaction
patterns edited as rows of fields, a broken pattern refused with the error beside its own field, the
fixed row saved; at a laptop's 1280×800 and a phone's 390×844 nothing is wider than the viewport.
Screenshots: test-artifacts/screenshots/test_redaction_patterns_*."""

from __future__ import annotations

import pytest

from library.demo import DEMO_USERS, seed_demo
from library.models import Agent
from tests.e2e.conftest import ARTIFACTS, sign_in
from tests.e2e.test_page_layout import OVERFLOW_JS

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]


def _fits(page) -> None:
    found = page.evaluate(OVERFLOW_JS)
    assert found["scrollWidth"] <= found["width"] + 1 and not found["wide"], found


def test_redaction_patterns_are_edited_as_fields_with_an_error_beside_the_field(live_server, page, screenshot):
    seed_demo()
    base = live_server.url
    url = f"{base}/agents/support_agent/settings/"
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])

    # the page: sections, and the patterns as rows (one empty row to add one), no JSON to edit
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(url)
    for section in ("serving", "tools", "mining", "labels", "coding", "limits", "redaction"):
        assert page.locator(f"#settings-{section}").is_visible(), section
    assert page.locator("textarea[name=redaction_patterns]").count() == 0
    rows = page.locator("#settings-redaction tr.pattern-row")
    existing = rows.count() - 1
    before = Agent.objects.get(name="support_agent").redaction_patterns
    _fits(page)
    screenshot(page, "laptop-before")

    # a new pattern with a broken regular expression
    page.fill(f"#id_pattern-{existing}-label", "invoice")
    page.fill(f"#id_pattern-{existing}-regex", r"INV-(\d+")
    page.fill("#id_reason", "invoice numbers in tickets")
    page.click("#agent-settings button[type=submit]")
    page.wait_for_load_state("networkidle")
    error = page.locator(f"#id_pattern-{existing}-regex-error")
    assert error.is_visible() and error.inner_text().startswith(
        "Not a valid regular expression: missing ), unterminated"
    )
    # beside its own field: in the same table cell as the regex input, and no other row has one
    assert page.locator(f"td:has(#id_pattern-{existing}-regex) #id_pattern-{existing}-regex-error").count() == 1
    assert page.locator("#settings-redaction .error").count() == 1
    assert page.locator(f"#id_pattern-{existing}-label").input_value() == "invoice"  # what was typed stays
    assert Agent.objects.get(name="support_agent").redaction_patterns == before  # nothing saved
    error.scroll_into_view_if_needed()
    _fits(page)
    screenshot(page, "laptop-error")
    page.set_viewport_size({"width": 390, "height": 844})
    _fits(page)
    screenshot(page, "phone-error")
    page.locator("#settings-redaction").screenshot(
        path=str(ARTIFACTS / "test_redaction_patterns-section-phone-error.png")
    )

    # fixed, it is saved, and the export shows it as JSON
    page.fill(f"#id_pattern-{existing}-regex", r"\bINV-\d+\b")
    page.click("#agent-settings button[type=submit]")
    page.wait_for_load_state("networkidle")
    patterns = Agent.objects.get(name="support_agent").redaction_patterns
    assert patterns[-1] == {"label": "invoice", "regex": r"\bINV-\d+\b"}
    assert page.locator(f"#id_pattern-{existing}-label").input_value() == "invoice"
    page.click("#redaction-patterns-export summary")
    assert '"label": "invoice"' in page.locator("#redaction-patterns-json").inner_text()
    _fits(page)
    screenshot(page, "phone-saved")
    page.set_viewport_size({"width": 1280, "height": 800})
    _fits(page)
    screenshot(page, "laptop-saved")
    page.locator("#settings-redaction").screenshot(
        path=str(ARTIFACTS / "test_redaction_patterns-section-laptop-saved.png")
    )


def test_task_family_rules_are_edited_as_fields_with_an_error_that_names_the_rule(live_server, page, screenshot):
    """The coding task-family rules were a raw JSON text area; they are rows of two fields now, a bad
    one refused with an error beside its field that names the rule and the field, stored as the list
    the miner reads. Screenshots: test-artifacts/screenshots/test_task_family_rules_* (and -section)."""
    seed_demo()
    base = live_server.url
    url = f"{base}/agents/support_agent/settings/"
    sign_in(page, base, "admin", DEMO_USERS["admin"][0])

    def shot(name: str) -> None:
        path = screenshot(page, name)
        page.locator("#settings-coding").screenshot(path=str(ARTIFACTS / f"{path.stem}-section.png"))

    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(url)
    assert page.locator("#settings-coding textarea").count() == 0  # no JSON to edit
    assert page.locator("#settings-coding tr.family-rule-row").count() == 1  # one empty row to add one

    # two rules, the second with a space in its prefix
    page.fill("#id_family_rule-0-prefix", "django/db/migrations")
    page.fill("#id_family_rule-0-family", "migrations")
    page.fill("#id_reason", "group the migration tasks")
    page.click("#agent-settings button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert Agent.objects.get(name="support_agent").coding_family_rules == [
        {"prefix": "django/db/migrations", "family": "migrations"}
    ]
    page.fill("#id_family_rule-1-prefix", "django/db models")
    page.fill("#id_family_rule-1-family", "models")
    page.click("#agent-settings button[type=submit]")
    page.wait_for_load_state("networkidle")
    error = page.locator("#id_family_rule-1-prefix-error")
    assert error.is_visible() and error.inner_text().startswith(
        "Rule 2, path prefix: “django/db models” is not a relative path"
    )
    # beside its own field, in the same cell, and no other row has one
    assert page.locator("td:has(#id_family_rule-1-prefix) #id_family_rule-1-prefix-error").count() == 1
    assert page.locator("#settings-coding .error").count() == 1
    assert page.locator("#id_family_rule-1-family").input_value() == "models"  # what was typed stays
    assert len(Agent.objects.get(name="support_agent").coding_family_rules) == 1  # nothing saved
    error.scroll_into_view_if_needed()
    _fits(page)
    shot("laptop-error")
    page.set_viewport_size({"width": 390, "height": 844})
    _fits(page)
    shot("phone-error")

    # fixed, both are saved in order and shown back
    page.fill("#id_family_rule-1-prefix", "django/db/models")
    page.click("#agent-settings button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert Agent.objects.get(name="support_agent").coding_family_rules == [
        {"prefix": "django/db/migrations", "family": "migrations"},
        {"prefix": "django/db/models", "family": "models"},
    ]
    assert page.locator("#id_family_rule-1-prefix").input_value() == "django/db/models"
    page.set_viewport_size({"width": 1280, "height": 800})
    page.locator("#settings-coding").scroll_into_view_if_needed()
    _fits(page)
    shot("laptop-saved")
