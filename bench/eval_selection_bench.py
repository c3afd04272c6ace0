"""Benchmark: eval orchestration overhead per case with the served selection, against the rule it
replaced (intent filter, candidate first, then by key, up to the cap), in the same run.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_bench_evalsel \\
        .venv/bin/python -m bench.eval_selection_bench [--cases 60] [--procedures 20] [--repeats 5] [--append]

Each run is a whole eval run (start → verdict stored) in this process with Celery's eager mode:
claims, selection and rendering per case and arm, result rows, progress, the verdict. The runner
answers at once, so the time is orchestration only. Every run is a new run, so the served path
builds its two indexes each time (vectors of the set read from the database); the cases' task
vectors come from the worker's per-text cache after the first run, which is measured apart (its
cost is one query embedding per case: the model's time). The two paths alternate, after a warm-up.
The database is migrated and a fresh agent created per
invocation; the name must start with procmem_bench.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-secret-key-0123456789abcdef0123456789")
os.environ.setdefault("ALLOWED_HOSTS", "localhost")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ["CELERY_TASK_ALWAYS_EAGER"] = "1"
os.environ["PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES"] = "bench."


def instant_runner(*, case, instruction, procedures):
    return {"tool_calls": [{"name": "lookupOrder", "args": {}}], "reply": "done"}


class LegacyArmSets:
    """The selection eval replays made before they selected as the agent does (kept here only to
    measure against): the case's intent's versions, the candidate first, the others by key, up to
    the cap, rendered into one block."""

    def __init__(self, run):
        from library.models import ProcedureVersion
        from library.serving import selection

        self.agent = run.version.procedure.agent
        self.candidate = run.version
        self.baseline = list(
            ProcedureVersion.objects.filter(pk__in=[b["id"] for b in run.baseline_versions]).select_related(
                "procedure__intent", "approved_by"
            )
        )
        self.max_chars = selection.injection_max_chars()

    def prepare(self, tasks):
        pass

    def request(self, arm, case):
        from library.evals.payload import Selected, case_payload
        from procmem_client.rendering import render_block, render_procedure

        versions = (
            list(self.baseline)
            if arm == "baseline"
            else [self.candidate, *[v for v in self.baseline if v.procedure_id != self.candidate.procedure_id]]
        )
        versions = [v for v in versions if v.procedure.intent_id == case.intent_id]
        first = [v for v in versions if v.pk == self.candidate.pk]
        rest = sorted((v for v in versions if v.pk != self.candidate.pk), key=lambda v: v.procedure.key)
        records = []
        for version in (first + rest)[: self.agent.injection_cap]:
            record = dict(version.to_dict())
            record["rendered"] = render_procedure(record)
            records.append(record)
        block = render_block(records, max_chars=self.max_chars)
        parts = [self.agent.base_instruction.strip()] if self.agent.base_instruction.strip() else []
        if block["text"]:
            parts.append(block["text"])
        injected = [{"id": p["id"], "version": p["version"], "intent": None} for p in block["included"]]
        selected = Selected(
            procedures=block["included"], instruction="\n\n".join(parts), injected=injected, rendered_hash=""
        )
        return case_payload(case), selected.instruction, selected.procedures, selected


def _setup(cases: int, procedures: int):
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    name = settings.DATABASES["default"]["NAME"]
    if not str(name).startswith("procmem_bench"):
        raise SystemExit(f"the database name must start with procmem_bench (got {name})")
    call_command("migrate", "--noinput", verbosity=0)
    from library import services
    from library.demo.evals import ADDRESS_CHANGE, ORDER_STATUS, OVER_LIMIT, WITHIN_LIMIT
    from library.demo.seed import record_passing_eval
    from library.models import Agent, Intent, RegressionCase, Source
    from library.permissions import ensure_reviewers_group

    admin, _ = get_user_model().objects.get_or_create(
        username="bench_admin", defaults={"is_superuser": True, "is_staff": True}
    )
    admin.groups.add(ensure_reviewers_group())
    author, _ = get_user_model().objects.get_or_create(username="bench_author")
    author.groups.add(ensure_reviewers_group())
    tools = ["lookupOrder", "checkReturnWindow", "createApproval", "replyTemplates"]
    agent = Agent.objects.create(
        name=f"bench_evalsel_{int(time.time() * 1000)}",
        tools=tools,
        eval_runner="python",
        eval_python_path="bench.eval_selection_bench:instant_runner",
    )
    tasks = {
        "refund_over_limit": [t for _, _, t in OVER_LIMIT],
        "refund_within_limit": [t for _, _, t in WITHIN_LIMIT],
        "order_status": list(ORDER_STATUS.values()),
        "address_change": [t for _, _, t in ADDRESS_CHANGE],
    }
    texts = {
        "refund_over_limit": "The customer asks for money back for an expensive order of hundreds of EUR",
        "refund_within_limit": "The customer asks for a small refund of tens of EUR",
        "order_status": "The customer asks where their order is or when it will arrive",
        "address_change": "The customer wants to change the delivery address of an order",
    }
    intents = {name: Intent.objects.create(agent=agent, name=name) for name in tasks}
    names = list(tasks)
    for i in range(procedures):
        intent = names[i % len(names)]
        version = services.procedure_propose(
            agent=agent,
            intent=intents[intent],
            key=f"{intent.replace('_', '.')}.p{i}",
            applies_when=f"{texts[intent]} (variant {i}).",
            steps=["Look up the order with lookupOrder({{order_id}}).", f"Answer with replyTemplates('t{i}')."],
            required_tools=["lookupOrder", "replyTemplates"],
            forbidden_actions=[],
            source=Source.MANUAL,
            proposed_by=author,
        )
        record_passing_eval(version, runner="bench")
        services.version_approve(version=version, user=admin, comment="bench", acknowledge_conflicts=True)
    RegressionCase.objects.bulk_create(
        RegressionCase(
            agent=agent,
            intent=intents[names[i % len(names)]],
            task=f"{tasks[names[i % len(names)]][(i // len(names)) % len(tasks[names[i % len(names)]])]} (ticket {i})",
            expected_tools=["lookupOrder"],
        )
        for i in range(cases)
    )
    candidate = services.procedure_propose(
        agent=agent,
        intent=intents["refund_over_limit"],
        key="refund.over.limit.p0",
        applies_when=f"{texts['refund_over_limit']}, more than the agent may refund on its own.",
        steps=[
            "Look up the order with lookupOrder({{order_id}}).",
            "Create an approval with createApproval({{order_id}}).",
            "Reply with replyTemplates('approval_pending').",
        ],
        required_tools=["lookupOrder", "createApproval", "replyTemplates"],
        forbidden_actions=[],
        source=Source.MANUAL,
        proposed_by=admin,
    )
    return candidate, admin


def _one_run(candidate, user) -> float:
    from library.evals import eval_runs
    from library.models import EvalRun

    started = time.perf_counter()
    run = eval_runs.eval_run_start(version=candidate, user=user)
    run.refresh_from_db()
    elapsed = time.perf_counter() - started
    if run.state != EvalRun.State.DONE:
        raise SystemExit(f"eval run {run.pk} ended {run.state}: {run.failure_reason}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=60)
    parser.add_argument("--procedures", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--append", action="store_true", help="append the results to bench/RESULTS.md")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("set DATABASE_URL=postgres://…/procmem_bench_… (see the docstring)")
    candidate, user = _setup(args.cases, args.procedures)
    from library.evals import eval_runs, payload

    served_arm_sets = eval_runs.arm_sets
    legacy = lambda *, run: LegacyArmSets(run)  # noqa: E731

    def timed(path) -> float:
        eval_runs.arm_sets = path
        try:
            return _one_run(candidate, user)
        finally:
            eval_runs.arm_sets = served_arm_sets

    from library import embeddings

    timed(legacy)  # warm-up: the model loaded, connections open
    embeddings.embed_one("warm the model up")
    embeddings.embed_one.cache_clear()
    payload.clear_cache()
    cold = timed(served_arm_sets)  # the first run over these cases: every task embedded once
    old: list[float] = []
    new: list[float] = []
    for _ in range(args.repeats):
        old.append(timed(legacy))
        payload.clear_cache()  # every run builds its two indexes again
        new.append(timed(served_arm_sets))
    t_old, t_new = statistics.median(old), statistics.median(new)
    load = os.getloadavg()
    lines = [
        f"- when: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {os.cpu_count()} cores (shared), load average at the end {load[0]:.2f}",
        f"- runs of {args.cases} cases (= {2 * args.cases} case-arms) over {args.procedures} ACTIVE procedures of 4 intents, instant "
        f"runner, in process (eager Celery), median of {args.repeats} runs per path, the paths alternating after a warm-up each",
        f"- the rule it replaced (intent filter, candidate first): **{t_old * 1000 / args.cases:.1f} ms per case** "
        f"(runs {', '.join(f'{x:.2f}' for x in old)} s)",
        f"- served selection (serving.selection.select_for_agent per case and arm, two indexes built per run, the tasks' vectors "
        f"from the process's per-text cache): **{t_new * 1000 / args.cases:.1f} ms per case** (runs {', '.join(f'{x:.2f}' for x in new)} s)",
        f"- **ratio {t_new / t_old:.2f}x** (target ≤ 1.5x)",
        f"- the first served run over these cases, each task embedded once (one query embedding per case): "
        f"{cold * 1000 / args.cases:.1f} ms per case, {cold / t_old:.1f}x — the model's time, not orchestration",
    ]
    print("\n".join(lines))
    if args.append:
        command = (
            "DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_bench_evalsel "
            f".venv/bin/python -m bench.eval_selection_bench --cases {args.cases} --procedures {args.procedures} "
            f"--repeats {args.repeats} --append"
        )
        with open(ROOT / "bench" / "RESULTS.md", "a", encoding="utf-8") as handle:
            handle.write(
                f"\n## Eval orchestration with the served selection\n\n```sh\n{command}\n```\n\n"
                + "\n".join(lines)
                + "\n"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
