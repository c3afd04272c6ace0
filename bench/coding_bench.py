"""Benchmark: importing and mining real coding-agent sessions (SWE-bench, mini-swe-agent): the 231
Django sessions, and the 140 of six other repositories (sympy, sphinx, requests, pylint, seaborn, flask).

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> .venv/bin/python -m bench.coding_bench [--rounds 5] [--data django|other]

In one process, per round (median of the rounds reported):
- baseline: a plain parse of the same files — read every .traj.json member of the tar.gz and
  json.loads it (the least any import must do), timed right before each of the two imports (so
  each import has a baseline taken at its load; the median is over all of them), after one
  untimed parse before the first round (the archive in the page cache, the code warm);
- import: `manage.py import_sessions <tar.gz> --format mini-swe-agent --outcomes results.json`
  into a fresh coding agent (parse, classify every command, redact, store in PostgreSQL), with the
  default processes (PROCMEM_IMPORT_WORKERS, else one per CPU; since 2026-12-07 09:36 UTC the
  command's own is one of them: 2 = the command and one worker), and again with `--workers 1`
  (all in one process); the CPU seconds of each (the command's process and its workers) are shown;
- mining: one mining run of that agent (library/mining/coding_runs.py: the task families, their candidates
  with verify commands and recovery notes, proposed as CANDIDATE versions).
Targets: import ≤ 3× the plain parse; mining ≤ 1× the import. The URL configuration is loaded before
anything is timed (a server or worker process has loaded it at its start). The command classifier's
per-process caches (`classify_command`, since 2026-12-06 16:40 UTC the paths' roles
`generalise` and `target_role`, since 2026-12-07 03:00 UTC the simple commands: `clear_caches`; since
2026-12-07 03:10 UTC also the mining run's `file_index.repository_path` and the policy screen's
`rules._text_findings`, so that each round's mining run starts cold) are emptied before the
breakdown and before each import, as in a new `import_sessions` process: the workers are forked from
this process, so without it they inherited the commands classified by the breakdown (before 2026-12-06 13:20 UTC the import was timed
with them classified already). The policy screen's tables (the strings every
pattern's match holds, library/policy/literals.py, since 2026-12-07 05:18 UTC) are not a cache of
texts: they are built once in a process, at its first screen (0.23 s on a quiet machine), as a
worker that has mined once holds them; the first round's mining run pays it, and the median of the
rounds leaves it out (a one-shot `manage.py mine` process pays it each time). The agents stay in the database
(their candidate versions are never deleted); each round uses a new agent name.

Every timed step starts after a full garbage collection (`gc.collect()`), as in a new process: the
bench's own heap (Django and its URL configuration, 215,000 objects, then the previous rounds'
parsed files, imports and mining runs) made a generation-2 collection of 0.18–0.33 s land inside
whichever step crossed the collector's threshold — the parse in every round measured (0.2 s of
parsing measured 0.39–0.63 s), the one-process import in two rounds of three — which a new
`import_sessions` process, with only Django's heap, does not pay (measured 2026-12-06 19:45 UTC:
no generation-2 collection in either kind of import). The
parsed files are let go before the imports: a new import process does not hold them, and its
forked workers would inherit them.

With each import, the CPU seconds the rest of the machine used meanwhile (/proc/stat, less this
process, its workers and the PostgreSQL backend that stores the rows) say how much of the two
cores the import had: the workers can halve the wall time only when no other process takes a core.
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import statistics
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from public_data import data_dir  # noqa: E402

DATA = data_dir("swebench")  # public_data/swebench; SWEBENCH_DIR or SHARED_DATA_DIR overrides
DATASETS = {
    "django": (DATA / "gemini-3-pro-django-trajs.tar.gz", DATA / "results.json", 231),
    "other": (DATA / "gemini-3-pro-other-repos-trajs.tar.gz", DATA / "results-other-repos.json", 140),
}
TRAJS, RESULTS, FILES = DATASETS["django"]


def plain_parse() -> list:
    items = []
    with tarfile.open(TRAJS, "r:*") as archive:
        for member in archive:
            if member.isfile() and member.name.endswith(".json"):
                with archive.extractfile(member) as stream:
                    items.append(json.loads(stream.read()))
    return items


def machine_busy_seconds() -> float | None:
    """CPU seconds all processes of the machine have used since boot (/proc/stat), or None."""
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def process_cpu_seconds(pid: int) -> float | None:
    """CPU seconds process `pid` has used (its /proc/<pid>/stat), or None (not on this machine)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def breakdown(items: list) -> tuple[float, float]:
    """Seconds to parse and classify the parsed items, and to redact their excerpts (no database)."""
    from library.ingest.formats import ImportOptions, parse_item
    from library.ingest.store import build_excerpt, redactor_for
    from library.models import Agent
    from library.redaction.echo import RedactionCache

    started = time.perf_counter()
    sessions = [parse_item(item, fmt="mini-swe-agent", options=ImportOptions()) for item in items]
    classify = time.perf_counter() - started
    agent = Agent(name="bench", redaction_patterns=[])
    started = time.perf_counter()
    cache = RedactionCache()  # one per batch, as sessions_store does
    for session in sessions:
        build_excerpt(session, redactor_for(session, agent.redaction_patterns, cache))
    return classify, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--data", choices=sorted(DATASETS), default="django")
    args = parser.parse_args()
    global TRAJS, RESULTS, FILES
    TRAJS, RESULTS, FILES = DATASETS[args.data]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")
    os.environ.setdefault("DEBUG", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    from library.coding.activities import clear_caches as clear_classifier_caches
    from library.coding.file_index import repository_path
    from library.policy.rules import _text_findings

    def clear_caches() -> None:  # the per-process caches, as in a new process (module docstring)
        clear_classifier_caches()
        for cached in (repository_path, _text_findings):  # the mining run's: each round's starts cold
            cached.cache_clear()

    from library.formatting import count
    from library.ingest.pipeline import import_workers
    from library.mining.mining_runs import mining_run_execute
    from library.models import Agent, AgentSession

    call_command("migrate", verbosity=0)
    # the mining run's notification reverses a URL: the first reverse in a process imports every view
    # module (25 s of a 35 s mining run under load, measured 2026-12-06), which a server or worker
    # process has done once at its start; so this process does it before anything is timed
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (evaluated for its import)
    from django.db import connection

    connection.ensure_connection()
    backend_pid = connection.connection.info.backend_pid if connection.vendor == "postgresql" else None
    stamp = time.strftime("%H%M%S")
    load_at_start = os.getloadavg()[0]
    parse_s, import_s, mine_s, classify_s, redact_s = [], [], [], [], []
    mine_cpu: list[float] = []  # the mining run's CPU seconds (this process; it runs in one)
    import_cpu, single_s, single_cpu, parse_cpu = [], [], [], []
    others_cpu: dict[str, list[float]] = {"workers": [], "1": []}  # the rest of the machine's CPU
    server_cpu: dict[str, list[float]] = {"workers": [], "1": []}  # the PostgreSQL backend's
    pair_ratios: list[float] = []  # each import with workers over the parse timed right before it
    plain_parse()  # untimed: the archive in the page cache and the code warm for every round

    def timed_parse() -> list:
        gc.collect()
        started, cpu_started = time.perf_counter(), time.process_time()
        parsed = plain_parse()
        parse_s.append(time.perf_counter() - started)
        parse_cpu.append(time.process_time() - cpu_started)
        return parsed

    for round_no in range(args.rounds):
        items = plain_parse()  # for the breakdown (untimed: the parse is timed before each import)
        files = len(items)
        clear_caches()
        gc.collect()
        classify, redact = breakdown(items)
        classify_s.append(classify)
        redact_s.append(redact)
        del items  # a new import process does not hold them (module docstring)

        for workers, seconds, cpu in ((str(import_workers()), import_s, import_cpu), ("1", single_s, single_cpu)):
            name = f"bench-coding-{args.data}-{stamp}-{round_no}-w{workers}"
            out = io.StringIO()
            timed_parse()  # this import's baseline, at its load
            clear_caches()
            gc.collect()
            machine_before = machine_busy_seconds()
            server_before = process_cpu_seconds(backend_pid) if backend_pid else None
            before = os.times()
            started = time.perf_counter()
            call_command(
                "import_sessions",
                str(TRAJS),
                "--format",
                "mini-swe-agent",
                "--outcomes",
                str(RESULTS),
                "--agent",
                name,
                "--create-agent",
                "--no-progress",
                "--workers",
                workers,
                stdout=out,
                stderr=io.StringIO(),
            )
            seconds.append(time.perf_counter() - started)
            after = os.times()
            server_after = process_cpu_seconds(backend_pid) if backend_pid else None
            machine_after = machine_busy_seconds()
            cpu.append(
                sum(
                    getattr(after, f) - getattr(before, f)
                    for f in ("user", "system", "children_user", "children_system")
                )
            )
            kind = "1" if workers == "1" else "workers"
            server = server_after - server_before if server_before is not None and server_after is not None else 0.0
            server_cpu[kind].append(server)
            if machine_before is not None and machine_after is not None:
                others_cpu[kind].append(max(machine_after - machine_before - cpu[-1] - server, 0.0))
            if workers != "1":
                pair_ratios.append(seconds[-1] / parse_s[-1])
        name = f"bench-coding-{args.data}-{stamp}-{round_no}-w{import_workers()}"
        agent = Agent.objects.get(name=name)
        stored = AgentSession.objects.filter(agent=agent).count()

        gc.collect()
        started, cpu_started = time.perf_counter(), time.process_time()
        run = mining_run_execute(agent=agent)
        mine_s.append(time.perf_counter() - started)
        mine_cpu.append(time.process_time() - cpu_started)
        print(
            f"round {round_no + 1}: {files} files; {out.getvalue().strip()} mining: {count(run.counts.get('candidates'), 'candidates')}; "
            f"parse {parse_s[-2]:.2f} s, import {import_s[-1]:.2f} s ({import_workers()} processes; {pair_ratios[-1]:.2f}× that parse), "
            f"parse {parse_s[-1]:.2f} s, in one process {single_s[-1]:.2f} s, mining {mine_s[-1]:.2f} s; "
            f"load {os.getloadavg()[0]:.2f}",
            flush=True,
        )
        assert stored == files == FILES, (stored, files)

    p, i, m = statistics.median(parse_s), statistics.median(import_s), statistics.median(mine_s)
    print()
    print(f"| step | median of {args.rounds} (s) | ratio | target |")
    print("| --- | ---: | ---: | --- |")
    print(
        f"| plain JSON parse of the {FILES} files ({TRAJS.name}), median of {len(parse_s)} (one before each import) | {p:.2f} | 1.00 | baseline |"
    )
    pc = statistics.median(parse_cpu)
    print(f"| its CPU time | {pc:.2f} | {pc / p:.2f} × parse | |")
    print(
        f"| import_sessions --format mini-swe-agent ({import_workers()} processes, the command's included) | {i:.2f} | {i / p:.2f} × parse | ≤ 3× parse: {'met' if i <= 3 * p else 'NOT met'} |"
    )
    print(
        f"| its CPU time (the command and its workers) | {statistics.median(import_cpu):.2f} | {statistics.median(import_cpu) / p:.2f} × parse; "
        f"{statistics.median(import_cpu) / pc:.2f} × the parse's CPU time | |"
    )
    print(
        f"| each import with workers over the parse timed right before it: median (lowest–highest) | | "
        f"{statistics.median(pair_ratios):.2f}× ({min(pair_ratios):.2f}–{max(pair_ratios):.2f}) | |"
    )
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    for kind, label, walls in (("workers", "with workers", import_s), ("1", "in one process", single_s)):
        if others_cpu[kind]:
            left = statistics.median(cores - o / w for o, w in zip(others_cpu[kind], walls))
            print(
                f"| during the import {label}: the PostgreSQL backend's CPU; the other processes' CPU "
                f"(cores of {cores} left to the import) | {statistics.median(server_cpu[kind]):.2f}; "
                f"{statistics.median(others_cpu[kind]):.2f} ({left:.2f} cores) | | |"
            )
    o = statistics.median(single_s)
    print(f"| the same with --workers 1 (one process) | {o:.2f} | {o / p:.2f} × parse | |")
    print(f"| its CPU time | {statistics.median(single_cpu):.2f} | {statistics.median(single_cpu) / p:.2f} × parse | |")
    c, r = statistics.median(classify_s), statistics.median(redact_s)
    print(
        f"| of one process: parsing the trajectories and classifying their commands | {c:.2f} | {c / p:.2f} × parse | |"
    )
    print(
        f"| of one process: redaction (known values, the excerpts' redacted commands and outputs) | {r:.2f} | {r / p:.2f} × parse | |"
    )
    print(
        f"| of one process: the rest (reading the archive, storing in PostgreSQL) | {max(o - c - r, 0):.2f} | {max(o - c - r, 0) / p:.2f} × parse | |"
    )
    print(
        f"| mining run (task families, their candidates) | {m:.2f} | {m / i:.2f} × import | ≤ 1× import: {'met' if m <= i else 'NOT met'} |"
    )
    mc = statistics.median(mine_cpu)
    print(
        f"| its CPU time (one process) | {mc:.2f} | {mc / statistics.median(import_cpu):.2f} × the import's CPU time | |"
    )
    print(f"\nload average at the start: {load_at_start:.2f}, at the end: {os.getloadavg()[0]:.2f}")
    print("parse (s):", " ".join(f"{v:.2f}" for v in parse_s))
    print("import with workers (s):", " ".join(f"{v:.2f}" for v in import_s))
    print("import in one process (s):", " ".join(f"{v:.2f}" for v in single_s))
    print("mining (s):", " ".join(f"{v:.2f}" for v in mine_s), "CPU (s):", " ".join(f"{v:.2f}" for v in mine_cpu))


if __name__ == "__main__":
    main()
