"""Looks for known personal values in everything a reviewer or an export can see.

`scan_personal_data` (the management command) is the check that redaction works on real data: given
the values that must never appear (a file, or the tau-bench worlds), it walks every reviewer-visible
surface — candidate and version content, evidence and provenance, session excerpts, mining-run
reports, audit rows, regression cases and their results, the procedure export — and reports each
hit with where it is (model, primary key, field and JSON path).

Which values are looked for, and why (false hits would make the check useless): whole values that
identify someone on their own — full names ("Mia Li", not "Mia"), user ids, e-mail addresses, dates
of birth, first address lines, payment-method ids, reservation and order ids. First names alone,
cities, states, countries, zip codes and the last four digits of a card are too common to tell a
leak from an ordinary word or number; the redaction tests check those per session instead.
Matching ignores case and needs a word boundary on both sides.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from django.apps import apps
from django.core.exceptions import FieldError
from django.db import models

from ..interchange.procedure_files import export_library
from ..models import Agent

# (app label, model, fields): the rows and columns a reviewer's pages or an export show. Raw session
# data (AgentSession.task, .tool_calls) is not here: no page shows it, and it is purged after the
# retention window; what reviewers read of a session is its redacted excerpt.
SURFACES: list[tuple[str, str, tuple[str, ...]]] = [
    (
        "library",
        "ProcedureVersion",
        (
            "applies_when",
            "steps",
            "required_tools",
            "forbidden_actions",
            "evidence",
            "provenance",
            "quarantine_reasons",
            "status_reason",
        ),
    ),
    ("library", "Procedure", ("key",)),
    ("library", "Intent", ("name", "description")),
    # the identifiers a session carries as sent are shown as they are (lists, filters, the admin)
    ("library", "AgentSession", ("redacted_excerpt", "session_id", "model", "task_key")),
    # OTLP spans waiting or kept a day, and failed OTLP sessions: the admin and the ops page show their ids
    ("library", "OtlpSpan", ("name", "conversation_id", "session_id", "note")),
    ("library", "OtlpFlushFailure", ("session_id", "error")),
    ("library", "MiningRun", ("parameters", "counts", "skipped", "report", "error")),
    ("library", "AuditEvent", ("actor_label", "reason", "before", "after")),
    (
        "library",
        "RegressionCase",
        (
            "name",
            "task",
            "context",
            "expected_tools",
            "forbidden_tools",
            "reply_must_match",
            "reply_must_not_match",
            "tool_results",
        ),
    ),
    ("library", "EvalRun", ("verdict_detail", "failure_reason")),
    ("library", "EvalCaseResult", ("error", "failures", "tool_calls", "reply")),
]


def register_surface(app_label: str, model_name: str, fields: tuple[str, ...]) -> None:
    """Apps above library (reviews) add the rows their own pages show, from their AppConfig.ready()."""
    entry = (app_label, model_name, tuple(fields))
    if entry not in SURFACES:
        SURFACES.append(entry)


KINDS = ("name", "user_id", "email", "dob", "address", "payment_id", "reservation_id", "order_id", "other")


@dataclass(frozen=True)
class KnownValue:
    value: str
    kind: str


@dataclass(frozen=True)
class Hit:
    surface: str  # "library.ProcedureVersion" or "export"
    pk: Any  # the row's primary key, or the exported file's path
    field: str
    path: str  # inside a JSON field: evidence.excerpts[0].excerpt[2].args.user_id; "{key}" for a dict key
    kind: str
    value: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------- values


def values_from_file(path: Path) -> list[KnownValue]:
    """A JSON list (strings, or {"value", "kind"} objects) or a text file: one value a line,
    optionally `kind<TAB>value`. Raises ValueError naming the line or item that is wrong."""
    text = Path(path).read_text(encoding="utf-8")
    found: list[KnownValue] = []
    if text.lstrip().startswith("["):
        try:
            items = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"{path}: invalid JSON: {exc}") from None
        for index, item in enumerate(items):
            if isinstance(item, str):
                found.append(KnownValue(item, "other"))
            elif isinstance(item, Mapping) and isinstance(item.get("value"), str):
                found.append(KnownValue(item["value"], str(item.get("kind") or "other")))
            else:
                raise ValueError(f'{path}: item {index}: needs a string or {{"value": ..., "kind": ...}}')
        return [v for v in found if v.value.strip()]
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        kind, tab, value = line.partition("\t")
        found.append(KnownValue(value.strip(), kind.strip()) if tab else KnownValue(line, "other"))
    return found


def _person_names(obj: Any) -> Iterator[str]:
    """Full names of every person in a tau-bench record (users, saved passengers, passengers)."""
    if isinstance(obj, Mapping):
        if isinstance(obj.get("first_name"), str) and isinstance(obj.get("last_name"), str):
            yield f"{obj['first_name']} {obj['last_name']}"
        for value in obj.values():
            yield from _person_names(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from _person_names(item)


def _user_values(user_id: str, user: Mapping[str, Any]) -> Iterator[KnownValue]:
    yield KnownValue(user_id, "user_id")
    for name in _person_names(user):
        yield KnownValue(name, "name")
    if user.get("email"):
        yield KnownValue(user["email"], "email")
    if user.get("dob"):
        yield KnownValue(user["dob"], "dob")
    for passenger in user.get("saved_passengers") or []:
        if passenger.get("dob"):
            yield KnownValue(passenger["dob"], "dob")
    address = user.get("address") or {}
    if address.get("address1"):
        yield KnownValue(address["address1"], "address")
    for payment_id in user.get("payment_methods") or {}:
        yield KnownValue(payment_id, "payment_id")
    for reservation in user.get("reservations") or []:
        yield KnownValue(reservation, "reservation_id")
    for order in user.get("orders") or []:
        yield KnownValue(order, "order_id")


def taubench_values(directory: Path) -> list[KnownValue]:
    """The personal values of the tau-bench worlds: every one of airline_db (users, reservations),
    and those of retail_db that the retail tasks (tau2_retail_tasks.json) mention."""
    directory = Path(directory)
    found: set[KnownValue] = set()
    airline = directory / "airline_db"
    for user_id, user in json.loads((airline / "users.json").read_text()).items():
        found.update(_user_values(user_id, user))
    for reservation_id, reservation in json.loads((airline / "reservations.json").read_text()).items():
        found.add(KnownValue(reservation_id, "reservation_id"))
        found.update(KnownValue(name, "name") for name in _person_names(reservation.get("passengers") or []))
        found.update(KnownValue(p["dob"], "dob") for p in reservation.get("passengers") or [] if p.get("dob"))
        found.update(
            KnownValue(p["payment_id"], "payment_id")
            for p in reservation.get("payment_history") or []
            if p.get("payment_id")
        )
    found.update(retail_task_values(directory))
    return sorted(found, key=lambda v: (v.kind, v.value))


def retail_task_values(directory: Path) -> list[KnownValue]:
    """retail_db's personal values that appear in tau2_retail_tasks.json (names as first and last
    name together, anywhere in the file)."""
    directory = Path(directory)
    tasks_text = (directory / "tau2_retail_tasks.json").read_text()
    retail = directory / "retail_db"
    candidates: set[KnownValue] = set()
    for user_id, user in json.loads((retail / "users.json").read_text()).items():
        candidates.update(_user_values(user_id, user))
    for order_id, order in json.loads((retail / "orders.json").read_text()).items():
        candidates.add(KnownValue(order_id, "order_id"))
        address = order.get("address") or {}
        if address.get("address1"):
            candidates.add(KnownValue(address["address1"], "address"))
        for payment in order.get("payment_history") or []:
            if payment.get("payment_method_id"):
                candidates.add(KnownValue(payment["payment_method_id"], "payment_id"))
    lowered = tasks_text.lower()
    mentioned = set()
    for value in candidates:
        if value.kind == "name":
            first, _, last = value.value.partition(" ")
            if (
                re.search(rf'"first_name": "{re.escape(first)}", "last_name": "{re.escape(last)}"', tasks_text)
                or value.value.lower() in lowered
            ):
                mentioned.add(value)
        elif value.value.lower() in lowered:
            mentioned.add(value)
    return sorted(mentioned, key=lambda v: (v.kind, v.value))


# ---------------------------------------------------------------------------------------------- matching


class Matcher:
    """All known values as one case-insensitive pattern with word boundaries on both sides."""

    def __init__(self, values: Iterable[KnownValue]):
        by_value: dict[str, KnownValue] = {}
        for value in values:
            text = value.value.strip()
            if len(text) >= 4:  # shorter values cannot be told from ordinary words and numbers
                by_value.setdefault(text.lower(), KnownValue(text, value.kind))
        self.values = by_value
        alternatives = sorted(by_value, key=len, reverse=True)
        self._pattern = (
            re.compile(r"(?<![\w])(?:" + "|".join(re.escape(v) for v in alternatives) + r")(?![\w])", re.IGNORECASE)
            if alternatives
            else None
        )

    def find(self, text: str) -> list[KnownValue]:
        if self._pattern is None or not text:
            return []
        return [self.values[m.group(0).lower()] for m in self._pattern.finditer(text)]


def _strings(data: Any, path: str) -> Iterator[tuple[str, str]]:
    """(JSON path, string) for every string in JSON-like data, object keys included."""
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, Mapping):
        for key, value in data.items():
            key = str(key)
            child = f"{path}.{key}" if path else key
            yield child + "{key}", key
            yield from _strings(value, child)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            yield from _strings(item, f"{path}[{index}]")
    elif isinstance(data, (int, float)) and not isinstance(data, bool):
        yield path, str(data)


def _hits_in(matcher: Matcher, data: Any, *, surface: str, pk: Any, field: str) -> Iterator[Hit]:
    for path, text in _strings(data, ""):
        for value in matcher.find(text):
            yield Hit(surface=surface, pk=pk, field=field, path=path, kind=value.kind, value=value.value)


def _surface_models() -> Iterator[tuple[type[models.Model], tuple[str, ...]]]:
    for app_label, model_name, fields in SURFACES:
        yield apps.get_model(app_label, model_name), fields


def scan(
    values: Iterable[KnownValue], *, agent_names: list[str] | None = None, include_export: bool = True
) -> list[Hit]:
    """Every occurrence of a known value on a reviewer-visible surface (read-only)."""
    matcher = Matcher(values)
    hits: list[Hit] = []
    for model, fields in _surface_models():
        queryset = model.objects.all()
        if agent_names is not None:
            queryset = _for_agents(model, queryset, agent_names)
        label = f"{model._meta.app_label}.{model.__name__}"
        for row in queryset.order_by("pk").values_list("pk", *fields).iterator(chunk_size=1000):
            pk = row[0]
            for field, data in zip(fields, row[1:]):
                if data in (None, "", [], {}):
                    continue
                hits.extend(_hits_in(matcher, data, surface=label, pk=pk, field=field))
    if include_export:
        hits.extend(_export_hits(matcher, agent_names))
    return hits


def _for_agents(model: type[models.Model], queryset, agent_names: list[str]):
    """Rows of the named agents; a model without a path to an agent (notifications) is scanned whole."""
    for path in (
        "agent__name",
        "procedure__agent__name",
        "version__procedure__agent__name",
        "run__version__procedure__agent__name",
    ):
        try:
            return queryset.filter(**{f"{path}__in": agent_names})
        except FieldError:
            continue
    return queryset


def _export_hits(matcher: Matcher, agent_names: list[str] | None) -> Iterator[Hit]:
    """The procedure export (export_procedures) as an operator would publish it."""

    agents = list(Agent.objects.filter(name__in=agent_names)) if agent_names is not None else None
    with tempfile.TemporaryDirectory(prefix="procmem-scan-") as tmp:
        for path in export_library(Path(tmp), agents=agents):
            relative = str(path.relative_to(tmp))
            data = json.loads(path.read_text(encoding="utf-8"))
            yield from _hits_in(matcher, data, surface="export", pk=relative, field="(file)")
