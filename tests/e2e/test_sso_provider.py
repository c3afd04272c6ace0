"""Single sign-on against a real OpenID Connect provider: panva/oidc-provider on the machine's node
(tests/oidc/provider.mjs, installed by `make test`), driven through Debian's Chromium. The first
sign-in creates the user and a group claim makes them a reviewer; with the claim removed at the
provider, the next sign-in takes the right away; a cancelled sign-in comes back to the sign-in page
with the reason; a tampered or expired ID token of that provider does not verify, and a tampered
one handed to the real sign-in callback (a relay in front of the provider's token endpoint changes
it) signs nobody in."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.backends.db import SessionStore
from django.core.exceptions import SuspiciousOperation

from library.models import AuditEvent
from library.permissions import user_is_reviewer
from reviews.models import ExternalIdentity
from reviews.sso import SSO_ACTOR, ProcmemOIDCBackend
from tests.conftest import _free_port, _missing

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PROVIDER_DIR = Path(__file__).resolve().parents[1] / "oidc"  # tests/oidc
ID_TOKEN_TTL = 8  # seconds: long enough for a sign-in on a loaded machine, short enough to wait out


@pytest.fixture
def accounts(tmp_path):
    path = tmp_path / "accounts.json"

    def write(**people):
        path.write_text(json.dumps(people))

    write(
        alice={
            "email": "alice@example.com",
            "preferred_username": "alice",
            "name": "Alice",
            "groups": ["procmem-reviewers"],
        }
    )
    write.path = path
    return write


@pytest.fixture
def provider(live_server, accounts, settings, reviewers_group):
    node = shutil.which("node")
    if node is None or not (PROVIDER_DIR / "node_modules" / "oidc-provider").exists():
        _missing("the OIDC provider tests need node and tests/oidc/node_modules (`make test` runs npm ci there)")
    port = _free_port()
    issuer = f"http://127.0.0.1:{port}"
    process = subprocess.Popen(
        [node, "provider.mjs", str(port), f"{live_server.url}/oidc/callback/", str(accounts.path)],
        cwd=PROVIDER_DIR,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"PATH": "/usr/bin:/bin:/usr/local/bin", "ID_TOKEN_TTL": str(ID_TOKEN_TTL)},
    )
    try:
        output = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = process.stdout.readline()
            output.append(line)
            if "listening" in line:
                break
            if process.poll() is not None:
                pytest.fail(f"the OIDC provider exited: {''.join(output)}")
        else:
            pytest.fail(f"the OIDC provider did not start: {''.join(output)}")
        settings.PROCMEM_SSO_ENABLED = True
        settings.PROCMEM_OIDC_PROVIDER_NAME = "the test provider"
        settings.OIDC_RP_CLIENT_ID = "procmem"
        settings.OIDC_RP_CLIENT_SECRET = "procmem-test-secret"
        settings.OIDC_OP_AUTHORIZATION_ENDPOINT = f"{issuer}/auth"
        settings.OIDC_OP_TOKEN_ENDPOINT = f"{issuer}/token"
        settings.OIDC_OP_USER_ENDPOINT = f"{issuer}/me"
        settings.OIDC_OP_JWKS_ENDPOINT = f"{issuer}/jwks"
        settings.PROCMEM_OIDC_ISSUER = issuer
        settings.OIDC_STORE_ID_TOKEN = True  # so the test can check the provider's real token afterwards
        settings.PROCMEM_OIDC_RULES_TEXT = "procmem-reviewers -> group:reviewers"
        settings.AUTHENTICATION_BACKENDS = [
            *settings.AUTHENTICATION_BACKENDS[:-1],
            "reviews.sso.ProcmemOIDCBackend",
            settings.AUTHENTICATION_BACKENDS[-1],
        ]
        yield issuer
    finally:
        process.terminate()
        process.wait(timeout=10)


def _sign_in_at_provider(page, base_url: str, login: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.click("#sso-sign-in")
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_selector("button:has-text('Continue')")
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{base_url}/**")
    page.wait_for_load_state("networkidle")


def _session(page) -> SessionStore:
    cookie = next(c for c in page.context.cookies() if c["name"] == "sessionid")
    return SessionStore(session_key=cookie["value"])


def test_a_group_claim_grants_review_and_its_removal_takes_it_away(
    browser, provider, live_server, accounts, screenshot
):
    # when: alice signs in for the first time
    context = browser.new_context()
    page = context.new_page()
    _sign_in_at_provider(page, live_server.url, "alice")
    screenshot(page, "signed-in")
    # then: she exists, is found by the provider's subject, and is a reviewer by her group claim
    alice = get_user_model().objects.get(username="alice")
    assert ExternalIdentity.objects.get(user=alice).subject == "alice"
    assert alice.email == "alice@example.com" and not alice.has_usable_password()
    assert user_is_reviewer(alice)
    assert int(_session(page)["_auth_user_id"]) == alice.pk
    assert AuditEvent.objects.filter(
        actor_label=SSO_ACTOR, action=AuditEvent.Action.GRANT, after__user="alice"
    ).exists()
    context.close()

    # when: the provider drops the group, and she signs in again (a new browser)
    accounts(alice={"email": "alice@example.com", "preferred_username": "alice", "name": "Alice", "groups": []})
    context = browser.new_context()
    page = context.new_page()
    _sign_in_at_provider(page, live_server.url, "alice")
    # then: the same user, no longer a reviewer, and the audit log says why
    assert get_user_model().objects.filter(username__startswith="alice").count() == 1
    assert not user_is_reviewer(get_user_model().objects.get(username="alice"))
    revoke = AuditEvent.objects.get(actor_label=SSO_ACTOR, action=AuditEvent.Action.REVOKE)
    assert revoke.reason == "groups claim no longer has 'procmem-reviewers'"
    context.close()


def test_a_cancelled_sign_in_comes_back_with_the_reason(browser, provider, live_server, screenshot):
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live_server.url}/accounts/login/")
    page.click("#sso-sign-in")
    page.wait_for_selector("input[name=login]")
    page.click("text=[ Cancel ]")
    page.wait_for_url(f"{live_server.url}/accounts/login/**")
    screenshot(page, "cancelled")
    assert "Single sign-on did not sign you in" in page.content()
    assert "sessionid" not in {c["name"] for c in context.cookies()} or "_auth_user_id" not in _session(page)
    assert not get_user_model().objects.filter(username="alice").exists()
    context.close()


def test_a_tampered_or_expired_id_token_does_not_verify(browser, provider, live_server):
    import jwt

    # given: a real ID token of the provider, from a real sign-in
    context = browser.new_context()
    page = context.new_page()
    _sign_in_at_provider(page, live_server.url, "alice")
    token = _session(page)["oidc_id_token"]
    context.close()
    nonce = jwt.decode(token, options={"verify_signature": False})["nonce"]
    backend = ProcmemOIDCBackend()
    assert backend.verify_token(token, nonce=nonce)["sub"] == "alice"
    # when: its signature is changed, then: refused
    header, payload, signature = token.split(".")
    tampered = ".".join([header, payload, ("A" if signature[0] != "A" else "B") + signature[1:]])
    with pytest.raises(SuspiciousOperation):
        backend.verify_token(tampered, nonce=nonce)
    # when: its claims are changed (another user) under the old signature, then: refused
    forged = jwt.decode(token, options={"verify_signature": False}) | {"sub": "mallory"}
    forged_payload = jwt.utils.base64url_encode(json.dumps(forged).encode()).decode()
    with pytest.raises(SuspiciousOperation):
        backend.verify_token(".".join([header, forged_payload, signature]), nonce=nonce)
    # when: it has expired, then: refused (and authenticate() turns that into a failed sign-in)
    time.sleep(ID_TOKEN_TTL + 1)
    with pytest.raises(jwt.ExpiredSignatureError):
        backend.verify_token(token, nonce=nonce)


@pytest.fixture
def tampering_token_endpoint(provider, settings):
    """A relay in front of the provider's token endpoint that hands procmem's callback the provider's
    real answer with its ID token changed by `relay.tamper` (a function of the token)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import requests

    real = f"{provider}/token"

    class Relay(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            headers = {name: self.headers[name] for name in ("Authorization", "Content-Type") if self.headers.get(name)}
            answer = requests.post(real, data=body, headers=headers, timeout=30)
            payload = answer.json()
            if "id_token" in payload:
                payload["id_token"] = server.tamper(payload["id_token"])
            data = json.dumps(payload).encode()
            self.send_response(answer.status_code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Relay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.OIDC_OP_TOKEN_ENDPOINT = f"http://127.0.0.1:{server.server_port}/token"
    yield server
    server.shutdown()
    server.server_close()


def _new_signature(token: str) -> str:
    header, payload, signature = token.split(".")
    return ".".join([header, payload, ("A" if signature[0] != "A" else "B") + signature[1:]])


def _another_subject(token: str) -> str:
    import jwt

    header, _, signature = token.split(".")
    claims = jwt.decode(token, options={"verify_signature": False}) | {
        "sub": "mallory",
        "preferred_username": "mallory",
    }
    return ".".join([header, jwt.utils.base64url_encode(json.dumps(claims).encode()).decode(), signature])


def test_the_relay_itself_changes_nothing_else(browser, provider, tampering_token_endpoint, live_server):
    # the untouched token through the relay signs alice in, so the refusals below are the tampering's
    tampering_token_endpoint.tamper = lambda token: token
    context = browser.new_context()
    page = context.new_page()
    _sign_in_at_provider(page, live_server.url, "alice")
    assert int(_session(page)["_auth_user_id"]) == get_user_model().objects.get(username="alice").pk
    context.close()


@pytest.mark.parametrize("tamper", [_new_signature, _another_subject], ids=["signature", "claims"])
def test_a_tampered_id_token_at_the_real_callback_signs_nobody_in(
    browser, provider, tampering_token_endpoint, live_server, tamper
):
    # given: the provider's real ID token, changed on its way to procmem's callback
    tampering_token_endpoint.tamper = tamper
    context = browser.new_context()
    page = context.new_page()
    # when: alice signs in at the provider as usual
    page.goto(f"{live_server.url}/accounts/login/")
    page.click("#sso-sign-in")
    page.wait_for_selector("input[name=login]")
    page.fill("input[name=login]", "alice")
    page.fill("input[name=password]", "any")
    page.click("button[type=submit]")
    page.wait_for_selector("button:has-text('Continue')")
    page.click("button:has-text('Continue')")
    page.wait_for_url(f"{live_server.url}/accounts/login/**")
    # then: back at the sign-in page with the reason; nobody is signed in or created
    assert "Single sign-on did not sign you in" in page.content()
    assert "sessionid" not in {c["name"] for c in context.cookies()} or "_auth_user_id" not in _session(page)
    assert not get_user_model().objects.filter(username__in=["alice", "mallory"]).exists()
    assert not ExternalIdentity.objects.exists()
    context.close()
