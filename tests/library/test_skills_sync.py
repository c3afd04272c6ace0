"""`procmem skills sync DIR` (procmem_client/skills_sync.py) against a live server (gunicorn): the
served skills written with a lock file, the folder passing the reference validator (npm skills-ref),
updates and removals as the served set changes, folders procmem did not write left alone, `--check`
exiting 1 on any difference, and the per-skill fetch when the active set cannot render a skill."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from library import services
from library.api.tokens import token_create
from library.models import ApiToken
from procmem_client.skills_sync import LOCK_FILE, Served, SyncError, plan_and_apply, read_index, read_lock
from tests.conftest import REPO, make_active, propose_next_version
from tests.skills_support import skills_ref_cli, skills_ref_errors


def skills_sync(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """`procmem skills sync …` as a CI step runs it: its own process, the environment variables."""
    environment = {
        **os.environ,
        **env,
        "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO / "clients" / "python"), os.environ.get("PYTHONPATH", "")])
        ),
    }
    return subprocess.run(
        [sys.executable, "-m", "procmem_client.check_cli", "skills", "sync", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=environment,
    )


def tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.mark.node
def test_sync_writes_the_served_skills_keeps_them_current_and_leaves_other_folders_alone(
    gunicorn_server, agent, candidate, other_procedure, intent, proposer, admin_user, tmp_path
):
    # given: two ACTIVE procedures, a read token, and a skills folder with a skill of the team's own
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="ci", user=admin_user)[1]
    env = {"PROCMEM_URL": gunicorn_server, "PROCMEM_AGENT": agent.name, "PROCMEM_TOKEN": token}
    skills = tmp_path / ".claude" / "skills"
    own = skills / "our-own-skill"
    own.mkdir(parents=True)
    (own / "SKILL.md").write_text("---\nname: our-own-skill\ndescription: Ours. Use it when asked.\n---\nBody\n")

    # when: a first sync
    first = skills_sync(str(skills), env=env)
    # then: both skills, the lock, and the team's own folder untouched
    assert first.returncode == 0, first.stdout + first.stderr
    assert "WRITE     order-status v1: new" in first.stdout and "WRITE     refund-over-limit v1: new" in first.stdout
    assert sorted(p.name for p in skills.iterdir()) == sorted(
        [LOCK_FILE, "order-status", "our-own-skill", "refund-over-limit"]
    )
    assert (own / "SKILL.md").read_text().startswith("---\nname: our-own-skill")
    lock = json.loads((skills / LOCK_FILE).read_text())
    assert lock["skills"]["refund-over-limit"]["id"] == "refund.over_limit"
    assert lock["skills"]["refund-over-limit"]["version"] == 1
    import requests

    auth = {"Authorization": f"Bearer {token}"}
    answer = requests.get(f"{gunicorn_server}/.well-known/agent-skills/index.json", headers=auth)
    index = json.loads(answer.content)
    assert {e["name"]: e["digest"] for e in index["skills"]} == {
        name: entry["digest"] for name, entry in lock["skills"].items()
    }
    # the lock names the versioned index it synced from, relative to the server, and it serves that set
    first_pinned = lock["indexUrl"]
    assert first_pinned == f"/.well-known/agent-skills/sets/{answer.headers['ETag'].strip(chr(34))}/index.json"
    assert lock["lockVersion"] == 1 and list(lock) == ["generatedBy", "indexUrl", "lockVersion", "skills"]
    pinned = requests.get(f"{gunicorn_server}{first_pinned}", headers=auth)
    assert pinned.status_code == 200
    assert [e["digest"] for e in pinned.json()["skills"]] == [e["digest"] for e in index["skills"]]
    # the folder procmem wrote passes the reference validator, by its command line and its library
    assert skills_ref_cli(skills / "refund-over-limit").returncode == 0
    folders = [skills / "order-status", skills / "refund-over-limit"]
    assert skills_ref_errors(folders) == {str(f): [] for f in folders}
    # in sync: --check passes and a second sync changes nothing
    before = tree(skills)
    assert skills_sync(str(skills), "--check", env=env).returncode == 0
    again = skills_sync(str(skills), env=env)
    assert again.returncode == 0 and "WRITE" not in again.stdout and tree(skills) == before

    # when: a local edit, then a new version and a retirement on the server
    (skills / "order-status" / "SKILL.md").write_text("edited by hand")
    edited = skills_sync(str(skills), "--check", env=env)
    assert edited.returncode == 1 and "DIFFERS   order-status v1: changed on disk" in edited.stdout
    v2 = propose_next_version(candidate, proposer)
    make_active(v2, admin_user)
    services.version_retire(version=other_procedure.versions.get(number=1), user=admin_user, reason="no longer needed")
    check = skills_sync(str(skills), "--check", env=env)
    assert check.returncode == 1
    assert "DIFFERS   refund-over-limit v2: v1 -> v2" in check.stdout
    assert "DIFFERS   order-status: no longer served" in check.stdout
    assert tree(skills) == {**before, "order-status/SKILL.md": b"edited by hand"}  # --check wrote nothing
    synced = skills_sync(str(skills), env=env)
    # then: v2 written, the retired skill removed, the team's folder untouched, in sync again
    assert synced.returncode == 0, synced.stdout + synced.stderr
    assert sorted(p.name for p in skills.iterdir()) == sorted([LOCK_FILE, "our-own-skill", "refund-over-limit"])
    assert 'procmem-version: "2"' in (skills / "refund-over-limit" / "SKILL.md").read_text()
    assert "5. Record the approval id in the ticket." in (skills / "refund-over-limit" / "SKILL.md").read_text()
    lock = json.loads((skills / LOCK_FILE).read_text())
    assert list(lock["skills"]) == ["refund-over-limit"]
    # another set, another pinned index; the first is no longer served
    assert lock["indexUrl"] != first_pinned and lock["indexUrl"].startswith("/.well-known/agent-skills/sets/")
    assert requests.get(f"{gunicorn_server}{lock['indexUrl']}", headers=auth).status_code == 200
    assert requests.get(f"{gunicorn_server}{first_pinned}", headers=auth).status_code == 404
    assert skills_sync(str(skills), "--check", env=env).returncode == 0
    assert skills_ref_errors([skills / "refund-over-limit"]) == {str(skills / "refund-over-limit"): []}

    # a folder of a served name that procmem did not write, and a stray file in one of procmem's:
    # both left alone and reported (exit 1), the other skills still written
    clash = tmp_path / "other"
    (clash / "refund-over-limit").mkdir(parents=True)
    (clash / "refund-over-limit" / "notes.txt").write_text("mine")
    left = skills_sync(str(clash), env=env)
    assert left.returncode == 1 and "refund-over-limit: " in left.stdout and "procmem did not write it" in left.stdout
    assert tree(clash / "refund-over-limit") == {"notes.txt": b"mine"}
    (skills / "refund-over-limit" / "mine.md").write_text("a note of ours")
    stray = skills_sync(str(skills), env=env)
    assert stray.returncode == 1 and "holds files procmem did not write" in stray.stdout
    assert (skills / "refund-over-limit" / "mine.md").exists()


def test_sync_without_the_agent_name_fetches_each_skill_from_its_url(
    gunicorn_server, agent, candidate, other_procedure, admin_user, tmp_path
):
    make_active(candidate, admin_user)
    make_active(other_procedure.versions.get(number=1), admin_user)
    token = token_create(agent=agent, scope=ApiToken.Scope.READ, name="ci", user=admin_user)[1]
    with_name, without = tmp_path / "a", tmp_path / "b"
    assert (
        skills_sync(
            str(with_name), env={"PROCMEM_URL": gunicorn_server, "PROCMEM_AGENT": agent.name, "PROCMEM_TOKEN": token}
        ).returncode
        == 0
    )
    done = skills_sync(str(without), "--url", gunicorn_server, "--token", token, env={"PROCMEM_AGENT": ""})
    assert done.returncode == 0, done.stdout + done.stderr
    assert tree(with_name) == tree(without)


def test_sync_refuses_a_bad_token_or_server_with_exit_2(gunicorn_server, agent, tmp_path):
    bad = skills_sync(str(tmp_path / "s"), "--url", gunicorn_server, "--token", "pm_wrong", env={})
    assert bad.returncode == 2 and "answered 401" in bad.stderr
    assert not (tmp_path / "s").exists()
    missing = skills_sync(str(tmp_path / "s"), env={"PROCMEM_URL": "", "PROCMEM_TOKEN": ""})
    assert missing.returncode == 2 and "needs --url and --token" in missing.stderr


# ------------------------------------------------------------------------- the index as sync reads it


def test_an_index_entry_with_a_path_outside_its_folder_is_refused():
    entry = {
        "name": "a-b",
        "type": "skill-md",
        "description": "d",
        "url": "skills/a-b/v1/SKILL.md",
        "digest": "sha256:" + "0" * 64,
        "procmemFiles": {"SKILL.md": "sha256:" + "0" * 64, "../../etc/passwd": "sha256:" + "0" * 64},
    }
    index = {"$schema": "https://schemas.agentskills.io/discovery/0.2.0/schema.json", "skills": [entry]}
    with pytest.raises(SyncError, match="outside the folder"):
        read_index(index, index_url="http://x/.well-known/agent-skills/index.json")
    entry["procmemFiles"] = {"SKILL.md": "sha256:" + "0" * 64}
    entry["name"] = "../a"
    with pytest.raises(SyncError, match="no valid skill name"):
        read_index(index, index_url="http://x/.well-known/agent-skills/index.json")


def test_a_symlink_where_a_skill_would_go_is_never_followed(tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir()
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "a-b").symlink_to(target, target_is_directory=True)
    (skills / LOCK_FILE).write_text(
        json.dumps(
            {
                "skills": {
                    "a-b": {
                        "id": "a.b",
                        "version": 1,
                        "digest": "sha256:" + "1" * 64,
                        "files": {"SKILL.md": "sha256:" + "1" * 64},
                    }
                }
            }
        )
    )
    served = [
        Served(
            name="a-b",
            procedure_id="a.b",
            version=2,
            digest="sha256:" + "2" * 64,
            files={"SKILL.md": "sha256:" + "2" * 64},
            url="",
        )
    ]
    report = plan_and_apply(skills, served, files_for=lambda _: pytest.fail("nothing may be written"), check=False)
    assert report.differs and "not touched" in report.lines[0]
    assert (skills / "a-b").is_symlink() and list(target.iterdir()) == []


def test_a_lock_without_the_pinned_index_is_read_and_gains_it_and_check_ignores_it(tmp_path):
    """lockVersion 1 as written before `indexUrl`: read as it is, `--check` still in sync (CI must
    not fail on a client upgrade), and the next sync adds the URL without touching the folder."""
    # given: a folder synced by an earlier client, its lock without indexUrl
    skills = tmp_path / "skills"
    (skills / "a-b").mkdir(parents=True)
    (skills / "a-b" / "SKILL.md").write_bytes(b"body")
    digest = "sha256:" + hashlib.sha256(b"body").hexdigest()
    entry = {"id": "a.b", "version": 1, "digest": digest, "files": {"SKILL.md": digest}}
    (skills / LOCK_FILE).write_text(
        json.dumps({"generatedBy": "procmem skills sync", "lockVersion": 1, "skills": {"a-b": entry}})
    )
    served = [Served(name="a-b", procedure_id="a.b", version=1, digest=digest, files={"SKILL.md": digest}, url="")]
    pinned = "/.well-known/agent-skills/sets/" + "c" * 40 + "/index.json"
    nothing = lambda _: pytest.fail("nothing may be written")  # noqa: E731
    # when / then: --check is in sync and writes nothing
    check = plan_and_apply(skills, served, files_for=nothing, check=True, index_url=pinned)
    assert not check.differs and "indexUrl" not in (skills / LOCK_FILE).read_text()
    # a sync records the index, the skill's folder untouched
    synced = plan_and_apply(skills, served, files_for=nothing, check=False, index_url=pinned)
    lock = json.loads((skills / LOCK_FILE).read_text())
    assert not synced.differs and lock["indexUrl"] == pinned and lock["skills"] == {"a-b": entry}
    assert lock["lockVersion"] == 1 and read_lock(skills) == {"a-b": entry}
    # a field a later client adds is ignored as well
    (skills / LOCK_FILE).write_text(json.dumps({**lock, "somethingNew": [1]}))
    assert read_lock(skills) == {"a-b": entry}


def test_the_pinned_index_is_written_relative_to_the_servers_address():
    from procmem_client.skills_sync import pinned_index_url

    base = "https://procmem.example.com/under"
    index = f"{base}/.well-known/agent-skills/index.json?environment=staging"
    location = {"Content-Location": "sets/" + "d" * 40 + "/index.json?environment=staging"}
    assert pinned_index_url(index, location, base=base) == (
        "/.well-known/agent-skills/sets/" + "d" * 40 + "/index.json?environment=staging"
    )
    assert pinned_index_url(index, {}, base=base) is None  # a server before versioned indexes
