"""Hardening of the site as a whole: sign-in lock-out on both sign-in pages, the Content-Security-
Policy header, the proxy header trusted only when configured, numeric passwords refused, and the
demo seeder that will not touch a database with users."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

pytestmark = pytest.mark.django_db

LOGIN_PAGES = ["/accounts/login/", "/django-admin/login/"]


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_user(
        "staffer", password="right-horse-battery", is_staff=True, is_superuser=True
    )


@pytest.mark.parametrize("path", LOGIN_PAGES)
def test_wrong_passwords_lock_the_user_out_even_with_the_right_one(settings, staff, path):
    settings.AXES_FAILURE_LIMIT = 5
    client = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(5):
        response = client.post(path, {"username": "staffer", "password": "wrong"})
        assert response.status_code in (200, 429)
    response = client.post(path, {"username": "staffer", "password": "right-horse-battery"})
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session
    assert "Too many failed sign-ins" in response.content.decode()


def test_the_lock_out_is_per_user_and_address(settings, staff):
    settings.AXES_FAILURE_LIMIT = 3
    attacker = Client(REMOTE_ADDR="203.0.113.7")
    for _ in range(3):
        attacker.post("/accounts/login/", {"username": "staffer", "password": "wrong"})
    # the real user from another address still signs in
    colleague = Client(REMOTE_ADDR="198.51.100.20")
    response = colleague.post("/accounts/login/", {"username": "staffer", "password": "right-horse-battery"})
    assert response.status_code == 302
    assert colleague.session["_auth_user_id"] == str(staff.pk)


def test_fewer_failures_than_the_limit_still_sign_in(settings, staff):
    settings.AXES_FAILURE_LIMIT = 5
    client = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(4):
        client.post("/accounts/login/", {"username": "staffer", "password": "wrong"})
    assert (
        client.post("/accounts/login/", {"username": "staffer", "password": "right-horse-battery"}).status_code == 302
    )


def test_pages_carry_a_policy_without_inline_code(client):
    response = client.get("/accounts/login/")
    policy = response["Content-Security-Policy"]
    directives = dict(part.strip().split(" ", 1) for part in policy.split(";") if part.strip())
    assert directives["script-src"] == "'self'" and directives["style-src"] == "'self'"
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    # style attributes: only the empty one htmx writes (the hash of "")
    assert directives["style-src-attr"] == "'unsafe-hashes' 'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    assert directives["frame-ancestors"] == "'none'"


def test_templates_have_no_inline_handlers_or_styles():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "templates"
    offenders = []
    for path in root.rglob("*.html"):
        text = path.read_text()
        if re.search(r"\s(on[a-z]+|style)\s*=", text) or re.search(r"<script(?![^>]*\ssrc=)", text) or "<style" in text:
            offenders.append(str(path.relative_to(root)))
    assert offenders == []


def test_forwarded_proto_is_not_trusted_by_default(client, settings):
    assert settings.SECURE_PROXY_SSL_HEADER is None
    response = client.get("/accounts/login/", headers={"X-Forwarded-Proto": "https"})
    assert response.wsgi_request.is_secure() is False


def test_forwarded_proto_is_trusted_when_configured(client, settings):
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    response = client.get("/accounts/login/", headers={"X-Forwarded-Proto": "https"})
    assert response.wsgi_request.is_secure() is True


def test_the_settings_read_the_proxy_switch_from_the_environment():
    from tests.test_settings_env import PRODUCTION, run_manage

    code = "from django.conf import settings; print(settings.SECURE_PROXY_SSL_HEADER)"
    assert run_manage("shell", "-c", code, env=PRODUCTION).stdout.strip().splitlines()[-1] == "None"
    trusted = (
        run_manage("shell", "-c", code, env={**PRODUCTION, "BEHIND_TLS_PROXY": "1"}).stdout.strip().splitlines()[-1]
    )
    assert trusted == "('HTTP_X_FORWARDED_PROTO', 'https')"


def test_numeric_passwords_are_refused():
    with pytest.raises(ValidationError, match="entirely numeric"):
        validate_password("83920174650")


def test_seed_demo_refuses_a_database_with_users(staff):
    from library.models import Agent

    with pytest.raises(CommandError, match="already has users"):
        call_command("seed_demo")
    assert not get_user_model().objects.filter(username="admin").exists()
    assert not Agent.objects.exists()


def test_seed_demo_with_force_seeds_anyway_and_a_seeded_demo_database_is_left_alone(staff, capsys):
    from library.demo import DEMO_AGENT

    call_command("seed_demo", "--force")
    assert get_user_model().objects.filter(username="admin").exists()
    call_command("seed_demo")  # `make demo` runs it on every start
    assert f"Demo agent {DEMO_AGENT} already exists" in capsys.readouterr().out


def test_seed_demo_seeds_an_empty_database(capsys):
    call_command("seed_demo")
    assert get_user_model().objects.filter(username="admin").exists()
