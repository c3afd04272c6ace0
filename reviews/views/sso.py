"""Single sign-on on the operations pages: whether it is on, the provider's endpoints, the claim it
reads and the mapping rules with what each names (reviews/sso.py). Read-only: the rules are
deployment settings (PROCMEM_OIDC_*). For library admins (who grant namespace rights) and
superusers; reviewers 403, everyone else 404."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from library.permissions import user_can_grant_namespace_rights, user_is_reviewer

from ..access import signed_in
from ..models import ExternalIdentity
from ..sso import SSO_ACTOR, sso_rule_rows


@require_GET
@signed_in
def ops_sso(request: HttpRequest) -> HttpResponse:
    user = request.user
    if not (user.is_superuser or user_can_grant_namespace_rights(user)):
        if user_is_reviewer(user):
            raise PermissionDenied("Only library admins see the single sign-on settings.")
        raise Http404("No such page")
    return render(
        request,
        "reviews/ops/sso.html",
        {
            "enabled": settings.PROCMEM_SSO_ENABLED,
            "provider": settings.PROCMEM_OIDC_PROVIDER_NAME,
            "endpoints": [
                ("Issuer", settings.PROCMEM_OIDC_ISSUER or "(not checked)"),
                ("Authorization", settings.OIDC_OP_AUTHORIZATION_ENDPOINT),
                ("Token", settings.OIDC_OP_TOKEN_ENDPOINT),
                ("User info", settings.OIDC_OP_USER_ENDPOINT),
                ("Signing keys (JWKS)", settings.OIDC_OP_JWKS_ENDPOINT),
            ],
            "client_id": settings.OIDC_RP_CLIENT_ID,
            "scopes": settings.OIDC_RP_SCOPES,
            "claim": settings.PROCMEM_OIDC_GROUPS_CLAIM,
            "local_passwords": settings.PROCMEM_LOCAL_PASSWORDS,
            "rules": sso_rule_rows(),
            "sso_users": ExternalIdentity.objects.count(),
            "actor": SSO_ACTOR,
        },
    )
