"""The demo's filesystem broker (procmem_site/celery_fs.py): a worker never reads a message before it
is whole. kombu's own transport created the file and then wrote it; `make demo`'s worker read one
empty and died with "Unrecoverable error: JSONDecodeError", stopping the demo."""

from __future__ import annotations

import os
from queue import Empty

import pytest
from kombu import Connection

from procmem_site import celery_fs


@pytest.fixture
def channel(tmp_path):
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path), "store_processed": False}
    with Connection("filesystem://", transport="procmem_site.celery_fs:Transport", transport_options=options) as conn:
        yield conn.default_channel


def test_a_message_is_invisible_until_written_whole(channel, tmp_path, monkeypatch):
    seen_before_rename = []
    rename = os.replace

    def replace(src, dst):
        # the moment between the write and the rename: a worker polling now finds nothing
        with pytest.raises(Empty):
            channel._get("celery")
        seen_before_rename.append(sorted(os.listdir(tmp_path)))
        rename(src, dst)

    monkeypatch.setattr(celery_fs.os, "replace", replace)
    channel._put("celery", {"body": "x" * 10_000, "headers": {}})
    assert seen_before_rename and all(name.startswith(".") for name in seen_before_rename[0])
    assert channel._get("celery")["body"] == "x" * 10_000
    assert os.listdir(tmp_path) == []


def test_the_demo_settings_send_and_receive_through_it(tmp_path):
    from tests.test_settings_env import run_manage

    result = run_manage(
        "shell",
        "-c",
        "from procmem_site.celery import app; c = app.connection_for_write(); print(type(c.transport).__module__)",
        env={"DEBUG": "1", "PROCMEM_VAR_DIR": str(tmp_path), "DATABASE_URL": "", "CELERY_BROKER_URL": ""},
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "procmem_site.celery_fs"
