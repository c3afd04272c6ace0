"""Issue 42, finding 2, as the probe ran it: a live server (gunicorn), a Celery worker and beat, two
agents in two namespaces as tenants, spans sent by the real OpenTelemetry SDK's OTLP/HTTP exporter.

Tenant A sends a conversation whose root span carries `gen_ai.prompt.².role` (the key that made
`int("²")` raise and stopped every flush) and one that the database refuses to store (a trigger the
test installs: a fault outside procmem's code, as a full disk or a broken constraint would be).
Tenant B sends an ordinary conversation. Beat's `library.otlp_flush` stores B's and A's `²` one while
A's refused one is retried with back-off and then dead-lettered; once the fault is gone,
`manage.py otlp_dead_letters --retry` stores it."""

from __future__ import annotations

import time

import pytest
from django.core.management import call_command
from django.db import connection
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from library.api.tokens import token_create
from library.models import Agent, AgentSession, ApiToken, Namespace, OtlpFlushFailure, OtlpSpan

from .otel_agent import run_agent

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.celery_worker,
    pytest.mark.django_db(transaction=True),
]

POISON_SQL = """
CREATE FUNCTION procmem_test_poison() RETURNS trigger AS $$
BEGIN
  IF NEW.session_id LIKE 'poison%' THEN RAISE EXCEPTION 'the test refuses this row'; END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER procmem_test_poison BEFORE INSERT ON library_agentsession
  FOR EACH ROW EXECUTE FUNCTION procmem_test_poison();
"""
UNPOISON_SQL = """
DROP TRIGGER IF EXISTS procmem_test_poison ON library_agentsession;
DROP FUNCTION IF EXISTS procmem_test_poison();
"""


@pytest.fixture
def live(request, monkeypatch, transactional_db):
    for name, value in {
        "PROCMEM_OTLP_QUIET_SECONDS": "1",  # beat's flush runs every 10 s (the shortest)
        "PROCMEM_OTLP_FLUSH_RETRY_SECONDS": "1",
        "PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS": "2",
        "PROCMEM_WARM_UP": "0",
    }.items():
        monkeypatch.setenv(name, value)
    with connection.cursor() as cursor:
        cursor.execute(POISON_SQL)
    try:
        server = request.getfixturevalue("gunicorn_server")
        request.getfixturevalue("celery_beat_process")
        yield server
    finally:
        with connection.cursor() as cursor:
            cursor.execute(UNPOISON_SQL)


def _send(server: str, token: str, conversations: list[tuple[str, dict]]) -> None:
    exporter = OTLPSpanExporter(endpoint=f"{server}/api/otlp/v1/traces", headers={"Authorization": f"Bearer {token}"})
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    tracer = provider.get_tracer("tenant")
    for conversation, extra in conversations:
        with tracer.start_as_current_span(
            "invoke_agent outer",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": conversation, **extra},
        ):
            run_agent(tracer, conversation=conversation)
    assert provider.force_flush(30_000)
    provider.shutdown()


def _until(check, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f"{what} within {seconds} s")


def test_a_poisoned_session_is_dead_lettered_while_the_other_tenants_are_stored(live, agent, capsys, settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 1  # this process flushes too (the retry)
    # given: two tenants
    other = Agent.objects.create(
        name="billing_agent",
        tools=["lookupOrder", "checkReturnWindow", "createApproval"],
        namespace=Namespace.objects.create(name="tenant-b"),
    )
    token_a = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="a")[1]
    token_b = token_create(agent=other, scope=ApiToken.Scope.INGEST, name="b")[1]
    # when: A sends the probe's key and a session the database refuses, B an ordinary one
    _send(live, token_a, [("conv-superscript", {"gen_ai.prompt.².role": "user"}), ("poison-a", {})])
    _send(live, token_b, [("conv-b", {})])
    # then: beat's flush stores B's and A's ² session ...
    _until(
        lambda: AgentSession.objects.filter(session_id__in=["conv-b", "conv-superscript"]).count() == 2,
        90,
        "the two good sessions were not stored",
    )
    assert AgentSession.objects.get(session_id="conv-b").agent == other
    # ... while A's poisoned one is retried and then dead-lettered
    failure = _until(
        lambda: OtlpFlushFailure.objects.filter(session_id="poison-a", state=OtlpFlushFailure.State.DEAD).first(),
        90,
        "the poisoned session was not dead-lettered",
    )
    assert failure.agent == agent and failure.attempts == 2
    assert failure.error.startswith("psycopg.errors.RaiseException in ")  # the class and place, no message
    assert set(OtlpSpan.objects.filter(agent=agent, conversation_id="poison-a").values_list("state", flat=True)) == {
        OtlpSpan.State.DEAD
    }
    assert not OtlpFlushFailure.objects.filter(session_id="").exists()  # no agent's whole flush failed
    # when: the fault is gone, an operator retries it
    with connection.cursor() as cursor:
        cursor.execute(UNPOISON_SQL)
    call_command("otlp_dead_letters", "--agent", agent.name, "--retry", "poison-a")
    # then
    assert "1 stored" in capsys.readouterr().err
    assert AgentSession.objects.filter(agent=agent, session_id="poison-a").exists()
    assert not OtlpFlushFailure.objects.exists()


def test_an_outcome_sent_right_after_an_otlp_session_is_held_and_applied_when_it_is_stored(live, agent):
    """Issue 39, item 10: the SDK exporter sends a session, the Python client reports its outcome at
    once (the spans wait for the quiet period): 202, held; beat's flush stores the session and
    applies it."""
    from procmem_client import ProcmemClient

    read = token_create(agent=agent, scope=ApiToken.Scope.READ, name="read")[1]
    ingest = token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="ingest")[1]
    _send(live, ingest, [("conv-rated", {})])
    client = ProcmemClient(base_url=live, agent=agent.name, token=read, ingest_token=ingest, timeout=30)
    answer = client.report_outcome("conv-rated", resolved=True, rating=5, source="csat")
    assert answer["held"] == ["conv-rated"] and answer["unknown"] == [], answer
    assert "applied when the session is stored" in answer["message"]
    assert not AgentSession.objects.filter(session_id="conv-rated").exists()  # still waiting
    session = _until(
        lambda: AgentSession.objects.filter(session_id="conv-rated", resolved__isnull=False).first(),
        90,
        "the session was not stored with its outcome",
    )
    assert (session.resolved, session.rating) == (True, 5.0)
