"""The demo users can sign in, in a real browser."""

import pytest

from library.demo import DEMO_USERS, seed_demo
from tests.e2e.conftest import sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("username", list(DEMO_USERS))
def test_demo_user_signs_in(live_server, page, screenshot, username):
    seed_demo()
    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    screenshot(page, "login")
    sign_in(page, live_server.url, username, DEMO_USERS[username][0])
    assert "/accounts/login/" not in page.url
    assert page.locator(".who strong").inner_text() == username
    assert page.locator(".role").inner_text().lower() == DEMO_USERS[username][1]
    screenshot(page, "after-sign-in")


def test_wrong_password_is_refused(live_server, page):
    seed_demo()
    sign_in(page, live_server.url, "reviewer", "wrong")
    assert "/accounts/login/" in page.url
    assert "did not match" in page.locator("[role=alert]").inner_text()
