"""Activity classes and generalised targets of a coding agent's actions, by rules (no model).

A coding agent acts through shell commands (mini-swe-agent: one ``bash`` block per turn) or named
tools (a trace hook: ``Read``, ``Edit``, ``Grep``, ``Bash``…). Each action gets one activity class:

    search  grep, rg, ag, find, ls, tree, git grep          — where is it?
    read    cat, head, tail, nl, sed -n, less, awk, wc       — what does it say?
    edit    sed -i, heredoc/redirect writes, patch, git apply, python that writes a file, cp/mv/rm/touch
    run     python script.py, python -c, bash script.sh      — run code (e.g. a reproduction script)
    test    pytest, runtests.py, manage.py test, tox, unittest
    build   pip/uv/poetry/npm install, setup.py, make          (build/install)
    vcs     git (status, diff, log, add, commit, stash…)      (version control)
    environment  cd, export, env, which, pwd, whoami, mkdir, echo, sleep, timeout wrappers
    submit  the agent's final "submit" (mini-swe-agent's COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT)
    other   anything else

A command is split at ``&&``, ``||``, ``;`` and ``|`` (heredoc bodies removed first); each part is
classified and the command takes the strongest class (submit > edit > test > run > build > vcs >
search > read > environment > other): ``cd /testbed && python reproduce.py`` is *run*.

The target is the first path, module or test label the winning part acts on, generalised to a
placeholder with its role: ``django/contrib/auth/validators.py`` → ``{{source_file}}`` (source),
``tests/auth_tests/test_validators.py`` → ``{{test_file}}`` (test), ``auth_tests.test_validators``
→ ``{{test_label}}`` (test), ``setup.cfg`` → ``{{config_file}}`` (config), ``reproduce.py`` →
``{{script}}`` (script), ``docs/ref/forms.txt`` → ``{{doc_file}}`` (docs), ``django/forms`` →
``{{directory}}`` (directory).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from procmem_client.coding import _LABEL_RE, generalise, is_label, target_role  # noqa: F401  (one implementation, shared with the client)

ACTIVITIES = ("search", "read", "edit", "run", "test", "build", "vcs", "environment", "submit", "other")
ACTIVITY_LABELS = {
    "search": "search",
    "read": "read",
    "edit": "edit",
    "run": "run",
    "test": "test",
    "build": "build/install",
    "vcs": "version control",
    "environment": "environment",
    "submit": "submit",
    "other": "other",
}
# the roles that tell steps apart (editing a test is not editing the source)
STEP_ROLES = {"read": ("source", "test"), "edit": ("source", "test", "script"), "run": ("script",), "test": ("script",)}
ROLES = ("source", "test", "config", "docs", "script", "directory", "")
# the strongest class of a compound command wins
_STRENGTH = {
    name: rank
    for rank, name in enumerate(
        ("other", "environment", "read", "search", "vcs", "build", "run", "test", "edit", "submit")
    )
}
SUBMIT_MARKERS = ("COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "MINI_SWE_AGENT_FINAL_OUTPUT")

_SEARCH = {"grep", "egrep", "fgrep", "rg", "ag", "ack", "find", "ls", "tree", "locate", "fd", "ctags"}
_READ = {
    "cat",
    "head",
    "tail",
    "nl",
    "less",
    "more",
    "awk",
    "wc",
    "diff",
    "cmp",
    "file",
    "stat",
    "od",
    "xxd",
    "strings",
    "jq",
    "column",
    "sort",
    "uniq",
    "cut",
    "tr",
}
_EDIT = {"patch", "cp", "mv", "rm", "touch", "tee", "ed", "ln", "truncate", "chmod", "dd", "unlink", "rmdir"}
_TEST = {"pytest", "py.test", "tox", "nox", "runtests.py", "nosetests", "trial"}
_BUILD = {
    "pip",
    "pip3",
    "uv",
    "poetry",
    "npm",
    "yarn",
    "pnpm",
    "make",
    "cargo",
    "go",
    "mvn",
    "gradle",
    "apt",
    "apt-get",
    "conda",
    "easy_install",
    "cmake",
    "gcc",
    "cc",
    "tsc",
}
_ENV = {
    "cd",
    "export",
    "env",
    "which",
    "pwd",
    "whoami",
    "mkdir",
    "echo",
    "printf",
    "sleep",
    "source",
    ".",
    "true",
    "false",
    "exit",
    "set",
    "unset",
    "type",
    "hash",
    "alias",
    "date",
    "uname",
    "id",
    "hostname",
    "history",
    "clear",
    "ps",
    "kill",
    "df",
    "du",
    "free",
    "locale",
    "ulimit",
    "nproc",
}
_RUN = {
    "python",
    "python3",
    "bash",
    "sh",
    "node",
    "ruby",
    "perl",
    "php",
    "sqlite3",
    "psql",
    "mysql",
    "django-admin",
    "curl",
    "wget",
    "java",
    "zsh",
}
_WRAPPERS = {"timeout", "time", "nice", "nohup", "xargs", "sudo", "command", "exec", "stdbuf"}
# named tools of coding agents (Claude Code, OpenHands, SWE-agent, Aider…), lower-cased
TOOL_ACTIVITIES = {
    "read": "read",
    "view": "read",
    "open": "read",
    "read_file": "read",
    "cat": "read",
    "notebookread": "read",
    "grep": "search",
    "glob": "search",
    "search": "search",
    "find": "search",
    "find_file": "search",
    "search_dir": "search",
    "search_file": "search",
    "ls": "search",
    "list_files": "search",
    "codebase_search": "search",
    "edit": "edit",
    "multiedit": "edit",
    "write": "edit",
    "str_replace": "edit",
    "str_replace_editor": "edit",
    "create": "edit",
    "insert": "edit",
    "apply_patch": "edit",
    "write_file": "edit",
    "notebookedit": "edit",
    "test": "test",
    "run_tests": "test",
    "pytest": "test",
    "build": "build",
    "install": "build",
    "git": "vcs",
    "commit": "vcs",
    "submit": "submit",
    "finish": "submit",
    "python": "run",
    "execute": "run",
    "run": "run",
}
SHELL_TOOLS = {"bash", "shell", "sh", "terminal", "run_command", "execute_bash", "exec_command", "run_shell_command"}

_HEREDOC_RE = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
_ASSIGN_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PATHLIKE_RE = re.compile(r"^[\w./\-]+$")
_EXT_RE = re.compile(r"\.[A-Za-z0-9]{1,6}$")
_WRITE_IN_CODE_RE = re.compile(
    r"open\([^)]*['\"][wa]\+?['\"]|\.write_text\(|\.write\(|shutil\.(copy|move)|os\.(remove|rename)"
)


@dataclass(frozen=True)
class Action:
    """One classified action: its class, the program or tool, the target as given and generalised."""

    activity: str
    program: str
    path: str = ""  # the target as the command named it ('' if none)
    target: str = ""  # the generalised placeholder, e.g. {{source_file}}
    role: str = ""  # source, test, config, docs, script, directory or ''

    def step(self) -> str:
        """The skeleton step: the activity with the target's role when it says more (edit:source,
        edit:test, run:script); a test run on a test target is just "test"."""
        if (
            self.role
            and self.role != self.activity
            and self.activity in STEP_ROLES
            and self.role in STEP_ROLES[self.activity]
        ):
            return f"{self.activity}:{self.role}"
        return self.activity


# ---------------------------------------------------------------------------------------------- targets


def _strip_cwd(path: str) -> str:
    for prefix in ("/testbed/", "./"):
        if path.startswith(prefix):
            path = path[len(prefix) :]
    return path


# ---------------------------------------------------------------------------------------------- shell


def strip_heredocs(command: str) -> tuple[str, list[str]]:
    """The command without heredoc bodies, and the bodies (what a heredoc writes or feeds)."""
    if "<<" not in command:  # every heredoc starts with it (_HEREDOC_RE): most commands have none
        return command, []
    lines = command.split("\n")
    kept: list[str] = []
    bodies: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        kept.append(line)
        index += 1
        if "<<" not in line:  # no heredoc starts on this line
            continue
        for match in _HEREDOC_RE.finditer(line):
            terminator = match.group(2)
            body: list[str] = []
            while index < len(lines) and lines[index].strip() != terminator:
                body.append(lines[index])
                index += 1
            index += 1  # the terminator line
            bodies.append("\n".join(body))
    return "\n".join(kept), bodies


# a double-quoted string's characters run in one possessive step: a quote that is not closed gives
# the engine nothing to back into (the plain form, one character per step, matches the same words)
_TOKEN_RE = re.compile(r"""(?:'[^']*'|"(?:\\.|[^"\\]+)*+"|\\.|[^\s'"\\]+)+""")


_UNQUOTE_RE = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""")


def _unquoted(match: re.Match) -> str:
    return match.group(match.lastindex)  # the one group of the three that matched (perhaps empty)


def _tokens(part: str) -> list[str]:
    """Shell words with quotes removed (a fast subset of shlex.split: no comments inside words)."""
    if not ("'" in part or '"' in part or "\\" in part):
        # nothing quoted or escaped (most parts): the words are the runs of non-space characters,
        # as _TOKEN_RE finds them (str.split and the pattern's \s agree on what is a space)
        words = part.split()
        if "#" not in part:  # no word starts a comment
            return words
        for index, word in enumerate(words):
            if word.startswith("#"):
                return words[:index]
        return words
    words = []
    for word in _TOKEN_RE.findall(part):  # the pattern has no group: each word as it stands
        if word.startswith("#"):
            break
        if not ("'" in word or '"' in word or "\\" in word):  # nothing to unquote
            words.append(word)
            continue
        quote = word[0]
        if quote in "'\"" and word[-1] == quote and word.count(quote) == 2 and "\\" not in word:
            # one quoted string and nothing else ('81,93p', "class Number"): _UNQUOTE_RE reads
            # what is between the quotes
            words.append(word[1:-1])
            continue
        words.append(_UNQUOTE_RE.sub(_unquoted, word))
    return words


# One simple command and the operator after it: quoted strings (to their closing quote, or to the end
# when unclosed; a backslash escapes inside double quotes only), a backslash and the character after
# it, any other character but the operators (a lone "&" included), then &&, ||, |, ; or a newline.
_SIMPLE_COMMAND_RE = re.compile(
    r"""((?:'[^']*'?|"(?:[^"\\]+|\\[\s\S]?)*"?|\\[\s\S]?|[^'"\\;\n|&]+|&(?!&))*)(?:&&|\|\|?|[;\n]|\Z)"""
)


def split_command(command: str) -> list[str]:
    """The simple commands of a shell line, split at &&, ||, ;, | and newlines outside quotes."""
    if not ("&" in command or "|" in command or ";" in command or "\n" in command):
        # no operator at all: one simple command, whatever its quotes (as _SIMPLE_COMMAND_RE reads it)
        command = command.strip()
        return [command] if command else []
    # the pattern's one group is the simple command: findall gives it, stripped by str.strip in C
    return [part for part in map(str.strip, _SIMPLE_COMMAND_RE.findall(command)) if part]


def _redirect_target(tokens: list[str]) -> str:
    for index, token in enumerate(tokens):
        if token in (">", ">>", "1>") and index + 1 < len(tokens):
            return tokens[index + 1]
        if token.startswith((">", ">>")) and len(token.lstrip(">")) > 0 and not token.startswith(">&"):
            return token.lstrip(">")
    return ""


def _paths(tokens: Iterable[str]) -> list[str]:
    found = []
    for token in tokens:
        path = _token_path(token)
        if path is not None:
            found.append(path)
    return found


@lru_cache(maxsize=8192)
def _token_path(token: str) -> str | None:
    """The path (or module label) an argument names, or None. Cached: the same arguments recur
    (12,873 in the other repositories' commands, 3,798 of them different)."""
    if token.startswith("-") or not _PATHLIKE_RE.match(token) or token in (".", "..", "/"):
        return None
    if "/" in token or _EXT_RE.search(token) or _LABEL_RE.match(token):
        return _strip_cwd(token)
    return None


def _program(tokens: list[str]) -> tuple[str, list[str]]:
    """The program of a simple command (skipping VAR=value prefixes and wrappers like timeout) and its arguments."""
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if "=" in token and _ASSIGN_RE.match(token):  # every assignment has one
            index += 1
            continue
        name = token.rsplit("/", 1)[-1]
        if name in _WRAPPERS or (name == "env" and index + 1 < len(tokens)):
            index += 1
            # timeout 60 …, nice -n 5 …
            while index < len(tokens) and (tokens[index].startswith("-") or tokens[index].rstrip("smhd").isdigit()):
                index += 1
            continue
        return token, tokens[index + 1 :]
    return "", []


_TEST_OPTIONS_WITH_VALUE = {
    "-e",
    "-k",
    "-m",
    "-p",
    "-n",
    "-c",
    "--settings",
    "--parallel",
    "--tag",
    "--exclude-tag",
    "-o",
    "--rootdir",
}


def _test_action(program: str, args: list[str]) -> Action:
    """A test run's target: its first test label or test path (runtests.py auth_tests, pytest tests/x.py::T)."""
    skip = False
    for index, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg.startswith("-"):
            following = args[index + 1] if index + 1 < len(args) else ""
            skip = arg in _TEST_OPTIONS_WITH_VALUE or (arg in ("-v", "--verbosity") and following.isdigit())
            continue
        if arg == "test" or "=" in arg:
            continue
        label = _strip_cwd(arg.split("::", 1)[0])
        if re.match(r"^[\w./\-]+$", label):
            role = target_role(label) if ("/" in label or label.endswith(".py")) else "test"
            placeholder = "{{test_label}}" if "/" not in label and not label.endswith(".py") else generalise(label)[0]
            return Action("test", program, label, placeholder, role)
    return Action("test", program)


def _classify_part(part: str, bodies: list[str]) -> Action:
    action = _classify_simple_command(part)
    if isinstance(action, str):
        # python - <<EOF … EOF / python3 <<EOF: the heredoc is the program
        return Action("edit" if _WRITE_IN_CODE_RE.search("\n".join(bodies)) else "run", action)
    return action


@lru_cache(maxsize=8192)
def _classify_simple_command(part: str) -> Action | str:
    """The action of one simple command, or, when a python reads its program from a heredoc, the
    program's name (the command's heredoc bodies decide: _classify_part). Cached apart from the
    whole command: the same parts recur in different commands (cd /testbed, cat <<'EOF' > x.py)."""
    if "FINAL_OUTPUT" in part and any(marker in part for marker in SUBMIT_MARKERS):  # both markers hold it
        return Action("submit", "submit")
    tokens = _tokens(part)
    if ">" in part or "<" in part:  # every redirect token holds one (the words are the part's characters less quotes)
        redirect = _strip_cwd(_redirect_target(tokens))
        tokens = [t for t in tokens if not t.startswith(("<<", ">", "2>", "1>", "&>")) and t not in ("<", "2>&1")]
    else:
        redirect = ""
    program_path, args = _program(tokens)
    if not program_path:
        return Action("other", "")
    program = program_path.rsplit("/", 1)[-1]
    lower = program.lower()
    paths = _paths(args)

    def act(activity: str, path: str = "") -> Action:
        placeholder, role = generalise(path) if path else ("", "")
        return Action(activity, program, path, placeholder, role)

    if (
        redirect
        and redirect not in ("/dev/null",)
        and lower in ("cat", "echo", "printf", "tee", "python", "python3", "sed", "awk", "git", "head", "tail")
    ):
        # cat > file <<EOF, echo … > file, python gen.py > out.py: a write
        if lower in ("cat", "echo", "printf", "tee") or (
            _EXT_RE.search(redirect) and not redirect.endswith((".log", ".txt", ".out"))
        ):
            return act("edit", redirect)
    if lower == "sed":
        if any(a.startswith("-i") or a == "--in-place" for a in args):
            return act("edit", paths[-1] if paths else "")
        return act("read", paths[-1] if paths else "")
    if lower == "perl" and any(a.startswith("-pi") or a == "-i" for a in args):
        return act("edit", paths[-1] if paths else "")
    if lower in _SEARCH:
        file_paths = [p for p in paths if not _LABEL_RE.match(p) or "/" in p]
        return act("search", file_paths[0] if file_paths else "")
    if lower in _READ:
        return act("read", paths[0] if paths else "")
    if lower in _EDIT:
        return act("edit", paths[-1] if paths else "")
    if lower == "git":
        sub = next((a for a in args if not a.startswith("-")), "")
        if sub == "apply" or sub == "am":
            return act("edit", paths[0] if paths else "")
        if sub == "grep":
            return act("search")
        if sub in ("checkout", "restore") and "--" in args:
            return act("edit", paths[-1] if paths else "")
        return act("vcs")
    if lower in _TEST or lower.startswith(("pytest", "runtests")):
        return _test_action(program, args)
    if lower.startswith("python") or lower in ("pypy", "pypy3"):
        if "-m" in args:
            module = args[args.index("-m") + 1] if args.index("-m") + 1 < len(args) else ""
            if module in ("pytest", "unittest", "nose", "tox", "django.test") or module.startswith("pytest"):
                return _test_action(program, args[args.index("-m") + 2 :])
            if module in ("pip", "build", "ensurepip", "venv", "setuptools"):
                return act("build")
            if module == "django" and "test" in args:
                return _test_action(program, args[args.index("test") + 1 :])
            return act("run", module)
        if "-c" in args:
            code = args[args.index("-c") + 1] if args.index("-c") + 1 < len(args) else ""
            return act("edit" if _WRITE_IN_CODE_RE.search(code) else "run")
        if "--version" in args or "-V" in args:
            return act("environment")
        script = next((a for a in args if not a.startswith("-")), "")
        script_name = script.rsplit("/", 1)[-1]
        if script in ("", "-"):
            return program  # the heredoc is the program: _classify_part reads it
        if script_name in ("runtests.py",) or (script_name == "manage.py" and "test" in args):
            return _test_action(program, args[args.index(script) + 1 :])
        if script_name == "setup.py":
            return act("build", _strip_cwd(script))
        if script_name.startswith("test") and target_role(_strip_cwd(script)) == "test":
            return act("test", _strip_cwd(script))
        return act("run", _strip_cwd(script))
    if lower in _BUILD:
        if lower in ("pip", "pip3") and args[:1] and args[0] in ("list", "show", "freeze"):
            return act("environment")
        return act("build")
    if lower in ("bash", "sh", "zsh") or lower.endswith(".sh"):
        script = (
            _strip_cwd(program_path) if lower.endswith(".sh") else next((a for a in args if not a.startswith("-")), "")
        )
        if "test" in script.rsplit("/", 1)[-1].lower():
            return act("test", _strip_cwd(script))
        return act("run", _strip_cwd(script) if script else "")
    if lower in _RUN or lower.endswith(".py"):
        return act("run", _strip_cwd(program_path) if lower.endswith(".py") else (paths[0] if paths else ""))
    if lower in _ENV:
        return act("environment")
    if lower in ("submit", "finish"):
        return Action("submit", "submit")
    return act("other")


@lru_cache(maxsize=8192)
def classify_command(command: str) -> Action:
    """The activity of one shell command (possibly compound): the strongest class of its parts.
    Cached: agents repeat their commands (`git diff`, the same test run) across sessions."""
    text, bodies = strip_heredocs((command or "").replace("\\\n", " "))
    best: Action | None = None
    first_with_path: Action | None = None
    for part in split_command(text):
        action = _classify_part(part, bodies)
        if action.path and first_with_path is None:
            first_with_path = action
        if (
            best is None
            or _STRENGTH[action.activity] > _STRENGTH[best.activity]
            or (action.activity == best.activity and not best.path and action.path)
        ):
            best = action
    if best is None:
        return Action("other", "")
    if not best.path and first_with_path is not None and best.activity in ("search", "read"):
        # cat file | grep pattern: the grep searches the file the cat read
        return Action(best.activity, best.program, first_with_path.path, first_with_path.target, first_with_path.role)
    return best


def clear_caches() -> None:
    """Empties the classifier's per-process caches (the commands, their parts, the paths' roles), as
    in a new process: the benchmarks time an import that way."""
    for cached in (classify_command, _classify_simple_command, _token_path, generalise, target_role):
        cached.cache_clear()


def classify_tool(tool: str, target: str = "", command: str = "") -> Action:
    """The activity of a named tool call of a trace hook (``Read`` on a path, ``Bash`` with a command)."""
    name = (tool or "").strip()
    lower = name.lower()
    if command and (lower in SHELL_TOOLS or not lower):
        action = classify_command(command)
        if target and not action.path:
            placeholder, role = generalise(_strip_cwd(target))
            return Action(action.activity, action.program, _strip_cwd(target), placeholder, role)
        return action
    if not name and not command:
        return Action("other", "")
    activity = TOOL_ACTIVITIES.get(lower)
    if activity is None:
        # a command name given as the tool: "pytest", "git", "grep"
        action = classify_command(" ".join(filter(None, [name, shlex.quote(target) if target else ""])))
        activity = action.activity
    path = _strip_cwd(target) if target else ""
    placeholder, role = generalise(path) if path else ("", "")
    return Action(activity, name, path, placeholder, role)


def other_share(actions: Iterable[Action]) -> float:
    actions = list(actions)
    return sum(1 for a in actions if a.activity == "other") / len(actions) if actions else 0.0
