"""Eval runs: the services that start, execute, judge, cancel and recover them. The Celery tasks in
library/evals/tasks.py are thin wrappers around these; this module queues them by name
(`DISPATCH_TASK`, `CHUNK_TASK`) and never imports its task module.

How a run goes:
1. `eval_run_start` (a reviewer; `eval_run_start_promotion` and `eval_run_start_change` for the
   other kinds): pins the version's content hash, the environment the run targets and that
   environment's served set (`environment`, `baseline_hash`, `baseline_versions`), stores the
   thresholds, and creates one PENDING result row per active regression case and arm (baseline,
   candidate). On commit it queues the dispatch task.

   The target environment is the one the decision the run gates changes
   (environments.eval_target_environment): an approval eval replays against the set of the
   environment approving releases the candidate to — staging when the agent has it, else
   production; a promotion eval (an APPROVED version on its way to production) and retirement and
   rollback evals against production's. The baseline is that
   environment's set as served (selectors.environment_versions_for_agent: per procedure the version
   released there, else the ACTIVE one); the other arm is that set with the change applied
   (library/evals/payload.py).
2. The dispatch task claims the run (QUEUED → RUNNING, a conditional UPDATE) and fans the cases out
   as chunk tasks, so that several workers share one run.
3. A chunk task claims each (case, arm) row with a conditional UPDATE (PENDING → RUNNING, with its
   task id and a one-off nonce), runs it outside any transaction, and finishes it only if it still
   holds the nonce. A redelivered chunk skips finished rows and re-claims the rows its own earlier
   delivery left RUNNING (the worker died); rows another live task holds are left alone. A row lost
   with its worker more than PROCMEM_EVAL_MAX_ATTEMPTS times is finished as an error.
4. After each case the progress (`cases_done`: cases with both arms finished; `errors`) and the
   heartbeat are updated; after each chunk `eval_run_finalize` judges the run — but only when every
   row of every case has finished. The verdict, its detail and the state are written in one
   transaction under the run's row lock, and `eval_run_finished` is sent on commit.
5. `eval_runs_recover` (beat, every minute) finds RUNNING/QUEUED runs without progress for
   PROCMEM_EVAL_STALE_SECONDS, releases their stale rows and queues them again — or, after
   PROCMEM_EVAL_MAX_RESUMES resumes, fails the run with the reason. A run is never half-judged.

Runner errors (timeouts, malformed answers, a crashing callable) finish a row with `passed=None`
and the error text: they count as errors, not as failed cases.

`EvalRun.verdict_detail` (for the eval panel) is the output of library.evals.verdict.judge:

    {"verdict": "pass" | "fail" | "inconclusive",
     "kind": "approval" | "promotion" | "retire" | "rollback",
     "environment": "production" | "staging" | ...,  # whose served set the baseline was
     "reasons": [str, ...],                       # why, in sentences
     "target_intent": "refund_over_limit",
     "test": "McNemar's exact test (...)",
     "thresholds": {"alpha", "regression_alpha", "max_pass_rate_drop", "min_cases", "max_error_rate"},
     "totals": {"cases", "paired", "errors", "baseline_passed", "candidate_passed", "improved", "regressed"},
     "intents": [                                 # the target intent first, then the others by name
        {"intent", "target": bool, "cases", "paired", "errors", "baseline_passed", "candidate_passed",
         "both_passed", "both_failed", "improved", "regressed", "p_improve", "p_regress", "p_two_sided",
         "baseline_rate", "candidate_rate",     # 0..1 or None without paired cases
         "status": "improved" | "regressed" | "unchanged" | "not_improved" | "too_few",
         "notes": [str, ...]}, ...]}

A run that failed or was cancelled has no verdict and says why in `failure_reason`.
"""

from __future__ import annotations

import logging
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from celery import signature
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.db.models import Count, F, Q
from django.db.models.functions import Least
from django.utils import timezone

from ..environments import eval_target_environment
from ..models import AuditEvent, EvalCaseResult, EvalRun, ProcedureVersion, RegressionCase, Status
from ..permissions import user_can_manage_procedure, user_can_promote, user_can_review
from ..selectors import environment_set_hash, environment_versions_for_agent
from ..services import LifecycleError, audit
from ..signals import eval_run_finished
from .checks import check_case
from .errors import RunnerError
from .payload import BASELINE, CANDIDATE, ArmSets, arm_sets, selection_summary
from .runners import Runner, runner_for_agent
from .verdict import PairedOutcome, Thresholds, judge

logger = logging.getLogger(__name__)

ARMS = (BASELINE, CANDIDATE)
UNFINISHED = (EvalRun.State.QUEUED, EvalRun.State.RUNNING)

# The Celery tasks of library/evals/tasks.py. Their names are older than the move of eval runs into
# the library; the beat schedule and messages already on the queue carry them, so they stay.
DISPATCH_TASK = "reviews.eval_run_dispatch"
CHUNK_TASK = "reviews.eval_run_chunk"
RECOVER_TASK = "reviews.eval_runs_recover"


def eval_thresholds() -> Thresholds:
    return Thresholds(
        alpha=settings.PROCMEM_EVAL_ALPHA,
        regression_alpha=settings.PROCMEM_EVAL_REGRESSION_ALPHA,
        max_pass_rate_drop=settings.PROCMEM_EVAL_MAX_PASS_RATE_DROP,
        min_cases=settings.PROCMEM_EVAL_MIN_CASES,
        max_error_rate=settings.PROCMEM_EVAL_MAX_ERROR_RATE,
        min_injected_share=settings.PROCMEM_EVAL_MIN_INJECTED_SHARE,
    )


def _send_finished(run_id: int) -> None:
    transaction.on_commit(lambda: eval_run_finished.send(sender=EvalRun, run_id=run_id), robust=True)


# --------------------------------------------------------------------------------------------- start / cancel


def eval_run_start(*, version: ProcedureVersion, user) -> EvalRun:
    """Starts an eval run of a CANDIDATE version (a reviewer). Returns the run already queued or
    running for the same content instead of starting a second one."""
    if not user_can_review(user, version.procedure):
        raise PermissionDenied("Only reviewers may start eval runs.")
    with transaction.atomic():
        locked = _lock_for_run(version)
        if locked.status != Status.CANDIDATE:
            raise LifecycleError(f"Only candidates are evaluated; {locked} is {locked.get_status_display().lower()}.")
        return _start(locked=locked, user=user, kind=EvalRun.Kind.APPROVAL)


def eval_run_start_promotion(*, version: ProcedureVersion, user) -> EvalRun:
    """Starts the eval of promoting the APPROVED `version` to production (kind PROMOTION):
    production's set as served, and that set with the version in place of the procedure's ACTIVE
    one. Promoting to production, outright or as a rollout, needs it to pass on the current
    production set (services.promotion_blockers; the database checks the pass). Promoters and
    reviewers of the procedure. Returns the run already queued or running for the same content."""
    if not (user_can_promote(user, version.procedure) or user_can_review(user, version.procedure)):
        raise PermissionDenied(f"Only promoters and reviewers of {version.procedure.key} may evaluate promoting it.")
    with transaction.atomic():
        locked = _lock_for_run(version)
        if locked.status != Status.APPROVED:
            raise LifecycleError(
                f"Only an approved version waiting for production gets a promotion eval; {locked} is {locked.get_status_display().lower()}."
            )
        return _start(locked=locked, user=user, kind=EvalRun.Kind.PROMOTION)


def eval_run_start_change(
    *, version: ProcedureVersion, user, kind: str, replacement: ProcedureVersion | None = None
) -> EvalRun:
    """Starts the eval of retiring the ACTIVE `version` (kind RETIRE: the set without it) or of rolling
    it back to the RETIRED `replacement` of the same procedure (kind ROLLBACK) — "retiring is the
    same operation in reverse". Admins of the procedure only. Returns the run already queued or
    running for the same change. The verdict asks only that no intent gets worse."""
    if kind not in (EvalRun.Kind.RETIRE, EvalRun.Kind.ROLLBACK):
        raise ValueError(f"not a change eval: {kind!r}")
    if not user_can_manage_procedure(user, version.procedure):
        raise PermissionDenied(f"Only admins of {version.procedure.key} may evaluate retiring or rolling back.")
    with transaction.atomic():
        locked = _lock_for_run(version)
        if locked.status != Status.ACTIVE:
            raise LifecycleError(f"Only the active version can be retired or rolled back; {locked} is {locked.status}.")
        if kind == EvalRun.Kind.ROLLBACK:
            if (
                replacement is None
                or replacement.procedure_id != locked.procedure_id
                or replacement.status != Status.RETIRED
            ):
                raise LifecycleError("A rollback eval needs a retired version of the same procedure to roll back to.")
        else:
            replacement = None
        return _start(locked=locked, user=user, kind=kind, replacement=replacement)


def _lock_for_run(version: ProcedureVersion) -> ProcedureVersion:
    locked = (
        ProcedureVersion.objects.select_for_update(of=("self",))
        .select_related("procedure__agent", "procedure__intent")
        .get(pk=version.pk)
    )
    if locked.content_hash != locked.compute_content_hash():
        raise LifecycleError("The stored content hash does not match the content.")
    return locked


def _start(*, locked: ProcedureVersion, user, kind: str, replacement: ProcedureVersion | None = None) -> EvalRun:
    """Caller holds the version's row lock in a transaction."""
    environment = eval_target_environment(locked, kind)
    existing = (
        EvalRun.objects.filter(
            version=locked,
            content_hash=locked.content_hash,
            kind=kind,
            replacement=replacement,
            environment=environment,
            state__in=UNFINISHED,
        )
        .order_by("-created_at")
        .first()
    )
    if existing is not None:
        return existing
    agent = locked.procedure.agent
    baseline = environment_versions_for_agent(agent, environment)
    case_ids = list(
        RegressionCase.objects.filter(agent=agent, is_active=True)
        .order_by("intent_id", "pk")
        .values_list("pk", flat=True)
    )
    thresholds = eval_thresholds()
    run = EvalRun.objects.create(
        version=locked,
        kind=kind,
        replacement=replacement,
        content_hash=locked.content_hash,
        environment=environment,
        baseline_hash=environment_set_hash(agent, environment),
        baseline_versions=[
            {
                "id": v.pk,
                "key": v.procedure.key,
                "version": v.number,
                "contentHash": v.content_hash,
                **({"releasedTo": environment} if v.status == Status.APPROVED else {}),
            }
            for v in baseline
        ],
        state=EvalRun.State.QUEUED,
        thresholds=thresholds.to_dict(),
        cases_total=len(case_ids),
        runner=agent.eval_runner,
        started_by=user,
    )
    EvalCaseResult.objects.bulk_create(
        [EvalCaseResult(run=run, case_id=case_id, arm=arm) for case_id in case_ids for arm in ARMS], batch_size=1000
    )
    audit(
        action=AuditEvent.Action.EVAL_START,
        actor=user,
        version=locked,
        after={
            "run": run.pk,
            "kind": kind,
            "environment": environment,
            "contentHash": run.content_hash,
            "baselineHash": run.baseline_hash,
            "cases": len(case_ids),
            "runner": run.runner,
            **({"replacement": replacement.number} if replacement else {}),
        },
    )
    run_id = run.pk
    transaction.on_commit(lambda: _queue_dispatch(run_id), robust=True)
    return run


def _queue_dispatch(run_id: int) -> None:
    signature(DISPATCH_TASK, args=(run_id,)).apply_async()


def eval_run_cancel(*, run: EvalRun, user) -> EvalRun:
    """Cancels a queued or running run (a reviewer). Chunk tasks stop at their next case."""
    if not user_can_review(user, run.version.procedure):
        raise PermissionDenied("Only reviewers may cancel eval runs.")
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().select_related("version__procedure__agent").get(pk=run.pk)
        if locked.state not in UNFINISHED:
            raise LifecycleError(f"Eval run {locked.pk} is already {locked.get_state_display().lower()}.")
        now = timezone.now()
        before = {"state": locked.state}
        locked.state = EvalRun.State.CANCELLED
        locked.failure_reason = f"Cancelled by {user.get_username()}"
        locked.finished_at = now
        locked.save(update_fields=["state", "failure_reason", "finished_at"])
        audit(
            action=AuditEvent.Action.EVAL_CANCEL,
            actor=user,
            version=locked.version,
            before=before,
            after={"run": locked.pk, "state": locked.state},
        )
        _send_finished(locked.pk)
    return locked


def eval_run_fail(*, run_id: int, reason: str) -> bool:
    """Marks an unfinished run FAILED with the reason (no verdict). False when it had finished."""
    with transaction.atomic():
        locked = (
            EvalRun.objects.select_for_update().select_related("version__procedure__agent").filter(pk=run_id).first()
        )
        if locked is None or locked.state not in UNFINISHED:
            return False
        locked.state = EvalRun.State.FAILED
        locked.failure_reason = reason[:2000]
        locked.finished_at = timezone.now()
        locked.save(update_fields=["state", "failure_reason", "finished_at"])
        audit(
            action=AuditEvent.Action.EVAL_FINISH,
            actor_label="eval worker",
            version=locked.version,
            reason=locked.failure_reason,
            after={"run": locked.pk, "state": locked.state},
        )
        _send_finished(locked.pk)
    return True


# --------------------------------------------------------------------------------------------- dispatch / chunks


def eval_run_dispatch(*, run_id: int) -> int:
    """QUEUED → RUNNING, then one chunk task per PROCMEM_EVAL_CHUNK_SIZE pending cases; returns how
    many chunks it queued. A run without cases is judged at once; a redelivered dispatch (the run
    is no longer QUEUED) queues nothing."""
    chunks = eval_run_begin(run_id=run_id)
    if not chunks:
        eval_run_finalize(run_id=run_id)
        return 0
    queue_chunks(run_id=run_id, chunks=chunks)
    return len(chunks)


def queue_chunks(*, run_id: int, chunks: list[list[int]]) -> None:
    for case_ids in chunks:
        soft, hard = chunk_time_limits(run_id=run_id, cases=len(case_ids))
        signature(CHUNK_TASK, kwargs={"run_id": run_id, "case_ids": case_ids}).apply_async(
            soft_time_limit=soft, time_limit=hard
        )


def eval_run_begin(*, run_id: int) -> list[list[int]]:
    """Claims a QUEUED run (→ RUNNING) and returns its case ids in chunks. A redelivered dispatch
    (the run is no longer QUEUED) gets nothing to do."""
    now = timezone.now()
    if (
        EvalRun.objects.filter(pk=run_id, state=EvalRun.State.QUEUED).update(
            state=EvalRun.State.RUNNING, started_at=now, heartbeat_at=now
        )
        != 1
    ):
        return []
    return pending_chunks(run_id=run_id)


def pending_chunks(*, run_id: int) -> list[list[int]]:
    case_ids = list(
        EvalCaseResult.objects.filter(run_id=run_id, state=EvalCaseResult.State.PENDING)
        .order_by("case_id")
        .values_list("case_id", flat=True)
        .distinct()
    )
    size = settings.PROCMEM_EVAL_CHUNK_SIZE
    return [case_ids[i : i + size] for i in range(0, len(case_ids), size)]


def arm_budget_seconds(agent) -> float:
    """The longest one case-arm may take: the agent's timeout on every attempt of every model step,
    plus the backoff between attempts."""
    attempts = settings.PROCMEM_EVAL_HTTP_RETRIES + 1
    backoff = settings.PROCMEM_EVAL_HTTP_BACKOFF_SECONDS * (2**attempts)
    steps = settings.PROCMEM_EVAL_MODEL_MAX_STEPS if agent.eval_runner == "model" else 1
    return agent.eval_timeout_seconds * attempts * steps + backoff + 5


def stale_after_seconds(agent) -> float:
    """No progress for this long means the run's workers are gone: never less than one case's
    budget (the heartbeat comes after both arms), so that a slow but live case keeps its task."""
    return max(settings.PROCMEM_EVAL_STALE_SECONDS, len(ARMS) * arm_budget_seconds(agent))


def chunk_time_limits(*, run_id: int, cases: int) -> tuple[int, int]:
    """(soft, hard) seconds for a chunk: every case-arm may use its whole budget."""
    run = EvalRun.objects.select_related("version__procedure__agent").get(pk=run_id)
    soft = int(cases * len(ARMS) * arm_budget_seconds(run.version.procedure.agent) + 30)
    return soft, soft + 30


@dataclass
class _Replay:
    run: EvalRun
    sets: ArmSets
    runner: Runner | None
    runner_problem: str

    def execute(self, case: RegressionCase, arm: str) -> dict[str, Any]:
        started = time.perf_counter()
        outcome: dict[str, Any] = {"passed": None, "error": "", "failures": [], "tool_calls": [], "reply": ""}
        try:
            case_data, instruction, procedures, selected = self.sets.request(arm, case)
            outcome.update(injected=selected.injected, rendered_hash=selected.rendered_hash)
            if self.runner is None:
                raise RunnerError(self.runner_problem)
            output = self.runner.run(case=case_data, instruction=instruction, procedures=procedures)
        except RunnerError as exc:
            outcome["error"] = str(exc)[:2000]
        except SoftTimeLimitExceeded:
            raise  # the chunk's time is up: the task fails and on_failure fails the run with the reason
        except Exception as exc:  # a bug in a runner is an error of this case, not a failed case
            logger.exception("runner crashed on case %s", case.pk)
            outcome["error"] = f"{type(exc).__name__}: {exc}"[:2000]
        else:
            failures = check_case(
                expected_tools=case.expected_tools,
                forbidden_tools=case.forbidden_tools,
                reply_must_match=case.reply_must_match,
                reply_must_not_match=case.reply_must_not_match,
                tool_calls=output.tool_calls,
                reply=output.reply,
            )
            if output.stopped == "step_limit":
                failures.append(f"stopped at the step limit ({settings.PROCMEM_EVAL_MODEL_MAX_STEPS}) without a reply")
            outcome.update(passed=not failures, failures=failures, tool_calls=output.tool_calls, reply=output.reply)
        outcome["duration_ms"] = (time.perf_counter() - started) * 1000
        return outcome


def _replay_for(run: EvalRun) -> _Replay:
    agent = run.version.procedure.agent
    sets = arm_sets(run=run)
    try:
        return _Replay(run=run, sets=sets, runner=runner_for_agent(agent), runner_problem="")
    except RunnerError as exc:
        return _Replay(run=run, sets=sets, runner=None, runner_problem=str(exc))


def _claim(row: EvalCaseResult, token: str) -> str | None:
    """Claims a row for this task delivery; returns the claim's nonce, or None when the row is
    finished or held by another live task."""
    nonce = uuid.uuid4().hex
    now = timezone.now()
    claim = dict(
        state=EvalCaseResult.State.RUNNING,
        claimed_by=token,
        claim_nonce=nonce,
        claimed_at=now,
        attempts=F("attempts") + 1,
    )
    if row.state == EvalCaseResult.State.PENDING:
        won = EvalCaseResult.objects.filter(pk=row.pk, state=EvalCaseResult.State.PENDING).update(**claim)
    elif row.state == EvalCaseResult.State.RUNNING and row.claimed_by == token:
        # An earlier delivery of this very task claimed it and died (worker lost): take it over.
        won = EvalCaseResult.objects.filter(
            pk=row.pk, state=EvalCaseResult.State.RUNNING, claimed_by=token, claim_nonce=row.claim_nonce
        ).update(**claim)
    else:
        return None
    if won != 1:
        return None
    if row.attempts + 1 > settings.PROCMEM_EVAL_MAX_ATTEMPTS:
        _finish(
            row.pk,
            nonce,
            {
                "passed": None,
                "failures": [],
                "tool_calls": [],
                "reply": "",
                "duration_ms": 0,
                "error": f"the worker was lost {row.attempts} times while running this case; counted as an error",
            },
        )
        return None
    return nonce


def _finish(row_pk: int, nonce: str, outcome: dict[str, Any]) -> bool:
    return (
        EvalCaseResult.objects.filter(pk=row_pk, state=EvalCaseResult.State.RUNNING, claim_nonce=nonce).update(
            state=EvalCaseResult.State.DONE, finished_at=timezone.now(), **outcome
        )
        == 1
    )


def _count_progress(run_id: int, *, cases_done: int, errors: int) -> None:
    """Adds what this task finished to the run's counters and beats its heart. The counters only
    ever grow, are capped, and are set exactly by the finaliser; each row's finish (a conditional
    UPDATE that succeeds once) is counted by the task that made it."""
    EvalRun.objects.filter(pk=run_id, state=EvalRun.State.RUNNING).update(
        cases_done=Least(F("cases_done") + cases_done, F("cases_total")),
        errors=F("errors") + errors,
        heartbeat_at=timezone.now(),
    )


@contextmanager
def _fast_commits():
    """Case-arm claims and results are committed without waiting for the WAL flush (PostgreSQL's
    synchronous_commit off, for this connection, for the chunk): a database crash may lose the
    last fraction of a second of them, which leaves rows claimed or pending — exactly what the
    recovery task re-runs. The verdict itself is written with durable commits (see below)."""
    if connection.vendor != "postgresql":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit TO OFF")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET synchronous_commit")


def eval_chunk_run(*, run_id: int, case_ids: list[int], claim_token: str) -> int:
    """Runs both arms of the given cases of a RUNNING run; returns how many case-arms this call
    ran. Safe to call again with the same arguments (a redelivered task): finished rows are skipped."""
    with _fast_commits():
        ran = _run_cases(run_id=run_id, case_ids=case_ids, claim_token=claim_token)
    if not EvalCaseResult.objects.filter(run_id=run_id).exclude(state=EvalCaseResult.State.DONE).exists():
        eval_run_finalize(run_id=run_id)
    return ran


def _run_cases(*, run_id: int, case_ids: list[int], claim_token: str) -> int:
    run = (
        EvalRun.objects.select_related("version__procedure__agent", "version__procedure__intent")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.state != EvalRun.State.RUNNING:
        return 0
    rows = list(
        EvalCaseResult.objects.filter(run_id=run_id, case_id__in=case_ids)
        .exclude(state=EvalCaseResult.State.DONE)
        .select_related("case__intent")
        .order_by("case_id", "arm")
    )
    replay = _replay_for(run) if rows else None
    if replay is not None:
        replay.sets.prepare([row.case.task for row in rows])
    ran = 0
    by_case: dict[int, list[EvalCaseResult]] = {}
    for row in rows:
        by_case.setdefault(row.case_id, []).append(row)
    for case_id, case_rows in by_case.items():
        if not EvalRun.objects.filter(pk=run_id, state=EvalRun.State.RUNNING).exists():
            return ran  # cancelled or failed meanwhile
        finished = errors = 0
        for row in case_rows:
            nonce = _claim(row, claim_token)
            if nonce is None:
                continue
            outcome = replay.execute(row.case, row.arm)
            if _finish(row.pk, nonce, outcome):
                finished += 1
                errors += outcome["passed"] is None
        if not finished:
            continue
        ran += finished
        # the case is done when both arms are: both here, or the other one finished earlier
        complete = finished == len(ARMS) or (
            EvalCaseResult.objects.filter(run_id=run_id, case_id=case_id, state=EvalCaseResult.State.DONE).count()
            == len(ARMS)
        )
        _count_progress(run_id, cases_done=int(complete), errors=errors)
    return ran


# --------------------------------------------------------------------------------------------- verdict


def eval_run_finalize(*, run_id: int) -> EvalRun | None:
    """Judges a RUNNING run whose every case has both arms finished, in one transaction; returns
    the run, or None when it is not complete (or no longer running)."""
    with transaction.atomic():
        run = (
            EvalRun.objects.select_for_update(of=("self",))
            .select_related("version__procedure__intent", "version__procedure__agent")
            .filter(pk=run_id)
            .first()
        )
        if run is None or run.state != EvalRun.State.RUNNING:
            return None
        counts = EvalCaseResult.objects.filter(run_id=run_id).aggregate(
            total=Count("id"), done=Count("id", filter=Q(state=EvalCaseResult.State.DONE))
        )
        if counts["total"] != run.cases_total * len(ARMS) or counts["done"] != counts["total"]:
            return None
        rows = list(
            EvalCaseResult.objects.filter(run_id=run_id).values(
                "case_id", "case__name", "case__intent__name", "arm", "passed", "injected"
            )
        )
        pairs: dict[int, dict[str, Any]] = {}
        for row in rows:
            pairs.setdefault(row["case_id"], {"intent": row["case__intent__name"]})[row["arm"]] = row["passed"]
        outcomes = [
            PairedOutcome(case_id=case_id, intent=p["intent"], baseline=p.get(BASELINE), candidate=p.get(CANDIDATE))
            for case_id, p in sorted(pairs.items())
        ]
        detail = judge(
            outcomes,
            target_intent=run.version.procedure.intent.name,
            thresholds=Thresholds.from_dict(run.thresholds),
            require_improvement=run.kind in (EvalRun.Kind.APPROVAL, EvalRun.Kind.PROMOTION),
        )
        detail["kind"] = run.kind
        detail["environment"] = run.environment
        detail["selection"] = selection_summary(
            [
                {
                    "case_id": r["case_id"],
                    "case": r["case__name"],
                    "intent": r["case__intent__name"],
                    "arm": r["arm"],
                    "injected": r["injected"],
                }
                for r in rows
            ],
            run=run,
        )
        for entry in detail["intents"]:  # the other intents' results show what the change pushed out of the cap
            entry["displaced"] = sum(1 for d in detail["selection"]["displaced"] if d["intent"] == entry["intent"])
        now = timezone.now()
        run.state = EvalRun.State.DONE
        run.verdict = detail["verdict"]
        run.verdict_detail = detail
        run.cases_done = run.cases_total
        run.errors = sum(1 for p in pairs.values() for arm in ARMS if p.get(arm) is None)
        run.finished_at = now
        run.heartbeat_at = now
        run.save(
            update_fields=["state", "verdict", "verdict_detail", "cases_done", "errors", "finished_at", "heartbeat_at"]
        )
        audit(
            action=AuditEvent.Action.EVAL_FINISH,
            actor_label="eval worker",
            version=run.version,
            reason="; ".join(detail["reasons"])[:2000],
            after={"run": run.pk, "state": run.state, "verdict": run.verdict, "totals": detail["totals"]},
        )
        _send_finished(run.pk)
    return run


# --------------------------------------------------------------------------------------------- recovery


def eval_run_resume(*, run: EvalRun, user=None, reason: str = "") -> EvalRun:
    """Resumes a run whose work stalled (its workers died): rows left RUNNING for longer than the
    stale limit go back to PENDING and every pending case is queued again. A run that already
    stalled PROCMEM_EVAL_MAX_RESUMES times fails instead, with the reason. `user` None is the
    recovery task; a reviewer may resume only a run that made no progress for the stale limit."""
    if user is not None and not user_can_review(user, run.version.procedure):
        raise PermissionDenied("Only reviewers may resume eval runs.")
    if eval_run_finalize(run_id=run.pk) is not None:
        return EvalRun.objects.get(pk=run.pk)
    give_up = ""
    with transaction.atomic():
        locked = EvalRun.objects.select_for_update().select_related("version__procedure__agent").get(pk=run.pk)
        if locked.state not in UNFINISHED:
            raise LifecycleError(f"Eval run {locked.pk} is already {locked.get_state_display().lower()}.")
        now = timezone.now()
        stale = timedelta(seconds=stale_after_seconds(locked.version.procedure.agent))
        last = locked.heartbeat_at or locked.created_at
        if user is not None and last > now - stale:
            raise LifecycleError(
                f"Eval run {locked.pk} made progress at {last:%H:%M:%S} UTC; resume is for runs stalled for {stale.total_seconds():.0f} s."
            )
        why = reason or (f"resumed by {user.get_username()}" if user is not None else "no progress")
        if locked.resumes >= settings.PROCMEM_EVAL_MAX_RESUMES:
            give_up = (
                f"The run stalled after {locked.resumes} resumes ({why}); its workers kept dying. Start a new run."
            )
        else:
            released = EvalCaseResult.objects.filter(
                run=locked, state=EvalCaseResult.State.RUNNING, claimed_at__lt=now - stale
            ).update(state=EvalCaseResult.State.PENDING, claimed_by="", claim_nonce="")
            locked.resumes += 1
            locked.heartbeat_at = now
            locked.save(update_fields=["resumes", "heartbeat_at"])
            audit(
                action=AuditEvent.Action.EVAL_START,
                actor=user,
                actor_label="" if user is not None else "eval recovery",
                version=locked.version,
                reason=f"Resumed eval run {locked.pk}: {why}",
                after={"run": locked.pk, "resumes": locked.resumes, "released": released},
            )
            run_id, queued = locked.pk, locked.state == EvalRun.State.QUEUED
            transaction.on_commit(lambda: _queue_dispatch(run_id) if queued else _queue_pending(run_id), robust=True)
    if give_up:
        eval_run_fail(run_id=run.pk, reason=give_up)
    return EvalRun.objects.get(pk=run.pk)


def _queue_pending(run_id: int) -> None:
    queue_chunks(run_id=run_id, chunks=pending_chunks(run_id=run_id))


def eval_runs_recover() -> list[int]:
    """Finishes complete runs that were never judged and resumes (or fails) stalled ones. Run by
    the beat schedule every minute (`RECOVER_TASK`); returns the ids it acted on."""
    now = timezone.now()
    cutoff = now - timedelta(seconds=settings.PROCMEM_EVAL_STALE_SECONDS)
    candidates = (
        EvalRun.objects.filter(
            Q(state=EvalRun.State.RUNNING, heartbeat_at__lt=cutoff)
            | Q(state=EvalRun.State.RUNNING, heartbeat_at__isnull=True, created_at__lt=cutoff)
            | Q(state=EvalRun.State.QUEUED, created_at__lt=cutoff)
        )
        .select_related("version__procedure__agent")
        .order_by("pk")
    )
    acted = []
    for run in candidates:
        # an agent whose single case may run longer than the setting gets that long
        if (run.heartbeat_at or run.created_at) > now - timedelta(
            seconds=stale_after_seconds(run.version.procedure.agent)
        ):
            continue
        try:
            eval_run_resume(
                run=run, reason=f"no progress since {(run.heartbeat_at or run.created_at):%Y-%m-%d %H:%M:%S} UTC"
            )
        except LifecycleError:
            continue
        acted.append(run.pk)
    return acted


# --------------------------------------------------------------------------------------------- reads


def eval_run_progress(run: EvalRun) -> dict[str, Any]:
    """The small JSON the progress endpoint serves (and the eval panel polls). `baselineCurrent`:
    whether the target environment still serves the set the run pinned."""
    return {
        "kind": run.kind,
        "environment": run.environment,
        "id": run.pk,
        "state": run.state,
        "verdict": run.verdict or None,
        "casesTotal": run.cases_total,
        "casesDone": run.cases_done,
        "errors": run.errors,
        "finished": run.is_finished,
        "failureReason": run.failure_reason or None,
        "contentHash": run.content_hash,
        "baselineHash": run.baseline_hash,
        "baselineCurrent": run.baseline_hash == environment_set_hash(run.version.procedure.agent, run.environment),
    }
