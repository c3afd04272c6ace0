/** The agent API's JSON (docs/api.md, `/api/v1/` and `/api/v2/`), as far as a client reads it. */

export type ApiVersion = "v1" | "v2";

/** A procedure record as the active set and the select endpoint carry it. Optional fields are
 * additions the server makes for some procedures (coding procedures, scope, rollouts). */
export interface ProcedureRecord {
  id: string;
  version: number;
  status?: string;
  appliesWhen?: string;
  steps?: string[];
  requiredTools?: string[];
  forbiddenActions?: string[];
  evidence?: { miningRunId?: number | string | null; [key: string]: unknown } | null;
  approvedBy?: string | null;
  approvedAt?: string | null;
  intent?: string | null;
  preconditions?: string[];
  postconditions?: string[];
  verifyCommand?: string;
  /** Coding procedures only: the short form a coding agent recalls (procmem_client/coding.py recall_pointer). */
  recallPointer?: Record<string, unknown>;
  namespace?: string;
  roles?: string[];
  priority?: number;
  confidence?: string;
  arm?: "rollout" | "control";
  rendered?: string;
  renderedChars?: number;
  renderedTokens?: number;
  [key: string]: unknown;
}

export interface Refusal {
  id: string;
  version: number;
  intent?: string;
  reason: string;
  message: string;
  missingTools?: string[];
}

/** GET /api/v1/agents/{agent}/procedures */
export interface ActiveSet {
  apiVersion: ApiVersion;
  agent: string;
  namespace?: string;
  proceduralMemoryEnabled: boolean;
  injectionCap: number;
  tools: string[];
  toolsHash?: string;
  procedures: ProcedureRecord[];
  refused: Refusal[];
  environment?: string;
  role?: string;
  arms?: Record<string, "rollout" | "control">;
  note?: string;
}

/** POST (or GET) /api/v1/agents/{agent}/select (the fields a client reads). */
export interface Selection {
  task: string;
  intent: string | null;
  cap: number;
  injected: ProcedureRecord[];
  ranked: unknown[];
  /** The block the server rendered for `injected` (header, character cap); "" when nothing. */
  rendered: string;
  /** The ETag of the set the server selected from. */
  setEtag: string | null;
}

export interface RenderedText {
  text: string;
  chars: number;
  tokens: number;
}

export interface RenderedBlock<R extends ProcedureRecord = ProcedureRecord> extends RenderedText {
  /** The records in the block, in order: what the agent receives. */
  included: R[];
  /** The lower-ranked records the character cap left out. */
  dropped: R[];
}

export interface ToolCall {
  name: string;
  args?: Record<string, unknown>;
  ok?: boolean;
}

export interface InjectedRef {
  id: string;
  version: number;
  arm?: "rollout" | "control";
}

/** One finished session in procmem JSONL form (docs/api.md "Sessions in: ingestion"). */
export interface SessionRecord {
  session_id: string;
  agent: string;
  intent: string | null;
  task: string;
  outcome: { resolved: boolean | null; escalated: boolean | null; rating: number | null };
  tool_calls: { name: string; args: Record<string, unknown>; ok: boolean }[];
  injected: InjectedRef[];
  instruction_chars: number | null;
  model: string;
  ended_at: string;
}

/** The server's answer to POST /api/v1/sessions. */
export interface IngestReport {
  agent?: string;
  stored: string[];
  duplicate: string[];
  refused: unknown[];
  counts?: Record<string, number>;
  [key: string]: unknown;
}
