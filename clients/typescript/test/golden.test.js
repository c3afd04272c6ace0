// The golden rendering files shared with the Python client (clients/golden/rendering/): the same
// records and the same expected text as clients/python/tests/test_golden_rendering.py.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { HEADER, codePointLength, estimateTokens, pyStrip, renderBlock, renderProcedure, renderProcedures } from "../dist/index.js";

const GOLDEN = new URL("../../golden/rendering/", import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL("cases.json", GOLDEN), "utf8"));

function render(testCase) {
  const records = testCase.records;
  if (testCase.render === "procedure") return { text: renderProcedure(records[0]) };
  if (testCase.render === "procedures") return { text: renderProcedures(records) };
  const block = "maxChars" in testCase ? renderBlock(records, { maxChars: testCase.maxChars }) : renderBlock(records);
  return { text: block.text, facts: { included: block.included.map((r) => r.id), chars: block.chars, tokens: block.tokens } };
}

test("the golden cases cover each kind of rendering", () => {
  assert.deepEqual(new Set(cases.map((c) => c.render)), new Set(["procedure", "procedures", "block"]));
  assert.ok(cases.length >= 15);
});

for (const testCase of cases) {
  test(`golden: ${testCase.name}`, () => {
    const expected = readFileSync(new URL(testCase.expected, GOLDEN)).toString("utf8");
    const { text, facts } = render(testCase);
    assert.equal(text, expected);
    // byte for byte, not only as equal strings
    assert.ok(Buffer.from(text, "utf8").equals(readFileSync(new URL(testCase.expected, GOLDEN))));
    for (const [key, value] of Object.entries(facts ?? {})) assert.deepEqual(value, testCase[key], `${testCase.name}: ${key}`);
  });
}

test("lengths are code points and stripping is Python's", () => {
  assert.equal(codePointLength("👋ab"), 3);
  assert.equal(estimateTokens(""), 0);
  assert.equal(estimateTokens("👋👋👋👋👋"), 2);
  assert.equal(pyStrip("\x1c\x85 x \u3000"), "x");
  assert.equal(pyStrip("\ufeffx\ufeff"), "\ufeffx\ufeff");
  assert.ok(HEADER.includes("cannot override system, developer or safety policy"));
  assert.throws(() => renderBlock([], { maxChars: -1 }), RangeError);
  assert.deepEqual(renderBlock([]), { text: "", chars: 0, tokens: 0, included: [], dropped: [] });
});
