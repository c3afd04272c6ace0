"""An agent's eval settings: agent admins only, validated, audited, and the API key never shown back."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from library.agents.settings import agent_settings_update
from library.models import AuditEvent
from library.models.secret_store import resolve_secret

pytestmark = pytest.mark.django_db


def test_permission_matrix(client, agent, reviewer, admin_user):
    url = reverse("reviews:agent_eval_settings", args=[agent.name])
    assert client.get(url).status_code == 302
    client.force_login(reviewer)
    assert client.get(url).status_code == 403 and client.post(url, {"eval_runner": "http"}).status_code == 403
    client.force_login(admin_user)
    assert client.get(reverse("reviews:agent_eval_settings", args=["nobody"])).status_code == 404
    assert client.get(url).status_code == 200


def test_the_key_is_stored_used_and_never_shown_back(client, agent, admin_user):
    client.force_login(admin_user)
    url = reverse("reviews:agent_eval_settings", args=[agent.name])
    form = {
        "eval_runner": "model",
        "model_base_url": "http://127.0.0.1:9/v1",
        "model_name": "m-1",
        "model_api_key": "sk-very-secret",
        "eval_concurrency": 3,
        "eval_timeout_seconds": 20,
        "tool_schemas": '{"lookupOrder": {"type": "object"}}',
        "base_instruction": "Be brief.",
    }
    assert client.post(url, form).status_code == 302
    agent.refresh_from_db()
    # stored sealed: the column never holds the key
    assert agent.model_api_key.startswith("fernet:") and "sk-very-secret" not in agent.model_api_key
    assert resolve_secret(agent.model_api_key) == "sk-very-secret"
    assert agent.eval_runner == "model" and agent.eval_concurrency == 3
    page = client.get(url).content.decode()
    assert "sk-very-secret" not in page and "A key is stored." in page
    event = AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent)
    assert "sk-very-secret" not in str(event.before) + str(event.after) and event.after["model_api_key_set"] is True
    # saving again without a key keeps it; the clear box removes it
    client.post(url, {**form, "model_api_key": ""})
    agent.refresh_from_db()
    assert resolve_secret(agent.model_api_key) == "sk-very-secret"
    client.post(url, {**form, "model_api_key": "", "clear_model_api_key": "on", "eval_runner": "demo"})
    agent.refresh_from_db()
    assert agent.model_api_key == ""


def test_incomplete_settings_are_refused_naming_the_field(agent, admin_user, reviewer, settings):
    with pytest.raises(ValidationError) as excinfo:
        agent_settings_update(agent=agent, user=admin_user, changes={"eval_runner": "http", "eval_url": ""})
    assert "eval_url" in excinfo.value.message_dict
    settings.PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES = ["tests.evals_support"]
    with pytest.raises(ValidationError, match="outside PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES"):
        agent_settings_update(
            agent=agent, user=admin_user, changes={"eval_runner": "python", "eval_python_path": "os:system"}
        )
    agent_settings_update(
        agent=agent,
        user=admin_user,
        changes={"eval_runner": "python", "eval_python_path": "tests.evals_support:recording_runner"},
    )
    with pytest.raises(PermissionDenied):
        agent_settings_update(agent=agent, user=reviewer, changes={"eval_runner": "demo"})


# ----------------------------------------------------------------------------- allow-lists and sealed keys


@pytest.mark.parametrize(
    "url, allowed",
    [
        ("http://127.0.0.1:8123/eval", True),
        ("http://127.0.0.1/eval", True),
        ("https://127.0.0.1:8123/eval", False),  # another scheme
        ("http://127.0.0.1.evil.example/eval", False),  # a prefix of the host is not the host
        ("http://user:pw@127.0.0.1/eval", False),
        ("http://10.0.0.5/eval", False),
        ("https://models.example.com/v1", True),
        ("https://models.example.com/v1/chat", True),
        ("https://models.example.com/v10", False),  # a path under /v1 only
        ("https://models.example.com:8443/v1", False),  # the entry names the default port
    ],
)
def test_runner_urls_must_lie_in_the_allow_list(settings, url, allowed):
    from library.agents.settings import url_allowed

    settings.PROCMEM_EVAL_ALLOWED_URLS = ["http://127.0.0.1", "https://models.example.com:443/v1"]
    assert url_allowed(url) is allowed


def test_no_allow_list_means_no_http_or_python_runner(settings, agent, admin_user):
    settings.PROCMEM_EVAL_ALLOWED_URLS = []
    settings.PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES = []
    with pytest.raises(ValidationError, match="outside PROCMEM_EVAL_ALLOWED_URLS"):
        agent_settings_update(
            agent=agent, user=admin_user, changes={"eval_runner": "http", "eval_url": "http://127.0.0.1:9/eval"}
        )
    with pytest.raises(ValidationError, match="outside PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES"):
        agent_settings_update(
            agent=agent,
            user=admin_user,
            changes={"eval_runner": "python", "eval_python_path": "tests.evals_support:recording_runner"},
        )


def test_a_stored_url_outside_the_allow_list_is_refused_at_run_time(settings, agent):
    from library.evals.runners import RunnerError, runner_for_agent

    agent.eval_runner, agent.eval_url = "http", "http://127.0.0.1:9/eval"
    agent.save()
    settings.PROCMEM_EVAL_ALLOWED_URLS = ["https://agents.example.com"]
    with pytest.raises(RunnerError, match="outside PROCMEM_EVAL_ALLOWED_URLS"):
        runner_for_agent(agent)


def test_a_key_given_as_an_environment_reference_is_read_at_use(agent, admin_user, monkeypatch):
    from library.evals.runners import RunnerError, runner_for_agent

    agent_settings_update(
        agent=agent,
        user=admin_user,
        changes={
            "eval_runner": "model",
            "model_base_url": "http://127.0.0.1:9/v1",
            "model_name": "m",
            "model_api_key": "env:PROCMEM_TEST_MODEL_KEY",
        },
    )
    agent.refresh_from_db()
    assert agent.model_api_key == "env:PROCMEM_TEST_MODEL_KEY"
    monkeypatch.delenv("PROCMEM_TEST_MODEL_KEY", raising=False)
    with pytest.raises(RunnerError, match="PROCMEM_TEST_MODEL_KEY, which is unset"):
        runner_for_agent(agent)
    monkeypatch.setenv("PROCMEM_TEST_MODEL_KEY", "sk-from-env")
    assert runner_for_agent(agent)._api_key == "sk-from-env"
    with pytest.raises(ValidationError, match="not an environment reference"):
        agent_settings_update(agent=agent, user=admin_user, changes={"model_api_key": "env:not a name"})


def test_the_database_refuses_a_plaintext_key(agent):
    from django.db import IntegrityError, transaction

    from library.models import Agent

    with pytest.raises(IntegrityError), transaction.atomic():
        Agent.objects.filter(pk=agent.pk).update(model_api_key="sk-plain")


def test_a_changed_secrets_key_makes_the_stored_key_unreadable_with_a_clear_message(settings, agent):
    from library.models.secret_store import SecretUnavailable, seal_secret

    sealed = seal_secret("sk-1")
    settings.PROCMEM_SECRETS_KEY = "another key"
    with pytest.raises(SecretUnavailable, match="set the key again"):
        resolve_secret(sealed)


@pytest.mark.postgres
def test_the_migration_seals_existing_plaintext_keys(agent):
    from importlib import import_module

    from django.apps import apps as global_apps
    from django.db import connection

    from library.models import Agent

    migration = import_module("library.migrations.0006_sealed_keys_token_expiry")
    # given: a row written before keys were sealed (the constraint did not exist then)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # the agent fixture's deferred foreign-key checks (its namespace) must run before an ALTER
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE library_agent DROP CONSTRAINT agent_model_api_key_sealed")
    Agent.objects.filter(pk=agent.pk).update(model_api_key="sk-legacy")

    migration.seal_keys(global_apps, type("Editor", (), {"connection": connection}))
    stored = Agent.objects.get(pk=agent.pk).model_api_key
    assert stored.startswith("fernet:") and resolve_secret(stored) == "sk-legacy"
