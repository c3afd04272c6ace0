"""Who owns what: namespaces, agents, their intents and procedures (the identities and their scope;
content lives in versions.py) and the object permission tables of each. Who may read or do what
with them is the rulebook's (library/permissions.py)."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import models
from django.db.models import Q
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from .secret_store import is_sealed, seal_secret

PROCEDURE_KEY_RE = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$"
procedure_key_validator = RegexValidator(
    PROCEDURE_KEY_RE, "A procedure id is dotted lower-case words, e.g. refund.over_limit"
)
slug_validator = RegexValidator(r"^[a-z][a-z0-9_\-]*$", "Use lower-case letters, digits, _ and -")


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
            (
                "manage_namespace_procedures",
                "Can retire, roll back and change the scope of every procedure in this namespace",
            ),
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


# ---------------------------------------------------------------------------------------------- agents


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
        Namespace,
        on_delete=models.PROTECT,
        related_name="agents",
        default=default_namespace_pk,
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
        default=2,
        help_text="Coding agents: resolved sessions with a verify command a task family needs for a candidate",
    )
    coding_family_rules = models.JSONField(
        default=list,
        blank=True,
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
    # Never plaintext: "", "env:NAME" or "fernet:<token>" (library/models/secret_store.py); a check
    # constraint refuses anything else, and save() seals a raw key given to it.
    model_api_key = models.CharField(max_length=512, blank=True)
    current_model = models.CharField(max_length=128, blank=True, help_text="The LLM the agent runs on now")
    environments = models.JSONField(
        default=list,
        blank=True,
        help_text='Environments beside production (always there), e.g. ["staging"]: with staging, approved versions go there first',
    )
    # The label rule (library/ingest/outcomes.py): how a session's final label follows from its label history.
    complaint_window_days = models.PositiveSmallIntegerField(
        default=0,
        help_text="A complaint within this many days of a session's end makes it failed, and its label is final only then (0: off)",
    )
    closed_by_customer_resolves = models.BooleanField(
        default=True,
        help_text="A ticket closed by the customer counts as resolved when no outcome says resolved or not",
    )
    min_rating = models.FloatField(
        null=True,
        blank=True,
        help_text="A rating at or above this counts as resolved, below as failed, when no outcome says (empty: ratings decide nothing)",
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
        default=72,
        help_text="How long a candidate of this agent should wait for review; the queue's ageing badges compare against it",
    )
    api_rate_limits = models.JSONField(
        default=dict,
        blank=True,
        help_text='The agent API\'s limits where they differ from the defaults: {"select": {"token": "600/minute", "ip": "1200/minute"}} (library/api/limits.py)',
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        permissions = [
            ("approve_agent_procedures", "Can approve versions of every procedure of this agent"),
            ("manage_agent_procedures", "Can retire and roll back every procedure of this agent"),
            ("manage_agent", "Can change this agent's tools, tokens and approver rights"),
            (
                "promote_agent_procedures",
                "Can promote approved versions of every procedure of this agent between environments and run rollouts",
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(injection_cap__lte=20), name="agent_injection_cap_lte_20"),
            models.CheckConstraint(
                condition=Q(model_api_key="")
                | Q(model_api_key__startswith="env:")
                | Q(model_api_key__startswith="fernet:"),
                name="agent_model_api_key_sealed",
            ),
            models.CheckConstraint(
                condition=Q(significance_level__gt=0) & Q(significance_level__lte=0.5),
                name="agent_significance_level_range",
            ),
            models.CheckConstraint(
                condition=Q(backtest_share__gte=0) & Q(backtest_share__lte=0.5), name="agent_backtest_share_range"
            ),
            models.CheckConstraint(condition=Q(min_tool_calls__gte=1), name="agent_min_tool_calls_positive"),
            models.CheckConstraint(condition=Q(support_threshold__gte=1), name="agent_support_threshold_positive"),
            models.CheckConstraint(condition=Q(coding_min_traces__gte=1), name="agent_coding_min_traces_positive"),
            models.CheckConstraint(
                condition=Q(review_after_days__gte=1) & Q(review_after_days__lte=3650),
                name="agent_review_after_days_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
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
    roles = models.JSONField(
        default=list, blank=True, help_text="Role names an agent instance may present; empty = all"
    )
    priority = models.SmallIntegerField(default=0, help_text="Higher wins a near-tie in selection")
    confidence = models.CharField(max_length=6, choices=Confidence.choices, default=Confidence.MEDIUM)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = ProcedureQuerySet.as_manager()

    class Meta:
        ordering = ["agent__name", "key"]
        permissions = [
            ("approve_procedure", "Can approve versions of this procedure"),
            ("manage_procedure", "Can retire and roll back versions of this procedure"),
            (
                "promote_procedure",
                "Can promote approved versions of this procedure between environments and run rollouts",
            ),
        ]
        constraints = [
            models.UniqueConstraint(fields=["agent", "key"], name="procedure_key_unique_per_agent"),
            models.CheckConstraint(
                condition=Q(priority__gte=PRIORITY_MIN) & Q(priority__lte=PRIORITY_MAX), name="procedure_priority_range"
            ),
            models.CheckConstraint(
                condition=Q(confidence__in=["low", "medium", "high"]), name="procedure_confidence_valid"
            ),
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
