"""The sets the environments serve, derived from production's: a non-production environment
serves, per procedure, the version released to it (`ProcedureRelease`, an APPROVED version) and
otherwise the production one; in production a running rollout gives each session its arm's version.
Promotion, withdrawal and rollouts, which write those releases and rollouts, are services
(library/services/releases.py).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from django.dispatch import receiver

from ..environments import PRODUCTION
from ..models import ProcedureVersion
from ..signals import version_erased
from . import active_set as serving
from .load_refusals import missing_tools

_variants: OrderedDict[tuple, serving.ServedSet] = OrderedDict()
_variants_lock = threading.Lock()
MAX_VARIANTS = 256


@receiver(version_erased)
def _forget_variants(sender, **kwargs) -> None:
    """A built variant may hold an erased version's text: drop them all (they rebuild on demand)."""
    with _variants_lock:
        _variants.clear()


def served_for(
    *, served: serving.ServedSet, environment: str = PRODUCTION, session: str | None = None, using: str | None = None
) -> serving.ServedSet:
    """The set `environment` serves to `session`, derived from the production set `served`
    (serving.active_set_for_agent) and the plan of releases and rollouts read with it, without
    another query: released versions replace the production ones in a
    non-production environment; in production a running rollout gives the session its arm's version
    and every procedure under rollout says its `arm`. Equal to `served` (same bytes, same ETag) when
    nothing differs in production; a non-production environment's body names it, so its ETag is its
    own. Variants are kept per production set and difference, so they rebuild exactly when those change."""
    using = using or serving.READONLY_ALIAS
    plan = served.staged if served.data.get("proceduralMemoryEnabled", True) and served.staged is not None else None
    overrides, arms = plan.differences(environment, session) if plan is not None else ({}, {})
    if environment == PRODUCTION and not overrides and not arms:
        return served
    key = (
        served.etag,
        environment,
        tuple(sorted(overrides.items(), key=lambda kv: kv[0])),
        tuple(sorted(arms.items())),
    )
    with _variants_lock:
        cached = _variants.get(key)
        if cached is not None:
            _variants.move_to_end(key)
            return cached
    variant = _build_variant(served, environment=environment, overrides=overrides, arms=arms, using=using)
    with _variants_lock:
        _variants[key] = variant
        while len(_variants) > MAX_VARIANTS:
            _variants.popitem(last=False)
    return variant


def _build_variant(
    served: serving.ServedSet, *, environment: str, overrides: dict[str, int | None], arms: dict[str, str], using: str
):
    base = dict(zip((p["id"] for p in served.procedures), zip(served.version_ids, served.procedures)))
    wanted = {vid for vid in overrides.values() if vid is not None} - set(served.version_ids)
    loaded = {
        v.pk: v
        for v in ProcedureVersion.objects.using(using)
        .filter(pk__in=wanted)
        .select_related("procedure", "procedure__intent", "approved_by")
        .defer(*serving.approver_secret_columns())
    }
    tools = list(served.data["tools"])
    chosen: dict[str, tuple[int, dict]] = {k: v for k, v in base.items() if k not in overrides}
    refused = [r for r in served.data["refused"] if r["id"] not in overrides]
    for key, version_id in overrides.items():
        if version_id is None:
            continue
        if key in base and base[key][0] == version_id:
            chosen[key] = base[key]
            continue
        version = loaded.get(version_id)
        if version is None:  # changed since the plan was read: serve nothing rather than a guess
            continue
        missing = missing_tools(required=list(version.required_tools), available=tools)
        if missing:
            refused.append(
                {
                    "id": key,
                    "version": version.number,
                    "intent": version.procedure.intent.name,
                    "reason": "missing_tools",
                    "message": f"The agent lacks the required tools: {', '.join(missing)}.",
                    "missingTools": missing,
                }
            )
            continue
        chosen[key] = (version.pk, serving._served(version, namespace=served.data["namespace"]))
    ordered = sorted(chosen.items())
    procedures = [{**record, "arm": arms[key]} if key in arms else record for key, (_, record) in ordered]
    data = {**served.data, "procedures": procedures, "refused": sorted(refused, key=lambda r: r["id"])}
    if environment != PRODUCTION:
        data["environment"] = environment
    if arms:
        data["arms"] = dict(sorted(arms.items()))
    return serving._packed(
        agent_id=served.agent_id,
        fingerprint=f"{served.fingerprint}:{environment}",
        data=data,
        version_ids=[vid for _, (vid, _) in ordered],
    )
