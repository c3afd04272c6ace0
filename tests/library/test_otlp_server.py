"""The real OpenTelemetry SDK with the real OTLP/HTTP exporter against a live procmem server
(gunicorn): a small instrumented tool-calling loop, configured only by the standard environment
variables, becomes one stored, redacted session with its tool calls in order. The official Python
exporter (opentelemetry-exporter-otlp-proto-http) sends protobuf only; the JSON encoding is sent by
a span exporter of the test's own that posts the SDK's spans as OTLP/JSON (the SDK's encoder and
protobuf's json_format, tests/library/otel_agent.py). No procmem code runs on the sending side."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Sequence

import pytest
import requests
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken

from .otel_agent import TOOLS, otlp_json, run_agent

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def otlp_server(request, monkeypatch):
    monkeypatch.setenv("PROCMEM_OTLP_QUIET_SECONDS", "0")  # stored as soon as the root span arrives
    return request.getfixturevalue("gunicorn_server")


class OtlpJsonExporter(SpanExporter):
    """OTLP/HTTP with the JSON encoding, gzip-compressed, to the endpoint the standard variables name."""

    def __init__(self, endpoint: str, token: str):
        self.endpoint, self.token = endpoint, token
        self.answers: list[requests.Response] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        response = requests.post(
            self.endpoint,
            data=gzip.compress(otlp_json(spans)),
            timeout=30,
            headers={
                "Content-Type": "application/json",
                "Content-Encoding": "gzip",
                "Authorization": f"Bearer {self.token}",
            },
        )
        self.answers.append(response)
        return SpanExportResult.SUCCESS if response.status_code == 200 else SpanExportResult.FAILURE


def _wait_for(agent, session_id: str) -> AgentSession:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = AgentSession.objects.filter(agent=agent, session_id=session_id).first()
        if found is not None:
            return found
        time.sleep(0.2)
    pytest.fail(f"session {session_id} was not stored")


def _assert_stored(session: AgentSession) -> None:
    assert session.channel == AgentSession.Channel.OTLP
    assert session.skeleton == [name for name, _, _ in TOOLS]
    assert session.model == "gpt-4o" and session.task.startswith("I'm Anna Schmidt")
    excerpt = json.dumps(session.redacted_excerpt)
    assert "anna@example.com" not in excerpt and "Anna Schmidt" not in excerpt
    assert [e["tool"] for e in session.redacted_excerpt if e["role"] == "tool_call"] == session.skeleton


@pytest.mark.parametrize("processor", ["batch", "simple"])
def test_the_otlp_http_exporter_in_protobuf_delivers_a_session(otlp_server, agent, monkeypatch, processor):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="otel")[1]
    # given: an exporter configured only as the issue says, by the standard variables
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"{otlp_server}/api/otlp")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{raw}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", "gzip" if processor == "batch" else "none")
    exporter = OTLPSpanExporter()
    provider = TracerProvider()
    # simple: one request per span as each ends, children before their root (out of order)
    provider.add_span_processor(BatchSpanProcessor(exporter) if processor == "batch" else SimpleSpanProcessor(exporter))
    # when: the instrumented loop runs
    run_agent(provider.get_tracer("support-agent"), conversation=f"conv-pb-{processor}")
    assert provider.force_flush(30_000)
    provider.shutdown()
    # then
    _assert_stored(_wait_for(agent, f"conv-pb-{processor}"))


def test_otlp_json_delivers_a_session(otlp_server, agent):
    raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="otel")[1]
    exporter = OtlpJsonExporter(f"{otlp_server}/api/otlp/v1/traces", raw)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_agent(provider.get_tracer("support-agent"), conversation="conv-json")
    provider.shutdown()
    assert [a.status_code for a in exporter.answers] == [200] * len(exporter.answers)
    assert all(a.headers["Content-Type"] == "application/json" and a.json() == {} for a in exporter.answers)
    _assert_stored(_wait_for(agent, "conv-json"))
