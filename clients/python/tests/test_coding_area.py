"""The area signal of coding procedures (procmem_client/coding.py AreaIndex, ranking.py): a task that
names a family's modules and identifiers ranks that family first and makes it eligible; customer-facing
procedures are ranked exactly as before."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from procmem_client.coding import AREA_PREFIX, AreaIndex, area_terms, record_repository, task_area_terms
from procmem_client.ranking import EmbeddingCache, Ranker, SelectionConfig


def family(key: str, area: str, written: list[str], tests: list[str] = ()) -> dict:
    """A family candidate as measure.served_record serves it (library/coding/families.py)."""
    return {
        "id": key,
        "version": 1,
        "status": "active",
        "intent": None,
        "appliesWhen": f"A task whose fix is in {area}/ (family {area}). Resolved tasks changed {', '.join(written)}.",
        "steps": [f"Search {area}/ for the symbol named in the issue.", "Run the tests: pytest {{test_file}}."],
        "requiredTools": [],
        "forbiddenActions": [],
        "preconditions": [f"Test of this area: {path}." for path in tests],
        "postconditions": [
            *(f"Changed: {path}." for path in written),
            "The verify command passes: pytest {{test_file}}",
        ],
        "verifyCommand": "pytest {{test_file}}",
        "evidence": {},
        "approvedBy": None,
        "approvedAt": None,
    }


AUTODOC = family(
    "fix.sphinx.ext.autodoc",
    "sphinx/ext/autodoc",
    ["sphinx/ext/autodoc/__init__.py", "sphinx/ext/autodoc/typehints.py"],
    ["tests/test_ext_autodoc_configs.py"],
)
DOMAINS = family("fix.sphinx.domains", "sphinx/domains", ["sphinx/domains/python.py", "sphinx/domains/std.py"])
BUILDERS = family("fix.sphinx.builders", "sphinx/builders", ["sphinx/builders/linkcheck.py"])
PRINTING = family("fix.sympy.printing", "sympy/printing", ["sympy/printing/str.py", "sympy/printing/latex.py"])
MATRICES = family("fix.sympy.matrices", "sympy/matrices", ["sympy/matrices/common.py"])
REFUND = {
    "id": "refund.over_limit",
    "version": 1,
    "status": "active",
    "intent": "refund",
    "appliesWhen": "A refund above the limit (see policies/refunds/limits.md).",
    "steps": ["Create an approval."],
    "requiredTools": ["createApproval"],
    "forbiddenActions": [],
    "evidence": {},
    "approvedBy": None,
    "approvedAt": None,
}


def flat_ranker(config: SelectionConfig | None = None) -> Ranker:
    """Every text on one axis and the tasks on another: no semantic signal, so the order is the
    lexical, exact and area retrievers'."""

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray([[0.0, 1.0] if t.startswith("TASK") else [1.0, 0.0] for t in texts], dtype=np.float32)

    return Ranker(cache=EmbeddingCache(embed), config=config or SelectionConfig(use_steps=False))


def test_area_words_are_the_named_paths_directories_and_file_names_cut_to_a_prefix():
    terms = area_terms(AUTODOC)
    assert {"sphin", "ext", "autod", "typeh"} <= terms
    assert "tests" not in terms and "test" not in terms and "init" not in terms  # where tests live, not the area
    assert {"confi"} <= terms  # tests/test_ext_autodoc_configs.py: its file name's pieces
    assert area_terms(REFUND) == frozenset()  # not a coding procedure


def test_a_tasks_area_words_are_its_identifiers_pieces():
    terms = task_area_terms("`autodoc_typehints` is ignored by StrPrinter in sympy/printing/str.py; Matrix too")
    assert {"autod", "typeh", "str", "print", "sympy", "matri"} <= terms
    # printing/ and Printer, matrices/ and Matrix meet: the stem cut to AREA_PREFIX letters
    assert "print" in area_terms(PRINTING) and "matri" in area_terms(MATRICES)
    # two letters are a piece too: ".. py:method::" meets tests/test_domain_py.py, "db" meets django/db/
    domain = family("fix.sphinx.domains", "sphinx/domains", ["sphinx/domains/python.py"], ["tests/test_domain_py.py"])
    assert "py" in task_area_terms(".. py:method:: f") and "py" in area_terms(domain)
    assert "x" not in task_area_terms("x = 1")  # one letter is not


def test_a_word_only_one_family_carries_counts_more_than_one_every_family_carries():
    index = AreaIndex([AUTODOC, DOMAINS, BUILDERS, REFUND])
    scores = index.scores("sphinx autodoc")
    assert set(scores) == {0, 1, 2}  # every family carries "sphinx"; the refund procedure none
    assert scores[0] > scores[1] == scores[2] > 0
    assert index.matched("sphinx autodoc")[0] == ["autod", "sphin"]


def test_the_family_whose_area_the_issue_names_comes_first_and_is_eligible():
    index = flat_ranker().index([DOMAINS, BUILDERS, AUTODOC])
    task = "TASK autodoc_typehints = 'description' puts a return type on autoclass"
    selection = index.select(task=task, cap=1)
    assert [r["id"] for r in selection["injected"]] == ["fix.sphinx.ext.autodoc"]
    explained = index.rank(task=task, cap=1)
    assert explained[0]["scores"]["area"] > 0 and any("names its area" in r for r in explained[0]["reasons"])
    # an issue naming nothing of any family's area recalls nothing, as before
    assert flat_ranker().index([DOMAINS, BUILDERS, AUTODOC]).select(task="TASK It is broken.", cap=2)["injected"] == []


def test_without_weight_and_floor_the_area_changes_nothing():
    records = [DOMAINS, BUILDERS, AUTODOC]
    task = "TASK autodoc_typehints is ignored"
    off = flat_ranker(SelectionConfig(use_steps=False, area_weight=0.0, area_floor=float("inf")))
    assert off.index(records).select(task=task, cap=1)["injected"] == []  # as before the area signal
    assert [r["id"] for r in flat_ranker().index(records).select(task=task, cap=1)["injected"]] == [
        "fix.sphinx.ext.autodoc"
    ]
    index = off.index(records)
    signals = index.signals(task=task)
    plain = index._weighted(
        signals.semantic, signals.lexical, signals.exact, signals.step, signals.body, index.config.weights()
    )
    np.testing.assert_allclose(index.totals(signals), plain)


def test_a_set_without_coding_procedures_has_no_area_signal():
    index = flat_ranker().index([REFUND])
    signals = index.signals(task="TASK refunds limits policies")
    assert index.area_index is None and signals.area is None
    assert "area" not in index.rank(task="TASK refunds limits policies")[0]["scores"]


_TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=200) | st.lists(
    st.sampled_from(["autodoc", "_typehints", "StrPrinter", "sympy/core/expr.py", "ß", "İ", "__init__", "a.b", " "]),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(first=_TEXT, second=_TEXT)
def test_area_scores_of_any_text(first, second):
    """Any text gives lower-case ASCII keys of at most AREA_PREFIX letters, scores only coding
    procedures, never below zero, and more text never lowers a score (the words are a set)."""
    terms = task_area_terms(first)
    assert all(t.isascii() and t == t.lower() and 0 < len(t) <= AREA_PREFIX for t in terms)
    index = AreaIndex([AUTODOC, REFUND, PRINTING, DOMAINS])
    scores = index.scores(first)
    assert 1 not in scores and all(score > 0 for score in scores.values())
    more = index.scores(first + " " + second)
    assert all(more.get(position, 0.0) >= score - 1e-12 for position, score in scores.items())


def of_repository(record: dict, repository: str) -> dict:
    """A family as mined: its evidence names its repository (families.build_candidate)."""
    return {**record, "evidence": {"family": {"repository": repository, "area": "", "key": ""}}}


SETS = of_repository(family("fix.sympy.sets", "sympy/sets", ["sympy/sets/sets.py"]), "sympy/sympy")
QUERY = of_repository(
    family("fix.django.db", "django/db", ["django/db/models/query.py", "django/db/models/sql/query.py"]),
    "django/django",
)
ADMIN = of_repository(
    family("fix.django.contrib.admin", "django/contrib/admin", ["django/contrib/admin/options.py"]), "django/django"
)


def test_a_family_records_its_repository():
    assert record_repository(SETS) == "sympy/sympy" and record_repository(AUTODOC) == ""
    assert record_repository({**REFUND, "evidence": {"family": "x"}}) == ""


def test_a_task_that_names_its_repository_is_not_area_matched_with_another_repositorys_family():
    index = AreaIndex([SETS, QUERY, ADMIN, AUTODOC])
    # "set" is sympy/sets' area word; a Django issue that says Django is not about it
    django_task = "Django: QuerySet.set() of a related manager ignores the admin's changes"
    assert 0 not in index.scores(django_task) and {1, 2} <= set(index.scores(django_task))
    assert index.named_repositories(django_task) == {1, 2}
    # a family that records no repository (written by hand) counts for any task
    assert 3 in index.scores(django_task + " autodoc")
    # a task naming no repository, or a set of one repository, is scored as before
    assert 0 in index.scores("QuerySet.set() of a related manager ignores changes")
    alone = AreaIndex([SETS, AUTODOC])
    assert alone.scores("SymPy: Interval.set is wrong") == AreaIndex(
        [family("s", "sympy/sets", ["sympy/sets/sets.py"]), AUTODOC]
    ).scores("SymPy: Interval.set is wrong")
    # the name is a piece of the task's identifiers: SymPy, sympy.sets, "from sympy import S"
    assert index.named_repositories("from sympy import S") == {0}
    assert index.named_repositories("SymPy's Interval") == {0}


def test_a_named_repositorys_family_comes_first_across_repositories():
    task = "TASK Django: model_set() drops rows"
    # without the repositories, "set" and "django" weigh the same and the sympy family comes first
    unrecorded = flat_ranker().index([{**SETS, "evidence": {}}, {**ADMIN, "evidence": {}}])
    assert [r["id"] for r in unrecorded.select(task=task, cap=1)["injected"]] == ["fix.sympy.sets"]
    # with them, the task names Django: the sympy family's area does not count, nor make it eligible
    index = flat_ranker().index([SETS, ADMIN])
    assert [r["id"] for r in index.select(task=task, cap=2)["injected"]] == ["fix.django.contrib.admin"]
    assert index.rank(task=task, cap=2)[-1]["scores"]["area"] == 0
