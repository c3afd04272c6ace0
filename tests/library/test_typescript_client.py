"""The TypeScript client (clients/typescript) against a live server of the app, with node's test
runner: the set with its ETag and the last good set when the server is unreachable, server-side
selection giving the ids and block the select endpoint gives here, session reports stored by the
real ingest endpoint, the Vercel AI SDK adapter with the real `ai` package and its mock model, and
the golden rendering files that clients/python/tests checks too. Hypothesis fuzzes both renderers
with the same records; `npm pack` must give a package that installs and renders.

Marked `node`: without node (or without `npm ci` in clients/typescript, which `make test` runs)
the tests are skipped, and fail under REQUIRE_SERVICES=1."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import requests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_django.live_server_helper import LiveServer

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken
from library.serving import active_set as serving
from procmem_client.rendering import render_block, render_procedure
from tests.conftest import make_active

TS = Path(__file__).resolve().parents[2] / "clients" / "typescript"
pytestmark = pytest.mark.node

REFUND_TASK = "A customer wants a refund of 900 dollars, above my limit."
STATUS_TASK = "Where is my order? It has not arrived yet."


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=kwargs.pop("cwd", TS), capture_output=True, text=True, timeout=kwargs.pop("timeout", 300), **kwargs
    )


@pytest.fixture(scope="module")
def built(typescript_dist):
    """The compiled client (dist/), built from the sources by the devDependency `tsc` (once a run)."""
    return typescript_dist


@pytest.fixture
def server(transactional_db):
    serving.clear_cache()
    live = LiveServer("127.0.0.1:0")
    yield live
    live.stop()
    serving.clear_cache()


@pytest.mark.django_db(transaction=True, databases=["default", "readonly"])
def test_the_typescript_client_against_a_live_server(
    built, server, agent, candidate, other_procedure, admin_user, tmp_path
):
    # given: two ACTIVE procedures, a read and an ingest token, and what the select endpoint answers
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read", user=admin_user)[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest", user=admin_user)[1]
    headers = {"Authorization": f"Bearer {read}"}
    selections = []
    for task, intent in ((REFUND_TASK, None), (STATUS_TASK, "order_status"), (REFUND_TASK, "order_status")):
        # the first selection loads the model in the server: minutes on a loaded machine
        params = {"task": task, **({"intent": intent} if intent else {})}
        answer = requests.get(
            f"{server.url}/api/v1/agents/{agent.name}/select", params=params, headers=headers, timeout=300
        ).json()
        selections.append(
            {
                "task": task,
                "intent": intent,
                "injected": [p["id"] for p in answer["injected"]],
                "rendered": answer["rendered"],
            }
        )
    assert (
        selections[0]["injected"] == ["refund.over_limit"]
        and selections[1]["injected"] == ["order.status"]
        and selections[2]["injected"] == []
    )
    served = requests.get(f"{server.url}/api/v1/agents/{agent.name}/procedures", headers=headers, timeout=300).json()
    expect = tmp_path / "expect.json"
    expect.write_text(
        json.dumps(
            {
                "procedures": [[p["id"], p["version"]] for p in served["procedures"]],
                "selections": selections,
                "reportSessionId": "ts-client-1",
            }
        )
    )

    # when: node's test runner runs the client's tests against this server
    env = {
        **os.environ,
        "PROCMEM_URL": server.url,
        "PROCMEM_AGENT": agent.name,
        "PROCMEM_TOKEN": read,
        "PROCMEM_INGEST_TOKEN": ingest,
        "PROCMEM_EXPECT": str(expect),
    }
    completed = _run(["node", "--test", "test/golden.test.js", "test/client.test.js"], env=env)

    # then: every test ran and passed, and the reported session is stored with its injected version
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output[-6000:]
    assert "# fail 0" in output and "# skipped 0" in output and "# cancelled 0" in output, output[-3000:]
    # node leaves a skipped describe block out of the counts: the live tests must be among those that passed
    passed = int(re.search(r"^# pass (\d+)$", output, re.M).group(1))
    assert passed == int(re.search(r"^# tests (\d+)$", output, re.M).group(1)) >= 26, output[-3000:]
    stored = AgentSession.objects.get(agent=agent, session_id="ts-client-1")
    assert stored.injected == [{"id": "refund.over_limit", "version": 1}]
    assert stored.model == "mock-model" and stored.skeleton == ["lookupOrder"] and stored.resolved is True
    assert stored.instruction_chars == len("You are the support agent.\n\n" + selections[0]["rendered"])
    # reportOutcome, after the session was stored
    stored.refresh_from_db()
    assert stored.rating == 4.5
    assert stored.labels.get(source="csat_survey").closed_by_customer is True


_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_spaced = st.one_of(
    _text,
    st.builds(
        lambda pre, body, post: pre + body + post,
        st.sampled_from(["", " ", "\x1c", "\x85", "\u3000", "\ufeff", "\u00a0", "\t\n"]),
        _text,
        st.sampled_from(["", " ", "\x1f", "\u2029", "\ufeff", "."]),
    ),
)
_forbidden = st.one_of(
    _spaced,
    st.builds(
        lambda prefix, body: prefix + body,
        st.sampled_from(["Do not ", "don't ", "Don’t: ", "NEVER ", "never\u3000", "do\x1cnot: ", "Never:"]),
        _text,
    ),
)
_record = st.fixed_dictionaries(
    {"id": st.from_regex(r"[a-z][a-z0-9_]{0,8}\.[a-z_]{1,8}", fullmatch=True), "version": st.integers(1, 999)},
    optional={
        "steps": st.lists(_spaced, max_size=5),
        "forbiddenActions": st.lists(_forbidden, max_size=4),
        "preconditions": st.lists(_spaced, max_size=3),
        "postconditions": st.lists(_spaced, max_size=3),
        "verifyCommand": _spaced,
        "evidence": st.fixed_dictionaries(
            {}, optional={"miningRunId": st.one_of(st.integers(0, 99), st.text(max_size=5))}
        ),
        "approvedBy": st.one_of(st.none(), _text),
        "approvedAt": st.one_of(st.none(), _text, st.just("2026-11-29T10:04:05Z")),
    },
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(_record, min_size=1, max_size=4), cap=st.one_of(st.none(), st.integers(0, 1500)))
def test_both_renderers_make_the_same_text_of_generated_records(built, tmp_path_factory, records, cap):
    cases = [{"render": "procedure", "records": [r]} for r in records] + [
        {"render": "block", "records": records, "maxChars": cap}
    ]
    path = tmp_path_factory.mktemp("fuzz") / "cases.json"
    path.write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    completed = _run(["node", "test-support/render-json.js", str(path)], timeout=60)
    assert completed.returncode == 0, completed.stderr
    rendered = json.loads(completed.stdout)
    for record, got in zip(records, rendered):
        assert got["text"] == render_procedure(record)
    block = render_block(records, max_chars=cap)
    assert rendered[-1] == {
        "text": block["text"],
        "chars": block["chars"],
        "tokens": block["tokens"],
        "included": [r["id"] for r in block["included"]],
    }


def test_npm_pack_yields_an_installable_package_without_runtime_dependencies(built, tmp_path):
    packed = _run(["npm", "pack", "--pack-destination", str(tmp_path), "--json"])
    assert packed.returncode == 0, packed.stderr[-3000:]
    tarball = tmp_path / json.loads(packed.stdout)[0]["filename"]
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
        manifest = json.load(archive.extractfile("package/package.json"))
    assert {
        "package/dist/index.js",
        "package/dist/index.d.ts",
        "package/dist/vercel-ai.js",
        "package/dist/vercel-ai.d.ts",
    } <= names
    assert not any(name.startswith(("package/src/", "package/test", "package/node_modules")) for name in names)
    assert "dependencies" not in manifest and "peerDependencies" not in manifest

    consumer = tmp_path / "consumer"
    consumer.mkdir()
    (consumer / "package.json").write_text(
        json.dumps({"name": "consumer", "version": "1.0.0", "type": "module", "private": True})
    )
    install = _run(["npm", "install", "--no-audit", "--no-fund", "--offline", str(tarball)], cwd=consumer)
    assert install.returncode == 0, install.stderr[-3000:]
    script = (
        "import { renderBlock, ProcmemClient, HEADER } from 'procmem-client';"
        "import { withProcmem } from 'procmem-client/vercel-ai';"
        "const block = renderBlock([{id: 'a.b', version: 2, steps: ['Do it.']}]);"
        "console.log(JSON.stringify({text: block.text, client: typeof ProcmemClient, adapter: typeof withProcmem, header: HEADER}));"
    )
    run = _run(["node", "--input-type=module", "-e", script], cwd=consumer)
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["text"] == render_block([{"id": "a.b", "version": 2, "steps": ["Do it."]}])["text"]
    assert answer["client"] == "function" and answer["adapter"] == "function"

    # typed: a TypeScript consumer type-checks against the package's .d.ts, and a wrong use does not
    (consumer / "tsconfig.json").write_text(
        json.dumps(
            {
                "compilerOptions": {
                    "module": "NodeNext",
                    "moduleResolution": "NodeNext",
                    "target": "ES2022",
                    "strict": True,
                    "noEmit": True,
                    "lib": ["ES2022", "DOM"],
                    "types": [],
                },
                "include": ["main.ts"],
            }
        )
    )
    (consumer / "main.ts").write_text(
        "import { ProcmemClient, type ProcedureRecord, type Selection } from 'procmem-client';\n"
        "import { withProcmem } from 'procmem-client/vercel-ai';\n"
        "const client = new ProcmemClient({ baseUrl: 'http://127.0.0.1:1', agent: 'a', token: 't', maxChars: null });\n"
        "export async function f(): Promise<string> {\n"
        "  const selection: Selection = await client.select({ task: 'x', k: 3 });\n"
        "  const first: ProcedureRecord | undefined = selection.injected[0];\n"
        "  const params = await withProcmem(client, { prompt: 'x', system: 'base', temperature: 0 });\n"
        "  return params.system + (first?.id ?? '') + String(params.temperature);\n"
        "}\n"
    )
    tsc = str(TS / "node_modules" / "typescript" / "bin" / "tsc")
    checked = _run(["node", tsc, "-p", "tsconfig.json"], cwd=consumer)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (consumer / "main.ts").write_text(
        "import { ProcmemClient } from 'procmem-client';\nnew ProcmemClient({ baseUrl: 'x', agent: 'a' });\n"
    )
    wrong = _run(["node", tsc, "-p", "tsconfig.json"], cwd=consumer)
    assert wrong.returncode != 0 and "token" in wrong.stdout
