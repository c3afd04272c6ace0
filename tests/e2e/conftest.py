"""Browser tests: Python Playwright driving Debian's Chromium (never `playwright install`).

Screenshots of every page a test visits are saved under test-artifacts/screenshots/ so a person
can look at them after a run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM

# Playwright's sync API runs an event loop in the test thread; the ORM calls made by fixtures in
# the same thread are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]


@pytest.fixture(scope="module")
def browser():
    """One Chromium per test module: Playwright's sync API keeps an event loop running in the test
    thread while it is open, and the async tests that run after the browser tests (anyio) need the
    thread without one."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    """A page in a fresh context. Every browser test is also a Content-Security-Policy test: Chromium
    reports each blocked script, style or handler on the console, and any such report fails the test."""
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    violations: list[str] = []
    page.on(
        "console",
        lambda message: (
            violations.append(f"{message.text} (at {message.location} on {page.url})")
            if "Content Security Policy" in message.text
            else None
        ),
    )
    yield page
    context.close()
    assert not violations, f"the page broke its Content-Security-Policy: {violations}"


@pytest.fixture
def screenshot(request):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def take(page, name: str) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


def sign_in(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
