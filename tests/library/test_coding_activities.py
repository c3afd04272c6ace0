"""Activity classes and generalised targets of coding agents' commands (library/coding/activities.py)."""

import json
import re
from collections import Counter

import pytest

from library.coding.activities import (
    ACTIVITIES,
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
