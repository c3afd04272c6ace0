"""Single sign-on through the company's OpenID Connect provider (docs/operations.md "Single sign-on").

Built on mozilla-django-oidc: it is small, does one thing (the authorization-code flow with PKCE, the
ID token checked against the provider's keys), and leaves users and rights to us — django-allauth
would bring accounts, e-mail flows and social-account tables we do not want beside guardian.

- A user is created at the first sign-in and found again by the provider's subject (`sub`, kept in
  `ExternalIdentity`), never by e-mail: an e-mail address can change hands at the provider.
- `PROCMEM_OIDC_RULES` maps values of the group claim (`PROCMEM_OIDC_GROUPS_CLAIM`) to rights:
  `<claim value> -> group:<name>` (a Django group, e.g. reviewers),
  `-> namespace:<name>:review|approve|manage` and `-> agent:<name>:approve|manage`;
  rules are separated by `;` or new lines. Every right a rule names belongs to the provider: at each
  sign-in the user holds it exactly when one of their claim values maps to it, so a claim removed at
  the provider takes the right away at the next sign-in. Rights no rule names are left alone.
  Each change is audited with the actor "single sign-on" and the claim that caused it.
- `PROCMEM_LOCAL_PASSWORDS=0` switches passwords off: the model permissions of groups still count
  (`PermissionsOnlyBackend`), but nobody signs in with a password.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import Group
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from guardian.shortcuts import assign_perm, remove_perm
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from library.models import Agent, AgentUserObjectPermission, AuditEvent, Namespace, NamespaceUserObjectPermission
from library.services import audit

from .models import ExternalIdentity

log = logging.getLogger(__name__)

SSO_ACTOR = "single sign-on"
NAMESPACE_RIGHTS = {
    "review": "review_namespace_procedures",
    "approve": "approve_namespace_procedures",
    "manage": "manage_namespace_procedures",
}
AGENT_RIGHTS = {"approve": "approve_agent_procedures", "manage": "manage_agent"}


@dataclass(frozen=True)
class SsoRule:
    """`claim_value -> grant`: `kind` is "group", "namespace" or "agent"; `right` is empty for groups."""

    claim_value: str
    kind: str
    target: str
    right: str = ""

    @property
    def grant(self) -> str:
        return f"{self.kind}:{self.target}" + (f":{self.right}" if self.right else "")

    @property
    def described(self) -> str:
        if self.kind == "group":
            return f"member of the group {self.target}"
        return f"{self.right} on {self.kind} {self.target}"


def parse_sso_rules(text: str) -> list[SsoRule]:
    """The rules of PROCMEM_OIDC_RULES; ImproperlyConfigured naming the variable and the bad rule."""
    rules: list[SsoRule] = []
    for number, raw in enumerate((part.strip() for part in (text or "").replace("\n", ";").split(";")), start=1):
        if not raw:
            continue
        value, arrow, grant = raw.rpartition("->")
        value, grant = value.strip(), grant.strip()
        problem = ""
        if not arrow or not value:
            problem = "write it as '<claim value> -> <grant>'"
        else:
            kind, _, rest = grant.partition(":")
            target, _, right = rest.partition(":")
            if kind == "group" and target and not right:
                rules.append(SsoRule(value, "group", target))
                continue
            if kind == "namespace" and target and right in NAMESPACE_RIGHTS:
                rules.append(SsoRule(value, "namespace", target, right))
                continue
            if kind == "agent" and target and right in AGENT_RIGHTS:
                rules.append(SsoRule(value, "agent", target, right))
                continue
            problem = (
                "the grant must be group:<name>, namespace:<name>:review|approve|manage or agent:<name>:approve|manage"
            )
        raise ImproperlyConfigured(f"PROCMEM_OIDC_RULES, rule {number} ({raw[:80]!r}): {problem}")
    return rules


def sso_rules() -> list[SsoRule]:
    return parse_sso_rules(settings.PROCMEM_OIDC_RULES_TEXT)


def claim_values(claims: dict) -> set[str]:
    """The user's values of the group claim: a list of strings, or one string."""
    value = claims.get(settings.PROCMEM_OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return {value}
    if isinstance(value, (list, tuple)):
        return {item for item in value if isinstance(item, str)}
    return set()


def sso_rule_rows() -> list[dict]:
    """The rules for the operations page, each with whether what it names exists."""
    return [{"rule": rule, "exists": _target(rule) is not None} for rule in sso_rules()]


# ------------------------------------------------------------------------------------------ the rights


def _target(rule: SsoRule):
    """The group, namespace or agent a rule names, or None when it does not exist (yet)."""
    model = {"group": Group, "namespace": Namespace, "agent": Agent}[rule.kind]
    return model.objects.filter(name=rule.target).first()


def _codename(rule: SsoRule) -> str:
    return (NAMESPACE_RIGHTS if rule.kind == "namespace" else AGENT_RIGHTS)[rule.right]


def _holds(user, rule: SsoRule, target) -> bool:
    """Held directly (a group membership, or the object permission assigned to the user)."""
    if rule.kind == "group":
        return user.groups.filter(pk=target.pk).exists()
    rows = NamespaceUserObjectPermission if rule.kind == "namespace" else AgentUserObjectPermission
    return rows.objects.filter(content_object=target, user=user, permission__codename=_codename(rule)).exists()


def _set_right(user, rule: SsoRule, target, *, granted: bool) -> None:
    """Gives (`granted`) or takes the right a rule names: a group membership, or the object
    permission on the namespace or agent."""
    if rule.kind == "group":
        (user.groups.add if granted else user.groups.remove)(target)
    elif granted:
        assign_perm(f"library.{_codename(rule)}", user, target)
    else:
        remove_perm(f"library.{_codename(rule)}", user, target)


def sso_rights_sync(*, user, claims: dict) -> list[str]:
    """Gives `user` exactly the rights the rules map their claim values to, among the rights the
    rules name; one transaction, one audit row per change. Returns what changed, in words. A rule
    naming a group, namespace or agent that does not exist is skipped and logged."""
    rules = sso_rules()
    values = claim_values(claims)
    wanted: dict[str, tuple[SsoRule, str | None]] = {}
    for rule in rules:
        matched = rule.claim_value if rule.claim_value in values else None
        current = wanted.get(rule.grant)
        if current is None or (current[1] is None and matched is not None):
            wanted[rule.grant] = (rule, matched)
    changes: list[str] = []
    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=user.pk)
        for rule, matched in wanted.values():
            target = _target(rule)
            if target is None:
                log.warning("single sign-on: rule %s names a %s that does not exist", rule.grant, rule.kind)
                continue
            granted = matched is not None
            if granted == _holds(user, rule, target):
                continue
            _set_right(user, rule, target, granted=granted)
            claim = settings.PROCMEM_OIDC_GROUPS_CLAIM
            reason = (
                f"{claim} claim has {matched!r}" if granted else f"{claim} claim no longer has {rule.claim_value!r}"
            )
            change = {"permission": rule.grant, "on": f"{rule.kind} {target.name}", "user": user.get_username()}
            audit(
                action=AuditEvent.Action.GRANT if granted else AuditEvent.Action.REVOKE,
                actor_label=SSO_ACTOR,
                agent=target if rule.kind == "agent" else None,
                reason=reason,
                # a grant records the right it gave, a revocation the one it took
                after=change if granted else None,
                before=None if granted else change,
            )
            changes.append(f"{'granted' if granted else 'revoked'}: {rule.described} ({reason})")
    return changes


# ------------------------------------------------------------------------------------ the sign-in itself


class PermissionsOnlyBackend(ModelBackend):
    """Django's model permissions (through groups) without password sign-in: PROCMEM_LOCAL_PASSWORDS=0."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        return None


class ProcmemOIDCBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's code flow, with users found by the provider's subject, the ID token's
    issuer, audience and expiry checked, and the rights synchronised at every sign-in. A token that
    does not verify, an unreachable provider or a refused code fail the sign-in (back to the sign-in
    page with a message), never the request."""

    def authenticate(self, request, **kwargs):
        try:
            return super().authenticate(request, **kwargs)
        except (SuspiciousOperation, jwt.InvalidTokenError, requests.RequestException, ValueError) as exc:
            log.warning("single sign-on refused: %s", exc)
            return None

    def verify_token(self, token, **kwargs):
        payload = super().verify_token(token, **kwargs)
        if settings.PROCMEM_OIDC_ISSUER and payload.get("iss") != settings.PROCMEM_OIDC_ISSUER:
            raise SuspiciousOperation(
                f"ID token issued by {payload.get('iss')!r}, not {settings.PROCMEM_OIDC_ISSUER!r}"
            )
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.OIDC_RP_CLIENT_ID not in audiences:
            raise SuspiciousOperation("ID token is for another client")
        return payload

    def verify_claims(self, claims) -> bool:
        return bool(claims.get("sub"))

    def filter_users_by_claims(self, claims):
        return self.UserModel.objects.filter(
            external_identities__issuer=self._issuer(), external_identities__subject=claims["sub"]
        )

    def create_user(self, claims):
        User = self.UserModel
        base = (claims.get("preferred_username") or claims.get("email", "").split("@")[0] or claims["sub"])[:140]
        username, n = base, 1
        while User.objects.filter(username=username).exists():
            n += 1
            username = f"{base}-{n}"
        with transaction.atomic():
            user = User.objects.create_user(username, email=claims.get("email", ""))
            user.set_unusable_password()
            user.save(update_fields=["password"])
            ExternalIdentity.objects.create(user=user, issuer=self._issuer(), subject=claims["sub"])
        return self.update_user(user, claims)

    def update_user(self, user, claims):
        if claims.get("email") and claims["email"] != user.email:
            user.email = claims["email"]
            user.save(update_fields=["email"])
        sso_rights_sync(user=user, claims=claims)
        return user

    @staticmethod
    def _issuer() -> str:
        return settings.PROCMEM_OIDC_ISSUER or settings.OIDC_OP_AUTHORIZATION_ENDPOINT


def _sso_on() -> None:
    if not settings.PROCMEM_SSO_ENABLED:
        raise Http404("Single sign-on is not configured.")


class SignInStart(OIDCAuthenticationRequestView):
    def get(self, request):
        _sso_on()
        return super().get(request)


class SignInCallback(OIDCAuthenticationCallbackView):
    def get(self, request):
        _sso_on()
        return super().get(request)


class SignInView(auth_views.LoginView):
    """The sign-in page: the password form (unless PROCMEM_LOCAL_PASSWORDS=0) and the single sign-on
    button (when configured). With passwords off, a posted password is refused with 403."""

    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        if not settings.PROCMEM_LOCAL_PASSWORDS:
            response = self.get(request, *args, **kwargs)
            response.status_code = 403
            return response
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(
            sso_enabled=settings.PROCMEM_SSO_ENABLED,
            sso_provider=settings.PROCMEM_OIDC_PROVIDER_NAME,
            local_passwords=settings.PROCMEM_LOCAL_PASSWORDS,
            sso_failed=self.request.GET.get("sso") == "failed",
        )
        return context
