"""The procmem runtime client for Python agents: the standard library plus procmem_client.ranking and
procmem_client.rendering, so it runs inside any agent process (`pip install ./clients/python`).

    from procmem_client import ProcmemClient

    client = ProcmemClient(base_url="https://procmem.example.com", agent="support_agent",
                           token=os.environ["PROCMEM_READ_TOKEN"],
                           ingest_token=os.environ.get("PROCMEM_INGEST_TOKEN"))
    text, injected = client.instruction_for(task="I want a refund of $900 for order 1234")

    # Google ADK: the instruction is a callable of the context
    agent = LlmAgent(name="support", model="gemini-2.0-flash",
                     instruction=client.instruction_provider(base_instruction="You are a support agent."),
                     before_model_callback=client.adk_before_model_callback)

What it does:
- fetches GET /api/v1/agents/{agent}/procedures with If-None-Match and keeps the set in memory;
  a 304 keeps the cached set; it refreshes when `refresh_interval` seconds have passed (on access,
  or from a background thread with `start_background_refresh()`);
- keeps serving the last good set when the server fails (errors are recorded in `last_error`, and
  retried after `retry_interval`); before the first successful fetch it serves an empty set, so an
  agent without procmem still runs, only without procedures;
- selects at most the set's `injectionCap` procedures: locally with the same ranker as the server
  when the `[embeddings]` extra is installed (or a `ranker` is given), otherwise by asking
  POST /api/v1/agents/{agent}/select with the task in the body (the server runs that same ranker;
  the task stays out of URLs and so out of access logs); either way it
  renders with procmem_client.rendering, the server's renderer;
- reports finished sessions to POST /api/v1/sessions with an ingest token, in procmem JSONL
  (docs/api.md "Sessions in: ingestion"), including the injected ids and versions (and the rollout
  arm each one came from);
- `api_version="v2"` reads /api/v2/: the same set and selection with each procedure's evidence cut
  to its scalar facts (a tenth of the bytes for mined procedures; docs/api.md "API versions: v1 and v2");
- `environment=` (e.g. "staging") reads that environment's set instead of production's; a
  `session=` id passed to `select`/`instruction_for` gets the session's rollout arms: while a rollout
  runs (the set has `arms`), the session's own set is asked for (the server picks the arm from a
  hash of the session id, so a session sees one arm however often it asks).
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from . import embeddings
from .agent_checks import address_problem
from .coding import recall_query
from .protocol import (  # shared with the async client, and importable from here as before (session_record)
    checked_set,
    empty_selection,
    http_failure,
    outcome_record,
    outcome_refusal,
    recall_pointers,
    refusal_reason,
    refuses_task_files,
    select_query,
    selection_cap,
    selection_from_response,
    session_record,
    sessions_body,
)
from .ranking import Index, Ranker, Selection
from .rendering import DEFAULT_MAX_CHARS, estimate_tokens, render_block
from .task_files import TaskFileIndex, indexes_from_response, with_task_files

logger = logging.getLogger("procmem.client")

STATE_INJECTED = "procmem:injected"
STATE_INSTRUCTION_CHARS = "procmem:instruction_chars"
STATE_SET_ETAG = "procmem:set_etag"


class ProcmemError(Exception):
    """A request to procmem failed; `status` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None, body: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


API_VERSIONS = ("v1", "v2")


def _empty_set(agent: str, api_version: str = "v1") -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "agent": agent,
        "proceduralMemoryEnabled": True,
        "injectionCap": 0,
        "tools": [],
        "procedures": [],
        "refused": [],
    }


class ClientState:
    """What the sync and the async client share: their settings, the cached set and its ETag, the
    counters, and the bookkeeping of a revalidation's success or failure."""

    def __init__(
        self,
        *,
        base_url: str,
        agent: str,
        token: str,
        ingest_token: str | None = None,
        refresh_interval: float = 30.0,
        retry_interval: float = 5.0,
        timeout: float = 5.0,
        ranker: Ranker | None = None,
        local_ranking: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_chars: int | None = DEFAULT_MAX_CHARS,
        environment: str | None = None,
        api_version: str = "v1",
    ) -> None:
        """`local_ranking`: rank in this process (True) or ask the server's select endpoint (False);
        by default locally when a `ranker` is given or the `[embeddings]` extra is installed.
        `environment`: the agent's environment to read (default: production). `api_version`: "v1"
        (default, every procmem server) or "v2" (evidence as scalar facts only)."""
        if api_version not in API_VERSIONS:
            raise ValueError(f"api_version must be one of {', '.join(API_VERSIONS)}; got {api_version!r}")
        self.api_version = api_version
        problem = address_problem(base_url, name="base_url")
        if problem:  # said here, not as urllib's "unknown url type" in last_error at every fetch
            raise ValueError(problem)
        self.base_url = base_url.rstrip("/")
        self.agent = agent
        self.environment = environment or None
        self._token = token
        self._ingest_token = ingest_token
        self.refresh_interval = refresh_interval
        self.retry_interval = retry_interval
        self.timeout = timeout
        self._ranker = ranker
        self.local_ranking = (ranker is not None or embeddings.available()) if local_ranking is None else local_ranking
        self._clock = clock
        self.max_chars = max_chars
        self._set: dict[str, Any] = _empty_set(agent, api_version)
        self._etag: str | None = None
        self._index: Index | None = None
        self._next_refresh = 0.0
        self.last_error: str | None = None
        # the HTTP status of the last failure when it had one: 401/403 mean the token is refused
        # (a configuration error, not an outage: see `token_refused`)
        self.last_error_status: int | None = None
        self.last_success: float | None = None
        self.fetches = 0  # requests sent (for tests and metrics)
        self.not_modified = 0
        self.selects = 0  # requests sent to the select endpoint (without local ranking)
        self.selected_set_etag: str | None = None  # the ETag of the set the server selected from
        self.last_content_encoding: str | None = None  # of the last 200 ("gzip" from procmem)
        # the agent's file indexes (GET …/file-index) for recall's task files when ranking locally
        self._file_indexes: dict[str, TaskFileIndex] = {}
        self._file_index_etag: str | None = None
        self._file_index_next = 0.0
        self.file_index_fetches = 0
        self.file_index_error: str | None = None
        self.server_task_files = True  # False once a server from before `taskFiles` refused it

    @property
    def etag(self) -> str | None:
        return self._etag

    @property
    def can_report(self) -> bool:
        """True when an ingest token is configured (`report_sessions` needs one)."""
        return bool(self._ingest_token)

    @property
    def has_set(self) -> bool:
        """True once a set has been fetched successfully (it may be stale now)."""
        return self._etag is not None

    @property
    def current_set_etag(self) -> str | None:
        """The ETag of the set the last selection came from."""
        return self._etag if self.local_ranking else self.selected_set_etag

    def _url(self, path: str) -> str:
        return f"{self.base_url}/api/{self.api_version}/{path}"

    @property
    def token_refused(self) -> bool:
        """True when the server's last answer refused the token (401: unknown, revoked or expired;
        403: another agent's or another scope's), not an outage."""
        return self.last_error is not None and self.last_error_status in (401, 403)

    def _succeeded(self, now: float) -> bool:
        self.last_error = None
        self.last_error_status = None
        self.last_success = now
        self._next_refresh = now + self.refresh_interval
        return True

    def _file_index_answered(self, now: float, status: int, body: bytes | str, etag: str | None) -> None:
        """Keeps what GET …/file-index answered: 200 the indexes, 304 the kept ones, 404 none (a server
        from before the endpoint), anything else the kept ones with the error in `file_index_error`."""
        self._file_index_next = now + self.refresh_interval
        if status == 304:
            self.file_index_error = None
            return
        if status == 404:
            self._file_indexes, self._file_index_etag, self.file_index_error = {}, None, None
            return
        if status != 200:
            self.file_index_error = http_failure(
                status, body, method="GET", url=self._url(f"agents/{self.agent}/file-index")
            )
            self._file_index_next = now + self.retry_interval
            logger.warning("procmem: keeping the last file index of %s (%s)", self.agent, self.file_index_error)
            return
        try:
            self._file_indexes = indexes_from_response(json.loads(body))
        except ValueError as exc:
            self.file_index_error = f"ValueError: {exc}"
            self._file_index_next = now + self.retry_interval
            return
        self._file_index_etag, self.file_index_error = etag, None

    def _file_index_failed(self, now: float, message: str) -> None:
        self.file_index_error = message
        self._file_index_next = now + self.retry_interval
        logger.warning("procmem: keeping the last file index of %s (%s)", self.agent, message)

    def _failed(self, now: float, message: str, *, status: int | None = None) -> bool:
        self.last_error = message
        self.last_error_status = status
        self._next_refresh = now + self.retry_interval
        logger.warning("procmem: keeping the last good set of %s (%s)", self.agent, message)
        return False


class ProcmemClient(ClientState):
    """Thread-safe. One per agent process and procmem agent. The arguments: `ClientState`."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._lock = threading.RLock()
        self._refresh_lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------------------------ the set

    def _set_url(self, session: str | None = None) -> str:
        query = {
            **({"environment": self.environment} if self.environment else {}),
            **({"session": session} if session else {}),
        }
        return self._url(f"agents/{self.agent}/procedures" + (f"?{urllib.parse.urlencode(query)}" if query else ""))

    def refresh(self, *, force: bool = False) -> bool:
        """Fetches the set when due (or `force`). Returns True when the server answered (200 or
        304), False when it failed: then the last good set stays in use. The network call runs
        outside the state lock: while one thread fetches, the others keep serving the current set."""
        now = self._clock()
        if not force and now < self._next_refresh:
            return True
        if not self._refresh_lock.acquire(blocking=force or not self.has_set):
            return True  # another thread is fetching right now
        try:
            request = urllib.request.Request(
                self._set_url(),
                # gzip: the set is served from a representation compressed once per set, several
                # times smaller on the wire (bench/RESULTS.md, the active-set benchmark)
                headers={
                    "Authorization": f"Bearer {self._token}",
                    "Accept": "application/json",
                    "Accept-Encoding": "gzip",
                },
            )
            if self._etag:
                request.add_header("If-None-Match", self._etag)
            self.fetches += 1
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    body = response.read()
                    etag = response.headers.get("ETag")
                    encoding = (response.headers.get("Content-Encoding") or "identity").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                self.last_content_encoding = encoding
                data = checked_set(json.loads(body))
            except urllib.error.HTTPError as exc:
                if exc.code == 304:
                    self.not_modified += 1
                    return self._succeeded(now)
                return self._failed(
                    now, http_failure(exc.code, exc.read(4000), method="GET", url=request.full_url), status=exc.code
                )
            except (urllib.error.URLError, OSError, ValueError, EOFError) as exc:  # EOFError: truncated gzip
                return self._failed(now, f"{type(exc).__name__}: {exc}")
            with self._lock:
                self._set = data
                self._etag = etag
                self._index = None
            return self._succeeded(now)
        finally:
            self._refresh_lock.release()

    def active_set(self) -> dict[str, Any]:
        """The current set (refreshed when due; the last good one when the server fails)."""
        self.refresh()
        with self._lock:
            return self._set

    def procedures(self) -> list[dict[str, Any]]:
        return list(self.active_set()["procedures"])

    def start_background_refresh(self) -> None:
        """Refreshes from a daemon thread every `refresh_interval` seconds, so that requests never
        wait for the network. `close()` stops it."""
        if self._thread is not None:
            return
        self._stop.clear()

        def loop() -> None:
            while not self._stop.is_set():
                self.refresh(force=True)
                self._stop.wait(self.refresh_interval if self.last_error is None else self.retry_interval)

        self._thread = threading.Thread(target=loop, name=f"procmem-refresh-{self.agent}", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self.timeout + 1)
            self._thread = None

    # ------------------------------------------------------------------------------------ selection

    def _current_index(self) -> tuple[Index, dict[str, Any]]:
        data = self.active_set()
        with self._lock:
            if self._index is None:
                self._index = (self._ranker or Ranker()).index(data["procedures"])
            return self._index, data

    def session_set(self, session: str) -> dict[str, Any]:
        """The set `session` receives: the cached set when no rollout runs (it has no `arms`),
        otherwise the session's own (its arms), asked of the server; the cached set when that fails."""
        data = self.active_set()
        if not data.get("arms"):
            return data
        request = urllib.request.Request(
            self._set_url(session), headers={"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        )
        self.fetches += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                own = checked_set(json.loads(response.read()))
        except (urllib.error.URLError, OSError, ValueError) as exc:  # HTTPError is a URLError
            self.last_error = f"{type(exc).__name__}: {exc}"
            logger.warning("procmem: the set of session %s failed, using the shared set (%s)", session, self.last_error)
            return data
        return own

    def select(
        self,
        *,
        task: str,
        intent: str | None = None,
        k: int | None = None,
        session: str | None = None,
        task_files: bool = False,
    ) -> Selection:
        """At most the set's injection cap: ranked here (see procmem_client/ranking.py) or, without
        the embeddings extra, by the server's select endpoint over the same set. With `session`,
        over the session's set (its rollout arms; each injected record says its `arm`). With
        `task_files`, each injected coding procedure's `recallPointer` names first the files the task's
        words point to (the select endpoint's `taskFiles`; ranked here: from the agent's file index,
        `file_indexes()`, by the same function)."""
        if not self.local_ranking:
            return self._select_on_server(task=task, intent=intent, k=k, session=session, task_files=task_files)
        selection: Selection | None = None
        if session:
            data = self.session_set(session)
            if data.get("arms"):
                selection = (
                    (self._ranker or Ranker())
                    .index(data["procedures"])
                    .select(task=task, intent=intent, cap=selection_cap(data), k=k)
                )
        if selection is None:
            index, data = self._current_index()
            selection = index.select(task=task, intent=intent, cap=selection_cap(data), k=k)
        if task_files and selection["injected"]:
            indexes = self.file_indexes()
            if indexes:
                selection = {**selection, "injected": with_task_files(selection["injected"], task, indexes)}
        return selection

    def file_indexes(self) -> dict[str, TaskFileIndex]:
        """The agent's file indexes ({repository: index}), fetched with If-None-Match when
        `refresh_interval` has passed; the last good ones when the server fails, none from a server
        without the endpoint."""
        now = self._clock()
        if now < self._file_index_next:
            return self._file_indexes
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        if self._file_index_etag:
            headers["If-None-Match"] = self._file_index_etag
        request = urllib.request.Request(self._url(f"agents/{self.agent}/file-index"), headers=headers)
        self.file_index_fetches += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                self._file_index_answered(now, response.status, response.read(), response.headers.get("ETag"))
        except urllib.error.HTTPError as exc:
            self._file_index_answered(now, exc.code, exc.read(4000), None)
        except (urllib.error.URLError, OSError) as exc:
            self._file_index_failed(now, f"{type(exc).__name__}: {exc}")
        return self._file_indexes

    def _select_on_server(
        self, *, task: str, intent: str | None, k: int | None, session: str | None = None, task_files: bool = False
    ) -> Selection:
        """POST /api/v1/agents/{agent}/select. When the server fails, nothing is injected (the error is
        in `last_error`): the agent still runs, only without procedures. A server from before
        `taskFiles` is asked again without it (and not asked for it again)."""
        query = select_query(
            task=task,
            intent=intent,
            k=k,
            environment=self.environment,
            session=session,
            task_files=task_files and self.server_task_files,
        )
        # POST: the task goes in the body, never in a URL that access and proxy logs keep
        request = urllib.request.Request(
            self._url(f"agents/{self.agent}/select"),
            data=json.dumps(query).encode(),
            method="POST",
            headers={
                "Authorization": f"Bearer {self._token}",
                "Accept": "application/json",
                "Content-Type": "application/json",
            },
        )
        self.selects += 1
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                data = json.loads(response.read())
            selection = selection_from_response(task, data)
        except urllib.error.HTTPError as exc:
            body = exc.read(4000)
            if query.get("taskFiles") and refuses_task_files(exc.code, body):
                self.server_task_files = False
                return self._select_on_server(task=task, intent=intent, k=k, session=session)
            self.last_error = http_failure(exc.code, body, method="POST", url=request.full_url)
            self.last_error_status = exc.code
            logger.warning("procmem: selection for %s failed, injecting nothing (%s)", self.agent, self.last_error)
            return empty_selection(task, intent)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            self.last_error_status = None
            logger.warning("procmem: selection for %s failed, injecting nothing (%s)", self.agent, self.last_error)
            return empty_selection(task, intent)
        self.selected_set_etag = data.get("setEtag")
        return selection

    # ------------------------------------------------------------------------------------ recall (coding agents)

    def recall(
        self, *, prompt: str, tool_calls: Sequence[Any] = (), intent: str | None = None, task_files: bool = True
    ) -> list[dict[str, Any]]:
        """The recall pointers (procmem_client/coding.py: id, one line on when to use it, the verify
        command; under 300 tokens each) of the procedures selected for a coding agent's prompt and,
        when given, its tool calls: their targets and commands join the query, which the exact
        retriever matches against the procedures' targets, verify commands and steps. `task_files`
        (default): each pointer names first the files the query's words point to in what the agent's
        sessions saw (procmem_client/task_files.py), the same text whether ranked here or by the server."""
        selection = self.select(task=recall_query(prompt, tool_calls), intent=intent, task_files=task_files)
        return recall_pointers(selection["injected"])

    def recall_session(self, prompt: str, *, intent: str | None = None, after_calls: int = 3) -> RecallSession:
        """Recall for one prompt, again after its first `after_calls` tool calls (see RecallSession)."""
        return RecallSession(self, prompt, intent=intent, after_calls=after_calls)

    def render(self, records: Iterable[Mapping[str, Any]]) -> str:
        """The block the server's select endpoint returns for these records (header, character cap)."""
        return render_block(records, max_chars=self.max_chars)["text"]

    def instruction_for(
        self, *, task: str, intent: str | None = None, base_instruction: str = "", session: str | None = None
    ) -> tuple[str, list[dict[str, Any]]]:
        """The instruction text (base + the block of selected procedures) and the injected records
        (those the block's character cap kept; with `session`, each says its rollout `arm`)."""
        selected = self.select(task=task, intent=intent, session=session)["injected"] if task.strip() else []
        block = render_block(selected, max_chars=self.max_chars)
        parts = [p for p in (base_instruction.strip(), block["text"]) if p]
        return "\n\n".join(parts), block["included"]

    # ------------------------------------------------------------------------------------ Google ADK

    def instruction_provider(
        self,
        *,
        base_instruction: str = "",
        intent_state_key: str = "intent",
        task_state_key: str = "procmem:task",
    ) -> Callable[[Any], str]:
        """An `instruction=` callable for google.adk `LlmAgent`. It takes the task from the user
        message that started the invocation (or from state[task_state_key]), the intent from
        state[intent_state_key] when present, and writes the injected ids and versions into the
        session state (`procmem:injected`, `procmem:instruction_chars`, `procmem:set_etag`).

        ADK hands instruction providers a read-only view of the state, so the provider writes to the
        invocation's session object; pass `adk_before_model_callback` as the agent's
        `before_model_callback` to persist those keys through ADK's state delta as well."""

        def provider(ctx: Any) -> str:
            state = dict(getattr(ctx, "state", {}) or {})
            task = _user_text(getattr(ctx, "user_content", None)) or str(state.get(task_state_key) or "")
            intent = state.get(intent_state_key) or None
            session = getattr(ctx, "session", None)
            session_id = getattr(session, "id", None)
            text, injected = self.instruction_for(
                task=task,
                intent=intent,
                base_instruction=base_instruction,
                session=str(session_id) if session_id else None,
            )
            target = getattr(session, "state", None)
            if isinstance(target, dict):
                target[STATE_INJECTED] = [
                    {"id": p["id"], "version": p["version"], **({"arm": p["arm"]} if p.get("arm") else {})}
                    for p in injected
                ]
                target[STATE_INSTRUCTION_CHARS] = len(text)
                target[STATE_SET_ETAG] = self._etag if self.local_ranking else self.selected_set_etag
            return text

        provider.__name__ = "procmem_instruction_provider"
        return provider

    @staticmethod
    def adk_before_model_callback(callback_context: Any, llm_request: Any) -> None:
        """Copies the keys the provider wrote into ADK's delta-aware state, so the session service
        stores them with the next event. Returns None: the model call goes ahead unchanged."""
        session = getattr(callback_context, "session", None)
        source = getattr(session, "state", {}) or {}
        for key in (STATE_INJECTED, STATE_INSTRUCTION_CHARS, STATE_SET_ETAG):
            if key in source:
                callback_context.state[key] = source[key]
        return None

    # ------------------------------------------------------------------------------------ reporting

    def report_sessions(self, sessions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """POST /api/v1/sessions with the ingest token: one procmem JSONL line per session.
        Returns the server's answer (what was stored, skipped as duplicate, refused)."""
        return self._post_jsonl("sessions", sessions, what="report_sessions")

    def report_outcome(
        self,
        session_id: str,
        *,
        resolved: bool | None = None,
        escalated: bool | None = None,
        rating: float | None = None,
        complaint: bool | None = None,
        closed_by_customer: bool | None = None,
        at: str | None = None,
        source: str | None = None,
    ) -> dict[str, Any]:
        """Reports what became known about a finished session later (a rating, a complaint, a ticket
        closed by the customer): POST /api/v1/sessions/outcomes with the ingest token. `at`: when it
        happened (ISO 8601; default: now). Returns the server's answer; an id the server does not
        know is listed under "unknown" (status 207/422 answers are returned, not raised), an OTLP
        session whose spans still wait under "held" (202: applied when the session is stored)."""
        outcome = outcome_record(
            session_id,
            resolved=resolved,
            escalated=escalated,
            rating=rating,
            complaint=complaint,
            closed_by_customer=closed_by_customer,
            at=at,
            source=source,
        )
        return self._post_jsonl("sessions/outcomes", [outcome], what="report_outcome")

    def _post_jsonl(self, path: str, items: Sequence[Mapping[str, Any]], *, what: str) -> dict[str, Any]:
        if not self._ingest_token:
            raise ProcmemError(f"{what} needs an ingest token (ProcmemClient(ingest_token=...))")
        body = sessions_body(items)  # JSON Lines: one object a line
        request = urllib.request.Request(
            self._url(path),
            data=body,
            method="POST",
            headers={
                "Authorization": f"Bearer {self._ingest_token}",
                "Content-Type": "application/x-ndjson",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            try:
                detail: Any = json.loads(raw)
            except ValueError:
                detail = raw[:300].decode("utf-8", "replace")
            if outcome_refusal(path, exc.code, detail):
                return detail  # the per-item answer: every outcome refused or naming an unknown session
            raise ProcmemError(
                f"POST /api/{self.api_version}/{path} answered {exc.code}{refusal_reason(detail)}",
                status=exc.code,
                body=detail,
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ProcmemError(f"POST /api/{self.api_version}/{path} failed: {exc}") from None
        return json.loads(raw) if raw else {}

    def report_session(
        self,
        *,
        session_id: str,
        task: str,
        resolved: bool | None,
        injected: Sequence[Mapping[str, Any]],
        **fields: Any,
    ) -> dict[str, Any]:
        """Reports one finished session (see `session_record` for the fields)."""
        record = session_record(
            session_id=session_id, agent=self.agent, task=task, resolved=resolved, injected=injected, **fields
        )
        return self.report_sessions([record])


class RecallSession:
    """Recall as the Memorable design describes it for coding agents: once on the prompt, and once
    more when the first `after_calls` (three) tool calls are known — by then the agent has named
    the files, modules and tests it works on, and the query holds their targets and commands.

        recall = client.recall_session(prompt)
        show(recall.pointers)                   # recalled on the prompt
        for call in agent_tool_calls:
            updated = recall.observe(call)      # a shell line or {"tool", "target"/"command"/"args"}
            if updated is not None:
                show(updated)                   # recalled again after the third call
    """

    def __init__(self, client: ProcmemClient, prompt: str, *, intent: str | None = None, after_calls: int = 3) -> None:
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError("prompt must be a non-empty string")
        if after_calls < 1:
            raise ValueError("after_calls must be at least 1")
        self._client = client
        self.prompt = prompt
        self.intent = intent
        self.after_calls = after_calls
        self.calls: list[Any] = []
        self.recalls = 1
        self.pointers = client.recall(prompt=prompt, intent=intent)

    def observe(self, call: Any) -> list[dict[str, Any]] | None:
        """Records one tool call; after the `after_calls`-th, recalls again and returns the new
        pointers (None otherwise)."""
        self.calls.append(call)
        if len(self.calls) != self.after_calls:
            return None
        self.pointers = self._client.recall(prompt=self.prompt, tool_calls=self.calls, intent=self.intent)
        self.recalls += 1
        return self.pointers


def _user_text(content: Any) -> str:
    """The text parts of a google.genai `Content` (or a dict of the same shape)."""
    if content is None:
        return ""
    parts = content.get("parts") if isinstance(content, dict) else getattr(content, "parts", None)
    texts = []
    for part in parts or []:
        text = part.get("text") if isinstance(part, dict) else getattr(part, "text", None)
        if text:
            texts.append(text)
    return "\n".join(texts)


__all__ = [
    "ProcmemClient",
    "ProcmemError",
    "STATE_INJECTED",
    "STATE_INSTRUCTION_CHARS",
    "STATE_SET_ETAG",
    "estimate_tokens",
    "outcome_record",
    "session_record",
]
