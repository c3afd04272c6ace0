"""What a selection is: the configuration that shapes it (eligibility floors, ranking weights,
the near-tie margin that priority breaks) and the records it returns (docs/selection.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

if TYPE_CHECKING:
    import numpy as np

MAX_K = 20  # the agent API's diagnostic limit; Index.rank has none
# Totals this close count as a near-tie, which priority breaks. The totals of requests for a
# procedure spread over about 0.3–1.5, so 0.02 is well under the gap between a fitting and a
# merely related procedure (docs/selection.md).
PRIORITY_EPSILON = 0.02
RETRIEVERS = ("semantic", "lexical", "exact", "step")


@dataclass(frozen=True)
class SelectionConfig:
    """Eligibility floors and ranking weights.

    Floors (eligibility only) trade recall for precision; on the tau2-bench labelled set they do not
    separate well: the relevant procedure's semantic score has a median of 0.36 (a quarter below
    0.25), and requests of another domain reach 0.29 at the median and 0.43 at the 90th percentile.
    With these defaults 43–49 % of requests get a relevant procedure injected and 27 % of another
    domain's requests get one (docs/selection.md, "What reaches the agent"). Weights (order only):
    chosen on the tau2-bench labelled set (tests/library/data/tau2_selection/, docs: "Selection") —
    tuned on one part and checked on the other."""

    semantic_floor: float = 0.35
    lexical_floor: float = 0.50
    exact_floor: int = 1
    lexical_needs_semantic: float = 0.30
    semantic_weight: float = 1.0
    lexical_weight: float = 0.5
    exact_weight: float = 1.0
    step_weight: float = 0.1
    # the body signal (ranking.py), off: it raised the multilingual set's tuning split (mean
    # non-English top-1 0.34 -> 0.46 at 1.5) and lowered its held-out split, English included
    # (0.60 -> 0.50; docs/selection.md, "Selection in the customer's language")
    body_weight: float = 0.0
    # the lexical retriever across languages (ranking.py): a task word at this cosine of the
    # multilingual word model or below does not count, at 1 it counts whole; chosen on the
    # multilingual set's tuning split (docs/selection.md, "Selection in the customer's language")
    cross_lingual: bool = True
    cross_lingual_floor: float = 0.5
    # conditions of the appliesWhen (procmem_client/conditions.py), order only: a record with several
    # clauses ranks by its weakest clause's semantic score; a task amount in a money range the
    # appliesWhen names adds amount_weight. Chosen on tau2 airline, the multilingual tuning split
    # and the (not blind) paraphrase set (docs/selection.md, "Conditions: clauses and amounts")
    clause_match: bool = True
    amount_weight: float = 0.2
    # the lexical score per clause (clause_lexicon.py), order only: a record with several clauses
    # enters the order with its weakest clause's lexical score too; chosen on the same tuning data
    # (docs/selection.md, "Conditions: clauses and amounts", fourth round)
    clause_lexical: bool = True
    # a routed backend's third model (embeddings.RoutedBackend, the default's e5-small): its
    # weakest-clause cosine with the task (calibrated, negative as 0) adds this weight × it to the
    # total, order only; no signal with a backend of two models or one. Chosen on tau2 airline and
    # the multilingual tuning split (docs/selection.md, "A third model's weakest clause")
    third_model_weight: float = 0.5
    use_steps: bool = True
    step_shortlist: int = 1000
    # the area signal of coding procedures (coding.AreaIndex; 0 for every other procedure): a score s
    # adds area_weight × s / (s + 1) to the total, and s ≥ area_floor makes the procedure eligible;
    # chosen leaving one repository out on the SWE-bench sessions of issue 38 (docs/mining.md)
    area_weight: float = 3.0
    area_floor: float = 1.0
    priority_epsilon: float = PRIORITY_EPSILON
    # `select` over at least this many candidates reads the semantic scores through int8 copies of
    # the appliesWhen vectors (SimSIMD, the client's `[fast]` extra) and reads again in float32 every
    # record that could change its result: the same selection, order and reported scores
    # (procmem_client/semantic_read.py; docs/selection.md, "Speed"). None (the default), below it,
    # or without SimSIMD: every score read in float32. Off by default because over 100,000
    # procedures it changed select's own work by −16 % to +2 % on these machines, within their
    # noise, for 87 MiB more (bench/RESULTS.md, issue 41).
    quantised_from: int | None = None

    def __post_init__(self) -> None:
        if not (self.priority_epsilon >= 0):
            raise ValueError("SelectionConfig.priority_epsilon must be 0 or more")
        for name in (
            "semantic_weight",
            "lexical_weight",
            "exact_weight",
            "step_weight",
            "body_weight",
            "area_weight",
            "amount_weight",
            "third_model_weight",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"SelectionConfig.{name} must be 0 or more")
        if not (0.0 <= self.cross_lingual_floor < 1.0):
            raise ValueError("SelectionConfig.cross_lingual_floor must be at least 0 and below 1")
        if self.quantised_from is not None and self.quantised_from < 0:
            raise ValueError("SelectionConfig.quantised_from must be 0 or more")
        if self.step_shortlist < 1:
            raise ValueError("SelectionConfig.step_shortlist must be at least 1")

    def weights(self) -> dict[str, float]:
        return {
            "semantic": self.semantic_weight,
            "lexical": self.lexical_weight,
            "exact": self.exact_weight,
            "step": self.step_weight if self.use_steps else 0.0,
            "body": self.body_weight if self.use_steps else 0.0,
        }


class Scores(TypedDict):
    semantic: float
    lexical: float
    exact: int


class Ranks(TypedDict):
    semantic: int | None
    lexical: int | None
    exact: int | None


class RankedCandidate(TypedDict):
    """One candidate as the agent API's diagnostics (`k`) show it (API v1 fields)."""

    id: str
    version: int
    intent: str | None
    scores: Scores
    ranks: Ranks
    fused: float
    eligible: bool
    injected: bool


class Explained(TypedDict):
    """One candidate of a full ranking: every signal raw and normalised, its rank per retriever
    (among the candidates at or above that retriever's floor), the weighted total and why it is
    or is not eligible."""

    position: int
    id: str
    version: int
    intent: str | None
    record: dict[str, Any]
    scores: dict[str, float]
    normalised: dict[str, float]
    ranks: dict[str, int | None]
    total: float
    eligible: bool
    reasons: list[str]
    injected: bool
    matched_identifiers: list[str]


class PulledIn(TypedDict):
    id: str
    version: int
    forId: str  # the injected procedure that consumes what it produces
    artefacts: list[str]


class Selection(TypedDict):
    task: str
    intent: str | None
    cap: int
    injected: list[dict[str, Any]]
    ranked: list[RankedCandidate]
    pulledIn: NotRequired[list[PulledIn]]


@dataclass
class Signals:
    """Every candidate's raw scores for one task (arrays aligned with `candidates`, positions in
    the index's records). `step` and `body` are NaN where the step signal was not computed.
    `clause` (the semantic score the order uses: the weakest clause's, `conditions.clauses`) and
    `amount` (1 when a money amount of the task falls in a range the appliesWhen names) order
    only, and so does `clause_lexical` (the weakest clause's lexical score); None when the index
    has nothing for them (then the order uses `semantic` and `lexical`, and no amount)."""

    candidates: np.ndarray
    semantic: np.ndarray
    lexical: np.ndarray
    exact: np.ndarray
    step: np.ndarray
    body: np.ndarray
    area: np.ndarray | None = None  # coding procedures' area scores (coding.AreaIndex); None without any
    clause: np.ndarray | None = None
    amount: np.ndarray | None = None
    clause_lexical: np.ndarray | None = None  # the lexical score the order uses (the weakest clause's)
    # a routed backend's third model's weakest-clause calibrated cosine (Index.third_scores), order
    # only; None without a third model or with its weight 0
    third: np.ndarray | None = None
    # the step shortlist's sum of the weighted semantic, lexical and exact scores under the index's
    # weights (Index.signals, when it shortlists); Index.totals continues from it; None otherwise
    partial: np.ndarray | None = None
