"""Ranking: which procedures (at most the agent's cap, default two) go into the instruction for a
task. Pure Python and numpy; the semantic signals' model (sentence-transformers) only with the
`[embeddings]` extra, loaded on first use. The server ranks with this same module (library/serving/active_set.py
keeps the server-side index and the stored vectors), so there is one ranker.

Method (docs/selection.md):

1. Hard filter: when an intent is given, only records of that intent are candidates.
2. Four retrievers score every candidate against the task text, each on a fixed 0..1 scale:
   - semantic: cosine similarity between the task and the record's `appliesWhen` (the bundled
     all-MiniLM-L6-v2; each distinct text embedded once), negative values as 0;
   - lexical: IDF-weighted overlap — the share of the `appliesWhen` words' IDF mass (IDF over the
     set) that the task contains, after lower-casing, stop-word removal and a light stemmer.
     Adjacent words also meet their compound: "desk lamp" in the task matches "desklamp", and
     "garbagecan" in the task matches "garbage can". A task in another language than the library's
     (terms.is_english) with a backend that has a multilingual word model (the routed default)
     is matched across languages instead: each appliesWhen word counts with its IDF by how close
     the task's nearest word (or Chinese/Japanese character pair) comes to it in that model,
     from `cross_lingual_floor` (nothing) to cosine 1 (all), so "stornieren" meets "cancel";
   - exact: identifiers of the record (its id, its identifier-shaped tool names such as
     `cancel_reservation` or `lookupOrder`, paths in its text) found among the task's tokens,
     compared without case; n matches score n / (n + 1). A plain word is never an identifier of a
     record, so a tool called `search` or `calculate` does not fire on the verb. A coding
     procedure's targets and commands count too (procmem_client/coding.py): the paths, modules,
     test labels and programs of its verify command, steps and pre/postconditions, each path also
     as its role placeholder, against the same terms of the task and its tool calls;
   - step: the best single-step similarity, cosine between the task and each of the record's steps
     (each distinct step embedded once), computed for the `step_shortlist` best candidates by the
     other three signals (all of them in a set no larger than that);
   - body: the mean of the task's cosines with the record's appliesWhen and each of its steps (the
     whole procedure, from the vectors the two signals above use: nothing more is embedded or
     stored), computed with the step signal. It orders only; a task in another language than the
     library's gets no lexical help, and the body is what lifts it (docs/selection.md).
   - area (coding procedures only, 0 for every other record): the IDF mass of the area words — the
     directory and file names of the paths a coding procedure names — that the task's identifiers
     share with it (coding.AreaIndex): an issue about ``autodoc_typehints`` finds the family whose
     files are under ``sphinx/ext/autodoc/``. It adds `area_weight` × s / (s + 1) to the total and,
     from `area_floor` on, makes the procedure eligible. A task that names the repository of some
     of the set's coding procedures gets no area score from the other repositories' ones.
3. Order: the weighted sum of the five normalised scores (weights in `SelectionConfig`, chosen on
   the tau2-bench labelled set), where an appliesWhen of several clauses enters with its weakest
   clause's semantic and lexical scores, plus the amount term (condition_scores.py); ties by
   semantic score, then id, then version — deterministic.
   Near-ties go to priority: walking down that order, each candidate opens a group with the ones
   whose total is within `priority_epsilon` (default `PRIORITY_EPSILON`) of its own; inside a group
   a higher `priority` (a record field, 0 when absent) comes first, and equal priorities keep the
   order above. With every priority equal the order is exactly the one above.
4. Eligibility decides only what may be injected, never the order: a candidate is eligible when its
   semantic score reaches `semantic_floor`, or an identifier of it is in the task, or its lexical
   score reaches `lexical_floor` and its semantic score the lower `lexical_needs_semantic` (two
   sentences can share "cancel" and "order" and mean different things). So an unrelated task gets
   nothing. The first `cap` eligible candidates in ranking order are injected.
5. Producers: when an injected coding procedure consumes an artefact (a role placeholder in its
   preconditions) that another candidate produces (in its postconditions), and the cap has room,
   the best-ranked such producer is injected too, eligible or not (`pulledIn` says which and why).
   Hubs of the producer → consumer graph (linked to more than 15 % of the others) pull in nothing
   and are never pulled in.

Usage:

    from procmem_client.ranking import Ranker
    ranker = Ranker()                            # the bundled model, loaded on first use
    index = ranker.index(records)                # records as GET /procedures returns them
    result = index.select(task="I want to cancel my reservation", intent=None, cap=2, k=5)
    result["injected"]                           # the records to render into the instruction
    index.rank(task="…")                         # every candidate in order, with scores and reasons

An `Index` is immutable; build one per active set (the client and the server key it by the set's
ETag). Building embeds only texts that the process has not embedded before.

The parts it uses live beside it: terms.py (words, compounds, identifiers), embedding_cache.py (a
vector per distinct text), selection.py (SelectionConfig and the result types), cross_lingual.py
(the appliesWhen words across languages, a base of Index), condition_scores.py (clauses and
amounts) and ranking_explanation.py (the reasons, ranks and diagnostics written for people, and
score_text); every name of `__all__` is importable from here, as before.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from . import coding, semantic_read
from .condition_scores import Conditions
from .cross_lingual import CrossLingualWords
from .embedding_cache import Embedder, EmbeddingCache, default_cache
from .ranking_explanation import eligibility_reasons, explain, ranked_diagnostics, score_text
from .selection import (
    MAX_K,
    PRIORITY_EPSILON,
    RETRIEVERS,
    Explained,
    PulledIn,
    RankedCandidate,
    Selection,
    SelectionConfig,
    Signals,
)
from .terms import (
    compounds,
    identifiers,
    is_identifier,
    record_identifiers,
    stem,
    tokens,
    words,
)


class Index(CrossLingualWords):
    """The prepared form of one set of procedure records: the appliesWhen and step embedding
    matrices, the lexical inverted index with IDF, the identifier table, and the appliesWhen words
    across languages (cross_lingual.CrossLingualWords). Immutable."""

    def __init__(self, records: Sequence[Mapping[str, Any]], *, cache: EmbeddingCache, config: SelectionConfig) -> None:
        self.records = list(records)
        self.config = config
        self._cache = cache
        n = len(self.records)
        tail, third = _routed_widths(cache)
        # a routed backend's third model (SelectionConfig.third_model_weight): the last `third_columns`
        # of every vector; its appliesWhen columns kept apart (third_block), read only for its own
        # signal, and not kept for the steps
        self.third_columns = third
        self.matrix_blocks = cache.matrix_blocks([r["appliesWhen"] for r in self.records], tail, third)
        third_block = self.matrix_blocks.pop() if third and n else None
        self.third_block: np.ndarray | None = third_block if config.third_model_weight else None
        # int8 copies for select's quantised read of a large set (semantic_read.py), with SimSIMD
        wanted = config.quantised_from is not None and n and n >= config.quantised_from
        simsimd = semantic_read.simsimd_module() if wanted else None
        self.quantised = semantic_read.QuantisedBlocks(self.matrix_blocks, simsimd) if simsimd else None

        # steps: each distinct step text once; record i's steps are step_rows[step_ptr[i]:step_ptr[i+1]]
        self.step_blocks = [np.zeros((0, 0), np.float32)]
        self.distinct_steps = 0
        self.step_ptr = np.zeros(n + 1, dtype=np.int64)
        self.step_rows = np.zeros(0, dtype=np.int64)
        if config.use_steps and n:
            row_of: dict[str, int] = {}
            rows: list[int] = []
            for i, record in enumerate(self.records):
                for step in record.get("steps") or []:
                    rows.append(row_of.setdefault(step, len(row_of)))
                self.step_ptr[i + 1] = len(rows)
            self.step_rows = np.asarray(rows, dtype=np.int64)
            if row_of:
                self.step_blocks = cache.matrix_blocks(list(row_of), tail, third, with_third=False)
                self.distinct_steps = len(row_of)

        # lexical: IDF over the set's appliesWhen texts; documents as sets of stems
        doc_terms = [set(words(r["appliesWhen"])) for r in self.records]
        df: dict[str, int] = defaultdict(int)
        for terms in doc_terms:
            for term in terms:
                df[term] += 1
        self.idf = {term: math.log(1 + n / count) for term, count in df.items()}
        postings: dict[str, list[int]] = defaultdict(list)
        for i, terms in enumerate(doc_terms):
            for term in terms:
                postings[term].append(i)
        self.postings = {term: np.asarray(ids, dtype=np.int64) for term, ids in postings.items()}
        self.doc_weight = np.asarray(
            [sum(self.idf[t] for t in terms) for terms in doc_terms] or [0.0], dtype=np.float64
        )[:n]
        self._cross_lingual_index(cache, config)
        self.conditions = Conditions(
            self.records,
            cache=cache,
            clause_match=config.clause_match,
            clause_lexical=config.clause_lexical,
            amount_weight=config.amount_weight,
            idf=self.idf,
            word_row_of=self.word_row_of,
            word_row_idf=None if self.word_matrix is None else self.word_row_idf,
            third_width=third,
            third_weight=config.third_model_weight,
        )
        # a compound the task may write as one word ("desklamp") → the documents with the two words
        # adjacent, per pair of stems they contribute
        split: dict[str, dict[tuple[str, ...], list[int]]] = defaultdict(lambda: defaultdict(list))
        for i, record in enumerate(self.records):
            for joined, parts in set(compounds(record["appliesWhen"])):
                if parts and joined not in doc_terms[i]:
                    split[joined][parts].append(i)
        self.split_compounds = {
            joined: {parts: np.asarray(ids, dtype=np.int64) for parts, ids in by_parts.items()}
            for joined, by_parts in split.items()
        }

        exact: dict[str, list[int]] = defaultdict(list)
        for i, record in enumerate(self.records):
            for name in record_identifiers(record) | coding.record_terms(record):
                exact[name].append(i)
        self.exact = {name: np.asarray(ids, dtype=np.int64) for name, ids in exact.items()}
        self.has_coding = any(coding.is_coding(r) for r in self.records)
        self.area_index = coding.AreaIndex(self.records) if self.has_coding else None

        # producer → consumer links between coding procedures (hubs cut): consumer → its producers
        self.producers: dict[int, list[tuple[int, tuple[str, ...]]]] = defaultdict(list)
        if self.has_coding:
            graph = coding.build_graph(
                [
                    coding.node_for(str(i), r.get("preconditions") or [], r.get("postconditions") or [])
                    for i, r in enumerate(self.records)
                    if coding.is_coding(r)
                ]
            )
            for edge in graph.edges:
                self.producers[int(edge.consumer)].append((int(edge.producer), edge.artefacts))
        self.producer_rows = np.asarray(
            sorted({p for links in self.producers.values() for p, _ in links}), dtype=np.int64
        )

        by_intent: dict[str | None, list[int]] = defaultdict(list)
        for i, record in enumerate(self.records):
            by_intent[record.get("intent")].append(i)
        self.by_intent = {intent: np.asarray(ids, dtype=np.int64) for intent, ids in by_intent.items()}
        # deterministic tie order: id, then version (position in this order)
        order = sorted(range(n), key=lambda i: (str(self.records[i]["id"]), int(self.records[i].get("version") or 0)))
        self.tie_rank = np.empty(n, dtype=np.int64)
        self.tie_rank[order] = np.arange(n)
        self.priority = np.asarray([_priority(r) for r in self.records], dtype=np.int64)
        self.has_priorities = bool(n) and bool((self.priority != self.priority[0]).any())

    def clause_scores(self, candidates: np.ndarray, semantic: np.ndarray, vector: np.ndarray) -> np.ndarray | None:
        """The semantic score the order uses: a compound appliesWhen's weakest clause's
        (condition_scores.Conditions.semantic); None without compound records."""
        return self.conditions.semantic(candidates, semantic, vector, self._cache.calibrate)

    def third_scores(
        self, candidates: np.ndarray, third_vector: np.ndarray | None, positions: np.ndarray | None = None
    ) -> np.ndarray | None:
        """A routed backend's third model's cosine with the task, calibrated: a compound appliesWhen's
        weakest clause's, the others' whole text's (condition_scores.Conditions.third), for the
        candidates at `positions` (all when None; NaN, not computed, for the others: as the step
        signal, it is computed for the step shortlist); None without a third model (or with its
        weight 0). A row's product is the same to the bit whether every row or some are read."""
        if self.third_block is None or third_vector is None:
            return None
        scores = np.full(candidates.size, np.nan, dtype=np.float64)
        if positions is None:
            positions = np.arange(candidates.size)
        rows = candidates[positions]
        if rows.size == len(self):
            products = semantic_read.whole_products(self.third_block, third_vector)[rows]
        else:
            products = semantic_read.row_products(self.third_block, third_vector, rows)
        calibrate = self._cache.third_calibrate
        scores[positions] = self.conditions.third(rows, np.asarray(calibrate(products)), third_vector, calibrate)
        return scores

    def embed_query(self, task: str) -> np.ndarray:
        """The task's vector, the third model's part only where its signal is weighed (third_block)."""
        return self._cache.embed_query(task, third=self.third_block is not None)

    def query_parts(self, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """A task's vector split: the part the semantic, step and clause signals read (the
        language models' columns), and a routed backend's third model's part (None without one).
        A vector of the language columns alone is returned as it is."""
        third = self.third_columns
        if not third or vector.shape[0] != sum(block.shape[1] for block in self.matrix_blocks) + third:
            return vector, None
        return vector[:-third], (vector[-third:] if self.third_block is not None else None)

    def clause_lexical_scores(self, task: str, candidates: np.ndarray, lexical: np.ndarray) -> np.ndarray | None:
        """The lexical score the order uses: a compound appliesWhen's weakest clause's, across
        languages for a task not in English (condition_scores.Conditions.lexical)."""

        def weighted() -> np.ndarray | None:
            credit = self.word_credit(task)
            return None if credit is None else credit * self.word_row_idf

        return self.conditions.lexical(candidates, lexical, lambda: self.lexical_terms(task), weighted)

    def amount_scores(self, task: str, candidates: np.ndarray) -> np.ndarray | None:
        """1 where a task amount falls in a money range the appliesWhen names (Conditions.amounts)."""
        return self.conditions.amounts(task, candidates)

    def __len__(self) -> int:
        return len(self.records)

    def nbytes(self) -> int:
        """Memory of the stacked embedding matrices and their int8 copies (the per-text cache holds
        the same vectors again)."""
        quantised = self.quantised.nbytes() if self.quantised is not None else 0
        third = self.third_block.nbytes if self.third_block is not None else 0
        return int(sum(block.nbytes for block in self.matrix_blocks + self.step_blocks)) + quantised + third

    # -- the embedding matrices, kept as column blocks (_routed_tail): a routed backend's task
    # vector is zero in one model's columns, and a block it does not fill is not read

    @property
    def matrix(self) -> np.ndarray:
        """The appliesWhen vectors, one row per record (a copy joining the blocks when split)."""
        return _joined(self.matrix_blocks)

    @property
    def step_matrix(self) -> np.ndarray:
        """The distinct steps' vectors (a copy joining the blocks when split)."""
        return _joined(self.step_blocks)

    @staticmethod
    def _products(blocks: list[np.ndarray], vector: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """`matrix @ vector` (only `rows` of it when given) for a matrix kept as column blocks
        (semantic_read.products: a block the vector does not fill is not read)."""
        return semantic_read.products(blocks, vector, rows)

    # -- retrievers: each returns a raw score per record (numpy arrays of length n)

    def semantic_scores(self, task: str, query_vector: np.ndarray | None = None) -> np.ndarray:
        if not len(self):
            return np.zeros(0, dtype=np.float32)
        vector = query_vector if query_vector is not None else self.embed_query(task)
        vector, _ = self.query_parts(vector)
        return self._cache.calibrate(self._products(self.matrix_blocks, vector))

    @staticmethod
    def lexical_terms(task: str) -> set[str]:
        """A task's terms for the lexical score: its stems, and adjacent words joined ("desk lamp"
        also reads as "desklamp")."""
        return set(words(task)) | {joined for joined, _ in compounds(task)}

    def lexical_scores(self, task: str) -> np.ndarray:
        scores = np.zeros(len(self), dtype=np.float64)
        terms = self.lexical_terms(task)
        for term in terms:
            ids = self.postings.get(term)
            if ids is not None:
                scores[ids] += self.idf[term]
            for parts, split_ids in self.split_compounds.get(term, {}).items():
                # "desklamp" in the task, "desk lamp" in the text: credit the parts the task lacks
                scores[split_ids] += sum(self.idf.get(part, 0.0) for part in parts if part not in terms)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.doc_weight > 0, np.minimum(scores / np.maximum(self.doc_weight, 1e-12), 1.0), 0.0)

    def task_terms(self, task: str) -> set[str]:
        """What the exact retriever looks up for a task: its tokens, and in a set with coding
        procedures also the coding terms of the task (paths as role placeholders, programs)."""
        return tokens(task) | coding.query_terms(task) if self.has_coding else tokens(task)

    def exact_scores(self, task: str) -> np.ndarray:
        scores = np.zeros(len(self), dtype=np.int64)
        for token in self.task_terms(task):
            ids = self.exact.get(token)
            if ids is not None:
                scores[ids] += 1
        return scores

    def step_scores(self, positions: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """The best single-step cosine for the records at `positions` (0 for a record without steps)."""
        return self.step_and_body_scores(positions, vector, None)[0]

    def step_and_body_scores(
        self, positions: np.ndarray, vector: np.ndarray, semantic: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """For the records at `positions`: the best single-step cosine (0 without steps), and the
        body score, the mean of `semantic` (their appliesWhen's calibrated cosines) and their steps'
        calibrated cosines (`semantic` alone without steps; zeros when `semantic` is None)."""
        body = np.zeros(positions.size, dtype=np.float64) if semantic is None else semantic.astype(np.float64)
        if positions.size == 0 or self.distinct_steps == 0:
            return np.zeros(positions.size, dtype=np.float32), body
        starts, ends = self.step_ptr[positions], self.step_ptr[positions + 1]
        lengths = ends - starts
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(positions.size, dtype=np.float32), body
        # the flat list of step rows of these records, in record order
        offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
        rows = self.step_rows[np.arange(total) + offsets]
        if total >= self.distinct_steps:
            similarities = self._products(self.step_blocks, vector)[rows]
        else:
            similarities = self._products(self.step_blocks, vector, rows)
        best = np.zeros(positions.size, dtype=np.float32)
        has = lengths > 0
        segment_starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))[has]
        best[has] = np.maximum.reduceat(similarities, segment_starts)
        if semantic is not None:  # calibration is affine: the mean of calibrated cosines
            sums = np.add.reduceat(np.asarray(self._cache.calibrate(similarities), dtype=np.float64), segment_starts)
            body[has] = (body[has] + sums) / (lengths[has] + 1)
        return self._cache.calibrate(best), body

    # -- ranking

    def candidates(self, task: str, intent: str | None) -> np.ndarray:
        """The positions a task is ranked over: the intent's records, or every record."""
        if not isinstance(task, str) or not task.strip():
            raise ValueError("task must be a non-empty string")
        if intent:
            return self.by_intent.get(intent, np.zeros(0, dtype=np.int64))
        return np.arange(len(self), dtype=np.int64)

    def signals(self, *, task: str, intent: str | None = None, query_vector: np.ndarray | None = None) -> Signals:
        """Raw scores of every candidate (the intent filter applied). The step signal, and a routed
        backend's third model's, are computed for the `step_shortlist` best candidates by the other
        three (NaN for the rest)."""
        candidates = self.candidates(task, intent)
        if candidates.size == 0:
            empty = np.zeros(0, dtype=np.float64)
            return Signals(candidates, empty, empty, empty, empty, empty)
        vector, third_vector = self.query_parts(query_vector if query_vector is not None else self.embed_query(task))
        # the semantic product (a read of the whole matrix) beside the lexical and exact signals
        product = semantic_read.Beside(
            lambda: self.semantic_scores(task, vector), apart=len(self) >= semantic_read.BESIDE_FROM
        )
        across = self.cross_lingual_scores(task)
        lexical = (self.lexical_scores(task) if across is None else across)[candidates]
        exact = self.exact_scores(task)[candidates]
        semantic = product.result()[candidates]
        step = np.full(candidates.size, np.nan, dtype=np.float64)
        body = np.full(candidates.size, np.nan, dtype=np.float64)
        partial = None
        chosen = None  # the step shortlist; the third model's signal is computed for it too
        if self.config.use_steps and self.distinct_steps:
            limit = self.config.step_shortlist
            if candidates.size <= limit:
                chosen = np.arange(candidates.size)
            else:
                nothing = np.zeros(candidates.size)
                partial = self._weighted(
                    semantic, lexical, exact, nothing, nothing, {**self.config.weights(), "step": 0.0, "body": 0.0}
                )
                chosen = self.shortlist(partial, limit)
            step[chosen], body[chosen] = self.step_and_body_scores(candidates[chosen], vector, semantic[chosen])
        clause = self.clause_scores(candidates, semantic, vector)
        amount = self.amount_scores(task, candidates)
        clause_lexical = self.clause_lexical_scores(task, candidates, lexical)
        return Signals(
            candidates,
            semantic,
            lexical,
            exact,
            step,
            body,
            area=self.area_scores(task, candidates),
            clause=clause,
            amount=amount,
            clause_lexical=clause_lexical,
            third=self.third_scores(candidates, third_vector, chosen),
            partial=partial,
        )

    @staticmethod
    def shortlist(values: np.ndarray, limit: int) -> np.ndarray:
        """The positions of the `limit` largest values, ascending; of values tied with the last one,
        the first positions (so that the float32 and the quantised reads shortlist the same records)."""
        if values.size <= limit:
            return np.arange(values.size)
        last = np.partition(values, values.size - limit)[values.size - limit]
        above = np.flatnonzero(values > last)
        return np.sort(np.concatenate((above, np.flatnonzero(values == last)[: limit - above.size])))

    def area_scores(self, task: str, candidates: np.ndarray) -> np.ndarray | None:
        """The candidates' coding area scores (coding.AreaIndex), None in a set without coding procedures."""
        if self.area_index is None:
            return None
        scores = np.zeros(len(self), dtype=np.float64)
        for position, score in self.area_index.scores(task).items():
            scores[position] = score
        return scores[candidates]

    @staticmethod
    def normalise(
        semantic: np.ndarray, lexical: np.ndarray, exact: np.ndarray, step: np.ndarray, body: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Fixed scales (the same for every task, so a score means the same thing across tasks):
        cosines clipped to 0..1, lexical coverage as it is (0..1), n identifier matches n/(n+1)."""
        raw = {"semantic": semantic, "lexical": lexical, "exact": exact, "step": step, "body": body}
        return {name: Index._normalised(name, values) for name, values in raw.items()}

    @staticmethod
    def _normalised(name: str, values: np.ndarray) -> np.ndarray:
        """One signal on its fixed scale (`normalise`)."""
        if name == "lexical":
            return values
        if name == "exact":
            exact = values.astype(np.float64)
            return exact / (exact + 1.0)
        if name in ("step", "body"):
            return np.clip(np.nan_to_num(values, nan=0.0), 0.0, 1.0)
        return np.clip(values, 0.0, 1.0)

    def _weighted(self, semantic, lexical, exact, step, body, weights: Mapping[str, float]) -> np.ndarray:
        """The weighted sum of the normalised signals; only those with a weight are normalised (at
        100,000 candidates each is a pass over all of them, and the step shortlist's partial sum
        weighs neither step nor body)."""
        raw = {"semantic": semantic, "lexical": lexical, "exact": exact, "step": step, "body": body}
        total = np.zeros(semantic.size, dtype=np.float64)
        for name, weight in weights.items():
            if weight:
                total += weight * self._normalised(name, raw[name])
        return total

    def _continued(self, signals: Signals, lexical: np.ndarray, weights: Mapping[str, float]) -> np.ndarray:
        """`_weighted` of every signal, continued from the step shortlist's partial sum of the
        semantic, lexical and exact scores (`signals.partial`, the same additions in the same
        order): step and body are added where they were computed, as elsewhere they add an exact 0
        to a sum of scores that are not negative. The same values to the bit; at 100,000 candidates
        a few passes fewer. Falls back to `_weighted` when the order's lexical score is not the
        shortlist's (a compound appliesWhen's weakest clause)."""
        if lexical is not signals.lexical:
            return self._weighted(signals.semantic, lexical, signals.exact, signals.step, signals.body, weights)
        assert signals.partial is not None
        total = signals.partial.copy()
        for name, values in (("step", signals.step), ("body", signals.body)):
            if weights[name]:
                at = np.flatnonzero(~np.isnan(values))
                total[at] += weights[name] * self._normalised(name, values[at])
        return total

    def eligibility(self, signals: Signals) -> np.ndarray:
        config = self.config
        eligible = (
            (signals.semantic >= config.semantic_floor)
            | ((signals.exact >= config.exact_floor) & (signals.exact > 0))
            | (
                (signals.lexical >= config.lexical_floor)
                & (signals.lexical > 0)
                & (signals.semantic >= config.lexical_needs_semantic)
            )
        )
        if signals.area is not None:
            eligible |= (signals.area >= config.area_floor) & (signals.area > 0)
        return eligible

    def totals(self, signals: Signals, config: SelectionConfig | None = None) -> np.ndarray:
        """The ranking score of every candidate: the weighted sum of the normalised signals (the
        semantic one as the weakest clause's, `clause`), the amount term, and for coding procedures
        their area term (`area_total`)."""
        config = config or self.config
        semantic = signals.semantic if signals.clause is None else signals.clause
        lexical = signals.lexical if signals.clause_lexical is None else signals.clause_lexical
        if signals.partial is not None and config is self.config and semantic is signals.semantic:
            total = self._continued(signals, lexical, config.weights())
        else:
            total = self._weighted(semantic, lexical, signals.exact, signals.step, signals.body, config.weights())
        if signals.amount is not None and config.amount_weight:
            total = total + config.amount_weight * signals.amount
        if signals.third is not None and config.third_model_weight:
            third = np.clip(np.nan_to_num(signals.third, nan=0.0), 0.0, 1.0)  # not computed: 0, as the step signal
            total = total + config.third_model_weight * third
        if signals.area is not None and config.area_weight:
            total = total + self.area_total(signals.area, config)
        return total

    @staticmethod
    def area_total(area: np.ndarray, config: SelectionConfig) -> np.ndarray:
        """What the coding area score s adds to a total: area_weight × s / (s + 1) (a fixed scale, as
        the exact retriever's n / (n + 1))."""
        return config.area_weight * area / (area + 1.0)

    def order(
        self, signals: Signals, totals: np.ndarray, positions: np.ndarray | None = None, m: int | None = None
    ) -> list[int]:
        """Positions (into `signals.candidates`) by total, then semantic score, then id and version,
        near-ties regrouped by priority (`near_ties_by_priority`); the first m (all when m is None).
        Only the few that can make the top m are fully sorted."""
        if positions is None:
            positions = np.arange(signals.candidates.size)
        if positions.size == 0 or (m is not None and m <= 0):
            return []
        epsilon = self.config.priority_epsilon if self.has_priorities else 0.0
        if m is not None and positions.size > 4 * m + 64:
            scores = totals[positions]
            threshold = np.partition(scores, positions.size - m)[positions.size - m]
            # everything tied with the m-th stays, and what a near-tie could lift above it
            positions = positions[scores >= threshold - epsilon]
        tie = self.tie_rank[signals.candidates[positions]]
        ordered = positions[np.lexsort((tie, -signals.semantic[positions], -totals[positions]))]
        if epsilon > 0:
            ordered = self.near_ties_by_priority(
                ordered, totals[ordered], self.priority[signals.candidates[ordered]], epsilon
            )
        return ordered.tolist() if m is None else ordered[:m].tolist()

    @staticmethod
    def near_ties_by_priority(
        ordered: np.ndarray, totals: np.ndarray, priority: np.ndarray, epsilon: float
    ) -> np.ndarray:
        """`ordered` (by total, descending) regrouped: the first candidate opens a group with every
        following one whose total is within `epsilon` of its own; inside a group higher priority
        first, equal priorities in their given order; the next candidate outside opens the next
        group. A group spans at most `epsilon`, so a candidate never passes one more than
        `epsilon` ahead of it. Something below the m-th total minus `epsilon` can never enter the
        first m (what `order` relies on when it cuts)."""
        descending = -totals
        result = np.empty_like(ordered)
        start = 0
        while start < ordered.size:
            end = int(np.searchsorted(descending, descending[start] + epsilon, side="right"))
            end = max(end, start + 1)
            block = slice(start, end)
            result[block] = ordered[block][np.argsort(-priority[block], kind="stable")]
            start = end
        return result

    def select(
        self,
        *,
        task: str,
        intent: str | None = None,
        cap: int = 2,
        k: int | None = None,
        query_vector: np.ndarray | None = None,
    ) -> Selection:
        """Ranks the records for `task`. At most `cap` are injected; `k` (≤ 20) adds diagnostics
        in the agent API's shape. `rank()` gives the whole ranking with explanations.

        Raises ValueError for an empty task, a negative cap or k outside 1..20."""
        if cap < 0:
            raise ValueError("cap must be 0 or more")
        if k is not None and not (1 <= k <= MAX_K):
            raise ValueError(f"k must be between 1 and {MAX_K}")
        candidates = self.candidates(task, intent)
        if self.quantised is not None and candidates.size and candidates.size >= (self.config.quantised_from or 0):
            vector, third_vector = self.query_parts(
                query_vector if query_vector is not None else self.embed_query(task)
            )
            signals, _ = semantic_read.quantised_signals(
                self,
                task=task,
                candidates=candidates,
                vector=vector,
                cap=cap,
                k=k,
                third_vector=third_vector,
            )
        else:
            signals = self.signals(task=task, intent=intent, query_vector=query_vector)
        result: Selection = {"task": task, "intent": intent or None, "cap": cap, "injected": [], "ranked": []}
        if signals.candidates.size == 0:
            return result
        totals = self.totals(signals)
        eligible = self.eligibility(signals)
        injected_positions, pulled = self.inject(signals, totals, eligible, cap)
        result["injected"] = [dict(self.records[signals.candidates[j]]) for j in injected_positions]
        if pulled:
            result["pulledIn"] = pulled
        if k is not None:
            result["ranked"] = ranked_diagnostics(self, signals, totals, eligible, injected_positions, k)
        return result

    def inject(
        self, signals: Signals, totals: np.ndarray, eligible: np.ndarray, cap: int
    ) -> tuple[list[int], list[PulledIn]]:
        """The injection rule: the first `cap` eligible candidates in ranking order, then the
        producers they pull in while the cap has room. Positions into signals.candidates."""
        chosen = self.order(signals, totals, np.flatnonzero(eligible), cap)
        return chosen, self.pull_producers(signals, totals, chosen, cap)

    def pull_producers(self, signals: Signals, totals: np.ndarray, chosen: list[int], cap: int) -> list[PulledIn]:
        """Appends to `chosen` (positions into signals.candidates), while the cap has room, the
        best-ranked producer of each chosen coding procedure that is not chosen yet; returns what
        was pulled in. Producers come from the candidates (the intent filter applies)."""
        if not self.producers or len(chosen) >= cap:
            return []
        position_of: dict[int, int] | None = None
        pulled: list[PulledIn] = []
        for j in list(chosen):
            links = self.producers.get(int(signals.candidates[j]))
            if not links:
                continue
            if position_of is None:
                position_of = {int(c): p for p, c in enumerate(signals.candidates.tolist())}
            options = {
                position_of[i]: artefacts for i, artefacts in links if i in position_of and position_of[i] not in chosen
            }
            if not options:
                continue
            best = self.order(signals, totals, np.asarray(sorted(options), dtype=np.int64), 1)[0]
            chosen.append(best)
            producer, consumer = self.records[signals.candidates[best]], self.records[signals.candidates[j]]
            pulled.append(
                {
                    "id": producer["id"],
                    "version": producer["version"],
                    "forId": consumer["id"],
                    "artefacts": list(options[best]),
                }
            )
            if len(chosen) >= cap:
                break
        return pulled

    # -- explanation (ranking_explanation.py: the same order and eligibility, written for people)

    def reasons(self, signals: Signals, j: int) -> list[str]:
        """Why candidate j is (or is not) eligible, one line per rule it meets or misses."""
        return eligibility_reasons(self.config, signals, j)

    def rank(
        self, *, task: str, intent: str | None = None, cap: int = 2, query_vector: np.ndarray | None = None
    ) -> list[Explained]:
        """The whole ranking (no k limit), each candidate with its raw and normalised scores, ranks,
        total, eligibility with reasons, and whether it would be injected under `cap`. Same order
        and same injected records as `select`."""
        return explain(self, task=task, intent=intent, cap=cap, query_vector=query_vector)


def _routed_widths(cache: EmbeddingCache) -> tuple[int, int]:
    """The widths of a routed backend's multilingual part (embeddings.RoutedBackend: a task's vector
    fills either the English model's columns or these), so that the index keeps the two models'
    columns as separate blocks and a task reads only its model's, and of its third model's part
    (the last columns, read apart: Index.third_scores); (0, 0) (one block) for any other backend or
    an embedder of one's own. USE's width is known without loading the model."""
    backend = cache.backend
    parts = getattr(backend, "parts", None)
    if not parts or len(parts) not in (2, 3):
        return 0, 0
    return int(parts[1].dimension()), int(backend.third_width()) if len(parts) == 3 else 0


def _joined(blocks: list[np.ndarray]) -> np.ndarray:
    return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


def _priority(record: Mapping[str, Any]) -> int:
    """A record's priority: the served field, 0 when absent (a server before scope) or not a number."""
    value = record.get("priority")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class Ranker:
    """Builds indexes over record sets with a shared embedding cache and configuration."""

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        cache: EmbeddingCache | None = None,
        config: SelectionConfig | None = None,
    ) -> None:
        if cache is None:
            cache = EmbeddingCache(embedder) if embedder is not None else default_cache()
        self.cache = cache
        self.config = config or SelectionConfig()

    def index(self, records: Iterable[Mapping[str, Any]]) -> Index:
        return Index(list(records), cache=self.cache, config=self.config)

    def select(
        self,
        *,
        task: str,
        records: Iterable[Mapping[str, Any]],
        intent: str | None = None,
        cap: int = 2,
        k: int | None = None,
    ) -> Selection:
        """One-shot: builds an index and selects. Build an `Index` once when the records repeat."""
        return self.index(records).select(task=task, intent=intent, cap=cap, k=k)


def select(
    *, task: str, records: Iterable[Mapping[str, Any]], intent: str | None = None, cap: int = 2, k: int | None = None
) -> Selection:
    """Module-level shortcut with the default ranker (bundled model, default floors)."""
    return Ranker().select(task=task, records=records, intent=intent, cap=cap, k=k)


__all__ = [
    "MAX_K",
    "PRIORITY_EPSILON",
    "RETRIEVERS",
    "Explained",
    "PulledIn",
    "Signals",
    "compounds",
    "is_identifier",
    "record_identifiers",
    "score_text",
    "tokens",
    "EmbeddingCache",
    "Index",
    "RankedCandidate",
    "Ranker",
    "Selection",
    "SelectionConfig",
    "default_cache",
    "identifiers",
    "select",
    "stem",
    "words",
]
