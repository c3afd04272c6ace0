"""The conditions of a set's appliesWhen texts (conditions.py) as an index reads them (ranking.py,
docs/selection.md "Conditions: clauses and amounts"), order only:

- an appliesWhen of several situations ("The customer wants to cancel reservation and update
  reservation flights") enters the order with its weakest clause's semantic score and its weakest
  clause's lexical score, so that a task naming one situation meets neither the whole sentence's
  embedding nor its whole word list through that one. The lexical score per clause is the same
  share of IDF mass as the whole text's (the set's IDF): in English the clause's stems found in the
  task, across languages the clause's words credited by the task's nearest word (the cross-lingual
  retriever's credits);
- a task's money amount in a range the appliesWhen names.

Eligibility reads the whole text's scores; coding procedures have no conditions."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import coding, semantic_read
from .conditions import amount_match, amount_ranges, amounts, clauses
from .terms import compounds, library_words, words

if TYPE_CHECKING:
    from .embedding_cache import EmbeddingCache


class ClauseLexicon:
    """The clauses of a set's compound appliesWhen texts as lexical documents: place k (the k-th
    clause of the records in `records`, record after record; record `records[m]`'s clauses at
    places starts[m]:starts[m+1]) with its stems' postings and IDF mass, and its words' rows in the
    cross-lingual word matrix (`word_row_of`; None without a word model)."""

    def __init__(
        self,
        records: Sequence[int],
        clause_texts: Sequence[Sequence[str]],
        *,
        idf: Mapping[str, float],
        word_row_of: Mapping[str, int] | None,
        word_row_idf: np.ndarray | None,
    ) -> None:
        self.records = np.asarray(records, dtype=np.int64)
        self.starts = np.asarray(np.cumsum([0] + [len(c) for c in clause_texts[:-1]]), dtype=np.int64)
        places = [text for texts in clause_texts for text in texts]
        self.size = len(places)
        postings: dict[str, list[int]] = defaultdict(list)
        split: dict[str, dict[tuple[str, ...], list[int]]] = defaultdict(lambda: defaultdict(list))
        weight = np.zeros(self.size, dtype=np.float64)
        for place, text in enumerate(places):
            terms = set(words(text))
            for term in terms:
                postings[term].append(place)
            weight[place] = sum(idf.get(term, 0.0) for term in terms)
            for joined, parts in set(compounds(text)):
                if parts and joined not in terms:
                    split[joined][parts].append(place)
        self.postings = {term: np.asarray(ids, dtype=np.int64) for term, ids in postings.items()}
        self.split = {j: {p: np.asarray(ids, dtype=np.int64) for p, ids in by.items()} for j, by in split.items()}
        self.weight = weight
        self.idf = idf
        self.word_rows: np.ndarray | None = None
        if word_row_of is not None and word_row_idf is not None:
            rows = [[word_row_of[w] for w in library_words(text) if w in word_row_of] for text in places]
            self.word_ptr = np.concatenate(([0], np.cumsum([len(r) for r in rows]))).astype(np.int64)
            self.word_rows = np.asarray([row for r in rows for row in r], dtype=np.int64)
            self.word_mass = np.zeros(self.size, dtype=np.float64)
            self.word_has = np.diff(self.word_ptr) > 0
            if self.word_rows.size:
                self.word_mass[self.word_has] = np.add.reduceat(
                    word_row_idf[self.word_rows], self.word_ptr[:-1][self.word_has]
                )

    def lexical(self, terms: set[str]) -> np.ndarray:
        """Each place's share of IDF mass found among the task's terms (its stems and joined
        adjacent pairs), as Index.lexical_scores computes it for a whole text."""
        scores = np.zeros(self.size, dtype=np.float64)
        for term in terms:
            ids = self.postings.get(term)
            if ids is not None:
                scores[ids] += self.idf[term]
            for parts, split_ids in self.split.get(term, {}).items():
                scores[split_ids] += sum(self.idf.get(part, 0.0) for part in parts if part not in terms)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.weight > 0, np.minimum(scores / np.maximum(self.weight, 1e-12), 1.0), 0.0)

    def cross_lingual(self, weighted: np.ndarray) -> np.ndarray:
        """Each place's cross-lingual score from the words' credits times their IDF (`weighted`, by
        word row), over its IDF mass."""
        scores = np.zeros(self.size, dtype=np.float64)
        if self.word_rows is None or not self.word_rows.size:
            return scores
        sums = np.add.reduceat(weighted[self.word_rows], self.word_ptr[:-1][self.word_has])
        scores[self.word_has] = sums / self.word_mass[self.word_has]
        return scores

    def weakest(self, place_scores: np.ndarray, whole: np.ndarray, candidates: np.ndarray, n: int) -> np.ndarray:
        """The candidates' order scores: a compound record's weakest clause's, the others' `whole`
        (already the candidates')."""
        by_record = np.full(n, np.nan)
        by_record[self.records] = np.minimum.reduceat(place_scores, self.starts)
        mine = by_record[candidates]
        return np.where(np.isnan(mine), whole, mine)


class Conditions:
    """What a set's appliesWhen texts require, prepared once per index: the clause vectors of the
    records whose appliesWhen has more than one clause (`clause_records`, their clauses' rows in
    `clause_matrix` at clause_rows[clause_starts[k]:...], in record order; each distinct clause
    embedded once per process), their clauses as lexical documents (`lexicon`), and the records that
    name a money range with their ranges (`money_ranges`)."""

    def __init__(
        self,
        records: Sequence[Mapping[str, Any]],
        *,
        cache: EmbeddingCache,
        clause_match: bool,
        clause_lexical: bool,
        amount_weight: float,
        idf: Mapping[str, float],
        word_row_of: Mapping[str, int] | None,
        word_row_idf: np.ndarray | None,
        third_width: int = 0,
        third_weight: float = 0.0,
    ) -> None:
        """`third_width`: the last columns of every vector that belong to a routed backend's third
        model (embeddings.RoutedBackend), kept apart as `third_clause_matrix` when `third_weight`
        weighs them, and left out of `clause_matrix` either way."""
        self.n = len(records)
        self.clause_matrix: np.ndarray | None = None
        self.third_clause_matrix: np.ndarray | None = None
        self.lexicon: ClauseLexicon | None = None
        self.money_ranges: dict[int, list[tuple[float, float]]] = {}
        if amount_weight:
            for i, record in enumerate(records):
                ranges = [] if coding.is_coding(record) else amount_ranges(record["appliesWhen"])
                if ranges:
                    self.money_ranges[i] = ranges
        if not clause_match and not clause_lexical:
            return
        row_of: dict[str, int] = {}
        rows: list[int] = []
        compound: list[int] = []
        starts: list[int] = []
        texts: list[list[str]] = []
        for i, record in enumerate(records):
            parts = [] if coding.is_coding(record) else clauses(record["appliesWhen"])
            if len(parts) > 1:
                compound.append(i)
                starts.append(len(rows))
                rows.extend(row_of.setdefault(part, len(row_of)) for part in parts)
                texts.append(parts)
        if not compound:
            return
        if clause_lexical:
            self.lexicon = ClauseLexicon(compound, texts, idf=idf, word_row_of=word_row_of, word_row_idf=word_row_idf)
        if clause_match:
            matrix = cache.matrix(list(row_of))
            if third_width:
                if third_weight:
                    self.third_clause_matrix = np.ascontiguousarray(matrix[:, -third_width:])
                matrix = np.ascontiguousarray(matrix[:, :-third_width])
            self.clause_matrix = matrix
            self.clause_rows = np.asarray(rows, dtype=np.int64)
            self.clause_records = np.asarray(compound, dtype=np.int64)
            self.clause_starts = np.asarray(starts, dtype=np.int64)

    def semantic(
        self,
        candidates: np.ndarray,
        semantic: np.ndarray,
        vector: np.ndarray,
        calibrate: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray | None:
        """The semantic score the order uses for each candidate: for a record whose appliesWhen has
        several clauses, its weakest clause's calibrated cosine with the task (each situation it
        names must be in the task); for the others `semantic` itself. None without such records."""
        if self.clause_matrix is None:
            return None
        # read as the appliesWhen matrix is read (semantic_read.whole_products): a clause and another
        # record's appliesWhen of the same text tie to the bit
        products = semantic_read.whole_products(self.clause_matrix, vector)
        weakest = np.minimum.reduceat(calibrate(products)[self.clause_rows], self.clause_starts)
        by_record = np.full(self.n, np.nan)
        by_record[self.clause_records] = weakest
        mine = by_record[candidates]
        return np.where(np.isnan(mine), semantic, mine)

    def third(
        self,
        candidates: np.ndarray,
        whole: np.ndarray,
        vector: np.ndarray,
        calibrate: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """A routed backend's third model's score for each candidate (its part of the task's vector,
        `vector`): a compound appliesWhen's weakest clause's calibrated cosine, the others' `whole`
        (the appliesWhen's, already the candidates')."""
        if self.third_clause_matrix is None:
            return whole
        products = semantic_read.whole_products(self.third_clause_matrix, vector)
        weakest = np.minimum.reduceat(np.asarray(calibrate(products))[self.clause_rows], self.clause_starts)
        by_record = np.full(self.n, np.nan)
        by_record[self.clause_records] = weakest
        mine = by_record[candidates]
        return np.where(np.isnan(mine), whole, mine)

    def lexical(
        self,
        candidates: np.ndarray,
        lexical: np.ndarray,
        terms: Callable[[], set[str]],
        weighted: Callable[[], np.ndarray | None],
    ) -> np.ndarray | None:
        """The lexical score the order uses for each candidate: a compound appliesWhen's weakest
        clause's, the others' `lexical` (already the candidates'); None without compound records.
        `weighted()` gives the cross-lingual credits times IDF by word row (None for an English task
        or without a word model: then `terms()`, the task's stems, are looked up)."""
        if self.lexicon is None:
            return None
        across = weighted()
        places = self.lexicon.lexical(terms()) if across is None else self.lexicon.cross_lingual(across)
        return self.lexicon.weakest(places, lexical, candidates, self.n)

    def amounts(self, task: str, candidates: np.ndarray) -> np.ndarray | None:
        """1 for a candidate whose appliesWhen names a money range that one of the task's amounts
        falls in, else 0; None when no record names a range or the task names no amount."""
        if not self.money_ranges:
            return None
        found = amounts(task)
        if not found:
            return None
        by_record = np.zeros(self.n, dtype=np.float64)
        for i, ranges in self.money_ranges.items():
            by_record[i] = amount_match(found, ranges)
        return by_record[candidates]
