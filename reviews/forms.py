"""Forms of the review workspace. They only shape input; the services validate content and
permissions again (`library.services.validate_content`, the lifecycle checks)."""

from __future__ import annotations

import json
import re

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.forms.fields import InvalidJSONInput

from library import formatting, safe_json
from library.agents.rate_limits import DEFAULT_LIMITS, ENDPOINTS, MAX_LIMIT_TEXT, WHO, parse_limit
from library.agents.settings import LABELS as CAPTURE_LABELS
from library.agents.settings import MAX_INJECTION_CAP, MAX_REDACTION_PATTERNS, MAX_REVIEW_TARGET_HOURS
from library.coding.families import FAMILY_RULE_MAX_CHARS, family_rule_part, family_rule_part_ok
from library.models import (
    PRIORITY_MAX,
    PRIORITY_MIN,
    Agent,
    ApiToken,
    Confidence,
    Intent,
    Namespace,
    Procedure,
    RegressionCase,
    procedure_key_validator,
)
from library.redaction.recognizers import slow_pattern_problem
from library.services import MAX_STEPS_APPROVABLE

from .models import SUBSCRIBABLE_EVENTS, Webhook


def add_service_errors(form: forms.Form, exc: ValidationError) -> None:
    """Puts a service's ValidationError on the form: on the field it names, else above the form."""
    for field, errors in exc.message_dict.items():
        form.add_error(field if field in form.fields else None, errors)


def _lines(value: str) -> list[str]:
    return [line.strip() for line in (value or "").splitlines() if line.strip()]


class LinesField(forms.CharField):
    """One item per line (steps, forbidden actions); blank lines are ignored."""

    widget = forms.Textarea

    def __init__(self, *args, min_items: int = 0, **kwargs):
        self.min_items = min_items
        kwargs.setdefault("required", min_items > 0)
        super().__init__(*args, strip=False, **kwargs)

    def to_python(self, value) -> list[str]:  # type: ignore[override]
        return _lines(super().to_python(value))

    def validate(self, value: list[str]) -> None:
        if len(value) < self.min_items:
            raise forms.ValidationError(f"Write at least {formatting.count(self.min_items, 'items')}, one per line.")

    def prepare_value(self, value):
        if isinstance(value, (list, tuple)):
            return "\n".join(value)
        return value


class ContentForm(forms.Form):
    """The four content fields. requiredTools are picked from the agent's tools; a tool the version
    already requires but the agent lost stays pickable so that the edit can remove it knowingly."""

    applies_when = forms.CharField(
        label="Applies when",
        max_length=2000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="One sentence: when should an agent use this procedure?",
    )
    steps = LinesField(
        label="Steps",
        min_items=1,
        widget=forms.Textarea(attrs={"rows": 8}),
        help_text=f"One imperative step per line, each naming a tool or a user-facing action; 3–{MAX_STEPS_APPROVABLE} steps.",
    )
    required_tools = forms.MultipleChoiceField(
        label="Required tools", required=False, widget=forms.CheckboxSelectMultiple, choices=()
    )
    forbidden_actions = LinesField(
        label="Forbidden actions",
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One per line, e.g. “Do not promise a refund date before approval.”",
    )

    def __init__(self, *args, tools: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["required_tools"].choices = [(t, t) for t in tools]

    def content(self) -> dict:
        data = self.cleaned_data
        return {
            "applies_when": data["applies_when"],
            "steps": data["steps"],
            "required_tools": data["required_tools"],
            "forbidden_actions": data["forbidden_actions"],
        }


class ReviseForm(ContentForm):
    reason = forms.CharField(
        label="What you changed and why", max_length=500, required=False, widget=forms.TextInput(attrs={"size": 60})
    )

    @classmethod
    def for_version(cls, version, data=None) -> ReviseForm:
        tools = list(version.procedure.agent.tools)
        tools += [t for t in version.required_tools if t not in tools]
        initial = {
            "applies_when": version.applies_when,
            "steps": version.steps,
            "required_tools": version.required_tools,
            "forbidden_actions": version.forbidden_actions,
        }
        return cls(data, tools=tools, initial=initial)


class ProposeForm(ContentForm):
    """Writing a procedure by hand, for one agent (chosen first: the tools and intents are its own)."""

    intent = forms.ModelChoiceField(queryset=Intent.objects.none(), label="Intent", empty_label=None)
    key = forms.CharField(
        label="Procedure id",
        max_length=120,
        validators=[procedure_key_validator],
        help_text="Dotted lower-case words, e.g. refund.over_limit",
        widget=forms.TextInput(attrs={"placeholder": "refund.over_limit", "autocomplete": "off"}),
    )
    field_order = ["intent", "key", "applies_when", "steps", "required_tools", "forbidden_actions"]

    def __init__(self, *args, agent: Agent, **kwargs):
        super().__init__(*args, tools=list(agent.tools), **kwargs)
        self.agent = agent
        self.fields["intent"].queryset = Intent.objects.filter(agent=agent).order_by("name")


class AgentChoiceForm(forms.Form):
    agent = forms.ModelChoiceField(
        queryset=Agent.objects.none(), label="Agent", to_field_name="name", empty_label="— choose —"
    )

    def __init__(self, *args, agents, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = agents


class RejectForm(forms.Form):
    reason = forms.CharField(
        label="Why reject",
        max_length=1000,
        widget=forms.TextInput(attrs={"size": 50, "placeholder": "the reason, for the audit log"}),
    )


class BulkRejectForm(forms.Form):
    versions = forms.TypedMultipleChoiceField(coerce=int, choices=(), label="Candidates")
    reason = forms.CharField(label="One reason for all", max_length=1000)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The choices are whatever ids were posted; the view loads only visible candidates and
        # refuses the request if any posted id is not one of them.
        raw = self.data.getlist("versions") if hasattr(self.data, "getlist") else []
        self.fields["versions"].choices = [(v, v) for v in raw]

    def clean_versions(self) -> list[int]:
        ids = self.cleaned_data["versions"]
        if any(not 1 <= pk <= safe_json.INT_MAX for pk in ids):
            raise forms.ValidationError("A candidate id is out of range.")
        return ids


class CommentForm(forms.Form):
    body = forms.CharField(label="Comment", max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))


class ThreadForm(CommentForm):
    """A new thread: the first comment and where it is anchored ("" the whole version, a field name,
    or "step:N"). The service checks the step exists in the version."""

    anchor = forms.CharField(required=False, max_length=30)

    def clean_anchor(self) -> tuple[str, int | None]:
        value = (self.cleaned_data.get("anchor") or "").strip()
        if value.startswith("step:"):
            try:
                return "step", int(value[5:])
            except ValueError:
                raise forms.ValidationError(f"{value!r} is not a step number.") from None
        return value, None


class AssignForm(forms.Form):
    assignee = forms.CharField(required=False, max_length=150, help_text="Username; empty claims it for yourself")


class ApproveForm(forms.Form):
    confirm = forms.BooleanField(
        required=True,
        label="I have read the diff, the evidence and the eval result, and I approve this exact version under my name.",
        error_messages={"required": "Tick the confirmation to approve."},
    )
    comment = forms.CharField(label="Comment for the audit log", max_length=1000, required=False)
    acknowledge_conflicts = forms.BooleanField(
        required=False,
        label="I have read the conflicts above and approve anyway; they are recorded in the audit log under my name.",
    )


# ---------------------------------------------------------------------------------------------- regression cases


class StorableJSONField(forms.JSONField):
    """A JSON form field read by the one JSON layer (library/safe_json.py): NaN, a lone surrogate
    escape, a NUL or deep nesting is a form error naming what is wrong, not a 500 at the database."""

    def to_python(self, value):
        if self.disabled or value in self.empty_values or not isinstance(value, str):
            return super().to_python(value)
        try:
            return safe_json.parse(value)
        except safe_json.JsonRefused as exc:
            raise forms.ValidationError(f"Enter valid JSON: {exc}") from None

    def bound_data(self, data, initial):
        """Refused text is shown again as typed (Django's field would decode it again, and a decoded
        lone surrogate cannot be written into the page)."""
        if self.disabled or not isinstance(data, str):
            return super().bound_data(data, initial)
        try:
            return safe_json.parse(data)
        except safe_json.JsonRefused:
            return InvalidJSONInput(data)


def _calls_from_text(value: str, field: str) -> list:
    """One call a line: a tool name, or a JSON object such as {"name": "x", "args": {...}}."""
    calls: list = []
    for number, line in enumerate(_lines(value), start=1):
        if line.startswith("{"):
            try:
                calls.append(safe_json.parse(line))
            except ValueError as exc:
                raise forms.ValidationError(f"line {number} is not a JSON object ({exc})") from None
        else:
            calls.append(line)
    return calls


def _calls_to_text(calls: list) -> str:
    return "\n".join(c if isinstance(c, str) else json.dumps(c, ensure_ascii=False) for c in calls or [])


class RegressionCaseForm(forms.Form):
    intent = forms.ModelChoiceField(queryset=None, empty_label=None)
    name = forms.CharField(max_length=200, required=False)
    task = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}), help_text="What the customer asks; the agent replays it."
    )
    context = StorableJSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='A JSON object, e.g. {"order_id": "ORD-1"}',
    )
    expected_tools = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text='Expected calls in order, one a line: a tool name, or {"name": "createApproval", "args": {"order_id": "ORD-1"}}',
    )
    forbidden_tools = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text='Forbidden calls, one a line: a tool name, or {"name": "...", "args": {...}, "before": "createApproval"}',
    )
    reply_must_match = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Regular expressions, one a line"
    )
    reply_must_not_match = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="Regular expressions, one a line"
    )
    tool_results = StorableJSONField(
        required=False,
        initial=dict,
        widget=forms.Textarea(attrs={"rows": 4}),
        help_text='For model replay: {"lookupOrder": [result of the 1st call, of the 2nd, …]}',
    )
    is_active = forms.BooleanField(required=False, initial=True, label="Active (replayed by eval runs)")

    def __init__(self, *args, agent: Agent, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["intent"].queryset = agent.intents.order_by("name")

    def clean_expected_tools(self):
        return _calls_from_text(self.cleaned_data["expected_tools"], "expected_tools")

    def clean_forbidden_tools(self):
        return _calls_from_text(self.cleaned_data["forbidden_tools"], "forbidden_tools")

    def clean_reply_must_match(self):
        return _lines(self.cleaned_data["reply_must_match"])

    def clean_reply_must_not_match(self):
        return _lines(self.cleaned_data["reply_must_not_match"])

    def service_fields(self) -> dict:
        data = dict(self.cleaned_data)
        data.pop("intent")
        data["context"] = data.get("context") or {}
        data["tool_results"] = data.get("tool_results") or {}
        return data

    def add_service_errors(self, exc: ValidationError) -> None:
        for field, errors in exc.message_dict.items():
            self.add_error(field if field in self.fields else None, errors)

    @staticmethod
    def initial_for(case: RegressionCase) -> dict:
        return {
            "intent": case.intent_id,
            "name": case.name,
            "task": case.task,
            "context": case.context,
            "expected_tools": _calls_to_text(case.expected_tools),
            "forbidden_tools": _calls_to_text(case.forbidden_tools),
            "reply_must_match": "\n".join(case.reply_must_match),
            "reply_must_not_match": "\n".join(case.reply_must_not_match),
            "tool_results": case.tool_results,
            "is_active": case.is_active,
        }


class CaseImportForm(forms.Form):
    file = forms.FileField(help_text="JSONL: one case a line (see the README)")
    create_intents = forms.BooleanField(required=False, label="Create intents the agent does not have yet")


# ---------------------------------------------------------------------------------------------- eval settings


class AgentEvalSettingsForm(forms.Form):
    eval_runner = forms.ChoiceField(choices=Agent.Runner.choices, label="Runner")
    eval_url = forms.URLField(required=False, label="Eval URL (HTTP runner)", assume_scheme="https")
    eval_python_path = forms.CharField(
        required=False, max_length=255, label="Python callable (package.module:function)"
    )
    eval_concurrency = forms.IntegerField(min_value=1, max_value=100, label="Concurrent calls to the agent at most")
    eval_timeout_seconds = forms.FloatField(min_value=0.1, max_value=600, label="Timeout per call (seconds)")
    model_base_url = forms.URLField(required=False, label="Model base URL (OpenAI-compatible)", assume_scheme="https")
    model_name = forms.CharField(required=False, max_length=128)
    model_api_key = forms.CharField(
        required=False,
        max_length=512,
        widget=forms.PasswordInput(render_value=False),
        label="Model API key",
        help_text="Write-only: leave empty to keep the stored key.",
    )
    clear_model_api_key = forms.BooleanField(required=False, label="Remove the stored key")
    tool_schemas = forms.JSONField(
        required=False, widget=forms.Textarea(attrs={"rows": 6}), help_text="Tool name → JSON schema of its parameters"
    )
    base_instruction = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 4}))
    selects_with_intent = forms.BooleanField(
        required=False,
        initial=True,
        label="The agent passes the session's intent when it selects procedures",
        help_text="Eval replays select each case the same way. Off: by the task text alone, so a candidate competes with every intent's procedures.",
    )
    model_drafts_enabled = forms.BooleanField(
        required=False,
        label="Model-written drafts (mining asks this model to word each mined draft)",
        help_text="Off by default. The rule draft stays when the model fails, drops a required tool or names a literal value.",
    )


# ---------------------------------------------------------------------------------------------- approver rights


def approver_right_from_post(data, *, agent: Agent):
    """(procedure or None for the whole agent, grantee user or group, reason) from the approver-rights
    form of an agent's operations page; raises ValidationError naming the field."""
    scope = data.get("scope", "").strip()
    procedure = None
    if scope and scope != "agent":
        procedure = Procedure.objects.filter(agent=agent, key=scope).first()
        if procedure is None:
            raise ValidationError({"scope": f"{agent.name} has no procedure {scope!r}"})
    elif not scope:
        raise ValidationError({"scope": "choose the whole agent or one procedure"})
    return procedure, grantee_from_post(data), data.get("reason", "").strip()


def grantee_from_post(data):
    """The user or group a rights form names (`grantee_kind`, `grantee`); ValidationError names the field."""
    kind = data.get("grantee_kind", "user")
    name = data.get("grantee", "").strip()
    if not name:
        raise ValidationError({"grantee": "name a user or a group"})
    if kind == "group":
        grantee = Group.objects.filter(name=name).first()
    elif kind == "user":
        grantee = get_user_model().objects.filter(username=name).first()
    else:
        raise ValidationError({"grantee_kind": "choose user or group"})
    if grantee is None:
        raise ValidationError({"grantee": f"no {kind} named {name!r}"})
    return grantee


# ---------------------------------------------------------------------------------------------- scope and namespaces


class ScopeForm(forms.Form):
    """A procedure's scope; `library.services.procedure_scope_update` checks it all again."""

    namespace = forms.ModelChoiceField(
        queryset=Namespace.objects.order_by("name"), to_field_name="name", empty_label=None
    )
    roles = forms.CharField(
        required=False, max_length=1400, help_text="Role names, separated by commas; empty: every role"
    )
    priority = forms.IntegerField(
        min_value=PRIORITY_MIN, max_value=PRIORITY_MAX, initial=0, help_text="Higher wins a near-tie in selection"
    )
    confidence = forms.ChoiceField(choices=Confidence.choices)
    reason = forms.CharField(max_length=1000, help_text="Why (kept in the audit log)")

    def __init__(self, *args, namespaces=None, **kwargs):
        """`namespaces`: the choices (the namespaces the user may read; default every one)."""
        super().__init__(*args, **kwargs)
        if namespaces is not None:
            self.fields["namespace"].queryset = namespaces.order_by("name")


class NamespaceForm(forms.Form):
    name = forms.CharField(max_length=64, help_text="Lower-case letters, digits, _ and -, e.g. team-billing")
    description = forms.CharField(required=False, max_length=2000)


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What uses it, e.g. “prod reader” or “nightly export”")
    scope = forms.ChoiceField(choices=ApiToken.Scope.choices)
    expires_in_days = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=3650,
        label="Expires in (days)",
        help_text="Empty: never expires. Agents get 401 from the moment it expires.",
    )


# ---------------------------------------------------------------------------------------------- webhooks and agent settings


class WebhookForm(forms.Form):
    """Shape only; reviews.webhooks validates again (http(s) URL, known events) and is what counts."""

    name = forms.CharField(max_length=100)
    url = forms.CharField(
        max_length=500,
        label="URL",
        help_text="http:// or https:// at a public address; receives a signed POST per event",
        widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.com/procmem"}),
    )
    events = forms.MultipleChoiceField(
        choices=[(e.value, f"{e.label} ({e.value})") for e in SUBSCRIBABLE_EVENTS], widget=forms.CheckboxSelectMultiple
    )
    body_format = forms.ChoiceField(
        choices=Webhook.BodyFormat.choices,
        label="Body",
        help_text='Slack-compatible sends {"text": …} for an incoming-webhook URL',
    )
    is_active = forms.BooleanField(required=False, initial=True, label="Active")


class AgentSettingsForm(forms.Form):
    """The one page of an agent's own settings: tools, switches, limits and the capture (mining) settings."""

    tools = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 5}),
        help_text="One tool name per line: what the agent really has. Procedures that need a tool not listed are refused at load.",
    )
    procedural_memory_enabled = forms.BooleanField(
        required=False, label="Procedural memory on (the agent receives procedures)"
    )
    injection_cap = forms.IntegerField(
        min_value=0, max_value=MAX_INJECTION_CAP, label="Procedures injected per task at most"
    )
    review_target_hours = forms.IntegerField(
        min_value=1,
        max_value=MAX_REVIEW_TARGET_HOURS,
        label="Review target (hours)",
        help_text='How long a candidate should wait for review: the queue shows "due soon" from half of it and "overdue" after it',
    )
    # redaction patterns: their own formset (RedactionPatternFormSet), one row per pattern
    auto_capture_enabled = forms.BooleanField(
        required=False,
        label=CAPTURE_LABELS["auto_capture_enabled"],
        help_text="Off by default: scheduled mining runs only for agents whose admins switch it on; a manual run (manage.py mine) always mines.",
    )
    min_tool_calls = forms.IntegerField(
        min_value=1,
        max_value=100,
        label=CAPTURE_LABELS["min_tool_calls"],
        help_text="Sessions with fewer tool calls (think not counted) are not mined.",
    )
    support_threshold = forms.IntegerField(
        min_value=1,
        max_value=100_000,
        label=CAPTURE_LABELS["support_threshold"],
        help_text="Resolved sessions of distinct tasks a mined group needs before it becomes a candidate: repeated trials of one task count once.",
    )
    significance_level = forms.FloatField(
        min_value=0.0001,
        max_value=0.5,
        label=CAPTURE_LABELS["significance_level"],
        help_text="A candidate is proposed only when its tool order is credibly better than the failed sessions', "
        "corrected for the number of skeletons tested.",
    )
    backtest_share = forms.FloatField(
        min_value=0,
        max_value=0.5,
        label=CAPTURE_LABELS["backtest_share"],
        help_text="The newest share of each intent's sessions is not mined; every candidate is tested on it.",
    )
    complaint_window_days = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=365,
        label=CAPTURE_LABELS["complaint_window_days"],
        help_text="A complaint made within this many days of a session's end makes it failed, and the session is mined only once "
        "the window has passed (0: complaints change nothing and labels are final at once).",
    )
    closed_by_customer_resolves = forms.BooleanField(
        required=False,
        label=CAPTURE_LABELS["closed_by_customer_resolves"],
        help_text="Used when no outcome says resolved or not.",
    )
    min_rating = forms.FloatField(
        required=False,
        min_value=-1e6,
        max_value=1e6,
        label=CAPTURE_LABELS["min_rating"],
        help_text="When no outcome says resolved or not: a rating at or above this counts as resolved, below as failed. Empty: ratings decide nothing.",
    )
    coding_min_traces = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=1000,
        # the page's "Coding agents" section says whom it is for; the label does not repeat it
        label="Resolved sessions with a verify command per task family",
        help_text="A task family becomes a candidate once this many resolved sessions ran a verify command. Empty keeps the current value.",
    )
    # task family rules (coding_family_rules): their own formset (FamilyRuleFormSet), one row per rule
    environments = forms.CharField(
        required=False,
        max_length=400,
        label="Environments beside production",
        help_text='Names separated by spaces, e.g. "staging qa". With staging, an approved version goes to staging first and '
        "someone with the promote right moves it to production (outright or as a rollout to a share of sessions).",
    )
    reason = forms.CharField(required=False, max_length=500, help_text="Why (kept in the audit log)")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        own = (self.initial.get("api_rate_limits") or {}) if self.initial else {}
        # One text field per endpoint and counted party; empty keeps the default shown as placeholder.
        for endpoint, label in ENDPOINTS.items():
            for who, who_label in WHO.items():
                name = f"limit_{endpoint}_{who}"
                self.fields[name] = forms.CharField(
                    required=False,
                    max_length=MAX_LIMIT_TEXT,
                    label=f"{label}, {who_label}",  # under the page's "API limits" section
                    help_text=f"Empty: the default, {DEFAULT_LIMITS[endpoint][who]}. Over it, the agent gets 429 with Retry-After.",
                    widget=forms.TextInput(attrs={"placeholder": DEFAULT_LIMITS[endpoint][who]}),
                )
                self.initial.setdefault(name, (own.get(endpoint) or {}).get(who, ""))
        self.fields["reason"] = self.fields.pop("reason")  # last, next to the submit button

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("complaint_window_days") is None:
            cleaned["complaint_window_days"] = 0  # left empty: no complaint window
        if cleaned.get("coding_min_traces") is None:
            cleaned.pop("coding_min_traces", None)  # left empty: the current value stays
        limits: dict[str, dict[str, str]] = {}
        for endpoint in ENDPOINTS:
            for who in WHO:
                name = f"limit_{endpoint}_{who}"
                text = (cleaned.pop(name, "") or "").strip()
                if not text:
                    continue
                try:
                    parse_limit(text)
                except ValueError as exc:
                    self.add_error(name, str(exc))
                    continue
                limits.setdefault(endpoint, {})[who] = text
        cleaned["api_rate_limits"] = limits
        return cleaned


# ---------------------------------------------------------------------------------------------- redaction patterns


class RedactionPatternForm(forms.Form):
    """One of the agent's own redaction patterns: what reviewers see instead of the match, and the
    regular expression. Each field is checked here, so an error stands beside its field; the
    service (library/agents/settings.py) checks the list again."""

    label = forms.CharField(
        max_length=60,
        help_text="What reviewers see instead of the match, e.g. order_id",
        widget=forms.TextInput(attrs={"placeholder": "order_id"}),
    )
    regex = forms.CharField(
        max_length=500,
        label="Regular expression",
        strip=False,
        help_text="Python syntax, e.g. \\bORD-\\d+\\b",
        widget=forms.TextInput(attrs={"placeholder": r"\bORD-\d+\b", "spellcheck": "false", "class": "mono"}),
    )

    def clean_label(self) -> str:
        label = self.cleaned_data["label"].strip()
        if not label:
            raise ValidationError("Name what reviewers see instead of the match.")
        return label

    def clean_regex(self) -> str:
        regex = self.cleaned_data["regex"]
        try:
            re.compile(regex)
        except re.error as exc:
            raise ValidationError(f"Not a valid regular expression: {exc}.") from None
        problem = slow_pattern_problem(regex)
        if problem:
            raise ValidationError(f"This pattern {problem}; use a possessive repeat (a++) or one level.")
        return regex


class _RedactionPatternBaseFormSet(forms.BaseFormSet):
    def patterns(self) -> list[dict[str, str]]:
        """The patterns to save, in order: filled rows not marked for deletion (call after is_valid;
        an empty extra row has no cleaned data)."""
        return [
            {"label": form.cleaned_data["label"], "regex": form.cleaned_data["regex"]}
            for form in self.forms
            if form.cleaned_data.get("label") and not form.cleaned_data.get("DELETE")
        ]


RedactionPatternFormSet = forms.formset_factory(
    RedactionPatternForm,
    formset=_RedactionPatternBaseFormSet,
    extra=1,
    can_delete=True,
    max_num=MAX_REDACTION_PATTERNS,
    validate_max=True,
)


# ---------------------------------------------------------------------------------------------- task family rules


class FamilyRuleForm(forms.Form):
    """One of a coding agent's task family rules: sessions whose edited files start with `prefix`
    belong to `family`. Each field is checked here by the rule the miner applies
    (library/coding/families.py), each error naming the rule and the field; the service checks the
    list again. A row left empty adds nothing."""

    prefix = forms.CharField(
        required=False,
        label="Path prefix",
        help_text="Edited files under this path belong to the family",
        widget=forms.TextInput(attrs={"placeholder": "django/db/migrations", "spellcheck": "false", "class": "mono"}),
    )
    family = forms.CharField(
        required=False,
        label="Family",
        help_text="The family's name",
        widget=forms.TextInput(attrs={"placeholder": "migrations", "spellcheck": "false", "class": "mono"}),
    )

    def __init__(self, *args, number: int | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.number = number  # the rule's place on the page, from 1 (None: the formset's empty form)

    def named(self, part: str, problem: str) -> str:
        """An error that names the rule and the field: "Rule 2, path prefix: …"."""
        return f"Rule {self.number}, {self.fields[part].label.lower()}: {problem}"

    def clean(self):
        cleaned = super().clean()
        values = {part: family_rule_part(cleaned.get(part)) for part in ("prefix", "family")}
        if cleaned.get("DELETE") or not any(values.values()):
            return cleaned
        needs = {
            "prefix": "write the path the edited files start with, e.g. django/db/migrations.",
            "family": "name the family those files belong to, e.g. migrations.",
        }
        for part, value in values.items():
            if not value:
                self.add_error(part, self.named(part, needs[part]))
            elif not family_rule_part_ok(part, value):
                self.add_error(
                    part,
                    self.named(
                        part,
                        f"“{value[:60]}” is not a relative path of letters, digits and _ . / - "
                        f"of at most {FAMILY_RULE_MAX_CHARS[part]} characters.",
                    ),
                )
        cleaned.update(values)
        return cleaned


class _FamilyRuleBaseFormSet(forms.BaseFormSet):
    def get_form_kwargs(self, index):
        return {**super().get_form_kwargs(index), "number": None if index is None else index + 1}

    def _kept(self) -> list[FamilyRuleForm]:
        return [
            form
            for form in self.forms
            if form.cleaned_data.get("prefix")
            and form.cleaned_data.get("family")
            and not form.cleaned_data.get("DELETE")
        ]

    def clean(self):
        # two rules for one prefix: the miner would take the first and ignore the other
        if any(self.errors):
            return
        first: dict[str, int] = {}
        for form in self._kept():
            prefix = form.cleaned_data["prefix"]
            if prefix in first:
                form.add_error("prefix", form.named("prefix", f"rule {first[prefix]} already has the prefix {prefix}."))
            else:
                first[prefix] = form.number

    def rules(self) -> list[dict[str, str]]:
        """The rules to save, in order: filled rows not marked for deletion (call after is_valid;
        an empty extra row has no cleaned data)."""
        return [{"prefix": form.cleaned_data["prefix"], "family": form.cleaned_data["family"]} for form in self._kept()]


FamilyRuleFormSet = forms.formset_factory(FamilyRuleForm, formset=_FamilyRuleBaseFormSet, extra=1, can_delete=True)
