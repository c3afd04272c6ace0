"""The `procmem` format: one finished session per object, as the procmem clients report it
(docs/api.md "Sessions in")."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..session_fields import (
    FieldError,
    ImportOptions,
    SessionIn,
    bool_or_none,
    clean_session_id,
    clean_task_key,
    clean_text,
    clean_tool_calls,
    intent_from_options,
    json_object,
    reported,
    valid_session,
    with_prefix,
)

MAX_RATING = 1e6


def parse_procmem(item: Any, options: ImportOptions | None = None) -> SessionIn:
    options = options or ImportOptions()
    item = json_object(item)
    errors: list[FieldError] = []
    session_id = with_prefix(clean_session_id(item.get("session_id"), errors), options)
    outcome = item.get("outcome")
    resolved = escalated = None
    rating = None
    if outcome is not None:
        if not isinstance(outcome, Mapping):
            errors.append(FieldError("outcome", "must be an object {resolved, escalated, rating}"))
        else:
            resolved = bool_or_none(outcome.get("resolved"), "outcome.resolved", errors)
            escalated = bool_or_none(outcome.get("escalated"), "outcome.escalated", errors)
            rating_raw = outcome.get("rating")
            if rating_raw is not None:
                if (
                    isinstance(rating_raw, bool)
                    or not isinstance(rating_raw, (int, float))
                    or not math.isfinite(rating_raw)
                    or abs(rating_raw) > MAX_RATING
                ):
                    errors.append(
                        FieldError(
                            "outcome.rating",
                            f"must be a finite number of at most {MAX_RATING:g}, got {rating_raw!r:.40}",
                        )
                    )
                else:
                    rating = float(rating_raw)
    tool_calls = clean_tool_calls(item.get("tool_calls"), errors)
    intent = intent_from_options(item, session_id, options, errors, item.get("intent"))
    session = SessionIn(
        session_id=session_id,
        intent=intent,
        task=clean_text(item.get("task"), "task", errors),
        resolved=resolved,
        escalated=escalated,
        rating=rating,
        tool_calls=tool_calls,
        **reported(
            errors,
            injected=item.get("injected"),
            instruction_chars=item.get("instruction_chars"),
            model=item.get("model") or options.model,
            ended_at=item.get("ended_at"),
        ),
        source_format="procmem",
        reply=clean_text(item.get("reply"), "reply", errors),
        task_key=clean_task_key(item.get("task_key"), errors),
        structured=[item.get("tool_results")] if item.get("tool_results") is not None else [],
    )
    return valid_session(session, errors)
