"""How the ranker reads its embedding matrices (ranking.Index): the float32 column blocks, exactly,
whole or a few rows of them; and, for a large set, the quantised read that `Index.select` uses
instead of the whole float32 product, with the same outcome (docs/selection.md, "Speed").

The quantised read (`QuantisedBlocks`, `quantised_signals`): each appliesWhen row is also kept as
int8 codes with its own scale (a quarter of the float32 bytes), the task's vector is quantised the
same way, and SimSIMD's int8 dot product (the `[fast]` extra of the client; the server installs it)
scores every record. Each approximate score is within a bound of the float32 product that the
ranker would compute, proved from the quantisation residuals (Cauchy–Schwarz, plus float32's own
rounding of a dot product), not estimated. Every record whose exact score could change a decision
of `select` is then scored again in float32, exactly as the whole product scores it:

- the step signal's shortlist: every record whose partial total (semantic, lexical, exact) is
  too close to the shortlist's last one to say whether it is in (`Index.shortlist` breaks ties by
  position, so that both reads pick the same records), and, when the body signal is weighed, every
  shortlisted one;
- the injected ones: every record that could be eligible and whose total could reach the cap-th
  eligible total (less the priority margin);
- with `k`, the diagnostics: every record whose total could reach the k-th, and, for the semantic
  rank of those shown, every record whose semantic score is within the bound of theirs or of the
  semantic floor;
- every producer of a coding procedure (a pulled-in producer is chosen by its total).

The selected procedures, their order and every score `select` reports are then the float32 path's;
the others keep their approximate semantic score, which decides nothing. `Index.rank` (the whole
explained ranking) always reads the float32 blocks.

Every float32 product here is computed the same way to the bit, whichever rows are read: numpy's
einsum sums each row's dot product by one loop, in one thread, whatever rows are read with it
(`whole_products`, `row_products`), so a record's appliesWhen and another's clause of the same text
tie exactly in both reads. (BLAS, used before, computes a product of several rows four at a time and
a thread's last rows by another loop, which can differ in the last bit; its threads also wait for a
busy core on a shared machine. A product by einsum can differ from BLAS's in its last bits:
tests/library/test_selection_eval.py ranks every labelled task both ways.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .selection import SelectionConfig, Signals

if TYPE_CHECKING:
    from .embedding_cache import EmbeddingCache

UNIT_ROUNDOFF = 2.0**-24  # float32


class Index(Protocol):
    """What the quantised read uses of a ranking.Index (the index itself is not imported here: it
    uses this module, not the other way round)."""

    config: SelectionConfig
    _cache: EmbeddingCache
    matrix_blocks: list[np.ndarray]
    quantised: QuantisedBlocks | None
    distinct_steps: int
    producer_rows: np.ndarray
    has_priorities: bool

    def shortlist(self, values: np.ndarray, limit: int) -> np.ndarray: ...
    def cross_lingual_scores(self, task: str) -> np.ndarray | None: ...
    def lexical_scores(self, task: str) -> np.ndarray: ...
    def exact_scores(self, task: str) -> np.ndarray: ...
    def step_and_body_scores(self, *args: Any, **kwargs: Any) -> Any: ...
    def area_scores(self, *args: Any, **kwargs: Any) -> np.ndarray | None: ...
    def clause_scores(self, *args: Any, **kwargs: Any) -> np.ndarray | None: ...
    def amount_scores(self, *args: Any, **kwargs: Any) -> np.ndarray | None: ...
    def clause_lexical_scores(self, *args: Any, **kwargs: Any) -> np.ndarray | None: ...
    def third_scores(self, *args: Any, **kwargs: Any) -> np.ndarray | None: ...
    def _weighted(self, *args: Any, **kwargs: Any) -> np.ndarray: ...
    def signals(self, *args: Any, **kwargs: Any) -> Signals: ...
    def totals(self, *args: Any, **kwargs: Any) -> np.ndarray: ...
    def eligibility(self, *args: Any, **kwargs: Any) -> np.ndarray: ...
    def order(self, *args: Any, **kwargs: Any) -> Any: ...


def simsimd_module() -> Any | None:
    """SimSIMD when installed (the client's `[fast]` extra), else None: the quantised read is then off."""
    try:
        import simsimd  # the [fast] extra
    except ImportError:
        return None
    return simsimd


def products(blocks: list[np.ndarray], vector: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """`matrix @ vector` (only `rows` of it when given) for a matrix kept as column blocks: a block
    whose part of the vector is all zeros adds nothing and is not read. With one block filled the
    products are that block's, the same values as the whole matrix's (the zeros add exact zeros;
    tests/library/test_selection_eval.py compares rankings both ways). Selected rows are scored
    `ROW_GROUP` at a time, in one thread (module docstring)."""
    if sum(block.shape[1] for block in blocks) != vector.shape[0]:
        widths = sum(block.shape[1] for block in blocks)
        raise ValueError(f"a query vector of {vector.shape[0]} dimensions against vectors of {widths}")
    parts, start = [], 0
    for block in blocks:
        part = vector[start : start + block.shape[1]]
        start += block.shape[1]
        if part.any():
            parts.append((block, part))
    if not parts:  # a zero vector: every product 0
        return np.zeros(blocks[0].shape[0] if rows is None else rows.size, dtype=np.result_type(vector, np.float32))
    read = whole_products if rows is None else (lambda block, part: row_products(block, part, rows))
    total = read(*parts[0])
    for block, part in parts[1:]:
        total = total + read(block, part)
    return total


def whole_products(block: np.ndarray, part: np.ndarray) -> np.ndarray:
    """`block @ part`, each row's dot product summed by the same loop whatever rows are read with
    it (`row_products` gives the same values to the bit; module docstring)."""
    return np.einsum("ij,j->i", block, part)


def row_products(block: np.ndarray, part: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """`block[rows] @ part`, each row's product the same to the bit as `whole_products` gives it: the
    rows gathered, then one product over them."""
    return np.einsum("ij,j->i", np.take(block, rows, axis=0), part)


# OpenBLAS multiplies in one thread when rows × columns × depth is at most this (65,536 × its
# GEMM_MULTITHREAD_THRESHOLD of 4); `nearest_products` keeps each product under it
ONE_THREAD_PRODUCT = 262_144


def nearest_products(block: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Each row's largest product with any of `queries` (`(block @ queries.T).max(axis=1)`), in
    products small enough for BLAS to compute in one thread: a second BLAS thread waits for a core,
    and on a shared machine a few-millisecond product took tens of milliseconds for that (the
    cross-lingual word credits: the set's words against a task's). A product can differ from the
    whole one in its last bits; the same shapes give the same values."""
    if block.shape[0] == 0 or queries.shape[0] == 0:
        return np.full(block.shape[0], -np.inf, dtype=np.result_type(block, queries))
    rows = max(1, ONE_THREAD_PRODUCT // (queries.shape[0] * block.shape[1]))
    transposed = np.ascontiguousarray(queries.T)
    best = np.empty(block.shape[0], dtype=np.result_type(block, queries))
    for first in range(0, block.shape[0], rows):
        np.max(block[first : first + rows] @ transposed, axis=1, out=best[first : first + rows])
    return best


# from this many rows on, a whole product runs in a thread of its own while the caller computes
# the other signals (`Beside`): numpy's einsum releases the GIL, and a product this large is bound
# by memory reads, which leave the other core free; below it, starting a thread costs more than it saves
BESIDE_FROM = 20_000


class Beside:
    """`function()` computed in a thread of its own when `apart`, else at once; `result()` waits for
    it and returns it (or raises what it raised). The values are the same either way."""

    def __init__(self, function: Callable[[], Any], *, apart: bool) -> None:
        self._result: Any = None
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None
        if apart:
            self._thread = threading.Thread(target=self._run, args=(function,), daemon=True)
            self._thread.start()
        else:
            self._run(function)

    def _run(self, function: Callable[[], Any]) -> None:
        try:
            self._result = function()
        except BaseException as error:  # handed to the caller by result()
            self._error = error

    def result(self) -> Any:
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


class QuantisedBlocks:
    """An index's appliesWhen column blocks as int8 codes, row by row: row ≈ scale × codes, with
    each block's largest residual norm ‖row − scale × codes‖ and largest row norm, which bound the
    error of a quantised product (`approximate`)."""

    def __init__(self, blocks: list[np.ndarray], simsimd: Any) -> None:
        self._simsimd = simsimd
        self.codes: list[np.ndarray] = []
        self.scales: list[np.ndarray] = []
        self.largest_residual: list[float] = []
        self.largest_norm: list[float] = []
        for block in blocks:
            codes = np.empty(block.shape, dtype=np.int8)
            scales = np.empty(block.shape[0], dtype=np.float64)
            residual, norm = 0.0, 0.0
            for first in range(0, block.shape[0], 8192):  # a few MiB of float64 at a time
                rows = block[first : first + 8192].astype(np.float64)
                scale = np.abs(rows).max(axis=1, initial=0.0) / 127.0
                scale[scale == 0] = 1.0
                chunk = np.clip(np.rint(rows / scale[:, None]), -127, 127)
                codes[first : first + 8192] = chunk
                scales[first : first + 8192] = scale
                if rows.size:
                    residual = max(residual, float(np.linalg.norm(rows - chunk * scale[:, None], axis=1).max()))
                    norm = max(norm, float(np.linalg.norm(rows, axis=1).max()))
            self.codes.append(codes)
            self.scales.append(scales)
            self.largest_residual.append(residual)
            self.largest_norm.append(norm)

    def nbytes(self) -> int:
        return int(sum(c.nbytes + s.nbytes for c, s in zip(self.codes, self.scales)))

    def approximate(self, vector: np.ndarray) -> tuple[np.ndarray, float]:
        """Every row's product with `vector` from the int8 codes (float64), and a bound on its distance
        from the float32 product that `products` computes. With row x = s·c + e and the task's part
        q = t·p + f (p its int8 codes): x·q − s·t·(c·p) = e·q + x·f − e·f, at most
        ‖e‖‖q‖ + ‖x‖‖f‖ + ‖e‖‖f‖; float32's dot product adds at most γ‖x‖‖q‖ (γ = d·u / (1 − d·u)),
        and the sum of two blocks' products one rounding more."""
        n = self.codes[0].shape[0]
        total = np.zeros(n, dtype=np.float64)
        bound, scale_of_sum, start = 0.0, 0.0, 0
        for codes, scales, residual, norm in zip(self.codes, self.scales, self.largest_residual, self.largest_norm):
            part = vector[start : start + codes.shape[1]].astype(np.float64)
            start += codes.shape[1]
            if not part.any():
                continue
            step = float(np.abs(part).max()) / 127.0
            query = np.clip(np.rint(part / step), -127, 127)
            left = float(np.linalg.norm(part - query * step))
            length = float(np.linalg.norm(part))
            # an int8 dot product over at most 1,040 columns is whole and below 2**24: exact in float32
            whole = "float32" if codes.shape[1] * 127 * 127 < 2**24 else "float64"
            dots = np.asarray(
                self._simsimd.cdist(query.astype(np.int8)[None, :], codes, metric="dot", out_dtype=whole)
            )[0]
            total += dots * (scales * step)
            width = codes.shape[1]
            gamma = width * UNIT_ROUNDOFF / (1 - width * UNIT_ROUNDOFF)
            bound += residual * length + norm * left + residual * left + gamma * norm * length
            scale_of_sum += norm * length
        return total, bound + UNIT_ROUNDOFF * scale_of_sum


def quantised_signals(
    index: Index,
    *,
    task: str,
    candidates: np.ndarray,
    vector: np.ndarray,
    cap: int,
    k: int | None,
    third_vector: np.ndarray | None = None,
) -> tuple[Signals, int]:
    """`index.signals` for `select`, the semantic scores read through the int8 codes and read again
    in float32 wherever they can change what `select` returns (module docstring); also how many
    records were read again. Same candidates and step shortlist as `index.signals`; `select`'s
    totals, eligibility, order and diagnostics over these signals are the float32 path's. `third_vector`:
    a routed backend's third model's part of the task's vector (Index.third_scores reads it exactly,
    for the same step shortlist as the float32 path)."""
    quantised = index.quantised
    assert quantised is not None
    cache, config = index._cache, index.config
    exact_dtype = np.asarray(cache.calibrate(np.zeros(1, dtype=np.result_type(vector, np.float32)))).dtype
    low, high = (float(v) for v in np.asarray(cache.calibrate(np.array([0.0, 1.0])), dtype=np.float64))
    approximate, bound = quantised.approximate(vector)
    # the calibrated bound, with room for float32 holding an approximate score
    delta = bound * abs(high - low) + 64 * UNIT_ROUNDOFF * (1.0 + abs(low) + abs(high))
    semantic = np.asarray(cache.calibrate(approximate), dtype=np.float64)[candidates].astype(exact_dtype)
    read = np.zeros(candidates.size, dtype=bool)

    def read_again(positions: np.ndarray) -> None:
        positions = positions[~read[positions]]
        if positions.size:
            semantic[positions] = cache.calibrate(products(index.matrix_blocks, vector, candidates[positions]))
            read[positions] = True

    if index.producer_rows.size:
        read_again(np.flatnonzero(np.isin(candidates, index.producer_rows)))
    across = index.cross_lingual_scores(task)
    lexical = (index.lexical_scores(task) if across is None else across)[candidates]
    exact = index.exact_scores(task)[candidates]
    weights = config.weights()
    step = np.full(candidates.size, np.nan, dtype=np.float64)
    body = np.full(candidates.size, np.nan, dtype=np.float64)
    chosen = None
    if config.use_steps and index.distinct_steps:
        limit = config.step_shortlist
        if candidates.size <= limit:
            chosen = np.arange(candidates.size)
            read_again(chosen)
        else:
            nothing = np.zeros(candidates.size)
            partial_weights = {**weights, "step": 0.0, "body": 0.0}

            def partial() -> np.ndarray:
                return index._weighted(semantic, lexical, exact, nothing, nothing, partial_weights)

            # each partial total is within `half` of its float32 value, so the shortlist's last
            # float32 total T is within `half` of the limit-th largest estimate; a record more than
            # 2 × half above that is above T (in), one more than 2 × half below is under T (out),
            # and the ones between are read again
            half = weights["semantic"] * delta
            estimate = partial()
            reach = np.partition(estimate, candidates.size - limit)[candidates.size - limit]
            sure = ~read & (estimate > reach + 2 * half)
            read_again(np.flatnonzero(~read & ~sure & (estimate >= reach - 2 * half)))
            # the rest of the shortlist: the best read records, ties broken by position (ascending,
            # as Index.shortlist breaks them)
            among = np.flatnonzero(read)
            rest = limit - int(sure.sum())
            best = among[index.shortlist(partial()[among], rest)] if rest > 0 else among[:0]
            chosen = np.sort(np.concatenate((np.flatnonzero(sure), best)))
        if weights["body"]:  # the body score is the mean of the semantic score and the steps' scores
            read_again(chosen)
        step[chosen], body[chosen] = index.step_and_body_scores(candidates[chosen], vector, semantic[chosen])
    signals = Signals(
        candidates,
        semantic,
        lexical,
        exact,
        step,
        body,
        area=index.area_scores(task, candidates),
        clause=index.clause_scores(candidates, semantic, vector),
        amount=index.amount_scores(task, candidates),
        clause_lexical=index.clause_lexical_scores(task, candidates, lexical),
        third=index.third_scores(candidates, third_vector, chosen),
    )

    def current_totals() -> np.ndarray:
        if signals.clause is not None:  # a record without clauses orders by its semantic score, read again or not
            signals.clause = index.clause_scores(candidates, semantic, vector)
        return index.totals(signals)

    _read_what_decides(index, signals, read, read_again, current_totals, delta, cap, k)
    current_totals()
    return signals, int(read.sum())


def _read_what_decides(
    index: Index,
    signals: Signals,
    read: np.ndarray,
    read_again: Callable[[np.ndarray], None],
    current_totals: Callable[[], np.ndarray],
    delta: float,
    cap: int,
    k: int | None,
) -> None:
    """Reads again in float32 every record whose exact semantic score could change the injected
    records or the first k of the order and their semantic ranks (module docstring). A record not
    read again has a total within `spread` of its exact one, and is eligible by its upper bound and
    surely eligible by its lower one."""
    config = index.config
    margin = np.where(read, 0.0, delta)
    spread = index.config.semantic_weight * delta
    epsilon = config.priority_epsilon if index.has_priorities else 0.0
    totals = current_totals()
    semantic = signals.semantic.astype(np.float64)

    def shifted(by: np.ndarray) -> np.ndarray:
        return index.eligibility(
            Signals(
                signals.candidates,
                semantic + by,
                signals.lexical,
                signals.exact,
                signals.step,
                signals.body,
                signals.area,
            )
        )

    def reach(values: np.ndarray, m: int) -> float:
        """The m-th largest of values (−inf when fewer)."""
        return -np.inf if values.size < m else float(np.partition(values, values.size - m)[values.size - m])

    wanted = []
    if cap > 0:  # the injected: the first `cap` eligible ones
        surely = reach(totals[shifted(-margin)], cap)
        wanted.append(shifted(margin) & (totals >= surely - 2 * spread - epsilon))
    if k is not None:  # the diagnostics: the first k of every candidate
        wanted.append(totals >= reach(totals, k) - 2 * spread - epsilon)
    if not wanted:
        return
    read_again(np.flatnonzero(np.logical_or.reduce(wanted)))
    if k is None:
        return
    # the semantic rank of a shown record at the floor counts the records at the floor above it
    values = signals.semantic.astype(np.float64)
    shown = values[index.order(signals, current_totals(), None, k)]
    floor = config.semantic_floor
    ranked = shown[(shown >= floor) & (shown > 0)]
    if ranked.size:
        could_pass = (values + delta >= floor) & (values + delta > 0)
        near = np.zeros(values.size, dtype=bool)
        for anchor in [0.0, floor, *ranked.tolist()]:
            near |= np.abs(values - anchor) <= delta
        read_again(np.flatnonzero(near & could_pass & ~read))
