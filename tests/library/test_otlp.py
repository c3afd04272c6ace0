"""POST /api/otlp/v1/traces (library/api/otlp.py, library/ingest/otlp.py): spans from the real
OpenTelemetry SDK and encoder become sessions; the OTLP/HTTP error responses; out-of-order spans
across requests; idempotent resends; malformed bodies fuzzed."""

from __future__ import annotations

import gzip
import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone
from google.protobuf import json_format
from google.rpc import status_pb2
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from library.api.tokens import token_create
from library.ingest.otlp import sessions_flush
from library.models import AgentSession, ApiToken, OtlpSpan

from .otel_agent import TOOLS, otlp_json, otlp_protobuf, recorded_spans

pytestmark = pytest.mark.django_db
URL = "/api/otlp/v1/traces"
PB, JS = "application/x-protobuf", "application/json"


@pytest.fixture
def ingest_token(agent):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="otel")[1]


@pytest.fixture
def quiet0(settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0


def post(client, token, body: bytes, content_type=PB, **headers):
    extra = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    extra.update({f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()})
    return client.generic("POST", URL, body, content_type=content_type, **extra)


def answer(response) -> ExportTraceServiceResponse:
    message = ExportTraceServiceResponse()
    if response["Content-Type"] == PB:
        message.ParseFromString(response.content)
    else:
        json_format.Parse(response.content, message)
    return message


def status_of(response) -> status_pb2.Status:
    message = status_pb2.Status()
    if response["Content-Type"] == PB:
        message.ParseFromString(response.content)
    else:
        json_format.Parse(response.content, message)
    return message


def test_route_name():
    assert reverse("api:otlp_traces") == URL


@pytest.mark.parametrize("encoding", ["protobuf", "json", "protobuf+gzip", "json+gzip"])
def test_an_agent_loop_becomes_one_redacted_session_with_its_tool_calls_in_order(
    client, agent, ingest_token, quiet0, encoding
):
    spans = recorded_spans(fail="checkReturnWindow")
    body = otlp_json(spans) if encoding.startswith("json") else otlp_protobuf(spans)
    headers = {}
    if encoding.endswith("gzip"):
        body, headers = gzip.compress(body), {"Content-Encoding": "gzip"}
    response = post(client, ingest_token, body, JS if encoding.startswith("json") else PB, **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == (JS if encoding.startswith("json") else PB)
    assert not answer(response).HasField("partial_success")  # full success leaves it unset
    session = AgentSession.objects.get(agent=agent)
    assert session.session_id == "conv-1" and session.channel == AgentSession.Channel.OTLP
    assert session.skeleton == [name for name, _, _ in TOOLS]
    assert [c["ok"] for c in session.tool_calls] == [True, False, True]
    assert session.model == "gpt-4o" and session.source_format == "procmem"
    assert session.task.startswith("I'm Anna Schmidt")  # the first user message, not the system prompt
    excerpt = json.dumps(session.redacted_excerpt)
    assert "anna@example.com" not in excerpt and "Anna Schmidt" not in excerpt and "ORD-12345" not in excerpt
    assert [e["tool"] for e in session.redacted_excerpt if e["role"] == "tool_call"] == session.skeleton
    assert session.ended_at is not None


def test_without_a_conversation_id_the_trace_id_is_the_session(client, agent, ingest_token, quiet0):
    spans = recorded_spans(conversation=None)
    assert post(client, ingest_token, otlp_protobuf(spans)).status_code == 200
    session = AgentSession.objects.get(agent=agent)
    assert session.session_id == format(spans[0].context.trace_id, "032x")


def test_spans_out_of_order_across_requests_wait_for_the_root_and_the_quiet_period(
    client, agent, ingest_token, settings
):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 30
    spans = recorded_spans()
    root = [s for s in spans if s.parent is None]
    children = [s for s in spans if s.parent is not None]
    # given: the last tool call first, then the others, each in its own request
    for span in reversed(children):
        assert post(client, ingest_token, otlp_protobuf([span])).status_code == 200
    assert not AgentSession.objects.exists()
    sessions_flush(agent=agent, now=timezone.now() + timedelta(minutes=59))
    assert not AgentSession.objects.exists()  # no root yet, and the longest wait has not passed
    # when: the root arrives; the quiet period has not passed
    assert post(client, ingest_token, otlp_protobuf(root)).status_code == 200
    assert not AgentSession.objects.exists()
    # then: once it has, the session is stored with its calls in start order
    result = sessions_flush(agent=agent, now=timezone.now() + timedelta(seconds=31))
    assert result.stored == ["conv-1"]
    assert AgentSession.objects.get().skeleton == [name for name, _, _ in TOOLS]
    assert set(OtlpSpan.objects.values_list("state", flat=True)) == {OtlpSpan.State.STORED}


def test_a_trace_whose_root_never_comes_is_stored_after_the_longest_wait(client, agent, ingest_token, settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    settings.PROCMEM_OTLP_MAX_WAIT_SECONDS = 600
    children = [s for s in recorded_spans() if s.parent is not None]
    post(client, ingest_token, otlp_protobuf(children))
    assert not AgentSession.objects.exists()
    assert sessions_flush(agent=agent, now=timezone.now() + timedelta(seconds=601)).stored == ["conv-1"]


@pytest.mark.parametrize("quiet", [0, 30])
def test_a_resend_changes_nothing_and_a_late_span_is_rejected(client, agent, ingest_token, settings, quiet):
    settings.PROCMEM_OTLP_QUIET_SECONDS = quiet
    spans = recorded_spans()
    post(client, ingest_token, otlp_protobuf(spans))
    if quiet:
        assert sessions_flush(agent=agent, now=timezone.now() + timedelta(seconds=31)).stored == ["conv-1"]
    before = list(AgentSession.objects.values())
    again = post(client, ingest_token, otlp_protobuf(spans))
    assert again.status_code == 200
    if quiet:  # the spans were kept: a resend is a duplicate
        assert not answer(again).HasField("partial_success")
    else:  # stored straight from the request: the resend is rejected as late, and changes nothing
        assert answer(again).partial_success.rejected_spans == len(spans)
    late = recorded_spans(tools=[("replyTemplates", {}, {})])  # another trace of the same conversation
    response = post(client, ingest_token, otlp_protobuf(late))
    assert response.status_code == 200
    partial = answer(response).partial_success
    assert partial.rejected_spans == len(late) and "after its session 'conv-1' was stored" in partial.error_message
    assert list(AgentSession.objects.values()) == before


def test_spans_without_any_genai_attribute_are_rejected_by_partial_success(client, agent, ingest_token, quiet0):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("web").start_as_current_span("GET /health", attributes={"http.route": "/health"}):
        pass
    response = post(client, ingest_token, otlp_json(exporter.get_finished_spans()), JS)
    assert response.status_code == 200
    partial = answer(response).partial_success
    assert partial.rejected_spans == 1 and "no GenAI" in partial.error_message
    assert not OtlpSpan.objects.exists() and not AgentSession.objects.exists()


def test_a_tool_name_that_does_not_normalise_is_rejected(client, agent, ingest_token, quiet0):
    spans = recorded_spans(tools=[("///", {}, {}), ("lookupOrder", {"order_id": "A1"}, {})])
    response = post(client, ingest_token, otlp_protobuf(spans))
    partial = answer(response).partial_success
    assert partial.rejected_spans == 1 and "not a tool name" in partial.error_message
    assert AgentSession.objects.get().skeleton == ["lookupOrder"]


def test_openinference_spans_are_read_too(client, agent, ingest_token, quiet0):
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openinference")
    with tracer.start_as_current_span(
        "agent",
        attributes={"openinference.span.kind": "AGENT", "session.id": "oi-1", "input.value": "Where is my order?"},
    ):
        with tracer.start_as_current_span(
            "llm",
            attributes={
                "openinference.span.kind": "LLM",
                "llm.model_name": "claude-x",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": "Be brief.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": "Where is order W1234567?",
            },
        ):
            pass
        with tracer.start_as_current_span(
            "lookupOrder",
            attributes={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookupOrder",
                "input.value": '{"order_id": "W1234567"}',
                "output.value": "delivered",
            },
        ):
            pass
    assert post(client, ingest_token, otlp_protobuf(exporter.get_finished_spans())).status_code == 200
    session = AgentSession.objects.get(agent=agent)
    assert session.session_id == "oi-1" and session.skeleton == ["lookupOrder"] and session.model == "claude-x"
    assert session.task == "Where is order W1234567?"


# ---------------------------------------------------------------------------------------------- errors


def test_errors_follow_the_otlp_http_specification(client, agent, ingest_token, settings):
    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    body = otlp_protobuf(recorded_spans())
    cases = [
        (post(client, None, body), 401, PB),
        (post(client, read, body), 403, PB),
        (post(client, ingest_token, b"\xff\x00garbage"), 400, PB),
        (post(client, ingest_token, b"{not json", JS), 400, JS),
        (
            post(client, ingest_token, b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}', JS),
            400,
            JS,
        ),
        (post(client, ingest_token, b'{"resourceSpans": 3}', JS), 400, JS),
        (post(client, ingest_token, body, "text/plain"), 415, JS),
        (post(client, ingest_token, b"not gzip", PB, **{"Content-Encoding": "gzip"}), 400, PB),
        (post(client, ingest_token, body, PB, **{"Content-Encoding": "br"}), 415, PB),
        (client.get(URL, HTTP_AUTHORIZATION=f"Bearer {ingest_token}"), 405, JS),
    ]
    for response, status, content_type in cases:
        assert response.status_code == status, (status, response.content)
        assert response["Content-Type"] == content_type, (status, response.content)
        assert status_of(response).message
    settings.PROCMEM_INGEST_MAX_BODY_BYTES = 1024
    big = gzip.compress(b"\x00" * 10_000)  # small compressed, too big inflated
    assert post(client, ingest_token, big, PB, **{"Content-Encoding": "gzip"}).status_code == 413
    assert post(client, ingest_token, b"\x0a" * 2000, PB).status_code == 413
    assert not AgentSession.objects.exists() and not OtlpSpan.objects.exists()


_stored_before: list = []


@hyp_settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    body=st.one_of(
        st.binary(max_size=400),
        st.builds(lambda b, cut: b[:cut], st.just(otlp_protobuf(recorded_spans())), st.integers(0, 3000)),
        st.recursive(
            st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20)),
            lambda inner: st.one_of(
                st.lists(inner, max_size=3),
                st.dictionaries(
                    st.sampled_from(
                        [
                            "resourceSpans",
                            "scopeSpans",
                            "spans",
                            "traceId",
                            "spanId",
                            "attributes",
                            "key",
                            "value",
                            "stringValue",
                            "name",
                        ]
                    ),
                    inner,
                    max_size=4,
                ),
            ),
            max_leaves=20,
        ).map(lambda v: json.dumps(v).encode()),
    ),
    content_type=st.sampled_from([PB, JS, "text/plain", ""]),
    gzipped=st.booleans(),
)
def test_malformed_otlp_never_gets_a_500_and_changes_nothing_stored(
    client, agent, ingest_token, quiet0, body, content_type, gzipped
):
    if not AgentSession.objects.exists():
        post(client, ingest_token, otlp_protobuf(recorded_spans(conversation="kept")))
    before = list(AgentSession.objects.order_by("pk").values())
    response = post(
        client,
        ingest_token,
        gzip.compress(body) if gzipped else body,
        content_type or "application/octet-stream",
        **({"Content-Encoding": "gzip"} if gzipped else {}),
    )
    assert response.status_code in (200, 400, 413, 415), response.content
    if response.status_code == 200:
        answer(response)
    else:
        assert status_of(response).message
    assert list(AgentSession.objects.filter(pk__in=[b["id"] for b in before]).order_by("pk").values()) == before


@pytest.mark.parametrize("quiet", [0, 30])
def test_a_value_postgresql_cannot_hold_rejects_spans_and_stores_nothing_of_it(
    client, agent, ingest_token, settings, quiet
):
    settings.PROCMEM_OTLP_QUIET_SECONDS = quiet
    spans = recorded_spans(tools=[("lookupOrder", {"order_id": "A1"}, "ok\x00")])  # a NUL in the tool's result
    response = post(client, ingest_token, otlp_protobuf(spans))
    assert response.status_code == 200
    partial = answer(response).partial_success
    assert partial.rejected_spans >= 1 and "NUL" in partial.error_message
    sessions_flush(agent=agent, now=timezone.now() + timedelta(hours=2))
    assert "\\u0000" not in json.dumps(list(AgentSession.objects.values("tool_calls", "redacted_excerpt")))
