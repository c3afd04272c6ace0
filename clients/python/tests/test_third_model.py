"""A routed backend's third model (embeddings.RoutedBackend "ENGLISH+MULTILINGUAL+THIRD", the
default "minilm+use-multilingual+e5-small"): its vector carried by procedures and every task, its
weakest-clause cosine a signal of its own (SelectionConfig.third_model_weight, ranking.py,
condition_scores.py), and a backend of two models ranked exactly as before. Fake models, no weights."""

from __future__ import annotations

import numpy as np
import pytest

from procmem_client.embeddings import RoutedBackend
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig

AXES = ("cancel", "flights", "refund", "status", "bags")


class _Model:
    """One axis per word of AXES found in the text, plus a constant axis; `turn` rotates the words
    (a model that reads the texts differently), `offset` stretches its cosines as e5's do."""

    def __init__(self, name: str, turn: int = 0, offset: float = 0.0) -> None:
        self.name = self.model_id = name
        self.turn = turn
        self.offset = offset

    def dimension(self) -> int:
        return len(AXES) + 1

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = []
        for text in texts:
            found = [1.0 if axis in text.lower() else 0.0 for axis in AXES]
            found = found[self.turn :] + found[: self.turn]
            vector = np.asarray(found + [0.3], dtype=np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows) if rows else np.zeros((0, self.dimension()), dtype=np.float32)

    def embed_words(self, texts: list[str]) -> np.ndarray:
        return self.embed(texts)

    def calibrate(self, scores: np.ndarray) -> np.ndarray:
        if not self.offset:
            return scores
        return (np.asarray(scores, dtype=np.float64) - self.offset) / (1.0 - self.offset)


def _third(offset: float = 0.2) -> _Model:
    """A third model that reads "refund" where the others read "cancel" (and so on)."""
    return _Model("third", turn=2, offset=offset)


RECORDS = [
    {"id": "a.cancel", "version": 1, "appliesWhen": "The customer wants to cancel flights.", "steps": ["cancel it"]},
    {
        "id": "a.cancel_refund",
        "version": 1,
        "appliesWhen": "The customer wants to cancel flights and ask for a refund of the bags.",
        "steps": ["cancel it", "refund it"],
    },
    {"id": "a.status", "version": 1, "appliesWhen": "The customer asks for the status.", "steps": []},
    {"id": "a.bags", "version": 1, "appliesWhen": "The customer wants to add bags.", "steps": ["add bags"]},
]
TASKS = ["Please cancel my flights", "Where is the status of my refund?", "Ich möchte stornieren", "bags refund"]


def test_a_third_model_is_carried_by_every_vector_and_read_apart():
    english, other, third = _Model("en"), _Model("other", turn=1), _third()
    two, three = RoutedBackend(english, other), RoutedBackend(english, other, third)
    assert three.name == "en+other+third" and three.model_id != two.model_id
    assert three.dimension() == 3 * english.dimension() and three.third_width() == third.dimension()
    procedure = three.embed(["The customer wants to cancel flights."])[0]
    assert np.linalg.norm(procedure) == pytest.approx(1.0, abs=1e-6)
    width = english.dimension()
    for task, language in (("Please cancel my flights", english), ("Ich möchte stornieren", other)):
        query = three.embed_query([task])[0]
        start = 0 if language is english else width
        # the language's part: its model's cosine; the other language's part empty; the third's part
        # its raw cosine, for a task in any language
        expected = float(language.embed([task])[0] @ language.embed(["The customer wants to cancel flights."])[0])
        assert float(query[start : start + width] @ procedure[start : start + width]) == pytest.approx(
            expected, abs=1e-6
        )
        assert not query[width - start : 2 * width - start].any()
        raw = float(third.embed([task])[0] @ third.embed(["The customer wants to cancel flights."])[0])
        assert float(query[2 * width :] @ procedure[2 * width :]) == pytest.approx(raw, abs=1e-6)
    # two procedures are compared by the English model, as with two models
    a, b = three.embed(["cancel flights", "cancel flights and bags"])
    assert three.similarity(a, b) == pytest.approx(
        two.similarity(*two.embed(["cancel flights", "cancel flights and bags"])), abs=1e-6
    )


def test_the_third_models_weakest_clause_adds_its_weight_to_the_total():
    english, other, third = _Model("en"), _Model("other", turn=1), _third()
    weight = 0.5
    plain = Ranker(cache=EmbeddingCache(backend=RoutedBackend(english, other))).index(RECORDS)  # type: ignore[arg-type]
    three = RoutedBackend(english, other, third)
    index = Ranker(  # type: ignore[arg-type]
        cache=EmbeddingCache(backend=three), config=SelectionConfig(third_model_weight=weight)
    ).index(RECORDS)
    for task in TASKS:
        before = {c["id"]: c for c in plain.rank(task=task)}
        after = {c["id"]: c for c in index.rank(task=task)}
        for record in RECORDS:
            texts = [record["appliesWhen"]]
            if record["id"] == "a.cancel_refund":  # two clauses: the weakest one's cosine
                texts = ["The customer wants to cancel flights.", "The customer wants to ask for a refund of the bags."]
            cosines = third.calibrate(third.embed([task]) @ third.embed(texts).T)[0]
            expected = before[record["id"]]["total"] + weight * float(np.clip(cosines.min(), 0.0, 1.0))
            assert after[record["id"]]["total"] == pytest.approx(expected, abs=1e-5), (task, record["id"])
            # order only: the semantic score and eligibility are the language models' as before
            assert after[record["id"]]["scores"]["semantic"] == pytest.approx(
                before[record["id"]]["scores"]["semantic"], abs=1e-5
            )
            assert after[record["id"]]["eligible"] == before[record["id"]]["eligible"]
        selected = index.select(task=task, cap=2, k=4)
        assert [r["id"] for r in selected["injected"]] == [c["id"] for c in index.rank(task=task) if c["injected"]]


def test_with_the_third_models_weight_at_0_the_ranking_is_the_two_models_one():
    english, other = _Model("en"), _Model("other", turn=1)
    plain = Ranker(cache=EmbeddingCache(backend=RoutedBackend(english, other))).index(RECORDS)  # type: ignore[arg-type]
    off = Ranker(  # type: ignore[arg-type]
        cache=EmbeddingCache(backend=RoutedBackend(english, other, _third())),
        config=SelectionConfig(third_model_weight=0.0),
    ).index(RECORDS)
    assert off.third_block is None
    for task in TASKS:
        assert [(c["id"], round(c["total"], 6)) for c in off.rank(task=task)] == [
            (c["id"], round(c["total"], 6)) for c in plain.rank(task=task)
        ]
    with pytest.raises(ValueError, match="third_model_weight"):
        SelectionConfig(third_model_weight=-0.1)


class _Counted(_Model):
    """A third model that counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__("third", turn=2, offset=0.2)
        self.texts: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        return super().embed(texts)


def test_with_the_third_models_weight_at_0_no_task_is_embedded_by_it():
    """Its signal unweighed, the third model is not run on a task (the skill-trigger measure ranks
    hundreds of tasks a page view with weight 0: library/serving/skill_trigger.description_config);
    the ranking is the same as with the task's third part embedded."""
    english, other, third = _Model("en"), _Model("other", turn=1), _Counted()
    backend = RoutedBackend(english, other, third)
    off = Ranker(cache=EmbeddingCache(backend=backend), config=SelectionConfig(third_model_weight=0.0)).index(RECORDS)  # type: ignore[arg-type]
    embedded = len(third.texts)  # the procedures' and clauses' texts, as stored vectors carry it
    for task in TASKS:
        ranked = off.rank(task=task)
        full = off.rank(task=task, query_vector=backend.embed_query([task])[0])
        assert [(c["id"], c["total"]) for c in ranked] == [(c["id"], c["total"]) for c in full]
        off.select(task=task, cap=2, k=4)
    assert len(third.texts) == embedded + len(TASKS)  # only the embed_query calls above
    assert not off.embed_query("cancel my flights")[-third.dimension() :].any()
    on = Ranker(cache=EmbeddingCache(backend=backend), config=SelectionConfig(third_model_weight=0.5)).index(RECORDS)  # type: ignore[arg-type]
    assert on.embed_query("cancel my flights")[-third.dimension() :].any()


def test_a_backend_without_a_third_model_has_no_third_signal():
    index = Ranker(cache=EmbeddingCache(backend=RoutedBackend(_Model("en"), _Model("other", turn=1)))).index(RECORDS)  # type: ignore[arg-type]
    assert index.third_block is None and index.third_columns == 0
    assert index.signals(task="cancel my flights").third is None


def test_the_quantised_read_selects_as_the_float32_read_with_a_third_model():
    """semantic_read.quantised_signals takes the third model's scores as they are (exact): the same
    selection, diagnostics and scores as the float32 read."""
    from procmem_client import semantic_read

    if semantic_read.simsimd_module() is None:
        pytest.skip("SimSIMD (the client's [fast] extra) is not installed")
    backend = RoutedBackend(_Model("en"), _Model("other", turn=1), _third())
    cache = EmbeddingCache(backend=backend)  # type: ignore[arg-type]
    fast, plain = (
        Ranker(cache=cache, config=SelectionConfig(quantised_from=threshold)).index(RECORDS) for threshold in (0, 10**9)
    )
    assert fast.quantised is not None and plain.quantised is None
    for task in TASKS:
        for cap in (1, 2):
            assert fast.select(task=task, cap=cap, k=4) == plain.select(task=task, cap=cap, k=4), task


def test_the_third_models_signal_is_computed_for_the_step_shortlist_as_the_step_signal():
    """Over more candidates than `step_shortlist`, the third model's score is read for the shortlist
    only (NaN, counted 0, for the rest), each value the same to the bit as when every row is read;
    the quantised read shortlists and reads the same."""
    from procmem_client import semantic_read

    backend = RoutedBackend(_Model("en"), _Model("other", turn=1), _third())
    cache = EmbeddingCache(backend=backend)  # type: ignore[arg-type]
    everyone = Ranker(cache=cache).index(RECORDS)
    short = Ranker(cache=cache, config=SelectionConfig(step_shortlist=2)).index(RECORDS)
    for task in TASKS:
        whole = everyone.signals(task=task)
        some = short.signals(task=task)
        computed = ~np.isnan(some.third)
        assert computed.tolist() == (~np.isnan(some.step)).tolist() and computed.sum() == 2
        assert np.array_equal(some.third[computed], whole.third[computed]), task
    if semantic_read.simsimd_module() is not None:
        fast = Ranker(cache=cache, config=SelectionConfig(step_shortlist=2, quantised_from=0)).index(RECORDS)
        for task in TASKS:
            assert fast.select(task=task, cap=2, k=4) == short.select(task=task, cap=2, k=4), task
