// Recalls for each prompt of a JSON file (argument 1) with the client against a live server and prints
// the pointers as JSON: tests/library/test_task_files_clients.py compares them with the Python client's
// (local and server ranking). Environment: PROCMEM_URL, PROCMEM_AGENT, PROCMEM_TOKEN.
// Each case: {"prompt": "...", "taskFiles"?: boolean}.
import { readFileSync } from "node:fs";

import { ProcmemClient } from "../dist/index.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const client = new ProcmemClient({
  baseUrl: process.env.PROCMEM_URL,
  agent: process.env.PROCMEM_AGENT,
  token: process.env.PROCMEM_TOKEN,
  timeout: 600,
});
const out = [];
for (const c of cases) {
  const options = { prompt: c.prompt };
  if ("taskFiles" in c) options.taskFiles = c.taskFiles;
  out.push({ pointers: await client.recall(options), lastError: client.lastError ?? null });
}
process.stdout.write(JSON.stringify(out));
