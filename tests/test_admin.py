"""Django's admin: every model of library and reviews is registered; every list and detail page
opens for a superuser; what the database forbids to change (versions, the audit log, finished eval
runs) cannot be changed or deleted there either; secrets are never shown."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.contrib import admin
from django.urls import reverse

from library.models import AuditEvent, EvalRun, ProcedureVersion
from tests.conftest import make_passing_eval

pytestmark = pytest.mark.django_db


def _models():
    return [m for app in ("library", "reviews") for m in apps.get_app_config(app).get_models()]


def test_every_model_is_registered():
    missing = [m.__name__ for m in _models() if m not in admin.site._registry]
    assert missing == []


def test_every_list_and_detail_page_opens(client, admin_user, candidate, passing_eval):
    from reviews.webhooks import webhook_create

    make_passing_eval(candidate)
    webhook, secret = webhook_create(
        agent=candidate.procedure.agent,
        user=admin_user,
        name="w",
        url="https://h.example.com/",
        events=["eval.finished"],
    )
    client.force_login(admin_user)
    for model in _models():
        meta = model._meta
        listing = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        assert listing.status_code == 200, meta.label
        obj = model.objects.first()
        if obj is not None:
            detail = client.get(reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk]))
            assert detail.status_code == 200, meta.label
            assert secret not in detail.content.decode()


@pytest.mark.parametrize("model", [ProcedureVersion, AuditEvent, EvalRun])
def test_what_the_database_forbids_has_no_change_or_delete(client, admin_user, candidate, model):
    make_passing_eval(candidate)
    obj = model.objects.first()
    model_admin = admin.site._registry[model]
    request = type("R", (), {"user": admin_user})()
    assert not model_admin.has_change_permission(request, obj)
    assert not model_admin.has_delete_permission(request, obj)
    assert not model_admin.has_add_permission(request)
    client.force_login(admin_user)
    meta = model._meta
    change_url = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
    assert client.post(change_url, {}).status_code == 403
    assert (
        client.post(
            reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[obj.pk]), {"post": "yes"}
        ).status_code
        == 403
    )
    assert model.objects.filter(pk=obj.pk).exists()


def test_agent_api_key_is_not_in_the_admin(client, admin_user, agent):
    agent.model_api_key = "sk-very-secret-key"
    agent.save()
    client.force_login(admin_user)
    page = client.get(reverse("admin:library_agent_change", args=[agent.pk])).content.decode()
    assert "sk-very-secret-key" not in page


def test_a_sessions_raw_text_is_not_in_the_admin(client, admin_user, agent):
    # admins review too: the admin shows the redacted excerpt, never the raw task or arguments
    from library.models import AgentSession

    session = AgentSession.objects.create(
        agent=agent,
        session_id="s-raw",
        task="I am Emma Kim, user emma_kim_9957",
        skeleton=["lookupOrder"],
        tool_calls=[{"name": "lookupOrder", "args": {"user_id": "emma_kim_9957"}}],
        redacted_excerpt=[{"role": "user", "text": "I am {{person_name}}, user {{user_id}}"}],
    )
    client.force_login(admin_user)
    page = client.get(reverse("admin:library_agentsession_change", args=[session.pk])).content.decode()
    assert "emma_kim_9957" not in page and "Emma Kim" not in page and "{{person_name}}" in page


def test_staff_without_the_model_permission_sees_nothing(client, reviewer, candidate):
    reviewer.is_staff = True
    reviewer.save()
    client.force_login(reviewer)
    assert client.get(reverse("admin:library_procedureversion_changelist")).status_code == 403


def test_every_foreign_key_column_is_read_with_its_row():
    # each list names the related rows its columns show: Django's default joins every non-null
    # foreign key however deep and no nullable one, which costs a query per row; a version's name
    # reads its procedure, so a version column names that too
    from django.db.models import ForeignKey

    unjoined = []
    for model, model_admin in admin.site._registry.items():
        if model._meta.app_label not in ("library", "reviews"):
            continue
        joined = model_admin.list_select_related
        for name in model_admin.list_display:
            field = next((f for f in model._meta.get_fields() if f.name == name), None)
            if not isinstance(field, ForeignKey) or joined is True:
                continue
            path = f"{name}__procedure" if field.related_model is ProcedureVersion else name
            if not any(j == path or j.startswith(path + "__") for j in joined or ()):
                unjoined.append(f"{model.__name__}.{path}")
    assert unjoined == []


def test_inlines_show_their_rows_read_only():
    from library.admin import ReadOnlyInline

    inlines = [
        inline
        for model_admin in admin.site._registry.values()
        for inline in model_admin.inlines
        if issubclass(inline, ReadOnlyInline)
    ]
    assert len(inlines) == 2
    request = type("R", (), {})()
    for inline in inlines:
        assert inline(inline.model, admin.site).get_readonly_fields(request) == inline.fields
