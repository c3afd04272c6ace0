"""The sending side of the OTLP tests: a small tool-calling loop instrumented with the real
OpenTelemetry SDK and the GenAI semantic conventions, and OTLP/JSON from the SDK's own encoder.
No procmem code: this is what a team's instrumented agent sends."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

from google.protobuf import json_format
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

TASK = "I'm Anna Schmidt (anna@example.com), refund ORD-12345 please"
TOOLS = [
    ("lookupOrder", {"order_id": "ORD-12345"}, {"status": "delivered"}),
    ("checkReturnWindow", {"order_id": "ORD-12345"}, {"status": "open"}),
    ("createApproval", {"order_id": "ORD-12345", "customer_email": "anna@example.com"}, {"status": "approved"}),
]


def run_agent(
    tracer, *, conversation: str | None = "conv-1", tools=TOOLS, model: str = "gpt-4o", fail: str = ""
) -> None:
    """One session: an invoke_agent root, a chat span holding the user's request, one execute_tool
    span per tool call (in order), and a last chat span with the reply."""
    common = {"gen_ai.conversation.id": conversation} if conversation else {}
    with tracer.start_as_current_span(
        "invoke_agent support",
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "support",
            "http.route": "/chat",
            **common,
        },
    ):
        messages = [
            {"role": "system", "parts": [{"type": "text", "content": "You are a support agent."}]},
            {"role": "user", "parts": [{"type": "text", "content": TASK}]},
        ]
        with tracer.start_as_current_span(
            f"chat {model}",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.input.messages": json.dumps(messages),
                **common,
            },
        ):
            pass
        for name, args, result in tools:
            with tracer.start_as_current_span(
                f"execute_tool {name}",
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.arguments": json.dumps(args),
                    "gen_ai.tool.call.result": result if isinstance(result, str) else json.dumps(result),
                    **common,
                },
            ) as span:
                if name == fail:
                    span.set_status(Status(StatusCode.ERROR, "tool failed"))
        with tracer.start_as_current_span(
            f"chat {model}",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": model,
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "Your refund is approved."}]}]
                ),
                **common,
            },
        ):
            pass


def recorded_spans(**kwargs) -> list[ReadableSpan]:
    """The finished spans of one run_agent, recorded in memory by the SDK, in the order they ended."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_agent(provider.get_tracer("tests.otel_agent"), **kwargs)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def otlp_protobuf(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_spans(spans).SerializeToString()


def otlp_json(spans: Sequence[ReadableSpan]) -> bytes:
    """OTLP/JSON as the specification writes it: protobuf's JSON mapping (json_format) with the
    trace and span ids in hex instead of base64."""
    payload = json_format.MessageToDict(encode_spans(spans))

    def hex_ids(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key in ("traceId", "spanId", "parentSpanId") and isinstance(item, str):
                    value[key] = base64.b64decode(item).hex()
                else:
                    hex_ids(item)
        elif isinstance(value, list):
            for item in value:
                hex_ids(item)

    hex_ids(payload)
    return json.dumps(payload).encode()
