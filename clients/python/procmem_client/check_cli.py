"""`procmem check`: the agent repository's CI check of its procmem library (procmem_client/agent_checks.py).

    procmem check --tools tools.txt --selection procmem/selection.yaml --snapshot procmem/snapshots
    procmem check --export procedures/ --agent support_agent --tools myagent.tools:TOOLS
    procmem check --snapshot procmem/snapshots --update          # accept the rendered instruction as it is now
    procmem skills sync .claude/skills [--check]                  # the served skills into a folder (skills_sync.py)

The server comes from --url/--agent/--token or PROCMEM_URL, PROCMEM_AGENT, PROCMEM_TOKEN (a read
token); --export DIR reads an export directory instead. Exit codes: 0 every check passed, 1 a check
failed, 2 the check could not run (arguments, input files, the server). One line per procedure,
task or context, `PASS` or `FAIL`, a diff under a changed snapshot, then a summary line;
--junit-xml writes the same as JUnit XML for the CI's test report. Under GitHub Actions each
failure is also an `::error` annotation.
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from . import skills_sync
from .agent_checks import (
    CheckError,
    Library,
    Outcome,
    check_selection,
    check_snapshots,
    check_tools,
    export_library,
    live_library,
    load_tools,
    plural,
)
from .rendering import DEFAULT_MAX_CHARS

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="procmem", description="procmem's agent-side tools")
    # the metavar names the commands in "the following arguments are required: …" (was: command)
    commands = parser.add_subparsers(dest="command", required=True, metavar="{check,skills}")
    check = commands.add_parser(
        "check",
        help="check the agent's procmem library in CI: tools, selection, rendering snapshot",
        description="Checks the agent's ACTIVE procedures against its real tool list, fixed task texts against "
        "the procedure ids they must select, and the rendered instruction against snapshots. "
        "Exit 0: passed; 1: a check failed; 2: the check could not run.",
    )
    source = check.add_argument_group("where the library comes from (a live server, or --export)")
    source.add_argument("--url", help="procmem's address (default: PROCMEM_URL)")
    source.add_argument("--agent", help="the agent (default: PROCMEM_AGENT)")
    source.add_argument("--token", help="a read token (default: PROCMEM_TOKEN)")
    source.add_argument("--environment", help="the agent's environment to check (default production)")
    source.add_argument("--role", help="the agent instance's role")
    source.add_argument(
        "--export",
        type=Path,
        metavar="DIR",
        help="an export directory (manage.py export_procedures) instead of a server",
    )
    source.add_argument("--cap", type=int, default=2, help="with --export: procedures injected per task (default 2)")
    source.add_argument(
        "--max-chars",
        type=int,
        default=DEFAULT_MAX_CHARS,
        help="with --export: the block's character cap (default 4000)",
    )
    checks = check.add_argument_group("the checks (at least one)")
    checks.add_argument(
        "--tools",
        metavar="SPEC",
        help="the agent's real tool list: a file (one name a line, or JSON), "
        "a Python import path (module:ATTR), or mcp:COMMAND / mcp:URL (an MCP server's tools/list)",
    )
    checks.add_argument(
        "--selection", type=Path, metavar="FILE", help="YAML, JSON or JSONL of {task, intent?, expect: [ids]}"
    )
    checks.add_argument(
        "--snapshot",
        type=Path,
        metavar="DIR",
        help="a directory with contexts.yaml ({name, task, intent?, base?}) and one <name>.txt each",
    )
    checks.add_argument(
        "--update", action="store_true", help="write the snapshots as rendered now instead of comparing"
    )
    report = check.add_argument_group("output")
    report.add_argument("--junit-xml", type=Path, metavar="PATH", help="also write the outcomes as JUnit XML")
    report.add_argument(
        "--timeout", type=float, default=60.0, help="seconds per request to the server or the MCP server"
    )
    skills_sync.add_parser(commands)
    return parser


def load_library(args: argparse.Namespace) -> Library:
    """--export when given (PROCMEM_URL is then ignored), else the server of --url or PROCMEM_URL."""
    agent = args.agent or os.environ.get("PROCMEM_AGENT")
    if args.export:
        if args.url:
            raise CheckError("give either --url or --export, not both")
        if args.cap < 0 or args.max_chars < 0:
            raise CheckError("--cap and --max-chars must be 0 or more")
        return export_library(directory=args.export, agent=agent, cap=args.cap, max_chars=args.max_chars)
    return live_library(
        url=args.url or os.environ.get("PROCMEM_URL", ""),
        agent=agent or "",
        token=args.token or os.environ.get("PROCMEM_TOKEN", ""),
        environment=args.environment,
        role=args.role,
        timeout=args.timeout,
    )


def run_checks(args: argparse.Namespace) -> tuple[Library, list[Outcome]]:
    if not (args.tools or args.selection or args.snapshot):
        raise CheckError("nothing to check: give --tools, --selection and/or --snapshot")
    tools = load_tools(args.tools, timeout=args.timeout) if args.tools else None  # read the inputs before the server
    library = load_library(args)
    outcomes: list[Outcome] = []
    if tools is not None:
        outcomes += check_tools(library, *tools)
    if args.selection:
        outcomes += check_selection(library, args.selection)
    if args.snapshot:
        outcomes += check_snapshots(library, args.snapshot, update=args.update)
    return library, outcomes


def write_junit(path: Path, outcomes: Sequence[Outcome], *, source: str) -> None:
    failures = sum(not o.ok for o in outcomes)
    suites = ET.Element(
        "testsuites", name="procmem check", tests=str(len(outcomes)), failures=str(failures), errors="0"
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name="procmem check",
        tests=str(len(outcomes)),
        failures=str(failures),
        errors="0",
        skipped="0",
    )
    ET.SubElement(ET.SubElement(suite, "properties"), "property", name="source", value=source)
    for outcome in outcomes:
        case = ET.SubElement(suite, "testcase", classname=f"procmem.{outcome.check}", name=outcome.name)
        if not outcome.ok:
            failure = ET.SubElement(case, "failure", message=outcome.message, type=f"procmem.{outcome.check}")
            failure.text = "\n".join(filter(None, [outcome.message, outcome.detail]))
        else:
            ET.SubElement(case, "system-out").text = outcome.message
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(path, encoding="utf-8", xml_declaration=True)


def _annotation(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def report(outcomes: Sequence[Outcome], out: TextIO) -> None:
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    for outcome in outcomes:
        out.write(f"{'PASS' if outcome.ok else 'FAIL'} {outcome.check:<9} {outcome.message}\n")
        if outcome.detail and not outcome.ok:
            out.write("".join(f"    {line}\n" for line in outcome.detail.splitlines()))
        if github and not outcome.ok:
            out.write(f"::error title=procmem check {outcome.check}::{_annotation(outcome.message)}\n")
    failed = sum(not o.ok for o in outcomes)
    out.write(f"procmem check: {failed} failed, {len(outcomes) - failed} passed\n")


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out = out or sys.stdout
    err = err or sys.stderr
    args = _parser().parse_args(argv)
    if args.command == "skills":
        return skills_sync.run(args, out, err)
    try:
        library, outcomes = run_checks(args)
    except CheckError as exc:
        err.write(f"procmem check: error: {exc}\n")
        return EXIT_ERROR
    out.write(
        f"procmem check: agent {library.agent}, {library.source}, {plural(len(library.procedures), 'ACTIVE procedure')}\n"
    )
    report(outcomes, out)
    if args.junit_xml:
        write_junit(args.junit_xml, outcomes, source=library.source)
    return EXIT_FAILED if any(not o.ok for o in outcomes) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
