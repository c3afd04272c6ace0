"""Activity classes and generalised targets of coding agents' commands (library/coding/activities.py)."""

import json
import re
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from library.coding.activities import (
    ACTIVITIES,
    _tokens,
    classify_command,
    classify_tool,
    generalise,
    other_share,
    split_command,
    strip_heredocs,
)


@pytest.mark.parametrize(
    "command, activity, path, target",
    [
        ('grep -rn "class Foo" django/forms/', "search", "django/forms/", "{{directory}}"),
        ("find . -name '*.py' | head", "search", "", ""),
        ("rg validators", "search", "", ""),
        ("cat django/contrib/auth/validators.py", "read", "django/contrib/auth/validators.py", "{{source_file}}"),
        ("sed -n '10,40p' django/db/models/base.py", "read", "django/db/models/base.py", "{{source_file}}"),
        (
            "nl -ba tests/auth_tests/test_validators.py | sed -n '1,20p'",
            "read",
            "tests/auth_tests/test_validators.py",
            "{{test_file}}",
        ),
        ("sed -i 's/a/b/' django/db/models/base.py", "edit", "django/db/models/base.py", "{{source_file}}"),
        ("cat <<'EOF' > reproduce.py\nimport django\nprint(1) && rm -rf /\nEOF", "edit", "reproduce.py", "{{script}}"),
        (
            "cat <<'EOF' >> tests/forms_tests/tests.py\n    def test_x(self): pass\nEOF",
            "edit",
            "tests/forms_tests/tests.py",
            "{{test_file}}",
        ),
        ("python - <<'EOF'\nopen('django/x.py', 'w').write('y')\nEOF", "edit", "", ""),
        ("git apply fix.patch", "edit", "fix.patch", "{{source_file}}"),
        ("cd /testbed && python reproduce.py", "run", "reproduce.py", "{{script}}"),
        ("python -c 'import django; print(django.VERSION)'", "run", "", ""),
        ("./tests/runtests.py auth_tests.test_validators", "test", "auth_tests.test_validators", "{{test_label}}"),
        ("cd tests && python runtests.py --settings=test_sqlite model_forms", "test", "model_forms", "{{test_label}}"),
        ("python -m pytest tests/test_x.py::TestX -q", "test", "tests/test_x.py", "{{test_file}}"),
        ("python manage.py test myapp", "test", "myapp", "{{test_label}}"),
        ("tox -e py311", "test", "", ""),
        ("pip install -e .", "build", "", ""),
        ("git diff", "vcs", "", ""),
        ("git status && git log -3", "vcs", "", ""),
        ("cd /testbed", "environment", "", ""),
        ("export DJANGO_SETTINGS_MODULE=x && which python", "environment", "", ""),
        ("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git add -A && git diff --cached", "submit", "", ""),
        ("timeout 30 env PYTHONPATH=. python reproduce.py", "run", "reproduce.py", "{{script}}"),
        ("frobnicate --all", "other", "", ""),
    ],
)
def test_command_class_and_generalised_target(command, activity, path, target):
    action = classify_command(command)
    assert (action.activity, action.path, action.target) == (activity, path, target)


def test_a_heredoc_body_is_not_split_into_commands():
    text, bodies = strip_heredocs("cat > a.py <<'EOF'\nx = 1; rm -rf /\nEOF\npython a.py")
    assert split_command(text) == ["cat > a.py <<'EOF'", "python a.py"]
    assert bodies == ["x = 1; rm -rf /"]


def test_operators_inside_quotes_do_not_split():
    assert split_command("grep -n 'a && b | c' x.py && cat y.py") == ["grep -n 'a && b | c' x.py", "cat y.py"]


@pytest.mark.parametrize(
    "path, placeholder, role",
    [
        ("django/contrib/auth/validators.py", "{{source_file}}", "source"),
        ("tests/auth_tests/test_validators.py", "{{test_file}}", "test"),
        ("setup.cfg", "{{config_file}}", "config"),
        ("docs/ref/forms/fields.txt", "{{doc_file}}", "docs"),
        ("reproduce_issue.py", "{{script}}", "script"),
        ("django/forms", "{{directory}}", "directory"),
        ("auth_tests.test_validators", "{{test_label}}", "test"),
        ("django.db.models", "{{module}}", "source"),
    ],
)
def test_targets_generalise_to_a_placeholder_with_their_role(path, placeholder, role):
    assert generalise(path) == (placeholder, role)


@pytest.mark.parametrize(
    "tool, target, command, activity, step",
    [
        ("Read", "django/forms/models.py", "", "read", "read:source"),
        ("Edit", "tests/model_forms/tests.py", "", "edit", "edit:test"),
        ("Grep", "", "", "search", "search"),
        ("Bash", "", "python -m pytest tests/test_x.py", "test", "test"),
        ("pytest", "tests/test_x.py", "", "test", "test"),
        ("git", "", "", "vcs", "vcs"),
        ("mystery_tool", "", "", "other", "other"),
    ],
)
def test_named_tools_of_trace_hooks(tool, target, command, activity, step):
    action = classify_tool(tool, target, command)
    assert action.activity == activity and action.step() == step


def test_every_command_of_the_231_real_sessions_gets_a_class_and_other_stays_below_five_percent(swebench_dir):
    actions = []
    for path in sorted(swebench_dir.glob("*/*.traj.json")):
        for message in json.loads(path.read_text())["messages"]:
            if message["role"] == "assistant":
                blocks = re.findall(r"```bash\s*\n(.*?)\n```", message["content"], re.S)
                if len(blocks) == 1:
                    actions.append(classify_command(blocks[0]))
    counts = Counter(a.activity for a in actions)
    assert len(actions) > 8000
    assert set(counts) <= set(ACTIVITIES)
    assert other_share(actions) < 0.05
    # the work is there: every session class of a coding agent shows up in quantity
    for activity in ("search", "read", "edit", "run", "test", "submit"):
        assert counts[activity] >= 200, (activity, counts)


@pytest.mark.parametrize(
    "command, parts",
    [
        ("a && b || c; d | e\nf", ["a", "b", "c", "d", "e", "f"]),
        ("a &&& b", ["a", "& b"]),  # a lone "&" (background) does not split
        ("sleep 1 & wait", ["sleep 1 & wait"]),
        ('echo "x \\" && y" && z', ['echo "x \\" && y"', "z"]),  # an escaped quote inside double quotes
        ("echo 'it\\' && b", ["echo 'it\\'", "b"]),  # no escapes inside single quotes
        ("echo a\\;b; c", ["echo a\\;b", "c"]),  # an escaped operator
        ("echo 'unclosed && still quoted", ["echo 'unclosed && still quoted"]),
        ('echo "unclosed \\', ['echo "unclosed \\']),
        ("trailing \\", ["trailing \\"]),
        (" ;; && ", []),
    ],
)
def test_split_command_at_operators_outside_quotes(command, parts):
    assert split_command(command) == parts


# ------------------------------------------------------------------ the fast paths classify as before (issue 38)

# The tokenizer and the splitter as they were before their fast paths (2026-12-07): one character per
# step of the pattern, every part through the patterns. The fast paths must give the same words and parts.
_PLAIN_TOKEN_RE = re.compile(r"""(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s'"\\])+""")
_PLAIN_UNQUOTE_RE = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""")
_PLAIN_SIMPLE_COMMAND_RE = re.compile(
    r"""((?:'[^']*'?|"(?:[^"\\]|\\[\s\S]?)*"?|\\[\s\S]?|[^'"\\;\n|&]|&(?!&))*)(?:&&|\|\|?|[;\n]|\Z)"""
)


def _plain_tokens(part):
    words = []
    for match in _PLAIN_TOKEN_RE.finditer(part):
        word = match.group(0)
        if word.startswith("#"):
            break
        words.append(
            _PLAIN_UNQUOTE_RE.sub(
                lambda m: (
                    m.group(1) if m.group(1) is not None else (m.group(2) if m.group(2) is not None else m.group(3))
                ),
                word,
            )
        )
    return words


def _plain_split(command):
    parts = (match.group(1).strip() for match in _PLAIN_SIMPLE_COMMAND_RE.finditer(command))
    return [part for part in parts if part]


# shell's special characters, letters, and the spaces str.split and the pattern's \s must agree on
_SHELLISH = st.text(
    alphabet=st.sampled_from(
        list("ab-./=#'\"\\;|&<>\n\t $") + ["\x0b", "\x0c", "\r", "\x1c", "\x85", "\xa0", "\u2003", "\u3000", "é"]
    ),
    max_size=40,
)


@settings(max_examples=3000, deadline=None)
@given(_SHELLISH)
def test_the_tokenizer_and_the_splitter_give_what_the_plain_patterns_give(text):
    assert _tokens(text) == _plain_tokens(text)
    assert split_command(text) == _plain_split(text)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_the_tokenizer_and_the_splitter_agree_with_the_plain_patterns_on_any_text(text):
    assert _tokens(text) == _plain_tokens(text)
    assert split_command(text) == _plain_split(text)


def test_an_unclosed_quote_in_a_long_command_is_read_in_linear_time():
    import time

    command = "echo " + "a" * 20000 + ' "' + "b" * 20000 + " && ls '" + "c" * 20000
    started = time.perf_counter()
    assert split_command(command) == _plain_split(command)
    assert _tokens(command) == _plain_tokens(command)
    assert time.perf_counter() - started < 2


# What every command of the 371 real sessions (231 Django, 140 of six other repositories) classified
# as on 2026-12-07 (the class, program, path, target, role and step of each, in archive order), before
# the tokenizer's and the splitter's fast paths: a change of any command's class changes it. Update it
# only with a change meant to classify differently, and say which commands changed.
REAL_COMMANDS_DIGEST = "b483f81f46e713c3"


def test_every_command_of_the_371_real_sessions_classifies_as_before():
    import hashlib
    import tarfile

    from library.ingest.formats.coding import _BASH_BLOCK_RE, _message_text

    from ..conftest import SWEBENCH_DIR, _missing, require_swebench

    require_swebench()
    archives = [
        SWEBENCH_DIR / "gemini-3-pro-django-trajs.tar.gz",
        SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz",
    ]
    if not archives[1].exists():
        _missing(f"{archives[1].name} not found in {SWEBENCH_DIR}")
    digest, commands = hashlib.sha256(), 0
    for path in archives:
        with tarfile.open(path) as archive:
            for member in archive:
                if not (member.isfile() and member.name.endswith(".json")):
                    continue
                for message in json.loads(archive.extractfile(member).read()).get("messages", []):
                    if isinstance(message, dict) and message.get("role") == "assistant":
                        for block in _BASH_BLOCK_RE.findall(_message_text(message.get("content"))):
                            action = classify_command(block)
                            commands += 1
                            digest.update(
                                json.dumps(
                                    [
                                        action.activity,
                                        action.program,
                                        action.path,
                                        action.target,
                                        action.role,
                                        action.step(),
                                    ]
                                ).encode()
                            )
    assert commands == 16158
    assert digest.hexdigest()[:16] == REAL_COMMANDS_DIGEST


def test_a_cached_part_still_reads_its_own_commands_heredoc():
    # the same simple command "python3 - <<'EOF'" is cached once; each command's own heredoc decides
    writes = classify_command("python3 - <<'EOF'\nopen('a.py', 'w').write('x')\nEOF")
    runs = classify_command("python3 - <<'EOF'\nprint(1)\nEOF")
    assert (writes.activity, writes.program, runs.activity, runs.program) == ("edit", "python3", "run", "python3")
