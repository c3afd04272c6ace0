"""Benchmark: what environments and rollouts cost the agent API's hot path, in process, on
PostgreSQL with 1,000 ACTIVE procedures.

    DATABASE_URL=postgres://…/procmem_envs_bench .venv/bin/python -m bench.environments_bench [--count 1000] [--repeat 400]

The database is dropped and recreated. Measured in one run, interleaved, medians:
- the check of a built set (after ANALYZE, as autovacuum leaves a running database) (one statement: settings + fingerprint), with the digest of releases and
  running rollouts (today's statement) against the same statement without it (the baseline);
- a served set per request: production (no rollout: the built set itself), staging (a derived set,
  kept per production set), production with a rollout to 20 % and a new session id per request (the
  session's arm's set, kept per arm), each through `served_for` on the built set.
Appends a section to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=400)
    args = parser.parse_args()
    from . import common

    database_url = os.environ["DATABASE_URL"]
    common.recreate_database(database_url)
    machine = common.machine()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from guardian.shortcuts import assign_perm

    from bench.seed_active import seed_active_procedures
    from library import services
    from library.demo.seed import record_passing_eval
    from library.models import ProcedureVersion
    from library.serving import active_set as serving
    from library.serving import environment_sets as releases

    call_command("migrate", verbosity=0)
    agent = seed_active_procedures(agent_name="bench_agent", count=args.count)
    agent.environments = ["staging"]
    agent.save(update_fields=["environments"])
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    editor = users.create_user("bench_editor", password="x", is_superuser=True)
    approver = users.create_user("bench_promoter", password="x", is_superuser=True)
    version = ProcedureVersion.objects.filter(procedure__agent=agent, status="ACTIVE").order_by("pk").first()
    staged = services.version_revise(
        version=version,
        user=editor,
        applies_when=version.applies_when,
        steps=[*version.steps, "Confirm the change with the customer."],
        required_tools=version.required_tools,
        forbidden_actions=version.forbidden_actions,
    )
    record_passing_eval(staged, runner="bench")
    assign_perm("library.approve_procedure", approver, staged.procedure)
    services.version_approve(version=staged, user=approver, comment="bench", acknowledge_conflicts=True)
    record_passing_eval(staged, runner="bench")  # production needs its own pass (the promotion eval)
    services.version_promote(version=staged, user=approver, environment="production", reason="bench", share=20)

    with connection.cursor() as cursor:  # the statistics autovacuum keeps in a running database
        cursor.execute("ANALYZE")
    baseline_sql, current_sql = _statements()
    served = serving.active_set_for_agent(agent=agent, using="default", recheck=0)
    timings: dict[str, list[float]] = {
        k: []
        for k in (
            "check, baseline",
            "check, with releases and rollouts",
            "production, no session",
            "staging",
            "production, a new session",
        )
    }
    for n in range(args.repeat):
        for name, sql in (("check, baseline", baseline_sql), ("check, with releases and rollouts", current_sql)):
            start = time.perf_counter()
            with connection.cursor() as cursor:
                cursor.execute(sql, ["ACTIVE", agent.pk])
                cursor.fetchone()
            timings[name].append(time.perf_counter() - start)
        for name, kwargs in (
            ("production, no session", {}),
            ("staging", {"environment": "staging"}),
            ("production, a new session", {"session": f"bench-{n}"}),
        ):
            start = time.perf_counter()
            releases.served_for(served=served, using="default", **kwargs)
            timings[name].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) * 1000 for k, v in timings.items()}
    load = os.getloadavg()[0]
    rows = "\n".join(f"| {k} | {v:.3f} | {v / medians['check, baseline']:.2f} |" for k, v in medians.items())
    section = f"""
## Environments and rollouts on the agent API's hot path ({time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())})

Command: `DATABASE_URL=postgres://postgres@127.0.0.1:5432/procmem_envs_bench .venv/bin/python -m bench.environments_bench --count {args.count} --repeat {args.repeat}`

{machine}; in process, PostgreSQL on 127.0.0.1; {args.count} ACTIVE procedures, one of them with an APPROVED
version in staging and in a running rollout to 20 %; {args.repeat} interleaved repetitions, median. Load average {load:.2f} at the end.

| what | median ms | × baseline check |
| --- | ---: | ---: |
{rows}

The check statement with the digest of releases and running rollouts costs
{medians["check, with releases and rollouts"] / medians["check, baseline"]:.2f}× the statement without it; the derived sets cost no query (the plan is
read with the built set) and are kept per production set and arm, so after the first request per arm they are a dictionary look-up.
"""
    print(section)
    common.append_results(section)


def _statements() -> tuple[str, str]:
    """The fingerprint statement of library/serving/active_set.py, without and with the releases and rollouts column."""
    import inspect

    from library import environments
    from library.serving import active_set as serving

    source = inspect.getsource(serving._current_state)
    start = source.index('f"""SELECT') + 4
    template = source[start : source.index('"""', start)]
    from django.contrib.auth import get_user_model

    from library.models import Agent, ProcedureVersion

    user_model = get_user_model()
    values = {
        "Agent._meta.db_table": Agent._meta.db_table,
        "version_table": ProcedureVersion._meta.db_table,
        "procedure_table": "library_procedure",
        "username": user_model._meta.get_field(user_model.USERNAME_FIELD).column,
        "user_model._meta.db_table": user_model._meta.db_table,
        "environments.STAGED_COLUMN": environments.STAGED_COLUMN,
    }
    current = template
    for name, value in values.items():
        current = current.replace("{" + name + "}", value)
    baseline = current.replace(", " + environments.STAGED_COLUMN, "")
    assert "{" not in current and environments.STAGED_COLUMN not in baseline
    return baseline, current


if __name__ == "__main__":
    main()
