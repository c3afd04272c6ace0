"""The policy screen's required strings (library/policy/literals.py): a pattern or concept is not
searched in a text that holds none of the strings every match of it holds. Checked here: the strings
of every pattern hold for generated matches of it (Hypothesis), the screen finds the same with and
without them on generated texts and on every text the screen reads in a mining run of the real
sessions, and the case-folding claim the look-up rests on, over all of Unicode."""

from __future__ import annotations

import io
import re
import sys

import pytest
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library.policy import concepts as policy_concepts
from library.policy import literals
from library.policy import rules as policy
from library.policy.literals import Literals, required
from tests.conftest import SWEBENCH_DIR, SWEBENCH_RESULTS, SWEBENCH_TRAJS, _missing, require_swebench

# (the look-up, its key, the compiled pattern) of every pattern and every language's concepts
PATTERNS = [
    (policy._literals(), (category, index), pattern)
    for category, _reason, patterns in policy._COMPILED
    for index, pattern in enumerate(patterns)
] + [
    (policy_concepts._literals(language), name, pattern)
    for language in policy_concepts.LANGUAGES
    for name, pattern in language.concepts.items()
]


def test_required_strings_of_a_few_patterns():
    assert required(r"\b(skip|bypass\w*)\b") == {"skip", "bypass"}
    assert required(r"(ohne|ignorier(e|en)?)") == {"ohne", "ignorier", "ignoriere", "ignorieren"}
    assert required(r"\bv[ée]rification", re.IGNORECASE) == {"vérification", "verification"}
    assert required(r"\bWITHOUT\b", re.IGNORECASE) == {"without"}
    # nothing every match holds: searched always
    assert required(r"\w+") is None
    assert required(r"(a|\w)b?") is None
    assert required(r"x?") is None
    # every pattern of the screen has strings
    assert all(look_up._required[key] for look_up, key, _pattern in PATTERNS)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.data())
def test_every_match_of_a_pattern_holds_one_of_its_strings(data):
    look_up, key, pattern = data.draw(st.sampled_from(PATTERNS))
    text = data.draw(st.from_regex(pattern))
    for seen in (text, text.lower()):
        if pattern.search(seen):
            assert look_up.may_match(key, look_up.found(seen)), (key, seen)


def _unfiltered(monkeypatch) -> None:
    monkeypatch.setattr(Literals, "may_match", lambda self, key, found: True)


def _screened(texts, monkeypatch) -> tuple[list, list]:
    """The screen's findings of `texts` with the required strings, then without (every pattern searched)."""
    policy._text_findings.cache_clear()
    filtered = [policy._text_findings(text) for text in texts]
    policy._text_findings.cache_clear()
    with monkeypatch.context() as patched:
        _unfiltered(patched)
        searched = [policy._text_findings(text) for text in texts]
    policy._text_findings.cache_clear()
    return filtered, searched


# the patterns' own strings, their near misses and what may turn a substring search wrong (ı for i,
# ſ for s, upper case, the old Cyrillic forms)
_PIECES = sorted({s for look_up, key, _p in PATTERNS for s in look_up._required[key] or ()})
_WORDS = st.sampled_from(_PIECES) | st.sampled_from(
    ["ı", "ſ", "İ", "K", "\u1c80", "Skip", "not ", "never ", ", ", ". "]
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_WORDS | st.text(max_size=6), min_size=1, max_size=12).map(" ".join))
def test_the_screen_finds_the_same_with_and_without_the_required_strings(monkeypatch, text):
    filtered, searched = _screened([text], monkeypatch)
    assert filtered == searched


def test_lower_case_text_matches_case_insensitively_only_where_it_holds_the_letters():
    """What `Literals.found` rests on, over every code point: a character equal to its lower case
    matches a letter of the screen's strings case-insensitively only if it is that letter or one of
    its twins (re._casefix), which the look-up refuses."""
    letters = sorted({char for string in _PIECES for char in string})
    twins = {chr(t) for char in letters for t in literals._EXTRA_CASES.get(ord(char), ())}
    any_letter = re.compile("[" + "".join(re.escape(c) for c in letters) + "]", re.IGNORECASE)
    every_char = "".join(chr(code) for code in range(sys.maxunicode + 1))
    for char in set(any_letter.findall(every_char)):  # one pass over all code points
        assert char in letters or char in twins or char.lower() != char, hex(ord(char))
    all_letters = "".join(letters)
    for letter in letters:  # and no letter stands for another
        assert set(re.findall(re.escape(letter), all_letters, re.IGNORECASE)) == {letter}, letter


OTHER_TRAJS = SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz"
OTHER_RESULTS = SWEBENCH_DIR / "results-other-repos.json"


@pytest.mark.django_db
@pytest.mark.timeout(600)
def test_every_text_a_mining_run_of_the_real_sessions_screens_finds_the_same(monkeypatch):
    """The 140 sessions of six repositories and the 231 Django sessions, each mined as an agent: the
    texts their candidates are screened with (353 different) give the same findings either way."""
    require_swebench()
    if not OTHER_TRAJS.exists():
        _missing(f"{OTHER_TRAJS} not found")
    from library.mining.mining_runs import mining_run_execute
    from library.models import Agent

    screened: list[str] = []
    screen_text = policy.screen_text
    monkeypatch.setattr(policy, "screen_text", lambda text, field: screened.append(text) or screen_text(text, field))
    for archive, results, name in ((OTHER_TRAJS, OTHER_RESULTS, "other"), (SWEBENCH_TRAJS, SWEBENCH_RESULTS, "django")):
        call_command(
            "import_sessions",
            str(archive),
            "--format",
            "mini-swe-agent",
            "--outcomes",
            str(results),
            "--agent",
            name,
            "--create-agent",
            "--no-progress",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )
        mining_run_execute(agent=Agent.objects.get(name=name))
    texts = sorted(set(screened))
    assert len(texts) >= 300
    filtered, searched = _screened(texts, monkeypatch)
    assert filtered == searched
