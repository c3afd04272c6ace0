"""OTLP sessions that fail to be stored (issue 42, finding 2; library/ingest/otlp_failures.py):
a message index that is not ASCII digits is ignored instead of raising; a session whose storing
raises is counted and retried with back-off while the agent's other sessions, and every other
agent's, are stored; after the last attempt it is dead-lettered, its new spans are rejected, and an
admin retries it from the ops page (who may not manage the agent: 403 / 404) or the command."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from library import tasks
from library.api.tokens import token_create
from library.ingest import otlp
from library.ingest.otlp import SpanIn, session_item, sessions_flush
from library.models import Agent, AgentSession, ApiToken, AuditEvent, Namespace, OtlpFlushFailure, OtlpSpan

from .otel_agent import otlp_protobuf, recorded_spans
from .test_otlp import answer, post

pytestmark = pytest.mark.django_db


@pytest.fixture
def ingest_token(agent):
    return token_create(agent=agent, scope=ApiToken.Scope.INGEST, name="otel")[1]


@pytest.fixture
def waiting(settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 30
    settings.PROCMEM_OTLP_FLUSH_RETRY_SECONDS = 60
    settings.PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS = 3


@pytest.fixture
def poisoned(monkeypatch):
    """Building the item of any session whose id starts with "poison" raises, as the `int("²")` of
    the issue did: a fault of ours on one session's spans."""
    real = otlp.session_item

    def session_item(session_id, spans):
        if session_id.startswith("poison"):
            raise ValueError("invalid literal for int() with base 10: '²'")
        return real(session_id, spans)

    monkeypatch.setattr(otlp, "session_item", session_item)


def _root_with(attributes: dict, conversation: str = "conv-odd"):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span(
        "invoke_agent support",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": conversation, **attributes},
    ):
        with tracer.start_as_current_span(
            "execute_tool lookupOrder",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookupOrder",
                "gen_ai.conversation.id": conversation,
            },
        ):
            pass
    provider.shutdown()
    return list(exporter.get_finished_spans())


# ---------------------------------------------------------------------------------------------- strict indices


def test_a_superscript_index_is_ignored_and_the_session_stored(client, agent, ingest_token, settings):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    spans = _root_with(
        {
            "gen_ai.prompt.².role": "user",
            "gen_ai.prompt.٣.content": "Arabic-Indic three",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "Where is my order?",
        }
    )
    response = post(client, ingest_token, otlp_protobuf(spans))
    assert response.status_code == 200, response.content
    assert not answer(response).HasField("partial_success")
    session = AgentSession.objects.get(agent=agent, session_id="conv-odd")
    assert session.task == "Where is my order?" and session.skeleton == ["lookupOrder"]


INDEXED = st.sampled_from(["gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages."])


@hyp_settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    keys=st.lists(
        st.tuples(INDEXED, st.text(max_size=12), st.sampled_from(["role", "content", "message.role", "x", ""])),
        max_size=6,
    ),
    value=st.one_of(st.text(max_size=20), st.integers(), st.none(), st.lists(st.integers(), max_size=2)),
)
def test_no_indexed_message_key_makes_building_a_session_raise(keys, value):
    attributes = {"gen_ai.operation.name": "chat", **{f"{p}{i}.{r}": value for p, i, r in keys}}
    span = SpanIn("a" * 32, "b" * 16, "", "chat", 1, 2, False, attributes)
    item = session_item("s", [span])
    assert isinstance(item["task"], str) and isinstance(item["reply"], str)


# ---------------------------------------------------------------------------------------------- one session


def _send(client, token, conversation: str) -> None:
    assert post(client, token, otlp_protobuf(recorded_spans(conversation=conversation))).status_code == 200


def test_a_failing_session_is_retried_with_back_off_then_dead_lettered_and_the_others_stored(
    client, agent, ingest_token, waiting, poisoned
):
    # given: two complete sessions of the agent waiting, one of them poisoned
    _send(client, ingest_token, "poison-1")
    _send(client, ingest_token, "conv-good")
    start = timezone.now() + timedelta(seconds=31)
    # when: the flush runs
    first = sessions_flush(agent=agent, now=start)
    # then: the good one is stored, the poisoned one counted and waiting for its next attempt
    assert first.stored == ["conv-good"] and list(first.failed) == ["poison-1"]
    assert first.failed["poison-1"].startswith("builtins.ValueError in session_item")
    assert "²" not in first.failed["poison-1"]  # the class and place, never a value of the spans
    failure = OtlpFlushFailure.objects.get(agent=agent, session_id="poison-1")
    assert (failure.state, failure.attempts) == (OtlpFlushFailure.State.RETRYING, 1)
    assert failure.next_attempt_at == start + timedelta(seconds=60)
    assert set(OtlpSpan.objects.filter(trace_id__in=failure.trace_ids).values_list("state", flat=True)) == {"pending"}
    # before the back-off has passed it is not tried; after, again, with twice the wait
    assert not sessions_flush(agent=agent, now=start + timedelta(seconds=59)).failed
    sessions_flush(agent=agent, now=start + timedelta(seconds=60))
    failure.refresh_from_db()
    assert failure.attempts == 2 and failure.next_attempt_at == start + timedelta(seconds=180)
    # the last attempt dead-letters it: its spans stop waiting
    last = sessions_flush(agent=agent, now=start + timedelta(seconds=180))
    assert last.dead == ["poison-1"]
    failure.refresh_from_db()
    assert (failure.state, failure.attempts, failure.next_attempt_at) == (OtlpFlushFailure.State.DEAD, 3, None)
    assert set(OtlpSpan.objects.filter(trace_id__in=failure.trace_ids).values_list("state", flat=True)) == {"dead"}
    assert not sessions_flush(agent=agent, now=start + timedelta(days=2)).failed
    assert OtlpSpan.objects.filter(state="dead").exists()  # kept (not dropped with the day-old spans)
    # a new trace of the dead-lettered conversation is rejected, saying why
    response = post(client, ingest_token, otlp_protobuf(recorded_spans(conversation="poison-1")))
    assert response.status_code == 200
    assert "dead-lettered" in answer(response).partial_success.error_message


def test_with_no_quiet_period_a_failing_session_is_accepted_and_waits(client, agent, ingest_token, settings, poisoned):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    spans = recorded_spans(conversation="poison-2") + recorded_spans(conversation="conv-3")
    response = post(client, ingest_token, otlp_protobuf(spans))
    assert response.status_code == 200, response.content  # was a 500 (issue 42)
    assert list(AgentSession.objects.values_list("session_id", flat=True)) == ["conv-3"]
    assert OtlpFlushFailure.objects.get(session_id="poison-2").attempts == 1
    assert OtlpSpan.objects.filter(conversation_id="poison-2", state="pending").exists()


def test_a_session_whose_store_raises_is_isolated_from_the_others_of_the_batch(
    client, agent, ingest_token, waiting, monkeypatch
):
    """The store itself (not the item) fails for one session: stored one by one, only it fails."""
    from library.ingest import store

    real = store.session_prepare

    def session_prepare(session, **kwargs):
        if session.session_id == "conv-bad-store":
            raise RuntimeError("disk full")
        return real(session, **kwargs)

    monkeypatch.setattr(store, "session_prepare", session_prepare)
    for conversation in ("conv-a", "conv-bad-store", "conv-b"):
        _send(client, ingest_token, conversation)
    result = sessions_flush(agent=agent, now=timezone.now() + timedelta(seconds=31))
    assert sorted(result.stored) == ["conv-a", "conv-b"] and list(result.failed) == ["conv-bad-store"]
    assert sorted(AgentSession.objects.values_list("session_id", flat=True)) == ["conv-a", "conv-b"]


# ---------------------------------------------------------------------------------------------- one agent


def test_one_agent_whose_flush_fails_does_not_stop_the_others(agent, settings, monkeypatch):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    settings.PROCMEM_OTLP_MAX_WAIT_SECONDS = 1
    other = Agent.objects.create(
        name="billing_agent", tools=["lookupOrder"], namespace=Namespace.objects.create(name="tenant-b")
    )
    old = timezone.now() - timedelta(seconds=5)
    for owner in (agent, other):  # a trace without its root each: complete by the longest wait
        children = [s for s in _spans_in(recorded_spans(conversation=f"conv-{owner.name}")) if s.parent_span_id]
        otlp.spans_stage(agent=owner, spans=children, now=old)
    real = otlp.sessions_flush

    def sessions_flush(*, agent, **kwargs):
        if agent.name == "support_agent":
            raise RuntimeError("lost the connection")
        return real(agent=agent, **kwargs)

    monkeypatch.setattr(otlp, "sessions_flush", sessions_flush)
    assert tasks.otlp_flush() == 1
    assert AgentSession.objects.get().agent == other
    failure = OtlpFlushFailure.objects.get(agent=agent, session_id="")
    assert failure.attempts == 1 and failure.error.startswith("builtins.RuntimeError")
    assert tasks.otlp_flush() == 0  # waits for its back-off: not tried again at once
    assert OtlpFlushFailure.objects.get(agent=agent, session_id="").attempts == 1
    OtlpFlushFailure.objects.filter(pk=failure.pk).update(next_attempt_at=timezone.now())
    monkeypatch.setattr(otlp, "sessions_flush", real)
    assert tasks.otlp_flush() == 1
    assert not OtlpFlushFailure.objects.exists()


def _spans_in(readable) -> list[SpanIn]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(otlp_protobuf(readable))
    return otlp.spans_of(request)[0]


# ---------------------------------------------------------------------------------------------- retry


@pytest.fixture
def dead_letter(client, agent, ingest_token, settings, poisoned):
    settings.PROCMEM_OTLP_QUIET_SECONDS = 0
    settings.PROCMEM_OTLP_FLUSH_MAX_ATTEMPTS = 1
    post(client, ingest_token, otlp_protobuf(recorded_spans(conversation="poison-9")))
    failure = OtlpFlushFailure.objects.get(session_id="poison-9")
    assert failure.state == OtlpFlushFailure.State.DEAD
    return failure


def test_the_ops_page_counts_failures_and_an_admin_retries_a_dead_letter(
    client, agent, dead_letter, admin_user, monkeypatch
):
    client.force_login(admin_user)
    page = client.get(reverse("reviews:ops_agent", args=[agent.name]))
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-otlp-failure="poison-9"' in html and "1 dead-lettered" in html
    # the fault is fixed (the patch undone); the retry stores it
    monkeypatch.undo()
    response = client.post(reverse("reviews:ops_otlp_retry", args=[agent.name, dead_letter.pk]))
    assert response.status_code == 302
    assert AgentSession.objects.filter(session_id="poison-9").exists()
    assert not OtlpFlushFailure.objects.exists()
    assert AuditEvent.objects.filter(action=AuditEvent.Action.OTLP_RETRY, actor=admin_user).count() == 1


def test_who_may_not_manage_the_agent_cannot_retry(client, agent, dead_letter, reviewer, outsider):
    url = reverse("reviews:ops_otlp_retry", args=[agent.name, dead_letter.pk])
    client.force_login(reviewer)  # sees the ops pages, manages nothing
    assert client.post(url).status_code == 403
    client.force_login(outsider)  # sees nothing
    assert client.post(url).status_code == 404
    dead_letter.refresh_from_db()
    assert dead_letter.state == OtlpFlushFailure.State.DEAD and dead_letter.attempts == 1
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.OTLP_RETRY).exists()


def test_the_command_lists_and_retries_dead_letters(agent, dead_letter, capsys, monkeypatch):
    call_command("otlp_dead_letters", "--json")
    [row] = json.loads(capsys.readouterr().out)
    assert (row["agent"], row["session"], row["state"], row["attempts"]) == (
        "support_agent",
        "poison-9",
        "dead-lettered",
        1,
    )
    monkeypatch.undo()
    call_command("otlp_dead_letters", "--agent", agent.name, "--retry", "poison-9")
    assert "1 stored" in capsys.readouterr().err
    assert AgentSession.objects.filter(session_id="poison-9").exists()
    call_command("otlp_dead_letters")
    assert "No OTLP session is failing." in capsys.readouterr().out
