// Validates skill folders with the Agent Skills reference validator (npm skills-ref, its own
// `validate`, the function behind `skills-ref validate DIR`) in one node process, and prints
// {"<dir>": [errors...]} as JSON; tests/skills_support.py runs it.
import { validate } from "skills-ref";

const results = {};
for (const dir of process.argv.slice(2)) results[dir] = await validate(dir);
process.stdout.write(JSON.stringify(results));
