"""The selection playground: reviewers type a task and see the ranking, the eligibility gate and the
exact block the select endpoint returns; nobody else may use it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.urls import reverse

from library.serving import active_set as serving
from library.serving import selection
from tests.conftest import make_active

pytestmark = pytest.mark.usefixtures("readonly_shares_default")


def page_url(name: str = "support_agent") -> str:
    return reverse("reviews:agent_playground", kwargs={"agent": name})


@pytest.fixture
def served(candidate, other_procedure, admin_user):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    serving.clear_cache()


def test_who_may_use_the_playground(client, agent, reviewer, outsider, served):
    response = client.get(page_url())
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    client.force_login(outsider)
    assert client.get(page_url(), {"task": "refund"}).status_code == 403
    client.force_login(reviewer)
    assert client.get(page_url()).status_code == 200
    assert client.get(page_url("no_such_agent")).status_code == 404


def test_the_block_is_the_one_the_select_endpoint_returns(
    client, agent, reviewer, served, django_assert_max_num_queries
):
    # given
    client.force_login(reviewer)
    task = "The customer wants a refund of 900 dollars, above my limit. Check lookupOrder."
    expected = selection.select_for_agent(agent=agent, task=task, k=5)
    # when
    # SQLite reads the active set on the default connection inside a savepoint (two statements more)
    with django_assert_max_num_queries(18 if connection.vendor == "sqlite" else 16):
        response = client.get(page_url(), {"task": task})
    # then
    assert response.status_code == 200
    html = response.content.decode()
    explained = response.context["result"]
    assert explained["block"]["text"] == expected["rendered"] and expected["rendered"]
    assert [c["id"] for c in explained["ranking"] if c["injected"]] == [p["id"] for p in expected["injected"]]
    assert [c["id"] for c in explained["ranking"]][:2] == [c["id"] for c in expected["ranked"]][:2]
    assert 'id="rendered-block"' in html and "cannot override system, developer or safety policy" in html
    assert "Procedure refund.over_limit v1 (source: written by reviewers; approved by admin on" in html
    assert "semantic" in html and "≥ floor" in html and "<code>lookuporder</code>" in html


def test_intent_filter_unknown_intent_and_unrelated_task(client, agent, reviewer, served):
    client.force_login(reviewer)
    filtered = client.get(page_url(), {"task": "refund above my limit", "intent": "order_status"}).context["result"]
    assert [c["id"] for c in filtered["ranking"]] == ["order.status"]
    unknown = client.get(page_url(), {"task": "refund", "intent": "no_such_intent"})
    assert (
        unknown.status_code == 200 and "has no intent" in unknown.content.decode() and unknown.context["result"] is None
    )
    unrelated = client.get(page_url(), {"task": "Write a haiku about autumn leaves."})
    assert unrelated.context["result"]["block"]["text"] == ""
    assert "Nothing is injected" in unrelated.content.decode()
    assert all(not c["eligible"] for c in unrelated.context["result"]["ranking"])
    too_long = client.get(page_url(), {"task": "x" * 8001})
    assert "longer than 8000" in too_long.content.decode()


def test_a_score_reads_the_same_in_its_column_and_in_the_reasons(client, agent, reviewer, served):
    """The semantic column showed 0.443 beside "semantic 0.442 ≥ floor": the ranking handed on
    0.4425 (rounded to four places) and the page rounded it again. Each figure is rounded once
    now, from the raw score. The task is one whose raw cosine with refund.over_limit is 0.44246."""
    import re
    from html import unescape

    client.force_login(reviewer)
    response = client.get(page_url(), {"task": "The refund asks about the order and the jacket."})
    rows = re.findall(r"<tr class=\"[^\"]*\">(.*?)</tr>", response.content.decode(), re.S)
    assert len(rows) == len(response.context["result"]["ranking"]) >= 2
    for row in rows:
        cells = [
            unescape(re.sub(r"<[^>]+>", "", cell)).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        semantic_column = cells[3].split(" ")[0]
        semantic_reason = re.search(r"semantic ([−\d.]+) [≥<]", cells[-2]).group(1)  # the reasons
        assert semantic_column == semantic_reason, cells
    raw = {c["id"]: c["scores"]["semantic"] for c in response.context["result"]["ranking"]}
    assert f"{raw['refund.over_limit']:.4f}" == "0.4425"  # the case that read 0.443 beside 0.442


def test_the_order_line_names_every_term_the_ranker_adds(client, agent, reviewer, served):
    """The "Order:" line left out the third model's term (0.5 × its weakest clause with the default
    minilm+use-multilingual+e5-small) and the amount term: both add to the total (Index.totals)."""
    from dataclasses import replace

    from procmem_client import embeddings as client_embeddings
    from procmem_client.selection import SelectionConfig
    from reviews.views.agents import _weights_text

    client.force_login(reviewer)
    html = client.get(page_url(), {"task": "refund above my limit"}).content.decode()
    order = html.split("Order: ", 1)[1].split("(normalised scores", 1)[0]
    assert "0.5 × e5-small (the third model, its weakest clause)" in order, order
    assert "0.2 × amount" in order and "1 × semantic" in order and "area" not in order, order
    # and the third model's score has its column, as the other terms have theirs
    import re
    from html import unescape

    from library.formatting import score

    assert "<th>e5-small (third model)</th>" in html
    ranking = client.get(page_url(), {"task": "refund above my limit"}).context["result"]["ranking"]
    rows = re.findall(r"<tr class=\"[^\"]*\">(.*?)</tr>", html, re.S)
    assert len(rows) == len(ranking) >= 2
    for row, candidate in zip(rows, ranking):
        cells = [unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
        assert len(cells) == 10 and cells[7] == score(candidate["scores"]["third"]), (cells, candidate["scores"])
    # every backend: no third term without a third model, nor with its weight 0
    config = SelectionConfig()
    for spec in ("minilm+use-multilingual", "minilm", "e5-small"):
        text = _weights_text(config, client_embeddings.backend(spec))
        assert "third" not in text and "e5-small" not in text, (spec, text)
    routed = client_embeddings.backend("minilm+use-multilingual+e5-small")
    assert "third model" not in _weights_text(replace(config, third_model_weight=0.0), routed)
    assert "for coding procedures 3 × area / (area + 1)" in _weights_text(config, routed, coding=True)
