"""Agent Skills round trip in a real browser (Playwright driving Debian's Chromium): a reviewer
uploads a skill archive on the agent's page → the candidate page shows the imported skill, its
kept body and whether it triggers → an approver approves it → procmem serves it at the Agent
Skills discovery path → the served SKILL.md passes the reference validator (npm skills-ref, run with
node) → the installed `procmem skills sync` console script writes it into a skills folder with its
lock file, the folder passes skills-ref and `--check` answers in sync (and differs after a hand
edit) → imported back from that folder it changes nothing.

Screenshots land in test-artifacts/screenshots/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from guardian.shortcuts import assign_perm

from library.models import Agent, ProcedureVersion, Source, Status
from tests.conftest import REPO, make_passing_eval
from tests.e2e.conftest import sign_in
from tests.skills_support import skills_ref_errors

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True, databases=["default", "readonly"])]

SKILL = """---
name: refund-over-limit
description: Use it when the customer asks for a refund above the agent's own limit.
license: MIT
allowed-tools: lookupOrder createApproval
---
# Refunds over the limit

1. Look up the order with lookupOrder({{order_id}}).
2. Create an approval request with createApproval({{order_id}}).
Do not: promise a refund date before approval.

Background the team wrote down: refunds above the limit were paid twice in March.
"""


@pytest.mark.timeout(1200)  # loading the embedding model on a busy machine
def test_import_review_approve_serve_and_validate(live_server, page, screenshot, tmp_path, reviewers_group):
    from library import embeddings
    from library.api.tokens import token_create
    from library.skill_import.importing import skills_import_path

    agent = Agent.objects.create(name="support_agent", tools=["lookupOrder", "createApproval", "replyTemplates"])
    users = {}
    for name in ("proposer", "approver"):
        users[name] = get_user_model().objects.create_user(username=name, password=f"pw-{name}")
        users[name].groups.add(reviewers_group)
    assign_perm("library.approve_agent_procedures", users["approver"], agent)
    archive = tmp_path / "refund.skill"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("refund-over-limit/SKILL.md", SKILL)
        zf.writestr("refund-over-limit/references/limits.md", "# Limits\n")
    embeddings.embed_one("warm the model before the first page needs it")
    base = live_server.url

    # --- the reviewer uploads the skill on the agent's page --------------------------------------
    sign_in(page, base, "proposer", "pw-proposer")
    page.goto(f"{base}/ops/agents/support_agent/")
    page.click("text=Import skills")
    page.set_input_files("#id_archive", str(archive))
    page.click("#skills-import-form button[type=submit]")
    report = page.locator("#skills-import-report")
    assert "1 imported, 0 unchanged, 0 refused" in report.inner_text()
    screenshot(page, "01-imported")
    version = ProcedureVersion.objects.get(procedure__key="refund.over_limit")
    assert (version.status, version.source, version.proposed_by) == (
        Status.CANDIDATE,
        Source.IMPORTED,
        users["proposer"],
    )

    # --- the candidate page: the skill, the body kept whole, the trigger measure ----------------
    page.click(f"#skills-import-report a[href='/versions/{version.pk}/']")
    assert "Imported from skill refund-over-limit" in page.locator("#skill-import h2").inner_text()
    assert "paid twice in March" in page.locator("#skill-unmapped-body").inner_text()
    page.wait_for_selector("#trigger-figures")
    assert "nothing to measure it on" in page.locator("#trigger-figures").inner_text()
    assert page.locator("#trigger-when-warning").count() == 0  # the description says when
    screenshot(page, "02-candidate")
    # the proposer may not approve it
    assert page.locator("#approve-button").is_disabled()

    # --- the approver approves (the eval gate: a passing run on this exact content) -------------
    make_passing_eval(version)
    page.context.clear_cookies()
    sign_in(page, base, "approver", "pw-approver")
    page.goto(f"{base}/versions/{version.pk}/")
    page.click("#approve-button")
    page.wait_for_selector("#approve-confirm")
    page.check("#approve-confirm-check")
    page.fill("#approve-comment", "Imported from the team's skills repository; eval passed.")
    page.click("#approve-submit")
    page.wait_for_selector(".notice-ok")
    screenshot(page, "03-approved")
    version.refresh_from_db()
    assert (version.status, version.approved_by) == (Status.ACTIVE, users["approver"])

    # --- served at the discovery path; the served SKILL.md passes skills-ref ---------------------
    _, raw = token_create(agent=agent, scope="read", name="e2e")
    page.set_extra_http_headers({"Authorization": f"Bearer {raw}"})
    index = page.goto(f"{base}/.well-known/agent-skills/index.json")
    assert index.status == 200
    [entry] = index.json()["skills"]
    assert (entry["name"], entry["procmemId"], entry["procmemVersion"]) == ("refund-over-limit", "refund.over_limit", 1)
    served = page.goto(f"{base}/.well-known/agent-skills/{entry['url']}")
    assert served.status == 200
    text = served.text()
    assert "1. Look up the order with lookupOrder({{order_id}})." in text
    folder = tmp_path / "served" / "refund-over-limit"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    assert skills_ref_errors([folder]) == {str(folder): []}

    # --- the agent's repository: `procmem skills sync` writes it where agents load skills --------
    skills = tmp_path / "repo" / ".claude" / "skills"
    env = {"PROCMEM_URL": base, "PROCMEM_AGENT": agent.name, "PROCMEM_TOKEN": raw}
    synced = procmem_cli("skills", "sync", str(skills), env=env)
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert "WRITE     refund-over-limit v1: new" in synced.stdout
    assert sorted(p.name for p in skills.iterdir()) == ["procmem-skills.lock.json", "refund-over-limit"]
    written = skills / "refund-over-limit"
    assert (written / "SKILL.md").read_bytes() == text.encode("utf-8")  # the bytes the index's URL serves
    assert skills_ref_errors([written]) == {str(written): []}
    lock = json.loads((skills / "procmem-skills.lock.json").read_text(encoding="utf-8"))
    assert (lock["generatedBy"], lock["lockVersion"], list(lock["skills"])) == (
        "procmem skills sync",
        1,
        ["refund-over-limit"],
    )
    locked = lock["skills"]["refund-over-limit"]
    assert (locked["id"], locked["version"], locked["digest"]) == ("refund.over_limit", 1, entry["digest"])
    assert locked["files"] == entry["procmemFiles"]
    # --check: in sync now; a hand edit differs (exit 1) and writes nothing; a sync puts it back
    check = procmem_cli("skills", "sync", str(skills), "--check", env=env)
    assert (check.returncode, check.stdout.strip().splitlines()[-1]) == (0, f"procmem skills sync: {skills}: in sync")
    (written / "SKILL.md").write_text("edited by hand\n", encoding="utf-8")
    edited = procmem_cli("skills", "sync", str(skills), "--check", env=env)
    assert edited.returncode == 1 and "DIFFERS   refund-over-limit v1: changed on disk" in edited.stdout
    assert (written / "SKILL.md").read_text(encoding="utf-8") == "edited by hand\n"
    assert procmem_cli("skills", "sync", str(skills), env=env).returncode == 0
    assert procmem_cli("skills", "sync", str(skills), "--check", env=env).returncode == 0
    assert (written / "SKILL.md").read_bytes() == text.encode("utf-8")

    # --- and the synced skill imported back changes nothing -------------------------------------
    back = skills_import_path(agent=agent, path=skills)
    assert (
        back.created == []
        and back.errors == []
        and [label for _, label in back.unchanged] == ["support_agent/refund.over_limit v1"]
    )


def procmem_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """The `procmem` console script that `pip install procmem-client` puts beside the interpreter, run
    as a CI step runs it: its own process, the environment variables, this checkout's client first."""
    script = Path(sys.executable).parent / "procmem"
    assert script.exists(), f"{script} is missing: `make` installs clients/python (pip install -e) with its scripts"
    path = os.pathsep.join(filter(None, [str(REPO / "clients" / "python"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(
        [str(script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env, "PYTHONPATH": path},
        check=False,
    )
