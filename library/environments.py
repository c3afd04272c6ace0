"""An agent's environments and what each one serves besides production: the names (production
always; the ones the agent's admins list in its settings), the rollout arm of a session, and the
plan of releases and running rollouts that the served sets are derived with (library/serving/environment_sets.py).
Pure reads and checks; the state changes are in library/services/ (approve, erase) and
library/services/releases.py (promote, withdraw, rollouts).

Which arm a session gets is a hash of the rollout and the session id the agent sends (`?session=`):
deterministic, so one session sees one arm however often it fetches, and independent between
rollouts. Without a session id an agent gets the control arm.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import F, Q

from .models import ENVIRONMENT_RE, PRODUCTION, STAGING, Agent, EvalRun, ProcedureRelease, ProcedureVersion, Rollout

MAX_ENVIRONMENTS = 10
MAX_SESSION_CHARS = 200  # AgentSession.session_id

# ---------------------------------------------------------------------------------------------- environments


def environment_names(agent: Agent) -> list[str]:
    """Every environment of the agent: production first, then the ones its admins defined."""
    return [PRODUCTION, *(agent.environments or [])]


def has_staging(agent: Agent) -> bool:
    return STAGING in (agent.environments or [])


def approval_environment(agent: Agent) -> str:
    """Where approving a candidate releases it, so the environment whose set its approval eval
    replays against: staging when the agent has it, else production."""
    return STAGING if has_staging(agent) else PRODUCTION


def eval_target_environment(version: ProcedureVersion, kind: str) -> str:
    """The environment whose served set an eval of `kind` on `version` replays against: the one the
    decision it gates changes. Approving a candidate releases it to staging when the agent has
    staging (services.version_approve), so its approval eval targets staging; promotion (an
    APPROVED version to production), retirement and rollback change production."""
    if kind == EvalRun.Kind.APPROVAL:
        return approval_environment(version.procedure.agent)
    return PRODUCTION


def clean_environments(value: Any) -> list[str]:
    """The environments beside production, as an admin lists them (a list, or names separated by
    commas or spaces): lower-case names, no repeats, `production` implied and never listed."""
    if isinstance(value, str):
        value = [part for part in re.split(r"[\s,]+", value) if part]
    if not isinstance(value, (list, tuple)):
        raise ValidationError({"environments": f"must be a list of environment names, got {type(value).__name__}"})
    names: list[str] = []
    for index, item in enumerate(value, start=1):
        if not isinstance(item, str) or not re.fullmatch(ENVIRONMENT_RE, item.strip()):
            shown = item[:40] if isinstance(item, str) else type(item).__name__
            raise ValidationError(
                {
                    "environments": f"name {index} ({shown!r}) is not an environment name: lower-case letters, digits, _ and -, starting with a letter, at most 32"
                }
            )
        name = item.strip()
        if name == PRODUCTION:
            continue  # always there
        if name in names:
            raise ValidationError({"environments": f"lists {name!r} twice"})
        names.append(name)
    if len(names) > MAX_ENVIRONMENTS:
        raise ValidationError(
            {"environments": f"has {len(names)} environments beside production; at most {MAX_ENVIRONMENTS}"}
        )
    return names


def environments_in_use(agent: Agent) -> set[str]:
    """The environments that still serve a released version (they cannot be removed)."""
    return set(ProcedureRelease.objects.filter(procedure__agent=agent).values_list("environment", flat=True))


class UnknownEnvironment(ValueError):
    """An environment name the agent does not have; the message lists the ones it has."""


def resolve_environment(agent: Agent, name: str | None) -> str:
    """`?environment=` as given by an agent: empty means production; a name the agent does not
    have raises UnknownEnvironment."""
    if not name:
        return PRODUCTION
    if name not in environment_names(agent):
        raise UnknownEnvironment(
            f"environment {name[:40]!r} is unknown for agent {agent.name}; it has: {', '.join(environment_names(agent))}."
        )
    return name


def clean_session(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > MAX_SESSION_CHARS:
        raise ValueError(f"session is longer than {MAX_SESSION_CHARS} characters.")
    return value


# ---------------------------------------------------------------------------------------------- arms


def rollout_arm(*, rollout_id: int, share: int, session: str | None) -> str:
    """The arm a session gets: `rollout` for `share` percent of the session ids (by a hash of the
    rollout and the session id), `control` for the rest and for a fetch without a session id."""
    if not session:
        return Rollout.Arm.CONTROL
    digest = hashlib.sha256(f"procmem-rollout:{rollout_id}:{session}".encode()).digest()
    return Rollout.Arm.ROLLOUT if int.from_bytes(digest[:8], "big") % 100 < share else Rollout.Arm.CONTROL


# ---------------------------------------------------------------------------------------------- the plan


@dataclass(frozen=True)
class StagedPlan:
    """What an agent's non-production environments and running rollouts serve instead of the
    production version: per environment, procedure key → released version id; per running rollout
    (id, procedure key, version id, control version id or None, share). Read in the snapshot of the
    production set it goes with (library/serving/active_set.py), so both show one committed state."""

    releases: dict[str, dict[str, int]] = field(default_factory=dict)
    rollouts: tuple[tuple[int, str, int, int | None, int], ...] = ()

    @property
    def fingerprint(self) -> str:
        rows = [
            f"r{env}:{key}:{vid}" for env, keys in sorted(self.releases.items()) for key, vid in sorted(keys.items())
        ]
        rows += [f"o{r[0]}:{r[2]}:{r[3] or ''}:{r[4]}" for r in self.rollouts]
        return hashlib.md5(";".join(rows).encode()).hexdigest()

    def differences(self, environment: str, session: str | None) -> tuple[dict[str, int | None], dict[str, str]]:
        """For `environment` and `session`: the version each procedure key gets instead of the
        production one (None: none), and the arm of each running rollout (production only)."""
        if environment != PRODUCTION:
            return dict(self.releases.get(environment, {})), {}
        overrides: dict[str, int | None] = {}
        arms: dict[str, str] = {}
        for rollout_id, key, version_id, control_id, share in self.rollouts:
            arm = rollout_arm(rollout_id=rollout_id, share=share, session=session)
            arms[key] = arm
            overrides[key] = version_id if arm == Rollout.Arm.ROLLOUT else control_id
        return overrides, arms


NOTHING_STAGED = StagedPlan()


def read_plan(agent_id: int, *, using: str) -> StagedPlan:
    """The agent's releases and running rollouts, of the procedures in the agent's namespace (what
    its sets serve); two queries, caller holds the set's snapshot."""
    releases: dict[str, dict[str, int]] = {}
    in_namespace = Q(procedure__agent_id=agent_id, procedure__namespace_id=F("procedure__agent__namespace_id"))
    rows = (
        Rollout.objects.using(using)
        .filter(in_namespace, state=Rollout.State.RUNNING)
        .values_list("pk", "procedure__key", "version_id", "control_version_id", "share")
        .order_by("pk")
    )
    rollouts = [tuple(row) for row in rows]
    for environment, key, version_id in (
        ProcedureRelease.objects.using(using)
        .filter(in_namespace)
        .values_list("environment", "procedure__key", "version_id")
    ):
        releases.setdefault(environment, {})[key] = version_id
    return StagedPlan(releases=releases, rollouts=tuple(rollouts))


# What the fingerprint statement of library/serving/active_set.py adds for the plan: a digest of the agent's
# releases and running rollouts (the set is rebuilt, with its plan, when they change).
STAGED_COLUMN = f"""(SELECT md5(coalesce(string_agg(x, ';' ORDER BY x), '')) FROM (
        SELECT 'r' || r.environment || ':' || r.procedure_id || ':' || r.version_id AS x
          FROM {ProcedureRelease._meta.db_table} r JOIN library_procedure p ON p.id = r.procedure_id
         WHERE p.agent_id = a.id AND p.namespace_id = a.namespace_id
        UNION ALL
        SELECT 'o' || o.id || ':' || o.version_id || ':' || coalesce(o.control_version_id::text, '') || ':' || o.share
          FROM {Rollout._meta.db_table} o JOIN library_procedure p ON p.id = o.procedure_id
         WHERE p.agent_id = a.id AND p.namespace_id = a.namespace_id AND o.state = 'running') staged) AS staged"""
