"""Does the skill trigger? The measure of library/serving/skill_trigger.py for one version, as a fragment
of its page's eval panel (loaded after the page: it embeds the intent's tasks)."""

from __future__ import annotations

import hashlib

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from library.models import AgentSession, RegressionCase
from library.serving import active_set as serving
from library.serving.skill_trigger import version_trigger

from ..access import get_version_for_user, signed_in

CACHE_SECONDS = 600


def _cache_key(version) -> str:
    """Changes when the served set, the version's content or the agent's tasks change. The parts are
    hashed: the set's ETag has quotes and the newest case's time spaces, which a cache key may not hold
    (memcached refuses them; every other backend warns on each request)."""
    agent = version.procedure.agent
    served = serving.active_set_for_agent(agent=agent, using="default")
    cases = RegressionCase.objects.filter(agent=agent).order_by("-updated_at").values_list("pk", "updated_at").first()
    sessions = AgentSession.objects.filter(agent=agent).order_by("-pk").values_list("pk", flat=True).first()
    parts = f"{version.content_hash}:{served.etag}:{cases}:{sessions}"
    return f"skill-trigger:{version.pk}:{hashlib.sha256(parts.encode('utf-8')).hexdigest()}"


@require_GET
@signed_in
@vary_on_headers("HX-Request")
def version_trigger_view(request: HttpRequest, pk: int) -> HttpResponse:
    version = get_version_for_user(request, pk, for_="view")
    key = _cache_key(version)
    measure = cache.get(key)
    if measure is None:
        measure = version_trigger(version)
        cache.set(key, measure, CACHE_SECONDS)
    template = "reviews/_skill_trigger.html"
    context = {"version": version, "trigger": measure, "fragment": bool(request.htmx)}
    if request.htmx:
        return render(request, template, context)
    return render(request, "reviews/skill_trigger_page.html", context)
