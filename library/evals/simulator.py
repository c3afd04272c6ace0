"""The demo agent (simulator): a deterministic stand-in for the demo data's support agent, so that
eval replays can be shown without a real agent. Named as a simulator everywhere. Pure Python.

With an injected procedure it follows the first one's steps in order: every tool the step names is
called (with the case context's values for the step's `{{placeholders}}`; `replyTemplates('x')`
picks template x). A step that names no tool (a user-facing action) calls nothing. When the steps
end without a reply template, it replies as a careful agent would: "approval pending" once it asked
for approval, otherwise the intent's usual answer.

Without a procedure it behaves as the demo sessions did: for an over-limit refund it looks up the
order, checks the return window and promises the refund — without createApproval.
"""

from __future__ import annotations

import re
from typing import Any

DEMO_TOOLS = ("lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates")

TEMPLATES = {
    "approval_pending": "I have asked for approval of your refund of {amount}; you will hear from us within 2 business days.",
    "refund_pending": "Your refund of {amount} is being processed and will reach you in 3 to 5 days.",
    "refund_confirmed": "Your refund of {amount} has been confirmed.",
    "order_status": "Your order {order_id} is on its way; the carrier expects delivery on {delivery_date}.",
    "address_changed": "The delivery address of order {order_id} is now {address}.",
    "generic": "Thank you for your message; a colleague will get back to you shortly.",
}

# What the demo sessions did when no procedure was injected: tool calls, then the reply template.
UNGUIDED = {
    "refund_over_limit": (["lookupOrder", "checkReturnWindow"], "refund_pending"),
    "refund_within_limit": (["lookupOrder", "checkReturnWindow"], "refund_confirmed"),
    "order_status": (["lookupOrder"], "order_status"),
    "address_change": (["lookupOrder"], "address_changed"),
}

_PLACEHOLDER = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
_TEMPLATE_ARG = re.compile(r"replyTemplates\(\s*['\"]?([a-zA-Z_][a-zA-Z0-9_]*)")
_ORDER_TOOLS = {"lookupOrder", "checkReturnWindow", "createApproval"}


class _Defaults(dict):
    def __missing__(self, key: str) -> str:
        return f"[{key}]"


def _args(tool: str, step: str, context: dict) -> dict[str, Any]:
    if tool == "replyTemplates":
        match = _TEMPLATE_ARG.search(step)
        return {"template": match.group(1)} if match else {}
    args = {name: context.get(name, f"{{{{{name}}}}}") for name in _PLACEHOLDER.findall(step)}
    if tool in _ORDER_TOOLS and "order_id" not in args and "order_id" in context:
        args["order_id"] = context["order_id"]
    if tool == "createApproval" and "amount" in context:
        args.setdefault("amount", context["amount"])
    return args


def _tools_in(step: str, known: list[str]) -> list[str]:
    found = []
    for tool in known:
        for match in re.finditer(rf"\b{re.escape(tool)}\b", step):
            found.append((match.start(), tool))
    return [tool for _pos, tool in sorted(found)]


def simulate(*, case: dict, procedures: list[dict]) -> dict:
    """Returns `{"tool_calls": [...], "reply": str}` — the same every time for the same input."""
    intent = case.get("intent", "")
    context = case.get("context") or {}
    calls: list[dict] = []
    template = None
    if procedures:
        procedure = procedures[0]
        known = list(dict.fromkeys([*DEMO_TOOLS, *procedure.get("requiredTools", [])]))
        for step in procedure.get("steps", []):
            for tool in _tools_in(step, known):
                args = _args(tool, step, context)
                calls.append({"name": tool, "args": args})
                if tool == "replyTemplates" and "template" in args:
                    template = args["template"]
        if template is None:
            called = {call["name"] for call in calls}
            if intent.startswith("refund") and "createApproval" in called:
                template = "approval_pending"
            else:
                template = UNGUIDED.get(intent, ([], "generic"))[1]
            calls.append({"name": "replyTemplates", "args": {"template": template}})
    else:
        tools, template = UNGUIDED.get(intent, ([], "generic"))
        calls = [{"name": tool, "args": _args(tool, "", context)} for tool in tools]
        calls.append({"name": "replyTemplates", "args": {"template": template}})
    values = _Defaults(
        {
            "amount": "the amount",
            "order_id": "your order",
            "delivery_date": "the date given",
            "address": "the new address",
        }
    )
    values.update({k: v for k, v in context.items() if isinstance(v, (str, int, float))})
    reply = TEMPLATES.get(template, TEMPLATES["generic"]).format_map(values)
    return {"tool_calls": calls, "reply": reply}
