"""An agent's capture settings: opt-in automatic capture, the service, and manage.py agent_settings."""

import io
import json

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from guardian.shortcuts import assign_perm

from library.agents.settings import agent_settings_update
from library.models import Agent, AuditEvent

pytestmark = pytest.mark.django_db


def test_defaults_are_opt_in_and_documented():
    agent = Agent.objects.create(name="fresh_agent")
    assert (agent.auto_capture_enabled, agent.min_tool_calls, agent.support_threshold) == (False, 3, 20)
    assert (agent.significance_level, agent.backtest_share) == (0.05, 0.25)


def test_only_an_agent_admin_changes_them(agent, outsider):
    with pytest.raises(PermissionDenied):
        agent_settings_update(agent=agent, user=outsider, changes={"auto_capture_enabled": True})
    assign_perm("library.manage_agent", outsider, agent)
    updated = agent_settings_update(
        agent=agent, user=outsider, changes={"auto_capture_enabled": True, "min_tool_calls": 2}
    )
    assert updated.auto_capture_enabled and updated.min_tool_calls == 2
    event = AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS, agent=agent)
    assert (
        event.before["auto_capture_enabled"] is False and event.after["min_tool_calls"] == 2 and event.actor == outsider
    )


@pytest.mark.parametrize(
    "field, value",
    [
        ("significance_level", 0),
        ("significance_level", 0.9),
        ("backtest_share", 0.8),
        ("min_tool_calls", 0),
        ("support_threshold", 0),
        ("min_tool_calls", "three"),
        ("colour", "blue"),
    ],
)
def test_bad_values_are_refused_naming_the_field(agent, field, value):
    with pytest.raises(ValidationError) as info:
        agent_settings_update(agent=agent, user=None, actor_label="test", changes={field: value})
    assert field in info.value.message_dict
    agent.refresh_from_db()
    assert (
        agent.significance_level == 0.05 and not AuditEvent.objects.filter(action=AuditEvent.Action.SETTINGS).exists()
    )


def test_command_shows_and_changes_settings(agent):
    out = io.StringIO()
    call_command(
        "agent_settings",
        agent.name,
        "--auto-capture",
        "on",
        "--significance-level",
        "0.01",
        "--backtest-share",
        "0.2",
        stdout=out,
    )
    assert "Automatic capture (scheduled mining): on" in out.getvalue()
    out = io.StringIO()
    call_command("agent_settings", agent.name, "--json", stdout=out)
    shown = json.loads(out.getvalue())
    assert (shown["auto_capture_enabled"], shown["significance_level"], shown["backtest_share"]) == (True, 0.01, 0.2)
    assert AuditEvent.objects.get(action=AuditEvent.Action.SETTINGS).actor_label == "manage.py agent_settings"


def test_command_refuses_bad_input_clearly(agent):
    with pytest.raises(CommandError, match="backtest_share"):
        call_command("agent_settings", agent.name, "--backtest-share", "0.9")
    with pytest.raises(CommandError, match="not on or off"):
        call_command("agent_settings", agent.name, "--auto-capture", "maybe")
    with pytest.raises(CommandError, match="No agent named"):
        call_command("agent_settings", "nobody")
