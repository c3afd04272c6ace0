"""The agent repository's three checks of its procmem library (design: "tests in the agent's repo"),
run by `procmem check` (procmem_client/check_cli.py) and the pytest plugin
(procmem_client/pytest_plugin.py):

- tools: every ACTIVE record's `requiredTools` are in the agent's real tool list (a file, a Python
  import path, or an MCP server's tools/list), so a renamed or dropped tool fails the build and names
  the procedure and the tool;
- selection: fixed task texts select the expected procedure ids (a YAML, JSON or JSONL file);
- snapshot: the rendered instruction for a few contexts, kept as text files beside the contexts; a
  change shows as a diff (prompt growth is seen in code review), `update=True` rewrites them.

The library is read from a live procmem server (the agent API, a read token) or from an export
directory (`manage.py export_procedures DIR`: `DIR/<agent>/<id>.json`); selection over an export
ranks locally and needs the `[embeddings]` extra. Bad input raises CheckError naming the file and
the entry; the checks themselves return one Outcome per procedure, task or context.
"""

from __future__ import annotations

import asyncio
import difflib
import importlib
import json
import re
import shlex
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .rendering import DEFAULT_MAX_CHARS, estimate_tokens, render_block

EXPORT_FORMAT = "procmem.procedure/1"
CONTEXT_FILES = ("contexts.yaml", "contexts.yml", "contexts.json", "contexts.jsonl")
_SNAPSHOT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


class CheckError(Exception):
    """The check could not run: bad arguments or input, or the server could not be read."""


@dataclass
class Outcome:
    check: str  # "tools", "selection" or "snapshot"
    name: str  # the procedure, the task or the context
    ok: bool
    message: str  # one line
    detail: str = ""  # more lines (a diff)


@dataclass
class Library:
    """The agent's ACTIVE records and a way to select over them, wherever they come from."""

    agent: str
    source: str
    procedures: list[dict[str, Any]]
    select: Callable[[str, str | None], tuple[list[str], str]]  # (task, intent) -> (injected ids, block)
    refused: list[dict[str, Any]] = field(default_factory=list)
    base_instruction: str = ""


def plural(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


# ---------------------------------------------------------------------------------------- sources


def _get_json(url: str, token: str, timeout: float) -> tuple[Any, str | None]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read()), response.headers.get("ETag")
    except urllib.error.HTTPError as exc:
        body = exc.read()[:500].decode("utf-8", "replace")
        try:
            body = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            pass
        raise CheckError(f"GET {url} answered {exc.code}: {body}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise CheckError(f"GET {url} failed: {exc}") from None


def address_problem(url: str, *, name: str = "--url (or PROCMEM_URL)") -> str | None:
    """Why `url` (the option or argument `name`) is not procmem's address, or None. Without a scheme
    urllib said only "unknown url type: 127.0.0.1", naming neither the option nor what it wants."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https") or not urllib.parse.urlsplit(url).netloc:
        return f"{name} must be procmem's address, http://… or https://…; got {url[:200]!r}"
    return None


def live_library(
    *, url: str, agent: str, token: str, environment: str | None = None, role: str | None = None, timeout: float = 60.0
) -> Library:
    """The agent's served set from the agent API; selection by its select endpoint."""
    for name, value in (("url", url), ("agent", agent), ("token", token)):
        if not value:
            raise CheckError(f"a live check needs --{name} (or PROCMEM_{name.upper()})")
    problem = address_problem(url)
    if problem:
        raise CheckError(problem)
    base = url.rstrip("/")
    scope = {k: v for k, v in (("environment", environment), ("role", role)) if v}
    agent_path = f"{base}/api/v1/agents/{urllib.parse.quote(agent, safe='')}"
    data, etag = _get_json(f"{agent_path}/procedures?{urllib.parse.urlencode(scope)}", token, timeout)
    if not isinstance(data, dict) or not isinstance(data.get("procedures"), list):
        raise CheckError(f"{base}: the answer is not an active set")

    def select(task: str, intent: str | None) -> tuple[list[str], str]:
        query = {"task": task, **({"intent": intent} if intent else {}), **scope}
        answer, _ = _get_json(f"{agent_path}/select?{urllib.parse.urlencode(query)}", token, timeout)
        if not isinstance(answer, dict) or not isinstance(answer.get("injected"), list):
            raise CheckError(f"{agent_path}/select: the answer is not a selection")
        rendered = answer.get("rendered")
        return [p["id"] for p in answer["injected"]], rendered if isinstance(rendered, str) else render_block(
            answer["injected"]
        )["text"]

    return Library(
        agent=agent,
        source=f"{base} (set {etag or 'without ETag'})",
        procedures=data["procedures"],
        refused=list(data.get("refused") or []),
        select=select,
    )


def _export_files(directory: Path, agent: str | None) -> tuple[str, list[Path]]:
    if not directory.is_dir():
        raise CheckError(f"--export {directory}: not a directory")
    files = sorted(directory.glob("*.json"))
    if files:  # the agent's own directory
        return agent or directory.name, files
    agents = sorted(p.name for p in directory.iterdir() if p.is_dir() and any(p.glob("*.json")))
    if agent:
        if agent not in agents:
            raise CheckError(
                f"--export {directory}: no procedures of agent {agent!r} (it has: {', '.join(agents) or 'none'})"
            )
        return agent, sorted((directory / agent).glob("*.json"))
    if len(agents) != 1:
        raise CheckError(f"--export {directory}: holds the agents {', '.join(agents) or 'none'}; name one with --agent")
    return agents[0], sorted((directory / agents[0]).glob("*.json"))


def _active_record(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckError(f"{path}: not readable JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise CheckError(f"{path}: format: must be {EXPORT_FORMAT!r} (a file of manage.py export_procedures)")
    versions = data.get("versions")
    if not isinstance(versions, list) or not all(isinstance(v, dict) for v in versions):
        raise CheckError(f"{path}: versions: must be a list of objects")
    active = [v for v in versions if v.get("status") == "ACTIVE"]
    if len(active) > 1:
        raise CheckError(f"{path}: versions: {len(active)} versions are ACTIVE; one at most")
    if not active:
        return None
    record = dict(active[0])
    for key, kind in (("steps", list), ("requiredTools", list)):
        if not isinstance(record.get(key), kind) or not all(isinstance(s, str) for s in record[key]):
            raise CheckError(f"{path}: versions[{versions.index(active[0])}].{key}: must be a list of strings")
    record.setdefault("id", data.get("id"))
    record.setdefault("intent", data.get("intent"))
    return record


def export_library(
    *,
    directory: Path,
    agent: str | None = None,
    cap: int = 2,
    max_chars: int | None = DEFAULT_MAX_CHARS,
    ranker: Any = None,
) -> Library:
    """The ACTIVE versions of an export directory; selection ranks locally with procmem's ranker
    (the `[embeddings]` extra, or a `ranker`) and keeps what the block's character cap keeps."""
    agent_name, files = _export_files(Path(directory), agent)
    procedures = [record for record in (_active_record(path) for path in files) if record is not None]
    index: list[Any] = []

    def select(task: str, intent: str | None) -> tuple[list[str], str]:
        if not index:
            from . import embeddings
            from .ranking import Ranker

            if ranker is None and not embeddings.available():
                raise CheckError(
                    "selection over an export directory ranks locally: pip install 'procmem-client[embeddings]'"
                )
            index.append((ranker or Ranker()).index(procedures))
        selected = index[0].select(task=task, intent=intent, cap=cap)["injected"]
        block = render_block(selected, max_chars=max_chars)
        return [r["id"] for r in block["included"]], block["text"]

    return Library(
        agent=agent_name,
        source=f"export {directory} ({plural(len(files), 'file')})",
        procedures=procedures,
        select=select,
    )


# ---------------------------------------------------------------------------------------- the tool list


def _tool_name(item: Any, where: str) -> str:
    if isinstance(item, str):
        name = item
    elif isinstance(item, Mapping):
        name = item.get("name") or (item.get("function") or {}).get("name")  # MCP / OpenAI tool definitions
    else:
        name = getattr(item, "name", None) or getattr(item, "__name__", None)
    if not isinstance(name, str) or not name.strip():
        raise CheckError(f"{where}: {item!r} is not a tool name, nor a tool with a name")
    return name.strip()


def _tool_names(value: Any, where: str) -> list[str]:
    if isinstance(value, Mapping) and "tools" in value:  # an MCP tools/list result, an agent config
        value = value["tools"]
    elif not isinstance(value, (list, tuple, set, frozenset, Mapping)) and isinstance(
        getattr(value, "tools", None), (list, tuple)
    ):
        value = value.tools  # an agent object (ADK LlmAgent, OpenAI Agents Agent)
    if isinstance(value, Mapping):
        return [_tool_name(key, where) for key in value]
    if not isinstance(value, (list, tuple, set, frozenset)):
        raise CheckError(f"{where}: expected a list of tools, got {type(value).__name__}")
    return [_tool_name(item, where) for item in value]


def _tools_from_file(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckError(f"--tools {path}: not readable: {exc}") from None
    if path.suffix == ".json" or text.lstrip().startswith(("[", "{")):
        try:
            return _tool_names(json.loads(text), f"--tools {path}")
        except ValueError as exc:
            raise CheckError(f"--tools {path}: not valid JSON: {exc}") from None
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def _tools_from_import(spec: str) -> list[str]:
    module_name, _, attribute = spec.partition(":")
    if not attribute:
        module_name, _, attribute = spec.rpartition(".")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError, ValueError) as exc:
        raise CheckError(f"--tools {spec}: cannot import it: {exc}") from None
    if callable(target) and not hasattr(target, "tools") and not isinstance(target, type):
        try:  # a function that returns the tool list (not a tool itself: it takes no arguments)
            target = target()
        except TypeError as exc:
            raise CheckError(
                f"--tools {spec}: a callable must take no arguments and return the tool list ({exc})"
            ) from None
    return _tool_names(target, f"--tools {spec}")


async def _mcp_list_tools(target: str, timeout: float) -> list[str]:
    try:
        from mcp import StdioServerParameters
        from mcp.client.client import Client
    except ImportError:
        raise CheckError(
            "--tools mcp:…: reading an MCP tools/list needs the official SDK: pip install 'procmem-client[mcp]'"
        ) from None
    server: Any
    if target.startswith(("http://", "https://")):
        server = target
    else:
        argv = shlex.split(target)
        if not argv:
            raise CheckError("--tools mcp: needs a command (mcp:python -m my_tools) or a URL (mcp:https://host/mcp)")
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    names: list[str] = []
    async with Client(server, read_timeout_seconds=timeout) as client:
        cursor = None
        while True:
            page = await client.list_tools(cursor=cursor)
            names.extend(tool.name for tool in page.tools)
            cursor = page.next_cursor
            if not cursor:
                return names


def load_tools(spec: str, *, timeout: float = 60.0) -> tuple[list[str], str]:
    """The agent's real tool list and a label for messages. `spec`: a file (one name a line, `#`
    comments; or JSON: a list of names or tool definitions, or an MCP tools/list result), `mcp:`
    and a server command or URL (the official MCP SDK client asks tools/list), or a Python import
    path (`py:` optional; `package.module:ATTR`: a list of names or tools, a mapping of names, an
    agent with `.tools`, or a function that returns one of them)."""
    if spec.startswith("mcp:"):
        try:
            names = asyncio.run(_mcp_list_tools(spec[4:].strip(), timeout))
        except CheckError:
            raise
        except Exception as exc:  # the SDK's errors, a server that does not start
            raise CheckError(f"--tools {spec}: tools/list failed: {type(exc).__name__}: {exc}") from None
        return names, f"MCP tools/list of {spec[4:].strip()}"
    if spec.startswith("py:"):
        return _tools_from_import(spec[3:]), spec[3:]
    path = Path(spec)
    if path.exists():
        return _tools_from_file(path), str(path)
    if (
        re.fullmatch(r"[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?", spec)
        and ("." in spec or ":" in spec)
        and not spec.endswith((".txt", ".json"))
    ):
        return _tools_from_import(spec), spec
    raise CheckError(
        f"--tools {spec}: no such file (a Python import path is module:ATTR; an MCP server is mcp:COMMAND)"
    )


def check_tools(library: Library, tools: Iterable[str], label: str) -> list[Outcome]:
    """One outcome per ACTIVE record: passes when every required tool is in the list."""
    have = set(tools)
    outcomes = []
    for record in library.procedures:
        name = f"{record['id']} v{record['version']}"
        missing = [tool for tool in record.get("requiredTools") or [] if tool not in have]
        if missing:
            listed = ", ".join(missing)
            message = (
                f"{name} requires {listed}, which {'is' if len(missing) == 1 else 'are'} not in the agent's "
                f"tool list ({label}, {plural(len(have), 'tool')})"
            )
            outcomes.append(Outcome("tools", name, False, message))
        else:
            outcomes.append(
                Outcome(
                    "tools",
                    name,
                    True,
                    f"{name}: its {len(record.get('requiredTools') or [])} required tools are in the list",
                )
            )
    for refusal in library.refused:  # ACTIVE, but the server refuses it against the admin's tool list
        name = f"{refusal.get('id')} v{refusal.get('version')}"
        missing = [t for t in refusal.get("missingTools") or [] if t not in have]
        if missing:
            outcomes.append(
                Outcome(
                    "tools",
                    name,
                    False,
                    f"{name} requires {', '.join(missing)}, which the agent's tool list ({label}) lacks too (the server refuses it: {refusal.get('message', '')})",
                )
            )
        else:
            outcomes.append(
                Outcome(
                    "tools",
                    name,
                    True,
                    f"{name}: not served (the server's tool list lacks {', '.join(refusal.get('missingTools') or [])}), though the agent has it: update the tool list in procmem",
                )
            )
    return outcomes


# ---------------------------------------------------------------------------------------- fixtures


def _read_entries(path: Path, what: str) -> list[tuple[str, dict[str, Any]]]:
    """(where, entry) pairs from a YAML, JSON or JSONL file of objects."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckError(f"{what} {path}: not readable: {exc}") from None
    if path.suffix == ".jsonl":
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    items.append((f"{path}:{number}", json.loads(line)))
                except ValueError as exc:
                    raise CheckError(f"{path}:{number}: not valid JSON: {exc}") from None
    else:
        if path.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise CheckError(f"{path}: reading YAML needs PyYAML: pip install 'procmem-client[check]'") from None
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise CheckError(f"{path}: not valid YAML: {exc}") from None
        else:
            try:
                data = json.loads(text)
            except ValueError as exc:
                raise CheckError(f"{path}: not valid JSON: {exc}") from None
        if isinstance(data, dict):
            data = data.get("cases", data.get("contexts"))
        if not isinstance(data, list):
            raise CheckError(f"{path}: must be a list of entries (or {{cases: [...]}})")
        items = [(f"{path} entry {number}", item) for number, item in enumerate(data, start=1)]
    for where, item in items:
        if not isinstance(item, dict):
            raise CheckError(f"{where}: must be a mapping, got {type(item).__name__}")
    return items


SELECTION_KEYS = ("task", "intent", "expect", "name")
CONTEXT_KEYS = ("name", "task", "intent", "base")


def _text_field(
    entry: dict[str, Any], key: str, where: str, *, required: bool = True, known: tuple[str, ...] = ()
) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        unknown = [str(name) for name in entry if name not in known] if known and value is None else []
        # a misspelt key ("tsk") is the likeliest cause of a missing one: name it (other keys are ignored)
        hint = f" (the entry has {', '.join(map(repr, unknown))}; its keys are {', '.join(known)})" if unknown else ""
        raise CheckError(f"{where}: {key}: must be a non-empty string{hint}")
    return value


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def check_selection(library: Library, path: Path) -> list[Outcome]:
    """Each entry `{task, expect: [ids], intent?}` passes when the injected ids are `expect`, in order."""
    cases = []
    for where, entry in _read_entries(Path(path), "--selection"):
        task = _text_field(entry, "task", where, known=SELECTION_KEYS)
        intent = _text_field(entry, "intent", where, required=False)
        expect = entry.get("expect")
        if not isinstance(expect, list) or not all(isinstance(i, str) for i in expect):
            raise CheckError(f"{where}: expect: must be a list of procedure ids ([] when nothing may be injected)")
        cases.append((where, entry.get("name") or _short(task or ""), task, intent, expect))
    outcomes = []
    for where, name, task, intent, expect in cases:
        got, _ = library.select(task, intent)
        shown = f"{where} {_short(task)!r}" + (f" (intent {intent})" if intent else "")
        if got == expect:
            outcomes.append(Outcome("selection", name, True, f"{shown}: selects [{', '.join(got)}]"))
        else:
            outcomes.append(
                Outcome("selection", name, False, f"{shown}: expected [{', '.join(expect)}], got [{', '.join(got)}]")
            )
    return outcomes


def snapshot_contexts(directory: Path) -> tuple[Path, list[tuple[str, str, str, str | None, str]]]:
    """The contexts file of a snapshot directory and its (where, name, task, intent, base) entries."""
    directory = Path(directory)
    found = [directory / name for name in CONTEXT_FILES if (directory / name).exists()]
    if not found:
        raise CheckError(
            f"--snapshot {directory}: needs a contexts file ({', '.join(CONTEXT_FILES)}) listing {{name, task, intent?, base?}}"
        )
    contexts, names = [], set()
    for where, entry in _read_entries(found[0], "--snapshot"):
        name = _text_field(entry, "name", where, known=CONTEXT_KEYS) or ""
        if not _SNAPSHOT_NAME.match(name) or name in names:
            raise CheckError(
                f"{where}: name: {name!r} must be unique and made of letters, digits, '.', '_', '-' (it names {name}.txt)"
            )
        names.add(name)
        base = entry.get("base", "")
        if not isinstance(base, str):
            raise CheckError(f"{where}: base: must be a string")
        contexts.append(
            (
                where,
                name,
                _text_field(entry, "task", where, known=CONTEXT_KEYS) or "",
                _text_field(entry, "intent", where, required=False),
                base,
            )
        )
    return found[0], contexts


def instruction(base: str, block: str) -> str:
    """What the agent's instruction holds: the base text, a blank line, the block (the clients' rule)."""
    return "\n\n".join(part for part in (base.strip(), block) if part)


def check_snapshots(library: Library, directory: Path, *, update: bool = False) -> list[Outcome]:
    """Each context's rendered instruction against `<directory>/<name>.txt`; `update` rewrites them."""
    _, contexts = snapshot_contexts(directory)
    outcomes = []
    for _where, name, task, intent, base in contexts:
        _, block = library.select(task, intent)
        text = instruction(base, block)
        path = Path(directory) / f"{name}.txt"
        old = path.read_text(encoding="utf-8") if path.exists() else None
        size = f"{len(text):,} chars, ~{estimate_tokens(text):,} tokens"
        if old == text:
            outcomes.append(Outcome("snapshot", name, True, f"{name}: unchanged ({size})"))
        elif update:
            path.write_text(text, encoding="utf-8")
            outcomes.append(
                Outcome("snapshot", name, True, f"{name}: {'written' if old is None else 'updated'} ({size})")
            )
        elif old is None:
            outcomes.append(
                Outcome(
                    "snapshot",
                    name,
                    False,
                    f"{name}: no snapshot at {path} yet ({size}); run with --update to write it",
                    text,
                )
            )
        else:
            growth = len(text) - len(old)
            diff = "\n".join(
                difflib.unified_diff(
                    old.splitlines(), text.splitlines(), f"{path} (snapshot)", f"{name} (rendered now)", lineterm=""
                )
            )
            outcomes.append(
                Outcome(
                    "snapshot",
                    name,
                    False,
                    f"{name}: the rendered instruction changed: {len(old):,} → {len(text):,} chars ({growth:+,}; "
                    f"~{estimate_tokens(text) - estimate_tokens(old):+,} tokens); review the diff, then run with --update",
                    diff,
                )
            )
    return outcomes


__all__ = [
    "CheckError",
    "Library",
    "Outcome",
    "check_selection",
    "check_snapshots",
    "check_tools",
    "export_library",
    "instruction",
    "live_library",
    "load_tools",
]
