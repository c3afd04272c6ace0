"""The served set as Agent Skills over HTTP, at the well-known discovery path (docs/api.md "Agent
Skills"; the skills themselves: library/serving/skills.py).

    GET /.well-known/agent-skills/index.json?role=&environment=&session=            read token
    GET /.well-known/agent-skills/sets/<etag>/index.json?role=&environment=&session=
    GET /.well-known/agent-skills/skills/<name>/v<N>/SKILL.md?role=&environment=&session=
    GET /.well-known/agent-skills/skills/<name>/v<N>/skill.tar.gz   (and any file of the folder)

The token names the agent. The parameters are the active-set view's and pick the same set, so a
token reads exactly the skills its agent is served there, and a version it is not served is 404.
The index has a strong ETag and 304s like the active set, and names its versioned twin in
`Content-Location`: `sets/<etag>/index.json`, the same set at a URL that names it, whose bytes
never change (404 once that set is no longer the one served). A skill's URL names its version,
whose bytes never change either, so a client may keep both as long as it likes (`immutable`).
"""

from __future__ import annotations

import hashlib
import re

from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils.cache import patch_vary_headers
from django.utils.http import parse_etags
from django.views.decorators.csrf import csrf_exempt

from ..serving import active_set as serving
from ..serving import environment_sets as releases
from ..serving.skills import ARCHIVE_FILE, SkillSet, skills_for, snapshot_path
from .tokens import api_error, token_required
from .views import _agent_get_only, _cache_headers, _serving_parameters

SKILL_MAX_AGE = 365 * 24 * 3600
CONTENT_TYPES = {"SKILL.md": "text/markdown; charset=utf-8", ARCHIVE_FILE: "application/gzip"}
SET_ETAG = re.compile(r"[0-9a-f]{40}")


def _requested(request: HttpRequest) -> tuple[SkillSet | None, dict[str, str], HttpResponse | None]:
    """The skills of the set the request's token and parameters name, the parameters as given (for
    the index's URLs), or the refusal of a bad parameter."""
    role, environment, session, refusal = _serving_parameters(request)
    if refusal is not None:
        return None, {}, refusal
    served = releases.served_for(
        served=serving.active_set_for_agent(agent=request.agent), environment=environment, session=session
    ).for_role(role)
    query = {key: request.GET[key] for key in ("environment", "role", "session") if request.GET.get(key)}
    return skills_for(served), query, None


def _not_modified(request: HttpRequest, etag: str) -> bool:
    header = request.headers.get("If-None-Match")
    return bool(header) and (header.strip() == "*" or etag in parse_etags(header))


@csrf_exempt  # bearer-token endpoints: no cookies, so no CSRF; a write method gets a JSON 405
@token_required("read", cache_seconds=serving.recheck_seconds, limit="active_set")
@_agent_get_only
def index(request: HttpRequest) -> HttpResponse:
    skills, query, refusal = _requested(request)
    if refusal is not None:
        return refusal
    body, etag = skills.index(query)
    if _not_modified(request, etag):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type="application/json")
    response["Content-Location"] = snapshot_path(etag, query)  # relative to this URL (RFC 9110 8.7)
    return _cache_headers(response, etag)


@csrf_exempt
@token_required("read", cache_seconds=serving.recheck_seconds, limit="active_set")
@_agent_get_only
def index_snapshot(request: HttpRequest, etag: str) -> HttpResponse:
    """The versioned index of the set whose unversioned index had `etag`, while that set is served."""
    skills, query, refusal = _requested(request)
    if refusal is not None:
        return refusal
    _, current = skills.index(query)
    if not SET_ETAG.fullmatch(etag) or current != f'"{etag}"':
        return api_error(
            404,
            "not_found",
            "That set of skills is not the one this agent is served here (a version was approved, retired or "
            "rolled out since): index.json lists the skills served now.",
        )
    body, own = skills.snapshot(query)
    if _not_modified(request, own):
        response = HttpResponse(status=304)
    else:
        response = HttpResponse(body, content_type="application/json")
    response["ETag"] = own
    response["Cache-Control"] = f"private, max-age={SKILL_MAX_AGE}, immutable"
    patch_vary_headers(response, ["Authorization"])
    return response


@csrf_exempt
@token_required("read", cache_seconds=serving.recheck_seconds, limit="active_set")
@_agent_get_only
def skill_file(request: HttpRequest, name: str, version: int, file: str) -> HttpResponse:
    skills, _, refusal = _requested(request)
    if refusal is not None:
        return refusal
    skill = skills.get(name, version)
    if skill is None:
        return api_error(
            404, "not_found", f"No skill {name!r} v{version} is served to this agent here (the index lists them)."
        )
    if file == ARCHIVE_FILE:
        body = skill.archive()
    elif file in skill.files:
        body = skill.files[file]
    else:
        return api_error(404, "not_found", f"Skill {name!r} v{version} has no file {file!r}.")
    etag = f'"{hashlib.sha256(body).hexdigest()}"'
    response = HttpResponse(status=304) if _not_modified(request, etag) else HttpResponse(body)
    response["Content-Type"] = CONTENT_TYPES.get(file, "text/plain; charset=utf-8")
    response["ETag"] = etag
    response["Cache-Control"] = f"private, max-age={SKILL_MAX_AGE}, immutable"
    patch_vary_headers(response, ["Authorization"])
    return response


app_name = "skills"
urlpatterns = [
    path("index.json", index, name="index"),
    path("sets/<str:etag>/index.json", index_snapshot, name="index_snapshot"),
    path("skills/<str:name>/v<int:version>/<path:file>", skill_file, name="file"),
]
