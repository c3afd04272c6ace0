"""The people's side: who works on a candidate (claims), discussion threads on versions,
notifications."""

from __future__ import annotations

from django.conf import settings
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import Q

from library.models import Agent, Intent, ProcedureVersion, Status

from .key_words import key_words


class CandidateClaim(models.Model):
    """Who works on a candidate now: at most one row per version (the unique key is the last line of
    defence; reviews.services.candidate_claim decides under the version's row lock). A claim past
    `expires_at` counts as no claim everywhere (queue filters compare with now) and the next claim
    replaces it; releasing deletes the row. The history is in the audit log."""

    version = models.OneToOneField(ProcedureVersion, on_delete=models.CASCADE, related_name="claim")
    assignee = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="candidate_claims")
    assigned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    # The version's place in the queue, copied here so that "assigned to me" counts and pages one
    # person's claims from this table alone (reviews.selectors._my_claims) instead of looking up
    # each claimed version and its procedure. The database keeps them true whatever writes: triggers
    # fill them on insert and follow every change of the version or its procedure (migration
    # 0007_claim_queue_keys); `keys_of` gives the same values for the insert itself.
    version_status = models.CharField(max_length=10, choices=Status.choices)
    quarantined = models.BooleanField()
    neg_support = models.IntegerField(default=0)  # reviews.selectors.neg_support() of the version
    version_created_at = models.DateTimeField()
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="+")
    intent = models.ForeignKey(Intent, on_delete=models.CASCADE, related_name="+")

    class Meta:
        indexes = [models.Index(fields=["assignee", "expires_at"], name="claim_assignee_expiry_idx")]
        constraints = [
            models.CheckConstraint(
                condition=Q(expires_at__gt=models.F("claimed_at")), name="claim_expires_after_claimed"
            )
        ]

    def __str__(self) -> str:
        return f"{self.version_id} claimed by {self.assignee_id} until {self.expires_at:%Y-%m-%d %H:%M}"

    @staticmethod
    def keys_of(version: ProcedureVersion) -> dict:
        """The copied columns a new claim of `version` starts with (the insert trigger also sets
        them, and the support, from the row itself)."""
        return dict(
            version_status=version.status,
            quarantined=version.quarantined,
            version_created_at=version.created_at,
            agent_id=version.procedure.agent_id,
            intent_id=version.procedure.intent_id,
        )


class Thread(models.Model):
    """A discussion on one version, anchored to the whole version, one field, or one step (1-based,
    of that version's steps). Replies are its comments after the first. Resolving never blocks or
    allows anything: the decision panel shows the open ones, approval stays possible."""

    class Anchor(models.TextChoices):
        VERSION = "", "the whole version"
        APPLIES_WHEN = "appliesWhen", "appliesWhen"
        STEP = "step"  # shown as "step N" (anchor_label)
        REQUIRED_TOOLS = "requiredTools", "requiredTools"
        FORBIDDEN_ACTIONS = "forbiddenActions", "forbiddenActions"

    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="threads")
    anchor = models.CharField(max_length=20, choices=Anchor.choices, blank=True, default="")
    step = models.PositiveSmallIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, null=True, blank=True, related_name="+"
    )

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(anchor="step") & Q(step__gte=1)) | (~Q(anchor="step") & Q(step__isnull=True)),
                name="thread_step_only_for_step_anchor",
            ),
            models.CheckConstraint(
                condition=Q(resolved_at__isnull=True, resolved_by__isnull=True)
                | Q(resolved_at__isnull=False, resolved_by__isnull=False),
                name="thread_resolved_with_who",
            ),
        ]
        indexes = [models.Index(fields=["version", "resolved_at"], name="thread_version_open_idx")]

    @property
    def is_resolved(self) -> bool:
        return self.resolved_at is not None

    @property
    def anchor_label(self) -> str:
        if self.anchor == self.Anchor.STEP:
            return f"step {self.step}"
        return key_words(self.anchor) if self.anchor else self.get_anchor_display()  # the field in words, not its key


class Comment(models.Model):
    """One message of a thread (the first opens it). `version` is the thread's version, kept on the
    row for the queue's comment counts."""

    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="comments")
    version = models.ForeignKey(ProcedureVersion, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    # Filled by a PostgreSQL trigger from `body` (migrations/0003_review_day.py); NULL on SQLite.
    search_vector = SearchVectorField(null=True, editable=False)

    class Meta:
        ordering = ["created_at", "id"]


# What both a webhook event and a notification report is worded once.
SHARED_EVENT_WORDING = {
    "eval_finished": "An eval run finished",
    "refused_at_load": "A version was refused at load",
    "metric_warning": "A metric warning",
}


# What a webhook can subscribe to (the webhooks section below).
class WebhookEvent(models.TextChoices):
    CANDIDATE_CREATED = "candidate.created", "New candidates"
    EVAL_FINISHED = "eval.finished", SHARED_EVENT_WORDING["eval_finished"]
    VERSION_APPROVED = "version.approved", "A version was approved"
    VERSION_RETIRED = "version.retired", "A version was retired"
    VERSION_ROLLED_BACK = "version.rolled_back", "A procedure was rolled back"
    REFUSED_AT_LOAD = "version.refused_at_load", SHARED_EVENT_WORDING["refused_at_load"]
    METRIC_WARNING = "metric.warning", SHARED_EVENT_WORDING["metric_warning"]
    TEST = "webhook.test", "Test delivery"


class NotificationKind(models.TextChoices):
    """What a notification is about; each user switches kinds on and off on the preferences page."""

    NEW_CANDIDATES = "new_candidates", "New candidates waiting for review"
    EVAL_FINISHED = "eval_finished", SHARED_EVENT_WORDING["eval_finished"]
    REFUSED_AT_LOAD = "refused_at_load", SHARED_EVENT_WORDING["refused_at_load"]
    METRIC_WARNING = "metric_warning", SHARED_EVENT_WORDING["metric_warning"]
    MENTION = "mention", "Someone mentioned you in a thread"


class Notification(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications")
    kind = models.CharField(max_length=20, choices=NotificationKind.choices)
    message = models.TextField()
    url = models.CharField(max_length=500, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["user", "read_at"], name="notification_unread_idx")]


class NotificationPreference(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preferences"
    )
    kind = models.CharField(max_length=20, choices=NotificationKind.choices)
    in_app = models.BooleanField(default=True)
    email = models.BooleanField(default=False)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="one_preference_per_kind")]


# ---------------------------------------------------------------------------------------------- metrics rollup
#
# The metrics pages never read AgentSession: over a million sessions that is seconds, not
# milliseconds. reviews/metrics/rollup.py folds sessions into the two daily tables below (one row per
# agent, day, intent and model; one per version, session intent, day and model) and the pages sum a
# few hundred of those rows. A refresh recomputes whole days, so running it twice, or over a day
# that is still receiving sessions, never counts a session twice.


class MetricsState(models.Model):
    """Per agent: how far the rollup has read the sessions (by received_at). The row is also the
    lock that serialises two refreshes of one agent."""

    agent = models.OneToOneField("library.Agent", on_delete=models.CASCADE, related_name="metrics_state")
    refreshed_until = models.DateTimeField(null=True, blank=True)
    refreshed_at = models.DateTimeField(null=True, blank=True)
    days_recomputed = models.PositiveIntegerField(default=0)
    # p95 of instruction length per version for the pages' fixed windows ending `as_of`, merged from
    # the day histograms at refresh time: {"as_of": "YYYY-MM-DD", "windows": {"30": {"<version id>": p95}}}.
    # Merging a year of histograms on every page view would cost more than the rest of the page.
    window_p95 = models.JSONField(default=dict, blank=True)


class DayRollup(models.Model):
    """A row of one agent's day in the rollup tables (the refresh replaces whole days)."""

    agent = models.ForeignKey("library.Agent", on_delete=models.CASCADE, related_name="+")
    day = models.DateField()

    class Meta:
        abstract = True


class SessionOutcomesDay(DayRollup):
    """Sessions under one model on the row's day: all, those with an outcome (`labelled`), and
    those resolved and not escalated."""

    model = models.CharField(max_length=128, blank=True)
    sessions = models.PositiveIntegerField(default=0)
    labelled = models.PositiveIntegerField(default=0)
    resolved = models.PositiveIntegerField(default=0)

    class Meta:
        abstract = True


class IntentDayRollup(SessionOutcomesDay):
    """Sessions of one intent on one day under one model: all of them, and those that received no
    procedure ("bare"). `labelled` counts sessions with an outcome; `resolved` those resolved and
    not escalated."""

    intent = models.ForeignKey("library.Intent", on_delete=models.CASCADE, related_name="+")
    bare_sessions = models.PositiveIntegerField(default=0)
    bare_labelled = models.PositiveIntegerField(default=0)
    bare_resolved = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["agent", "intent", "day", "model"], name="intent_day_rollup_unique"),
        ]
        indexes = [models.Index(fields=["agent", "day"], name="intent_rollup_agent_day_idx")]


class VersionDayRollup(SessionOutcomesDay):
    """Sessions that received one procedure version, by the session's own intent, day and model.
    `chars_hist` is a log-bucket histogram of instruction lengths ({bucket index: count}, see
    reviews.metrics.histogram.CharsHistogram), so p95 over any range of days is a merge, not a rescan."""

    version = models.ForeignKey("library.ProcedureVersion", on_delete=models.CASCADE, related_name="+")
    intent = models.ForeignKey("library.Intent", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    chars_hist = models.JSONField(default=dict, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["agent", "day"], name="version_rollup_agent_day_idx"),
            models.Index(fields=["version", "day"], name="version_rollup_version_day_idx"),
        ]


class VersionDayQuality(DayRollup):
    """Per version and day, how the sessions given it used it (written by the rollup refresh with
    IntentDayRollup and VersionDayRollup, from the same pass over the sessions; see
    reviews.metrics.quality): `checked` sessions could be checked for adherence (the version has
    required tools), `followed` of them called the required tools in order; `required_calls` and
    `forbidden_calls` count calls to its required tools and to tools its forbidden actions forbid
    outright; `conflicted` sessions were also given a version it conflicts with; `stale` sessions
    ended after its review-by date."""

    version = models.ForeignKey("library.ProcedureVersion", on_delete=models.CASCADE, related_name="+")
    sessions = models.PositiveIntegerField(default=0)
    checked = models.PositiveIntegerField(default=0)
    followed = models.PositiveIntegerField(default=0)
    required_calls = models.PositiveIntegerField(default=0)
    forbidden_calls = models.PositiveIntegerField(default=0)
    conflicted = models.PositiveIntegerField(default=0)
    stale = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["version", "day"], name="version_day_quality_unique"),
            models.CheckConstraint(
                condition=models.Q(followed__lte=models.F("checked")), name="version_quality_followed_le_checked"
            ),
        ]
        indexes = [models.Index(fields=["agent", "day"], name="version_quality_agent_day_idx")]


class AgentDayQuality(DayRollup):
    """Per agent and day: sessions given at least one procedure (`served`), two or more (`multi`),
    two that conflict (`conflicted`), and at least one past its review-by date (`stale`)."""

    served = models.PositiveIntegerField(default=0)
    multi = models.PositiveIntegerField(default=0)
    conflicted = models.PositiveIntegerField(default=0)
    stale = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["agent", "day"], name="agent_day_quality_unique")]


class MetricAlert(models.Model):
    """An ACTIVE version whose resolution rate fell significantly below its eval result. Open until
    a later check finds the rate back within noise; one open alert per version, so the warning is
    sent once and not on every refresh."""

    version = models.ForeignKey("library.ProcedureVersion", on_delete=models.CASCADE, related_name="+")
    opened_at = models.DateTimeField(auto_now_add=True)
    cleared_at = models.DateTimeField(null=True, blank=True)
    figures = models.JSONField(default=dict)
    message = models.TextField()

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version"],
                condition=models.Q(cleared_at__isnull=True),
                name="one_open_metric_alert_per_version",
            ),
        ]


class DemotionProposal(models.Model):
    """A proposal to retire an ACTIVE version, made by the scheduled demotion check with the figures
    that triggered it. Nothing is retired by the check: an admin confirms (→ version_retire) or
    dismisses, with a reason. At most one open proposal per version (partial unique index)."""

    class Kind(models.TextChoices):
        RARELY_SELECTED = "rarely_selected", "Rarely selected"
        BELOW_EVAL = "below_eval", "Resolution significantly below the eval's"
        REMOVED_FILE = "removed_file", "Its file was removed from the procedures repository"

    class State(models.TextChoices):
        OPEN = "open"
        CONFIRMED = "confirmed", "Confirmed (retired)"
        DISMISSED = "dismissed"

    version = models.ForeignKey("library.ProcedureVersion", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    state = models.CharField(max_length=10, choices=State.choices, default=State.OPEN)
    figures = models.JSONField(default=dict)
    message = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version"], condition=models.Q(state="open"), name="one_open_demotion_per_version"
            ),
            models.CheckConstraint(
                condition=(
                    models.Q(state="open") & models.Q(decided_by__isnull=True) & models.Q(decided_at__isnull=True)
                )
                | (~models.Q(state="open") & models.Q(decided_by__isnull=False) & models.Q(decided_at__isnull=False)),
                name="demotion_decided_iff_closed",
            ),
        ]

    def __str__(self) -> str:
        return f"demotion of version {self.version_id} ({self.kind}, {self.state})"


# ---------------------------------------------------------------------------------------------- webhooks
#
# Outgoing webhooks per agent (reviews/webhooks.py): chosen events are POSTed as JSON, signed with
# HMAC-SHA256 over "<timestamp>.<body>" with the webhook's secret, by a Celery task that retries with
# exponential backoff. Every delivery and its attempts are kept for the log on the webhook's page.


SUBSCRIBABLE_EVENTS = [event for event in WebhookEvent if event != WebhookEvent.TEST]


class Webhook(models.Model):
    class BodyFormat(models.TextChoices):
        JSON = "json", "procmem JSON"
        SLACK = "slack", 'Slack-compatible ({"text": …})'

    agent = models.ForeignKey("library.Agent", on_delete=models.CASCADE, related_name="webhooks")
    name = models.CharField(max_length=100)
    url = models.URLField(max_length=500, help_text="http:// or https:// only")
    events = models.JSONField(default=list, help_text="Event names this webhook receives")
    body_format = models.CharField(max_length=10, choices=BodyFormat.choices, default=BodyFormat.JSON)
    # Kept to sign each delivery (a hash could not sign); shown to the admin once, at creation or rotation.
    secret = models.CharField(max_length=128)
    is_active = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["agent_id", "name", "id"]

    def __str__(self) -> str:
        return f"{self.name} → {self.url}"


class WebhookDelivery(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending"
        SUCCEEDED = "succeeded", "Delivered"
        FAILED = "failed"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.CharField(max_length=40, choices=WebhookEvent.choices)
    delivery_id = models.UUIDField(
        unique=True, help_text="Sent as X-Procmem-Delivery; receivers use it to drop duplicates"
    )
    payload = models.JSONField(help_text="The event body before formatting (JSON or Slack)")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    response_code = models.PositiveSmallIntegerField(null=True, blank=True)
    response_excerpt = models.CharField(max_length=500, blank=True)
    error = models.CharField(max_length=500, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["webhook", "-created_at"], name="webhook_delivery_recent_idx")]


class ExternalIdentity(models.Model):
    """A user's identity at the single sign-on provider (reviews/sso.py): the provider's subject,
    which never changes hands, unlike an e-mail address."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="external_identities")
    issuer = models.CharField(max_length=500)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="external_identity_issuer_subject_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"
