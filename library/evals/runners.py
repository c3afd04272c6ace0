"""Runners: execute one regression case against an agent, behind one interface.

    runner.run(case=dict, instruction=str, procedures=list[dict]) -> RunnerOutput(tool_calls, reply)

`case` is `{"id", "name", "intent", "task", "context", "tool_results"}` (never the checks: the agent
must not see the expected answer); `instruction` is the agent's base instruction followed by the
rendered procedures injected for this case; `procedures` are those procedures as records (the agent
API's field names plus `rendered`). A runner raises RunnerError when it could not get an answer
(timeout, connection refused, malformed response, a crashing callable): the eval counts that as an
*error*, never as a failed case.

- HttpRunner: POST `{case, instruction, procedures}` as JSON to the agent's eval URL and read
  `{tool_calls: [{name, args}], reply}`; a timeout per attempt, retries with exponential backoff on
  timeouts, connection errors, 429 and 5xx, and a per-agent concurrency gate.
- ModelReplayRunner: for teams without an eval endpoint. The instruction, the case's task and the
  agent's tool schemas go to an OpenAI-compatible chat-completions endpoint; every tool call the
  model makes is answered from the tool results recorded with the case (an unrecorded tool gets an
  error result); it stops at the first reply or at the step limit.
- PythonRunner: a dotted path (`package.module:function` or `package.module.function`) to a
  callable taking `case=, instruction=, procedures=` and returning `{tool_calls, reply}`.
- DemoRunner: the demo agent's deterministic simulator (library/evals/simulator.py).

This module imports no Django; `runner_for_agent` reads the settings lazily.
"""

from __future__ import annotations

import importlib
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Protocol

from django.conf import settings

from ..models.secret_store import SecretUnavailable, resolve_secret
from .errors import RunnerError
from .simulator import simulate
from .slots import agent_slot

MAX_RESPONSE_BYTES = 5 * 1024 * 1024


@dataclass
class RunnerOutput:
    tool_calls: list[dict] = field(default_factory=list)
    reply: str = ""
    stopped: str = "reply"  # or "step_limit" (model replay)


class Runner(Protocol):
    kind: str

    def run(self, *, case: dict, instruction: str, procedures: list[dict]) -> RunnerOutput: ...


def parse_output(data: Any) -> RunnerOutput:
    """Validates a runner's answer: `{"tool_calls": [{"name": str, "args": {...}}], "reply": str}`."""
    if isinstance(data, RunnerOutput):
        return data
    if not isinstance(data, dict):
        raise RunnerError(f"malformed response: expected a JSON object, got {type(data).__name__}")
    calls = data.get("tool_calls", [])
    reply = data.get("reply", "")
    if not isinstance(calls, list):
        raise RunnerError("malformed response: tool_calls must be a list")
    if reply is None:
        reply = ""
    if not isinstance(reply, str):
        raise RunnerError("malformed response: reply must be a string")
    cleaned = []
    for index, call in enumerate(calls):
        if isinstance(call, str):
            call = {"name": call}
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise RunnerError(f"malformed response: tool_calls[{index}] needs a name")
        args = call.get("args", call.get("arguments", {}))
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise RunnerError(f"malformed response: tool_calls[{index}].args is not JSON") from None
        if not isinstance(args, dict):
            raise RunnerError(f"malformed response: tool_calls[{index}].args must be an object")
        cleaned.append({"name": call["name"], "args": args})
    return RunnerOutput(tool_calls=cleaned, reply=reply)


# --------------------------------------------------------------------------------------------- HTTP


@dataclass
class HttpPolicy:
    timeout: float = 30.0
    retries: int = 2
    backoff: float = 0.5
    sleep: Callable[[float], None] = time.sleep


def post_json(url: str, payload: dict, *, policy: HttpPolicy, headers: dict | None = None) -> Any:
    """POSTs JSON and decodes the JSON answer, retrying what may pass (timeouts, connection
    errors, 429, 5xx) with exponential backoff. Error messages never include request headers."""
    body = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    attempts = policy.retries + 1
    last_problem = ""
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(
            url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json", **(headers or {})},
        )
        try:
            with urllib.request.urlopen(request, timeout=policy.timeout) as response:
                raw = response.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as exc:
            last_problem = f"HTTP {exc.code} from {url}"
            if exc.code != 429 and exc.code < 500:
                raise RunnerError(last_problem) from None
        except TimeoutError:
            last_problem = f"timed out after {policy.timeout:g} s"
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (TimeoutError, socket.timeout)):
                last_problem = f"timed out after {policy.timeout:g} s"
            else:
                last_problem = f"could not reach {url}: {reason}"
        except (ConnectionError, OSError) as exc:
            last_problem = f"connection to {url} failed: {exc}"
        else:
            if len(raw) > MAX_RESPONSE_BYTES:
                raise RunnerError(f"response from {url} is larger than {MAX_RESPONSE_BYTES} bytes")
            try:
                return json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                snippet = raw[:120].decode("utf-8", "replace")
                raise RunnerError(f"malformed JSON from {url}: {snippet!r}") from None
        if attempt < attempts:
            policy.sleep(policy.backoff * 2 ** (attempt - 1))
    raise RunnerError(f"{last_problem} ({attempts} attempt{'s' if attempts > 1 else ''})")


class HttpRunner:
    kind = "http"

    def __init__(self, url: str, *, policy: HttpPolicy, gate: Callable[[], AbstractContextManager] | None = None):
        if not url:
            raise RunnerError("the agent has no eval URL; set one in the agent's eval settings")
        self.url, self.policy, self.gate = url, policy, gate or nullcontext

    def run(self, *, case: dict, instruction: str, procedures: list[dict]) -> RunnerOutput:
        with self.gate():
            data = post_json(
                self.url, {"case": case, "instruction": instruction, "procedures": procedures}, policy=self.policy
            )
        return parse_output(data)


# --------------------------------------------------------------------------------------------- model replay


def openai_tools(tool_schemas: dict) -> list[dict]:
    """Agent.tool_schemas (tool name → JSON schema of its parameters, or an object with
    `description` and `parameters`) as chat-completions `tools`."""
    tools = []
    for name, schema in sorted((tool_schemas or {}).items()):
        schema = schema if isinstance(schema, dict) else {}
        if "parameters" in schema:
            parameters, description = schema["parameters"], schema.get("description", "")
        else:
            parameters, description = schema or {"type": "object", "properties": {}}, schema.get("description", "")
        tools.append(
            {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
        )
    return tools


def recorded_result(tool_results: dict, name: str, nth: int) -> Any:
    """The n-th (0-based) recorded result of a tool: `tool_results[name]` is a list of results in
    call order (the last one repeats when the model calls more often); an unrecorded tool gets an
    error result, as a real tool would answer an unknown call."""
    results = (tool_results or {}).get(name)
    if results is None:
        return {"error": f"no recorded result for tool {name!r} in this regression case"}
    if isinstance(results, list):
        if not results:
            return {"error": f"no recorded result for tool {name!r} in this regression case"}
        return results[min(nth, len(results) - 1)]
    return results


class ModelReplayRunner:
    kind = "model"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        tool_schemas: dict,
        policy: HttpPolicy,
        max_steps: int = 8,
        gate: Callable[[], AbstractContextManager] | None = None,
    ):
        if not base_url or not model:
            raise RunnerError("model replay needs the agent's model base URL and model name")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self._api_key = model, api_key
        self.tools = openai_tools(tool_schemas)
        self.policy, self.max_steps, self.gate = policy, max_steps, gate or nullcontext

    def __repr__(self) -> str:  # never show the key
        return f"ModelReplayRunner(url={self.url!r}, model={self.model!r})"

    def run(self, *, case: dict, instruction: str, procedures: list[dict]) -> RunnerOutput:
        user_text = case.get("task", "")
        if case.get("context"):
            user_text += "\n\nContext: " + json.dumps(case["context"], ensure_ascii=False, sort_keys=True)
        messages: list[dict] = [{"role": "system", "content": instruction}, {"role": "user", "content": user_text}]
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        calls: list[dict] = []
        counts: dict[str, int] = {}
        for _step in range(self.max_steps):
            payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
            if self.tools:
                payload["tools"] = self.tools
            with self.gate():
                data = post_json(self.url, payload, policy=self.policy, headers=headers)
            try:
                message = data["choices"][0]["message"]
            except (KeyError, IndexError, TypeError):
                raise RunnerError("malformed chat-completions response: no choices[0].message") from None
            if not isinstance(message, dict):
                raise RunnerError("malformed chat-completions response: message is not an object")
            tool_calls = message.get("tool_calls") or []
            if not tool_calls:
                content = message.get("content") or ""
                if not isinstance(content, str):
                    raise RunnerError("malformed chat-completions response: content is not text")
                return RunnerOutput(tool_calls=calls, reply=content)
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": tool_calls})
            for index, tool_call in enumerate(tool_calls):
                try:
                    function = tool_call["function"]
                    name = function["name"]
                    raw_args = function.get("arguments") or "{}"
                except (KeyError, TypeError):
                    raise RunnerError(f"malformed chat-completions response: tool_calls[{index}]") from None
                try:
                    args = json.loads(raw_args) if isinstance(raw_args, str) else dict(raw_args)
                except (ValueError, TypeError):
                    args = {"_unparsed": str(raw_args)}
                if not isinstance(args, dict):
                    args = {"_unparsed": args}
                calls.append({"name": name, "args": args})
                result = recorded_result(case.get("tool_results") or {}, name, counts.get(name, 0))
                counts[name] = counts.get(name, 0) + 1
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": tool_call.get("id", f"call_{len(calls)}"),
                        "content": json.dumps(result, ensure_ascii=False),
                    }
                )
        return RunnerOutput(tool_calls=calls, reply="", stopped="step_limit")


# --------------------------------------------------------------------------------------------- Python, demo


def import_callable(path: str) -> Callable:
    module_name, _, attribute = path.partition(":")
    if not attribute:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise RunnerError(f"{path!r} is not a dotted path to a callable (package.module:function)")
    try:
        target = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise RunnerError(f"cannot import {path!r}: {exc}") from None
    if not callable(target):
        raise RunnerError(f"{path!r} is not callable")
    return target


class PythonRunner:
    kind = "python"

    def __init__(self, path: str):
        self.path = path
        self.target = import_callable(path)

    def run(self, *, case: dict, instruction: str, procedures: list[dict]) -> RunnerOutput:
        try:
            data = self.target(case=case, instruction=instruction, procedures=procedures)
        except RunnerError:
            raise
        except Exception as exc:  # the agent's code failing is an error of the run, not a failed case
            raise RunnerError(f"{self.path} raised {type(exc).__name__}: {exc}") from None
        return parse_output(data)


class DemoRunner:
    """The demo agent (simulator): deterministic, for the demo data only."""

    kind = "demo"

    def run(self, *, case: dict, instruction: str, procedures: list[dict]) -> RunnerOutput:
        return parse_output(simulate(case=case, procedures=procedures))


def runner_for_agent(agent) -> Runner:
    """The runner configured on an agent (library.models.Agent), with the settings' retry policy
    and the agent's concurrency gate. Raises RunnerError when the configuration is incomplete."""

    policy = HttpPolicy(
        timeout=float(agent.eval_timeout_seconds),
        retries=settings.PROCMEM_EVAL_HTTP_RETRIES,
        backoff=settings.PROCMEM_EVAL_HTTP_BACKOFF_SECONDS,
    )
    wait = settings.PROCMEM_EVAL_SLOT_WAIT_SECONDS

    def gate():
        return agent_slot(agent_id=agent.pk, limit=max(1, agent.eval_concurrency), wait_seconds=wait)

    # imported here: agents.settings (pydantic and the coding-family rules, about 60 modules) stays
    # out of django.setup(), which imports this module (reviews.tasks -> library.tasks -> eval runs)
    from ..agents.settings import url_allowed  # noqa: PLC0415

    kind = agent.eval_runner
    if kind in ("http", "model"):
        url = agent.eval_url if kind == "http" else agent.model_base_url
        if url and not url_allowed(url):
            raise RunnerError(f"{url!r} is outside PROCMEM_EVAL_ALLOWED_URLS")
    if kind == "http":
        return HttpRunner(agent.eval_url, policy=policy, gate=gate)
    if kind == "model":
        try:
            api_key = resolve_secret(agent.model_api_key)
        except SecretUnavailable as exc:
            raise RunnerError(str(exc)) from None
        return ModelReplayRunner(
            base_url=agent.model_base_url,
            model=agent.model_name,
            api_key=api_key,
            tool_schemas=agent.tool_schemas,
            policy=policy,
            max_steps=settings.PROCMEM_EVAL_MODEL_MAX_STEPS,
            gate=gate,
        )
    if kind == "python":
        # imported here: as url_allowed above, kept out of every process's start
        from ..agents.settings import python_path_allowed  # noqa: PLC0415

        if not python_path_allowed(agent.eval_python_path):
            raise RunnerError(f"{agent.eval_python_path!r} is outside PROCMEM_EVAL_PYTHON_RUNNER_PREFIXES")
        return PythonRunner(agent.eval_python_path)
    if kind == "demo":
        return DemoRunner()
    raise RunnerError(f"unknown runner {kind!r}")
