"""Identifiers from OTLP that look personal are not stored as sent (issue 42, finding 6): span names,
`gen_ai.conversation.id` (the session id), the model, `procmem.task_key` and `procmem.intent` are
screened with the project's recognizers (library/redaction/identifiers.py). The leak scan
(library/scans/personal_data.py) finds none of the values on any surface afterwards, waiting spans
included, and the OtlpSpan admin shows ids and state only."""

from __future__ import annotations

import pytest
from django.urls import reverse
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from library.api.tokens import token_create
from library.ingest.otlp_items import personal_session_id
from library.models import AgentSession, ApiToken, Intent, OtlpSpan
from library.redaction.identifiers import personal_in_identifier
from library.scans.personal_data import KnownValue, scan

from .otel_agent import otlp_protobuf, run_agent
from .test_otlp import answer, post

pytestmark = pytest.mark.django_db

PHONE, EMAIL, USER = "+49 151 23456789", "anna.schmidt@example.com", "mia_li_3668"
VALUES = [KnownValue(PHONE, "other"), KnownValue(EMAIL, "email"), KnownValue(USER, "user_id")]


@pytest.fixture
def ingest_token(agent):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="otel")[1]


def _personal_spans():
    """The SDK's spans of one session whose identifiers all carry personal data."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span(
        f"invoke_agent for {EMAIL}",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": PHONE,
            "gen_ai.request.model": EMAIL,
            "procmem.intent": f"refund-{USER}",
            "procmem.task_key": f"ticket of {EMAIL}",
        },
    ):
        run_agent(tracer, conversation=PHONE)
    provider.shutdown()
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("quiet", [0, 30])
def test_personal_identifiers_are_replaced_or_dropped_and_the_leak_scan_finds_none(
    client, agent, ingest_token, settings, quiet, admin_user
):
    settings.PROCMEM_OTLP_QUIET_SECONDS = quiet
    response = post(client, ingest_token, otlp_protobuf(_personal_spans()))
    assert response.status_code == 200
    partial = answer(response).partial_success
    assert partial.rejected_spans == 0  # a warning: nothing rejected
    assert "gen_ai.conversation.id looks personal (phone_number)" in partial.error_message
    assert "procmem.intent looks personal (user_id): dropped" in partial.error_message
    for value in (PHONE, EMAIL, USER):
        assert value not in partial.error_message
    if quiet:  # the spans wait: their rows hold no raw identifier either
        assert OtlpSpan.objects.count() > 0
        assert set(OtlpSpan.objects.values_list("conversation_id", flat=True)) == {personal_session_id(PHONE)}
    else:
        session = AgentSession.objects.get(agent=agent)
        assert session.session_id == personal_session_id(PHONE)
        assert session.model == "gpt-4o"  # the next model attribute (the chat span's), not the e-mail
        assert session.intent is None and not Intent.objects.filter(name__contains="mia").exists()
        assert session.task_key.startswith("k-")
    # the leak scan over every surface (sessions, spans, intents, audit, ...) finds nothing
    assert scan(VALUES, include_export=False) == []
    # and the admin's span list shows ids and state only
    client.force_login(admin_user)
    listing = client.get(reverse("admin:library_otlpspan_changelist")).content.decode()
    span = OtlpSpan.objects.first()
    detail = client.get(reverse("admin:library_otlpspan_change", args=[span.pk])).content.decode() if span else ""
    for value in (PHONE, EMAIL, USER, "invoke_agent for"):
        assert value not in listing and value not in detail


def test_the_leak_scan_sees_raw_identifiers_on_spans():
    """The scan covers the span rows: a raw value written there directly is found."""
    from library.models import Agent

    agent = Agent.objects.create(name="raw_agent")
    OtlpSpan.objects.create(
        agent=agent, trace_id="a" * 32, span_id="b" * 16, name=f"chat {EMAIL}", received_at="2026-12-06T00:00:00Z"
    )
    assert [(h.surface, h.field) for h in scan(VALUES, include_export=False)] == [("library.OtlpSpan", "name")]


def test_an_outcome_sent_with_the_original_conversation_id_finds_the_session(client, agent, ingest_token, settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    post(client, ingest_token, otlp_protobuf(_personal_spans()))
    response = client.post(
        "/api/v1/sessions/outcomes",
        {"session_id": PHONE, "resolved": True},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {ingest_token}",
    )
    assert response.status_code == 200, response.content
    assert response.json()["applied"] == [personal_session_id(PHONE)]
    assert PHONE not in response.content.decode()
    assert AgentSession.objects.get().resolved is True


@pytest.mark.parametrize(
    "value", ["conv-1", "3f2b9c1e-5d4a-4c3b-9a8f-1b2c3d4e5f60", "gpt-4o-2024-08-06", "chat gpt-4o", "refund_over_limit"]
)
def test_ordinary_identifiers_pass_unchanged(value):
    assert personal_in_identifier(value) == ()
