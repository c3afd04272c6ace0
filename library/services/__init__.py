"""Lifecycle services: the only code that writes procedure versions and their status.

One atomic, row-locked, audited function per state change. Each one locks the rows it changes
(`select_for_update`), re-checks the current status and refuses otherwise, records who decided,
when and why, writes the audit row, and triggers side effects only on commit. Views, the API,
Celery tasks and management commands all call these; none of them writes a status itself.

Allowed status changes (the database's transition trigger refuses every other one):
    CANDIDATE → ACTIVE    version_approve   (approver with object permission, four eyes, passing eval)
    CANDIDATE → APPROVED  version_approve   (the same, when the agent has staging: released there)
    APPROVED  → ACTIVE    releases.version_promote / rollout_complete (promote permission)
    APPROVED  → RETIRED   releases.version_withdraw / superseded (served by no environment any more)
    CANDIDATE → REJECTED  version_reject    (reviewer, with a reason)
    ACTIVE    → RETIRED   version_retire    (admin, with a reason) — also done by approve/rollback
    RETIRED   → ACTIVE    version_rollback  (admin, with a reason)
    any       → ERASED    version_erase     (admin, with a ground and a reason; content and
                                             evidence wiped, a VersionTombstone kept; final)

One module per reason to change: content (a version's shape), proposing (new versions),
approval (the approval rules), transitions (approve, reject, retire, roll back), rollouts
(staging and rollouts), erasing, tools (an agent's tool list), locking (the lock order, lost
races, the conditional status write), events (audit rows and after-commit signals), errors.
Every caller imports from here.
"""

from ..models import ProcedureVersion  # read as services.ProcedureVersion
from .approval import approval_blockers, authored_since_active, passing_eval_for, selection_reach_blocker
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
from .events import _notify_active_set_changed, _notify_after_commit, _on_commit, audit, required_reason
from .locking import _decision, _lock_procedure, _lock_version, _set_status
from .proposing import procedure_propose, version_revise
from .rollouts import (
    _release_to,
    _retire_if_unreleased,
    _rollout_end,
    _rollout_end_audit,
    refuse_while_rollout_runs,
    release_for_erasure,
    running_rollout,
    stage_on_approval,
)
from .tools import agent_set_tools
from .transitions import (
    _retire_current_active,
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
    "Content",
    "DecisionConflict",
    "LifecycleError",
    "authored_since_active",
    "approval_blockers",
    "audit",
    "agent_set_tools",
    "passing_eval_for",
    "procedure_propose",
    "refuse_while_rollout_runs",
    "release_for_erasure",
    "running_rollout",
    "validate_content",
    "version_approve",
    "version_erase",
    "version_reject",
    "version_retire",
    "version_review_confirm",
    "review_by_for",
    "version_revise",
    "version_rollback",
]
