"""The procedure store, one module per reason to change: agents.py (namespaces, agents, intents,
procedures, their object permissions and who reads which agent), versions.py (content, hash, status),
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
    REVIEW_PERM,
    ROLE_RE,
    Agent,
    AgentGroupObjectPermission,
    AgentQuerySet,
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
    agents_readable_under_isolation,
    agents_with_a_right,
    default_namespace_pk,
    namespaces_with_a_right,
    procedure_key_validator,
    reads_are_isolated,
    reads_every_namespace,
    slug_validator,
)
from .audit import AuditEvent
from .erasure import ErasureSweep, VersionTombstone
from .evals import EvalCaseResult, EvalRun, RegressionCase
from .releases import ENVIRONMENT_RE, PRODUCTION, STAGING, ProcedureRelease, Rollout
from .serving import ApiToken, LoadRefusal, VersionConflict, VersionEmbedding
from .sessions import AgentSession, HeldOutcome, MiningRun, OtlpFlushFailure, OtlpSpan, SessionLabel
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
