/**
 * A procedure version as an Agent Skill folder (agentskills.io), byte for byte what the Python
 * skill renderer writes (clients/python/procmem_client/skill_rendering.py and skills.py), which the
 * server serves at /.well-known/agent-skills/. The golden files in clients/golden/skills/ are
 * checked by both test suites.
 *
 * Done the Python way here, as in rendering.ts: white space is Python's, lengths of the
 * description count UTF-16 units (the reference validator's way) and code points where Python
 * iterates them; the content hash is sha256 over the same canonical JSON, computed in plain
 * TypeScript so the module runs wherever the client does.
 */

import { WS, pyStrip, renderBlock } from "./rendering.js";
import type { ProcedureRecord } from "./types.js";

export const DESCRIPTION_MAX = 1024;
export const SKILL_NAME_MAX = 64;
export const SKILL_FILE = "SKILL.md";
export const VERIFY_SCRIPT = "scripts/verify.sh";
const MAX_TOOLS_NAMED = 8;

export interface SkillFolder {
  /** The folder's name and the front matter's `name`. */
  name: string;
  description: string;
  /** Relative path → text, in the order written (SKILL.md first). */
  files: Record<string, string>;
}

// ------------------------------------------------------------------------------------------ names

const PROCEDURE_ID = /^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$/;
const PLAIN = /^[a-z][a-z0-9]*\.[a-z0-9]+(_[a-z0-9]+)*$/;
const TAG = /^(x[0-9]+|h[0-9a-z]{10})$/;

/** The skill name of a procedure id: `refund.over_limit` → `refund-over-limit`; other ids carry
 * an `-x<n>` tag of their separators; names longer than 64 are cut and end in `-h<sha256>`. */
export function idToSkillName(procedureId: string): string {
  if (procedureId.length > 120 || !PROCEDURE_ID.test(procedureId)) {
    throw new RangeError(`not a procedure id: ${JSON.stringify(procedureId)}`);
  }
  const words = procedureId.match(/[a-z0-9]+/g) ?? [];
  let name: string;
  if (PLAIN.test(procedureId) && !TAG.test(words[words.length - 1] ?? "")) {
    name = words.join("-");
  } else {
    const runs = (procedureId.match(/[._]+/g) ?? []).map((run) => run.replaceAll(".", "1").replaceAll("_", "2"));
    let tag = 0n;
    for (const digit of `1${runs.join("0")}`) tag = tag * 3n + BigInt(digit);
    name = [...words, `x${tag.toString()}`].join("-");
  }
  return name.length <= SKILL_NAME_MAX ? name : hashedName(procedureId, words);
}

function hashedName(procedureId: string, words: string[]): string {
  const digest = BigInt(`0x${sha256Hex(utf8(procedureId))}`).toString(36).slice(0, 10).padStart(10, "0");
  const tag = `h${digest}`;
  const kept: string[] = [];
  for (const word of words) {
    if ([...kept, word, tag].join("-").length > SKILL_NAME_MAX) break;
    kept.push(word);
  }
  if (kept.length === 0) kept.push((words[0] ?? "").slice(0, SKILL_NAME_MAX - tag.length - 1));
  return [...kept, tag].join("-");
}

// ------------------------------------------------------------------------------------ front matter

// What PyYAML reads as printable in a double-quoted scalar, less line breaks and the BOM.
const UNPRINTABLE = /[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\u{10000}-\u{10ffff}]/gu;
const SHORT_ESCAPES: Record<string, string> = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };
const BARE_KEY = /^[a-z][a-z0-9]*(-[a-z0-9]+)+$/;

/** A YAML double-quoted scalar on one line; `---` written `--\x2d` (skills-ref ends the front
 * matter at the next `---` anywhere). */
export function quote(value: string): string {
  const escaped = value
    .replaceAll("\\", "\\\\")
    .replaceAll('"', '\\"')
    .replace(UNPRINTABLE, (char) => SHORT_ESCAPES[char] ?? `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
  return `"${escaped.replaceAll("---", "--\\x2d")}"`;
}

/** The front matter as skills.py writes it: `name` bare, strings quoted, one level of mapping. */
export function writeFrontMatter(fields: Record<string, string | Record<string, string>>): string {
  const lines = ["---"];
  for (const [key, value] of Object.entries(fields)) {
    if (key === "name") lines.push(`name: ${value as string}`);
    else if (typeof value === "string") lines.push(`${key}: ${quote(value)}`);
    else {
      const entries = Object.entries(value);
      lines.push(entries.length ? `${key}:` : `${key}: {}`);
      for (const [k, v] of entries) lines.push(`  ${BARE_KEY.test(k) ? k : quote(k)}: ${quote(v)}`);
    }
  }
  lines.push("---");
  return `${lines.join("\n")}\n`;
}

// ---------------------------------------------------------------------------------------- rendering

const SPLIT = new RegExp(`[${WS}]+`);
const TRAILING = new RegExp(`[${WS}]+$`);

/** Python's `" ".join(text.split())`. */
function words(text: string): string {
  return pyStrip(text)
    .split(SPLIT)
    .filter((w) => w !== "")
    .join(" ");
}

function utf16Length(text: string): number {
  return text.length;
}

function cut(text: string, budget: number): string {
  if (utf16Length(text) <= budget) return text;
  let kept = "";
  let used = 1; // the ellipsis
  for (const char of text) {
    if (used + char.length > budget) break;
    kept += char;
    used += char.length;
  }
  return `${kept.replace(TRAILING, "")}…`;
}

function whatItDoes(record: ProcedureRecord): string {
  const intent = words(String(record.intent ?? "").replaceAll("_", " ").replaceAll("-", " "));
  const subject = intent ? intent.slice(0, 1).toUpperCase() + intent.slice(1) : `Procedure ${record.id}`;
  const count = (record.steps ?? []).length;
  let what = `${subject}: a reviewed procedure of ${count} step${count === 1 ? "" : "s"}`;
  const tools = (record.requiredTools ?? []).filter((tool) => pyStrip(tool) !== "");
  if (tools.length) {
    const named = tools.slice(0, MAX_TOOLS_NAMED);
    const more = tools.length - named.length;
    what += ` with ${named.join(", ")}${more ? ` and ${more} more` : ""}`;
  }
  return `${what}.`;
}

/** What the skill does and when to use it, within 1,024 characters. */
export function describe(record: ProcedureRecord): string {
  const what = whatItDoes(record);
  const when = words(String(record.appliesWhen ?? ""));
  if (!when) return cut(what, DESCRIPTION_MAX);
  const lead = `${what} Use it when: `;
  const budget = DESCRIPTION_MAX - utf16Length(lead);
  if (budget < 2) return cut(what, DESCRIPTION_MAX);
  return lead + cut(when, budget);
}

/** The version's content hash: sha256 of the canonical JSON of its content fields (sorted keys). */
export function contentSha256(record: ProcedureRecord): string {
  const fields: Record<string, unknown> = {
    appliesWhen: record.appliesWhen ?? "",
    forbiddenActions: record.forbiddenActions ?? [],
  };
  if (record.postconditions?.length) fields.postconditions = record.postconditions;
  if (record.preconditions?.length) fields.preconditions = record.preconditions;
  fields.requiredTools = record.requiredTools ?? [];
  fields.steps = record.steps ?? [];
  if (record.verifyCommand) fields.verifyCommand = record.verifyCommand;
  return sha256Hex(utf8(JSON.stringify(fields)));
}

export function skillMetadata(record: ProcedureRecord): Record<string, string> {
  const metadata: Record<string, string> = {
    "procmem-id": String(record.id),
    "procmem-version": String(record.version),
  };
  if (record.approvedBy) metadata["procmem-approved-by"] = String(record.approvedBy);
  if (record.approvedAt) metadata["procmem-approved-at"] = String(record.approvedAt);
  metadata["procmem-content-sha256"] = contentSha256(record);
  return metadata;
}

function hasVerifyCommand(record: ProcedureRecord): boolean {
  return pyStrip(record.verifyCommand ?? "") !== "";
}

export function skillBody(record: ProcedureRecord): string {
  const parts = [renderBlock([record], { maxChars: null }).text];
  const when = words(String(record.appliesWhen ?? ""));
  if (when) parts.push(`Use it when: ${when}`);
  if (hasVerifyCommand(record)) parts.push(`The Verify command is also ${VERIFY_SCRIPT} in this folder.`);
  return `${parts.join("\n\n")}\n`;
}

/** The skill folder of one procedure version: the same bytes as the Python renderer. */
export function renderSkill(record: ProcedureRecord): SkillFolder {
  const name = idToSkillName(String(record.id));
  const description = describe(record);
  const front = writeFrontMatter({ name, description, metadata: skillMetadata(record) });
  const files: Record<string, string> = { [SKILL_FILE]: front + skillBody(record) };
  if (hasVerifyCommand(record)) {
    files[VERIFY_SCRIPT] =
      "#!/bin/sh\n" +
      `# The Verify command of the reviewed procedure ${record.id} v${record.version} (see SKILL.md).\n` +
      `${pyStrip(record.verifyCommand ?? "")}\n`;
  }
  return { name, description, files };
}

// ------------------------------------------------------------------------------------------ sha256

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);

/** SHA-256 (FIPS 180-4) of `data`, as 64 lower-case hex digits. */
export function sha256Hex(data: Uint8Array): string {
  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const padded = new Uint8Array(Math.ceil((data.length + 9) / 64) * 64);
  padded.set(data);
  padded[data.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor((data.length * 8) / 2 ** 32));
  view.setUint32(padded.length - 4, (data.length * 8) >>> 0);
  const w = new Uint32Array(64);
  const rotr = (x: number, n: number) => (x >>> n) | (x << (32 - n));
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let i = 0; i < 16; i++) w[i] = view.getUint32(offset + i * 4);
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15]!;
      const b = w[i - 2]!;
      const s0 = rotr(a, 7) ^ rotr(a, 18) ^ (a >>> 3);
      const s1 = rotr(b, 17) ^ rotr(b, 19) ^ (b >>> 10);
      w[i] = (w[i - 16]! + s0 + w[i - 7]! + s1) >>> 0;
    }
    let [a, b, c, d, e, f, g, hh] = [h[0]!, h[1]!, h[2]!, h[3]!, h[4]!, h[5]!, h[6]!, h[7]!];
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + w[i]!) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      [hh, g, f, e, d, c, b, a] = [g, f, e, (d + t1) >>> 0, c, b, a, (t1 + t2) >>> 0];
    }
    const next = [a, b, c, d, e, f, g, hh];
    for (let i = 0; i < 8; i++) h[i] = (h[i]! + next[i]!) >>> 0;
  }
  return Array.from(h, (word) => word.toString(16).padStart(8, "0")).join("");
}
