"""Erasure reaches every copy (docs/design.md "Erasure").

`services.version_erase` wipes the version row itself. The same text also lives elsewhere: the
mining run report the draft came from, audit reasons and before/after values (a "Commented" event
keeps the comment body as its reason), later versions edited from it, eval replies, notifications,
webhook deliveries. Inside the erasing transaction, `erasure_sweep` (caller holds the version's lock
and has just created the tombstone):

1. gathers the erased text: the version's appliesWhen, steps, forbidden actions, pre/postconditions
   and verify command, and what the `version_erasing` listeners wiped (reviews: comment bodies),
   less the texts that versions which stay still hold verbatim (a step inherited from the
   predecessor lives on there: erase that version too to remove it);
2. rewrites every stored text value that contains one of those texts (case-insensitive; a text of
   at least MIN_CHARS characters, and also its first PREFIX_CHARS characters, so a copy cut short —
   an audit reason keeps 200 characters of a comment, a notification 157 — is found too) to the
   tombstone's reference `[erased with tombstone N]`: a whole text column, or the one string of a
   JSON value, so no tail of a cut copy stays. Every model of the library, reviews and admin apps
   is searched, except the session store (sessions are the source material, kept or purged by
   retention, not by erasing a version) and the tombstones and sweeps themselves;
3. rewrites, in the versions edited from it (`based_on`, transitively), the text fields they still
   share verbatim, and flags those versions for review (an audit row each; an ACTIVE one is due
   for re-review today);
4. in the mining run that proposed it, replaces the report entry's draft (steps, forbidden actions,
   summary, skeleton, coding contract) with the reference;
4b. reaches the copies made from the sessions the version was mined from (its evidence names them):
   each regression case made from one of them (issue 42: the sessions' text — a customer's name —
   is what the version's content came from) loses its task, name, context and recorded tool results
   to the reference and is deactivated, its `case_change` audit rows' snapshots lose the same
   fields, and the replies its eval runs recorded are wiped. The sessions themselves stay (the
   session store is kept or purged by retention), but their tasks and the cases' are fingerprinted
   with the erased text, so `scan_erased` finds a copy of them written later, and
   `--include-sessions` lists the sessions that still hold it;
5. checks, with the same search, that no stored text still holds the erased text, and records what
   it did and found in an `ErasureSweep` row, with keyed fingerprints of the erased text's word
   windows that no staying version of the agent shares, numbered by text (HMAC-SHA-256 under a key
   derived from SECRET_KEY; never the text), so that
   `manage.py scan_erased` (library/scans/erased_text.py) proves the same later, and a queued e-mail whose text matches is not
   sent as it was (reviews.notifications).

The database lets audit rows and versions change this way only while the sweep is under way
(migration 0023_erasure_sweep).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import connection, models
from django.db.models import Q, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from ..models import (
    AgentSession,
    AuditEvent,
    ErasureSweep,
    EvalCaseResult,
    MiningRun,
    ProcedureVersion,
    RegressionCase,
    Status,
    VersionEmbedding,
    VersionTombstone,
)
from ..selectors import evidence_session_ids

MIN_CHARS = 8
PREFIX_CHARS = 100
WINDOW_WORDS = 6
MATCH_WINDOWS = 3  # windows of one erased text a stored text must hold to count as its copy
MAX_WINDOWS_PER_TEXT = 400
SWEPT_APPS = ("library", "reviews", "admin")
# not searched: the version rows (step 3 handles them), the erasure records, the raw session store,
# binary and secret columns
NOT_SWEPT = {
    "library.ProcedureVersion",
    "library.VersionTombstone",
    "library.ErasureSweep",
    "library.AgentSession",
    "library.VersionEmbedding",
    "library.ApiToken",
}
# columns the database keeps fixed for other reasons (a finished run's verdict never changes)
FIXED_COLUMNS = {("library.EvalRun", "verdict_detail")}
VERSION_TEXT_FIELDS = (
    "applies_when",
    "steps",
    "forbidden_actions",
    "preconditions",
    "postconditions",
    "verify_command",
)
MINING_ENTRY_FIELDS = (
    "steps",
    "forbiddenActions",
    "summary",
    "skeleton",
    "draft",
    "verifyCommand",
    "preconditions",
    "postconditions",
)
_WORD = re.compile(r"\w+")
REFERENCE_RE = re.compile(r"\[erased with tombstone \d+\]")  # VersionTombstone.reference


# ---------------------------------------------------------------------------------------------- the erased text


def version_texts(version: ProcedureVersion) -> list[str]:
    """The free text of a version's content (tool names are shared vocabulary, not its text), but
    not a reference an earlier sweep left there (that is no erased text, and exports show it)."""
    texts = [version.applies_when, version.verify_command or ""]
    for name in ("steps", "forbidden_actions", "preconditions", "postconditions"):
        texts.extend(str(item) for item in getattr(version, name) or [])
    return [t for t in texts if t and t.strip() and not REFERENCE_RE.fullmatch(t.strip())]


def needles(texts: Iterable[str]) -> list[str]:
    """What the sweep searches for, lower-cased: every text of at least MIN_CHARS characters and,
    for a longer one, its first PREFIX_CHARS characters too; longest first."""
    found: set[str] = set()
    for text in texts:
        text = text.strip().lower()
        if len(text) >= MIN_CHARS and not REFERENCE_RE.fullmatch(text):
            found.add(text)
            if len(text) > PREFIX_CHARS:
                found.add(text[:PREFIX_CHARS])
    return sorted(found, key=len, reverse=True)


def contains_any(text: str, lowered_needles: list[str]) -> bool:
    lowered = text.lower()
    return any(n in lowered for n in lowered_needles)


# ---------------------------------------------------------------------------------------------- fingerprints


def _key() -> bytes:
    return hashlib.sha256(b"procmem erasure fingerprints\0" + settings.SECRET_KEY.encode()).digest()


def _digest(key: bytes, words: list[str]) -> str:
    return hmac.new(key, " ".join(words).encode(), hashlib.sha256).hexdigest()[:32]


def fingerprints(texts: Iterable[str], *, shared: Iterable[str] = ()) -> list[str]:
    """`"<words>:<digest>:<text>"` for the word windows of each text (`<text>` numbers the erased
    texts): a text of fewer than WINDOW_WORDS words is one window, a longer one every run of
    WINDOW_WORDS consecutive words. A window that also occurs in one of the `shared` texts (what
    stays in the library) is left out: it is common phrasing, not the erased text."""
    key = _key()
    groups: list[set[tuple[str, ...]]] = []
    for text in texts:
        if len(text.strip()) < MIN_CHARS or REFERENCE_RE.fullmatch(text.strip()):
            continue
        words = _WORD.findall(text.lower())
        if not words:
            continue
        size = min(len(words), WINDOW_WORDS)
        groups.append(
            {tuple(words[start : start + size]) for start in range(0, min(len(words) - size + 1, MAX_WINDOWS_PER_TEXT))}
        )
    sizes = {len(window) for group in groups for window in group}
    for text in shared if groups else ():
        words = _WORD.findall(text.lower())
        for size in sizes:
            for start in range(0, len(words) - size + 1):
                window = tuple(words[start : start + size])
                for group in groups:
                    group.discard(window)
    return sorted(
        f"{len(window)}:{_digest(key, list(window))}:{number}"
        for number, group in enumerate(groups)
        for window in group
    )


class FingerprintMatcher:
    """Whether a text holds an erased text (from every sweep's fingerprints): MATCH_WINDOWS of one
    erased text's word windows, or all of them when it has fewer. One shared window is phrasing
    ("reply to the customer with replyTemplates" begins many steps); a copy, even one cut short
    (an audit reason keeps 200 characters), holds several. Fingerprints of the first format
    (`"<words>:<digest>"`, no text number) count one window each."""

    def __init__(self, prints: Iterable[str] | None = None):
        rows = ErasureSweep.objects.values_list("fingerprints", flat=True) if prints is None else [list(prints)]
        self.groups_of: dict[str, set[tuple]] = {}
        members: dict[tuple, set[str]] = {}
        self.sizes: set[int] = set()
        for row_number, row in enumerate(rows):
            for item in row or []:
                size, _, rest = str(item).partition(":")
                digest, _, text_number = rest.partition(":")
                if not size.isdigit() or not digest:
                    continue
                group = (row_number, text_number) if text_number else (row_number, "window", digest)
                self.sizes.add(int(size))
                self.groups_of.setdefault(digest, set()).add(group)
                members.setdefault(group, set()).add(digest)
        self.needed = {group: min(MATCH_WINDOWS, len(digests)) for group, digests in members.items()}
        self._key = _key()

    def __bool__(self) -> bool:
        return bool(self.groups_of)

    def matches(self, text: str) -> bool:
        if not self.groups_of or not text:
            return False
        words = _WORD.findall(text.lower())
        found: dict[tuple, set[str]] = {}
        for size in self.sizes:
            for start in range(0, len(words) - size + 1):
                digest = _digest(self._key, words[start : start + size])
                for group in self.groups_of.get(digest, ()):
                    seen = found.setdefault(group, set())
                    seen.add(digest)
                    if len(seen) >= self.needed[group]:
                        return True
        return False


# ---------------------------------------------------------------------------------------------- stored text


def identifies_row(model: type[models.Model], field: models.Field) -> bool:
    """Whether `field` is a name the row is found by (unique, alone or with others): an agent's,
    intent's or namespace's name, a procedure's key, an environment, a trace or session id. A name
    is no copy of a version's text even when it spells one (a precondition "support_agent" erased
    renamed the agent), and rewriting it would break every reference to the row, or collide."""
    if field.unique:
        return True
    together = [
        *model._meta.unique_together,
        *(c.fields for c in model._meta.constraints if getattr(c, "fields", None)),
    ]
    return any(field.name in names for names in together)


def swept_columns() -> Iterator[tuple[type[models.Model], list[models.Field]]]:
    """Every model of SWEPT_APPS with its text and JSON columns (minus NOT_SWEPT, FIXED_COLUMNS and
    the columns that name a row, `identifies_row`)."""
    for app_label in SWEPT_APPS:
        try:
            config = apps.get_app_config(app_label)
        except LookupError:
            continue
        for model in config.get_models():
            label = f"{model._meta.app_label}.{model.__name__}"
            if label in NOT_SWEPT or model._meta.proxy:
                continue
            columns = [
                f
                for f in model._meta.concrete_fields
                if isinstance(f, (models.CharField, models.TextField, models.JSONField))
                and not f.primary_key
                and not f.choices
                and not identifies_row(model, f)
                and (label, f.name) not in FIXED_COLUMNS
            ]
            if columns:
                yield model, columns


def _json_forms(needle: str) -> set[str]:
    """How a string looks inside a JSON column as the database renders it as text (PostgreSQL's
    jsonb keeps non-ASCII as it is; SQLite keeps Django's ASCII escapes)."""
    return {json.dumps(needle, ensure_ascii=False)[1:-1], json.dumps(needle)[1:-1]}


def _rows_holding(model: type[models.Model], columns: list[models.Field], lowered: list[str]):
    """The rows of `model` whose columns may hold a needle (the database narrows; Python decides)."""
    condition = Q()
    annotations = {}
    for column in columns:
        if isinstance(column, models.JSONField):
            alias = f"_sweep_{column.name}"
            annotations[alias] = Cast(column.name, TextField())
            for needle in lowered:
                for form in _json_forms(needle):
                    condition |= Q(**{f"{alias}__icontains": form})
        else:
            for needle in lowered:
                condition |= Q(**{f"{column.name}__icontains": needle})
    return model._default_manager.annotate(**annotations).filter(condition).order_by("pk")


def _scrubbed(value: Any, lowered: list[str], reference: str) -> tuple[Any, bool]:
    """`value` with every string that holds a needle replaced by `reference` (JSON walked)."""
    if isinstance(value, str):
        return (reference, True) if contains_any(value, lowered) else (value, False)
    if isinstance(value, list):
        changed = False
        out = []
        for item in value:
            new, hit = _scrubbed(item, lowered, reference)
            out.append(new)
            changed |= hit
        return out, changed
    if isinstance(value, dict):
        changed = False
        out_dict = {}
        for key, item in value.items():
            new, hit = _scrubbed(item, lowered, reference)
            out_dict[key] = new
            changed |= hit
        return out_dict, changed
    return value, False


@dataclass
class SweepResult:
    rewritten: dict[str, list] = field(default_factory=dict)
    flagged_versions: list[int] = field(default_factory=list)
    remaining: list[dict] = field(default_factory=list)


def _rewrite_rows(lowered: list[str], reference: str, result: SweepResult) -> None:
    for model, columns in swept_columns():
        label = f"{model._meta.app_label}.{model.__name__}"
        for row in _rows_holding(model, columns, lowered):
            updates = {}
            for column in columns:
                new, hit = _scrubbed(getattr(row, column.attname), lowered, reference)
                if hit:
                    if isinstance(new, str) and getattr(column, "max_length", None):
                        new = new[: column.max_length]
                    updates[column.attname] = new
            if updates:
                model._default_manager.filter(pk=row.pk).update(**updates)
                result.rewritten.setdefault(label, []).append(row.pk)


def _mining_entry(version: ProcedureVersion, reference: str, result: SweepResult) -> None:
    if version.mining_run_id is None:
        return
    run = MiningRun.objects.select_for_update().filter(pk=version.mining_run_id).first()
    if run is None:
        return
    report, changed = [], False
    for entry in run.report or []:
        linked = (
            isinstance(entry, dict)
            and isinstance(entry.get("version"), dict)
            and entry["version"].get("pk") == version.pk
        )
        if linked:
            entry = {k: (reference if k in MINING_ENTRY_FIELDS else v) for k, v in entry.items()}
            changed = True
        report.append(entry)
    if changed:
        MiningRun.objects.filter(pk=run.pk).update(report=report)
        result.rewritten.setdefault("library.MiningRun", []).append(run.pk)


def _descendants(version: ProcedureVersion) -> list[ProcedureVersion]:
    found: list[ProcedureVersion] = []
    frontier = [version.pk]
    seen = set(frontier)
    while frontier:
        children = list(
            ProcedureVersion.objects.select_for_update(of=("self",))
            .select_related("procedure__agent")
            .filter(based_on_id__in=frontier)
            .exclude(status=Status.ERASED)
            .order_by("pk")
        )
        frontier = [c.pk for c in children if c.pk not in seen]
        seen.update(frontier)
        found.extend(c for c in children if c.pk in frontier)
    return found


def _shared_fields(version: ProcedureVersion, erased: set[str], reference: str) -> dict[str, Any]:
    """The text fields of `version` rewritten where they still hold erased text verbatim."""
    updates: dict[str, Any] = {}
    for name in VERSION_TEXT_FIELDS:
        value = getattr(version, name)
        if isinstance(value, list):
            new = [reference if isinstance(item, str) and item.strip().lower() in erased else item for item in value]
            if new != value:
                updates[name] = new
        elif isinstance(value, str) and value.strip().lower() in erased:
            updates[name] = reference
    return updates


def _texts_kept_elsewhere(version: ProcedureVersion, descendants: list[ProcedureVersion]) -> set[str]:
    """The texts (lower-cased) of the agent's versions that stay: not erased, not this version, not
    edited from it. A step this version inherited from its predecessor, or shares with another
    procedure, still lives there; it is not the erased text (erase that version too to remove it)."""
    others = (
        ProcedureVersion.objects.filter(procedure__agent_id=version.procedure.agent_id)
        .exclude(status=Status.ERASED)
        .exclude(pk__in=[version.pk, *(d.pk for d in descendants)])
        .only(*VERSION_TEXT_FIELDS)
    )
    return {t.strip().lower() for other in others.iterator(chunk_size=500) for t in version_texts(other)}


def _flag_descendants(
    version: ProcedureVersion,
    descendants: list[ProcedureVersion],
    texts: list[str],
    reference: str,
    user,
    result: SweepResult,
) -> None:
    erased = {t.strip().lower() for t in texts if t.strip()}
    for child in descendants:
        updates = _shared_fields(child, erased, reference)
        if not updates:
            continue
        fields = sorted(updates)
        if child.status == Status.ACTIVE:
            updates["review_by"] = timezone.localdate()
        ProcedureVersion.objects.filter(pk=child.pk).update(**updates)
        _refresh_search_document(child.pk)
        result.flagged_versions.append(child.pk)
        AuditEvent.objects.create(  # as services.audit writes it (that module calls this one)
            action=AuditEvent.Action.ERASE_COPY,
            actor=user,
            version=child,
            procedure=child.procedure,
            agent=child.procedure.agent,
            reason=f"Shared text of v{version.number}, which was erased ({reference}): review this version",
            before={"version": child.number, "fields": fields},
            after={"version": child.number, "fields": fields, "flagged": True},
        )
    if result.flagged_versions:
        VersionEmbedding.objects.filter(version_id__in=result.flagged_versions).delete()


def _refresh_search_document(version_id: int) -> None:
    """The full-text document is filled on insert only (library/migrations/0006_review_day.py); a
    rewritten version gets it again from its new text (PostgreSQL; SQLite searches the text)."""

    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE library_procedureversion v SET search_vector = procmem_version_document("
            "p.key, v.applies_when, v.steps, v.required_tools, v.forbidden_actions) "
            "FROM library_procedure p WHERE p.id = v.procedure_id AND v.id = %s",
            [version_id],
        )


def remaining_copies(lowered: list[str]) -> list[dict]:
    """Where stored text still holds a needle: every swept column, and every version's text."""
    found = []
    for model, columns in [
        *swept_columns(),
        (ProcedureVersion, [ProcedureVersion._meta.get_field(n) for n in VERSION_TEXT_FIELDS]),
    ]:
        label = f"{model._meta.app_label}.{model.__name__}"
        for row in _rows_holding(model, columns, lowered):
            for column in columns:
                if _scrubbed(getattr(row, column.attname), lowered, "")[1]:
                    found.append({"model": label, "pk": row.pk, "field": column.name})
    return found


# ---------------------------------------------------------------------------------------------- copies made from sessions

CASE_COPY_FIELDS = ("task", "name", "context", "tool_results")  # what a case took from its session


def mined_from_sessions(evidence: dict[str, Any]) -> list[str]:
    """The ids of the sessions a version's evidence names: its session list and its excerpts'."""

    ids = list(evidence_session_ids(evidence or {}))
    for excerpt in (evidence or {}).get("excerpts") or []:
        if isinstance(excerpt, dict) and isinstance(excerpt.get("sessionId"), (str, int)):
            ids.append(str(excerpt["sessionId"]))
    return list(dict.fromkeys(ids))


def _session_copies(
    version: ProcedureVersion, session_ids: list[str], reference: str, result: SweepResult
) -> list[str]:
    """Step 4b of the module docstring; returns the texts to fingerprint (the sessions' and the
    cases' tasks). Caller holds the version's lock, inside the sweep (audit rows may change)."""
    if not session_ids:
        return []
    agent_id = version.procedure.agent_id
    sessions = AgentSession.objects.filter(agent_id=agent_id, session_id__in=session_ids)
    texts = [task for task in sessions.values_list("task", flat=True) if task]
    cases = list(
        RegressionCase.objects.select_for_update()
        .filter(agent_id=agent_id)
        .filter(Q(source_session__in=sessions) | Q(external_id__in=[f"session:{sid}"[:200] for sid in session_ids]))
        .order_by("pk")
    )
    if not cases:
        return texts
    texts.extend(case.task for case in cases if case.task and not REFERENCE_RE.fullmatch(case.task.strip()))
    case_ids = [case.pk for case in cases]
    wiped = {"task": reference, "name": reference, "context": {}, "tool_results": {}}
    RegressionCase.objects.filter(pk__in=case_ids).update(**wiped, is_active=False)
    result.rewritten["library.RegressionCase"] = case_ids
    EvalCaseResult.objects.filter(case_id__in=case_ids).update(reply="", tool_calls=[], failures=[], error="")
    events = AuditEvent.objects.filter(action=AuditEvent.Action.CASE_CHANGE, agent_id=agent_id).filter(
        Q(before__case__in=case_ids) | Q(after__case__in=case_ids)
    )
    for event in events.order_by("pk"):
        before, after = (_without_case_text(snapshot, wiped) for snapshot in (event.before, event.after))
        if (before, after) != (event.before, event.after):
            AuditEvent.objects.filter(pk=event.pk).update(before=before, after=after)
            result.rewritten.setdefault("library.AuditEvent", []).append(event.pk)
    return texts


def _without_case_text(snapshot: Any, wiped: dict[str, Any]) -> Any:
    if not isinstance(snapshot, dict):
        return snapshot
    return {
        key: (wiped[key] if key in wiped and value not in ("", {}, None) else value) for key, value in snapshot.items()
    }


def erasure_sweep(
    *,
    version: ProcedureVersion,
    tombstone: VersionTombstone,
    texts: list[str],
    user,
    session_ids: list[str] = (),
) -> ErasureSweep:
    """Steps 2-5 of the module docstring. Caller: `services.version_erase`, inside its transaction,
    after the version was wiped; `texts` is the erased text (version_texts of the version before
    the wipe, plus what the listeners wiped); `session_ids` the sessions it was mined from
    (`mined_from_sessions` of its evidence before the wipe)."""
    reference = tombstone.reference
    descendants = _descendants(version)
    kept = _texts_kept_elsewhere(version, descendants)
    texts = [t for t in texts if t.strip().lower() not in kept]
    sweep = ErasureSweep.objects.create(
        tombstone=tombstone, fingerprints=fingerprints(texts, shared=kept), started_at=timezone.now()
    )
    result = SweepResult()
    lowered = needles(texts)
    copied = _session_copies(version, list(session_ids), reference, result)
    if copied:
        ErasureSweep.objects.filter(pk=sweep.pk).update(fingerprints=fingerprints([*texts, *copied], shared=kept))
    _mining_entry(version, reference, result)
    if lowered:
        _rewrite_rows(lowered, reference, result)
        _flag_descendants(version, descendants, texts, reference, user, result)
        result.remaining = remaining_copies(lowered)
    ErasureSweep.objects.filter(pk=sweep.pk).update(
        rewritten={k: sorted(set(v)) for k, v in result.rewritten.items()},
        flagged_versions=result.flagged_versions,
        remaining=result.remaining,
        finished_at=timezone.now(),
    )
    sweep.refresh_from_db()
    return sweep
