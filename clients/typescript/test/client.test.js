// The client against a live procmem server. tests/library/test_typescript_client.py starts the
// server, creates the agent, its ACTIVE procedures and tokens, asks the select endpoint for the
// expected selections (PROCMEM_EXPECT, a JSON file) and runs this file with node's test runner.
// Without PROCMEM_URL the live tests are skipped (`npm test` alone runs the golden files).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import http from "node:http";
import { describe, test } from "node:test";

import { MockLanguageModelV3 } from "ai/test";
import { generateText } from "ai";

import { httpFailure, refusalReason, ProcmemClient, ProcmemError, codePointLength, renderBlock, renderProcedure, sessionRecord } from "../dist/index.js";
import { lastUserText, procmemSystem, withProcmem } from "../dist/vercel-ai.js";

const LIVE = process.env.PROCMEM_URL;
const skip = LIVE ? false : "PROCMEM_URL is not set (tests/library/test_typescript_client.py sets it)";
const expectations = LIVE ? JSON.parse(readFileSync(process.env.PROCMEM_EXPECT, "utf8")) : null;

class Clock {
  now = 1_000_000;
  call = () => this.now;
}

function client(options = {}) {
  return new ProcmemClient({
    baseUrl: LIVE,
    agent: process.env.PROCMEM_AGENT,
    token: process.env.PROCMEM_TOKEN,
    ingestToken: process.env.PROCMEM_INGEST_TOKEN,
    ...options,
  });
}

/** A switchable proxy in front of the live server: `down = true` makes every request fail. */
function proxy() {
  const target = new URL(LIVE);
  const state = { down: false, server: null, url: "" };
  state.server = http.createServer((req, res) => {
    if (state.down) {
      req.socket.destroy();
      return;
    }
    const upstream = http.request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on("error", () => req.socket.destroy());
    req.pipe(upstream);
  });
  return state;
}

test("sessionRecord builds procmem JSONL fields", () => {
  const record = sessionRecord("support_agent", {
    sessionId: "s-1", task: "t", resolved: true, endedAt: new Date("2026-12-01T10:00:00Z"),
    injected: [{ id: "refund.over_limit", version: 3, arm: "rollout", steps: [] }],
    toolCalls: [{ name: "lookupOrder" }],
  });
  assert.deepEqual(record, {
    session_id: "s-1", agent: "support_agent", intent: null, task: "t",
    outcome: { resolved: true, escalated: null, rating: null },
    tool_calls: [{ name: "lookupOrder", args: {}, ok: true }],
    injected: [{ id: "refund.over_limit", version: 3, arm: "rollout" }],
    instruction_chars: null, model: "", ended_at: "2026-12-01T10:00:00.000Z",
  });
  assert.throws(() => new ProcmemClient({ baseUrl: "http://x", agent: "", token: "t" }), TypeError);
  assert.throws(() => new ProcmemClient({ baseUrl: "http://x", agent: "a", token: "t", apiVersion: "v9" }), RangeError);
  assert.equal(lastUserText([{ role: "user", content: [{ type: "text", text: "a" }, { type: "image" }, { type: "text", text: "b" }] }, { role: "assistant", content: "x" }]), "a\nb");
});

describe("against a live procmem server", { skip }, () => {
  test("the set: fetched with its ETag, served from memory, revalidated with 304", async () => {
    const clock = new Clock();
    const c = client({ clock: clock.call, refreshInterval: 30 });
    const set = await c.activeSet();
    assert.deepEqual(set.procedures.map((p) => [p.id, p.version]), expectations.procedures);
    assert.ok(c.etag && c.hasSet && c.lastError === null && c.fetches === 1);

    clock.now += 10_000;
    await c.activeSet();
    assert.equal(c.fetches, 1);

    clock.now += 30_000;
    const again = await c.procedures();
    assert.equal(again.length, expectations.procedures.length);
    assert.equal(c.fetches, 2);
    assert.equal(c.notModified, 1);
  });

  test("each record's server-rendered text is what this renderer makes of it", async () => {
    for (const apiVersion of ["v1", "v2"]) {
      const set = await client({ apiVersion }).activeSet();
      assert.equal(set.apiVersion, apiVersion);
      assert.ok(set.procedures.length >= 2);
      for (const record of set.procedures) {
        assert.equal(renderProcedure(record), record.rendered);
        assert.equal(codePointLength(record.rendered), record.renderedChars);
      }
    }
  });

  test("server-side selection: the ids and the block the Python side got", async () => {
    const c = client();
    for (const expected of expectations.selections) {
      const selection = await c.select({ task: expected.task, intent: expected.intent ?? undefined, k: 3 });
      assert.deepEqual(selection.injected.map((p) => p.id), expected.injected);
      assert.equal(selection.rendered, expected.rendered);
      assert.equal(c.render(selection.injected), expected.rendered);
      assert.equal(selection.setEtag, c.selectedSetEtag);
      assert.ok(selection.ranked.length >= 1);

      const { text, injected } = await c.instructionFor({ task: expected.task, intent: expected.intent ?? undefined, baseInstruction: "  You are the support agent.\n" });
      assert.equal(text, expected.rendered ? `You are the support agent.\n\n${expected.rendered}` : "You are the support agent.");
      assert.deepEqual(injected.map((p) => p.id), expected.injected);
    }
    await assert.rejects(c.select({ task: "  " }), TypeError);
  });

  test("stale on error: the last good set is served while the server is unreachable", async () => {
    const front = proxy();
    await new Promise((resolve) => front.server.listen(0, "127.0.0.1", resolve));
    try {
      const address = front.server.address();
      const clock = new Clock();
      const c = client({ baseUrl: `http://127.0.0.1:${address.port}`, clock: clock.call, retryInterval: 5, timeout: 3 });
      const first = (await c.activeSet()).procedures.map((p) => p.id);
      const etag = c.etag;

      front.down = true;
      await c.refresh({ force: true });
      assert.ok(c.lastError, "the failure is recorded");
      assert.equal(c.tokenRefused, false, "an unreachable server does not refuse the token");
      assert.deepEqual((await c.activeSet()).procedures.map((p) => p.id), first);
      assert.equal(c.etag, etag);
      // a failed selection injects nothing: the agent runs without procedures
      const { text, injected } = await c.instructionFor({ task: expectations.selections[0].task, baseInstruction: "Base." });
      assert.equal(text, "Base.");
      assert.deepEqual(injected, []);

      // within retryInterval no new request; after it, back up: the error clears (304: same set)
      const fetches = c.fetches;
      clock.now += 1_000;
      await c.activeSet();
      assert.equal(c.fetches, fetches);
      front.down = false;
      clock.now += 5_000;
      await c.activeSet();
      assert.equal(c.lastError, null);
      assert.equal(c.notModified, 1);
    } finally {
      front.server.closeAllConnections();
      await new Promise((resolve) => front.server.close(resolve));
    }
  });

  test("before the first success the set is empty and nothing is injected", async () => {
    const closed = http.createServer();
    await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = closed.address().port;
    await new Promise((resolve) => closed.close(resolve));
    const c = client({ baseUrl: `http://127.0.0.1:${port}`, timeout: 2 });
    const set = await c.activeSet();
    assert.deepEqual(set.procedures, []);
    assert.equal(c.hasSet, false);
    assert.ok(c.lastError);
  });

  test("a wrong token is recorded, not thrown", async () => {
    const c = client({ token: "pm_wrong" });
    await c.activeSet();
    assert.match(c.lastError, /^HTTP 401/);
    // the server's message and code and which request, as the Python client words it (was the raw JSON body)
    assert.equal(
      c.lastError,
      `HTTP 401 from GET /api/v1/agents/${process.env.PROCMEM_AGENT}/procedures: The token is unknown, revoked or expired. (unauthorized)`,
    );
    // a refused token is a configuration error, not an outage
    assert.equal(c.lastErrorStatus, 401);
    assert.equal(c.tokenRefused, true);
  });

  test("session reporting stores the session with the injected versions", async () => {
    const c = client();
    const expected = expectations.selections[0];
    const { text, injected } = await c.instructionFor({ task: expected.task, baseInstruction: "You are the support agent." });
    const answer = await c.reportSession({
      sessionId: expectations.reportSessionId, task: expected.task, resolved: true, escalated: false,
      intent: "refund_over_limit", injected, instructionChars: codePointLength(text), model: "mock-model",
      toolCalls: [{ name: "lookupOrder", args: { order_id: "1234" } }],
    });
    assert.deepEqual(answer.stored, [expectations.reportSessionId]);
    const again = await c.reportSession({ sessionId: expectations.reportSessionId, task: expected.task, resolved: true, injected });
    assert.deepEqual(again.duplicate, [expectations.reportSessionId]);

    const readOnly = client({ ingestToken: process.env.PROCMEM_TOKEN });
    await assert.rejects(readOnly.reportSession({ sessionId: "s-x", task: "t", resolved: true, injected: [] }), (error) => {
      assert.ok(error instanceof ProcmemError);
      assert.equal(error.status, 403);
      return true;
    });
    await assert.rejects(client({ ingestToken: undefined }).reportSessions([]), /ingest token/);
  });

  test("an outcome reported later changes the stored session; an unknown id is named, not thrown", async () => {
    const c = client();
    const answer = await c.reportOutcome(expectations.reportSessionId, { rating: 4.5, closedByCustomer: true, source: "csat_survey" });
    assert.deepEqual(answer.applied, [expectations.reportSessionId]);
    assert.deepEqual(answer.unknown, []);
    const unknown = await c.reportOutcome("ts-never-seen", { complaint: true });
    assert.deepEqual(unknown.unknown, ["ts-never-seen"]);
    await assert.rejects(client({ ingestToken: undefined }).reportOutcome("x", { resolved: true }), /ingest token/);
  });

  test("Vercel AI SDK: generateText's model receives procmem's block in the system prompt", async () => {
    const c = client();
    const expected = expectations.selections[0];
    const model = new MockLanguageModelV3({
      doGenerate: async () => ({
        content: [{ type: "text", text: "I have asked for approval." }],
        finishReason: { unified: "stop", raw: "stop" },
        usage: { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } },
        warnings: [],
      }),
    });
    let injected = null;
    const result = await generateText(
      await withProcmem(c, { model, system: "You are the support agent.", prompt: expected.task }, { onInjected: (records) => { injected = records; } }),
    );
    assert.equal(result.text, "I have asked for approval.");
    const [call] = model.doGenerateCalls;
    const system = call.prompt.filter((m) => m.role === "system").map((m) => m.content);
    assert.deepEqual(system, [`You are the support agent.\n\n${expected.rendered}`]);
    assert.deepEqual(injected.map((p) => p.id), expected.injected);

    // the task from the last user message of `messages`
    const second = new MockLanguageModelV3({ doGenerate: model.doGenerate });
    await generateText(await withProcmem(c, { model: second, messages: [{ role: "user", content: [{ type: "text", text: expected.task }] }] }));
    assert.equal(second.doGenerateCalls[0].prompt[0].content, expected.rendered);

    const direct = await procmemSystem(c, { task: expected.task, base: "Base." });
    assert.equal(direct.system, `Base.\n\n${expected.rendered}`);
    assert.equal(renderBlock(direct.injected).text, expected.rendered);
  });
});


test("httpFailure names the request and the server's message, or keeps a body that is not the API's error", () => {
  const body = JSON.stringify({ error: { code: "wrong_agent", message: "This token belongs to agent 'a', not 'b'." } });
  assert.equal(
    httpFailure(403, body, "POST", "http://procmem.test/api/v1/agents/b/select?x=1"),
    "HTTP 403 from POST /api/v1/agents/b/select: This token belongs to agent 'a', not 'b'. (wrong_agent)",
  );
  assert.equal(httpFailure(502, "<html>bad gateway", "GET", "http://p/api/v1/health"), "HTTP 502 from GET /api/v1/health: <html>bad gateway");
});

test("a baseUrl that is not an http address is refused at construction, in the Python client's words", () => {
  for (const baseUrl of ["127.0.0.1:8000", "procmem.example.com", "ftp://procmem.example.com"]) {
    assert.throws(
      () => new ProcmemClient({ baseUrl, agent: "a", token: "pm_x" }),
      { name: "TypeError", message: `baseUrl must be procmem's address, http://… or https://…; got ${JSON.stringify(baseUrl)}` },
    );
  }
});

test("a refused report says why, in the Python client's words", () => {
  const scope = { error: { code: "wrong_scope", message: "This is a read token: it may read the active set." } };
  assert.equal(refusalReason(scope), ": This is a read token: it may read the active set. (wrong_scope)");
  const report = { refused: [{ index: 0, session_id: null, errors: [{ field: "session_id", message: "is required" }] }] };
  assert.equal(refusalReason(report), ": 1 refused, the first item 0: session_id is required");
  assert.equal(refusalReason("<html>bad gateway"), ": <html>bad gateway");
  assert.equal(refusalReason({}), "");
});
