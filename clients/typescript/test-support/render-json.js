// Renders the cases of a JSON file (argument 1) and prints the results as JSON: the Python test
// that fuzzes both renderers with Hypothesis (tests/library/test_typescript_client.py) runs it once
// for all its examples. Each case: {"render": "procedure"|"block", "records": [...], "maxChars"?: n|null}.
import { readFileSync } from "node:fs";

import { renderBlock, renderProcedure } from "../dist/index.js";

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = cases.map((c) => {
  if (c.render === "procedure") return { text: renderProcedure(c.records[0]) };
  const block = "maxChars" in c ? renderBlock(c.records, { maxChars: c.maxChars }) : renderBlock(c.records);
  return { text: block.text, chars: block.chars, tokens: block.tokens, included: block.included.map((r) => r.id) };
});
process.stdout.write(JSON.stringify(out));
