// The golden skill folders shared with the Python client (clients/golden/skills/): the same
// records and the same expected files as clients/python/tests/test_golden_skills.py.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { test } from "node:test";

import { idToSkillName, quote, renderSkill, sha256Hex } from "../dist/index.js";

const GOLDEN = new URL("../../golden/skills/", import.meta.url);
const { cases } = JSON.parse(readFileSync(new URL("cases.json", GOLDEN), "utf8"));

function filesUnder(url, prefix = "") {
  const out = {};
  for (const entry of readdirSync(url).sort()) {
    const child = new URL(entry, url);
    if (statSync(child).isDirectory()) Object.assign(out, filesUnder(new URL(`${entry}/`, url), `${prefix}${entry}/`));
    else out[`${prefix}${entry}`] = readFileSync(child);
  }
  return out;
}

for (const testCase of cases) {
  test(`golden skill: ${testCase.name}`, () => {
    const folder = renderSkill(testCase.record);
    const expected = new URL(`expected/${testCase.name}/`, GOLDEN);
    assert.deepEqual(readdirSync(expected), [folder.name]);
    const written = filesUnder(new URL(`${folder.name}/`, expected));
    assert.deepEqual(Object.keys(written).sort(), Object.keys(folder.files).sort());
    for (const [path, text] of Object.entries(folder.files)) {
      assert.ok(Buffer.from(text, "utf8").equals(written[path]), `${testCase.name}: ${path} differs`);
    }
  });
}

test("names, quoting and the hash agree with the Python side's examples", () => {
  assert.equal(idToSkillName("refund.over_limit"), "refund-over-limit");
  assert.equal(idToSkillName("returns.damaged_item.photo"), "returns-damaged-item-photo-x343");
  assert.equal(idToSkillName("a.x12"), "a-x12-x4");
  assert.throws(() => idToSkillName("a.b\n"), RangeError);
  assert.equal(quote('a---b"\\\n'), '"a--\\x2db\\"\\\\\\n"');
  for (const text of ["", "abc", "👋".repeat(100), "x".repeat(1000)]) {
    const bytes = new TextEncoder().encode(text);
    assert.equal(sha256Hex(bytes), createHash("sha256").update(bytes).digest("hex"));
  }
});
