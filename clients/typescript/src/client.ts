/**
 * The procmem client for TypeScript and JavaScript agents, with no runtime dependency beyond
 * `fetch` (Node 20+, Deno, Bun, browsers and edge runtimes have it). The same behaviour as the
 * Python client (clients/python/procmem_client/client.py):
 *
 * - the active set from GET /api/{v}/agents/{agent}/procedures, revalidated with If-None-Match
 *   (304 keeps the cached set) at most every `refreshInterval` seconds;
 * - when the server fails, the last good set is kept (`lastError` says why; retried after
 *   `retryInterval`); before the first success the set is empty, so an agent without procmem still
 *   runs, only without procedures;
 * - selection by the server's select endpoint (the ranker is the server's); a failed selection
 *   injects nothing;
 * - the block is rendered here with the renderer that is byte-identical to the server's;
 * - finished sessions are reported to POST /api/{v}/sessions with an ingest token.
 */

import { DEFAULT_MAX_CHARS, pyStrip, renderBlock } from "./rendering.js";
import type {
  ActiveSet,
  ApiVersion,
  IngestReport,
  InjectedRef,
  ProcedureRecord,
  Selection,
  SessionRecord,
  ToolCall,
} from "./types.js";

export class ProcmemError extends Error {
  readonly status: number | null;
  readonly body: unknown;

  constructor(message: string, options: { status?: number | null; body?: unknown } = {}) {
    super(message);
    this.name = "ProcmemError";
    this.status = options.status ?? null;
    this.body = options.body;
  }
}

export interface ProcmemClientOptions {
  baseUrl: string;
  agent: string;
  /** A read token of the agent. */
  token: string;
  /** An ingest token, for reportSession(s). */
  ingestToken?: string;
  /** Seconds between revalidations of the set (default 30). */
  refreshInterval?: number;
  /** Seconds before a failed fetch is retried (default 5). */
  retryInterval?: number;
  /** Seconds a request may take (default 5). */
  timeout?: number;
  /** The block's character cap (default 4000, the server's PROCMEM_INJECTION_MAX_CHARS); null: none. */
  maxChars?: number | null;
  /** The agent's environment to read (default: production). */
  environment?: string;
  /** The agent instance's role (only the procedures for that role are served). */
  role?: string;
  apiVersion?: ApiVersion;
  /** Another fetch (a proxy agent, a test double); default: the global fetch. */
  fetch?: typeof fetch;
  /** Milliseconds of a monotonic clock (default: performance.now). */
  clock?: () => number;
}

export interface SelectOptions {
  task: string;
  intent?: string | null;
  /** 1–20: adds every retriever's score for the top k in `ranked`. */
  k?: number;
  /** The agent's session id: the session's rollout arm while a rollout runs. */
  session?: string;
  /**
   * true: each injected coding procedure's `recallPointer` names first the files the task's words point
   * to (the select endpoint's `taskFiles`; docs/api.md). A server from before the field is asked again without it.
   */
  taskFiles?: boolean;
}

export interface InstructionOptions extends SelectOptions {
  baseInstruction?: string;
}

export interface Instruction {
  /** The base instruction and the block, separated by a blank line. */
  text: string;
  /** The records in the block (with `arm` during a rollout): report them with the session. */
  injected: ProcedureRecord[];
}

/** What became known about a finished session later (fields left out are unknown, not false). */
export interface OutcomeReport {
  resolved?: boolean | null;
  escalated?: boolean | null;
  rating?: number | null;
  complaint?: boolean | null;
  closedByCustomer?: boolean | null;
  /** When it happened (ISO 8601; default: when the server receives it). */
  at?: string | null;
  source?: string | null;
}

/** A coding agent's tool call as recall reads it: a shell line, or an object with its command/target. */
export type RecallCall = string | Record<string, unknown>;

export interface RecallOptions {
  prompt: string;
  toolCalls?: readonly RecallCall[];
  intent?: string;
  /** Name the task's files first in each pointer (default true; the select endpoint's `taskFiles`). */
  taskFiles?: boolean;
}

export interface SessionReport {
  sessionId: string;
  task: string;
  resolved: boolean | null;
  injected: readonly (InjectedRef | ProcedureRecord)[];
  escalated?: boolean | null;
  rating?: number | null;
  intent?: string | null;
  toolCalls?: readonly ToolCall[];
  instructionChars?: number | null;
  model?: string;
  endedAt?: Date | string;
}

const API_VERSIONS: readonly ApiVersion[] = ["v1", "v2"];

function emptySet(agent: string, apiVersion: ApiVersion): ActiveSet {
  return { apiVersion, agent, proceduralMemoryEnabled: true, injectionCap: 0, tools: [], procedures: [], refused: [] };
}

function isoUtc(date: Date): string {
  // Python's isoformat with "Z": microseconds are not kept by Date, milliseconds are
  return date.toISOString();
}

/** One finished session in procmem JSONL form (docs/api.md "Sessions in: ingestion"). */
export function sessionRecord(agent: string, report: SessionReport): SessionRecord {
  const ended = report.endedAt instanceof Date ? isoUtc(report.endedAt) : report.endedAt || isoUtc(new Date());
  return {
    session_id: report.sessionId,
    agent,
    intent: report.intent ?? null,
    task: report.task,
    outcome: { resolved: report.resolved, escalated: report.escalated ?? null, rating: report.rating ?? null },
    tool_calls: (report.toolCalls ?? []).map((call) => ({ name: call.name, args: call.args ?? {}, ok: call.ok ?? true })),
    injected: report.injected.map((p) => ({ id: p.id, version: Math.trunc(Number(p.version)), ...(p.arm ? { arm: p.arm } : {}) })),
    instruction_chars: report.instructionChars ?? null,
    model: report.model ?? "",
    ended_at: ended,
  };
}

/** One line of POST /api/{v}/sessions/outcomes (the Python client's outcome_record). */
export function outcomeRecord(sessionId: string, outcome: OutcomeReport): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    session_id: sessionId,
    resolved: outcome.resolved,
    escalated: outcome.escalated,
    rating: outcome.rating,
    complaint: outcome.complaint,
    closed_by_customer: outcome.closedByCustomer,
    at: outcome.at,
    source: outcome.source,
  };
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined && value !== null));
}

const CALL_FIELDS = ["command", "cmd", "target", "path", "file_path", "file", "pattern", "tool", "name"] as const;

/** The targets and command of one tool call as text (procmem_client/coding.py tool_call_text). */
export function toolCallText(call: unknown): string {
  if (typeof call === "string") return call;
  if (!call || typeof call !== "object" || Array.isArray(call)) return "";
  const record = call as Record<string, unknown>;
  const parts: string[] = [];
  for (const key of CALL_FIELDS) {
    const value = record[key];
    if (typeof value === "string") parts.push(value);
    else if (typeof value === "number" && Number.isInteger(value)) parts.push(String(value));
  }
  for (const nested of ["args", "input", "arguments"]) {
    const value = record[nested];
    if (value && typeof value === "object" && !Array.isArray(value)) parts.push(toolCallText(value));
  }
  return parts.filter((part) => part).join(" ");
}

/** A server from before select's `taskFiles` refuses it as an unknown field (400 naming it). */
function refusesTaskFiles(status: number, body: string): boolean {
  if (status !== 400) return false;
  try {
    const error = (JSON.parse(body) as { error?: { parameter?: unknown; message?: unknown } } | null)?.error;
    return error?.parameter === "taskFiles" && String(error?.message ?? "").includes("unknown field");
  } catch {
    return false;
  }
}

/** The prompt, then one line per tool call with its targets and command (coding.py recall_query). */
export function recallQuery(prompt: string, toolCalls: readonly RecallCall[] = []): string {
  const lines = [pyStrip(prompt), ...toolCalls.map((call) => pyStrip(toolCallText(call)))];
  return lines.filter((line) => line).join("\n");
}

/**
 * `lastError` for a refusal: the status, the request and the server's own message and code
 * (`HTTP 401 from GET /api/v1/agents/a/procedures: The token is unknown, revoked or expired.
 * (unauthorized)`), as the Python client words it; a body that is not the API's error, cut to 300.
 */
export function httpFailure(status: number, body: string, method: string, url: string): string {
  let detail = body.slice(0, 300);
  try {
    const error = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } }).error;
    if (error && typeof error.message === "string" && typeof error.code === "string") {
      detail = `${error.message} (${error.code})`;
    }
  } catch {
    // not JSON: the text as it came
  }
  let path = url;
  try {
    path = new URL(url).pathname;
  } catch {
    // a relative URL: as given
  }
  return `HTTP ${status} from ${method} ${path}: ${detail}`;
}

/**
 * Why a report was refused, for the ProcmemError's message (which said only "POST … answered 403"):
 * the API error's message and code, or an ingest report's first refused item and its field; the
 * Python client's words.
 */
export function refusalReason(detail: unknown): string {
  if (typeof detail === "string") return detail ? `: ${detail}` : "";
  if (!detail || typeof detail !== "object") return "";
  const { error, refused } = detail as { error?: { message?: unknown; code?: unknown }; refused?: unknown };
  if (error && typeof error === "object" && "message" in error) return `: ${String(error.message)} (${String(error.code)})`;
  if (Array.isArray(refused) && refused.length > 0 && refused[0] && typeof refused[0] === "object") {
    const first = refused[0] as { index?: unknown; errors?: unknown };
    const problem = (Array.isArray(first.errors) && first.errors[0] && typeof first.errors[0] === "object" ? first.errors[0] : {}) as {
      field?: unknown;
      message?: unknown;
    };
    return `: ${refused.length} refused, the first item ${String(first.index)}: ${String(problem.field ?? "?")} ${String(problem.message ?? "")}`.trimEnd();
  }
  return "";
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    const detail = cause instanceof Error ? `: ${cause.message}` : "";
    return `${error.name}: ${error.message}${detail}`;
  }
  return String(error);
}

export class ProcmemClient {
  readonly baseUrl: string;
  readonly agent: string;
  readonly apiVersion: ApiVersion;
  readonly environment: string | null;
  readonly role: string | null;
  readonly refreshInterval: number;
  readonly retryInterval: number;
  readonly timeout: number;
  readonly maxChars: number | null;
  /** Set while the server is unreachable or answers with an error; null after a success. */
  lastError: string | null = null;
  /** The HTTP status of the last failure when it had one: 401/403 mean the token is refused. */
  lastErrorStatus: number | null = null;
  /** Requests sent for the set, 304 answers received, requests sent to the select endpoint. */
  fetches = 0;
  notModified = 0;
  selects = 0;
  /** False once a server from before select's `taskFiles` refused it (it is then not sent again). */
  serverTaskFiles = true;
  /** The ETag of the set the server's last selection ran on. */
  selectedSetEtag: string | null = null;

  readonly #token: string;
  readonly #ingestToken: string | null;
  readonly #fetch: typeof fetch;
  readonly #clock: () => number;
  #set: ActiveSet;
  #etag: string | null = null;
  #nextRefresh = 0;
  #inflight: Promise<void> | null = null;

  constructor(options: ProcmemClientOptions) {
    const apiVersion = options.apiVersion ?? "v1";
    if (!API_VERSIONS.includes(apiVersion)) {
      throw new RangeError(`apiVersion must be one of ${API_VERSIONS.join(", ")}; got ${JSON.stringify(apiVersion)}`);
    }
    for (const name of ["baseUrl", "agent", "token"] as const) {
      if (typeof options[name] !== "string" || !options[name]) throw new TypeError(`${name} must be a non-empty string`);
    }
    if (!/^https?:\/\/[^/]/i.test(options.baseUrl)) {
      // said here, not as "TypeError: Invalid URL" in lastError at every fetch; the Python client's words
      throw new TypeError(`baseUrl must be procmem's address, http://… or https://…; got ${JSON.stringify(options.baseUrl.slice(0, 200))}`);
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.agent = options.agent;
    this.apiVersion = apiVersion;
    this.environment = options.environment || null;
    this.role = options.role || null;
    this.refreshInterval = options.refreshInterval ?? 30;
    this.retryInterval = options.retryInterval ?? 5;
    this.timeout = options.timeout ?? 5;
    this.maxChars = options.maxChars === undefined ? DEFAULT_MAX_CHARS : options.maxChars;
    this.#token = options.token;
    this.#ingestToken = options.ingestToken ?? null;
    const globalFetch = options.fetch ?? globalThis.fetch;
    if (typeof globalFetch !== "function") throw new TypeError("no fetch: pass options.fetch on runtimes without one");
    this.#fetch = globalFetch;
    this.#clock = options.clock ?? (() => performance.now());
    this.#set = emptySet(this.agent, apiVersion);
  }

  /** The ETag of the cached set (null before the first successful fetch). */
  get etag(): string | null {
    return this.#etag;
  }

  /** True once a set has been fetched successfully (it may be stale now). */
  /**
   * True when the server's last answer refused the token (401: unknown, revoked or expired;
   * 403: another agent's or another scope's), not an outage.
   */
  get tokenRefused(): boolean {
    return this.lastError !== null && (this.lastErrorStatus === 401 || this.lastErrorStatus === 403);
  }

  #failed(error: unknown): void {
    this.lastError = error instanceof ProcmemError ? error.message : describe(error);
    this.lastErrorStatus = error instanceof ProcmemError ? error.status : null;
  }

  get hasSet(): boolean {
    return this.#etag !== null;
  }

  /** True when an ingest token is configured (reportSessions and reportOutcome need one). */
  get canReport(): boolean {
    return this.#ingestToken !== null;
  }

  /** The ETag of the set the last selection came from (selection is the server's here). */
  get currentSetEtag(): string | null {
    return this.selectedSetEtag;
  }

  #url(path: string, query: Record<string, string | undefined | null> = {}): string {
    const url = new URL(`${this.baseUrl}/api/${this.apiVersion}/${path}`);
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
    }
    return url.toString();
  }

  #scope(session?: string): Record<string, string | undefined | null> {
    return { environment: this.environment, role: this.role, session };
  }

  async #request(url: string, init: RequestInit & { headers: Record<string, string> }): Promise<Response> {
    return this.#fetch(url, { ...init, signal: AbortSignal.timeout(this.timeout * 1000) });
  }

  /**
   * Revalidates the set now (`force`) or when `refreshInterval` has passed. Never throws: a failure
   * keeps the last good set and is recorded in `lastError`. Concurrent calls share one request.
   */
  async refresh(options: { force?: boolean } = {}): Promise<void> {
    if (!options.force && this.#clock() < this.#nextRefresh) return;
    if (this.#inflight) return this.#inflight;
    this.#inflight = this.#revalidate().finally(() => {
      this.#inflight = null;
    });
    return this.#inflight;
  }

  async #revalidate(): Promise<void> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.#token}`, Accept: "application/json" };
    if (this.#etag) headers["If-None-Match"] = this.#etag;
    this.fetches += 1;
    try {
      const url = this.#url(`agents/${encodeURIComponent(this.agent)}/procedures`, this.#scope());
      const response = await this.#request(url, { headers });
      if (response.status === 304) {
        this.notModified += 1;
      } else if (response.ok) {
        const data = (await response.json()) as unknown;
        if (!data || typeof data !== "object" || !Array.isArray((data as ActiveSet).procedures)) {
          throw new ProcmemError("the response is not an active set");
        }
        this.#set = data as ActiveSet;
        this.#etag = response.headers.get("ETag") ?? this.#etag ?? "";
      } else {
        const body = (await response.text()).slice(0, 4000);
        throw new ProcmemError(httpFailure(response.status, body, "GET", url), { status: response.status, body });
      }
      this.lastError = null;
      this.lastErrorStatus = null;
      this.#nextRefresh = this.#clock() + this.refreshInterval * 1000;
    } catch (error) {
      this.#failed(error);
      this.#nextRefresh = this.#clock() + this.retryInterval * 1000;
    }
  }

  /** The set to serve now: revalidated when due; the last good one when the server fails. */
  async activeSet(): Promise<ActiveSet> {
    await this.refresh();
    return this.#set;
  }

  async procedures(): Promise<ProcedureRecord[]> {
    return [...(await this.activeSet()).procedures];
  }

  /**
   * The set `session` receives: the cached set when no rollout runs (it has no `arms`), otherwise
   * the session's own, asked of the server; the cached set when that fails.
   */
  async sessionSet(session: string): Promise<ActiveSet> {
    const shared = await this.activeSet();
    if (!shared.arms || Object.keys(shared.arms).length === 0) return shared;
    this.fetches += 1;
    try {
      const url = this.#url(`agents/${encodeURIComponent(this.agent)}/procedures`, this.#scope(session));
      const response = await this.#request(url, {
        headers: { Authorization: `Bearer ${this.#token}`, Accept: "application/json" },
      });
      if (!response.ok) {
        const body = (await response.text()).slice(0, 4000);
        throw new ProcmemError(httpFailure(response.status, body, "GET", url), { status: response.status, body });
      }
      const data = (await response.json()) as unknown;
      if (!data || typeof data !== "object" || !Array.isArray((data as ActiveSet).procedures)) {
        throw new ProcmemError("the response is not an active set");
      }
      return data as ActiveSet;
    } catch (error) {
      this.#failed(error);
      return shared;
    }
  }

  /**
   * At most the set's injection cap, ranked by the server's select endpoint over the same set.
   * When the server fails, nothing is injected (the error is in `lastError`): the agent still runs.
   */
  async select(options: SelectOptions): Promise<Selection> {
    const { task, intent, k, session, taskFiles } = options;
    if (typeof task !== "string" || pyStrip(task) === "") throw new TypeError("task must be a non-empty string");
    if (k !== undefined && (!Number.isInteger(k) || k < 1 || k > 20)) throw new RangeError("k must be an integer from 1 to 20");
    const empty: Selection = { task, intent: intent || null, cap: 0, injected: [], ranked: [], rendered: "", setEtag: null };
    // POST with the parameters in the body: the task stays out of URLs, so out of access and proxy logs
    const parameters: Record<string, string | boolean> = {};
    for (const [key, value] of Object.entries({
      task,
      intent: intent ?? undefined,
      k: k === undefined ? undefined : String(k),
      ...this.#scope(session),
    })) {
      if (value !== undefined && value !== null && value !== "") parameters[key] = value;
    }
    if (taskFiles && this.serverTaskFiles) parameters.taskFiles = true;
    this.selects += 1;
    try {
      const url = this.#url(`agents/${encodeURIComponent(this.agent)}/select`);
      const response = await this.#request(url, {
        method: "POST",
        body: JSON.stringify(parameters),
        headers: { Authorization: `Bearer ${this.#token}`, Accept: "application/json", "Content-Type": "application/json" },
      });
      if (!response.ok) {
        const body = (await response.text()).slice(0, 4000);
        if (parameters.taskFiles && refusesTaskFiles(response.status, body)) {
          this.serverTaskFiles = false; // a server from before taskFiles: ask again without it
          this.selects -= 1;
          return await this.select({ ...options, taskFiles: false });
        }
        throw new ProcmemError(httpFailure(response.status, body, "POST", url), { status: response.status, body });
      }
      const data = (await response.json()) as Partial<Selection> | null;
      if (!data || typeof data !== "object" || !Array.isArray(data.injected)) throw new ProcmemError("the response is not a selection");
      this.selectedSetEtag = data.setEtag ?? null;
      return {
        task,
        intent: data.intent ?? null,
        cap: Number(data.cap ?? 0),
        injected: data.injected,
        ranked: Array.isArray(data.ranked) ? data.ranked : [],
        rendered: typeof data.rendered === "string" ? data.rendered : "",
        setEtag: data.setEtag ?? null,
      };
    } catch (error) {
      this.#failed(error);
      return empty;
    }
  }

  /**
   * The recall pointers (id, when to use it, the verify command; under 300 tokens each) of the
   * coding procedures selected for a coding agent's prompt and, when given, its tool calls. The
   * server computes each pointer (`recallPointer`), naming first the files the task's words point to
   * unless `taskFiles: false`; a selected record without one is not a coding procedure and is left out.
   */
  async recall(options: RecallOptions): Promise<Record<string, unknown>[]> {
    const selection = await this.select({
      task: recallQuery(options.prompt, options.toolCalls ?? []),
      intent: options.intent,
      taskFiles: options.taskFiles ?? true,
    });
    return selection.injected.flatMap((record) => (record.recallPointer ? [record.recallPointer] : []));
  }

  /** Recall for one prompt, and again after its first `afterCalls` tool calls (RecallSession). */
  async recallSession(prompt: string, options: { intent?: string; afterCalls?: number } = {}): Promise<RecallSession> {
    const session = new RecallSession(this, prompt, options);
    session.pointers = await this.recall({ prompt, intent: options.intent });
    return session;
  }

  /** The block the server's select endpoint returns for these records (header, character cap). */
  render(records: Iterable<ProcedureRecord>): string {
    return renderBlock(records, { maxChars: this.maxChars }).text;
  }

  /** The instruction text (base + the block of the selected procedures) and the injected records. */
  async instructionFor(options: InstructionOptions): Promise<Instruction> {
    const selected = pyStrip(options.task) ? (await this.select(options)).injected : [];
    const block = renderBlock(selected, { maxChars: this.maxChars });
    const parts = [pyStrip(options.baseInstruction ?? ""), block.text].filter((part) => part !== "");
    return { text: parts.join("\n\n"), injected: block.included };
  }

  /** POST /api/{v}/sessions with the ingest token: one JSONL line per session. Throws ProcmemError
   * when the server refuses the request or cannot be reached. */
  async reportSessions(sessions: readonly SessionRecord[]): Promise<IngestReport> {
    return (await this.#postJsonl("sessions", sessions, "reportSessions")) as IngestReport;
  }

  /**
   * What became known about a finished session later (a rating, a complaint, a ticket closed by the
   * customer): POST /api/{v}/sessions/outcomes with the ingest token. An id the server does not know
   * is listed under "unknown" (a 422 per-item answer is returned, not thrown).
   */
  async reportOutcome(sessionId: string, outcome: OutcomeReport = {}): Promise<Record<string, unknown>> {
    return this.#postJsonl("sessions/outcomes", [outcomeRecord(sessionId, outcome)], "reportOutcome");
  }

  async #postJsonl(path: string, items: readonly unknown[], what: string): Promise<Record<string, unknown>> {
    if (!this.#ingestToken) throw new ProcmemError(`${what} needs an ingest token (new ProcmemClient({ingestToken}))`);
    const body = items.map((item) => `${JSON.stringify(item)}\n`).join("");
    let response: Response;
    try {
      response = await this.#request(this.#url(path), {
        method: "POST",
        body,
        headers: {
          Authorization: `Bearer ${this.#ingestToken}`,
          "Content-Type": "application/x-ndjson",
          Accept: "application/json",
        },
      });
    } catch (error) {
      throw new ProcmemError(`POST /api/${this.apiVersion}/${path} failed: ${describe(error)}`);
    }
    const raw = await response.text();
    if (!response.ok) {
      let detail: unknown = raw.slice(0, 300);
      try {
        detail = JSON.parse(raw);
      } catch {
        // not JSON: keep the text
      }
      const perItem = path === "sessions/outcomes" && response.status === 422 && !!detail && typeof detail === "object" && "unknown" in detail;
      if (perItem) return detail as Record<string, unknown>;
      throw new ProcmemError(`POST /api/${this.apiVersion}/${path} answered ${response.status}${refusalReason(detail)}`, {
        status: response.status,
        body: detail,
      });
    }
    return (raw ? JSON.parse(raw) : {}) as Record<string, unknown>;
  }

  /** Reports one finished session (see sessionRecord for the fields). */
  async reportSession(report: SessionReport): Promise<IngestReport> {
    return this.reportSessions([sessionRecord(this.agent, report)]);
  }
}

/**
 * Recall as the Python client's RecallSession: once on the prompt, and once more when the first
 * `afterCalls` (three) tool calls are known; `await session.observe(call)` returns the new pointers then.
 */
export class RecallSession {
  readonly prompt: string;
  readonly intent: string | undefined;
  readonly afterCalls: number;
  readonly calls: RecallCall[] = [];
  recalls = 1;
  pointers: Record<string, unknown>[] = [];
  readonly #client: ProcmemClient;

  constructor(client: ProcmemClient, prompt: string, options: { intent?: string; afterCalls?: number } = {}) {
    if (typeof prompt !== "string" || pyStrip(prompt) === "") throw new TypeError("prompt must be a non-empty string");
    const afterCalls = options.afterCalls ?? 3;
    if (!Number.isInteger(afterCalls) || afterCalls < 1) throw new RangeError("afterCalls must be at least 1");
    this.#client = client;
    this.prompt = prompt;
    this.intent = options.intent;
    this.afterCalls = afterCalls;
  }

  /** Records one tool call; after the `afterCalls`-th, recalls again and returns the new pointers (else null). */
  async observe(call: RecallCall): Promise<Record<string, unknown>[] | null> {
    this.calls.push(call);
    if (this.calls.length !== this.afterCalls) return null;
    this.pointers = await this.#client.recall({ prompt: this.prompt, toolCalls: this.calls, intent: this.intent });
    this.recalls += 1;
    return this.pointers;
  }
}
