"""The lexical score per clause (ranking.py, docs/selection.md "Conditions: clauses and amounts"):
an appliesWhen of several situations ("The customer wants to cancel reservation and update
reservation flights") enters the order with its weakest clause's lexical score, as it does with its
weakest clause's semantic score, so that a task naming one situation no longer meets the compound
procedure's whole word list through that one. The same share of IDF mass as the whole text's
lexical score (the set's IDF), per clause: in English the clause's stems found in the task, across
languages the clause's words credited by the task's nearest word (the cross-lingual retriever's
credits). Order only; eligibility reads the whole text's score."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

from .terms import compounds, library_words, words


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
