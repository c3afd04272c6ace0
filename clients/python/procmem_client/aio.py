"""`AsyncProcmemClient`: the procmem client for async agent runtimes (asyncio), on httpx
(`pip install './clients/python[async]'`). It behaves as the sync `ProcmemClient`:

- the active set through GET /api/v1/agents/{agent}/procedures with If-None-Match (gzip), kept in
  memory and revalidated when `refresh_interval` has passed; a 304 keeps it;
- the last good set when procmem fails (the error in `last_error`, retried after `retry_interval`);
  an empty set before the first success, so the agent runs without procedures;
- selection locally with the shared ranker (the `[embeddings]` extra, or a `ranker`), run in a
  worker thread so the event loop keeps going, or by the server's select endpoint; nothing is
  injected when that fails;
- rendering with procmem_client.rendering (the one renderer) and session reports with an ingest token.

    async with AsyncProcmemClient(base_url=..., agent="support_agent", token=...) as procmem:
        text, injected = await procmem.instruction_for(task="I want a refund of $900 for order 1234")

One client serves any number of concurrent tasks: requests share one connection pool, and one
revalidation of the set runs at a time (the others keep serving the current set).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import httpx

from .client import ClientState, ProcmemError
from .coding import recall_query
from .protocol import (
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
from .rendering import render_block
from .task_files import TaskFileIndex, with_task_files

logger = logging.getLogger("procmem.client")


class AsyncProcmemClient(ClientState):
    """One per agent process and procmem agent; safe to share between tasks of one event loop."""

    def __init__(self, *, max_connections: int = 100, http: httpx.AsyncClient | None = None, **options: Any) -> None:
        """The arguments of `ProcmemClient` (procmem_client.client.ClientState), plus
        `max_connections` (the pool's size) or an `http` client of your own (then `aclose` leaves
        it open)."""
        super().__init__(**options)
        self._own_http = http is None
        self._http = http or httpx.AsyncClient(
            timeout=self.timeout,
            limits=httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_connections),
        )
        self._refresh_lock = asyncio.Lock()
        self._index_set: dict[str, Any] | None = None  # the set `_index` was built from

    async def __aenter__(self) -> AsyncProcmemClient:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._own_http:
            await self._http.aclose()

    # ------------------------------------------------------------------------------------ the set

    def _set_params(self, session: str | None = None) -> dict[str, str]:
        return {
            **({"environment": self.environment} if self.environment else {}),
            **({"session": session} if session else {}),
        }

    def _headers(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self._token}", "Accept": "application/json"}

    async def refresh(self, *, force: bool = False) -> bool:
        """Revalidates the set when due (or `force`). True when the server answered (200 or 304),
        False when it failed (the last good set stays). While one task fetches, the others go on
        with the current set (the first fetch, or a forced one, waits for it)."""
        now = self._clock()
        if not force and now < self._next_refresh:
            return True
        if self._refresh_lock.locked() and self.has_set and not force:
            return True
        async with self._refresh_lock:
            if not force and self._clock() < self._next_refresh:
                return True  # another task fetched while this one waited
            headers = {**self._headers(), "Accept-Encoding": "gzip"}
            if self._etag:
                headers["If-None-Match"] = self._etag
            self.fetches += 1
            try:
                response = await self._http.get(
                    self._url(f"agents/{self.agent}/procedures"), params=self._set_params(), headers=headers
                )
                if response.status_code == 304:
                    self.not_modified += 1
                    return self._succeeded(now)
                if response.status_code != 200:
                    return self._failed(
                        now,
                        http_failure(response.status_code, response.text, method="GET", url=str(response.url)),
                        status=response.status_code,
                    )
                data = checked_set(response.json())  # httpx has undone the gzip
            except (httpx.HTTPError, ValueError) as exc:
                return self._failed(now, f"{type(exc).__name__}: {exc}")
            self._set, self._etag, self._index = data, response.headers.get("ETag"), None
            return self._succeeded(now)

    async def active_set(self) -> dict[str, Any]:
        await self.refresh()
        return self._set

    async def procedures(self) -> list[dict[str, Any]]:
        return list((await self.active_set())["procedures"])

    # ------------------------------------------------------------------------------------ selection

    async def session_set(self, session: str) -> dict[str, Any]:
        """The set `session` receives (its rollout arms while a rollout runs); the cached set when
        no rollout runs or the request fails."""
        data = await self.active_set()
        if not data.get("arms"):
            return data
        self.fetches += 1
        try:
            response = await self._http.get(
                self._url(f"agents/{self.agent}/procedures"), params=self._set_params(session), headers=self._headers()
            )
            response.raise_for_status()
            return checked_set(response.json())
        except (httpx.HTTPError, ValueError) as exc:
            self.last_error = f"{type(exc).__name__}: {exc}"
            logger.warning("procmem: the set of session %s failed, using the shared set (%s)", session, self.last_error)
            return data

    async def select(
        self,
        *,
        task: str,
        intent: str | None = None,
        k: int | None = None,
        session: str | None = None,
        task_files: bool = False,
    ) -> Selection:
        """At most the set's injection cap, ranked here (in a worker thread: embedding the task is
        CPU work) or by the server's select endpoint; `task_files` as the sync client's `select`."""
        if not self.local_ranking:
            return await self._select_on_server(task=task, intent=intent, k=k, session=session, task_files=task_files)
        data = await (self.session_set(session) if session else self.active_set())
        if session and data.get("arms"):
            index = await asyncio.to_thread((self._ranker or Ranker()).index, data["procedures"])
        else:
            index = await self._current_index(data)
        selection = await asyncio.to_thread(index.select, task=task, intent=intent, cap=selection_cap(data), k=k)
        if task_files and selection["injected"]:
            indexes = await self.file_indexes()
            if indexes:
                selection = {**selection, "injected": with_task_files(selection["injected"], task, indexes)}
        return selection

    async def file_indexes(self) -> dict[str, TaskFileIndex]:
        """The agent's file indexes, as the sync client's `file_indexes`."""
        now = self._clock()
        if now < self._file_index_next:
            return self._file_indexes
        headers = self._headers()
        if self._file_index_etag:
            headers["If-None-Match"] = self._file_index_etag
        self.file_index_fetches += 1
        try:
            response = await self._http.get(self._url(f"agents/{self.agent}/file-index"), headers=headers)
            self._file_index_answered(now, response.status_code, response.content, response.headers.get("ETag"))
        except httpx.HTTPError as exc:
            self._file_index_failed(now, f"{type(exc).__name__}: {exc}")
        return self._file_indexes

    async def _current_index(self, data: dict[str, Any]) -> Index:
        """The index of the cached set, built once per set (off the event loop: it embeds)."""
        if self._index is None or self._index_set is not data:
            index = await asyncio.to_thread((self._ranker or Ranker()).index, data["procedures"])
            self._index, self._index_set = index, data
        return self._index

    async def _select_on_server(
        self, *, task: str, intent: str | None, k: int | None, session: str | None, task_files: bool = False
    ) -> Selection:
        query = select_query(
            task=task,
            intent=intent,
            k=k,
            environment=self.environment,
            session=session,
            task_files=task_files and self.server_task_files,
        )
        self.selects += 1
        try:
            response = await self._http.post(  # the task in the body: in no URL, so in no access log
                self._url(f"agents/{self.agent}/select"), json=query, headers=self._headers()
            )
            if query.get("taskFiles") and refuses_task_files(response.status_code, response.content):
                self.server_task_files = False  # a server from before taskFiles: ask again without it
                return await self._select_on_server(task=task, intent=intent, k=k, session=session)
            if response.status_code != 200:
                self.last_error_status = response.status_code
                raise ValueError(
                    http_failure(response.status_code, response.text, method="POST", url=str(response.url))
                )
            data = response.json()
            selection = selection_from_response(task, data)
        except (httpx.HTTPError, ValueError) as exc:
            self.last_error = str(exc) if str(exc).startswith("HTTP ") else f"{type(exc).__name__}: {exc}"
            logger.warning("procmem: selection for %s failed, injecting nothing (%s)", self.agent, self.last_error)
            return empty_selection(task, intent)
        self.selected_set_etag = data.get("setEtag")
        return selection

    # ------------------------------------------------------------------------------------ recall (coding agents)

    async def recall(
        self, *, prompt: str, tool_calls: Sequence[Any] = (), intent: str | None = None, task_files: bool = True
    ) -> list[dict[str, Any]]:
        """The recall pointers of the procedures selected for a coding agent's prompt and, when
        given, its tool calls, naming the task's files first (as the sync client's `recall`)."""
        selection = await self.select(task=recall_query(prompt, tool_calls), intent=intent, task_files=task_files)
        return recall_pointers(selection["injected"])

    async def recall_session(
        self, prompt: str, *, intent: str | None = None, after_calls: int = 3
    ) -> AsyncRecallSession:
        """Recall for one prompt, again after its first `after_calls` tool calls (AsyncRecallSession)."""
        session = AsyncRecallSession(self, prompt, intent=intent, after_calls=after_calls)
        session.pointers = await self.recall(prompt=prompt, intent=intent)
        return session

    def render(self, records: Iterable[Mapping[str, Any]]) -> str:
        return render_block(records, max_chars=self.max_chars)["text"]

    async def instruction_for(
        self, *, task: str, intent: str | None = None, base_instruction: str = "", session: str | None = None
    ) -> tuple[str, list[dict[str, Any]]]:
        """The instruction (base + the block of selected procedures) and the injected records."""
        selected = (await self.select(task=task, intent=intent, session=session))["injected"] if task.strip() else []
        block = render_block(selected, max_chars=self.max_chars)
        parts = [p for p in (base_instruction.strip(), block["text"]) if p]
        return "\n\n".join(parts), block["included"]

    # ------------------------------------------------------------------------------------ reporting

    async def report_sessions(self, sessions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        """POST /api/v1/sessions with the ingest token; the server's answer. ProcmemError when the
        server refuses the batch or cannot be reached."""
        return await self._post_jsonl("sessions", sessions, what="report_sessions")

    async def report_outcome(
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
        """What became known about a finished session later, as the sync client's `report_outcome`:
        POST /api/v1/sessions/outcomes with the ingest token; an id the server does not know is
        listed under "unknown" (a 422 per-item answer is returned, not raised)."""
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
        return await self._post_jsonl("sessions/outcomes", [outcome], what="report_outcome")

    async def _post_jsonl(self, path: str, items: Sequence[Mapping[str, Any]], *, what: str) -> dict[str, Any]:
        if not self._ingest_token:
            raise ProcmemError(f"{what} needs an ingest token (AsyncProcmemClient(ingest_token=...))")
        where = f"POST /api/{self.api_version}/{path}"
        try:
            response = await self._http.post(
                self._url(path),
                content=sessions_body(items),  # JSON Lines: one object a line
                headers={**self._headers(self._ingest_token), "Content-Type": "application/x-ndjson"},
            )
        except httpx.HTTPError as exc:
            raise ProcmemError(f"{where} failed: {exc}") from None
        try:
            answer: Any = response.json() if response.content else {}
        except ValueError:
            answer = response.text[:300]
        if response.status_code >= 400 and not outcome_refusal(path, response.status_code, answer):
            raise ProcmemError(
                f"{where} answered {response.status_code}{refusal_reason(answer)}",
                status=response.status_code,
                body=answer,
            )
        return answer

    async def report_session(
        self, *, session_id: str, task: str, resolved: bool | None, injected: Sequence[Mapping[str, Any]], **fields: Any
    ) -> dict[str, Any]:
        record = session_record(
            session_id=session_id, agent=self.agent, task=task, resolved=resolved, injected=injected, **fields
        )
        return await self.report_sessions([record])


class AsyncRecallSession:
    """The sync client's RecallSession for async agents: recalled on the prompt, and once more after
    the first `after_calls` tool calls (`await session.observe(call)` returns the new pointers then)."""

    def __init__(
        self, client: AsyncProcmemClient, prompt: str, *, intent: str | None = None, after_calls: int = 3
    ) -> None:
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
        self.pointers: list[dict[str, Any]] = []

    async def observe(self, call: Any) -> list[dict[str, Any]] | None:
        """Records one tool call; after the `after_calls`-th, recalls again and returns the new
        pointers (None otherwise)."""
        self.calls.append(call)
        if len(self.calls) != self.after_calls:
            return None
        self.pointers = await self._client.recall(prompt=self.prompt, tool_calls=self.calls, intent=self.intent)
        self.recalls += 1
        return self.pointers


__all__ = ["AsyncProcmemClient", "AsyncRecallSession"]
