"""Builds the tau2-bench labelled selection set: a procedure library per domain and graded queries.

    python tests/library/data/tau2_selection/build.py [TAUBENCH_DIR]   # default: public_data/taubench (TAUBENCH_DIR overrides)

Input: tau2_airline_tasks.json and tau2_retail_tasks.json (tau2-bench, MIT). Output, next to this
file (committed; tests/library/test_selection_eval.py checks that they are what this script makes):

    library/tau2_<domain>/<procedure id>.json   one file per procedure, as `manage.py export_procedures`
                                                writes them (format procmem.procedure/1, one ACTIVE version)
    <domain>.jsonl                              one labelled query a line:
                                                {"id", "task", "relevant": {procedure id: grade}, "label"}

An intent is the set of write actions a task's gold action sequence performs (reads such as
get_order_details do not count); tasks without a write action (refusals, pure questions) have no
procedure to find and are left out. Each intent gets one procedure, built mechanically — nobody
wrote a sentence for it:
- appliesWhen: "The customer wants to <write action> and <write action>." with the tool names as
  words (cancel_pending_order → "cancel pending order");
- steps: the intent's most common gold tool sequence (consecutive repeats folded, each tool once,
  at most eight with every write kept), each step "<Tool as words> with <tool>({{arg}}, …).";
- requiredTools: the tools of those steps.
Queries are the tasks' `reason_for_call`. Grades: 2 for the procedure of the task's own intent,
1 for a procedure whose write actions are a proper subset of the task's (it does part of what the
task needs, nothing it does not). The intent is recorded as `label`, not `intent` (which
`eval_selection` would apply as a hard filter, as the agent API does): the ranker never sees it.

Each domain's file then lists the other domain's queries as unrelated (`"relevant": {}`, id
`unrelated:<their id>`): a retail request sent to the airline agent should be given no procedure,
which the injection measures of `eval_selection` count.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[3]
READ_PREFIXES = ("get_", "find_", "search_", "list_")
READ_TOOLS = {"calculate", "think"}
MAX_STEPS = 8
DOMAINS = ("airline", "retail")


def is_write(tool: str) -> bool:
    return not (tool.startswith(READ_PREFIXES) or tool in READ_TOOLS)


def as_words(tool: str) -> str:
    return tool.replace("_", " ")


def intent_name(writes: tuple[str, ...]) -> str:
    return "-and-".join(writes)


def procedure_id(domain: str, writes: tuple[str, ...]) -> str:
    return f"{domain}.{'__'.join(writes)}"


def task_calls(task: dict) -> list[tuple[str, tuple[str, ...]]]:
    actions = (task.get("evaluation_criteria") or {}).get("actions") or []
    calls: list[tuple[str, tuple[str, ...]]] = []
    for action in actions:
        call = (action["name"], tuple(action.get("arguments") or {}))
        if not calls or calls[-1][0] != call[0]:
            calls.append(call)
    return calls


def steps_for(sequences: list[list[tuple[str, tuple[str, ...]]]]) -> list[tuple[str, tuple[str, ...]]]:
    counted = Counter(tuple(s) for s in sequences)
    best = min(counted, key=lambda s: (-counted[s], len(s), s))
    once: dict[str, tuple[str, ...]] = {}
    for tool, args in best:
        once.setdefault(tool, args)
    calls = list(once.items())
    while len(calls) > MAX_STEPS:  # drop the last read first; writes are what the procedure is for
        reads = [i for i, (tool, _) in enumerate(calls) if not is_write(tool)]
        calls.pop(reads[-1])
    return calls


def build(taubench: Path) -> dict[str, tuple[list[dict], list[dict]]]:
    out: dict[str, tuple[list[dict], list[dict]]] = {}
    for domain in DOMAINS:
        tasks = json.loads((taubench / f"tau2_{domain}_tasks.json").read_text(encoding="utf-8"))
        by_intent: dict[tuple[str, ...], list[dict]] = defaultdict(list)
        for task in tasks:
            writes = tuple(sorted({tool for tool, _ in task_calls(task) if is_write(tool)}))
            if writes:
                by_intent[writes].append(task)
        procedures = []
        for writes in sorted(by_intent):
            calls = steps_for([task_calls(t) for t in by_intent[writes]])
            wanted = " and ".join(as_words(w) for w in writes)
            procedures.append(
                {
                    "format": "procmem.procedure/1",
                    "id": procedure_id(domain, writes),
                    "agent": f"tau2_{domain}",
                    "intent": intent_name(writes),
                    "versions": [
                        {
                            "version": 1,
                            "status": "ACTIVE",
                            "appliesWhen": f"The customer wants to {wanted}.",
                            "steps": [
                                f"{as_words(tool).capitalize()} with {tool}({', '.join('{{' + a + '}}' for a in args)})."
                                for tool, args in calls
                            ],
                            "requiredTools": [tool for tool, _ in calls],
                            "forbiddenActions": [],
                            "evidence": {"tau2Tasks": sorted((t["id"] for t in by_intent[writes]), key=int)},
                            "approvedBy": "tau2-labelled-set",
                            "approvedAt": "2026-11-30T00:00:00Z",
                        }
                    ],
                }
            )
        queries = []
        for task in sorted(tasks, key=lambda t: int(t["id"])):
            writes = tuple(sorted({tool for tool, _ in task_calls(task) if is_write(tool)}))
            if not writes:
                continue
            relevant = {procedure_id(domain, writes): 2}
            for other in by_intent:
                if other != writes and set(other) < set(writes):
                    relevant[procedure_id(domain, other)] = 1
            queries.append(
                {
                    "id": f"{domain}/{task['id']}",
                    "task": " ".join(task["user_scenario"]["instructions"]["reason_for_call"].split()),
                    "relevant": dict(sorted(relevant.items(), key=lambda item: (-item[1], item[0]))),
                    "label": intent_name(writes),
                }
            )
        out[domain] = (procedures, queries)
    for domain, (_, queries) in out.items():
        for other in DOMAINS:
            if other != domain:
                queries.extend(
                    {"id": f"unrelated:{q['id']}", "task": q["task"], "relevant": {}, "label": f"unrelated ({other})"}
                    for q in out[other][1]
                    if q["relevant"]
                )
    return out


def write(built: dict[str, tuple[list[dict], list[dict]]], target: Path = HERE) -> None:
    for domain, (procedures, queries) in built.items():
        directory = target / "library" / f"tau2_{domain}"
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("*.json"):
            old.unlink()
        for procedure in procedures:
            (directory / f"{procedure['id']}.json").write_text(
                json.dumps(procedure, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
        (target / f"{domain}.jsonl").write_text(
            "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in queries), encoding="utf-8"
        )


def _default_source() -> Path:
    """The tau2 task files as every test finds them (public_data/, a variable overrides)."""
    sys.path.insert(0, str(REPO))
    from public_data import data_dir

    return data_dir("tau2")


if __name__ == "__main__":
    source = Path(sys.argv[1]) if len(sys.argv) > 1 else _default_source()
    result = build(source)
    write(result)
    for domain, (procedures, queries) in result.items():
        print(f"{domain}: {len(procedures)} procedures, {len(queries)} queries")
