"""Benchmark: the served set as Agent Skills (library/api/skills.py) against the active-set JSON view
in the same run, and `procmem skills sync` of the whole set against writing the same files plainly.

    .venv/bin/python -m bench.skills_bench [--count 500] [--requests 300] [--rounds 5]
    .venv/bin/python -m bench.skills_bench --sync-only [--count 500] [--rounds 5]   # part 2 only, no server

Needs PostgreSQL (BENCH_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/procmem_skills_bench;
the database is dropped and recreated). gunicorn with 2 workers reads through the SELECT-only role.

1. Serving: per round, `--requests` sequential GETs on one keep-alive connection each of the active
   set (200), the skills index (200), one skill's SKILL.md (200), and the active set and the index
   with If-None-Match (304); rounds alternate between the endpoints, and the median time per
   request over the rounds is compared with the active set's.
2. Sync: `procmem_client.skills_sync.sync` into an empty folder (the index and the active set over
   HTTP, every skill rendered and checked against its digest, written beside its place and renamed,
   the lock file), against writing the very same files plainly (mkdir, write, chmod, the lock JSON)
   from memory; and sync's work once the two answers are in memory, without the HTTP. Alternating
   rounds, median; with each its CPU time (user + system, this process: on a machine whose CPUs
   are shared by many jobs the wall time is mostly waiting for one) and the median of the per-round
   ratios (each round against the same round's plain writes). `--sync-only` measures the second
   comparison alone, in this process, on the records of clients/golden/skills/cases.json repeated
   under `--count` ids (no database, no server: for a machine too loaded to start one). Appends a
   section to bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from . import common

PORT = 8071
ONE_SKILL = "one skill's SKILL.md, 200"


def timed_gets(path: str, headers: dict[str, str], count: int, expect: int) -> float:
    """Seconds per request: `count` GETs of `path` on one keep-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    try:
        started = time.perf_counter()
        for _ in range(count):
            connection.request("GET", path, headers=headers)
            response = connection.getresponse()
            response.read()
            if response.status != expect:
                raise SystemExit(f"{path}: {response.status}, expected {expect}")
        return (time.perf_counter() - started) / count
    finally:
        connection.close()


def get(path: str, headers: dict[str, str]) -> tuple[bytes, str]:
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=600)
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return body, response.getheader("ETag") or ""


def timed(run, target: Path) -> tuple[float, float]:
    """Seconds of wall time and of this process's CPU time (user + system: the file system calls
    too) that `run(target)` took. On a machine whose CPUs are shared by many jobs the wall time is
    mostly waiting for a CPU; the CPU time is the work."""
    cpu, started = os.times(), time.perf_counter()
    run(target)
    wall, after = time.perf_counter() - started, os.times()
    return wall, (after.user - cpu.user) + (after.system - cpu.system)


def sync_rows(walls: dict[str, list[float]], cpus: dict[str, list[float]]) -> list[str]:
    """The sync table: per run the median wall time, its rounds, the ratio of the medians, the
    median of the per-round ratios (each round's run against the same round's plain writes), and
    the ratio of the median CPU times."""
    plain = statistics.median(walls["plain writes"])
    plain_cpu = statistics.median(cpus["plain writes"])
    rows = [
        "| run | ms (median) | per round | vs plain writes | per-round ratios (median, range) | CPU ms (median) | CPU vs plain |",
        "| --- | ---: | --- | ---: | --- | ---: | ---: |",
    ]
    for name, runs in walls.items():
        paired = [run / base for run, base in zip(runs, walls["plain writes"])]
        rows.append(
            f"| {name} | {statistics.median(runs) * 1000:.0f} | {', '.join(f'{r * 1000:.0f}' for r in runs)} | "
            f"{statistics.median(runs) / plain:.2f}× | {statistics.median(paired):.2f}× "
            f"({min(paired):.2f}–{max(paired):.2f}) | {statistics.median(cpus[name]) * 1000:.0f} | "
            f"{statistics.median(cpus[name]) / plain_cpu:.2f}× |"
        )
    return rows


def plain_write(directory: Path, files: dict[str, dict[str, bytes]], lock: bytes) -> None:
    directory.mkdir(parents=True)
    for name, folder in files.items():
        for path, data in folder.items():
            target = directory / name / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            target.chmod(0o755 if path.startswith("scripts/") else 0o644)
    (directory / "procmem-skills.lock.json").write_bytes(lock)


def read_tree(directory: Path) -> dict[str, dict[str, bytes]]:
    out: dict[str, dict[str, bytes]] = {}
    for folder in sorted(p for p in directory.iterdir() if p.is_dir()):
        out[folder.name] = {
            p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
        }
    return out


def sync_only(count: int, rounds: int) -> None:
    sys.path.insert(0, str(common.ROOT / "clients" / "python"))
    from procmem_client import skills_sync
    from procmem_client.skill_rendering import render_skill, sha256_digest

    started_on = common.machine()
    cases = json.loads((common.ROOT / "clients" / "golden" / "skills" / "cases.json").read_text())["cases"]
    records = [{**cases[i % 2]["record"], "id": f"bench.p{i:05d}"} for i in range(count)]
    served = []
    for record in records:
        folder = render_skill(record)
        digests = {path: sha256_digest(text.encode()) for path, text in folder["files"].items()}
        served.append(
            skills_sync.Served(
                name=folder["name"],
                procedure_id=record["id"],
                version=record["version"],
                digest=digests["SKILL.md"],
                files=digests,
                url="",
            )
        )
    times: dict[str, list[float]] = {}
    cpu_times: dict[str, list[float]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="skills-bench-"))
    try:

        def synced(directory: Path) -> None:
            skills_sync.plan_and_apply(
                directory,
                served,
                files_for=lambda s: skills_sync.served_files(s, records=records, token="", timeout=1),
                check=False,
            )

        synced(scratch / "reference")
        files = read_tree(scratch / "reference")
        lock = (scratch / "reference" / skills_sync.LOCK_FILE).read_bytes()
        for round_number in range(rounds):
            for name, run in (("plain writes", lambda d: plain_write(d, files, lock)), ("skills sync", synced)):
                target = scratch / f"{round_number}-{name[:5]}"
                wall, cpu = timed(run, target)
                times.setdefault(name, []).append(wall)
                cpu_times.setdefault(name, []).append(cpu)
                assert read_tree(target) == files, name
                print(f"round {round_number + 1}: {name}: {times[name][-1] * 1000:.0f} ms", flush=True)
                shutil.rmtree(target)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    median = {name: statistics.median(runs) for name, runs in times.items()}
    lines = [
        "## Agent Skills: skills sync against plain writes, in one process ({stamp})",
        "",
        f"Command: `.venv/bin/python -m bench.skills_bench --sync-only --count {count} --rounds {rounds}`",
        "",
        f"{count} skills (the golden records under {count} ids; {sum(len(f) for f in files.values())} files and "
        f"the lock), sync's whole work once the index and the active set are in memory (render, digest check, "
        f"write beside and rename, lock) into an empty folder, against writing the same files and lock plainly; "
        f"{rounds} alternating rounds, median. {started_on}; {os.getloadavg()[0]:.1f} at the end.",
        "",
        *sync_rows(times, cpu_times),
    ]
    cpu_ratio = statistics.median(cpu_times["skills sync"]) / statistics.median(cpu_times["plain writes"])
    lines += [
        "",
        f"Target: at most 2× plain writes: **{median['skills sync'] / median['plain writes']:.2f}×** (wall), "
        f"**{cpu_ratio:.2f}×** (CPU time).",
    ]
    section = "\n".join(lines)
    common.append_results(section)
    print(section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sync-only", action="store_true", help="only sync against plain writes, in this process")
    args = parser.parse_args()
    if args.sync_only:
        return sync_only(args.count, args.rounds)
    database_url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/procmem_skills_bench")
    role = "procmem_skills_bench_reader"
    common.OUT.mkdir(parents=True, exist_ok=True)
    started_on = common.machine()
    env, tokens = common.prepare(database_url, {"bench_skills": args.count}, role)
    token = tokens["bench_skills"]
    auth = {"Authorization": f"Bearer {token}"}
    set_path = "/api/v1/agents/bench_skills/procedures"
    index_path = "/.well-known/agent-skills/index.json"
    sys.path.insert(0, str(common.ROOT / "clients" / "python"))
    from procmem_client import skills_sync

    serving: dict[str, list[float]] = {}
    sync_times: dict[str, list[float]] = {}
    sync_cpu: dict[str, list[float]] = {}
    try:
        with common.gunicorn(env, port=PORT, workers=2):
            for _ in range(6):  # each worker builds the set and its skills once
                set_body, set_etag = get(set_path, auth)
                index_body, index_etag = get(index_path, auth)
            index = json.loads(index_body)
            assert len(index["skills"]) == args.count == len(json.loads(set_body)["procedures"])
            skill_path = "/.well-known/agent-skills/" + index["skills"][args.count // 2]["url"]
            skill_body, _ = get(skill_path, auth)
            targets = {
                "active set, 200": (set_path, auth, 200),
                "skills index, 200": (index_path, auth, 200),
                ONE_SKILL: (skill_path, auth, 200),
                "active set, 304": (set_path, {**auth, "If-None-Match": set_etag}, 304),
                "skills index, 304": (index_path, {**auth, "If-None-Match": index_etag}, 304),
            }
            for round_number in range(args.rounds):
                for name, (path, headers, expect) in targets.items():
                    seconds = timed_gets(path, headers, args.requests, expect)
                    serving.setdefault(name, []).append(seconds)
                    print(f"round {round_number + 1}: {name}: {seconds * 1000:.2f} ms/request", flush=True)

            base = f"http://127.0.0.1:{PORT}"
            scratch = Path(tempfile.mkdtemp(prefix="skills-bench-"))
            try:
                reference = scratch / "reference"
                skills_sync.sync(reference, url=base, token=token, agent="bench_skills")
                files = read_tree(reference)
                lock = (reference / skills_sync.LOCK_FILE).read_bytes()
                served = skills_sync.read_index(json.loads(index_body), index_url=base + index_path)
                records = json.loads(set_body)["procedures"]
                for round_number in range(args.rounds):
                    runs = {
                        "plain writes": lambda d: plain_write(d, files, lock),
                        "skills sync (HTTP: index + active set)": lambda d: skills_sync.sync(
                            d, url=base, token=token, agent="bench_skills"
                        ),
                        "skills sync, answers in memory": lambda d: skills_sync.plan_and_apply(
                            d,
                            served,
                            files_for=lambda s: skills_sync.served_files(s, records=records, token=token, timeout=60),
                            check=False,
                        ),
                    }
                    for name, run in runs.items():
                        target = scratch / f"{round_number}-{len(sync_times.get(name, []))}-{name[:5]}"
                        wall, cpu = timed(run, target)
                        sync_times.setdefault(name, []).append(wall)
                        sync_cpu.setdefault(name, []).append(cpu)
                        assert read_tree(target) == files, name
                        print(f"round {round_number + 1}: {name}: {sync_times[name][-1] * 1000:.0f} ms", flush=True)
                        shutil.rmtree(target)
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
    finally:
        common.drop_role(database_url, role)

    per_request = {name: statistics.median(runs) for name, runs in serving.items()}
    sync_median = {name: statistics.median(runs) for name, runs in sync_times.items()}
    base_200, base_304 = per_request["active set, 200"], per_request["active set, 304"]
    plain = sync_median["plain writes"]
    lines = [
        "## Agent Skills: the index and a skill against the active set, and skills sync ({stamp})",
        "",
        f"Command: `.venv/bin/python -m bench.skills_bench --count {args.count} --requests {args.requests} "
        f"--rounds {args.rounds}`",
        "",
        f"gunicorn, 2 sync workers, 127.0.0.1, PostgreSQL through the SELECT-only role; {args.count} ACTIVE "
        f"procedures: active set {len(set_body):,} bytes, index {len(index_body):,} bytes, one SKILL.md "
        f"{len(skill_body):,} bytes. {args.requests} sequential keep-alive GETs per endpoint and round, "
        f"{args.rounds} alternating rounds, median. {started_on}.",
        "",
        "| endpoint | ms per request (median) | per round | vs the active set (same status) |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, runs in serving.items():
        against = base_304 if name.endswith("304") else base_200
        lines.append(
            f"| {name} | {per_request[name] * 1000:.2f} | {', '.join(f'{r * 1000:.2f}' for r in runs)} | "
            f"{per_request[name] / against:.2f}× |"
        )
    lines += [
        "",
        f"`procmem skills sync` of {args.count} skills into an empty folder against writing the same "
        f"{sum(len(f) for f in files.values())} files and the lock plainly from memory (CPU: this "
        f"process's, so the server's side of the two requests is not in it). Load average "
        f"{os.getloadavg()[0]:.1f} at the end:",
        "",
        *sync_rows(sync_times, sync_cpu),
    ]
    lines += [
        "",
        "Targets: the index and a skill at most 1.2× the active set's time per request: "
        f"**{per_request['skills index, 200'] / base_200:.2f}×** and "
        f"**{per_request[ONE_SKILL] / base_200:.2f}×** (200), "
        f"**{per_request['skills index, 304'] / base_304:.2f}×** (304); skills sync at most 2× plain writes: "
        f"**{sync_median['skills sync (HTTP: index + active set)'] / plain:.2f}×** with the two requests, "
        f"**{sync_median['skills sync, answers in memory'] / plain:.2f}×** once they are in.",
    ]
    section = "\n".join(lines)
    common.append_results(section)
    print(section)


if __name__ == "__main__":
    sys.exit(main())
