"""The agent's tab strip (templates/reviews/ops/_agent_tabs.html) links only to pages the signed-in
user may open: a reviewer on the import page was offered API tokens, agent settings and webhooks,
each a 403."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

TABS = re.compile(r'<nav class="tabs" aria-label="Agent operations">(.*?)</nav>', re.S)


def tab_links(client, url: str) -> list[str]:
    response = client.get(url)
    assert response.status_code == 200
    return re.findall(r'href="([^"]+)"', TABS.search(response.content.decode()).group(1))


@pytest.mark.parametrize(
    "page",
    [
        "reviews:skills_import",
        "reviews:ops_agent",
        "reviews:ops_metrics",
        "reviews:agent_playground",
        "reviews:sessions_list",
    ],
)
def test_every_tab_opens_for_whoever_sees_the_strip(client, reviewer, admin_user, agent, page):
    admin_tabs = {reverse(name, args=[agent.name]) for name in ("reviews:agent_tokens", "reviews:agent_settings")}
    for user, expects_admin_tabs in ((reviewer, False), (admin_user, True)):
        client.force_login(user)
        links = tab_links(client, reverse(page, args=[agent.name]))
        assert admin_tabs <= set(links) if expects_admin_tabs else not admin_tabs & set(links)
        for link in links:
            assert client.get(link).status_code == 200, (user.username, link)


@pytest.mark.parametrize(
    "page, current",
    [
        ("reviews:agent_playground", "Selection playground"),
        ("reviews:agent_tokens", "API tokens"),
        ("reviews:sessions_list", "Sessions"),
    ],
)
def test_the_agent_pages_the_strip_links_to_show_it_too(client, admin_user, agent, page, current):
    # the playground, tokens and sessions pages dropped the strip: one click from it and it was gone
    client.force_login(admin_user)
    response = client.get(reverse(page, args=[agent.name]))
    strip = TABS.search(response.content.decode())
    assert strip, page
    assert re.search(rf'class="on" aria-current="page">{current}</a>', strip.group(1))


@pytest.mark.parametrize("page", ["reviews:agent_playground", "reviews:sessions_list"])
def test_the_reviewer_pages_with_the_strip_stay_closed_to_an_outsider(client, outsider, agent, page):
    client.force_login(outsider)
    assert client.get(reverse(page, args=[agent.name])).status_code in {403, 404}
