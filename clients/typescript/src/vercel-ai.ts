/**
 * The Vercel AI SDK (`ai`): procmem's block in the `system` prompt of generateText / streamText.
 * No import of `ai`: the adapter only builds the parameters, so it works with any SDK version that
 * takes `system`, `prompt` and `messages`.
 *
 *   import { generateText } from "ai";
 *   import { withProcmem } from "procmem-client/vercel-ai";
 *
 *   let injected: ProcedureRecord[] = [];
 *   const result = await generateText(await withProcmem(client, {
 *     model, system: "You are the support agent.", prompt: task,
 *   }, { onInjected: (records) => { injected = records; } }));
 *   await client.reportSession({ sessionId, task, resolved: true, injected });
 */

import type { InstructionOptions, ProcmemClient } from "./client.js";
import type { ProcedureRecord } from "./types.js";

export interface ProcmemSystem {
  /** The base system prompt and procmem's block, separated by a blank line. */
  system: string;
  /** The records in the block: report them with the session. */
  injected: ProcedureRecord[];
}

/** The `system` prompt for a task: the base prompt followed by the block of selected procedures. */
export async function procmemSystem(
  client: ProcmemClient,
  options: { task: string; base?: string; intent?: string | null; session?: string },
): Promise<ProcmemSystem> {
  const request: InstructionOptions = { task: options.task, baseInstruction: options.base ?? "" };
  if (options.intent) request.intent = options.intent;
  if (options.session) request.session = options.session;
  const { text, injected } = await client.instructionFor(request);
  return { system: text, injected };
}

interface MessageLike {
  role?: string;
  content?: unknown;
}

/** The text of the last user message (a string, or the text parts of a content array). */
export function lastUserText(messages: readonly MessageLike[] | undefined): string {
  for (const message of [...(messages ?? [])].reverse()) {
    if (message?.role !== "user") continue;
    if (typeof message.content === "string") return message.content;
    if (Array.isArray(message.content)) {
      return message.content
        .filter((part): part is { type: "text"; text: string } => part?.type === "text" && typeof part.text === "string")
        .map((part) => part.text)
        .join("\n");
    }
  }
  return "";
}

export interface WithProcmemOptions {
  intent?: string | null;
  session?: string;
  /** The task, when it is neither `prompt` (a string) nor the last user message. */
  task?: string;
  /** Receives the injected records (report them with the session). */
  onInjected?: (injected: ProcedureRecord[]) => void;
}

/**
 * generateText/streamText parameters with procmem's block appended to `system`. The task is
 * `options.task`, else `prompt` when it is a string, else the last user message of `messages`
 * (or of `prompt` given as messages). Without a task the parameters come back with `system` unchanged.
 */
export async function withProcmem<P extends { system?: unknown; prompt?: unknown; messages?: unknown }>(
  client: ProcmemClient,
  params: P,
  options: WithProcmemOptions = {},
): Promise<P & { system: string }> {
  const base = typeof params.system === "string" ? params.system : "";
  const messages = (Array.isArray(params.messages) ? params.messages : Array.isArray(params.prompt) ? params.prompt : []) as MessageLike[];
  const task = options.task ?? (typeof params.prompt === "string" ? params.prompt : lastUserText(messages));
  if (!task.trim()) {
    options.onInjected?.([]);
    return { ...params, system: base };
  }
  const request: { task: string; base: string; intent?: string | null; session?: string } = { task, base };
  if (options.intent) request.intent = options.intent;
  if (options.session) request.session = options.session;
  const { system, injected } = await procmemSystem(client, request);
  options.onInjected?.(injected);
  return { ...params, system };
}
