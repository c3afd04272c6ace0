import json
from dataclasses import fields, replace
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from library import embeddings
from library.models import Agent
from library.serving import active_set as serving
from library.serving.selection_eval import (
    LabelledSetError,
    as_json,
    as_table,
    below_baselines,
    check_labels,
    evaluate,
    load_export,
    load_queries,
)
from library.serving.skill_trigger import description_config, description_records
from procmem_client import embeddings as client_embeddings
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig

_FIELDS = {f.name: f.type for f in fields(SelectionConfig)}


def _config_override(text: str) -> tuple[str, object]:
    name, _, raw = text.partition("=")
    if name not in _FIELDS or not raw:
        raise CommandError(f"--set {text!r}: expected NAME=VALUE with NAME one of {', '.join(_FIELDS)}")
    kind = _FIELDS[name]
    try:
        if kind in ("bool", bool):
            if raw.lower() not in {"true", "false", "1", "0"}:
                raise ValueError(raw)
            return name, raw.lower() in {"true", "1"}
        if kind in ("int", int, "int | None"):  # quantised_from
            return name, int(raw)
        return name, float(raw)
    except ValueError:
        raise CommandError(f"--set {text!r}: {raw!r} is not a valid {kind}") from None


class Command(BaseCommand):
    help = (
        "Measures selection on labelled queries: P@1, MAP@10, MAP, nDCG@10, recall@2 and latency of the "
        "configured ranker, a semantic-only and a lexical-only baseline, over full rankings; and what the "
        "configured ranker injects under the cap (relevant, nothing, unrelated tasks given one)."
    )

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument(
            "--library",
            type=Path,
            help="An export (directory or file, as export_procedures writes): its ACTIVE versions",
        )
        source.add_argument("--agent", help="An agent in the database: its served active set")
        parser.add_argument("queries", type=Path, help='JSONL, one {"task", "intent"?, "relevant": {id: grade}} a line')
        parser.add_argument(
            "--cap",
            type=int,
            metavar="N",
            help="How many procedures may be injected (default: the agent's injection cap with --agent, else 2)",
        )
        parser.add_argument("--json", action="store_true", help="Print the results as JSON")
        parser.add_argument("--per-query", action="store_true", help="Include every query's metrics and top three")
        parser.add_argument(
            "--set",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="Override a SelectionConfig field (repeatable)",
        )
        parser.add_argument("--split", help='Only the queries of this split (their "split" field, e.g. heldout)')
        parser.add_argument(
            "--backend",
            help="The embedding backend (default: EMBEDDING_BACKEND): minilm, e5-small, use-multilingual, "
            "sentence-transformers:NAME_OR_PATH",
        )
        parser.add_argument(
            "--description-only",
            action="store_true",
            help="Rank each procedure by its skill description alone (as skills-aware agents choose a skill): "
            "no steps, no tool list (library/serving/skill_trigger.py)",
        )
        parser.add_argument(
            "--fail-below-baselines",
            action="store_true",
            help="Exit with an error when the configured ranker's MAP@10 is below either baseline's",
        )

    def handle(self, *args, queries: Path, library: Path | None, agent: str | None, **options):
        config = replace(SelectionConfig(), **dict(_config_override(item) for item in options["set"]))
        cap = options["cap"]
        if cap is not None and not 0 <= cap <= 20:
            raise CommandError(f"--cap {cap}: must be between 0 and 20")
        try:
            labelled = load_queries(queries)
            if options["split"]:
                labelled = [q for q in labelled if q.split == options["split"]]
                if not any(q.relevant for q in labelled):
                    raise LabelledSetError(
                        f"{queries}: no query with a relevant procedure in split {options['split']!r}"
                    )
            if library is not None:
                records = load_export(library)
                source = str(library)
            else:
                records, agent_cap = self._agent_set(agent)
                source = f"agent {agent}"
                cap = agent_cap if cap is None else cap
            check_labels(labelled, records)
        except LabelledSetError as exc:
            raise CommandError(str(exc)) from None
        if options["description_only"]:
            records = description_records(records)
            config = description_config(config)
            source += ", by skill description only"
        try:
            backend = client_embeddings.backend(options["backend"]) if options["backend"] else embeddings.backend()
        except ValueError as exc:
            raise CommandError(f"--backend: {exc}") from None
        index = Ranker(cache=EmbeddingCache(backend=backend), config=config).index(records)
        evaluation = evaluate(index, labelled, cap=2 if cap is None else cap)
        results = evaluation.methods
        failing = below_baselines(results)
        if options["json"]:
            data = as_json(evaluation, procedures=len(records), config=config, per_query=options["per_query"])
            self.stdout.write(json.dumps(data, indent=2))
        else:
            injection = evaluation.injection
            title = (
                f"{injection.related} labelled queries ({injection.unrelated} unrelated) from {queries} "
                f"over {len(records)} procedures ({source})"
            )
            self.stdout.write(as_table(evaluation, title=title))
            if options["per_query"]:
                for name, result in results.items():
                    self.stdout.write(f"\n{name}:")
                    for q in result.per_query:
                        self.stdout.write(
                            f"  {q['id']}: first relevant at {q['first_relevant_at']}, top {', '.join(q['top'])}"
                        )
                self.stdout.write("\ninjected:")
                for q in evaluation.injection.per_query:
                    marks = ", ".join(
                        f"{pid}{'' if hit else ' (not relevant)'}"
                        for pid, hit in zip(q["injected"], q["injectedRelevant"])
                    )
                    self.stdout.write(f"  {q['id']}{'' if q['related'] else ' (unrelated)'}: {marks or 'nothing'}")
        if failing and options["fail_below_baselines"]:
            raise CommandError(f"The configured ranker's MAP@10 is below the {' and the '.join(failing)} baseline")

    def _agent_set(self, name: str) -> tuple[list[dict], int]:
        """The agent's served procedures and its injection cap."""

        try:
            agent = Agent.objects.get(name=name)
        except Agent.DoesNotExist:
            raise CommandError(f"No agent named {name!r}") from None
        served = serving.active_set_for_agent(agent=agent, using="default")
        if not served.procedures:
            raise CommandError(f"Agent {name!r} serves no ACTIVE procedure")
        return [dict(p) for p in served.procedures], served.data["injectionCap"]
