"""The import's speed-ups of redaction change no redaction (issue 38, bench/RESULTS.md): each faster
path against the plain one it replaces, on generated texts and on the real coding sessions.
Pure Python, no database."""

from __future__ import annotations

import functools
import json
import re
import string
import tarfile

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from library.redaction import echo
from library.redaction.recognizers import KEYWORDS, KeywordIndex
from library.redaction.shapes import BUILTIN_RECOGNIZERS, NAME_RECOGNIZERS, SHAPE_RECOGNIZERS
from tests.conftest import SWEBENCH_DIR, SWEBENCH_RESULTS, SWEBENCH_TRAJS, require_swebench
from tests.redaction_support import every_pre_check_off

_ALL_WORDS = sorted(KEYWORDS._words)
# the keywords, their pieces and neighbours, and characters that fold or change case
_PIECES = st.sampled_from(
    [
        *_ALL_WORDS,
        *(word[: len(word) // 2] for word in _ALL_WORDS),
        *(word[len(word) // 2 :] for word in _ALL_WORDS),
        " ",
        "\n",
        "_",
        "-",
        ":",
        ".",
        "é",
        "İ",
        "ı",
        "ſ",
        "\u212a",
        "ß",
        "…",
        "\U0001f600",
        "hi",
        "mr",
        "Mrs",
        "dr.",
        "Prof",
        "herr",
        "FRAU",
        "Anna Lee",
    ]
)
_TEXTS = st.one_of(
    st.lists(_PIECES, max_size=12).map("".join),
    st.text(max_size=40),
    st.text(alphabet=string.ascii_letters + string.digits + " _-:.'\n", max_size=60),
)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS)
def test_the_keyword_index_finds_what_substring_search_finds(text):
    # one Aho-Corasick pass is the same as a substring search per keyword, overlaps included
    lowered = text.lower()
    assert KEYWORDS.found(lowered) == {word for word in _ALL_WORDS if word in lowered}


def test_every_recognizer_and_the_echo_hint_have_their_words_in_the_index():
    for recognizer in (*BUILTIN_RECOGNIZERS, *SHAPE_RECOGNIZERS, *NAME_RECOGNIZERS):
        assert set(recognizer.words) <= KEYWORDS._words, recognizer.label
    assert set(echo._ECHO_HINT_WORDS) <= KEYWORDS._words


def test_a_text_utf8_cannot_encode_finds_its_keywords_by_the_automaton():
    # a lone surrogate: the RE2 set cannot read the text, the Aho-Corasick automaton does
    lowered = "my name is \ud800 anna, zip"
    assert KEYWORDS.found(lowered) == {word for word in _ALL_WORDS if word in lowered} >= {"name", "zip"}


def test_a_keyword_index_rebuilds_after_a_word_is_added():
    index = KeywordIndex()
    assert index.found("any text") == frozenset()
    index.add(["text"])
    assert index.found("any text") == {"text"}
    index.add(["any", "y t"])
    assert index.found("any text") == {"text", "any", "y t"}


_PLAIN_BOUNDED_RE = re.compile(r"\b(?:hi|mr|mrs|ms|miss|mx|dr|prof|herr|frau)\b")


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_TEXTS)
def test_the_echo_hints_bounded_words_match_as_the_plain_pattern(text):
    # the pattern rewritten for speed finds a bounded word exactly where the plain one does
    lowered = text.lower()
    assert (echo._ECHO_HINT_BOUNDED_RE.search(lowered) is None) == (_PLAIN_BOUNDED_RE.search(lowered) is None)
    assert echo._echo_hint(text) == (echo._ECHO_HINT_RE.search(text) is not None)


def _prepared(archive, results) -> list:
    """What ingest stores from the redactor for each session of an archive (as session_prepare)."""
    from library.ingest.formats import ImportOptions, outcomes_from_results, parse_item
    from library.ingest.store import build_excerpt, redactor_for, task_key_for
    from library.redaction.echo import RedactionCache

    options = ImportOptions(outcomes=outcomes_from_results(json.loads(results.read_text())))
    cache = RedactionCache()
    rows = []
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if not (member.isfile() and member.name.endswith(".json")):
                continue
            with tar.extractfile(member) as stream:
                session = parse_item(json.loads(stream.read()), fmt="mini-swe-agent", options=options)
            redactor = redactor_for(session, [], cache)
            task = redactor.text(session.task) if session.task else ""
            excerpt = build_excerpt(session, redactor, redacted_task=task)
            rows.append(
                [
                    session.session_id,
                    task_key_for(session, redactor, redacted_task=task),
                    excerpt,
                    redactor.known.values,
                ]
            )
    return rows


@pytest.mark.slow
@pytest.mark.parametrize(
    "archive, results",
    [
        (SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz", SWEBENCH_DIR / "results-other-repos.json"),
        (SWEBENCH_TRAJS, SWEBENCH_RESULTS),
    ],
    ids=["other-repos", "django"],
)
def test_the_real_coding_sessions_redact_as_without_any_pre_check(archive, results):
    # Every pre-check (keywords found in one pass, gates, checks, the echo hint, the capitalised-word
    # test) switched off: every recognizer runs on every text, and the excerpts, task keys and known
    # values of the 140 + 231 real sessions are the same, byte for byte.
    require_swebench()
    fast = _prepared(archive, results)
    with every_pre_check_off():
        plain = _prepared(archive, results)
    assert len(fast) == len(plain) > 100
    for got, want in zip(fast, plain):
        assert json.dumps(got, sort_keys=True, ensure_ascii=False) == json.dumps(
            want, sort_keys=True, ensure_ascii=False
        ), got[0]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(value=_JSON)
def test_the_stores_json_writer_writes_the_value_json_dumps_writes(value):
    # the session rows' jsonb parameters (library/ingest/store.py): another form, the same value
    from library.ingest.store import _json_bytes

    assert json.loads(_json_bytes(value)) == json.loads(json.dumps(value))


_SHELL = st.text(alphabet="ab <-'\"\\\n_=EOF#;|&>", max_size=40)


def _tokens_before(part: str) -> list[str]:
    """library/coding/activities._tokens as it was (the unquoting pattern compiled at each call)."""
    import re as re_module

    from library.coding.activities import _TOKEN_RE

    words = []
    for match in _TOKEN_RE.finditer(part):
        word = match.group(0)
        if word.startswith("#"):
            break
        if not ("'" in word or '"' in word or "\\" in word):
            words.append(word)
            continue
        words.append(
            re_module.sub(
                r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)""",
                lambda m: (
                    m.group(1) if m.group(1) is not None else (m.group(2) if m.group(2) is not None else m.group(3))
                ),
                word,
            )
        )
    return words


@settings(max_examples=500, deadline=None)
@given(command=_SHELL)
def test_the_classifiers_shortcuts_change_no_result(command):
    # strip_heredocs returns a command without "<<" as the line-by-line walk did (the same text, no
    # bodies); _tokens unquotes with a compiled pattern
    from library.coding import activities

    if "<<" not in command:
        assert activities.strip_heredocs(command) == ("\n".join(command.split("\n")), [])
    assert activities._tokens(command) == _tokens_before(command)


def _gated():
    return [r for r in (*BUILTIN_RECOGNIZERS, *SHAPE_RECOGNIZERS, *NAME_RECOGNIZERS) if r.gate_set]


def test_every_digit_python_finds_re2_finds():
    # the gates' \d is Unicode's decimal digits in Python; the set's patterns say \p{Nd} for it
    import sys

    import re2

    digit = re.compile(r"\d")
    rx = re2.compile(r"\p{Nd}")
    missed = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if not 0xD800 <= code <= 0xDFFF and digit.match(chr(code)) and not rx.match(chr(code))
    ]
    assert missed == []


def test_the_gated_recognizers_have_their_pattern_in_the_set():
    from library.redaction.recognizers import GATES

    assert len(_gated()) >= 14
    for recognizer in _gated():
        assert recognizer.gate is not None and recognizer.gate_set in GATES.index


_GATE_PIECES = st.sampled_from(
    [
        "0",
        "1",
        "12",
        "123",
        "4111",
        "٣",  # Arabic-Indic three
        "੩",  # Gurmukhi three
        "１",  # fullwidth one
        "DE",
        "ORD",
        "W",
        "ab",
        "-",
        " ",
        ".",
        "/",
        "(",
        ")",
        "+",
        "_",
        "<",
        "@",
        "{{email_address}}",
        "Anna Lee",
        " Smith called",
        " asked",
        "Hauptstraße",
        "Str.",
        "weg",
        "Platz",
        "é",
        "ß",
        "\u2028",
        "\x0b",
        "İ",
        "VAAOXJ",
    ]
)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.lists(_GATE_PIECES, max_size=16).map("".join), st.text(max_size=40)))
def test_the_gate_set_matches_wherever_a_gate_matches(text):
    # the RE2 set only rules texts out: wherever a recognizer's own gate matches, its set pattern does
    from library.redaction import shapes
    from library.redaction.recognizers import GATES

    found = GATES.matching(text)
    assert found is not None
    for recognizer in _gated():
        if recognizer.gate_set in shapes.SETS_NARROWER_THAN_GATES:
            continue  # test_redaction's pre-check tests and _same_shapes check these
        if recognizer.gate.search(text) is not None:
            assert GATES.index[recognizer.gate_set] in found, (recognizer.label, recognizer.gate_set)


def test_a_text_utf8_cannot_encode_runs_every_gate_as_before():
    # a lone surrogate: the set cannot read the text, and the recognizers are chosen by their gates
    from library.redaction.recognizers import GATES, Features, select_recognizers
    from library.redaction.redactor import Redactor

    text = "call 415-555-0134 \ud800 or ORD-12345"
    assert GATES.matching(text) is None
    # the phone and id gates match; the name cue's gate (" O") too, but no cue word stands before it
    assert [r.label for r in select_recognizers(_gated(), Features(text))] == ["phone_number", "id"]
    assert Redactor().text(text) == "call {{phone_number}} \ud800 or {{id}}"


_STREET_AND_MAIL_PIECES = st.sampled_from(
    [
        "12",
        "4b",
        "7",
        " ",
        "Main",
        "main",
        "Old Mill",
        "O",
        " Street",
        " st",
        " ST",
        " Rd",
        " avenue",
        " way",
        ".",
        ",",
        " apt 4",
        "anna.lee",
        "a_b+c",
        "@",
        "@@",
        "example",
        ".com",
        ".c",
        "-",
        "property",
        "\n",
        "é",
        "ſ",
    ]
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.lists(_STREET_AND_MAIL_PIECES, max_size=14).map("".join), st.text(max_size=40)))
def test_the_street_and_mail_gates_match_wherever_their_pattern_does(text):
    # the gates only rule texts out that their recognizer cannot change: every match of the e-mail
    # pattern, and of the (case-insensitive) street pattern in text that folds like ASCII (where its
    # gate is used), has the gate's match in it
    from library.redaction.recognizers import folds_like_ascii

    street = next(r for r in BUILTIN_RECOGNIZERS if r.label == "address" and "[A-Z][a-z]+" in r.pattern.pattern)
    mail = next(r for r in BUILTIN_RECOGNIZERS if r.label == "email_address")
    for match in mail.pattern.finditer(text):
        assert mail.gate.search(match.group(0)) is not None, match.group(0)
    if folds_like_ascii(text):
        for match in street.pattern.finditer(text):
            assert street.gate.search(match.group(0)) is not None, match.group(0)


# The shapes rewritten for speed (library/redaction/shapes.py), in the plain form they replace.
_PLAIN_SHAPES = {
    "caps code": (r"(?<![\w{}#\-])[A-Z]{5,10}(?![\w{}\-])", "_CAPS_CODE_RE"),
    "phone": (
        r"(?<![\w{])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?|\d{2,4}[ .\-])\d{3,4}[ .\-]\d{3,4}(?![\w}])",
        "_PHONE_RE",
    ),
    "national phone": (r"(?<![\w{])\(?0\d{2,4}\)?[ /\-]?\d{5,9}(?![\w}])", "_NATIONAL_PHONE_RE"),
    "international phone": (r"(?<![\w{+])\+\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){1,5}(?![\w}])", "_INTERNATIONAL_PHONE_RE"),
}
_SHAPE_PIECES = st.sampled_from(
    [
        "0",
        "1",
        "12",
        "415",
        "0151",
        "٣",  # Arabic-Indic three
        "１",  # fullwidth one
        "a",
        "W",
        "ORD",
        "VAAOXJ",
        "PLEASE",
        "W12",
        "é",
        "ß",
        "#",
        "-",
        "--",
        " ",
        ".",
        "/",
        "(",
        ")",
        "+",
        "_",
        "{",
        "}",
        "{{id}}",
        "@",
        "\\",
        "\\u00a1",
        "u00a1",
        "x1b",
        "\\U0001F600",
        "\n",
    ]
)
_SHAPE_TEXTS = st.one_of(st.lists(_SHAPE_PIECES, max_size=16).map("".join), st.text(max_size=40))


def _plain_mixed_ids(text: str) -> str:
    from library.redaction.shapes import _MIXED_ID_RE, _mixed_id

    return _MIXED_ID_RE.sub(lambda m: _mixed_id(m) or m.group(0), text)


def _same_shapes(text: str) -> None:
    from library.redaction import shapes

    assert shapes._replace_mixed_ids(text) == _plain_mixed_ids(text), text
    for name, (plain, rewritten) in _PLAIN_SHAPES.items():
        want = [(m.span(), m.groups()) for m in re.finditer(plain, text)]
        got = [(m.span(), m.groups()) for m in getattr(shapes, rewritten).finditer(text)]
        assert got == want, (name, text)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_SHAPE_TEXTS)
# ids whose one capital is beside the digit, whose digit is past the id ("--" between) or not ASCII
@example(text="abcdW1")
@example(text="1abcD")
@example(text="VAAOXJ--0")
@example(text="VAAOXJ--٣")
def test_the_rewritten_shapes_match_what_their_plain_form_matches(text):
    # the mixed-id substitution tried only at the runs with a gate's match, and the caps-code and
    # phone patterns with their lookbehind after the first character: the same matches, the same text
    _same_shapes(text)


@functools.cache
def _real_texts(archive) -> frozenset[str]:
    """Every text the import of `archive` redacts: the task, the reply and every string of the parsed
    calls' arguments (commands, outputs, paths), whole and as the excerpt cuts them (read once a run)."""
    from library.ingest.formats import parse_item
    from library.redaction.redactor import strings_in

    require_swebench()
    texts = set()
    with tarfile.open(archive, "r:*") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".json"):
                with tar.extractfile(member) as stream:
                    session = parse_item(json.loads(stream.read()), fmt="mini-swe-agent")
                for text in (session.task, session.reply, *strings_in([c["args"] for c in session.tool_calls])):
                    texts.update((text, text[:260]))
    assert len(texts) > 5000
    return frozenset(texts)


@pytest.mark.slow
@pytest.mark.parametrize(
    "archive", [SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz", SWEBENCH_TRAJS], ids=["other-repos", "django"]
)
def test_the_rewritten_shapes_match_what_their_plain_form_matches_on_real_sessions(archive):
    # every text the import redacts, whole and as the excerpt cuts them
    for text in _real_texts(archive):
        _same_shapes(text)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(
        st.lists(st.one_of(_GATE_PIECES, _PIECES, _SHAPE_PIECES), max_size=16).map("".join), st.text(max_size=40)
    )
)
def test_the_indexed_recognizers_select_what_the_plain_loop_selects(text):
    # IndexedRecognizers only spares select_recognizers a look at recognizers whose keyword or gate
    # check would fail: the same recognizers, in the same order, for every list the redactor and the
    # echo select from
    from library.redaction import echo as echo_module
    from library.redaction import redactor as redactor_module
    from library.redaction.recognizers import Features, IndexedRecognizers, select_recognizers

    for indexed in (
        redactor_module._BUILTIN_AND_SHAPES,
        redactor_module._BUILTIN_SHAPES_AND_NAMES,
        echo_module._ECHOED_ONLY,
        echo_module._ECHOED_AND_NAMES,
    ):
        assert isinstance(indexed, IndexedRecognizers)
        assert select_recognizers(indexed, Features(text)) == select_recognizers(list(indexed), Features(text))


def _cue_before_capital_before(features) -> bool:
    """library/redaction/shapes._cue_before_capital as it was: an `endswith` at every space-capital."""
    from library.redaction.shapes import _CUE_WORDS, _SPACE_CAPITAL_RE

    if features.lowered is None:
        return True
    return any(
        features.lowered.endswith(_CUE_WORDS, 0, match.start() + 1)
        for match in _SPACE_CAPITAL_RE.finditer(features.text)
    )


def _cue_pieces():
    from library.redaction.shapes import _CUE_WORDS

    return st.sampled_from(
        [*_CUE_WORDS, *(word.upper() for word in _CUE_WORDS), *(word.strip() for word in _CUE_WORDS)]
        + ["Anna", "A", "a", " ", "  ", ",", ".", "\n", "İ", "ſ", "\u212a", "é", "Zoe"]
    )


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.lists(_cue_pieces(), max_size=10).map("".join), st.text(max_size=40)))
def test_the_name_cues_check_finds_a_cue_before_a_capital_as_before(text):
    # the cue words looked up among the text's keywords and tested where they occur: the same answer
    from library.redaction.recognizers import Features
    from library.redaction.shapes import _cue_before_capital

    assert _cue_before_capital(Features(text)) == _cue_before_capital_before(Features(text)), text


def _chain_before(redactor, text: str) -> list:
    """Redactor._chain as it was: three selections, from the built-in, the shape and the name recognizers."""
    from library.redaction.recognizers import Features, IndexedRecognizers, select_recognizers
    from library.redaction.shapes import CAPITAL_RE

    features = redactor.known.features.get(text) or Features(text)
    chain = [*redactor.agent_recognizers, *select_recognizers(IndexedRecognizers(BUILTIN_RECOGNIZERS), features)]
    if redactor._by_length:
        chain.append(redactor._known_recognizer)
    chain.extend(select_recognizers(IndexedRecognizers(SHAPE_RECOGNIZERS), features))
    if CAPITAL_RE.search(text):
        chain.extend(select_recognizers(IndexedRecognizers(NAME_RECOGNIZERS), features))
    return chain


def _redactors() -> list:
    """A redactor as most coding sessions have (nothing known), one with known values, one with an
    agent pattern and known values."""
    from library.redaction.echo import KnownValues
    from library.redaction.redactor import Redactor

    known = {"Anna Lee": "person_name", "Anna": "person_name", "4WQ150": "reservation_id"}
    return [
        Redactor(),
        Redactor(known=KnownValues(values=dict(known))),
        Redactor(agent_patterns=[{"label": "ticket", "regex": r"TCK-\d+"}], known=KnownValues(values=dict(known))),
    ]


def _same_chain(redactors, text: str) -> None:
    for redactor in redactors:
        assert list(map(id, redactor._chain(text))) == list(map(id, _chain_before(redactor, text))), text


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(
        st.lists(st.one_of(_GATE_PIECES, _PIECES, _SHAPE_PIECES), max_size=16).map("".join), st.text(max_size=40)
    )
)
def test_the_redactors_one_selection_makes_the_chain_of_three(text):
    # the built-in, shape and name recognizers selected as one list: the same recognizers in the same
    # order, the agent's patterns before and the known values after the built-in ones
    _same_chain(_redactors(), text)


@pytest.mark.slow
def test_the_redactors_one_selection_makes_the_chain_of_three_on_real_sessions():
    # every text the other repositories' import redacts, whole and as the excerpt cuts it
    redactors = _redactors()
    for text in _real_texts(SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz"):
        _same_chain(redactors, text)


def _echo_hint_before(text: str) -> bool:
    """echo._echo_hint as it was: the keywords, then both patterns searched for in the text."""
    from library.redaction.recognizers import Features

    features = Features(text)
    if features.lowered is None:
        return echo._ECHO_HINT_RE.search(text) is not None
    return (
        not features.words.isdisjoint(echo._ECHO_HINT_WORD_SET)
        or echo._TWO_CAPITALISED_RE.search(text) is not None
        or echo._ECHO_HINT_BOUNDED_RE.search(features.lowered) is not None
    )


def _same_echo_hint(text: str) -> None:
    from library.redaction.recognizers import GATES, Features

    assert echo._echo_hint(text, Features(text)) == _echo_hint_before(text), text
    assert echo._echo_hint(text) == (echo._ECHO_HINT_RE.search(text) is not None), text
    found, lowered = GATES.matching(text), Features(text).lowered
    if found is not None and lowered is not None:  # the set's patterns match wherever theirs do
        if echo._TWO_CAPITALISED_RE.search(text) is not None:
            assert echo._TWO_CAPITALISED_INDEX in found, text
        if echo._ECHO_HINT_BOUNDED_RE.search(lowered) is not None:
            assert echo._ECHO_HINT_BOUNDED_INDEX in found, text


_HINT_PIECES = st.sampled_from(
    ["Hi", "HI", "hi", "Herr", "MRS", "Mr", "ms", "Miss", "mx", "Dr", "PROF", "Frau", "this", "Anna", "Lee", "anna"]
    + [" ", "  ", ".", ",", "_", "-", "\n", "é", "É", "ß", "İ", "ı", "ſ", "\u212a", "\u0345", "1", "A", "a", "\ud800"]
)


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(st.lists(st.one_of(_HINT_PIECES, _PIECES), max_size=14).map("".join), _TEXTS))
def test_the_echo_hint_read_off_the_gate_set_is_the_hint_as_before(text):
    # the two patterns looked up in the recognizers' RE2 set (which reads the text's gates anyway),
    # the bounded words' own pattern only where the set's matches: the same answer
    _same_echo_hint(text)


@pytest.mark.slow
def test_the_echo_hint_read_off_the_gate_set_is_the_hint_as_before_on_real_sessions():
    # every text the other repositories' import reads for known values, whole and as the excerpt cuts it
    for text in _real_texts(SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz"):
        _same_echo_hint(text)
