"""The quantised semantic read (procmem_client/semantic_read.py): int8 codes scored with SimSIMD, and
every record that could change `select`'s result read again in float32. Whatever the vectors, the
words, the cap, k and the step shortlist, `select` returns what the float32 read returns."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from procmem_client import semantic_read
from procmem_client.ranking import EmbeddingCache, Index, SelectionConfig

needs_simsimd = pytest.mark.skipif(
    semantic_read.simsimd_module() is None, reason="SimSIMD (the [fast] extra) is not installed"
)

WORDS = ["refund", "order", "cancel", "flight", "baggage", "address", "payment", "exchange", "delay", "seat"]


class Vectors:
    """A vector per text, from a seed: distinct unit vectors (no two records tie by accident)."""

    def __init__(self, seed: int, width: int) -> None:
        self.rng, self.width, self.known = np.random.default_rng(seed), width, {}

    def __call__(self, texts: list[str]) -> np.ndarray:
        for text in texts:
            if text not in self.known:
                vector = self.rng.standard_normal(self.width)
                self.known[text] = vector / np.linalg.norm(vector)
        return np.stack([self.known[t] for t in texts]).astype(np.float32)


@needs_simsimd
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    size=st.integers(1, 120),
    width=st.sampled_from([16, 64, 512]),
    shortlist=st.integers(1, 40),
    cap=st.integers(0, 3),
    k=st.one_of(st.none(), st.integers(1, 20)),
    floor=st.floats(0.0, 0.5),
    priorities=st.booleans(),
    body=st.sampled_from([0.0, 1.5]),
)
def test_the_quantised_read_selects_as_the_float32_read(seed, size, width, shortlist, cap, k, floor, priorities, body):
    rng = np.random.default_rng(seed)
    records = [
        {
            "id": f"p{i:03d}",
            "version": 1,
            "intent": None,
            "priority": int(rng.integers(0, 3)) if priorities else 0,
            "appliesWhen": f"case {i}: the customer asks about " + " ".join(rng.choice(WORDS, 3)),
            "steps": [f"step {i}.{s} " + str(rng.choice(WORDS)) for s in range(int(rng.integers(0, 4)))],
        }
        for i in range(size)
    ]
    cache = EmbeddingCache(Vectors(seed, width))
    configs = {
        "quantised": SelectionConfig(
            quantised_from=0, step_shortlist=shortlist, semantic_floor=floor, body_weight=body
        ),
        "float32": SelectionConfig(
            quantised_from=10**9, step_shortlist=shortlist, semantic_floor=floor, body_weight=body
        ),
    }
    fast, plain = (Index(records, cache=cache, config=config) for config in configs.values())
    assert fast.quantised is not None and plain.quantised is None
    for task in ["I want a refund for my order", "cancel the flight and the seat", "hello " + str(rng.choice(WORDS))]:
        vector = cache.embed_query(task) + 0.5 * fast.matrix[int(rng.integers(0, size))]  # near some record
        chosen = fast.select(task=task, cap=cap, k=k, query_vector=vector)
        expected = plain.select(task=task, cap=cap, k=k, query_vector=vector)
        assert chosen == expected, task
        signals, read_again = semantic_read.quantised_signals(
            fast, task=task, candidates=np.arange(size), vector=vector, cap=cap, k=k
        )
        assert 0 <= read_again <= size


@needs_simsimd
def test_the_int8_products_are_within_their_bound_and_the_read_rows_are_the_whole_products():
    rng = np.random.default_rng(7)
    blocks = [rng.standard_normal((3000, 384)).astype(np.float32), rng.standard_normal((3000, 512)).astype(np.float32)]
    blocks = [b / np.linalg.norm(b, axis=1, keepdims=True) / np.sqrt(2) for b in blocks]
    quantised = semantic_read.QuantisedBlocks(blocks, semantic_read.simsimd_module())
    for filled in ([0], [1], [0, 1]):
        vector = np.zeros(896, dtype=np.float32)
        for part in filled:
            start = 0 if part == 0 else 384
            width = blocks[part].shape[1]
            vector[start : start + width] = rng.standard_normal(width) * 0.1
        exact = semantic_read.products(blocks, vector)
        approximate, bound = quantised.approximate(vector)
        assert np.abs(approximate - exact).max() <= bound
        assert bound < 20 * np.abs(approximate - exact).max()  # proved, so looser than the error seen, not much
        rows = np.sort(rng.choice(3000, 77, replace=False))
        assert np.array_equal(semantic_read.products(blocks, vector, rows), exact[rows])


@needs_simsimd
def test_a_set_below_the_threshold_or_without_simsimd_reads_float32(monkeypatch):
    cache = EmbeddingCache(Vectors(1, 32))
    records = [{"id": f"p{i}", "version": 1, "appliesWhen": f"case {i}", "steps": []} for i in range(10)]
    assert Index(records, cache=cache, config=SelectionConfig(quantised_from=11)).quantised is None
    assert Index(records, cache=cache, config=SelectionConfig(quantised_from=10)).quantised is not None
    assert Index(records, cache=cache, config=SelectionConfig()).quantised is None  # off by default
    monkeypatch.setattr(semantic_read, "simsimd_module", lambda: None)
    assert Index(records, cache=cache, config=SelectionConfig(quantised_from=0)).quantised is None
    with pytest.raises(ValueError, match="quantised_from"):
        SelectionConfig(quantised_from=-1)


def test_the_light_client_selects_without_simsimd():
    """No `[fast]` extra: the index reads float32 whatever the threshold, and selects."""
    code = (
        "import sys; sys.modules['simsimd'] = None\n"
        "import numpy as np\n"
        "from procmem_client.ranking import EmbeddingCache, Index, SelectionConfig\n"
        "cache = EmbeddingCache(lambda texts: np.eye(8, dtype=np.float32)[[len(t) % 8 for t in texts]])\n"
        "records = [{'id': f'p{i}', 'version': 1, 'appliesWhen': 'x' * i, 'steps': []} for i in range(6)]\n"
        "index = Index(records, cache=cache, config=SelectionConfig(quantised_from=0))\n"
        "assert index.quantised is None\n"
        "assert index.select(task='xxx', cap=1, k=3)['ranked']\n"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.returncode == 0, completed.stderr


def test_a_rows_product_is_the_same_to_the_bit_whichever_rows_are_read_with_it():
    """semantic_read.whole_products and row_products sum each row by the same loop: any rows, in any
    order, from a block or a view into a wider matrix, give the whole product's values exactly (a
    record's appliesWhen and another's clause of the same text tie; the quantised read's second read
    agrees with the float32 read)."""
    rng = np.random.default_rng(41)
    wide = rng.standard_normal((1000, 896)).astype(np.float32)
    for block in (np.ascontiguousarray(wide[:, 384:]), wide[:, 384:], wide[:777, :384], wide[1:, 3:515]):
        part = rng.standard_normal(block.shape[1]).astype(np.float32)
        whole = semantic_read.whole_products(block, part)
        assert whole.dtype == np.float32
        assert np.allclose(whole, block.astype(np.float64) @ part.astype(np.float64), atol=1e-4)
        for size in (1, 2, 3, 15, 16, 17, 255, 256, 257, block.shape[0]):
            rows = rng.choice(block.shape[0], size, replace=False)
            assert np.array_equal(semantic_read.row_products(block, part, rows), whole[rows])
            assert np.array_equal(semantic_read.whole_products(block[np.sort(rows)], part), whole[np.sort(rows)])


def test_the_product_computed_beside_the_other_signals_selects_the_same(monkeypatch):
    """From BESIDE_FROM records the semantic product runs in a thread of its own (Beside) while the
    lexical and exact signals are computed: the same selection as computed in turn, and an error in
    the thread reaches the caller."""
    cache = EmbeddingCache(Vectors(5, 32))
    records = [
        {
            "id": f"p{i:03d}",
            "version": 1,
            "appliesWhen": f"{WORDS[i % 10]} {WORDS[(i * 3) % 10]} case {i}",
            "steps": [f"s{i}"],
        }
        for i in range(300)
    ]
    index = Index(records, cache=cache, config=SelectionConfig(step_shortlist=20))
    tasks = ["refund my order", "cancel the flight", "seat and baggage delay"]
    monkeypatch.setattr(semantic_read, "BESIDE_FROM", 10**9)
    in_turn = [index.select(task=task, cap=2, k=5) for task in tasks]
    monkeypatch.setattr(semantic_read, "BESIDE_FROM", 0)
    assert [index.select(task=task, cap=2, k=5) for task in tasks] == in_turn
    for apart in (True, False):
        with pytest.raises(ZeroDivisionError):
            semantic_read.Beside(lambda: 1 / 0, apart=apart).result()
        assert semantic_read.Beside(lambda: 41 + 1, apart=apart).result() == 42


def test_the_nearest_products_are_the_whole_products_best_within_rounding():
    """semantic_read.nearest_products cuts `(block @ queries.T).max(axis=1)` into products BLAS
    computes in one thread: the same values within float32 rounding, the same for the same shapes."""
    rng = np.random.default_rng(41)
    for rows, queries in ((1, 1), (17, 3), (102, 30), (700, 45)):
        block = rng.standard_normal((rows, 512)).astype(np.float32)
        task = rng.standard_normal((queries, 512)).astype(np.float32)
        best = semantic_read.nearest_products(block, task)
        whole = (block.astype(np.float64) @ task.T.astype(np.float64)).max(axis=1)
        assert best.dtype == np.float32 and best.shape == (rows,)
        assert np.allclose(best, whole, rtol=0, atol=1e-4)
        assert np.array_equal(semantic_read.nearest_products(block, task), best)
