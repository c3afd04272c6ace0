"""An agent's eval settings: agent admins only, validated, audited, and the API key never shown back."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from library.evals.configuration import agent_eval_settings_update
from library.models import AuditEvent

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
        "eval_runner": "model", "model_base_url": "http://127.0.0.1:9/v1", "model_name": "m-1", "model_api_key": "sk-very-secret",
        "eval_concurrency": 3, "eval_timeout_seconds": 20, "tool_schemas": '{"lookupOrder": {"type": "object"}}', "base_instruction": "Be brief.",
    }
    assert client.post(url, form).status_code == 302
    agent.refresh_from_db()
    assert agent.model_api_key == "sk-very-secret" and agent.eval_runner == "model" and agent.eval_concurrency == 3
    page = client.get(url).content.decode()
    assert "sk-very-secret" not in page and "A key is stored." in page
    event = AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent)
    assert "sk-very-secret" not in str(event.before) + str(event.after) and event.after["model_api_key_set"] is True
    # saving again without a key keeps it; the clear box removes it
    client.post(url, {**form, "model_api_key": ""})
    agent.refresh_from_db()
    assert agent.model_api_key == "sk-very-secret"
    client.post(url, {**form, "model_api_key": "", "clear_model_api_key": "on", "eval_runner": "demo"})
    agent.refresh_from_db()
    assert agent.model_api_key == ""


def test_incomplete_settings_are_refused_naming_the_field(agent, admin_user, reviewer, settings):
    with pytest.raises(ValidationError) as excinfo:
        agent_eval_settings_update(agent=agent, user=admin_user, eval_runner="http", eval_url="")
    assert "eval_url" in excinfo.value.message_dict
    settings.PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES = ["tests.evals_support"]
    with pytest.raises(ValidationError, match="outside PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES"):
        agent_eval_settings_update(agent=agent, user=admin_user, eval_runner="python", eval_python_path="os:system")
    agent_eval_settings_update(agent=agent, user=admin_user, eval_runner="python", eval_python_path="tests.evals_support:recording_runner")
    with pytest.raises(PermissionDenied):
        agent_eval_settings_update(agent=agent, user=reviewer, eval_runner="demo")
