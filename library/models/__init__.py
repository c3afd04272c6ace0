"""The procedure store, one module per reason to change: agents.py (namespaces, agents, intents,
procedures and their object permissions), versions.py (content, hash, status),
releases.py (environments, rollouts), erasure.py (tombstones, sweeps), audit.py (the audit log),
sessions.py (sessions, labels, OTLP spans, mining runs), evals.py (cases, runs, results) and
serving.py (API tokens, refusals at load, embeddings, conflicts). Every model's app is `library`;
`from library.models import X` is the way to import them.

Invariants that matter for safety are enforced by the database (constraints in Meta, triggers in
migrations/0002_invariants.py), not only here: at most one ACTIVE version per procedure; an ACTIVE
version has an approver, an approval time and a passing eval run on its exact content; version
content never changes; the audit log is append-only. Writes go through library/services/.
"""

from .agents import (
    DEFAULT_NAMESPACE,
    MAX_ROLES,
    PRIORITY_MAX,
    PRIORITY_MIN,
    PROCEDURE_KEY_RE,
    ROLE_RE,
    Agent,
    AgentGroupObjectPermission,
    AgentToolChange,
    AgentUserObjectPermission,
    Confidence,
    Intent,
    Namespace,
    NamespaceGroupObjectPermission,
    NamespaceUserObjectPermission,
    Procedure,
    ProcedureGroupObjectPermission,
    ProcedureQuerySet,
    ProcedureUserObjectPermission,
    default_namespace_pk,
    procedure_key_validator,
    slug_validator,
)
from .audit import AuditEvent
from .erasure import ErasureSweep, VersionTombstone
from .evals import EvalCaseResult, EvalRun, RegressionCase
from .releases import ENVIRONMENT_RE, PRODUCTION, STAGING, ProcedureRelease, Rollout
from .serving import ApiToken, LoadRefusal, VersionConflict, VersionEmbedding
from .sessions import (
    AgentSession,
    CodingFileIndex,
    HeldOutcome,
    MiningRun,
    OtlpFlushFailure,
    OtlpSpan,
    SessionLabel,
)
from .versions import (
    CONTENT_FIELDS,
    CodingRecordFields,
    ProcedureRecord,
    ProcedureVersion,
    Source,
    Status,
    VersionQuerySet,
    content_hash,
    content_of,
)
