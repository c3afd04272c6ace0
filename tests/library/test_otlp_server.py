"""The real OpenTelemetry SDK with the real OTLP/HTTP exporter against a live procmem server
(gunicorn): a small instrumented tool-calling loop, configured only by the standard environment
variables, becomes one stored, redacted session with its tool calls in order. The official Python
exporter (opentelemetry-exporter-otlp-proto-http) sends protobuf only; the JSON encoding is sent by
a span exporter of the test's own that posts the SDK's spans as OTLP/JSON (the SDK's encoder and
protobuf's json_format, tests/library/otel_agent.py). No procmem code runs on the sending side.
Also: the exporter told which token is wrong (issue 39, item 9), and the probe's 20,000-span
request (issue 42, finding 4)."""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Sequence

import pytest
import requests
from google.rpc import status_pb2
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

from library.api.tokens import token_create
from library.models import AgentSession, ApiToken, OtlpSpan

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


def _exporter_answers(**kwargs):
    """The real OTLP/HTTP exporter with a requests session that records the server's answers."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    session, answers = requests.Session(), []
    session.hooks["response"].append(lambda response, *args, **kw: answers.append(response))
    return OTLPSpanExporter(session=session, **kwargs), answers


def _status(response: requests.Response) -> status_pb2.Status:
    status = status_pb2.Status()
    status.ParseFromString(response.content)
    return status


def test_the_exporter_is_told_whether_its_token_is_missing_or_wrong(otlp_server, agent):
    """Issue 39, item 9: no token and an unknown one are two different 401s."""
    said = {}
    for case, headers in (("missing", {}), ("wrong", {"Authorization": "Bearer pm_revoked-or-never-issued"})):
        exporter, answers = _exporter_answers(endpoint=f"{otlp_server}/api/otlp/v1/traces", headers=headers)
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        run_agent(provider.get_tracer("t"), conversation=f"conv-{case}")
        provider.shutdown()
        assert {a.status_code for a in answers} == {401}
        assert answers[0].headers["Content-Type"] == "application/x-protobuf"
        said[case] = _status(answers[0]).message
    assert said["missing"].startswith("No bearer token: send Authorization: Bearer <ingest token>")
    assert said["wrong"].startswith("The bearer token is unknown, revoked or expired")
    assert not AgentSession.objects.exists()


def _probe_request(spans: range, trace_id: bytes) -> ExportTraceServiceRequest:
    """The probe's request: spans of one trace whose root never comes (each has a parent)."""
    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for number in spans:
        span = scope.spans.add(
            trace_id=trace_id,
            span_id=number.to_bytes(8, "big"),
            parent_span_id=(10**9).to_bytes(8, "big"),
            name="execute_tool lookupOrder",
            start_time_unix_nano=1_700_000_000_000_000_000 + number,
            end_time_unix_nano=1_700_000_000_000_000_000 + number + 1,
        )
        for key, value in (
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "lookupOrder"),
            ("gen_ai.tool.call.arguments", json.dumps({"order_id": f"ORD-{number:08d}", "note": "x" * 16})),
        ):
            attribute = span.attributes.add(key=key)
            attribute.value.string_value = value
    return request


def test_the_probes_request_of_20000_rootless_spans_is_refused_and_accepted_in_halves(request, monkeypatch, agent):
    """Issue 42, finding 4, at the probe's size: one 2.5 MB protobuf request of 20,000 spans of a
    trace without a root is a 413 naming the limit; the same spans in two requests under the limits
    are accepted, the completion check runs over 20,000 waiting spans in each, and the agent's next
    session (the real exporter) is stored at once."""
    monkeypatch.setenv("PROCMEM_OTLP_MAX_SPANS_PER_SESSION", "20000")
    server = request.getfixturevalue("otlp_server")
    raw = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="probe")[1]
    headers = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {raw}"}
    url, trace = f"{server}/api/otlp/v1/traces", bytes.fromhex("ab" * 16)
    body = _probe_request(range(1, 20_001), trace).SerializeToString()
    assert len(body) > 2_400_000
    # one request: over PROCMEM_OTLP_MAX_SPANS_PER_REQUEST (10,000)
    whole = requests.post(url, data=body, headers=headers, timeout=120)
    assert whole.status_code == 413 and whole.headers["Content-Type"] == "application/x-protobuf"
    assert _status(whole).message.startswith("The request carries 20000 spans; at most 10000 per request")
    # the same spans in two requests
    for half in (range(1, 10_001), range(10_001, 20_001)):
        answer = requests.post(url, data=_probe_request(half, trace).SerializeToString(), headers=headers, timeout=120)
        assert answer.status_code == 200, answer.content
        parsed = ExportTraceServiceResponse()
        parsed.ParseFromString(answer.content)
        assert not parsed.HasField("partial_success")
    assert OtlpSpan.objects.filter(agent=agent, state=OtlpSpan.State.PENDING).count() == 20_000
    # the agent's next session is not held up
    exporter, answers = _exporter_answers(endpoint=url, headers={"Authorization": f"Bearer {raw}"})
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    run_agent(provider.get_tracer("t"), conversation="conv-after-probe")
    assert provider.force_flush(30_000)
    provider.shutdown()
    assert {a.status_code for a in answers} == {200}
    _assert_stored(_wait_for(agent, "conv-after-probe"))
