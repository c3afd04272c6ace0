"""What a first look at the demo found unfinished on the operations pages, in Chromium: a table's
action cell that left its row (the row's borders broke off beside the Retire…/Erase… buttons), and
charts drawn so small on a phone that their labels were 4-5 px high."""

from __future__ import annotations

import pytest

from library.demo import DEMO_USERS, seed_demo
from library.models import ProcedureVersion
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]

ACTION_CELLS_JS = """() => [...document.querySelectorAll("td.actions")].map((cell) => {
  const row = cell.closest("tr").getBoundingClientRect(), box = cell.getBoundingClientRect();
  return {display: getComputedStyle(cell).display, top: box.top - row.top, bottom: row.bottom - box.bottom};
})"""

# the rendered height of each chart's tick labels, and whether the chart's figure scrolls sideways
CHART_LABELS_JS = """() => [...document.querySelectorAll("svg.chart")].map((svg) => ({
  title: svg.querySelector("title")?.textContent || "",
  heights: [...svg.querySelectorAll("line.gridline + text")].map((t) => t.getBoundingClientRect().height),
  scrolls: getComputedStyle(svg.closest("figure")).overflowX,
}))"""


def test_the_version_table_action_cells_stay_in_their_rows(live_server, page, screenshot):
    seed_demo()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/ops/agents/support_agent/procedures/refund.over_limit/")
    screenshot(page, "procedure")
    cells = page.evaluate(ACTION_CELLS_JS)
    assert len(cells) >= 3  # the environments row and both versions' rows
    for cell in cells:
        assert cell["display"] == "table-cell", cell
        assert abs(cell["top"]) <= 1 and abs(cell["bottom"]) <= 1, cell  # as tall as its row


def test_the_charts_stay_readable_on_a_phone(live_server, browser, screenshot):
    seed_demo()
    active = ProcedureVersion.objects.filter(status="ACTIVE").order_by("pk").first()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    charts = []
    for name, path in (
        ("metrics", "/ops/agents/support_agent/metrics/"),
        ("version", f"/ops/versions/{active.pk}/metrics/"),
    ):
        page.goto(live_server.url + path)
        page.wait_for_load_state("networkidle")
        screenshot(page, f"phone-{name}")
        charts += page.evaluate(CHART_LABELS_JS)
    context.close()
    assert len(charts) >= 5
    for chart in charts:
        assert chart["heights"] and min(chart["heights"]) >= 8, chart  # 11px labels, at least 8px on screen
        assert chart["scrolls"] == "auto", chart


def test_the_procedure_pages_audit_times_stay_on_one_line(live_server, page, screenshot):
    seed_demo()
    procedure = ProcedureVersion.objects.filter(status="CANDIDATE", procedure__key="refund.over_limit").get().procedure
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.set_viewport_size({"width": 1366, "height": 768})
    # the operations page's recent history too: its times broke over three lines beside a long reason
    for name, path in (
        ("procedure-audit", f"/procedures/{procedure.pk}/"),
        ("ops-procedure-history", "/ops/agents/support_agent/procedures/refund.over_limit/"),
    ):
        page.goto(live_server.url + path)
        screenshot(page, name)
        _assert_times_on_one_line(page)


def _assert_times_on_one_line(page) -> None:
    cells = page.locator("td.when")
    assert cells.count() >= 1
    for index in range(cells.count()):
        lines = page.evaluate(  # the text's line boxes
            "(i) => { const r = document.createRange(); r.selectNodeContents(document.querySelectorAll('td.when')[i]);"
            " return r.getClientRects().length; }",
            index,
        )
        assert lines == 1, (index, cells.nth(index).inner_text())


def test_a_heading_after_a_table_does_not_touch_it(live_server, page):
    seed_demo()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/ops/agents/support_agent/metrics/")
    gaps = page.evaluate(
        """() => [...document.querySelectorAll("table + h2, table + h3")].map((h) =>
             [h.textContent.trim(), h.getBoundingClientRect().top - h.previousElementSibling.getBoundingClientRect().bottom])"""
    )
    assert any(text == "Reviewers" for text, _ in gaps), gaps
    assert all(gap >= 12 for _, gap in gaps), gaps


def test_the_served_sets_sentences_stay_readable_on_a_phone(live_server, browser):
    seed_demo()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/ops/agents/support_agent/")
    widths = page.evaluate(
        "() => [...document.querySelectorAll('td.prose')].map((td) => td.getBoundingClientRect().width)"
    )
    context.close()
    assert len(widths) == 3 and min(widths) >= 200, widths  # one word wide before (the table scrolls instead)


KV_TABLES_JS = """() => [...document.querySelectorAll("table.kv")].map((table) => ({
  id: table.id,
  right: table.getBoundingClientRect().right,
  rows: Math.max(...[...table.rows].map((row) => row.getBoundingClientRect().right)),
}))"""


@pytest.mark.parametrize("width", [1280, 390])
def test_a_figures_tables_rows_stay_inside_its_box(live_server, browser, screenshot, width):
    """The definition lists' grid (.kv) also styled the figures tables: the table stopped at 860 px
    while its rows ran on to 1015 px, their right-hand figures outside its white box."""
    seed_demo()
    active = ProcedureVersion.objects.filter(status="ACTIVE").order_by("pk").first()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    tables = []
    for name, path in (
        ("metrics", "/ops/agents/support_agent/metrics/"),
        ("version", f"/ops/versions/{active.pk}/metrics/"),
    ):
        page.goto(live_server.url + path)
        screenshot(page, f"{width}-{name}")
        tables += page.evaluate(KV_TABLES_JS)
    context.close()
    assert {table["id"] for table in tables} >= {"figures", "quality-figures", "version-quality-figures"}
    for table in tables:
        assert table["rows"] <= table["right"] + 1, table


def test_the_playgrounds_reasons_stay_readable_on_a_phone(live_server, browser, screenshot):
    """The ranking's "Eligible, and why" was one word wide at 390 px ("no: / semantic / 0.266 / < /
    floor …", fourteen lines a row) although the table scrolls sideways."""
    seed_demo()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, live_server.url, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{live_server.url}/agents/support_agent/playground/?task=Wo+ist+meine+Bestellung+ORD-30012%3F")
    screenshot(page, "playground")
    widths = page.evaluate(
        "() => [...document.querySelectorAll('#ranking tbody td.prose')].map((td) => td.getBoundingClientRect().width)"
    )
    context.close()
    assert len(widths) >= 2 and min(widths) >= 200, widths


def test_the_approve_confirmation_puts_the_comment_under_the_checkbox(live_server, browser, screenshot):
    """The comment's label ran on after the confirmation's checkbox label, "…under my name. Comment for
    the audit log" on one line, and "(optional)" on the next."""
    from tests.conftest import make_passing_eval

    seed_demo()
    candidate = ProcedureVersion.objects.get(status="CANDIDATE", procedure__key="refund.over_limit")
    make_passing_eval(candidate)
    for width in (1280, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        sign_in(page, live_server.url, "approver", DEMO_USERS["approver"][0])
        page.goto(f"{live_server.url}/versions/{candidate.pk}/approve/")
        screenshot(page, f"approve-{width}")
        check = page.locator("label.confirm-check").bounding_box()
        comment = page.locator("label[for=approve-comment]").bounding_box()
        context.close()
        assert comment["y"] >= check["y"] + check["height"] - 1, (width, check, comment)
        assert comment["x"] <= check["x"] + 1, (width, check, comment)  # starts the line, under the checkbox


def test_the_audit_logs_changes_stay_readable_on_a_phone(live_server, browser, screenshot):
    """At 390 px the audit log's "Before → after" was 75 px wide: a content hash ran one character a
    line and a row grew 700 px tall, in a table that scrolls sideways anyway."""
    seed_demo()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/ops/audit/")
    screenshot(page, "audit")
    widths = page.evaluate(
        "() => [...document.querySelectorAll('td.changes')].map((td) => td.getBoundingClientRect().width)"
    )
    context.close()
    assert len(widths) >= 5 and min(widths) >= 200, widths


FIELDS_JS = """() => [...document.querySelectorAll(".ops form input[type=text], .ops form input[type=url], .ops form input[type=number]")]
  .map((e) => ({name: e.name, height: e.getBoundingClientRect().height, font: getComputedStyle(e).fontSize}))"""


def test_a_forms_url_and_number_fields_match_its_text_fields(live_server, page, screenshot):
    """The webhook's URL and the token's "Expires in (days)" were drawn smaller (13px type, 20px tall)
    than the name field beside them (15px, 35px): only text and search fields had the form's style."""
    seed_demo()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    for name, path in (("webhooks", "/agents/support_agent/webhooks/"), ("tokens", "/agents/support_agent/tokens/")):
        page.goto(live_server.url + path)
        screenshot(page, name)
        fields = page.evaluate(FIELDS_JS)
        assert {field["name"] for field in fields} >= {"name", {"webhooks": "url", "tokens": "expires_in_days"}[name]}
        assert len({(field["height"], field["font"]) for field in fields}) == 1, fields


SKILL_FORM_JS = """() => [...document.querySelectorAll("#skills-import-form .field")].map((field) => {
  const box = (el) => el.getBoundingClientRect();
  const label = field.querySelector("label"), input = field.querySelector("input"), help = field.querySelector(".muted");
  return {label: label.textContent.trim(), labelBottom: box(label).bottom, inputTop: box(input).top,
          inputBottom: box(input).bottom, helpTop: help ? box(help).top : null, left: [box(label).left, box(input).left]};
})"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_skill_import_forms_fields_read_label_input_help(live_server, browser, screenshot, width):
    """The skill import form was Django's as_p: "Skills archive:" beside the file button with its
    help text trailing on the same line after a gap, and "Intent:" beside its box with the help run
    on after it (on a phone wrapped under the box). Each field is its label, its input, then its help."""
    seed_demo()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    sign_in(page, live_server.url, "reviewer", DEMO_USERS["reviewer"][0])
    page.goto(f"{live_server.url}/agents/support_agent/skills/import/")
    screenshot(page, f"{width}-skills-import")
    fields = page.evaluate(SKILL_FORM_JS)
    context.close()
    assert [field["label"] for field in fields] == ["Skills archive", "Intent"], fields
    for field in fields:
        assert field["labelBottom"] <= field["inputTop"] + 1, field  # the label above its input
        assert field["helpTop"] is not None and field["helpTop"] >= field["inputBottom"] - 1, field  # help below
        assert abs(field["left"][0] - field["left"][1]) <= 1, field  # one left edge


@pytest.mark.parametrize("width", [1280, 390])
def test_the_assign_control_lines_up_with_its_button(live_server, browser, screenshot, width):
    """The candidate page's "Assign to" select was the browser's small default (about 17 px beside
    a 35 px Assign button, their text on different lines): the select is now as tall as the button
    and on its centre line."""
    seed_demo()
    candidate = ProcedureVersion.objects.filter(status="CANDIDATE", procedure__key="refund.over_limit").get()
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    page.goto(f"{live_server.url}/versions/{candidate.pk}/")
    screenshot(page, f"{width}-assign")
    boxes = page.evaluate(
        """() => ["#assignee", "form.assign button", "label[for=assignee]"].map((s) => {
             const b = document.querySelector(s).getBoundingClientRect(); return {top: b.top, height: b.height}; })"""
    )
    context.close()
    select, button, label = boxes
    assert abs(select["height"] - button["height"]) <= 3, boxes
    centre = lambda box: box["top"] + box["height"] / 2  # noqa: E731
    assert abs(centre(select) - centre(button)) <= 2 and abs(centre(label) - centre(select)) <= 3, boxes


FIELD_GAPS_JS = """() => [...document.querySelectorAll(".field + .field")].map((field) =>
  [field.querySelector("label")?.textContent.trim(), field.getBoundingClientRect().top - field.previousElementSibling.getBoundingClientRect().bottom])"""


def test_the_plain_forms_keep_their_fields_apart(live_server, page, screenshot):
    """The plain forms (reviews/_form_fields.html) ran each field's help text into the next label:
    "…“nightly export”" then "Scope" with no gap on the API tokens page, the same on the webhooks
    and skill import pages."""
    seed_demo()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    gaps = {}
    for name, path in (
        ("tokens", "/agents/support_agent/tokens/"),
        ("webhooks", "/agents/support_agent/webhooks/"),
        ("skills-import", "/agents/support_agent/skills/import/"),
    ):
        page.goto(live_server.url + path)
        screenshot(page, name)
        gaps[name] = page.evaluate(FIELD_GAPS_JS)
    assert all(gaps.values()), gaps
    for name, found in gaps.items():
        assert all(gap >= 8 for _, gap in found), (name, found)
