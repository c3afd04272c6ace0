"""The read path on real separate connections: the SELECT-only role refuses writes, the API works
through it, and approvals/rollbacks racing with readers never show two versions of one id."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from django.core.management import call_command
from django.db import connections
from django.db.utils import DatabaseError
from django.test import Client
from django.urls import reverse

from library import embeddings, services
from library.api.tokens import token_create
from library.models import ApiToken, LoadRefusal, Source, Status
from library.serving import active_set as serving
from tests.conftest import make_active

# Real separate connections: committed rows (transaction=True), and the read alias allowed.
pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "readonly"])


@pytest.fixture
def readonly_role(transactional_db):
    """A SELECT-only role made by `manage.py create_readonly_role` on the test database, and a
    Django connection that logs in as it. Dropped afterwards (roles are cluster-wide)."""
    from django.db.backends.postgresql.base import DatabaseWrapper

    role = f"procmem_ro_test_{os.getpid()}"
    os.environ["PROCMEM_TEST_RO_PASSWORD"] = "ro-test-password"
    call_command("create_readonly_role", role, "--password-env", "PROCMEM_TEST_RO_PASSWORD")
    settings_dict = dict(connections["default"].settings_dict, USER=role, PASSWORD="ro-test-password", CONN_MAX_AGE=0)
    wrapper = DatabaseWrapper(settings_dict, alias="readonly")
    yield role, wrapper
    wrapper.close()
    with connections["default"].cursor() as cursor:
        cursor.execute(f'DROP OWNED BY "{role}"')
        cursor.execute(f'DROP ROLE "{role}"')


@pytest.mark.postgres
def test_the_readonly_role_reads_no_secrets(readonly_role, candidate, admin_user, agent):
    """Password hashes, e-mail addresses, sessions, token hashes, model keys, the audit trail, raw
    sessions and sign-in records are all refused to the role; what the API serves is readable."""
    from django.db.utils import ProgrammingError

    role, wrapper = readonly_role
    token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)
    refused = [
        "SELECT password FROM auth_user",
        "SELECT email FROM auth_user",
        "SELECT * FROM auth_user",
        "SELECT session_key, session_data FROM django_session",
        "SELECT token_hash FROM library_apitoken",
        "SELECT model_api_key FROM library_agent",
        "SELECT * FROM library_agent",
        "SELECT * FROM library_auditevent",
        "SELECT * FROM library_agentsession",
        "SELECT * FROM axes_accessattempt",
        "SELECT * FROM guardian_userobjectpermission",
    ]
    for statement in refused:
        with wrapper.cursor() as cursor:
            with pytest.raises(ProgrammingError, match="permission denied"):
                cursor.execute(statement)
        wrapper.close()  # a failed statement aborts the transaction; start the next one clean
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT id, username FROM auth_user")
        assert cursor.fetchall()
        cursor.execute("SELECT id, name, tools FROM library_agent")
        assert cursor.fetchone()[1] == agent.name
        cursor.execute("SELECT count(*) FROM library_procedureversion")
        assert cursor.fetchone()[0] >= 1


@pytest.mark.postgres
def test_a_write_through_the_readonly_role_fails(readonly_role, candidate, admin_user):
    role, wrapper = readonly_role
    make_active(candidate, admin_user)
    with wrapper.cursor() as cursor:
        cursor.execute("SELECT current_user, count(*) FROM library_procedureversion WHERE status = 'ACTIVE'")
        assert cursor.fetchone() == (role, 1)
    attacks = [
        "UPDATE library_procedureversion SET status = 'RETIRED'",
        "INSERT INTO library_loadrefusal (version_id, tools_hash, missing_tools, created_at) "
        f"VALUES ({candidate.pk}, 'x', '[]', now())",
        "DELETE FROM library_apitoken",
        "UPDATE library_agent SET tools = '[]'",
    ]
    for statement in attacks:
        # the role's default is a read-only transaction; a session can switch that off, so the
        # grants are what must refuse the write
        for prelude in ("", "SET default_transaction_read_only = off"):
            wrapper.close()
            with pytest.raises(DatabaseError) as caught:
                with wrapper.cursor() as cursor:
                    if prelude:
                        cursor.execute(prelude)
                    cursor.execute(statement)
            message = str(caught.value)
            assert ("permission denied" in message) if prelude else ("read-only transaction" in message), message
    wrapper.close()
    assert services.ProcedureVersion.objects.get(pk=candidate.pk).status == Status.ACTIVE


@pytest.mark.postgres
def test_the_agent_api_works_through_the_readonly_role(readonly_role, candidate, admin_user, agent):
    # given: the API's read alias is the SELECT-only role, and a tool was removed
    role, wrapper = readonly_role
    make_active(candidate, admin_user)
    raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    services.agent_set_tools(agent=agent, tools=["lookupOrder", "checkReturnWindow", "replyTemplates"], user=admin_user)
    original = connections["readonly"]
    connections["readonly"] = wrapper
    serving.clear_cache()
    try:
        # when
        response = Client().get(
            reverse("api:active_set", kwargs={"agent": agent.name}), HTTP_AUTHORIZATION=f"Bearer {raw}"
        )
        services.agent_set_tools(agent=agent, tools=agent.tools + ["createApproval"], user=admin_user)
        selection = Client().get(
            reverse("api:select", kwargs={"agent": agent.name}),
            {"task": "a refund above the agent's limit"},
            HTTP_AUTHORIZATION=f"Bearer {raw}",
        )
    finally:
        connections["readonly"] = original
        serving.clear_cache()
    # then: the set was read as the role, and the new refusal was written through "default"
    assert response.status_code == 200
    assert [r["id"] for r in response.json()["refused"]] == ["refund.over_limit"]
    assert LoadRefusal.objects.filter(version=candidate).count() == 1
    # selection through the role too; the version's embedding was stored through "default"
    assert selection.status_code == 200 and [p["id"] for p in selection.json()["injected"]] == ["refund.over_limit"]
    from library.models import VersionEmbedding

    assert VersionEmbedding.objects.filter(version=candidate, model_key=serving.model_key()).count() == 1


@pytest.mark.postgres
def test_create_readonly_role_prints_sql_without_running_it(transactional_db, capsys):
    call_command("create_readonly_role", "procmem_never_created", "--no-password", "--print-sql")
    out = capsys.readouterr().out
    assert 'GRANT SELECT ON "public"."library_procedureversion" TO "procmem_never_created"' in out
    assert 'GRANT SELECT ("id", "username") ON "public"."auth_user" TO "procmem_never_created"' in out
    assert "ON ALL TABLES" not in out.replace("REVOKE ALL ON ALL TABLES", "")
    assert "INSERT" not in out and "UPDATE" not in out.replace("default_transaction_read_only", "")
    with connections["default"].cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_roles WHERE rolname = 'procmem_never_created'")
        assert cursor.fetchone() is None


@pytest.mark.postgres
def test_rollbacks_and_approvals_racing_with_readers_never_show_two_versions_of_one_id(
    transactional_db, agent, intent, proposer, admin_user
):
    # given: two procedures with two approved versions each (v1 RETIRED, v2 ACTIVE)
    versions: dict[str, list] = {}
    for key in ("refund.over_limit", "refund.partial"):
        for n in (1, 2):
            version = services.procedure_propose(
                agent=agent,
                intent=intent,
                key=key,
                applies_when=f"Refunds ({key}), wording {n}.",
                steps=["Look up the order with lookupOrder.", f"Variant {n}.", "Reply with replyTemplates."],
                required_tools=["lookupOrder", "replyTemplates"],
                forbidden_actions=[],
                source=Source.MANUAL,
                proposed_by=proposer,
            )
            make_active(version, admin_user)
            versions.setdefault(key, []).append(version)
    raw = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    url = reverse("api:active_set", kwargs={"agent": agent.name})
    serving.clear_cache()

    stop = threading.Event()
    seen: list[list[tuple[str, int]]] = []
    errors: list[BaseException] = []

    def writer():
        try:
            for i in range(40):
                for key, (v1, v2) in versions.items():
                    target = v1 if i % 2 == 0 else v2
                    services.version_rollback(version=target, user=admin_user, reason=f"race {i}")
        except BaseException as exc:  # surfaced below
            errors.append(exc)
        finally:
            stop.set()
            connections.close_all()

    def reader():
        client = Client()
        try:
            while not stop.is_set():
                response = client.get(url, HTTP_AUTHORIZATION=f"Bearer {raw}")
                assert response.status_code == 200, response.content
                seen.append([(p["id"], p["version"]) for p in response.json()["procedures"]])
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    assert len(seen) > 20
    versions_seen = set()
    for response in seen:
        ids = [key for key, _ in response]
        assert sorted(ids) == ["refund.over_limit", "refund.partial"], response  # exactly one version of each id
        versions_seen.update(response)
    # the readers did observe the changes (both versions of each id), not one frozen set
    assert {("refund.over_limit", 1), ("refund.over_limit", 2)} <= versions_seen


def test_step_vectors_are_stored_once_with_the_applies_when_vector(
    readonly_shares_default, candidate, admin_user, agent
):
    from library.models import VersionEmbedding
    from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig

    make_active(candidate, admin_user)
    serving.clear_cache()
    # given: a row stored before the step signal existed (appliesWhen vector only)
    first = serving.active_set_for_agent(agent=agent)
    first.index(Ranker(cache=EmbeddingCache(), config=SelectionConfig(use_steps=False)))
    row = VersionEmbedding.objects.get(version=candidate)
    assert row.steps_vectors is None
    # when: a process with the step signal on ranks the set
    serving.clear_cache()
    served = serving.active_set_for_agent(agent=agent)
    embedded: list[str] = []
    fresh = EmbeddingCache()
    real = fresh.embedder

    def counting(texts):
        embedded.extend(texts)
        return real(texts)

    fresh._embedder = counting
    served.index(Ranker(cache=fresh))
    # then: the steps were embedded and stored, one vector per step; the appliesWhen vector was read
    row.refresh_from_db()
    vectors = np.frombuffer(bytes(row.steps_vectors), dtype="<f4").reshape(len(candidate.steps), -1)
    assert vectors.shape == (4, embeddings.dimension()) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert candidate.applies_when not in embedded and set(embedded) == set(candidate.steps)
    # and a third process reads both from the row without embedding anything
    serving.clear_cache()
    again: list[str] = []
    third = EmbeddingCache(
        lambda texts: again.extend(texts) or np.zeros((len(texts), embeddings.dimension()), np.float32)
    )
    serving.active_set_for_agent(agent=agent).index(Ranker(cache=third))
    assert again == [] and np.allclose(third.matrix(candidate.steps), vectors)
