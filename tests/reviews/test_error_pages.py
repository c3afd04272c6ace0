"""The pages a person lands on when something is refused or missing (procmem_site/urls.py handler403,
templates/404.html, templates/500.html): a reviewer opening an admin page read a bare "403 Forbidden"
without the access helper's reason, and an unknown address Django's unstyled "Not Found"."""

from __future__ import annotations

import pytest
from django.template.loader import render_to_string
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_a_page_the_user_may_not_use_says_why_inside_the_site(client, reviewer, agent):
    client.force_login(reviewer)
    response = client.get(reverse("reviews:agent_settings", args=[agent.name]))
    assert response.status_code == 403
    page = response.content.decode()
    assert f"Only the admins of {agent.name} may change this." in page
    assert "Not allowed" in page and "Sign out" in page  # the site's layout, the user still signed in


def test_an_htmx_request_refused_above_the_view_gets_the_reason_in_the_flash(client, reviewer, agent):
    client.force_login(reviewer)
    response = client.get(reverse("reviews:agent_settings", args=[agent.name]), headers={"HX-Request": "true"})
    assert response.status_code == 403
    assert response["HX-Retarget"] == "#flash"
    assert f"Only the admins of {agent.name} may change this." in response.content.decode()


def test_the_admin_still_opens_the_page(client, admin_user, agent):
    client.force_login(admin_user)
    assert client.get(reverse("reviews:agent_settings", args=[agent.name])).status_code == 200


def test_an_unknown_address_is_a_page_of_the_site_naming_it(client, reviewer):
    client.force_login(reviewer)
    response = client.get("/versions/999999/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "Page not found" in page and "<code>/versions/999999/</code>" in page
    assert reverse("reviews:queue") in page and "Sign out" in page


def test_the_not_found_page_renders_for_an_anonymous_visitor(client):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    page = response.content.decode()
    assert "Page not found" in page and "Sign out" not in page


def test_the_server_error_page_needs_no_request():
    # Django's server_error renders it with an empty context: no user, no context processors
    page = render_to_string("500.html")
    assert "Server error" in page and "has been logged" in page
