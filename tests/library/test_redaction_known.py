"""The faster known-values pass changes nothing (issue 38, bench/RESULTS.md): a text's features read
in one pass of one RE2 set (recognizers.FeaturePass) are the features the separate passes read, the
query-parameter gate rules out no text with a parameter, and the tool calls' arguments read once by
structure give the known values that reading them by structure and then as text gave. Each against
the form it replaced, on generated data and on the real coding sessions. No database."""

from __future__ import annotations

import json
import re
import sys
import tarfile
from typing import Any
from urllib.parse import unquote_plus

import pytest
import re2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library.redaction import echo
from library.redaction.echo import KnownValues, RedactionCache
from library.redaction.keys import (
    PERSON,
    child_labels,
    is_personal_object,
    parse_json_string,
    person_resource,
    query_param_label,
    query_params,
)
from library.redaction.recognizers import ASCII_FOLDS, FEATURE_PASS, GATES, KEYWORDS, Features, select_recognizers
from library.redaction.redactor import redactor_for_session, strings_in
from library.redaction.shapes import CAPITAL_RE
from tests.conftest import SWEBENCH_DIR, require_swebench

_ALL_WORDS = sorted(KEYWORDS._words)
_DIGIT_RE = re.compile(r"\d")


def _features_before(text: str) -> tuple:
    """What Features read before the one pass: the marks by substring searches and a digit search,
    the keywords by the keyword set on the text in lower case, the gates by the gate set."""
    marks = {char for char in "@=/" if char in text}
    if _DIGIT_RE.search(text):
        marks.add("digit")
    lowered = text.lower() if (text.isascii() or not any(char in text for char in ASCII_FOLDS)) else None
    return marks, lowered, KEYWORDS.found(lowered or ""), GATES.matching(text)


def _same_features(text: str) -> None:
    features = Features(text)
    folds = features.folds  # read before the lower case is made
    assert (features.marks, features.lowered, features.words, features.gates) == _features_before(text), text
    assert folds == (features.lowered is not None), text


def test_a_case_insensitive_keyword_letter_matches_what_lower_case_makes_that_letter():
    # every code point: RE2's case-insensitive ASCII character of a keyword matches exactly the
    # characters whose lower case is that character, but for the four of ASCII_FOLDS (which a text
    # whose keywords are read has not); no other character's lower case has another length
    characters = sorted({char for word in _ALL_WORDS for char in word})
    assert all(char.isascii() and char == char.lower() for char in characters)
    one = re2.Set.FullMatchSet()
    for char in characters:
        one.Add("(?i)" + re2.escape(char))
    one.Compile()
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue
        char = chr(code)
        lowered = char.lower()
        if char in ASCII_FOLDS:
            continue
        assert len(lowered) == 1, hex(code)
        matched = {characters[index] for index in one.Match(char) or ()}
        assert matched == ({lowered} & set(characters)), hex(code)


_PIECES = st.sampled_from(
    [
        *_ALL_WORDS,
        *(word.upper() for word in _ALL_WORDS),
        *(word.title() for word in _ALL_WORDS),
        *(word[: len(word) // 2] for word in _ALL_WORDS),
        " ",
        "\n",
        "_",
        "@",
        "=",
        "/",
        "?",
        "&",
        ";",
        "0",
        "7",
        "٣",  # Arabic-Indic three: a digit to \d, not to [0-9]
        "１",  # fullwidth one
        "é",
        "İ",
        "ı",
        "ſ",
        "\u212a",
        "ß",
        "…",
        "Anna Lee",
        "Mr",
        "hi",
        "123-45-6789",
        "\ud800",  # a lone surrogate: UTF-8 cannot encode it
    ]
)
_TEXTS = st.one_of(st.lists(_PIECES, max_size=14).map("".join), st.text(max_size=40))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS)
def test_the_one_pass_reads_the_features_the_separate_passes_read(text):
    _same_features(text)


def test_the_one_pass_reads_a_keyword_in_any_case_and_a_digit_of_any_script():
    features = Features("My NAME is Anna, born ٣")
    assert {"name", "born"} <= features.words and "digit" in features.marks
    assert FEATURE_PASS.read("x \ud800") is None  # the separate passes then, as before
    _same_features("x \ud800 name 1")


def _query_gate_holds(text: str) -> None:
    found = GATES.matching(text)
    if found is not None and any(True for _ in query_params(text)):
        assert echo._QUERY_INDEX in found, text


_QUERY_PIECES = st.sampled_from(
    ["?", "&", ";", "=", "_", "a", "Z", "name", "1", ".", "-", ":", " ", "\t", "\n", "\x0b", "\u2028", "é", "ß", "٣"]
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.lists(_QUERY_PIECES, max_size=12).map("".join), _TEXTS))
def test_the_query_gate_matches_wherever_a_query_parameter_is(text):
    _query_gate_holds(text)


_KEYS = st.sampled_from(
    ["command", "output", "path", "name", "first_name", "email", "user_id", "zip", "note", "files", "value"]
    + ["resourceType", "credit_card_1234567", "patient", "given", "birthDate", "customer", "telecom"]
)
_STRINGS = st.sampled_from(
    [
        "ls -R /testbed",
        "my name is Anna Lee",
        "Hi, this is Mia Li, zip 97201",
        "dob: 1985-03-12",
        '{"name": "Ann Lee", "email": "x.y@example.org"}',
        '["Anna Lee", "born 1970-01-01"]',
        "[master 1a2b3c] fix",
        "curl 'http://x/Patient?name=Okafor&birthdate=1966-02-14'",
        "GET /Patient?name=Ann%20Lee,Bo+Li&zip=97201 (my name is Anna Lee)",
        "Mia",
        "",
        "short",
        "Patient",
    ]
)
_LEAVES = st.one_of(
    st.integers(min_value=-5, max_value=10**6), st.none(), st.booleans(), _STRINGS, st.text(max_size=10)
)
_DATA = st.recursive(
    _LEAVES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=5),
    max_leaves=12,
)


def _collect_before(data: Any, known: KnownValues, key: str, label: str | None, personal: bool, resource) -> None:
    """echo._collect as it was: every object's labels worked out for the object, every string of
    an object read by _collect."""
    if isinstance(data, dict):
        personal_object = is_personal_object(data, key)
        resource_id = person_resource(data)
        children = child_labels(tuple(data), key, personal_object, resource_id)
        for (raw_key, value), (child, child_label, payment) in zip(data.items(), children):
            if payment:
                known.add(raw_key, "payment_id")
            if child_label is None:
                kind = type(value)
                if kind is int:
                    continue
                if kind is str and value[:1] not in ("", "{", "["):
                    _collect_from_text_before(value, known)
                    continue
            if child == "name" and isinstance(value, (dict, list)):
                child_label = None
            _collect_before(value, known, child, child_label, personal_object, resource_id)
    elif isinstance(data, list):
        for item in data:
            _collect_before(item, known, key, label, personal, resource)
    elif isinstance(data, str):
        parsed = parse_json_string(data)
        if parsed is not None:
            _collect_before(parsed, known, key, None, personal, resource)
        elif label is not None:
            known.add(data, label)
        else:
            _collect_from_text_before(data, known)
    elif label is not None and isinstance(data, (int, float)) and not isinstance(data, bool):
        known.add(data, label)


def _collect_from_text_before(text: str, known: KnownValues) -> None:
    """echo._collect_from_text, with _find_in_text as it was."""
    if len(text) < 6 or text in known.read:
        return
    known.read.add(text)
    cache = known.cache
    if cache is None:
        _find_in_text_before(text, known.add, known.features)
        return
    findings = cache.findings.get(text)
    if findings is None:
        found: list[tuple[str, str]] = []
        _find_in_text_before(text, lambda value, label: found.append((value, label)), known.features)
        findings = tuple(found)
        cache.findings[text] = findings
    for value, label in findings:
        known.add(value, label)


def _find_in_text_before(text: str, add, features_of: dict) -> None:
    """echo._find_in_text as it was: the query parameters looked for in every text with "="."""
    if "=" in text:
        for match in query_params(text):
            label = query_param_label(match)
            if label is not None and match.group(2):
                decoded = unquote_plus(match.group(2))
                add(decoded, label)
                if label == PERSON and "," in decoded:
                    for part in decoded.split(","):
                        add(part, label)
    features = Features(text)
    features_of[text] = features
    if not echo._echo_hint(text, features):
        return
    recognizers = echo._ECHOED_AND_NAMES if CAPITAL_RE.search(text) else echo._ECHOED_ONLY
    for recognizer in select_recognizers(recognizers, features):
        for match in recognizer.pattern.finditer(text):
            if recognizer.replace is not None and recognizer.replace(match) is None:
                continue
            add(match.group(recognizer.group), recognizer.label)


def _known_before(arguments: list, structured: list, texts: list, cache: RedactionCache | None) -> KnownValues:
    """redactor_for_session's known values as they were read: the arguments with the structured
    data, then the texts and every string of the arguments, each read as text."""
    known = KnownValues(cache=cache)
    for item in [*arguments, *structured]:
        _collect_before(item, known, "", None, False, None)
    for text in [*texts, *strings_in(arguments)]:
        if isinstance(text, str) and text:
            _collect_from_text_before(text, known)
    return known


def _read(known: KnownValues) -> tuple:
    return list(known.values.items()), known.read, set(known.features)


def _same_known(arguments: list, structured: list, texts: list, caches: tuple = (None, None)) -> None:
    # `caches`: one for each way, each shared with the sessions read before
    before = _known_before(arguments, structured, texts, caches[0])
    after = redactor_for_session(arguments=arguments, structured=structured, texts=texts, cache=caches[1]).known
    assert _read(after) == _read(before)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    arguments=st.lists(st.one_of(st.dictionaries(_KEYS, _DATA, max_size=6), _DATA), max_size=5),
    structured=st.lists(_DATA, max_size=2),
    texts=st.lists(st.one_of(_STRINGS, st.text(max_size=10)), max_size=3),
)
def test_the_arguments_read_once_by_structure_give_the_known_values_as_before(arguments, structured, texts):
    _same_known(arguments, structured, texts)


def test_objects_of_the_same_keys_under_other_parents_give_their_own_known_values():
    # the objects' plans are kept by their keys and their parent key (echo._PLANS)
    same = {"name": "Anna Lee", "value": "Mia Li", "note": "my name is Ava Brown"}
    arguments = [same, {"customer": same}, {"telecom": same}, {"name": [same]}, {"args": same}]
    _same_known(arguments, [{"passengers": [same]}, same], ["hello"])
    _same_known(list(reversed(arguments)), [], [])


@pytest.mark.slow
def test_the_arguments_read_once_give_the_known_values_as_before_on_real_sessions():
    # every session of the other repositories' import, with one cache across them as the import has
    from library.ingest.formats import parse_item

    require_swebench()
    caches = (RedactionCache(), RedactionCache())
    sessions = 0
    with tarfile.open(SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz", "r:*") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".json"):
                with tar.extractfile(member) as stream:
                    session = parse_item(json.loads(stream.read()), fmt="mini-swe-agent")
                arguments: list[Any] = [call["args"] for call in session.tool_calls]
                results = [call["result"] for call in session.tool_calls if call.get("result") is not None]
                _same_known(arguments, [*results, *session.structured], [session.task, session.reply], caches)
                for text in (session.task, session.reply, *strings_in(arguments)):
                    _same_features(text)
                    _query_gate_holds(text)
                sessions += 1
    assert sessions == 140
