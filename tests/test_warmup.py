"""A fresh web process loads the embedding model at start, not inside its first candidate page
(issue 30; procmem_site/warmup.py), and management commands never load it.

Each test starts a new Python process: the module a server imports (procmem_site.wsgi, as gunicorn
and runserver do), then the candidate page through that WSGI application, as a signed-in
reviewer, on the test database (committed rows, PostgreSQL). The process records every model load
(SentenceTransformer constructions) and says whether one happened during the request."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from .conftest import database_url, make_active

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[1]

FIRST_REQUEST = r"""
import io, json, sys
import sentence_transformers

loads = []
original = sentence_transformers.SentenceTransformer.__init__

def counted(self, *args, **kwargs):
    loads.append(args[0] if args else kwargs.get("model_name_or_path"))
    return original(self, *args, **kwargs)

sentence_transformers.SentenceTransformer.__init__ = counted
encodes = []
original_encode = sentence_transformers.SentenceTransformer.encode

def counted_encode(self, sentences, *args, **kwargs):
    encodes.append(sentences)
    return original_encode(self, sentences, *args, **kwargs)

sentence_transformers.SentenceTransformer.encode = counted_encode

from procmem_site.wsgi import application  # what gunicorn and runserver import
from procmem_site import warmup
from procmem_client import embeddings

warmup.wait_until_ready()  # the model loads in the background (the health check does not wait for it)

at_start, encodes_at_start = len(loads), len(encodes)
chosen = embeddings.backend()  # the configured backend; a routed one has two models
loaded_at_start = all(part._model is not None for part in getattr(chosen, "parts", [chosen]))
status = []
environ = {
    "REQUEST_METHOD": "GET", "PATH_INFO": sys.argv[1], "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
    "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1", "HTTP_COOKIE": sys.argv[2], "wsgi.input": io.BytesIO(),
    "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True,
    "wsgi.run_once": False, "wsgi.version": (1, 0), "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
}
body = b"".join(application(environ, lambda s, h, *a: status.append(s)))
print(json.dumps({
    "status": status[0], "loaded_at_start": loaded_at_start, "loads_at_start": at_start,
    "loads_in_request": len(loads) - at_start, "encodes_in_request": len(encodes) - encodes_at_start, "overlap_check_ran": b"overlap check is unavailable" not in body,
}))
"""


def _run(code: str, *args: str, **env_overrides: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.update(
        DATABASE_URL=database_url(),
        DJANGO_SETTINGS_MODULE="procmem_site.test_settings",
        READONLY_DATABASE_URL="",
        # these tests are about loading the models in a fresh process: no vectors kept by the run
        # (tests/conftest.py) may answer an embedding the warm-up or the first page asks for
        PROCMEM_TEST_EMBEDDING_CACHE="0",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH", "")])),
    )
    env.update(env_overrides)
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, cwd=REPO, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def candidate_page(transactional_db, candidate, other_procedure, admin_user, reviewer):
    """The candidate's page, with another ACTIVE procedure of the agent (so the overlap lint and the
    conflict check embed both appliesWhen texts), and the reviewer's session cookie."""
    make_active(other_procedure.versions.get(), admin_user)
    client = Client()
    client.force_login(reviewer)
    return (
        f"/versions/{candidate.pk}/",
        f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}",
    )


def test_a_fresh_process_loads_the_model_before_its_first_candidate_page(candidate_page):
    result = _run(FIRST_REQUEST, *candidate_page)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["status"].startswith("200") and seen["overlap_check_ran"], seen
    assert seen["loaded_at_start"] and seen["loads_at_start"] == 1
    assert seen["loads_in_request"] == 0
    # the ready line names the model among what was loaded (it loads in a thread after the rest)
    assert re.search(r"procmem web process ready: .*embedding model", result.stderr), result.stderr[-2000:]
    # the texts' vectors are stored by the first page that needs them: the next fresh process's
    # first page embeds nothing at all (it reads them, as a warm page does)
    again = json.loads(_run(FIRST_REQUEST, *candidate_page).stdout.strip().splitlines()[-1])
    assert again["status"].startswith("200") and again["loads_in_request"] == 0 and again["encodes_in_request"] == 0


def test_without_the_warm_up_the_first_candidate_page_loads_the_model(candidate_page):
    # the same measurement, switched off: it sees the load inside the request (so the test above
    # would catch a warm-up that no longer happens)
    result = _run(FIRST_REQUEST, *candidate_page, PROCMEM_WARM_UP="0")
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["status"].startswith("200") and seen["overlap_check_ran"]
    assert not seen["loaded_at_start"] and seen["loads_in_request"] == 1


PRIMED = r"""
import gc, io, json, re, sys

from procmem_site.wsgi import application  # what gunicorn and runserver import
from procmem_site import warmup

warmup.wait_until_ready()

from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.template import engines

loader = engines["django"].engine.template_loaders[0]
while not hasattr(loader, "get_template_cache"):  # template_partials wraps Django's cached loader
    loader = loader.loaders[0]
at_start = {
    "templates": sorted(loader.get_template_cache),
    "content_types": len(ContentType.objects._cache.get(connection.alias, {})),
    "frozen_objects": gc.get_freeze_count(),
}
modules, templates = set(sys.modules), set(loader.get_template_cache)
compiled, queries = [], []
original_compile = re._compile


def compile_counted(pattern, flags):
    key = (type(pattern), pattern, flags.value if isinstance(flags, re.RegexFlag) else flags)
    if isinstance(pattern, str) and key not in re._cache:
        compiled.append(pattern)
    return original_compile(pattern, flags)


def query_recorded(execute, sql, params, many, context):
    queries.append(sql)
    return execute(sql, params, many, context)


re._compile = compile_counted
status = []
environ = {
    "REQUEST_METHOD": "GET", "PATH_INFO": sys.argv[1], "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
    "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1", "HTTP_COOKIE": sys.argv[2], "wsgi.input": io.BytesIO(),
    "wsgi.url_scheme": "http", "wsgi.errors": sys.stderr, "wsgi.multithread": False, "wsgi.multiprocess": True,
    "wsgi.run_once": False, "wsgi.version": (1, 0), "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
}
with connection.execute_wrapper(query_recorded):
    b"".join(application(environ, lambda s, h, *a: status.append(s)))
re._compile = original_compile
print(json.dumps({
    "status": status[0], **at_start,
    "templates_loaded_in_request": sorted(set(loader.get_template_cache) - templates),
    "modules_imported_in_request": sorted(set(sys.modules) - modules),
    "url_regexes_compiled_in_request": [p for p in compiled if p.startswith("^/")],
    "content_type_lookups_in_request": [q for q in queries if q.startswith('SELECT "django_content_type"."id"')],
}))
"""


def test_the_warm_up_loads_what_the_first_candidate_page_would(candidate_page):
    """What the first request of a fresh process used to fill on its own (a profile of it against
    the second, bench/first_request.py) is filled at start: the request loads no template, imports
    no module, compiles no URL's regular expression and looks up no content type."""
    result = _run(PRIMED, *candidate_page)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["status"].startswith("200"), seen
    # before the request: the page's templates compiled, every model's content type cached, the
    # warm-up's objects out of the garbage collector's way
    assert {"base.html", "reviews/version_detail.html", "reviews/_diff.html", "reviews/_evidence.html"} <= set(
        seen["templates"]
    )
    assert seen["content_types"] >= 50
    assert seen["frozen_objects"] > 100_000
    # inside it: nothing of that
    assert seen["templates_loaded_in_request"] == []
    assert seen["modules_imported_in_request"] == []
    assert seen["url_regexes_compiled_in_request"] == []
    assert seen["content_type_lookups_in_request"] == []
    for part in ("embedding model", "urls", "templates", "request machinery", "database", "frozen heap"):
        assert f"{part} " in result.stderr.split("procmem web process ready:")[1].splitlines()[0]


HEALTH_FIRST = r"""
import io, json, sys, threading
import sentence_transformers

# the model's load is held until the health check has answered: a model that takes as long as it likes
release, loads = threading.Event(), []
original = sentence_transformers.SentenceTransformer.__init__

built = []

def held(self, *args, **kwargs):
    loads.append(threading.current_thread().name)
    release.wait(120)
    original(self, *args, **kwargs)
    built.append(True)

sentence_transformers.SentenceTransformer.__init__ = held

from procmem_site.wsgi import application  # returns while the model still loads
from procmem_site import warmup


def get(path):
    status = []
    environ = {
        "REQUEST_METHOD": "GET", "PATH_INFO": path, "QUERY_STRING": "", "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80", "HTTP_HOST": "127.0.0.1", "wsgi.input": io.BytesIO(), "wsgi.url_scheme": "http",
        "wsgi.errors": sys.stderr, "wsgi.multithread": True, "wsgi.multiprocess": True, "wsgi.run_once": False,
        "wsgi.version": (1, 0), "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "127.0.0.1",
    }
    body = b"".join(application(environ, lambda s, h, *a: status.append(s)))
    return status[0], body.decode()


health = get("/api/v1/health")
seen = {"health": health, "ready_at_health": warmup.ready.is_set(), "model_at_health": bool(built)}
release.set()
seen["ready"] = warmup.wait_until_ready(120)
seen["loads"] = loads
print(json.dumps(seen))
"""


def test_health_answers_while_the_model_still_loads(transactional_db):
    """Issue 42: after the web workers were killed, health took 30-60 s while each worker loaded the
    model before it answered anything. The model now loads in a thread of the process: health
    answers while that load is held, and the load happens once, in the warm-up thread."""
    result = _run(HEALTH_FIRST)
    assert result.returncode == 0, result.stderr[-3000:]
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    assert seen["health"][0].startswith("200") and '"status": "ok"' in seen["health"][1]
    assert seen["ready_at_health"] is False and seen["model_at_health"] is False
    assert seen["ready"] is True and set(seen["loads"]) == {"procmem-warm-up"}  # loaded in the warm-up thread only
    assert "procmem web process ready: urls" in result.stderr and "embedding model" in result.stderr


UNMIGRATED = r"""
from procmem_site import warmup

warmup._embedding_model = lambda: None  # what this test is about is the database (the model takes seconds)
print(sorted(warmup.warm_up(model_in_background=False)))  # every part timed before it returns
"""


def test_the_warm_up_on_a_database_not_migrated_yet_starts_all_the_same(tmp_path):
    result = _run(
        "import django; django.setup();" + UNMIGRATED,
        DATABASE_URL=f"sqlite:///{tmp_path / 'empty.sqlite3'}",
        LOG_LEVEL="INFO",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "the database is not ready" in result.stderr
    assert "Traceback" not in result.stderr
    parts = result.stdout.strip().splitlines()[-1]
    assert all(f"'{part}'" in parts for part in ("urls", "templates", "request machinery", "database", "frozen heap"))


def test_a_management_command_does_not_load_the_model(db):
    result = _run(
        "import sys, django; django.setup(); from django.core.management import call_command; call_command('check');"
        " print('sentence_transformers' in sys.modules, 'torch' in sys.modules)"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "False False"
