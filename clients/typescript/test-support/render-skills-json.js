// Renders the records of a JSON file (argument 1) as skill folders and prints them as JSON: the
// Python test that fuzzes both skill renderers with Hypothesis (tests/library/test_skills_serving.py)
// runs it once per batch of examples.
import { readFileSync } from "node:fs";

import { renderSkill } from "../dist/index.js";

const records = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(JSON.stringify(records.map((record) => renderSkill(record))));
