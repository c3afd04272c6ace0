"""Helpers for the operations tests: ACTIVE versions made the only way the database allows
(propose → passing eval → approve by someone else), and the admins of the permission matrix."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from guardian.shortcuts import assign_perm

from library import services
from library.models import ProcedureVersion
from tests.conftest import make_passing_eval


def activate(version: ProcedureVersion, approver) -> ProcedureVersion:
    make_passing_eval(version)
    # the conflict gate has its own tests (tests/library/test_conflicts.py)
    return services.version_approve(version=version, user=approver, comment="test approval", acknowledge_conflicts=True)


def revise_and_activate(version: ProcedureVersion, editor, approver, *, step: str) -> ProcedureVersion:
    """A new version (edited by `editor`) with one extra step, made ACTIVE; `version` is retired."""
    new = services.version_revise(
        version=version,
        user=editor,
        applies_when=version.applies_when,
        steps=[*version.steps, step],
        required_tools=version.required_tools,
        forbidden_actions=version.forbidden_actions,
    )
    return activate(new, approver)


def make_user(name: str, *, group=None, **extra):
    user = get_user_model().objects.create_user(
        username=name, password="pw-" + name, email=f"{name}@example.com", **extra
    )
    if group is not None:
        user.groups.add(group)
    return user


def procedure_manager(procedure, name: str = "proc_manager"):
    user = make_user(name)
    assign_perm("library.manage_procedure", user, procedure)
    return user


def agent_manager(agent, name: str = "agent_manager"):
    """Holds manage_agent (approver rights) and manage_agent_procedures (retire/roll back) on `agent`."""
    user = make_user(name)
    assign_perm("library.manage_agent", user, agent)
    assign_perm("library.manage_agent_procedures", user, agent)
    return user
