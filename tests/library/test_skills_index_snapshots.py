"""The versioned twin of the Agent Skills discovery index (library/api/skills.py `index_snapshot`):
`sets/<etag>/index.json`, named by the unversioned index's `Content-Location`, the same entries at
a URL whose bytes never change, served while its set is the one served, per token and parameters."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import urljoin

import jsonschema
import pytest

from library import services
from library.api.tokens import token_create
from library.models import Agent, ApiToken, Intent, Namespace, Source
from library.services import procedure_scope_update
from tests.conftest import make_active, propose_next_version

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

INDEX = "/.well-known/agent-skills/index.json"
SCHEMA = json.loads((Path(__file__).parent / "data" / "agent_skills" / "discovery-0.2.0.schema.json").read_text())


def get(client, path: str, token: str, **extra):
    return client.get(path, HTTP_AUTHORIZATION=f"Bearer {token}", **extra)


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def active_pair(candidate, other_procedure, admin_user):
    return make_active(candidate, admin_user), make_active(other_procedure.versions.get(number=1), admin_user)


def test_the_index_names_its_versioned_twin_which_lists_the_same_skills_at_the_same_urls(
    client, read_token, active_pair
):
    # given the unversioned index
    index = get(client, INDEX, read_token)
    etag = index["ETag"].strip('"')
    assert index["Content-Location"] == f"sets/{etag}/index.json"
    # when its versioned twin is fetched where it says
    pinned_url = urljoin(INDEX, index["Content-Location"])
    pinned = get(client, pinned_url, read_token)
    # then: the discovery schema, the same entries, each URL resolving (RFC 3986, against the
    # versioned URL) to the very artifact the unversioned index names, digest for digest
    assert pinned.status_code == 200 and pinned["Content-Type"] == "application/json"
    jsonschema.validate(pinned.json(), SCHEMA, format_checker=jsonschema.FormatChecker())
    latest, snapshot = index.json()["skills"], pinned.json()["skills"]
    assert [{**e, "url": None} for e in snapshot] == [{**e, "url": None} for e in latest]
    for old, new in zip(latest, snapshot, strict=True):
        assert urljoin(pinned_url, new["url"]) == urljoin(INDEX, old["url"])
        artifact = get(client, urljoin(pinned_url, new["url"]), read_token)
        assert new["digest"] == "sha256:" + hashlib.sha256(artifact.content).hexdigest()
    # bytes that never change at that URL: cached for good, revalidated by their own ETag
    assert "immutable" in pinned["Cache-Control"] and "Authorization" in pinned["Vary"]
    assert pinned["ETag"] == f'"{hashlib.sha256(pinned.content).hexdigest()[:40]}"'
    assert get(client, pinned_url, read_token, HTTP_IF_NONE_MATCH=pinned["ETag"]).status_code == 304
    # the unversioned index keeps its shape and its short cache; a 304 names the twin too
    assert "max-age=10" in index["Cache-Control"] and b"sets/" not in index.content
    assert (
        get(client, INDEX, read_token, HTTP_IF_NONE_MATCH=index["ETag"])["Content-Location"]
        == (index["Content-Location"])
    )


def test_a_pinned_set_is_served_while_it_is_the_served_one_and_again_when_it_comes_back(
    client, read_token, active_pair, agent, intent, candidate, proposer, admin_user
):
    # given the URL of today's set
    pinned_url = urljoin(INDEX, get(client, INDEX, read_token)["Content-Location"])
    before = get(client, pinned_url, read_token).content
    # when a new version is approved: the old set is no longer served, its URL says where to look
    v2 = propose_next_version(candidate, proposer)
    make_active(v2, admin_user)
    gone = get(client, pinned_url, read_token)
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "not_found"
    assert "index.json lists the skills served now" in gone.json()["error"]["message"]
    now = get(client, INDEX, read_token)
    assert urljoin(INDEX, now["Content-Location"]) != pinned_url
    assert (
        "skills/refund-over-limit/v2/SKILL.md" in get(client, urljoin(INDEX, now["Content-Location"]), read_token).text
    )
    # rolled back: the same set, so the same URL serves the very bytes of before
    services.version_rollback(version=candidate, user=admin_user, reason="v2 confuses the agent")
    assert get(client, pinned_url, read_token).content == before


def test_the_parameters_travel_and_each_token_reads_its_own_sets_only(
    client, read_token, active_pair, candidate, agent, proposer, admin_user
):
    procedure = candidate.procedure
    procedure_scope_update(
        procedure=procedure,
        user=admin_user,
        namespace=procedure.namespace,
        roles=["billing"],
        priority=procedure.priority,
        confidence=procedure.confidence,
        reason="billing agents only",
    )
    # the role picks the set, so it is part of the twin's URL and of each entry's
    billing = get(client, INDEX + "?role=billing", read_token)
    assert billing["Content-Location"] == f"sets/{billing['ETag'].strip(chr(34))}/index.json?role=billing"
    pinned = get(client, urljoin(INDEX, billing["Content-Location"]), read_token).json()["skills"]
    assert [e["url"] for e in pinned] == [
        "../../skills/order-status/v1/SKILL.md?role=billing",
        "../../skills/refund-over-limit/v1/SKILL.md?role=billing",
    ]
    # the billing set's URL read as another role's: not that role's set
    path = urljoin(INDEX, billing["Content-Location"]).replace("role=billing", "role=triage")
    assert get(client, path, read_token).status_code == 404
    # another agent, another namespace: its token never reads this agent's set, even by its URL
    other = Agent.objects.create(
        name="other_agent", tools=["lookupOrder"], namespace=Namespace.objects.create(name="t")
    )
    other_token = token_create(agent=other, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    make_active(
        services.procedure_propose(
            agent=other,
            intent=Intent.objects.create(agent=other, name="order_status"),
            key="secret.plan",
            applies_when="Only the other team's agent may know this.",
            steps=["Look up the order with lookupOrder({{order_id}})."],
            required_tools=["lookupOrder"],
            forbidden_actions=[],
            source=Source.MANUAL,
            proposed_by=proposer,
        ),
        admin_user,
    )
    theirs = urljoin(INDEX, get(client, INDEX, other_token)["Content-Location"])
    assert get(client, theirs, other_token).status_code == 200
    assert get(client, theirs, read_token).status_code == 404
    ours = urljoin(INDEX, get(client, INDEX, read_token)["Content-Location"])
    assert get(client, ours, other_token).status_code == 404
    # no token, an ingest token, a write method, a name that is no set's
    assert client.get(ours).status_code == 401
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    assert get(client, ours, ingest).status_code == 403
    assert client.post(ours, HTTP_AUTHORIZATION=f"Bearer {read_token}").status_code == 405
    assert get(client, "/.well-known/agent-skills/sets/latest/index.json", read_token).status_code == 404
