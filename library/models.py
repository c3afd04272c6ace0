"""The procedure store: agents, intents, procedures, immutable versions, the append-only audit log,
sessions, mining runs, regression cases and eval runs.

Invariants that matter for safety are enforced by the database (constraints in Meta, triggers in
migrations/0002_invariants.py), not only here: at most one ACTIVE version per procedure; an ACTIVE
version has an approver, an approval time and a passing eval run on its exact content; version
content never changes; the audit log is append-only. Writes go through library/services.py.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypedDict

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.contrib.postgres.search import SearchVectorField
from django.db.models import Q
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

PROCEDURE_KEY_RE = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$"
procedure_key_validator = RegexValidator(
    PROCEDURE_KEY_RE, "A procedure id is dotted lower-case words, e.g. refund.over_limit"
)
slug_validator = RegexValidator(r"^[a-z][a-z0-9_\-]*$", "Use lower-case letters, digits, _ and -")


CONTENT_FIELDS = (
    "applies_when", "steps", "required_tools", "forbidden_actions", "preconditions", "postconditions", "verify_command",
)


def content_of(obj: Any) -> dict[str, Any]:
    """A version's content fields (what content_hash covers) from anything that carries them."""
    return {field: getattr(obj, field) for field in CONTENT_FIELDS}


def content_hash(
    *,
    applies_when: str,
    steps: list[str],
    required_tools: list[str],
    forbidden_actions: list[str],
    preconditions: list[str] | None = None,
    postconditions: list[str] | None = None,
    verify_command: str = "",
) -> str:
    """sha256 over the canonical JSON of the content fields. Eval runs and approvals pin it.

    A coding procedure's preconditions, postconditions and verify command are content too; they
    enter the hash only when set, so the hash of every procedure without them is what it always was."""
    fields: dict[str, Any] = {
        "appliesWhen": applies_when,
        "steps": list(steps),
        "requiredTools": list(required_tools),
        "forbiddenActions": list(forbidden_actions),
    }
    if preconditions:
        fields["preconditions"] = list(preconditions)
    if postconditions:
        fields["postconditions"] = list(postconditions)
    if verify_command:
        fields["verifyCommand"] = verify_command
    payload = json.dumps(
        fields,
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------------- namespaces


DEFAULT_NAMESPACE = "default"


class Namespace(models.Model):
    """A team or tenant. Global, not per agent: one team runs several agents, and its rights
    (review, approve, manage) granted on the namespace hold for every procedure in it, of any
    agent. An agent belongs to one namespace and is served the procedures of that namespace."""

    name = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # the namespace-wide rights (reviews/access.py): a holder has the right on every procedure in it
        permissions = [
            ("review_namespace_procedures", "Can review candidates of every procedure in this namespace"),
            ("approve_namespace_procedures", "Can approve versions of every procedure in this namespace"),
            ("manage_namespace_procedures", "Can retire, roll back and change the scope of every procedure in this namespace"),
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


def default_namespace_pk() -> int:
    """The namespace of a new agent when none is given (created by the migration that added
    namespaces; recreated here if someone deleted it while nothing used it)."""
    namespace, _ = Namespace.objects.get_or_create(
        name=DEFAULT_NAMESPACE, defaults={"description": "Procedures of every agent not assigned to a team"}
    )
    return namespace.pk


class NamespaceUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Namespace, on_delete=models.CASCADE)


class NamespaceGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Namespace, on_delete=models.CASCADE)


# ---------------------------------------------------------------------------------------------- who reads what
#
# Agent.objects.visible_to's rule (library/permissions.py has the rest of who may do what; these
# live here because the queryset needs them and permissions imports the models).

REVIEW_PERM = "library.review_procedureversion"


def reads_are_isolated() -> bool:
    """Read isolation by namespace (PROCMEM_NAMESPACE_READ_ISOLATION, off by default)."""
    return bool(getattr(settings, "NAMESPACE_READ_ISOLATION", False))


def reads_every_namespace(user) -> bool:
    """Whether `user` (signed in) reads every agent: always with isolation off; with it on, only
    superusers and global reviewers (the `reviewers` group's model permission)."""
    return not reads_are_isolated() or user.is_superuser or (user.is_active and user.has_perm(REVIEW_PERM))


def _held(user) -> tuple[models.QuerySet[Namespace], models.QuerySet[Agent], models.QuerySet[Procedure]]:
    """The namespaces, agents and procedures `user` holds an object permission on, directly or
    through a group (any permission: review, approve, manage, promote), as subqueries."""
    groups = user.groups.all()
    namespaces = Namespace.objects.filter(
        Q(pk__in=NamespaceUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=NamespaceGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    agents = Agent.objects.filter(
        Q(pk__in=AgentUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=AgentGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    procedures = Procedure.objects.filter(
        Q(pk__in=ProcedureUserObjectPermission.objects.filter(user=user).values("content_object_id"))
        | Q(pk__in=ProcedureGroupObjectPermission.objects.filter(group__in=groups).values("content_object_id"))
    )
    return namespaces, agents, procedures


def agents_with_a_right(user) -> models.QuerySet[Agent]:
    """Agents on which `user` holds a right: on the agent, one of its procedures, its namespace or
    a namespace one of its procedures is in (the operations pages' audience, reviews.access)."""
    namespaces, agents, procedures = _held(user)
    held_namespaces = namespaces.values("pk")
    return Agent.objects.filter(
        Q(pk__in=agents.values("pk"))
        | Q(pk__in=procedures.values("agent_id"))
        | Q(namespace__in=held_namespaces)
        | Q(pk__in=Procedure.objects.filter(namespace__in=held_namespaces).values("agent_id"))
    )


def namespaces_with_a_right(user) -> models.QuerySet[Namespace]:
    """Namespaces `user` holds a right in: a right on the namespace, on an agent in it or on a
    procedure in it."""
    namespaces, agents, procedures = _held(user)
    return Namespace.objects.filter(
        Q(pk__in=namespaces.values("pk")) | Q(pk__in=agents.values("namespace_id")) | Q(pk__in=procedures.values("namespace_id"))
    )


def agents_readable_under_isolation(user) -> models.QuerySet[Agent]:
    """With read isolation on, the agents a user who does not read everything may read: every agent
    of a namespace they hold a right in, and every agent they hold a right on (through one of its
    procedures, possibly scoped to another namespace)."""
    return Agent.objects.filter(
        Q(namespace__in=namespaces_with_a_right(user).values("pk")) | Q(pk__in=agents_with_a_right(user).values("pk"))
    )


# ---------------------------------------------------------------------------------------------- agents


class AgentQuerySet(models.QuerySet):
    def visible_to(self, user) -> "AgentQuerySet":
        """The agents `user` may read. Anonymous users: none. By default every signed-in member of
        the library reads every agent (the queryset unfiltered: reviews.access.every_agent's fast
        path). With read isolation by namespace on (settings.NAMESPACE_READ_ISOLATION), a user who
        is neither a superuser nor a global reviewer reads only the agents of the namespaces they
        hold a right in (agents_readable_under_isolation). Approve/retire rights are object
        permissions, checked per action."""
        if user is None or not user.is_authenticated:
            return self.none()
        if reads_every_namespace(user):
            return self
        return self.filter(pk__in=agents_readable_under_isolation(user).values("pk"))


class Agent(models.Model):
    class Kind(models.TextChoices):
        TOOLS = "tools", "Tool-calling agent (skeleton = tool names)"
        CODING = "coding", "Coding agent (skeleton = activity classes; procedures need a verify command)"

    # how its eval replays reach the agent (library/evals/runners.py)
    class Runner(models.TextChoices):
        DEMO = "demo", "Demo agent (simulator)"
        HTTP = "http", "HTTP eval endpoint"
        PYTHON = "python", "Python callable"
        MODEL = "model", "Model replay (OpenAI-compatible chat completions)"

    name = models.CharField(max_length=64, unique=True, validators=[slug_validator])
    description = models.TextField(blank=True)
    namespace = models.ForeignKey(
        Namespace, on_delete=models.PROTECT, related_name="agents", default=default_namespace_pk,
        help_text="The team or tenant; the agent API serves this agent the procedures of this namespace",
    )
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.TOOLS)
    tools = models.JSONField(default=list, help_text="The tool names this agent really has")
    tool_schemas = models.JSONField(default=dict, blank=True, help_text="Tool name → JSON schema (model replay)")
    procedural_memory_enabled = models.BooleanField(default=True)
    # Capture settings (docs: mining). Automatic capture is opt-in: scheduled mining runs only for
    # agents whose admins switched it on; a manual run always mines.
    auto_capture_enabled = models.BooleanField(default=False)
    injection_cap = models.PositiveSmallIntegerField(default=2)
    support_threshold = models.PositiveIntegerField(
        default=20, help_text="Distinct tasks a group of resolved sessions needs before it is tested"
    )
    min_tool_calls = models.PositiveSmallIntegerField(
        default=3, help_text="Sessions with fewer tool calls (after ignored tools) are not mined"
    )
    significance_level = models.FloatField(
        default=0.05, help_text="Family-wise error rate of the skeleton tests of one mining run"
    )
    backtest_share = models.FloatField(
        default=0.25, help_text="Share of each intent's newest sessions (by end time) held back to test candidates"
    )
    # coding agents: a task family (library/coding/families.py) yields a candidate from this many
    # resolved sessions with a verify command; rules override the default grouping by path
    coding_min_traces = models.PositiveSmallIntegerField(
        default=2, help_text="Coding agents: resolved sessions with a verify command a task family needs for a candidate"
    )
    coding_family_rules = models.JSONField(
        default=list, blank=True,
        help_text='Coding agents: task families by path, overriding the default: [{"prefix": "django/db/migrations", "family": "django/db/migrations"}]',
    )
    review_after_days = models.PositiveSmallIntegerField(
        default=180, help_text="An ACTIVE version is due for re-review this many days after approval or its last review"
    )
    redaction_patterns = models.JSONField(
        default=list, blank=True, help_text='Extra redaction patterns: [{"label": "order_id", "regex": "#W\\d+"}]'
    )
    base_instruction = models.TextField(blank=True)
    # Eval replay settings. Keys are never shown back in the UI or API.
    eval_runner = models.CharField(max_length=16, choices=Runner.choices, default=Runner.DEMO)
    eval_url = models.URLField(blank=True)
    eval_python_path = models.CharField(max_length=255, blank=True)
    eval_concurrency = models.PositiveSmallIntegerField(default=4)
    eval_timeout_seconds = models.FloatField(default=30.0)
    model_base_url = models.URLField(blank=True)
    model_name = models.CharField(max_length=128, blank=True)
    # Never plaintext: "", "env:NAME" or "fernet:<token>" (library/secret_store.py); a check
    # constraint refuses anything else, and save() seals a raw key given to it.
    model_api_key = models.CharField(max_length=512, blank=True)
    current_model = models.CharField(max_length=128, blank=True, help_text="The LLM the agent runs on now")
    environments = models.JSONField(
        default=list, blank=True,
        help_text="Environments beside production (always there), e.g. [\"staging\"]: with staging, approved versions go there first",
    )
    # The label rule (library/outcomes.py): how a session's final label follows from its label history.
    complaint_window_days = models.PositiveSmallIntegerField(
        default=0, help_text="A complaint within this many days of a session's end makes it failed, and its label is final only then (0: off)"
    )
    closed_by_customer_resolves = models.BooleanField(
        default=True, help_text="A ticket closed by the customer counts as resolved when no outcome says resolved or not"
    )
    min_rating = models.FloatField(
        null=True, blank=True, help_text="A rating at or above this counts as resolved, below as failed, when no outcome says (empty: ratings decide nothing)"
    )
    model_drafts_enabled = models.BooleanField(
        default=False,
        help_text="Mining asks the agent's model (model base URL, name and key) to word each mined draft; "
        "the rule draft stays when the model fails or its draft is refused",
    )
    selects_with_intent = models.BooleanField(
        default=True,
        help_text="The agent passes the session's intent to select (a hard filter); eval replays select the same way. "
        "Off: the agent selects by the task text alone, and a candidate competes with every intent's procedures",
    )
    review_target_hours = models.PositiveIntegerField(
        default=72, help_text="How long a candidate of this agent should wait for review; the queue's ageing badges compare against it"
    )
    api_rate_limits = models.JSONField(
        default=dict, blank=True,
        help_text='The agent API\'s limits where they differ from the defaults: {"select": {"token": "600/minute", "ip": "1200/minute"}} (library/api/limits.py)',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AgentQuerySet.as_manager()

    class Meta:
        ordering = ["name"]
        permissions = [
            ("approve_agent_procedures", "Can approve versions of every procedure of this agent"),
            ("manage_agent_procedures", "Can retire and roll back every procedure of this agent"),
            ("manage_agent", "Can change this agent's tools, tokens and approver rights"),
            ("promote_agent_procedures", "Can promote approved versions of every procedure of this agent between environments and run rollouts"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(injection_cap__lte=20), name="agent_injection_cap_lte_20"),
            models.CheckConstraint(
                condition=Q(model_api_key="") | Q(model_api_key__startswith="env:") | Q(model_api_key__startswith="fernet:"),
                name="agent_model_api_key_sealed",
            ),
            models.CheckConstraint(
                condition=Q(significance_level__gt=0) & Q(significance_level__lte=0.5), name="agent_significance_level_range"
            ),
            models.CheckConstraint(
                condition=Q(backtest_share__gte=0) & Q(backtest_share__lte=0.5), name="agent_backtest_share_range"
            ),
            models.CheckConstraint(condition=Q(min_tool_calls__gte=1), name="agent_min_tool_calls_positive"),
            models.CheckConstraint(condition=Q(support_threshold__gte=1), name="agent_support_threshold_positive"),
            models.CheckConstraint(condition=Q(coding_min_traces__gte=1), name="agent_coding_min_traces_positive"),
            models.CheckConstraint(
                condition=Q(review_after_days__gte=1) & Q(review_after_days__lte=3650), name="agent_review_after_days_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        from .secret_store import is_sealed, seal_secret

        if not is_sealed(self.model_api_key):
            self.model_api_key = seal_secret(self.model_api_key)
        super().save(*args, **kwargs)


class AgentToolChange(models.Model):
    """History of an agent's tool list. Load-time checks compare requiredTools to the newest list."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tool_changes")
    tools_before = models.JSONField(default=list)
    tools_after = models.JSONField(default=list)
    changed_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    reason = models.TextField(blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-changed_at", "-id"]

    @property
    def added(self) -> list[str]:
        return sorted(set(self.tools_after) - set(self.tools_before))

    @property
    def removed(self) -> list[str]:
        return sorted(set(self.tools_before) - set(self.tools_after))


class Intent(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="intents")
    name = models.CharField(max_length=100, validators=[slug_validator])
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["agent__name", "name"]
        constraints = [models.UniqueConstraint(fields=["agent", "name"], name="intent_unique_per_agent")]

    def __str__(self) -> str:
        return self.name


# ---------------------------------------------------------------------------------------------- procedures


ROLE_RE = r"^[a-z][a-z0-9_\-]{0,63}$"
MAX_ROLES = 20
PRIORITY_MIN, PRIORITY_MAX = -100, 100


class Confidence(models.TextChoices):
    """How sure the library's people are that a procedure is right: a word, not a number, because
    nobody measures it to two decimals (the measured figures are the eval and the metrics)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class ProcedureQuerySet(models.QuerySet):
    def bulk_create(self, objs, *args, **kwargs):
        """A procedure created without a namespace gets its agent's (as `save` does)."""
        objs = list(objs)
        missing = {p.agent_id for p in objs if p.namespace_id is None}
        if missing:
            namespaces = dict(Agent.objects.filter(pk__in=missing).values_list("pk", "namespace_id"))
            for procedure in objs:
                if procedure.namespace_id is None:
                    procedure.namespace_id = namespaces[procedure.agent_id]
        return super().bulk_create(objs, *args, **kwargs)


class Procedure(models.Model):
    """An identity: the dotted id, the agent it serves and its intent. Content lives in versions.

    Scope (governance metadata, not content: changing it makes no new version and needs no eval;
    it changes only through `procedure_scope_update`): the namespace it belongs to (default: its
    agent's), the roles an agent instance must present to receive it (empty: every role), a
    priority that breaks near-ties in selection, and a confidence shown to people and agents."""

    agent = models.ForeignKey(Agent, on_delete=models.PROTECT, related_name="procedures")
    key = models.CharField("id", max_length=120, validators=[procedure_key_validator])
    intent = models.ForeignKey(Intent, on_delete=models.PROTECT, related_name="procedures")
    namespace = models.ForeignKey(Namespace, on_delete=models.PROTECT, related_name="procedures")
    roles = models.JSONField(default=list, blank=True, help_text="Role names an agent instance may present; empty = all")
    priority = models.SmallIntegerField(default=0, help_text="Higher wins a near-tie in selection")
    confidence = models.CharField(max_length=6, choices=Confidence.choices, default=Confidence.MEDIUM)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProcedureQuerySet.as_manager()

    class Meta:
        ordering = ["agent__name", "key"]
        permissions = [
            ("approve_procedure", "Can approve versions of this procedure"),
            ("manage_procedure", "Can retire and roll back versions of this procedure"),
            ("promote_procedure", "Can promote approved versions of this procedure between environments and run rollouts"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="procedure_key_unique_per_agent"),
            models.CheckConstraint(
                condition=Q(priority__gte=PRIORITY_MIN) & Q(priority__lte=PRIORITY_MAX), name="procedure_priority_range"
            ),
            models.CheckConstraint(condition=Q(confidence__in=["low", "medium", "high"]), name="procedure_confidence_valid"),
        ]

    def __str__(self) -> str:
        return self.key

    def save(self, *args, **kwargs):
        if self.namespace_id is None and self.agent_id is not None:
            self.namespace_id = Agent.objects.filter(pk=self.agent_id).values_list("namespace_id", flat=True).first()
        super().save(*args, **kwargs)


class ProcedureUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Procedure, on_delete=models.CASCADE)


class ProcedureGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Procedure, on_delete=models.CASCADE)


class AgentUserObjectPermission(UserObjectPermissionBase):
    content_object = models.ForeignKey(Agent, on_delete=models.CASCADE)


class AgentGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Agent, on_delete=models.CASCADE)


class Status(models.TextChoices):
    CANDIDATE = "CANDIDATE"
    ACTIVE = "ACTIVE"
    # approved (approver, time, passing eval on its content) but not the production version: in
    # staging (or another non-production environment) and/or a production rollout; see
    # ProcedureRelease and Rollout
    APPROVED = "APPROVED", "Approved (not in production)"
    RETIRED = "RETIRED"
    REJECTED = "REJECTED"
    # content and evidence wiped; a VersionTombstone says who erased it, when and why
    ERASED = "ERASED"


class Source(models.TextChoices):
    MINED = "mined", "Mined from sessions"
    CAPTURED = "captured", "Captured automatically"
    IMPORTED = "imported"  # from a file or another deployment (library/interchange.py)
    MANUAL = "manual", "Written by hand"
    REVISION = "revision", "Edited by a reviewer"


class VersionQuerySet(models.QuerySet):
    def active(self) -> "VersionQuerySet":
        return self.filter(status=Status.ACTIVE)

    def due_for_review(self, today) -> "VersionQuerySet":
        return self.filter(status=Status.ACTIVE, review_by__lte=today)

    def approved(self) -> "VersionQuerySet":
        return self.filter(status=Status.APPROVED)

    def candidates(self) -> "VersionQuerySet":
        return self.filter(status=Status.CANDIDATE)

    def for_agent(self, agent: Agent) -> "VersionQuerySet":
        return self.filter(procedure__agent=agent)

    def quarantined(self) -> "VersionQuerySet":
        return self.filter(quarantined=True)


class CodingRecordFields(TypedDict, total=False):
    """A coding procedure's optional v1 fields (absent otherwise): the artefacts that must exist
    before, those that exist after, and the command that verifies the work."""

    preconditions: list[str]
    postconditions: list[str]
    verifyCommand: str


class ProcedureRecord(CodingRecordFields):
    id: str
    version: int
    status: str
    appliesWhen: str
    steps: list[str]
    requiredTools: list[str]
    forbiddenActions: list[str]
    evidence: dict[str, Any]
    approvedBy: str | None
    approvedAt: str | None


def _carries_approval_when(status: str) -> Q:
    """A version in `status` carries an approval: approver, time and the approving eval run."""
    return ~Q(status=status) | (Q(approved_by__isnull=False) & Q(approved_at__isnull=False) & Q(approval_eval_run__isnull=False))


class ProcedureVersion(models.Model):
    """One immutable version. Only the status columns change after creation (and only by services)."""

    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.CANDIDATE)
    applies_when = models.TextField()
    steps = models.JSONField()
    required_tools = models.JSONField(default=list)
    forbidden_actions = models.JSONField(default=list)
    evidence = models.JSONField(default=dict, blank=True)
    content_hash = models.CharField(max_length=64)
    # provenance
    source = models.CharField(max_length=10, choices=Source.choices)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    edited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="Who made this version's content (the last editor), if a person did",
    )
    provenance = models.JSONField(default=dict, blank=True, help_text="who/what proposed it, mining run, file")
    based_on = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    mining_run = models.ForeignKey("MiningRun", null=True, blank=True, on_delete=models.PROTECT, related_name="versions")
    # the policy screen's verdict on this content (content never changes, so neither does this)
    quarantined = models.BooleanField(default=False)
    quarantine_reasons = models.JSONField(default=list, blank=True)
    skeleton = models.JSONField(default=list, blank=True, help_text="Ordered tool names of the mined group")
    # a coding procedure's contract (content: immutable and part of the content hash)
    preconditions = models.JSONField(default=list, blank=True, help_text="Artefacts that must exist before, e.g. a failing test that reproduces the issue")
    postconditions = models.JSONField(default=list, blank=True, help_text="Artefacts that exist after, e.g. an edited source file, a passing test")
    verify_command = models.TextField(blank=True, help_text="The command that verifies the work (a coding procedure needs one)")
    # status columns
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    approval_eval_run = models.ForeignKey(
        "EvalRun", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    status_reason = models.TextField(blank=True)
    status_changed_at = models.DateTimeField(null=True, blank=True)
    review_by = models.DateField(
        null=True, blank=True, help_text="ACTIVE versions: due for re-review on this day (set on approval, roll back and review)"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The full-text document of the id and the four content fields. PostgreSQL fills it in a BEFORE
    # INSERT trigger (migrations/0006_review_day.py), so bulk inserts get it too, and indexes it
    # with GIN; content never changes, so neither does this. Unused (NULL) on SQLite.
    search_vector = SearchVectorField(null=True, editable=False)

    objects = VersionQuerySet.as_manager()

    class Meta:
        ordering = ["procedure_id", "-number"]
        constraints = [
            models.UniqueConstraint(fields=["procedure", "number"], name="version_number_unique"),
            models.UniqueConstraint(
                fields=["procedure"], condition=Q(status="ACTIVE"), name="one_active_version_per_procedure"
            ),
            models.CheckConstraint(condition=_carries_approval_when("ACTIVE"), name="active_version_is_approved"),
            models.CheckConstraint(condition=_carries_approval_when("APPROVED"), name="approved_version_is_approved"),
            models.CheckConstraint(
                condition=Q(status__in=["CANDIDATE", "APPROVED", "ACTIVE", "RETIRED", "REJECTED", "ERASED"]),
                name="version_status_valid",
            ),
            models.CheckConstraint(condition=Q(number__gte=1), name="version_number_positive"),
            models.CheckConstraint(condition=~Q(status="ACTIVE") | Q(review_by__isnull=False), name="active_version_has_review_by"),
        ]
        indexes = [models.Index(fields=["status", "procedure"], name="version_status_idx")]
        permissions = [("review_procedureversion", "Can review candidates: edit, comment, reject, start eval runs")]

    def __str__(self) -> str:
        return f"{self.procedure.key} v{self.number}"

    @property
    def key(self) -> str:
        return self.procedure.key

    @property
    def is_erased(self) -> bool:
        return self.status == Status.ERASED

    def compute_content_hash(self) -> str:
        return content_hash(**content_of(self))

    @property
    def is_coding(self) -> bool:
        return bool(self.verify_command or self.preconditions or self.postconditions)

    def to_dict(self) -> ProcedureRecord:
        """The agent-facing record (API v1 field names). Caller selects procedure and approved_by."""
        evidence = dict(self.evidence or {})
        if self.approval_eval_run_id:
            evidence["evalRunId"] = self.approval_eval_run_id
        record: ProcedureRecord = {
            "id": self.procedure.key,
            "version": self.number,
            "status": self.status,
            "appliesWhen": self.applies_when,
            "steps": list(self.steps),
            "requiredTools": list(self.required_tools),
            "forbiddenActions": list(self.forbidden_actions),
            "evidence": evidence,
            "approvedBy": self.approved_by.get_username() if self.approved_by_id else None,
            "approvedAt": self.approved_at.isoformat().replace("+00:00", "Z") if self.approved_at else None,
        }
        # v1 gains optional fields only: a procedure without them serialises exactly as before
        if self.preconditions:
            record["preconditions"] = list(self.preconditions)
        if self.postconditions:
            record["postconditions"] = list(self.postconditions)
        if self.verify_command:
            record["verifyCommand"] = self.verify_command
        return record


PRODUCTION = "production"
STAGING = "staging"
ENVIRONMENT_RE = r"^[a-z][a-z0-9_\-]{0,31}$"


class ProcedureRelease(models.Model):
    """Which approved version a non-production environment (staging, or a name the agent's admins
    define) serves for a procedure; without a row the environment serves the production (ACTIVE)
    version. Production itself has no rows: its version is the ACTIVE one. The database refuses a
    release of a version that is not APPROVED, of another procedure, or to an environment the agent
    does not have (migration 0015_environments_and_rollouts), and one row per (procedure,
    environment)."""

    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="releases")
    environment = models.CharField(max_length=32)
    version = models.ForeignKey(ProcedureVersion, on_delete=models.PROTECT, related_name="releases")
    released_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    released_at = models.DateTimeField()

    class Meta:
        ordering = ["procedure_id", "environment"]
        constraints = [
            models.UniqueConstraint(fields=["procedure", "environment"], name="one_release_per_procedure_environment"),
            models.CheckConstraint(condition=~Q(environment=PRODUCTION), name="release_not_production"),
        ]

    def __str__(self) -> str:
        return f"{self.procedure_id} in {self.environment}: version {self.version_id}"


class Rollout(models.Model):
    """A staged rollout in production: an APPROVED version serves `share` percent of the sessions
    (chosen by a hash of the session id, library/releases.py) while the ACTIVE version at the start
    (`control_version`, none when the procedure had none) serves the rest. At most one running per
    procedure; the share is strictly between 0 and 100 (a full share is a promotion). Completing
    makes the version ACTIVE; rolling back leaves production as it was. Rows are kept: the metrics
    compare the arms of finished rollouts too."""

    class State(models.TextChoices):
        RUNNING = "running"
        COMPLETED = "completed", "Completed (the version is ACTIVE)"
        ROLLED_BACK = "rolled_back", "Rolled back"

    class Arm(models.TextChoices):
        ROLLOUT = "rollout", "Rollout (the new version)"
        CONTROL = "control", "Control (the previous version)"

    procedure = models.ForeignKey(Procedure, on_delete=models.PROTECT, related_name="rollouts")
    version = models.ForeignKey(ProcedureVersion, on_delete=models.PROTECT, related_name="rollouts")
    control_version = models.ForeignKey(
        ProcedureVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
        help_text="The ACTIVE version when the rollout started (serves the control arm)",
    )
    share = models.PositiveSmallIntegerField(help_text="Percent of production sessions that get the new version")
    state = models.CharField(max_length=12, choices=State.choices, default=State.RUNNING)
    reason = models.TextField()
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    started_at = models.DateTimeField()
    # who ended it and why (completed or rolled back), and when
    ended_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    end_reason = models.TextField(blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(share__gt=0) & Q(share__lt=100), name="rollout_share_between_0_and_100"),
            models.UniqueConstraint(fields=["procedure"], condition=Q(state="running"), name="one_running_rollout_per_procedure"),
            models.CheckConstraint(condition=Q(state__in=["running", "completed", "rolled_back"]), name="rollout_state_valid"),
            models.CheckConstraint(
                condition=(Q(state="running") & Q(ended_at__isnull=True) & Q(ended_by__isnull=True))
                | (~Q(state="running") & Q(ended_at__isnull=False)),
                name="rollout_ended_when_not_running",
            ),
            models.CheckConstraint(condition=~Q(version=models.F("control_version")), name="rollout_version_not_control"),
        ]

    def __str__(self) -> str:
        return f"rollout {self.pk} ({self.share}%, {self.state})"


class VersionTombstone(models.Model):
    """What is left of an erased version: the version row keeps its id, number and content hash
    (its content, evidence and provenance are wiped); this row says who erased it, when and why.
    Written once by `version_erase`, never changed or deleted (database triggers, migration
    0008_version_erasure), and the database lets a version's content change only to the wiped
    values, only once, and only when this row exists for it."""

    class Ground(models.TextChoices):
        PERSONAL_DATA = "personal_data", "Personal-data request"
        POISONED = "poisoned", "Poisoned or harmful content"
        OTHER = "other"

    version = models.OneToOneField(ProcedureVersion, on_delete=models.PROTECT, related_name="tombstone")
    procedure_key = models.CharField(max_length=200)
    number = models.PositiveIntegerField()
    content_hash = models.CharField(max_length=64)
    status_before = models.CharField(max_length=10)
    ground = models.CharField(max_length=16, choices=Ground.choices)
    reason = models.TextField()
    erased_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    erased_at = models.DateTimeField()

    class Meta:
        ordering = ["-erased_at", "-id"]

    def __str__(self) -> str:
        return f"tombstone of {self.procedure_key} v{self.number}"

    @property
    def reference(self) -> str:
        """What replaces a copy of the erased text wherever erasure finds one (library/erasure.py)."""
        return f"[erased with tombstone {self.pk}]"


class ErasureSweep(models.Model):
    """What an erasure did to the copies of the erased text outside the version row
    (library/erasure.py), written in the erasing transaction: the stored rows it rewrote, the later
    versions it flagged for review, and the copies the check after the sweep still found.
    `fingerprints` are keyed digests of the erased text's word windows, never the text, so
    `scan_erased` can prove later that no stored text contains it. While a sweep's `finished_at` is
    NULL (only inside the erasing transaction) the database lets audit rows change their reason,
    before and after to a text that carries a tombstone's reference (migration 0023_erasure_sweep)."""

    tombstone = models.OneToOneField(VersionTombstone, on_delete=models.PROTECT, related_name="sweep")
    fingerprints = models.JSONField(default=list, blank=True)
    rewritten = models.JSONField(default=dict, blank=True, help_text='{"library.AuditEvent": [pk, ...], ...}')
    flagged_versions = models.JSONField(default=list, blank=True, help_text="Later versions that shared erased text verbatim")
    remaining = models.JSONField(default=list, blank=True, help_text="Copies the check after the sweep still found")
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]

    def __str__(self) -> str:
        return f"erasure sweep of tombstone {self.tombstone_id}"

    @property
    def rewritten_count(self) -> int:
        return sum(len(pks) for pks in (self.rewritten or {}).values())


class AuditEvent(models.Model):
    """Append-only: the database refuses UPDATE and DELETE on this table (see 0002_invariants)."""

    class Action(models.TextChoices):
        PROPOSE = "propose", "Proposed"
        REVISE = "revise", "Edited (new version)"
        APPROVE = "approve", "Approved"
        REJECT = "reject", "Rejected"
        RETIRE = "retire", "Retired"
        ROLLBACK = "rollback", "Rolled back"
        AUTO_RETIRE = "auto_retire", "Retired by a newer approval"
        IMPORT = "import", "Imported"
        GRANT = "grant", "Approver right granted"
        REVOKE = "revoke", "Approver right revoked"
        TOKEN_CREATE = "token_create", "API token created"
        TOKEN_REVOKE = "token_revoke", "API token revoked"
        TOOLS_CHANGE = "tools_change", "Tool list changed"
        REFUSED_AT_LOAD = "refused_at_load", "Refused at load"
        EVAL_START = "eval_start", "Eval run started"
        EVAL_FINISH = "eval_finish", "Eval run finished"
        EVAL_CANCEL = "eval_cancel", "Eval run cancelled"
        MINE = "mine", "Mining run"
        COMMENT = "comment", "Commented"
        SETTINGS = "settings", "Agent settings changed"
        CASE_CHANGE = "case_change", "Regression case changed"
        ERASE = "erase", "Erased (tombstone kept)"
        ERASE_COPY = "erase_copy", "Erased text removed (flagged for review)"
        REVIEW = "review", "Re-reviewed (kept ACTIVE)"
        DEMOTION_PROPOSE = "demotion_propose", "Demotion proposed"
        DEMOTION_DISMISS = "demotion_dismiss", "Demotion dismissed"
        DEMOTION_CONFIRM = "demotion_confirm", "Demotion confirmed"
        CONFLICT_SCAN = "conflict_scan", "Conflict scan changed the open conflicts"
        CONFLICT_ACK = "conflict_ack", "Approved despite a conflict (acknowledged)"
        CLAIM = "claim", "Candidate claimed"
        ASSIGN = "assign", "Candidate assigned"
        RELEASE = "release", "Candidate released"
        THREAD_RESOLVE = "thread_resolve", "Thread resolved"
        THREAD_REOPEN = "thread_reopen", "Thread reopened"
        STAGE = "stage", "Released to a non-production environment"
        PROMOTE = "promote", "Promoted to production"
        WITHDRAW = "withdraw", "Withdrawn from an environment"
        ROLLOUT_START = "rollout_start", "Rollout started"
        ROLLOUT_COMPLETE = "rollout_complete", "Rollout completed"
        ROLLOUT_ROLLBACK = "rollout_rollback", "Rollout rolled back"
        SCOPE = "scope", "Scope changed (namespace, roles, priority, confidence)"
        NAMESPACE_CREATE = "namespace_create", "Namespace created"
        OUTCOMES = "outcomes", "Session outcomes reported"

    at = models.DateTimeField(auto_now_add=True, db_index=True)
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    actor_label = models.CharField(max_length=150, blank=True, help_text="For non-human actors: miner, import, token")
    action = models.CharField(max_length=20, choices=Action.choices, db_index=True)
    agent = models.ForeignKey(Agent, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    procedure = models.ForeignKey(Procedure, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events")
    version = models.ForeignKey(ProcedureVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="audit_events")
    reason = models.TextField(blank=True)
    before = models.JSONField(default=dict, blank=True)
    after = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-at", "-id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.actor_label or self.actor}"

    @property
    def who(self) -> str:
        if self.actor_id:
            return self.actor.get_username()
        return self.actor_label or "system"


# ---------------------------------------------------------------------------------------------- sessions & mining


class AgentSession(models.Model):
    """A finished agent session, as reported or imported. Tool-call args and the task text are kept
    raw only until the retention window passes (mining needs tool names and order, not the text);
    reviewers only ever see `redacted_excerpt`."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="sessions")
    session_id = models.CharField(max_length=200)
    intent = models.ForeignKey(Intent, null=True, blank=True, on_delete=models.SET_NULL, related_name="sessions")
    task = models.TextField(blank=True)
    # What makes repeated trials of one task one piece of evidence: the reported task key, the
    # tau-bench task id, or a hash of the redacted opening request (library ingest).
    task_key = models.CharField(max_length=200, blank=True)
    resolved = models.BooleanField(null=True)
    escalated = models.BooleanField(null=True)
    rating = models.FloatField(null=True, blank=True)
    skeleton = models.JSONField(default=list)
    tool_calls = models.JSONField(default=list, blank=True)
    redacted_excerpt = models.JSONField(default=list, blank=True)
    injected = models.JSONField(default=list, blank=True)
    instruction_chars = models.PositiveIntegerField(null=True, blank=True)
    model = models.CharField(max_length=128, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True, db_index=True)
    received_at = models.DateTimeField(auto_now_add=True)
    raw_purged = models.BooleanField(default=False)
    source_format = models.CharField(max_length=16, blank=True)

    class Channel(models.TextChoices):
        CLIENT = "client", "Client (POST /api/v1/sessions)"
        FILE = "file", "File import (manage.py import_sessions)"
        OTLP = "otlp", "OpenTelemetry traces (OTLP)"
        HOOK = "hook", "Coding-agent hook (trace format)"

    # How the session reached procmem (the agent settings page counts them); empty: stored before
    # channels were recorded.
    channel = models.CharField(max_length=8, choices=Channel.choices, blank=True)
    # The label is not final before this moment (the agent's complaint window is open): mining leaves
    # the session out until then (library/outcomes.py). Null: final as it stands.
    label_pending_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-ended_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["agent", "session_id"], name="session_id_unique_per_agent")]
        indexes = [
            models.Index(fields=["agent", "intent", "resolved"], name="session_agent_intent_idx"),
            # the metrics rollup's incremental refresh reads the sessions received since its watermark
            models.Index(fields=["agent", "received_at"], name="session_agent_received_idx"),
            # the miner's held-back cut and its evidence samples read each intent's sessions in
            # this order ("newest" = by end time, then receipt time, then id)
            models.Index(fields=["agent", "intent", "ended_at", "received_at", "id"], name="session_agent_intent_end_idx"),
        ]

    def __str__(self) -> str:
        return self.session_id


class SessionLabel(models.Model):
    """One outcome report of a session, kept as its label history (POST /api/v1/sessions/outcomes,
    manage.py import_outcomes; the first row, source "session", is what the session itself said).
    Rows are never changed; the session's resolved/escalated/rating are derived from them by the
    agent's label rule (library/outcomes.py)."""

    session = models.ForeignKey(AgentSession, on_delete=models.CASCADE, related_name="labels")
    resolved = models.BooleanField(null=True)
    escalated = models.BooleanField(null=True)
    rating = models.FloatField(null=True, blank=True)
    complaint = models.BooleanField(null=True)
    closed_by_customer = models.BooleanField(null=True)
    at = models.DateTimeField(help_text="When the outcome happened (a rating given, a complaint made)")
    source = models.CharField(max_length=100, blank=True, help_text="What reported it: csat_survey, helpdesk, session…")
    via = models.CharField(max_length=100, blank=True, help_text="How it came: api token prefix, file name")
    received_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["at", "id"]


class OtlpSpan(models.Model):
    """A span received on POST /api/otlp/v1/traces, kept until its session is complete
    (library/ingest/otlp.py: the root span has arrived and no span of the session came for
    PROCMEM_OTLP_QUIET_SECONDS, or PROCMEM_OTLP_MAX_WAIT_SECONDS passed without a root). Only the
    GenAI / OpenInference attributes are kept. Once the session is stored (or refused) the spans stay
    a day as a record of what was received, so a resent span changes nothing."""

    class State(models.TextChoices):
        PENDING = "pending"
        STORED = "stored"
        REFUSED = "refused"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    trace_id = models.CharField(max_length=32)
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    conversation_id = models.CharField(max_length=200, blank=True)
    name = models.CharField(max_length=200, blank=True)
    start_ns = models.BigIntegerField(default=0)
    end_ns = models.BigIntegerField(default=0)
    failed = models.BooleanField(default=False)
    attributes = models.JSONField(default=dict, blank=True)
    events = models.JSONField(default=list, blank=True)
    received_at = models.DateTimeField()
    state = models.CharField(max_length=8, choices=State.choices, default=State.PENDING)
    session_id = models.CharField(max_length=200, blank=True, help_text="The session the span became part of")
    note = models.CharField(max_length=300, blank=True, help_text="Why the session was refused")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "trace_id", "span_id"], name="otlp_span_unique_per_agent")]
        indexes = [models.Index(fields=["agent", "state", "trace_id"], name="otlp_span_agent_state_idx")]


class MiningRun(models.Model):
    class State(models.TextChoices):
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="mining_runs")
    state = models.CharField(max_length=10, choices=State.choices, default=State.RUNNING)
    parameters = models.JSONField(default=dict)
    counts = models.JSONField(default=dict, help_text="sessions in, labelled, unlabelled, groups, candidates, skipped")
    skipped = models.JSONField(default=list, help_text="[{intent, skeleton, reason}]")
    report = models.JSONField(
        default=list, blank=True,
        help_text="One entry per intent: status (mined, reported, below threshold, …), reason and figures",
    )
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    started_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at", "-id"]


# ---------------------------------------------------------------------------------------------- eval replays


class RegressionCase(models.Model):
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="regression_cases")
    intent = models.ForeignKey(Intent, on_delete=models.PROTECT, related_name="regression_cases")
    name = models.CharField(max_length=200, blank=True)
    task = models.TextField()
    context = models.JSONField(default=dict, blank=True)
    expected_tools = models.JSONField(default=list, blank=True, help_text="Tool calls expected, in order")
    forbidden_tools = models.JSONField(default=list, blank=True)
    reply_must_match = models.JSONField(default=list, blank=True, help_text="Regexes the reply must match")
    reply_must_not_match = models.JSONField(default=list, blank=True)
    tool_results = models.JSONField(default=dict, blank=True, help_text="Recorded tool results for model replay")
    source_session = models.ForeignKey(AgentSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    external_id = models.CharField(
        max_length=200, blank=True, help_text="Where an imported case came from (e.g. tau2:airline:7); re-imports skip it"
    )
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["agent_id", "intent_id", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["agent", "external_id"], condition=~Q(external_id=""), name="case_external_id_unique_per_agent"
            ),
        ]

    def __str__(self) -> str:
        return self.name or self.task[:60]


class EvalRun(models.Model):
    class State(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"
        CANCELLED = "cancelled"

    class Verdict(models.TextChoices):
        PASS = "pass"
        FAIL = "fail"
        INCONCLUSIVE = "inconclusive"

    class Kind(models.TextChoices):
        APPROVAL = "approval", "Approval: the set with the candidate added"
        RETIRE = "retire", "Retirement: the set with the version removed"
        ROLLBACK = "rollback", "Rollback: the set with the version replaced by its predecessor"

    version = models.ForeignKey(ProcedureVersion, on_delete=models.PROTECT, related_name="eval_runs")
    kind = models.CharField(max_length=10, choices=Kind.choices, default=Kind.APPROVAL)
    # a rollback run: the version that would be served instead of `version`
    replacement = models.ForeignKey(
        ProcedureVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+",
    )
    content_hash = models.CharField(max_length=64, help_text="The exact content this run judged")
    baseline_hash = models.CharField(max_length=64, blank=True, help_text="Hash of the active set at the start")
    baseline_versions = models.JSONField(default=list, blank=True)
    state = models.CharField(max_length=10, choices=State.choices, default=State.QUEUED)
    verdict = models.CharField(max_length=12, choices=Verdict.choices, blank=True)
    verdict_detail = models.JSONField(default=dict, blank=True)
    thresholds = models.JSONField(default=dict, blank=True)
    cases_total = models.PositiveIntegerField(default=0)
    cases_done = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    runner = models.CharField(max_length=16, blank=True)
    failure_reason = models.TextField(blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True, help_text="Last progress; the recovery task resumes stale runs")
    resumes = models.PositiveSmallIntegerField(default=0)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(verdict="pass") | Q(state="done"), name="eval_pass_only_when_done"
            ),
        ]

    def __str__(self) -> str:
        return f"eval run {self.pk} ({self.state}{', ' + self.verdict if self.verdict else ''})"

    @property
    def is_passing(self) -> bool:
        return self.state == self.State.DONE and self.verdict == self.Verdict.PASS

    @property
    def is_finished(self) -> bool:
        return self.state in {self.State.DONE, self.State.FAILED, self.State.CANCELLED}


class EvalCaseResult(models.Model):
    class Arm(models.TextChoices):
        BASELINE = "baseline", "Without the candidate"
        CANDIDATE = "candidate", "With the candidate"

    class State(models.TextChoices):
        PENDING = "pending"
        RUNNING = "running"
        DONE = "done"

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="case_results")
    case = models.ForeignKey(RegressionCase, on_delete=models.PROTECT, related_name="+")
    arm = models.CharField(max_length=10, choices=Arm.choices)
    # Every (case, arm) row exists from the start of the run as PENDING; a chunk task claims it with a
    # conditional UPDATE, so a redelivered task never runs a finished case again.
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    claimed_by = models.CharField(max_length=64, blank=True, help_text="The Celery task id that claimed it")
    claim_nonce = models.CharField(max_length=32, blank=True, help_text="One per claim; only its holder may finish it")
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)
    passed = models.BooleanField(null=True, help_text="None when the runner errored")
    error = models.TextField(blank=True)
    failures = models.JSONField(default=list, blank=True)
    tool_calls = models.JSONField(default=list, blank=True)
    reply = models.TextField(blank=True)
    duration_ms = models.FloatField(default=0)
    # what this arm injected for the case, as the select endpoint chose it: [{"id", "version", "intent"}]
    injected = models.JSONField(default=list, blank=True)
    rendered_hash = models.CharField(max_length=64, blank=True, help_text="sha256 of the instruction's procedure block")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "case", "arm"], name="one_result_per_case_arm")]
        indexes = [models.Index(fields=["run", "state"], name="evalcaseresult_run_state_idx")]


# ---------------------------------------------------------------------------------------------- API tokens


class ApiToken(models.Model):
    """A bearer token scoped to one agent and one capability. Only the sha256 is stored."""

    class Scope(models.TextChoices):
        READ = "read", "Read the active set"
        INGEST = "ingest", "Write sessions"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="tokens")
    scope = models.CharField(max_length=10, choices=Scope.choices)
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, help_text="First characters, to recognise a token")
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="Refused from this moment on (none: never expires)")
    last_used_at = models.DateTimeField(null=True, blank=True, help_text="Written at most once a minute")

    class Meta:
        ordering = ["agent_id", "-created_at"]

    @staticmethod
    def hash(raw: str) -> str:
        return hashlib.sha256(raw.encode("utf-8")).hexdigest()


class LoadRefusal(models.Model):
    """A version refused at load (requiredTools not all in the agent's tools). One row per version
    and tool-list state, so the alert is raised once and not on every request."""

    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="load_refusals")
    tools_hash = models.CharField(max_length=64)
    missing_tools = models.JSONField(default=list)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "tools_hash"], name="one_refusal_per_tool_state")]


class VersionEmbedding(models.Model):
    """The sentence embeddings of a version's appliesWhen and of each of its steps, computed once
    per version and model and shared by every process (versions are immutable, so they never go
    stale). Written by the agent API through the default connection the first time a version is
    ranked; read through the read-only one."""

    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="embeddings")
    model_key = models.CharField(max_length=64, help_text="Identifies the embedding model (path digest)")
    dimensions = models.PositiveSmallIntegerField()
    vector = models.BinaryField(help_text="float32, little-endian, L2-normalised")
    steps_vectors = models.BinaryField(
        null=True, help_text="One vector per step, in step order (steps × dimensions float32); null until computed"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["version", "model_key"], name="one_embedding_per_version_model")]



class VersionConflict(models.Model):
    """A pair of versions of one agent (different procedures, each ACTIVE or about to be: a candidate
    with a passing eval) whose steps contradict, found by the conflict scan (library/conflicts.py).
    Open while `cleared_at` is empty; a later scan that no longer finds it clears it. The pair is
    stored in primary-key order, at most one open row per pair and kind."""

    class Kind(models.TextChoices):
        REQUIRES_FORBIDDEN = "requires_forbidden", "One requires what the other forbids"
        SAME_SITUATION = "same_situation", "Same situation, different required tools"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="conflicts")
    version_a = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="+")
    version_b = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=20, choices=Kind.choices)
    detail = models.JSONField(default=dict)
    message = models.TextField()
    found_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField()
    cleared_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-found_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(version_a__lt=models.F("version_b")), name="conflict_pair_ordered"),
            models.UniqueConstraint(
                fields=["version_a", "version_b", "kind"], condition=Q(cleared_at__isnull=True), name="one_open_conflict_per_pair_kind"
            ),
        ]
