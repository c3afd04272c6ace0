"""Lifecycle services: the only code that writes procedure versions and their status.

One atomic, row-locked, audited function per state change. Each one locks the rows it changes
(`select_for_update`), re-checks the current status and refuses otherwise, records who decided,
when and why, writes the audit row, and triggers side effects only on commit. Views, the API,
Celery tasks and management commands all call these; none of them writes a status itself.

Allowed status changes (the database's transition trigger refuses every other one):
    CANDIDATE → ACTIVE    version_approve   (approver with object permission, four eyes, passing eval)
    CANDIDATE → APPROVED  version_approve   (the same, when the agent has staging: released there)
    APPROVED  → ACTIVE    version_promote / rollout_complete (promote permission)
    APPROVED  → RETIRED   version_withdraw / superseded (served by no environment any more)
    CANDIDATE → REJECTED  version_reject    (reviewer, with a reason)
    ACTIVE    → RETIRED   version_retire    (admin, with a reason) — also done by approve/rollback
    RETIRED   → ACTIVE    version_rollback  (admin, with a reason)
    any       → ERASED    version_erase     (admin, with a ground and a reason; content and
                                             evidence wiped, a VersionTombstone kept; final)

One module per reason to change: content (a version's shape), proposing (new versions),
approval (the approval rules), transitions (approve, reject, retire, roll back), rollouts
(the staging and rollout parts of those), releases (promotion between environments, withdrawal,
rollouts), scope (namespaces and a procedure's scope), erasing, tools (an agent's tool list),
locking (the lock order, lost races, the conditional status write), events (audit rows and
after-commit signals), errors.

Every caller outside this package imports from here, and only the public names below: the
helpers whose names start with `_` are the package's own (tests/library/test_services_only_writer.py
fails when a module outside it imports one, or writes a version's status itself).
"""

from ..models import ProcedureVersion  # read as services.ProcedureVersion
from .approval import (
    approval_blockers,
    authored_since_active,
    four_eyes_blockers,
    moved_since_approval,
    passing_eval_for,
    rollback_gate_blocker,
    selection_reach_blocker,
)
from .content import (
    MAX_FIELD_CHARS,
    MAX_STEPS_APPROVABLE,
    MAX_STEPS_STORED,
    MAX_VERIFY_COMMAND_CHARS,
    Content,
    validate_content,
)
from .erasing import ERASED_CONTENT, version_erase
from .errors import DecisionConflict, LifecycleError
from .events import active_set_changed_on_commit, audit, required_reason
from .proposing import procedure_propose, version_revise
from .releases import (
    latest_promotion_eval,
    production_eval_for,
    promotion_blockers,
    rollout_complete,
    rollout_rollback,
    version_promote,
    version_withdraw,
)
from .rollouts import refuse_while_rollout_runs, release_for_erasure, running_rollout, stage_on_approval
from .scope import (
    MAX_DESCRIPTION_CHARS,
    agent_namespace_set,
    clean_confidence,
    clean_priority,
    clean_roles,
    namespace_create,
    procedure_scope_update,
)
from .task_files import file_indexes_rebuild
from .tools import agent_set_tools
from .transitions import (
    change_eval_for,
    change_eval_note,
    review_by_for,
    version_approve,
    version_reject,
    version_retire,
    version_review_confirm,
    version_rollback,
)

__all__ = [
    "ERASED_CONTENT",
    "MAX_DESCRIPTION_CHARS",
    "MAX_FIELD_CHARS",
    "MAX_STEPS_APPROVABLE",
    "MAX_STEPS_STORED",
    "MAX_VERIFY_COMMAND_CHARS",
    "Content",
    "DecisionConflict",
    "LifecycleError",
    "ProcedureVersion",
    "active_set_changed_on_commit",
    "agent_namespace_set",
    "agent_set_tools",
    "approval_blockers",
    "audit",
    "authored_since_active",
    "change_eval_for",
    "change_eval_note",
    "file_indexes_rebuild",
    "four_eyes_blockers",
    "clean_confidence",
    "clean_priority",
    "clean_roles",
    "latest_promotion_eval",
    "moved_since_approval",
    "namespace_create",
    "passing_eval_for",
    "procedure_propose",
    "procedure_scope_update",
    "production_eval_for",
    "promotion_blockers",
    "refuse_while_rollout_runs",
    "release_for_erasure",
    "required_reason",
    "review_by_for",
    "rollback_gate_blocker",
    "rollout_complete",
    "rollout_rollback",
    "running_rollout",
    "selection_reach_blocker",
    "stage_on_approval",
    "validate_content",
    "version_approve",
    "version_erase",
    "version_reject",
    "version_retire",
    "version_review_confirm",
    "version_revise",
    "version_rollback",
    "version_promote",
    "version_withdraw",
]
