"""Checks, the demo agent (simulator) and the runners: HTTP (timeouts, retries, malformed answers,
the concurrency limit), model replay against a scripted chat-completions server on 127.0.0.1, and
the Python runner."""

from __future__ import annotations

import threading
import time

import pytest

from library.evals.checks import CheckSpecError, check_case, validate_checks
from library.evals.errors import RunnerError
from library.evals.runners import (
    HttpPolicy,
    HttpRunner,
    ModelReplayRunner,
    PythonRunner,
    openai_tools,
    parse_output,
    recorded_result,
    runner_for_agent,
)
from library.evals.simulator import simulate
from tests.evals_support import DEMO_CANDIDATE_STEPS, ScriptedServer

NO_WAIT = HttpPolicy(timeout=2.0, retries=2, backoff=0.0)

# --------------------------------------------------------------------------------------------- checks


def check(calls, reply="", **spec):
    spec = {"expected_tools": [], "forbidden_tools": [], "reply_must_match": [], "reply_must_not_match": [], **spec}
    return check_case(tool_calls=calls, reply=reply, **spec)


def test_expected_calls_in_order_with_other_calls_between():
    calls = [
        {"name": "lookupOrder", "args": {"order_id": "A"}},
        {"name": "think"},
        {"name": "createApproval", "args": {"order_id": "A", "amount": 5}},
    ]
    assert check(calls, expected_tools=["lookupOrder", {"name": "createApproval", "args": {"order_id": "A"}}]) == []
    assert check(calls, expected_tools=[{"name": "createApproval", "args": {"order_id": "B"}}]) == [
        "expected call createApproval(order_id='B') was not made"
    ]
    assert check(calls, expected_tools=["createApproval", "lookupOrder"]) == [
        "expected call lookupOrder came out of order"
    ]


def test_forbidden_calls_and_forbidden_before():
    calls = [{"name": "replyTemplates", "args": {"template": "refund_pending"}}, {"name": "createApproval"}]
    assert check(calls, forbidden_tools=["cancel_reservation"]) == []
    assert check(calls, forbidden_tools=[{"name": "replyTemplates", "before": "createApproval"}]) == [
        "forbidden call replyTemplates was made before createApproval"
    ]
    later = [{"name": "createApproval"}, {"name": "replyTemplates"}]
    assert check(later, forbidden_tools=[{"name": "replyTemplates", "before": "createApproval"}]) == []


def test_reply_patterns():
    assert (
        check(
            [],
            reply="Your refund is pending approval",
            reply_must_match=["(?i)approval"],
            reply_must_not_match=["confirmed"],
        )
        == []
    )
    assert (
        len(check([], reply="Refund confirmed", reply_must_match=["approval"], reply_must_not_match=["confirmed"])) == 2
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"expected_tools": "lookupOrder"}, "expected_tools: must be a list"),
        ({"expected_tools": [{"args": {}}]}, "expected_tools[0]"),
        ({"forbidden_tools": [{"name": "x", "before": 3}]}, "forbidden_tools[0].before"),
        ({"reply_must_match": ["("]}, "reply_must_match[0]: not a regular expression"),
    ],
)
def test_malformed_checks_name_the_field(spec, message):
    full = {"expected_tools": [], "forbidden_tools": [], "reply_must_match": [], "reply_must_not_match": [], **spec}
    with pytest.raises(CheckSpecError, match=message.replace("[", r"\[").replace("(", r"\(")):
        validate_checks(**full)


# --------------------------------------------------------------------------------------------- the simulator


REFUND_CASE = {
    "id": 1,
    "intent": "refund_over_limit",
    "task": "Refund ORD-1",
    "context": {"order_id": "ORD-1", "amount": "480 EUR"},
}


def test_simulator_without_procedure_promises_the_refund_without_approval():
    out = simulate(case=REFUND_CASE, procedures=[])
    assert [c["name"] for c in out["tool_calls"]] == ["lookupOrder", "checkReturnWindow", "replyTemplates"]
    assert "is being processed" in out["reply"]


def test_simulator_follows_the_injected_procedure_and_is_deterministic():
    procedure = {
        "id": "refund.over_limit",
        "version": 2,
        "steps": DEMO_CANDIDATE_STEPS,
        "requiredTools": [],
        "forbiddenActions": [],
    }
    out = simulate(case=REFUND_CASE, procedures=[procedure])
    assert [c["name"] for c in out["tool_calls"]] == [
        "lookupOrder",
        "checkReturnWindow",
        "createApproval",
        "replyTemplates",
    ]
    assert out["tool_calls"][0]["args"] == {"order_id": "ORD-1"}
    assert "approval" in out["reply"] and "480 EUR" in out["reply"]
    assert simulate(case=REFUND_CASE, procedures=[procedure]) == out


def test_simulator_without_a_reply_step_replies_by_what_it_did():
    steps = DEMO_CANDIDATE_STEPS[:3]
    out = simulate(case=REFUND_CASE, procedures=[{"id": "x.y", "version": 1, "steps": steps}])
    assert out["tool_calls"][-1] == {"name": "replyTemplates", "args": {"template": "approval_pending"}}


# --------------------------------------------------------------------------------------------- HTTP


def test_http_runner_posts_case_instruction_procedures_and_reads_the_answer():
    answer = {"tool_calls": [{"name": "lookupOrder", "args": {"order_id": "ORD-1"}}], "reply": "done"}
    with ScriptedServer(lambda path, body, headers: (200, answer, 0)) as server:
        out = HttpRunner(server.url + "/eval", policy=NO_WAIT).run(
            case=REFUND_CASE, instruction="Be brief.", procedures=[{"id": "a.b"}]
        )
    assert out.tool_calls == [{"name": "lookupOrder", "args": {"order_id": "ORD-1"}}] and out.reply == "done"
    assert server.requests[0]["body"] == {
        "case": REFUND_CASE,
        "instruction": "Be brief.",
        "procedures": [{"id": "a.b"}],
    }


def test_http_runner_times_out_after_its_retries():
    sleeps: list[float] = []
    policy = HttpPolicy(timeout=0.2, retries=2, backoff=0.1, sleep=sleeps.append)
    with ScriptedServer(lambda path, body, headers: (200, {"reply": "late"}, 1.0)) as server:
        with pytest.raises(RunnerError, match=r"timed out after 0.2 s \(3 attempts\)"):
            HttpRunner(server.url, policy=policy).run(case=REFUND_CASE, instruction="", procedures=[])
    assert len(server.requests) == 3
    assert sleeps == [0.1, 0.2]  # exponential backoff between attempts


def test_http_runner_retries_5xx_and_then_succeeds():
    answers = iter([(503, {"error": "busy"}, 0), (200, {"tool_calls": [], "reply": "ok"}, 0)])
    with ScriptedServer(lambda path, body, headers: next(answers)) as server:
        out = HttpRunner(server.url, policy=NO_WAIT).run(case=REFUND_CASE, instruction="", procedures=[])
    assert out.reply == "ok" and len(server.requests) == 2


def test_http_runner_does_not_retry_a_client_error():
    with ScriptedServer(lambda path, body, headers: (400, {"error": "bad"}, 0)) as server:
        with pytest.raises(RunnerError, match="HTTP 400"):
            HttpRunner(server.url, policy=NO_WAIT).run(case=REFUND_CASE, instruction="", procedures=[])
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "payload, message",
    [
        (b"{not json", "malformed JSON"),
        ([1, 2], "expected a JSON object"),
        ({"tool_calls": "lookupOrder", "reply": "x"}, "tool_calls must be a list"),
        ({"tool_calls": [{"args": {}}], "reply": "x"}, r"tool_calls\[0\] needs a name"),
        ({"tool_calls": [], "reply": 3}, "reply must be a string"),
    ],
)
def test_http_runner_refuses_malformed_answers(payload, message):
    with ScriptedServer(lambda path, body, headers: (200, payload, 0)) as server:
        with pytest.raises(RunnerError, match=message):
            HttpRunner(server.url, policy=NO_WAIT).run(case=REFUND_CASE, instruction="", procedures=[])


def test_http_runner_reports_a_refused_connection():
    with ScriptedServer(lambda *a: (200, {}, 0)) as server:
        url = server.url
    with pytest.raises(RunnerError, match="could not reach|connection"):
        HttpRunner(url, policy=HttpPolicy(timeout=0.5, retries=1, backoff=0.0)).run(
            case=REFUND_CASE, instruction="", procedures=[]
        )


@pytest.mark.django_db(transaction=True)
def test_the_agent_concurrency_limit_holds_across_threads(agent):
    # given an agent limited to 2 concurrent eval calls and a slow endpoint that counts overlap
    agent.eval_runner, agent.eval_concurrency, agent.eval_timeout_seconds = "http", 2, 5
    state = {"now": 0, "peak": 0}
    lock = threading.Lock()

    def respond(path, body, headers):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.2)
        with lock:
            state["now"] -= 1
        return 200, {"tool_calls": [], "reply": "ok"}, 0

    with ScriptedServer(respond) as server:
        agent.eval_url = server.url
        agent.save()
        errors: list[Exception] = []

        def call():
            from django.db import connection

            try:
                runner_for_agent(agent).run(case=REFUND_CASE, instruction="", procedures=[])
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=call) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    # then never more than two calls were in flight at once
    assert not errors
    assert len(server.requests) == 6
    assert 1 <= state["peak"] <= 2


# --------------------------------------------------------------------------------------------- model replay

SCHEMAS = {
    "lookupOrder": {
        "description": "Find an order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    },
    "createApproval": {"type": "object", "properties": {"order_id": {"type": "string"}}},
}


def tool_call(call_id, name, arguments):
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_model_replay_answers_tool_calls_from_recorded_results():
    # given a scripted model: look up the order, then call an unrecorded tool, then reply
    script = iter(
        [
            {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [tool_call("c1", "lookupOrder", '{"order_id": "ORD-1"}')],
                        }
                    }
                ]
            },
            {
                "choices": [
                    {
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [tool_call("c2", "createApproval", '{"order_id": "ORD-1"}')],
                        }
                    }
                ]
            },
            {"choices": [{"message": {"role": "assistant", "content": "I asked for approval."}}]},
        ]
    )
    case = {**REFUND_CASE, "tool_results": {"lookupOrder": [{"total": 480}]}}
    with ScriptedServer(lambda path, body, headers: (200, next(script), 0)) as server:
        runner = ModelReplayRunner(
            base_url=server.url + "/v1",
            model="scripted-1",
            api_key="sk-secret-123",
            tool_schemas=SCHEMAS,
            policy=NO_WAIT,
        )
        out = runner.run(case=case, instruction="You are the support agent.\n\nProcedure x.y v1", procedures=[])
    # then the calls and reply are read back
    assert out.tool_calls == [
        {"name": "lookupOrder", "args": {"order_id": "ORD-1"}},
        {"name": "createApproval", "args": {"order_id": "ORD-1"}},
    ]
    assert out.reply == "I asked for approval." and out.stopped == "reply"
    first, second, third = (r["body"] for r in server.requests)
    assert all(r["path"] == "/v1/chat/completions" for r in server.requests)
    assert server.requests[0]["headers"]["Authorization"] == "Bearer sk-secret-123"
    assert first["model"] == "scripted-1" and first["messages"][0] == {
        "role": "system",
        "content": "You are the support agent.\n\nProcedure x.y v1",
    }
    assert first["messages"][1]["content"].startswith("Refund ORD-1")
    assert {t["function"]["name"] for t in first["tools"]} == {"lookupOrder", "createApproval"}
    # the recorded result answers lookupOrder; the unrecorded createApproval gets an error result
    assert second["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": '{"total": 480}'}
    assert "no recorded result for tool 'createApproval'" in third["messages"][-1]["content"]
    assert "sk-secret-123" not in repr(runner)


def test_model_replay_stops_at_the_step_limit():
    looping = {"choices": [{"message": {"role": "assistant", "tool_calls": [tool_call("c", "lookupOrder", "{}")]}}]}
    with ScriptedServer(lambda path, body, headers: (200, looping, 0)) as server:
        runner = ModelReplayRunner(
            base_url=server.url, model="m", api_key="", tool_schemas=SCHEMAS, policy=NO_WAIT, max_steps=3
        )
        out = runner.run(case=REFUND_CASE, instruction="", procedures=[])
    assert out.stopped == "step_limit" and out.reply == "" and len(out.tool_calls) == 3
    assert len(server.requests) == 3


def test_model_replay_refuses_a_malformed_completion():
    with ScriptedServer(lambda path, body, headers: (200, {"id": "x"}, 0)) as server:
        runner = ModelReplayRunner(base_url=server.url, model="m", api_key="k", tool_schemas={}, policy=NO_WAIT)
        with pytest.raises(RunnerError, match="no choices"):
            runner.run(case=REFUND_CASE, instruction="", procedures=[])


def test_tool_schemas_and_recorded_results_helpers():
    tools = openai_tools(SCHEMAS)
    assert tools[0]["function"]["parameters"] == SCHEMAS["createApproval"]
    assert tools[1]["function"]["description"] == "Find an order"
    assert recorded_result({"a": [1, 2]}, "a", 0) == 1 and recorded_result({"a": [1, 2]}, "a", 5) == 2
    assert "error" in recorded_result({}, "b", 0)


# --------------------------------------------------------------------------------------------- Python


def test_python_runner_calls_the_dotted_path():
    out = PythonRunner("tests.evals_support:recording_runner").run(case=REFUND_CASE, instruction="", procedures=[])
    assert out.reply and out.tool_calls[0]["name"] == "lookupOrder"


def test_python_runner_errors_are_runner_errors():
    with pytest.raises(RunnerError, match="RuntimeError: the agent under test crashed"):
        PythonRunner("tests.evals_support.crashing_runner").run(case=REFUND_CASE, instruction="", procedures=[])
    with pytest.raises(RunnerError, match="cannot import"):
        PythonRunner("tests.evals_support:missing")


def test_parse_output_accepts_json_string_args():
    assert parse_output({"tool_calls": [{"name": "a", "arguments": '{"x": 1}'}], "reply": None}).tool_calls == [
        {"name": "a", "args": {"x": 1}}
    ]
