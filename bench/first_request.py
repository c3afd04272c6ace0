"""One fresh web process, in-process: its first candidate page against its next ones (issue 30).

Imports `procmem_site.wsgi` as a gunicorn worker does (django.setup() and the warm-up), then calls
that WSGI application for the page `--warm` + 1 times, without a socket, and prints one JSON line:
the first request's milliseconds, the warm ones' median and their ratio, in wall time and in this
process's CPU time (which leaves out the database's side and, on a loaded machine, the time other
processes had the core). With `--profile DIR` the first and the second request are profiled
(cProfile on CPU time, DIR/first.pstats and DIR/second.pstats) and the functions whose own time
differs most between the two are printed: what a fresh process still does inside its first request.

bench/first_page.py runs it (`--in-process N`: N fresh processes on its seeded database, the same
ratio without gunicorn and the network in between); on its own:

    DJANGO_SETTINGS_MODULE=bench.settings DATABASE_URL=… DB_CONN_MAX_AGE=600 \\
        .venv/bin/python -m bench.first_request /versions/7/ sessionid=… [--warm 10] [--profile DIR]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import sys
import time
from pathlib import Path


def _environ(path: str, cookie: str) -> dict:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_COOKIE": cookie,
        "wsgi.input": io.BytesIO(),
        "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        "wsgi.version": (1, 0),
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
    }


def _request(application, path: str, cookie: str, profiler: cProfile.Profile | None = None) -> tuple[float, float]:
    """(wall ms, this process's CPU ms): the CPU time leaves out the database's side and the time
    other processes of a loaded machine had the core."""
    status: list[str] = []
    started, cpu = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    response = application(_environ(path, cookie), lambda s, h, *a: status.append(s))
    body = b"".join(response)
    if hasattr(response, "close"):
        response.close()  # request_finished, as a server sends it
    if profiler is not None:
        profiler.disable()
    elapsed, cpu = (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000
    assert status and status[0].startswith("200"), (status, body[:500])
    return elapsed, cpu


def _differences(first: pstats.Stats, second: pstats.Stats, top: int) -> str:
    """The functions whose own time (tottime) differs most between the two requests."""
    own = {key: value[2] for key, value in second.stats.items()}  # type: ignore[attr-defined]
    rows = sorted(
        ((value[2] - own.get(key, 0.0), value[2], own.get(key, 0.0), key) for key, value in first.stats.items()),  # type: ignore[attr-defined]
        reverse=True,
    )[:top]
    lines = [f"{'first − second ms':>18} {'first':>8} {'second':>8}  function"]
    for diff, a, b, (filename, line, name) in rows:
        lines.append(f"{diff * 1000:18.1f} {a * 1000:8.1f} {b * 1000:8.1f}  {name} {filename}:{line}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("path")
    parser.add_argument("cookie")
    parser.add_argument("--warm", type=int, default=10)
    parser.add_argument(
        "--profile", type=Path, help="write first.pstats and second.pstats here and print the differences"
    )
    parser.add_argument("--top", type=int, default=40)
    args = parser.parse_args()

    started = time.perf_counter()
    from procmem_site.wsgi import application  # django.setup() and the warm-up, as a gunicorn worker

    ready_s = time.perf_counter() - started
    # CPU time, not wall time: on a loaded machine a wall-clock profile charges whatever function
    # was running when the process lost its core
    profilers = (
        [cProfile.Profile(time.process_time), cProfile.Profile(time.process_time)] if args.profile else [None, None]
    )
    first = _request(application, args.path, args.cookie, profilers[0])
    second = _request(application, args.path, args.cookie, profilers[1])
    # the profiled second request is slower than a plain one: with --profile it is not a warm sample
    warm = ([] if args.profile else [second]) + [
        _request(application, args.path, args.cookie) for _ in range(args.warm - (0 if args.profile else 1))
    ]
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
        stats = []
        for name, profiler in zip(("first", "second"), profilers):
            profiler.dump_stats(args.profile / f"{name}.pstats")
            stats.append(pstats.Stats(profiler))
        print(_differences(*stats, args.top), file=sys.stderr)
    wall, cpu = statistics.median(w for w, _ in warm), statistics.median(c for _, c in warm)
    print(
        json.dumps(
            {
                "ready_s": round(ready_s, 3),
                "first": round(first[0], 2),
                "warm": round(wall, 2),
                "ratio": round(first[0] / wall, 3),
                "first_cpu": round(first[1], 2),
                "warm_cpu": round(cpu, 2),
                "cpu_ratio": round(first[1] / cpu, 3),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
