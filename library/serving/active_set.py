"""The active set an agent reads: load-time validation, the refused list, a strong ETag, selection.

Reads go through the "readonly" database alias (in production a PostgreSQL role with SELECT grants
only; see `manage.py create_readonly_role`). The only write here — recording a refusal the first
time it is seen — goes through "default", and only when the refusal is new.

Consistency: the versions of a set are read by one SQL statement inside one REPEATABLE READ, READ
ONLY transaction (on PostgreSQL), together with the agent's tool list and the refusals already
recorded. A statement sees one committed snapshot, and the database allows at most one ACTIVE
version per procedure in any committed state, so a response never shows two versions of one id,
however approvals and rollbacks interleave with it.

Speed: building the body (1,000 procedures: JSON columns parsed, rendered, serialised, hashed)
costs tens of milliseconds, so each process keeps the last body per agent, keyed by a fingerprint
of what determines it — the ACTIVE version ids and approvers, each procedure's scope (namespace,
roles, priority, confidence), the agent's namespace, the tool list, the switch and the cap — which
one narrow query reads (one aggregated row on PostgreSQL). Versions are immutable, so equal
fingerprints mean equal bytes.

Scope: an agent is served the ACTIVE versions of its procedures in the agent's namespace; an agent
instance that presents a role (`?role=`) gets those whose `roles` list is empty or names it. A
role's set is derived from the agent's built set (filtered, with its own bytes and strong ETag) and
kept with it, so it is rebuilt exactly when the agent's set is.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

import numpy as np
from django.conf import settings
from django.db import connections, transaction
from django.dispatch import receiver

from procmem_client.coding import is_coding, recall_pointer
from procmem_client.ranking import EmbeddingCache, Index, Ranker, SelectionConfig
from procmem_client.rendering import estimate_tokens, render_procedure

from .. import embeddings, environments
from ..models import ROLE_RE, Agent, LoadRefusal, Namespace, ProcedureRecord, ProcedureVersion, Status, VersionEmbedding
from ..signals import active_set_changed, version_erased
from .load_refusals import load_refusal_record, missing_tools, tools_state_hash

logger = logging.getLogger(__name__)

READONLY_ALIAS = "readonly"
API_VERSION = "v1"
MAX_CACHED_ROLES = 64  # role sets kept per built set; more distinct roles are built per request


class ServedProcedure(ProcedureRecord, total=False):
    intent: str
    # scope (governance metadata, not content; docs/api.md)
    namespace: str
    roles: list[str]
    priority: int
    confidence: str
    rendered: str
    renderedChars: int
    renderedTokens: int
    recallPointer: dict[str, Any]  # coding procedures only: the short form (procmem_client/coding.py)


class RefusedProcedure(TypedDict):
    id: str
    version: int
    intent: str
    reason: str
    message: str
    missingTools: list[str]


class ActiveSet(TypedDict, total=False):
    apiVersion: str
    agent: str
    namespace: str
    role: str
    proceduralMemoryEnabled: bool
    injectionCap: int
    tools: list[str]
    toolsHash: str
    procedures: list[ServedProcedure]
    refused: list[RefusedProcedure]
    note: str


@dataclass
class ServedSet:
    """One built active set: the JSON bytes, their strong ETag, and the selection index (built on
    first use, once per set and process)."""

    agent_id: int
    fingerprint: str
    data: ActiveSet
    body: bytes
    etag: str
    body_gzip: bytes  # the same JSON, gzip-compressed once per set (a representation with its own ETag)
    etag_gzip: str
    version_ids: list[int] = field(default_factory=list)  # primary keys, aligned with data["procedures"]
    staged: Any = None  # environments.StagedPlan read in the set's snapshot: what other environments and rollouts serve
    vectors_from: str = READONLY_ALIAS  # the connection stored embeddings are read through (an eval worker: "default")
    _index: Index | None = field(default=None, repr=False)
    _index_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # the role and version variants: never held while an index is built (that can take seconds)
    _variants_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _roles: dict[str, ServedSet] = field(default_factory=dict, repr=False)
    _v2: ServedSet | None = field(default=None, repr=False)
    skills: Any = field(
        default=None, repr=False
    )  # the set as Agent Skills, built on first use (library/serving/skills.py)

    @property
    def procedures(self) -> list[ServedProcedure]:
        return self.data["procedures"]

    def index(self, ranker: Ranker | None = None) -> Index:
        with self._index_lock:
            if self._index is None:
                ranker = ranker or _ranker()
                _load_or_store_embeddings(self, ranker)
                self._index = ranker.index(self.procedures)
            return self._index

    def for_role(self, role: str | None) -> ServedSet:
        """The set an agent instance presenting `role` receives: the procedures whose roles are
        empty or name it (the refused list as it is). Built once per role and kept with this set."""
        if not role:
            return self
        with self._variants_lock:
            cached = self._roles.get(role)
        if cached is not None:
            return cached
        kept = [(vid, p) for vid, p in zip(self.version_ids, self.procedures) if not p["roles"] or role in p["roles"]]
        data: ActiveSet = {**self.data, "role": role, "procedures": [p for _, p in kept]}
        variant = _packed(
            agent_id=self.agent_id,
            fingerprint=f"{self.fingerprint}:{role}",
            data=data,
            version_ids=[vid for vid, _ in kept],
        )
        with self._variants_lock:
            if len(self._roles) >= MAX_CACHED_ROLES:  # any token holder picks role names: bound the memory
                return variant
            return self._roles.setdefault(role, variant)

    def in_version(self, api_version: str) -> ServedSet:
        """This set as API `api_version` serves it: v1 as built; v2 with each procedure's evidence
        cut to its scalar facts (slim_evidence). Built once per set and kept with it."""
        if api_version == "v1":
            return self
        with self._variants_lock:
            if self._v2 is None:
                data: ActiveSet = {
                    **self.data,
                    "apiVersion": "v2",
                    "procedures": [slim_procedure(p) for p in self.procedures],
                }
                self._v2 = _packed(
                    agent_id=self.agent_id,
                    fingerprint=f"{self.fingerprint}:v2",
                    data=data,
                    version_ids=self.version_ids,
                    staged=self.staged,
                )
            return self._v2


def slim_evidence(evidence: dict[str, Any]) -> dict[str, Any]:
    """What API v2 serves of a version's evidence: its scalar facts (counts, rates, the mining and
    eval run ids, the one-line summary). The lists and tables behind them (session ids, redacted
    excerpts, tool and pair statistics, backtests) are for reviewers and stay on the review pages."""
    return {
        key: value for key, value in evidence.items() if value is None or isinstance(value, (str, int, float, bool))
    }


def slim_procedure(procedure: Mapping[str, Any]) -> dict[str, Any]:
    """A served procedure as API v2 serves it (the rendered text is the same: it reads only scalars)."""
    return {**procedure, "evidence": slim_evidence(procedure.get("evidence") or {})}


def valid_role(role: str) -> bool:
    """What `?role=` accepts: a role name as stored on procedures (lower-case slug, at most 64)."""
    return bool(re.fullmatch(ROLE_RE, role))


# --------------------------------------------------------------------------------------------- snapshot


class _Snapshot:
    """A read-only transaction on `using` with one consistent snapshot (REPEATABLE READ on
    PostgreSQL). Inside an enclosing transaction (tests) the enclosing one is used as it is."""

    def __init__(self, using: str) -> None:
        self.using = using
        self._atomic = transaction.atomic(using=using)

    def __enter__(self) -> _Snapshot:
        connection = connections[self.using]
        outer = connection.in_atomic_block
        self._atomic.__enter__()
        if not outer and connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return self

    def __exit__(self, *exc) -> None:
        self._atomic.__exit__(*exc)


# --------------------------------------------------------------------------------------------- building


_cache: dict[int, ServedSet] = {}
_checked_at: dict[int, float] = {}  # agent id → time.monotonic() of the last check that found the set current
_stored_embeddings: set[int] = set()  # version ids whose embedding this process knows to be stored
_cache_lock = threading.Lock()
_ranker_instance: Ranker | None = None


class EmbeddingsNotReady(RuntimeError):
    """The served set has versions embedded only with another model than the configured one: the
    library has not been re-embedded since the backend changed (`manage.py reembed_library`)."""


def _ranker() -> Ranker:
    """The server's ranker: procmem_client's, with the backend the settings name (the server-side
    part is this process's vector cache and the vectors stored per version). A new one when the
    backend changes: one cache never holds two models' vectors."""
    global _ranker_instance
    backend = embeddings.backend()
    if _ranker_instance is None or _ranker_instance.cache.model_id != backend.model_id:
        _ranker_instance = Ranker(cache=EmbeddingCache(backend=backend))
        with _cache_lock:
            _cache.clear()
            _checked_at.clear()
            _stored_embeddings.clear()
    return _ranker_instance


def clear_cache(agent_id: int | None = None) -> None:
    """Drops this process's built sets (all, or one agent's). Other processes notice a change by
    their fingerprint query; this only frees memory early."""
    with _cache_lock:
        if agent_id is None:
            _cache.clear()
            _checked_at.clear()
            _stored_embeddings.clear()
        else:
            _cache.pop(agent_id, None)
            _checked_at.pop(agent_id, None)


@receiver(version_erased)
def _forget_erased(sender, agent_id: int, **kwargs) -> None:
    forget_erased(agent_id)
    embeddings.embed_one.cache_clear()


def forget_erased(agent_id: int) -> None:
    """After an erasure: drops this process's built set of the agent (its body held the erased
    text), the vectors cached per text, and the record of which versions have stored embeddings
    (the erased version's were deleted). The next request rebuilds from the database."""
    global _ranker_instance
    clear_cache(agent_id)
    with _cache_lock:
        _stored_embeddings.clear()
        _ranker_instance = None


def _agent_part(agent: Agent) -> bytes:
    return json.dumps(
        [
            API_VERSION,
            agent.pk,
            agent.name,
            agent.namespace_id,
            agent.namespace.name,
            sorted(agent.tools),
            agent.procedural_memory_enabled,
            agent.injection_cap,
        ],
        separators=(",", ":"),
    ).encode()


def approver_secret_columns() -> list[str]:
    """The approver's columns a served version does not need (password hash, e-mail, ...): deferred,
    so the read-only role needs SELECT on the user's id and user name only."""
    user_model = ProcedureVersion._meta.get_field("approved_by").related_model
    keep = {user_model._meta.pk.name, user_model.USERNAME_FIELD}
    return [f"approved_by__{f.name}" for f in user_model._meta.concrete_fields if f.name not in keep]


def _current_state(agent_id: int, *, using: str) -> tuple[Agent, str]:
    """The agent's served settings and the fingerprint of its set: what determines the body — the
    settings, the agent's namespace, which versions of that namespace are ACTIVE, with their
    approvers' names and their procedures' scope. On PostgreSQL this is one
    statement (one snapshot) returning one row, however large the set is."""
    connection = connections[using]
    if connection.vendor == "postgresql":
        version_table = ProcedureVersion._meta.db_table
        procedure_table = ProcedureVersion._meta.get_field("procedure").related_model._meta.db_table
        namespace_table = Namespace._meta.db_table
        user_model = ProcedureVersion._meta.get_field("approved_by").related_model
        username = user_model._meta.get_field(user_model.USERNAME_FIELD).column
        with connection.cursor() as cursor:
            cursor.execute(
                f"""SELECT a.name, a.tools, a.procedural_memory_enabled, a.injection_cap, a.namespace_id, ns.name, f.n, f.folded, {environments.STAGED_COLUMN}
                      FROM {Agent._meta.db_table} a
                      JOIN {namespace_table} ns ON ns.id = a.namespace_id
                     CROSS JOIN LATERAL (
                           SELECT count(*) AS n,
                                  md5(coalesce(string_agg(
                                      v.id::text || ':' || coalesce(u.{username}, '') || ':' || p.roles::text || ':'
                                      || p.priority::text || ':' || p.confidence, ';' ORDER BY v.id), '')) AS folded
                             FROM {version_table} v
                             JOIN {procedure_table} p ON p.id = v.procedure_id
                             LEFT JOIN {user_model._meta.db_table} u ON u.id = v.approved_by_id
                            WHERE p.agent_id = a.id AND p.namespace_id = a.namespace_id AND v.status = %s
                              AND a.procedural_memory_enabled) f
                     WHERE a.id = %s""",  # STAGED_COLUMN: the releases and running rollouts (library/environments.py)
                [Status.ACTIVE, agent_id],
            )
            row = cursor.fetchone()
        if row is None:
            raise Agent.DoesNotExist(f"agent {agent_id}")
        name, tools, enabled, cap, namespace_id, namespace_name, count, folded, staged = row
        agent = Agent(
            id=agent_id,
            name=name,
            tools=json.loads(tools) if isinstance(tools, str) else tools,
            procedural_memory_enabled=enabled,
            injection_cap=cap,
            namespace=Namespace(id=namespace_id, name=namespace_name),
        )
        digest = hashlib.sha256(_agent_part(agent))
        digest.update(f"{count}:{folded}:{staged}".encode())
        return agent, digest.hexdigest()
    agent = (
        Agent.objects.using(using)
        .select_related("namespace")
        .only("id", "name", "tools", "procedural_memory_enabled", "injection_cap", "namespace__id", "namespace__name")
        .get(pk=agent_id)
    )
    digest = hashlib.sha256(_agent_part(agent))
    if agent.procedural_memory_enabled:
        rows = (
            ProcedureVersion.objects.using(using)
            .filter(procedure__agent_id=agent_id, procedure__namespace_id=agent.namespace_id, status=Status.ACTIVE)
            .order_by("id")
            .values_list(
                "id", "approved_by__username", "procedure__roles", "procedure__priority", "procedure__confidence"
            )
        )
        for version_id, approver, roles, priority, confidence in rows:
            digest.update(f"{version_id}:{approver or ''}:{json.dumps(roles)}:{priority}:{confidence};".encode())
        digest.update(environments.read_plan(agent_id, using=using).fingerprint.encode())
    return agent, digest.hexdigest()


def _dumps(data: ActiveSet) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _served(version: ProcedureVersion, *, namespace: str) -> ServedProcedure:
    """Caller selects the procedure with its intent; every procedure served is in `namespace`.
    The scope fields are not rendered: the text agents receive (and eval replays) is the content."""
    record = version.to_dict()
    rendered = render_procedure(record)
    procedure = version.procedure
    served: ServedProcedure = {  # type: ignore[typeddict-item]
        **record,
        "intent": procedure.intent.name,
        "namespace": namespace,
        "roles": list(procedure.roles),
        "priority": procedure.priority,
        "confidence": procedure.confidence,
        "rendered": rendered,
        "renderedChars": len(rendered),
        "renderedTokens": estimate_tokens(rendered),
    }
    if is_coding(record):  # v1 gains the field additively: other procedures serialise as before
        served["recallPointer"] = recall_pointer(record)
    return served


def recheck_seconds() -> float:
    return float(getattr(settings, "PROCMEM_ACTIVE_SET_RECHECK_SECONDS", 0.0))


def active_set_for_agent(*, agent: Agent, using: str = READONLY_ALIAS, recheck: float | None = None) -> ServedSet:
    """The agent's active set as served now: ACTIVE versions whose requiredTools the agent has,
    and the refused ones with the reason. Records each refusal the first time it is seen (through
    "default") and raises its alert once.

    `recheck` (default: settings.PROCMEM_ACTIVE_SET_RECHECK_SECONDS) lets a process serve its
    built set without asking the database again for that many seconds after a check found it
    current: a bounded staleness, far below the response's max-age, that this process's own
    changes never see (they clear it through `active_set_changed`)."""
    window = recheck_seconds() if recheck is None else recheck
    with _cache_lock:
        cached = _cache.get(agent.pk)
        checked_at = _checked_at.get(agent.pk)
    if cached is not None and window > 0 and checked_at is not None and time.monotonic() - checked_at < window:
        return cached

    if connections[using].vendor == "postgresql" and cached is not None:
        # One statement, no transaction: enough to know that the built set is still current.
        checked = time.monotonic()
        current, fingerprint = _current_state(agent.pk, using=using)
        if fingerprint == cached.fingerprint:
            with _cache_lock:
                _checked_at[agent.pk] = checked
            return cached

    new_refusals: list[tuple[int, list[str]]] = []
    with _Snapshot(using):
        checked = time.monotonic()
        current, fingerprint = _current_state(agent.pk, using=using)
        with _cache_lock:
            cached = _cache.get(current.pk)
        if cached is not None and cached.fingerprint == fingerprint:
            with _cache_lock:
                _checked_at[current.pk] = checked
            return cached
        served, refused_versions = _build(current, using=using, fingerprint=fingerprint)
        if refused_versions:
            known = set(
                LoadRefusal.objects.using(using)
                .filter(version_id__in=[v for v, _ in refused_versions], tools_hash=served.data["toolsHash"])
                .values_list("version_id", flat=True)
            )
            new_refusals = [(v, missing) for v, missing in refused_versions if v not in known]
    for version_id, missing in new_refusals:
        load_refusal_record(version_id=version_id, tools_hash=served.data["toolsHash"], missing_tools=missing)
    with _cache_lock:
        _cache[current.pk] = served
        _checked_at[current.pk] = checked
    return served


@receiver(active_set_changed)
def _forget_check(sender, agent_id: int, **kwargs) -> None:
    """This process changed the agent's set (approve, retire, rollback, tools): check again now."""
    with _cache_lock:
        _checked_at.pop(agent_id, None)


def _build(agent: Agent, *, using: str, fingerprint: str) -> tuple[ServedSet, list[tuple[int, list[str]]]]:
    """Caller holds the snapshot in which `fingerprint` was computed, so both see the same rows."""
    versions = []
    if agent.procedural_memory_enabled:
        versions = (
            ProcedureVersion.objects.using(using)
            .filter(procedure__agent_id=agent.pk, procedure__namespace_id=agent.namespace_id, status=Status.ACTIVE)
            .select_related("procedure", "procedure__intent", "approved_by")
            .defer(*approver_secret_columns())
            .order_by("procedure__key")
        )
    data, version_ids, refused_versions = _assemble(agent, versions)
    staged = (
        environments.read_plan(agent.pk, using=using)
        if agent.procedural_memory_enabled
        else environments.NOTHING_STAGED
    )
    return _packed(
        agent_id=agent.pk, fingerprint=fingerprint, data=data, version_ids=version_ids, staged=staged
    ), refused_versions


def _assemble(agent: Agent, versions) -> tuple[ActiveSet, list[int], list[tuple[int, list[str]]]]:
    """The set's body for these versions (ordered by procedure key): the ones whose requiredTools
    the agent has are served, the others refused with the reason. Returns (data, the served
    version ids, (refused version id, missing tools) pairs)."""
    tools = list(agent.tools)
    data: ActiveSet = {
        "apiVersion": API_VERSION,
        "agent": agent.name,
        "namespace": agent.namespace.name,
        "proceduralMemoryEnabled": agent.procedural_memory_enabled,
        "injectionCap": agent.injection_cap,
        "tools": tools,
        "toolsHash": tools_state_hash(tools),
        "procedures": [],
        "refused": [],
    }
    refused_versions: list[tuple[int, list[str]]] = []
    version_ids: list[int] = []
    if not agent.procedural_memory_enabled:
        data["note"] = "Procedural memory is switched off for this agent: no procedures are served."
        return data, version_ids, refused_versions
    for version in versions:
        missing = missing_tools(required=list(version.required_tools), available=tools)
        if missing:
            refused_versions.append((version.pk, missing))
            data["refused"].append(
                {
                    "id": version.procedure.key,
                    "version": version.number,
                    "intent": version.procedure.intent.name,
                    "reason": "missing_tools",
                    "message": f"The agent lacks the required tools: {', '.join(missing)}.",
                    "missingTools": missing,
                }
            )
        else:
            data["procedures"].append(_served(version, namespace=agent.namespace.name))
            version_ids.append(version.pk)
    return data, version_ids, refused_versions


def served_from_versions(*, agent: Agent, versions: list[ProcedureVersion], fingerprint: str) -> ServedSet:
    """The set the agent would be served if exactly `versions` were ACTIVE (the eval replays' arms,
    library/evals/payload.py): the same records, refusals, cap and bytes as the production set
    would have — built from the given rows, not from the database's ACTIVE ones. Versions outside
    the agent's namespace are not served, as in production. Procedural memory counts as switched
    on: a replay judges what the set would do when served. Caller selects procedure, its intent and
    approved_by; `fingerprint` names the set in this process (its index is built once per object)."""
    served_agent = Agent(
        id=agent.pk,
        name=agent.name,
        tools=list(agent.tools),
        procedural_memory_enabled=True,
        injection_cap=agent.injection_cap,
        namespace=agent.namespace,
        namespace_id=agent.namespace_id,
    )
    kept = sorted(
        (v for v in versions if v.procedure.namespace_id == agent.namespace_id), key=lambda v: v.procedure.key
    )
    data, version_ids, _ = _assemble(served_agent, kept)
    served = _packed(agent_id=agent.pk, fingerprint=fingerprint, data=data, version_ids=version_ids)
    served.vectors_from = "default"  # built by a worker that writes through "default" anyway
    return served


def _packed(
    *, agent_id: int, fingerprint: str, data: ActiveSet, version_ids: list[int], staged: Any = None
) -> ServedSet:
    """The set's bytes, plain and gzip, each with its strong ETag (a hash of the bytes)."""
    body = _dumps(data)
    tag = hashlib.sha256(body).hexdigest()[:40]
    return ServedSet(
        agent_id=agent_id,
        fingerprint=fingerprint,
        data=data,
        body=body,
        etag=f'"{tag}"',
        body_gzip=gzip.compress(body, compresslevel=6, mtime=0),
        etag_gzip=f'"{tag}-gzip"',
        version_ids=version_ids,
        staged=staged,
    )


# --------------------------------------------------------------------------------------------- embeddings


# one key for every process and module that stores vectors (library/embeddings.py)
model_key = embeddings.model_key


def _load_or_store_embeddings(served: ServedSet, ranker: Ranker) -> None:
    """Fills the ranker's cache for the served versions: the appliesWhen and step vectors stored
    by any process are read (read-only connection); the ones nobody has stored yet are embedded
    here — unless this process already has the text — and stored through "default", so every
    version and step is embedded once per model, not once per process."""

    cache = ranker.cache
    with_steps = ranker.config.use_steps
    with _cache_lock:
        pending = [(vid, p) for vid, p in zip(served.version_ids, served.procedures) if vid not in _stored_embeddings]
    if not pending:
        return
    key = model_key()
    stored = {
        vid: (pk, vector, steps)
        for pk, vid, vector, steps in VersionEmbedding.objects.using(served.vectors_from)
        .filter(version_id__in=[vid for vid, _ in pending], model_key=key)
        .values_list("pk", "version_id", "vector", "steps_vectors")
    }
    for vid, record in pending:
        if vid not in stored:
            continue
        _, vector, steps = stored[vid]
        if not cache.has(record["appliesWhen"]):
            cache.put(record["appliesWhen"], np.frombuffer(bytes(vector), dtype="<f4"))
        if with_steps and steps is not None and record["steps"]:
            for text, step_vector in zip(
                record["steps"], np.frombuffer(bytes(steps), dtype="<f4").reshape(len(record["steps"]), -1)
            ):
                if not cache.has(text):
                    cache.put(text, step_vector)

    def steps_blob(record) -> bytes:
        return cache.matrix(record["steps"]).astype("<f4").tobytes()

    missing = [(vid, record) for vid, record in pending if vid not in stored]
    if missing:
        others = (
            VersionEmbedding.objects.using(served.vectors_from)
            .filter(version_id__in=[vid for vid, _ in missing])
            .exclude(model_key=key)
        )
        stale = others.values("version_id").distinct().count()
        if stale:
            old = sorted(set(others.values_list("model_key", flat=True)[:5]))
            raise EmbeddingsNotReady(
                f"{stale} of the served procedure versions are embedded with another model "
                f"({', '.join(old)}) than the configured EMBEDDING_BACKEND ({key}); vectors of two models "
                "are never compared. Run `manage.py reembed_library` (resumable) to re-embed the library."
            )
        vectors = cache.matrix([record["appliesWhen"] for _, record in missing])  # embeds only texts this process lacks
        if with_steps:  # one batch for every step text this process lacks
            cache.matrix([step for _, record in missing for step in record["steps"]])
        VersionEmbedding.objects.using("default").bulk_create(
            [
                VersionEmbedding(
                    version_id=vid,
                    model_key=key,
                    dimensions=int(v.shape[0]),
                    vector=v.astype("<f4").tobytes(),
                    steps_vectors=steps_blob(record) if with_steps and record["steps"] else None,
                )
                for (vid, record), v in zip(missing, vectors)
            ],
            batch_size=1000,
            ignore_conflicts=True,  # another process stored it meanwhile: the same vectors
        )
    without_steps = [(stored[vid][0], record) for vid, record in pending if vid in stored and stored[vid][2] is None]
    if with_steps and without_steps:  # rows stored before the step signal existed
        cache.matrix([step for _, record in without_steps for step in record["steps"]])
        VersionEmbedding.objects.using("default").bulk_update(
            [
                VersionEmbedding(pk=pk, steps_vectors=steps_blob(record))
                for pk, record in without_steps
                if record["steps"]
            ],
            ["steps_vectors"],
            batch_size=1000,
        )
    with _cache_lock:
        _stored_embeddings.update(vid for vid, _ in pending)


def ranker_config() -> SelectionConfig:
    """The configuration the served sets are ranked with."""
    return _ranker().config
