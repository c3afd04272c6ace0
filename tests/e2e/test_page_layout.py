"""Every reviewer page of the demo, in Chromium at a laptop's 1280×800 and a phone's 390×844: a
screenshot of each (test-artifacts/screenshots/), and a failure when the page scrolls sideways or an
element is wider than the viewport (a table may scroll inside its own box, the page may not). A
second test reads the charts' axes as drawn: tick values strictly increasing, evenly spaced in value
and on the page."""

from __future__ import annotations

import re

import pytest

from library.demo import DEMO_USERS, seed_demo
from library.models import AgentSession, MiningRun, ProcedureVersion
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]

VIEWPORTS = {"laptop": (1280, 800), "phone": (390, 844)}

# elements wider than the viewport, outside any box that scrolls on its own
OVERFLOW_JS = """() => {
  const width = document.documentElement.clientWidth;
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) {
      const s = getComputedStyle(p); if (/(auto|scroll|hidden)/.test(s.overflowX) && p !== document.body
        && p !== document.documentElement) return true; } return false; };
  const wide = [];
  for (const el of document.body.querySelectorAll("*")) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height || getComputedStyle(el).visibility === "hidden") continue;
    // wider than the viewport to the right (what scrolls a page sideways); a skip link parked
    // off-screen to the left, as accessibility guides place it, scrolls nothing
    if (r.right > width + 1 && !scrolls(el)) {
      wide.push(`${el.tagName.toLowerCase()}${el.id ? "#" + el.id : ""}${el.className && typeof el.className === "string" ? "." + el.className.trim().split(/\\s+/).join(".") : ""} ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, width, wide: wide.slice(0, 8)};
}"""


def reviewer_pages() -> list[tuple[str, str]]:
    """(name, path) of every page a reviewer or admin reads in the demo."""
    agent = "support_agent"
    candidate = ProcedureVersion.objects.filter(status="CANDIDATE").order_by("-pk").first()
    active = ProcedureVersion.objects.filter(status="ACTIVE").order_by("pk").first()
    run = MiningRun.objects.order_by("-pk").first()
    session = AgentSession.objects.filter(agent__name=agent).order_by("-ended_at").first()
    pages = [
        ("queue", "/queue/"),
        ("candidate", f"/versions/{candidate.pk}/"),
        ("procedure", f"/procedures/{candidate.procedure_id}/"),
        ("search", "/search/?q=lookupOrder"),
        ("refused", "/refused-at-load/"),
        ("notifications", "/notifications/"),
        ("namespaces", "/ops/namespaces/"),
        ("ops", "/ops/"),
        ("ops-agent", f"/ops/agents/{agent}/"),
        ("metrics", f"/ops/agents/{agent}/metrics/"),
        ("version-metrics", f"/ops/versions/{active.pk}/metrics/"),
        ("approvers", f"/ops/agents/{agent}/approvers/"),
        ("audit", "/ops/audit/"),
        ("settings", f"/agents/{agent}/settings/"),
        ("capture-settings", f"/agents/{agent}/capture-settings/"),
        ("eval-settings", f"/agents/{agent}/eval-settings/"),
        ("tools", f"/agents/{agent}/tools/"),
        ("tokens", f"/agents/{agent}/tokens/"),
        ("webhooks", f"/agents/{agent}/webhooks/"),
        ("cases", f"/agents/{agent}/cases/"),
        ("playground", f"/agents/{agent}/playground/?task=Where+is+my+order+ORD-30012%3F"),
        ("mining-runs", f"/agents/{agent}/mining/"),
        ("mining-run", f"/mining-runs/{run.pk}/"),
        ("sessions", f"/agents/{agent}/sessions/"),
        ("session", f"/agents/{agent}/sessions/{session.pk}/"),
        ("skills-import", f"/agents/{agent}/skills/import/"),
    ]
    return pages


ODD_NUMBERS = re.compile(
    r"\d(\.\d+)?e-\d+|p = 0\.0+\b(?!\d)|[−-]0(\.0+)?\b(?![.,]?\d)|(?<![\d,.])1 (candidates|sessions|tasks)\b"
)


@pytest.mark.timeout(1800)
def test_no_reviewer_page_is_wider_than_a_laptop_or_a_phone(live_server, browser, screenshot):
    seed_demo()
    pages = reviewer_pages()
    failures = []
    for viewport, (width, height) in VIEWPORTS.items():
        context = browser.new_context(viewport={"width": width, "height": height})
        page = context.new_page()
        page.set_default_timeout(60_000)
        sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
        for name, path in pages:
            response = page.goto(live_server.url + path)
            assert response.status == 200, f"{name} {path}: {response.status}"
            page.wait_for_load_state("networkidle")
            screenshot(page, f"{viewport}-{name}")
            found = page.evaluate(OVERFLOW_JS)
            if found["scrollWidth"] > found["width"] + 1 or found["wide"]:
                failures.append(
                    f"{viewport} {name} ({path}): page {found['scrollWidth']} > {found['width']}; {found['wide']}"
                )
            # numbers as a reader sees them (library/formatting.py): no 0.000 p-value, e-notation,
            # negative zero or "1 sessions" in the rendered text
            if odd := ODD_NUMBERS.search(page.inner_text("body")):
                failures.append(f"{viewport} {name} ({path}): a number written oddly: {odd.group(0)!r}")
            # the audit log folds long rows: 25 events stay within a few screens at laptop width
            if name == "audit" and viewport == "laptop":
                height = page.evaluate("document.documentElement.scrollHeight")
                if height > 6 * VIEWPORTS[viewport][1]:
                    failures.append(f"laptop audit: {height} px tall for one page of events")
        context.close()
    assert failures == [], "\n".join(failures)


AXIS_JS = """() => [...document.querySelectorAll("svg.chart")].map((svg) => ({
  title: svg.querySelector("title")?.textContent || "",
  ticks: [...svg.querySelectorAll("line.gridline")].map((line) => ({
    x: parseFloat(line.getAttribute("x1")),
    y: parseFloat(line.getAttribute("y1")),
    label: line.nextElementSibling ? line.nextElementSibling.textContent : "",
  })),
}))"""


def tick_value(label: str) -> float:
    text = label.replace(" %", "").strip()
    return float(text[:-1]) * 1000 if text.endswith("k") else float(text)


def test_the_charts_axes_are_honest(live_server, page):
    seed_demo()
    active = ProcedureVersion.objects.filter(status="ACTIVE").order_by("pk").first()
    sign_in(page, live_server.url, "admin", DEMO_USERS["admin"][0])
    charts = []
    for path in ("/ops/agents/support_agent/metrics/", f"/ops/versions/{active.pk}/metrics/"):
        page.goto(live_server.url + path)
        charts += page.evaluate(AXIS_JS)
    assert len(charts) >= 5
    for chart in charts:
        values = [tick_value(t["label"]) for t in chart["ticks"]]
        ys = [t["y"] for t in chart["ticks"]]
        assert len(values) >= 2, chart
        assert all(b > a for a, b in zip(values, values[1:])), chart  # strictly increasing values
        assert len({round(b - a, 6) for a, b in zip(values, values[1:])}) == 1, chart  # evenly spaced values
        if len(set(ys)) == 1:  # a horizontal axis (the interval charts): values grow to the right
            xs = [t["x"] for t in chart["ticks"]]
            gaps = [b - a for a, b in zip(xs, xs[1:])]
        else:  # a vertical axis (the time charts): values grow upwards, y downwards on the page
            gaps = [a - b for a, b in zip(ys, ys[1:])]
        assert all(g > 0 for g in gaps) and max(gaps) - min(gaps) <= 0.2, chart  # evenly spaced on the page
        assert re.fullmatch(r"[0-9.]+k?( %)?", chart["ticks"][-1]["label"]), chart
