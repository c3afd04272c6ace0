"""Does the skill trigger on tau2? Each procedure of a domain's library as the skill procmem serves
(its description: procmem_client.skill_rendering.describe), ranked by description alone against the
domain's other skills (library/serving/skill_trigger.py) for the tasks of its own intent (grade 2), and
what the whole record (appliesWhen and steps) does on the same tasks, for comparison.

    DEBUG=1 python tests/library/data/tau2_selection/trigger.py

Two judgements: every task over the committed library (its descriptions were written from intent
names and gold tool sequences, never from the task texts), and held out by task id — a library
built by build.py from the even-id tasks only, judged on the odd-id tasks it never saw.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "procmem_site.settings")


def libraries(split: str) -> dict[str, tuple[list[dict], list[dict]]]:
    """{domain: (records with intent, labelled queries)} for "all" or "held-out"."""
    sys.path.insert(0, str(HERE))
    import build

    source = build._default_source()
    if split == "all":
        built = build.build(source)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            for domain in build.DOMAINS:
                tasks = json.loads((source / f"tau2_{domain}_tasks.json").read_text(encoding="utf-8"))
                even = [t for t in tasks if int(t["id"]) % 2 == 0]
                (Path(tmp) / f"tau2_{domain}_tasks.json").write_text(json.dumps(even), encoding="utf-8")
            built = build.build(Path(tmp))
        full = build.build(source)
        built = {d: (built[d][0], [q for q in full[d][1] if int(q["id"].rsplit("/", 1)[1]) % 2 == 1]) for d in built}
    out = {}
    for domain, (procedures, queries) in built.items():
        records = [{**p["versions"][0], "id": p["id"], "intent": p["intent"]} for p in procedures]
        out[domain] = (records, [q for q in queries if q["relevant"]])
    return out


def main() -> None:
    import django

    django.setup()
    from library.serving.skill_trigger import TOP, description_config, measure
    from procmem_client.ranking import Ranker

    description_ranker = Ranker(config=description_config())
    full_ranker = Ranker()
    print(
        "| split | domain | skills measured | tasks | description first | description top 3 | whole record first | whole record top 3 | say when |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for split in ("all", "held-out"):
        for domain, (records, queries) in libraries(split).items():
            totals = {"tasks": 0, "first": 0, "top3": 0, "whole_first": 0, "whole_top3": 0, "when": 0, "skills": 0}
            index = full_ranker.index(records)
            for record in records:
                own = [q for q in queries if q["relevant"].get(record["id"]) == 2]
                if not own:
                    continue
                result = measure(
                    record=record, others=records, tasks=[(q["task"], "tau2") for q in own], ranker=description_ranker
                )
                totals["skills"] += 1
                totals["tasks"] += result.tasks
                totals["first"] += result.first
                totals["top3"] += result.top3
                totals["when"] += result.says_when
                for q in own:
                    ranked = [e["id"] for e in index.rank(task=q["task"], cap=0)]
                    position = ranked.index(record["id"]) + 1
                    totals["whole_first"] += position == 1
                    totals["whole_top3"] += position <= TOP
            n = totals["tasks"]
            print(
                f"| {split} | {domain} | {totals['skills']} of {len(records)} | {n} | {totals['first'] / n:.3f} | {totals['top3'] / n:.3f} "
                f"| {totals['whole_first'] / n:.3f} | {totals['whole_top3'] / n:.3f} | {totals['when']}/{totals['skills']} |"
            )


if __name__ == "__main__":
    main()
