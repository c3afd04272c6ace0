"""Conflicts across an agent's active set: pairs of versions of different procedures that an agent
could receive together (ACTIVE, or about to be: a candidate with a passing eval on its content)
and whose steps contradict.

Two kinds:
- requires_forbidden: one version requires what the other forbids — a forbiddenActions line of B
  names a tool A requires ("Do not call issueRefund"), or A has a step that does what the line
  forbids once its negation is taken off ("Do not promise a refund date" ↔ "Promise a refund
  date…");
- same_situation: two procedures of the same intent whose appliesWhen sentences say the same
  situation (cosine similarity of the stored embeddings ≥ PROCMEM_CONFLICT_SIMILARITY) but whose
  required tools differ. Across intents the intent already tells the situations apart (sentence
  embeddings put "a refund larger than the limit" and "a refund within the limit" close together).

`find_conflicts` is the pure comparison; `conflicts_for_candidate` is what approving a candidate
would add (version_approve refuses unless the approver acknowledges it); `conflicts_scan` records
the open conflicts of an agent (scheduled and on demand) with a row lock on the agent and an audit
row when the open set changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import embeddings
from .models import Agent, AuditEvent, EvalRun, ProcedureVersion, Status, VersionConflict

_NEGATION = re.compile(
    r"^(?:please\s+)?(?:do not|don't|dont|never|must not|mustn't|should not|shouldn't|avoid|no)\s+", re.I
)
_WORDS = re.compile(r"[a-z0-9_']+")


@dataclass(frozen=True)
class Conflict:
    a: ProcedureVersion
    b: ProcedureVersion
    kind: str
    detail: dict
    message: str

    @property
    def pair(self) -> tuple[int, int]:
        return (min(self.a.pk, self.b.pk), max(self.a.pk, self.b.pk))


def similarity_threshold() -> float:
    return float(getattr(settings, "PROCMEM_CONFLICT_SIMILARITY", 0.8))


def _words(text: str) -> list[str]:
    return _WORDS.findall(text.lower())


def _forbidden_phrase(line: str) -> list[str] | None:
    """The action a forbiddenActions line forbids, as words ("do not promise a refund date." →
    [promise, a, refund, date]); None when the line has no negation or too little left."""
    stripped = line.strip()
    if not _NEGATION.match(stripped):
        return None
    words = _words(_NEGATION.sub("", stripped, count=1))
    return words if len(words) >= 2 else None


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


# A prohibition with a condition ("before createApproval", "outside the return window") forbids a
# use in some circumstances, not the tool: another procedure that requires the tool does not
# contradict it by that alone.
_CONDITIONAL = re.compile(
    r"\b(before|until|unless|without|outside|after|if|when|while|except|beyond|above|below|more than|less than|instead)\b",
    re.I,
)


def _tool_pattern(tool: str, *, call: str | None = None) -> re.Pattern:
    body = re.escape(call) if call is not None else re.escape(tool) + r"(?!\s*\()"
    return re.compile(rf"(?<![A-Za-z0-9_]){body}(?![A-Za-z0-9_])", re.I)


def tools_forbidden_outright(forbidden_actions: list[str], tools) -> set[str]:
    """The tools among `tools` that a forbiddenActions line forbids outright: an unconditional
    prohibition naming the tool itself ("Never call issueRefund."), not one exact call of it and
    not a use under a condition ("Do not call issueRefund before createApproval")."""
    found: set[str] = set()
    for line in forbidden_actions:
        if not _NEGATION.match(line.strip()) or _CONDITIONAL.search(line):
            continue
        found.update(t for t in tools if _tool_pattern(t).search(line))
    return found


def requires_what_other_forbids(a: ProcedureVersion, b: ProcedureVersion) -> list[dict]:
    """What A requires that B forbids outright: [{forbidden, tools | step}]. Only unconditional
    prohibitions count: a line that names a tool A requires ("Never call issueRefund."), a line
    that names one exact call A makes ("Do not call replyTemplates('refund_date')."), or a line
    whose action, negation taken off, appears word for word in one of A's steps ("Never promise a
    refund date." ↔ "Promise a refund date…")."""
    found: list[dict] = []
    for line in b.forbidden_actions:
        if not _NEGATION.match(line.strip()) or _CONDITIONAL.search(line):
            continue
        tools = [t for t in a.required_tools if _tool_pattern(t).search(line)]
        if tools:
            found.append({"forbidden": line, "tools": tools})
            continue
        calls = re.findall(r"[A-Za-z_][A-Za-z0-9_]*\([^)]*\)", line)
        step = next((s for s in a.steps for c in calls if c.split("(")[0] in a.required_tools and c in s), None)
        if step is None:
            phrase = _forbidden_phrase(line)
            if phrase:
                step = next((s for s in a.steps if _contains(_words(s), phrase)), None)
        if step is not None:
            found.append({"forbidden": line, "step": step})
    return found


def _label(v: ProcedureVersion) -> str:
    return f"{v.procedure.key} v{v.number}"


def _same_situation_candidate(a: ProcedureVersion, b: ProcedureVersion) -> bool:
    return a.procedure.intent_id == b.procedure.intent_id and set(a.required_tools) != set(b.required_tools)


def find_conflicts(versions: list[ProcedureVersion], *, pairs=None, vectors: dict | None = None) -> list[Conflict]:
    """Conflicts among `versions` (or only the given pairs of them). Versions of one procedure are
    never compared (they are never served together). `vectors` maps version id → unit vector;
    missing ones are read or embedded (library.embeddings.version_vectors) when a pair needs one."""

    if pairs is None:
        pairs = [(a, b) for a, b in combinations(versions, 2)]
    pairs = [(a, b) for a, b in pairs if a.procedure_id != b.procedure_id and not a.is_erased and not b.is_erased]
    threshold = similarity_threshold()
    need_vectors = [p for p in pairs if _same_situation_candidate(*p)]
    if need_vectors and vectors is None:
        vectors = embeddings.version_vectors({v.pk: v for p in need_vectors for v in p}.values())
    conflicts: list[Conflict] = []
    for a, b in pairs:
        for first, second in ((a, b), (b, a)):
            found = requires_what_other_forbids(first, second)
            if found:
                what = found[0].get("tools") or [found[0].get("step")]
                conflicts.append(
                    Conflict(
                        first,
                        second,
                        VersionConflict.Kind.REQUIRES_FORBIDDEN,
                        {"requires": _label(first), "forbids": _label(second), "items": found},
                        f"{_label(first)} requires {', '.join(what)}; {_label(second)} forbids it: “{found[0]['forbidden']}”.",
                    )
                )
        if _same_situation_candidate(a, b) and vectors and a.pk in vectors and b.pk in vectors:
            similarity = embeddings.cosine(vectors[a.pk], vectors[b.pk])
            if similarity >= threshold:
                conflicts.append(
                    Conflict(
                        a,
                        b,
                        VersionConflict.Kind.SAME_SITUATION,
                        {
                            "similarity": round(similarity, 4),
                            "threshold": threshold,
                            "toolsA": list(a.required_tools),
                            "toolsB": list(b.required_tools),
                        },
                        f"{_label(a)} and {_label(b)} apply to the same situation (similarity {similarity:.2f} ≥ {threshold}) "
                        f"but require different tools: {', '.join(a.required_tools) or '—'} vs {', '.join(b.required_tools) or '—'}.",
                    )
                )
    return conflicts


def _servable(agent: Agent) -> list[ProcedureVersion]:
    """ACTIVE versions and the candidates about to be ACTIVE (a passing eval on their content)."""
    passing = EvalRun.objects.filter(state=EvalRun.State.DONE, verdict=EvalRun.Verdict.PASS)
    versions = ProcedureVersion.objects.filter(procedure__agent=agent).select_related("procedure")
    active = list(versions.filter(status=Status.ACTIVE))
    candidates = [
        v
        for v in versions.filter(status=Status.CANDIDATE, pk__in=passing.values("version_id"))
        if passing.filter(version_id=v.pk, content_hash=v.content_hash).exists()
    ]
    return active + candidates


class VectorsMissing(Exception):
    """Raised under a lock instead of embedding there: the vectors computed before the lock miss
    some that the check needs now (the active set changed in between). The caller releases the
    lock, computes them (`vectors_for_candidate`) and decides again."""

    def __init__(self, versions: list[ProcedureVersion]):
        self.versions = versions
        super().__init__(f"vectors missing for versions {sorted(v.pk for v in versions)}")


def _candidate_pairs(version: ProcedureVersion) -> list[tuple[ProcedureVersion, ProcedureVersion]]:
    others = (
        ProcedureVersion.objects.filter(procedure__agent_id=version.procedure.agent_id, status=Status.ACTIVE)
        .exclude(procedure_id=version.procedure_id)
        .select_related("procedure")
    )
    return [(version, other) for other in others]


def _needing_vectors(pairs) -> dict[int, ProcedureVersion]:
    return {
        v.pk: v
        for a, b in pairs
        if a.procedure_id != b.procedure_id and not a.is_erased and not b.is_erased and _same_situation_candidate(a, b)
        for v in (a, b)
        if v.applies_when
    }


def vectors_for_candidate(version: ProcedureVersion) -> dict:
    """The appliesWhen vectors `conflicts_for_candidate(version)` needs against the current ACTIVE
    set, stored or embedded now. Call it before taking any lock: embedding may load the model and
    takes far longer than a decision should hold a row lock."""

    needed = _needing_vectors(_candidate_pairs(version))
    return embeddings.version_vectors(needed.values()) if needed else {}


def conflicts_for_candidate(version: ProcedureVersion, *, vectors: dict | None = None) -> list[Conflict]:
    """The conflicts approving `version` would create with the ACTIVE versions of the agent's other
    procedures (its own procedure's ACTIVE version is replaced, so it does not count). `vectors`:
    computed beforehand (`vectors_for_candidate`), for a caller holding a lock; then nothing is
    embedded here, and VectorsMissing is raised when the active set now needs one it lacks.
    Without `vectors` (a page, no lock) the missing ones are embedded here."""
    pairs = _candidate_pairs(version)
    if vectors is not None:
        missing = [v for pk, v in _needing_vectors(pairs).items() if pk not in vectors]
        if missing:
            raise VectorsMissing(missing)
    return find_conflicts([version, *(b for _, b in pairs)], pairs=pairs, vectors=vectors)


def conflicts_scan(*, agent: Agent, user=None, actor_label: str = "conflict scan") -> dict[str, int]:
    """Records the agent's open conflicts: new ones are opened, ones still found get last_seen_at,
    ones gone are cleared. The agent row is locked so two scans do not interleave; an audit row is
    written when the open set changed. Returns counts (open, opened, cleared)."""
    versions = _servable(agent)
    found = find_conflicts(versions)  # embeddings outside the transaction: it may load the model
    now = timezone.now()
    with transaction.atomic():
        Agent.objects.select_for_update().filter(pk=agent.pk).first()
        open_rows = {
            (c.version_a_id, c.version_b_id, c.kind): c
            for c in VersionConflict.objects.select_for_update().filter(agent=agent, cleared_at__isnull=True)
        }
        seen: set[tuple[int, int, str]] = set()
        opened = 0
        for conflict in found:
            a_id, b_id = conflict.pair
            key = (a_id, b_id, conflict.kind)
            if key in seen:
                continue
            seen.add(key)
            if key in open_rows:
                VersionConflict.objects.filter(pk=open_rows[key].pk).update(last_seen_at=now)
            else:
                VersionConflict.objects.create(
                    agent=agent,
                    version_a_id=a_id,
                    version_b_id=b_id,
                    kind=conflict.kind,
                    detail=conflict.detail,
                    message=conflict.message,
                    last_seen_at=now,
                )
                opened += 1
        gone = [row.pk for key, row in open_rows.items() if key not in seen]
        VersionConflict.objects.filter(pk__in=gone).update(cleared_at=now)
        counts = {"open": len(seen), "opened": opened, "cleared": len(gone)}
        if opened or gone:
            # the audit row written directly (library.services imports this module for approvals)
            AuditEvent.objects.create(
                action=AuditEvent.Action.CONFLICT_SCAN,
                actor=user if user is not None and user.is_authenticated else None,
                actor_label="" if user is not None else actor_label,
                agent=agent,
                after=counts,
            )
    return counts
