"""The lexical score across languages (docs/selection.md, "The lexical retriever across
languages"): a task that `terms.is_english` does not take for English is matched word by word
against the set's appliesWhen words, each word counting with its IDF by how close the task's
nearest word (or Chinese/Japanese character pair) comes to it in the backend's multilingual word
model. `CrossLingualWords` prepares the set's words once per index and scores a task; ranking.Index
is one (it builds the words with the rest of the index), so its signals read them as before.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from . import semantic_read
from .embedding_cache import EmbeddingCache
from .selection import SelectionConfig
from .terms import is_english, library_words, task_units


class CrossLingualWords:
    """The appliesWhen words of a set of records with their IDF and word vectors, and a task's
    cross-lingual lexical score over them. Uses `records`, `config`, `_cache` and `len()` of the
    index it is part of."""

    records: list[Mapping[str, Any]]
    config: SelectionConfig
    _cache: EmbeddingCache

    def __len__(self) -> int:
        return len(self.records)

    # the cross-lingual score sums every record when the words a task meets fill more than this
    # share of the set's word places (cross_lingual_scores), else only the records met
    CROSS_LINGUAL_DENSE_SHARE = 0.25
    # np.add.reduceat sums a segment of at most this many values as its first value plus the others
    # added one after the other (pairwise from nine on): `_word_sums` sums such records so, by columns
    SHORT_WORD_SUM = 8

    def _cross_lingual_index(self, cache: EmbeddingCache, config: SelectionConfig) -> None:
        """The appliesWhen words (terms.library_words) with their IDF and the backend's word vectors,
        record i's words at word_rows[word_ptr[i]:word_ptr[i+1]]; word_matrix None without a word model.
        Also prepared here, once per index and not per task: each word's records (word_records, by
        word row) and each record's IDF mass (word_idf_mass), so that a task's score is summed over
        the records that contain a word it meets, not over every word place of the set."""
        n = len(self.records)
        self.word_matrix: np.ndarray | None = None
        self.word_row_of: dict[str, int] | None = None
        if not n or not config.cross_lingual:
            return
        started = time.perf_counter()
        row_of: dict[str, int] = {}
        rows: list[int] = []
        self.word_ptr = np.zeros(n + 1, dtype=np.int64)
        for i, record in enumerate(self.records):
            rows.extend(row_of.setdefault(word, len(row_of)) for word in library_words(record["appliesWhen"]))
            self.word_ptr[i + 1] = len(rows)
        if not rows:
            return
        self.word_matrix = cache.word_matrix(list(row_of))
        self.word_row_of = row_of
        self.word_rows = np.asarray(rows, dtype=np.int64)
        df = np.bincount(self.word_rows, minlength=len(row_of))
        self.word_df = df
        self.word_row_idf = np.log1p(n / np.maximum(df, 1))  # a word's IDF, the same in every record
        self.word_idf = self.word_row_idf[self.word_rows]
        lengths = np.diff(self.word_ptr)
        self.word_has = lengths > 0
        self.word_starts = self.word_ptr[:-1][self.word_has]
        self.word_idf_mass = np.zeros(n, dtype=np.float64)
        self.word_idf_mass[self.word_has] = np.add.reduceat(self.word_idf, self.word_starts)
        # for the sum over every record (`_word_sums`): the records of each word count up to
        # SHORT_WORD_SUM with their word rows as a table (count, records); the longer ones' places
        self.word_tables: list[tuple[np.ndarray, np.ndarray]] = []
        long = lengths > self.SHORT_WORD_SUM
        for count in np.unique(lengths[self.word_has & ~long]):
            holding = np.flatnonzero(lengths == count)
            places = self.word_ptr[holding][None, :] + np.arange(count)[:, None]
            self.word_tables.append((holding, self.word_rows[places]))
        self.word_long = np.flatnonzero(long)
        long_lengths = lengths[self.word_long]
        self.word_long_starts = np.concatenate(([0], np.cumsum(long_lengths)[:-1])).astype(np.int64)
        self.word_long_rows = self.word_rows[
            np.arange(int(long_lengths.sum()))
            + np.repeat(self.word_ptr[self.word_long] - self.word_long_starts, long_lengths)
        ]
        # word row → the records holding it (a word appears once per record: library_words is a set)
        places = np.argsort(self.word_rows, kind="stable")
        self.word_records = np.repeat(np.arange(n, dtype=np.int64), lengths)[places]
        self.word_records_ptr = np.concatenate(([0], np.cumsum(df))).astype(np.int64)
        self.cross_lingual_build_seconds = time.perf_counter() - started

    def cross_lingual_scores(self, task: str) -> np.ndarray | None:
        """The lexical score across languages (module docstring); None when the index has no word
        model or the task is in the library's language (English).

        Only the records holding a word that the task meets (best cosine above the floor) can score.
        When those words are rare in the set, only their records' word places are summed, exactly as
        the sum over every record sums them (the same values, in the same order, per record), and
        every other record scores 0; when they are common, every record is summed. Either way the
        scores are the same to the bit, and a word's credit times its IDF is computed once per word,
        not once per place."""
        word_credit = self.word_credit(task)
        if word_credit is None:
            return None
        scores = np.zeros(len(self), dtype=np.float64)
        met = np.flatnonzero(word_credit > 0)
        if met.size == 0:
            return scores
        weighted = word_credit * self.word_row_idf  # per word: its credit times its IDF
        if int(self.word_df[met].sum()) > self.CROSS_LINGUAL_DENSE_SHARE * self.word_rows.size:
            # the words met are in much of the set: summing every record costs less than finding them
            scores[self.word_has] = self._word_sums(weighted)[self.word_has] / self.word_idf_mass[self.word_has]
            return scores
        touched = np.zeros(len(self), dtype=bool)
        for word in met:
            touched[self.word_records[self.word_records_ptr[word] : self.word_records_ptr[word + 1]]] = True
        records = np.flatnonzero(touched)
        starts = self.word_ptr[records]
        lengths = self.word_ptr[records + 1] - starts
        segments = np.concatenate(([0], np.cumsum(lengths)[:-1]))
        # the word places of those records, record after record
        places = np.arange(int(lengths.sum())) + np.repeat(starts - segments, lengths)
        scores[records] = np.add.reduceat(weighted[self.word_rows[places]], segments) / self.word_idf_mass[records]
        return scores

    def _word_sums(self, weighted: np.ndarray) -> np.ndarray:
        """Per record, the sum of `weighted` over its word rows, the same to the bit as
        `np.add.reduceat(weighted[self.word_rows], self.word_starts)` (0 for a record without words):
        the records of one word count up to SHORT_WORD_SUM summed a column at a time as reduceat sums
        a short segment (the first value plus the sum of the others in order), the longer ones by
        reduceat itself. At 100,000 records this is a few passes instead of a call per record."""
        sums = np.zeros(len(self), dtype=np.float64)
        for holding, table in self.word_tables:
            values = weighted[table]  # (count, records)
            if values.shape[0] == 1:
                sums[holding] = values[0]
                continue
            rest = values[1].copy()
            for column in values[2:]:
                rest += column
            sums[holding] = values[0] + rest
        if self.word_long.size:
            sums[self.word_long] = np.add.reduceat(weighted[self.word_long_rows], self.word_long_starts)
        return sums

    def word_credit(self, task: str) -> np.ndarray | None:
        """Per appliesWhen word (word row): how much the task's nearest word or character pair
        credits it, 0 at `cross_lingual_floor` or below, 1 at cosine 1; None without a word model or
        for an English task."""
        if self.word_matrix is None or is_english(task):
            return None
        units = task_units(task)
        if not units:
            return np.zeros(self.word_matrix.shape[0], dtype=np.float64)
        best = semantic_read.nearest_products(self.word_matrix, self._cache.task_word_matrix(units))
        floor = self.config.cross_lingual_floor
        return np.clip((best.astype(np.float64) - floor) / (1.0 - floor), 0.0, 1.0)
