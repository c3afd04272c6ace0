"""The served set as Agent Skills (library/serving/skills.py, library/api/skills.py): the discovery
index per token, agent, environment and role, each skill at its versioned URL with its digest,
ETag/304, who may read what, the reference validator (npm skills-ref, run with node) on every
served skill, the discovery schema on the index, and the TypeScript renderer agreeing with the
Python one on fuzzed records."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path
from urllib.parse import urljoin

import jsonschema
import pytest
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library import services
from library.api.tokens import token_create
from library.models import Agent, ApiToken, Intent, Namespace, Source
from library.services import procedure_scope_update
from procmem_client.skill_rendering import content_sha256, render_skill
from procmem_client.skills import read_skill_file
from tests.conftest import make_active, propose_next_version
from tests.library.test_typescript_client import built  # noqa: F401 (the fixture that compiles the TypeScript client)
from tests.skills_support import skills_ref_errors

pytestmark = pytest.mark.usefixtures("readonly_shares_default")

INDEX = "/.well-known/agent-skills/index.json"
SCHEMA = json.loads((Path(__file__).parent / "data" / "agent_skills" / "discovery-0.2.0.schema.json").read_text())
TS = Path(__file__).resolve().parents[2] / "clients" / "typescript"


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


@pytest.fixture
def read_token(agent, admin_user):
    return token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]


@pytest.fixture
def active_pair(candidate, other_procedure, admin_user):
    return make_active(candidate, admin_user), make_active(other_procedure.versions.get(number=1), admin_user)


def coding_version(agent, proposer, *, key="django.migration_added"):
    intent, _ = Intent.objects.get_or_create(agent=agent, name="add_model_field")
    return services.procedure_propose(
        agent=agent,
        intent=intent,
        key=key,
        applies_when="A model gains a field and the database needs a migration.",
        steps=["Add the field to the model with lookupOrder.", "Run makemigrations for the app."],
        required_tools=["lookupOrder"],
        forbidden_actions=["Never edit an applied migration."],
        preconditions=["the model file exists"],
        postconditions=["a new migration file exists"],
        verify_command="python manage.py makemigrations --check --dry-run",
        source=Source.MANUAL,
        proposed_by=proposer,
    )


def get(client: Client, path: str, token: str, **extra):
    return client.get(path, **bearer(token), **extra)


def fetch(client: Client, entry_url: str, token: str):
    """An index entry's URL resolved against the index's, as the specification says (RFC 3986)."""
    return get(client, urljoin(INDEX, entry_url), token)


# ------------------------------------------------------------------------------------------- the index


def test_the_index_lists_each_served_version_with_the_digest_of_what_its_url_serves(
    client, read_token, active_pair, agent, proposer, admin_user
):
    # given: two ACTIVE procedures and a coding one with a verify command
    coding = make_active(coding_version(agent, proposer), admin_user)
    # when
    response = get(client, INDEX, read_token)
    # then
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    index = response.json()
    jsonschema.validate(index, SCHEMA, format_checker=jsonschema.FormatChecker())
    entries = {entry["name"]: entry for entry in index["skills"]}
    assert list(entries) == ["django-migration-added", "order-status", "refund-over-limit"]
    assert entries["refund-over-limit"]["type"] == "skill-md"
    assert entries["refund-over-limit"]["url"] == "skills/refund-over-limit/v1/SKILL.md"
    assert entries["django-migration-added"]["type"] == "archive"
    assert entries["django-migration-added"]["url"] == "skills/django-migration-added/v1/skill.tar.gz"
    for entry in entries.values():
        artifact = fetch(client, entry["url"], read_token)
        assert artifact.status_code == 200
        assert entry["digest"] == "sha256:" + hashlib.sha256(artifact.content).hexdigest()
        assert "immutable" in artifact["Cache-Control"] and "Authorization" in artifact["Vary"]
    # the archive is the folder at its root, the verify command as an executable script
    archive = fetch(client, entries["django-migration-added"]["url"], read_token)
    assert archive["Content-Type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(archive.content), mode="r:gz") as tar:
        assert sorted(tar.getnames()) == ["SKILL.md", "scripts/verify.sh"]
        assert tar.getmember("scripts/verify.sh").mode == 0o755
        script = tar.extractfile("scripts/verify.sh").read().decode()
    assert script.endswith("python manage.py makemigrations --check --dry-run\n")
    # every file's digest is named too, and the SKILL.md is the renderer's for the served record
    skill_md = get(client, "/.well-known/agent-skills/skills/django-migration-added/v1/SKILL.md", read_token)
    assert skill_md["Content-Type"] == "text/markdown; charset=utf-8"
    assert entries["django-migration-added"]["procmemFiles"]["SKILL.md"] == (
        "sha256:" + hashlib.sha256(skill_md.content).hexdigest()
    )
    data, body = read_skill_file(skill_md.content.decode())
    assert data["metadata"]["procmem-content-sha256"] == coding.content_hash
    assert data["metadata"]["procmem-approved-by"] == "admin"
    assert "Before: the model file exists." in body and "Verify: python manage.py makemigrations" in body


def test_the_content_hash_in_the_metadata_is_the_versions_own(active_pair):
    for version in active_pair:
        version.refresh_from_db()
        assert content_sha256(version.to_dict()) == version.content_hash


def test_etag_304_and_the_index_changes_only_when_the_served_set_does(
    client, read_token, active_pair, agent, intent, proposer, admin_user, candidate
):
    first = get(client, INDEX, read_token)
    assert first["ETag"] and "Authorization" in first["Vary"] and "max-age=10" in first["Cache-Control"]
    not_modified = get(client, INDEX, read_token, HTTP_IF_NONE_MATCH=first["ETag"])
    assert not_modified.status_code == 304 and not_modified.content == b""
    # a new candidate is not served: the index is the same bytes
    v2 = propose_next_version(candidate, proposer)
    same = get(client, INDEX, read_token)
    assert same.content == first.content and same["ETag"] == first["ETag"]
    # a tool the served procedures do not need changes the active set, not the skills
    agent.tools = [*agent.tools, "unusedTool"]
    agent.save()
    from library.serving import active_set as serving

    serving.clear_cache()
    assert get(client, INDEX, read_token, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    # approving v2 changes the served set: a new index, v2's URL; v1's URL is no longer served
    make_active(v2, admin_user)
    changed = get(client, INDEX, read_token, HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]
    urls = [entry["url"] for entry in changed.json()["skills"]]
    assert "skills/refund-over-limit/v2/SKILL.md" in urls
    assert fetch(client, "skills/refund-over-limit/v1/SKILL.md", read_token).status_code == 404
    # rolled back: the very bytes of before, and v1's URL serves the same bytes as before
    services.version_rollback(version=candidate, user=admin_user, reason="v2 confuses the agent")
    assert get(client, INDEX, read_token).content == first.content


def test_head_on_the_index_and_a_skill_answers_as_get_without_a_body(client, read_token, active_pair):
    for path in (INDEX, "/.well-known/agent-skills/skills/refund-over-limit/v1/SKILL.md"):
        got = get(client, path, read_token)
        head = client.head(path, **bearer(read_token))
        assert head.status_code == got.status_code == 200, path
        assert head.content == b"" and got.content, path
        for header in ("Content-Type", "ETag", "Cache-Control", "Vary"):
            assert head.get(header) == got.get(header), (path, header)
    assert client.head(INDEX).status_code == 401  # HEAD needs the token as GET does


def test_a_skill_url_revalidates_with_its_etag(client, read_token, active_pair):
    path = "/.well-known/agent-skills/skills/order-status/v1/SKILL.md"
    first = get(client, path, read_token)
    assert first["ETag"] == f'"{hashlib.sha256(first.content).hexdigest()}"'
    assert get(client, path, read_token, HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304


def test_who_may_read_what(client, read_token, active_pair, agent, admin_user, proposer):
    # no token, an ingest token: refused; a write method: 405
    assert client.get(INDEX).status_code == 401
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    assert get(client, INDEX, ingest).status_code == 403
    assert client.post(INDEX, **bearer(read_token)).status_code == 405
    # another agent in another namespace with its own ACTIVE procedure: each token sees its own only
    team = Namespace.objects.create(name="other_team")
    other = Agent.objects.create(name="other_agent", tools=["lookupOrder"], namespace=team)
    other_intent = Intent.objects.create(agent=other, name="order_status")
    secret = services.procedure_propose(
        agent=other,
        intent=other_intent,
        key="secret.plan",
        applies_when="Only the other team's agent may know this.",
        steps=["Look up the order with lookupOrder({{order_id}})."],
        required_tools=["lookupOrder"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    make_active(secret, admin_user)
    other_token = token_create(agent=other, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    assert [e["name"] for e in get(client, INDEX, other_token).json()["skills"]] == ["secret-plan"]
    assert "secret-plan" not in [e["name"] for e in get(client, INDEX, read_token).json()["skills"]]
    assert get(client, "/.well-known/agent-skills/skills/secret-plan/v1/SKILL.md", read_token).status_code == 404
    assert get(client, "/.well-known/agent-skills/skills/order-status/v1/SKILL.md", other_token).status_code == 404
    # a file the folder does not have, a version that does not exist
    assert get(client, "/.well-known/agent-skills/skills/order-status/v1/../../x", read_token).status_code == 404
    assert get(client, "/.well-known/agent-skills/skills/order-status/v9/SKILL.md", read_token).status_code == 404
    missing = get(client, "/.well-known/agent-skills/skills/order-status/v1/scripts/verify.sh", read_token)
    assert missing.status_code == 404 and "no file" in missing.json()["error"]["message"]


def test_a_role_and_an_environment_pick_the_same_set_as_the_active_set_view(
    client, read_token, active_pair, candidate, admin_user
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
    names = [e["name"] for e in get(client, INDEX, read_token, QUERY_STRING="role=triage").json()["skills"]]
    assert names == ["order-status"]
    billing = get(client, INDEX + "?role=billing", read_token).json()["skills"]
    assert [e["name"] for e in billing] == ["order-status", "refund-over-limit"]
    # the role travels in each URL, so the skill resolves in the same set
    assert billing[1]["url"] == "skills/refund-over-limit/v1/SKILL.md?role=billing"
    assert fetch(client, billing[1]["url"], read_token).status_code == 200
    assert (
        get(
            client, "/.well-known/agent-skills/skills/refund-over-limit/v1/SKILL.md?role=triage", read_token
        ).status_code
        == 404
    )
    bad = get(client, INDEX + "?environment=qa", read_token)
    assert bad.status_code == 400 and bad.json()["error"]["parameter"] == "environment"


# ------------------------------------------------------------------------------- the reference validator


@pytest.mark.node
def test_every_served_skill_passes_the_reference_validator(
    client, read_token, active_pair, agent, proposer, admin_user, tmp_path
):
    # given: the served skills, including a coding one and one with a hostile-looking description
    make_active(coding_version(agent, proposer), admin_user)
    odd = services.procedure_propose(
        agent=agent,
        intent=agent.intents.get(name="order_status"),
        key="order.status_odd_text",
        applies_when='The customer writes "---" or: name: x\n--- and\tcontrol \x7f text, 👋 ' + "long " * 300,
        steps=["Look up the order with lookupOrder({{order_id}}) --- then reply."],
        required_tools=["lookupOrder"],
        forbidden_actions=["Never say: yes: no"],
        source=Source.MANUAL,
        proposed_by=proposer,
    )
    make_active(odd, admin_user)
    index = get(client, INDEX, read_token).json()
    jsonschema.validate(index, SCHEMA, format_checker=jsonschema.FormatChecker())
    folders = []
    for entry in index["skills"]:
        folder = tmp_path / entry["name"]
        folder.mkdir()
        artifact = fetch(client, entry["url"], read_token).content
        if entry["type"] == "archive":
            with tarfile.open(fileobj=io.BytesIO(artifact), mode="r:gz") as tar:
                tar.extractall(folder, filter="data")
        else:
            (folder / "SKILL.md").write_bytes(artifact)
        folders.append(folder)
    # when
    errors = skills_ref_errors(folders)
    # then
    assert errors == {str(folder): [] for folder in folders}
    assert len(folders) == 4


@pytest.mark.node
def test_the_golden_skill_folders_pass_the_reference_validator():
    golden = Path(__file__).resolve().parents[2] / "clients" / "golden" / "skills" / "expected"
    folders = [next(case.iterdir()) for case in sorted(golden.iterdir())]
    assert skills_ref_errors(folders) == {str(folder): [] for folder in folders}


# ------------------------------------------------------------------------ Python and TypeScript agree

texts = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80)
records = st.fixed_dictionaries(
    {
        "id": st.from_regex(r"[a-z][a-z0-9_]{0,12}(\.[a-z0-9_]{1,12}){1,3}", fullmatch=True),
        "version": st.integers(1, 999),
        "intent": st.from_regex(r"[a-z][a-z0-9_\-]{0,20}", fullmatch=True),
        "appliesWhen": texts,
        "steps": st.lists(texts, max_size=4),
        "requiredTools": st.lists(texts, max_size=10),
        "forbiddenActions": st.lists(texts, max_size=3),
        "evidence": st.just({}),
        "approvedBy": st.one_of(st.none(), st.from_regex(r"[a-z]{1,10}", fullmatch=True)),
        "approvedAt": st.one_of(st.none(), st.just("2026-11-29T10:04:05Z")),
    },
    optional={"verifyCommand": texts, "preconditions": st.lists(texts, max_size=2)},
)


@pytest.mark.node
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records_batch=st.lists(records, min_size=1, max_size=12))
def test_the_typescript_renderer_writes_the_same_skill_bytes(built, records_batch, tmp_path_factory):
    # `built` compiles clients/typescript/dist (it fails, never skips, under REQUIRE_SERVICES=1)
    cases = tmp_path_factory.mktemp("skills") / "cases.json"
    cases.write_text(json.dumps(records_batch, ensure_ascii=False), encoding="utf-8")
    done = subprocess.run(
        ["node", str(TS / "test-support" / "render-skills-json.js"), str(cases)],
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert json.loads(done.stdout.decode("utf-8")) == [render_skill(record) for record in records_batch]


def test_the_client_keeps_the_servers_procedure_id_rule():
    # the client names skills from procedure ids without asking the server: both hold one rule
    from library.models import PROCEDURE_KEY_RE, Procedure
    from procmem_client.skills import PROCEDURE_ID_MAX, PROCEDURE_ID_RE

    assert PROCEDURE_KEY_RE == f"^{PROCEDURE_ID_RE.pattern}$"
    assert Procedure._meta.get_field("key").max_length == PROCEDURE_ID_MAX
