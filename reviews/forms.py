"""Forms of the review workspace. They only shape input; the services validate content and
permissions again (`library.services.validate_content`, the lifecycle checks)."""

from __future__ import annotations

from django import forms

from library.models import Agent, Intent, procedure_key_validator
from library.services import MAX_STEPS_APPROVABLE


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
            raise forms.ValidationError(f"Write at least {self.min_items} item(s), one per line.")

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
    def for_version(cls, version, data=None) -> "ReviseForm":
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
    agent = forms.ModelChoiceField(queryset=Agent.objects.none(), label="Agent", to_field_name="name", empty_label="— choose —")

    def __init__(self, *args, agents, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["agent"].queryset = agents


class RejectForm(forms.Form):
    reason = forms.CharField(
        label="Why reject", max_length=1000, widget=forms.TextInput(attrs={"size": 50, "placeholder": "the reason, for the audit log"})
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


class CommentForm(forms.Form):
    body = forms.CharField(label="Comment", max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))


class ApproveForm(forms.Form):
    confirm = forms.BooleanField(
        required=True,
        label="I have read the diff, the evidence and the eval result, and I approve this exact version under my name.",
        error_messages={"required": "Tick the confirmation to approve."},
    )
    comment = forms.CharField(label="Comment for the audit log", max_length=1000, required=False)
