"""The htmx contract of every review page: every hx-get has a plain-HTTP fallback (a link's href,
a form's action), every hx-post form also posts without JavaScript, and every form that posts
carries the CSRF token."""

import re

import pytest

from library import services
from library.models import EvalRun
from tests.conftest import make_passing_eval
from tests.reviews.conftest import client_for

pytestmark = pytest.mark.django_db

TAG = re.compile(r"<(\w+)\b([^>]*)>", re.S)


def _pages(candidate, reviewer):
    v2 = services.version_revise(
        version=candidate,
        user=reviewer,
        applies_when=candidate.applies_when + " Edited.",
        steps=candidate.steps,
        required_tools=candidate.required_tools,
        forbidden_actions=candidate.forbidden_actions,
    )
    EvalRun.objects.create(version=v2, content_hash=v2.content_hash, state=EvalRun.State.RUNNING, cases_total=4)
    return [
        "/queue/",
        "/queue/?mine=1&sort=evidence",
        f"/versions/{v2.pk}/",
        f"/versions/{candidate.pk}/",
        f"/versions/{v2.pk}/edit/",
        f"/versions/{v2.pk}/approve/",
        f"/procedures/{candidate.procedure_id}/",
        "/procedures/new/",
        "/procedures/new/?agent=support_agent",
    ]


def test_every_hx_get_has_a_fallback_and_every_post_a_csrf_token(candidate, reviewer, approver):
    make_passing_eval(candidate)
    for page in _pages(candidate, reviewer):
        for user in (reviewer, approver):
            html = client_for(user).get(page).content.decode()
            for match in re.finditer(r"<form\b[^>]*>.*?</form>", html, re.S):
                form = match.group(0)
                opening = TAG.match(form).group(2)
                if 'method="post"' in opening:
                    assert "csrfmiddlewaretoken" in form, (page, opening)
                    # a form without an action only carries the token for buttons elsewhere that name
                    # it and post to their own formaction (the queue's claim buttons)
                    form_id = re.search(r' id="([^"]+)"', opening)
                    shared = form_id and re.search(rf'form="{form_id.group(1)}" formaction="/', html)
                    assert ' action="' in opening or shared, (page, opening)
            for tag, attrs in TAG.findall(html):
                if "hx-get=" not in attrs:
                    continue
                if tag == "a":
                    assert ' href="' in attrs, (page, attrs)
                elif tag == "form":
                    assert ' action="' in attrs and 'method="get"' in attrs, (page, attrs)
                elif 'hx-trigger="load"' in attrs:
                    # a panel loaded after the page (the skill trigger measure): it holds a plain link
                    # to the same content
                    target = re.search(r'hx-get="([^"]+)"', attrs).group(1)
                    assert f'href="{target}"' in html, (page, attrs)
                else:
                    # a polling panel: the page links to the same content without JavaScript
                    target = re.search(r'hx-get="([^"]+)"', attrs).group(1)
                    assert tag == "section" and "every" in attrs, (page, tag, attrs)
                    assert target.endswith("/eval/") and 'href="/versions/' in html
            for tag, attrs in TAG.findall(html):
                if "hx-post=" in attrs:
                    assert tag == "form" and 'method="post"' in attrs and ' action="' in attrs, (page, attrs)
