"""OTLP limits and the completion query (issue 42, finding 4), the error bodies of the endpoint
(finding 8: a 500 in the request's encoding), and which token is wrong (issue 39, item 9)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from google.rpc import code_pb2

from library.api.tokens import token_create
from library.ingest import otlp
from library.ingest.otlp import SpanIn, sessions_flush, spans_accept, spans_stage
from library.models import ApiToken, OtlpSpan

from .otel_agent import otlp_json, otlp_protobuf, recorded_spans
from .test_otlp import JS, PB, answer, post, status_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def ingest_token(agent):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="otel")[1]


def rootless(n: int, trace: str = "c" * 32, conversation: str = "") -> list[SpanIn]:
    attributes = {"gen_ai.operation.name": "chat", **({"gen_ai.conversation.id": conversation} if conversation else {})}
    return [SpanIn(trace, f"{i + 1:016x}", "f" * 16, "chat", i + 1, i + 2, False, dict(attributes)) for i in range(n)]


# ---------------------------------------------------------------------------------------------- limits


@pytest.mark.parametrize("content_type", [PB, JS])
def test_a_request_over_the_span_limit_is_413_in_its_encoding(client, agent, ingest_token, settings, content_type):
    settings.PROCMEM_OTLP_MAX_SPANS_PER_REQUEST = 5
    spans = recorded_spans()
    assert len(spans) == 6
    body = otlp_protobuf(spans) if content_type == PB else otlp_json(spans)
    response = post(client, ingest_token, body, content_type)
    assert response.status_code == 413 and response["Content-Type"] == content_type
    status = status_of(response)
    assert status.code == code_pb2.RESOURCE_EXHAUSTED
    assert status.message.startswith("The request carries 6 spans; at most 5 per request")
    assert "PROCMEM_OTLP_MAX_SPANS_PER_REQUEST" in status.message
    assert not OtlpSpan.objects.exists()


def test_spans_over_the_bound_of_a_waiting_session_are_rejected_by_name(agent, settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 30
    settings.PROCMEM_OTLP_MAX_SPANS_PER_SESSION = 10
    assert spans_stage(agent=agent, spans=rootless(6)) == []
    late, _ = spans_accept(agent=agent, spans=rootless(9)[6:] + rootless(3, trace="d" * 32, conversation="conv-x"))
    assert late == []
    rejected = spans_stage(agent=agent, spans=[*rootless(12)[9:], *rootless(2, trace="d" * 32, conversation="conv-x")])
    assert len(rejected) == 2  # spans 10 and 11 of the trace; the conversation's are duplicates
    assert "has 10 spans waiting already (PROCMEM_OTLP_MAX_SPANS_PER_SESSION)" in rejected[0].message
    assert OtlpSpan.objects.filter(trace_id="c" * 32).count() == 10


# ---------------------------------------------------------------------------------------------- the completion query


@pytest.mark.postgres
@pytest.mark.parametrize("statistics", ["none", "fresh"])
def test_the_completion_query_uses_its_indexes_whatever_the_statistics(agent, settings, statistics):
    """The probe's shape: 20,000 waiting spans of one trace without a root. Every query the
    completion check makes on the span table is planned (EXPLAIN, in the flush's own transaction
    and settings) as an index scan: no sequential scan, no join, no subplan."""
    settings.PROCMEM_OTLP_QUIET_SECONDS = 30
    settings.PROCMEM_OTLP_MAX_SPANS_PER_SESSION = 30_000
    spans_stage(agent=agent, spans=rootless(20_000, conversation="conv-big"))
    spans_stage(agent=agent, spans=rootless(50, trace="e" * 32, conversation="conv-small"))
    with connection.cursor() as cursor:
        if statistics == "none":  # as on a database nobody analysed
            cursor.execute("DELETE FROM pg_statistic WHERE starelid = 'library_otlpspan'::regclass")
        else:
            cursor.execute("ANALYZE library_otlpspan")
    plans: list[tuple[str, str]] = []

    def explain(execute, sql, params, many, context):
        if sql.lstrip().upper().startswith("SELECT") and "library_otlpspan" in sql and "pg_" not in sql:
            cursor = context["cursor"]
            cursor.execute("EXPLAIN " + sql, params)
            plans.append((sql, "\n".join(row[0] for row in cursor.fetchall())))
        return execute(sql, params, many, context)

    touched = rootless(2, conversation="conv-big")[1:] + rootless(1, trace="e" * 32, conversation="conv-small")
    with connection.execute_wrapper(explain):
        sessions_flush(agent=agent, touched=touched)
        spans_stage(agent=agent, spans=rootless(20_001, conversation="conv-big")[20_000:])
    completion = [(sql, plan) for sql, plan in plans if "GROUP BY" in sql or "DISTINCT" in sql]
    assert len(completion) >= 3, plans  # the conversation look-up, the per-trace rows, the waiting counts
    for sql, plan in completion:
        assert "Seq Scan" not in plan and "Nested Loop" not in plan and "SubPlan" not in plan, (sql, plan)
        assert "Index" in plan, (sql, plan)


# ---------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize("content_type", [PB, JS])
def test_a_500_is_a_status_in_the_requests_encoding(agent, ingest_token, monkeypatch, content_type):
    def broken(**kwargs):
        raise RuntimeError("a fault of ours")

    monkeypatch.setattr(otlp, "spans_accept", broken)
    client = Client(raise_request_exception=False)
    spans = recorded_spans()
    response = post(
        client, ingest_token, otlp_protobuf(spans) if content_type == PB else otlp_json(spans), content_type
    )
    assert response.status_code == 500 and response["Content-Type"] == content_type
    status = status_of(response)
    assert status.code == code_pb2.INTERNAL and "logged" in status.message
    assert "a fault of ours" not in status.message


@pytest.mark.parametrize("content_type", [PB, JS])
def test_no_token_and_a_wrong_token_are_told_apart(client, agent, content_type):
    body = otlp_protobuf(recorded_spans()) if content_type == PB else otlp_json(recorded_spans())
    missing = post(client, None, body, content_type)
    wrong = post(client, "pm_not-a-token-of-this-server", body, content_type)
    assert missing.status_code == wrong.status_code == 401
    assert status_of(missing).message.startswith("No bearer token: send Authorization: Bearer <ingest token>")
    assert status_of(wrong).message.startswith("The bearer token is unknown, revoked or expired")
    assert missing["WWW-Authenticate"] == 'Bearer realm="procmem"'
    assert wrong["WWW-Authenticate"] == 'Bearer realm="procmem", error="invalid_token"'


def test_a_request_whose_spans_were_all_accepted_has_no_partial_success(client, agent, ingest_token, settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    response = post(client, ingest_token, otlp_protobuf(recorded_spans()))
    assert response.status_code == 200 and not answer(response).HasField("partial_success")


# ---------------------------------------------------------------------------------------------- outcomes that wait


def _outcomes(client, token, *items):
    return client.post(
        "/api/v1/sessions/outcomes", list(items), content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )


def test_an_outcome_for_a_waiting_session_is_held_then_applied_when_it_is_stored(client, agent, ingest_token, settings):
    from datetime import timedelta

    from django.utils import timezone

    from library.ingest.otlp_outcomes import held_outcomes_expire
    from library.models import AgentSession, HeldOutcome, SessionLabel

    settings.PROCMEM_OTLP_QUIET_SECONDS = 30
    assert post(client, ingest_token, otlp_protobuf(recorded_spans(conversation="conv-7"))).status_code == 200
    # when: the outcome comes while the spans wait
    response = _outcomes(client, ingest_token, {"session_id": "conv-7", "resolved": False, "rating": 2})
    # then: 202, held, and said so
    assert response.status_code == 202, response.content
    answer_ = response.json()
    assert answer_["held"] == ["conv-7"] and answer_["unknown"] == [] and answer_["counts"]["held"] == 1
    assert "held, and applied when the session is stored" in answer_["message"]
    # an id nobody sent is still unknown beside it: 207
    mixed = _outcomes(
        client, ingest_token, {"session_id": "conv-7", "escalated": True}, {"session_id": "nope", "resolved": True}
    )
    assert mixed.status_code == 207 and mixed.json()["unknown"] == ["nope"] and mixed.json()["held"] == ["conv-7"]
    # when the session is stored, both are applied
    assert sessions_flush(agent=agent, now=timezone.now() + timedelta(seconds=31)).stored == ["conv-7"]
    session = AgentSession.objects.get(session_id="conv-7")
    assert (session.resolved, session.rating, session.escalated) == (False, 2.0, True)
    assert SessionLabel.objects.filter(session=session, via__startswith="api:").count() == 2
    assert not HeldOutcome.objects.exists()
    # an outcome now is applied at once
    assert _outcomes(client, ingest_token, {"session_id": "conv-7", "rating": 5}).status_code == 200
    # held outcomes of a session never stored are dropped after their time
    post(client, ingest_token, otlp_protobuf(recorded_spans(conversation="conv-8")))
    assert _outcomes(client, ingest_token, {"session_id": "conv-8", "resolved": True}).status_code == 202
    assert held_outcomes_expire(timezone.now() + timedelta(hours=2)) == 1
