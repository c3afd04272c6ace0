"""What a recognizer is and how a chain of them runs over a text: placeholders are never matched
again, cheap pre-checks (features, keywords, gates) skip recognizers that cannot match, and the
agent's own patterns become recognizers after a check that they cannot take exponential time."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from re import _constants as sre_constants  # the parser of `re` itself, for slow_pattern_problem
from re import _parser as sre_parse
from typing import Any

import ahocorasick
import re2

PLACEHOLDER_RE = re.compile(r"\{\{[a-z_]+\}\}")


@dataclass(frozen=True)
class Recognizer:
    label: str
    pattern: re.Pattern
    # Replaces one match; returns None to keep the text (a validator said it is not a real hit).
    replace: Callable[[re.Match], str | None] | None = None
    # The group that holds the personal value (for echo); 0 is the whole match.
    group: int = 0
    # Only worth running on text that has this feature ("digit", "@", "=", "/"): a cheap pre-check.
    needs: str = ""
    # Only worth running on text that holds one of these lower-case words (in any case): keywords
    # every match contains, read off the pattern, checked with a substring search of the text in
    # lower case. A necessary condition, so skipping changes nothing; texts with one of the four
    # non-ASCII characters that case-insensitive patterns fold to ASCII ("İ", "ı", "ſ", "K")
    # always run the pattern (folds_like_ascii).
    words: tuple[str, ...] = ()
    # Only worth running on text where this cheap pattern matches: a part every match contains,
    # written so that the regular-expression engine can skip to its first character (the
    # recognizers start with \b or a lookbehind, which makes the engine try every position): a
    # rare literal first, what precedes it as a lookbehind (`-(?<=\d{3}-)\d{2}-\d{4}` for SSNs).
    # Case-insensitive recognizers use it only on texts `words` may be checked on.
    gate: re.Pattern | None = None
    # Replaces in the whole text instead of `pattern`: the session's known values, or a faster way to
    # the same result as `pattern.sub` with `replace` (the mixed-id shape).
    apply: Callable[[str], str] | None = None
    # Any other necessary condition, read off the text's features (after `needs`, `words`, `gate`).
    check: Callable[[Features], bool] | None = None
    # `gate` in RE2's syntax (no lookbehind; \p{Nd} for \d): a pattern that matches wherever `gate`
    # does (it may match more), or at least wherever the recognizer changes the text (two phone
    # shapes', narrower than their gates). All recognizers' are searched for in one pass of an RE2 set (GATES),
    # and `gate` only runs on the texts where this one matched.
    gate_set: str = ""

    def __post_init__(self) -> None:
        KEYWORDS.add(self.words)
        if self.gate_set:
            GATES.add(self.gate_set)


def search_set(patterns: Iterable[str]) -> Any:
    """An RE2 set (google-re2) of `patterns` compiled, each at its index in order: a deterministic
    automaton over a text's UTF-8 that reports which of them match. Raises re2.error."""
    options = re2.Options()
    options.max_mem = 64 << 20  # the DFA's states of a few hundred small patterns fit many times over
    found = re2.Set.SearchSet(options)
    for pattern in patterns:
        found.Add(pattern)
    found.Compile()
    return found


class KeywordIndex:
    """Which keywords a text in lower case holds, found in one pass instead of one substring search
    per keyword, so that `found(lowered)` is exactly {word for word in the index if word in lowered}.
    Every Recognizer adds its `words` (so select_recognizers reads them all off one pass), the echo
    the words of its hint. The pass is an RE2 set of the keywords as literals (google-re2: a
    deterministic automaton over the text's UTF-8 that reports which of them occur, each once; a
    literal occurs in UTF-8 exactly where it occurs in the text); where the set cannot say (a text
    with a lone surrogate, which UTF-8 cannot encode; a set that would not compile), an
    Aho-Corasick automaton (pyahocorasick) reporting every occurrence, overlaps included. The set
    took half the automaton's time on the other repositories' import (12,467 texts, 3.2 million
    characters: 0.026 s against 0.053 s), which spends its time handing each occurrence to Python.
    Both are built at the first look-up after a word was added."""

    def __init__(self) -> None:
        self._words: set[str] = set()
        self._automaton: Any = None
        self._set: Any = None
        self._set_words: list[str] = []  # the set's patterns' words, by index
        self._set_broken = False
        self.generation = 0  # how many times words were added (FeaturePass rebuilds after a change)

    def add(self, words: Iterable[str]) -> None:
        new = {word for word in words if word not in self._words}
        if new:
            self._words |= new
            self._automaton = None
            self._set = None
            self._set_broken = False
            self.generation += 1

    def found(self, lowered: str) -> frozenset[str]:
        found = self._set
        if found is None and not self._set_broken and self._words:
            found = self._build_set()
        if found is not None:
            try:
                matched = found.Match(lowered)
            except UnicodeEncodeError:
                pass
            else:
                words = self._set_words
                return frozenset([words[index] for index in matched]) if matched else frozenset()
        return self._found_by_automaton(lowered)

    def _build_set(self) -> Any:
        words = sorted(self._words)
        try:
            found = search_set(map(re2.escape, words))  # in the order of their indices
        except re2.error:
            self._set_broken = True
            return None
        self._set, self._set_words = found, words
        return found

    def _found_by_automaton(self, lowered: str) -> frozenset[str]:
        automaton = self._automaton
        if automaton is None:
            if not self._words:
                return frozenset()
            automaton = ahocorasick.Automaton()
            for word in self._words:
                automaton.add_word(word, word)
            automaton.make_automaton()
            self._automaton = automaton
        return frozenset([word for _end, word in automaton.iter(lowered)])


KEYWORDS = KeywordIndex()


class GateSet:
    """Which of many patterns match a text, found in one pass: an RE2 set (google-re2), a
    deterministic automaton over the text's UTF-8, instead of one regular-expression search per
    gate. RE2 has no lookbehind and reads \\d, \\w, \\b as ASCII, so each recognizer writes its
    gate for it (`Recognizer.gate_set`) to match wherever its `gate` matches, and the gate itself
    still runs where the set says it may: which recognizers run is what it was.
    `matching` is None where the set cannot say (a text with a lone surrogate, which UTF-8 cannot
    encode; a set that would not compile): then every gate runs as before."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}
        self._set: Any = None
        self._broken = False
        self.generation = 0  # how many patterns were added (FeaturePass rebuilds after a change)

    def add(self, pattern: str) -> None:
        if pattern not in self.index:
            self.index[pattern] = len(self.index)
            self._set = None
            self.generation += 1

    def matching(self, text: str) -> frozenset[int] | None:
        found = self._set
        if found is None:
            if self._broken or not self.index:
                return None
            try:
                found = search_set(self.index)  # in the order of their indices
            except re2.error:
                self._broken = True
                return None
            self._set = found
        try:
            return frozenset(found.Match(text) or ())
        except UnicodeEncodeError:
            return None


GATES = GateSet()


# The only characters outside ASCII that Python's case-insensitive matching takes for an ASCII
# character ("İ" and "ı" for i, "ſ" for s, the Kelvin sign for k; checked over all of Unicode), and
# "İ" is the only character whose lower case has another length. A text without them matches an
# ASCII word case-insensitively exactly where its lower case holds the word: lower() maps character
# by character, never turns another character into ASCII, and keeps word characters word characters.
ASCII_FOLDS = ("\u0130", "\u0131", "\u017f", "\u212a")


def folds_like_ascii(text: str) -> bool:
    """Case-insensitive matching of ASCII words in `text` is a substring search of text.lower():
    true of ASCII text, and of any text without the four characters of ASCII_FOLDS (an excerpt's
    output cut with "…", a path with "é")."""
    return text.isascii() or not any(char in text for char in ASCII_FOLDS)


def compile_agent_patterns(patterns: Iterable[Mapping[str, Any]] | None) -> list[Recognizer]:
    """Turns Agent.redaction_patterns into recognizers. Raises ValueError naming the bad entry."""
    compiled: list[Recognizer] = []
    for index, entry in enumerate(patterns or []):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("regex"), str):
            raise ValueError(f'redaction_patterns[{index}]: needs {{"label": ..., "regex": ...}}')
        label = re.sub(r"[^a-z_]", "_", str(entry.get("label") or "id").lower()) or "id"
        try:
            compiled.append(Recognizer(label, re.compile(entry["regex"])))
        except re.error as exc:
            raise ValueError(f"redaction_patterns[{index}]: invalid regex {entry['regex']!r}: {exc}") from None
    return compiled


def _repeats(items: Any) -> Iterator[tuple[int, list]]:
    """(upper bound, body) of every backtracking repeat in a parsed pattern, outermost first."""
    for op, av in items:
        if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
            yield av[1], av[2]
            yield from _repeats(av[2])
        elif op == sre_constants.SUBPATTERN:
            yield from _repeats(av[3])
        elif op == sre_constants.BRANCH:
            for branch in av[1]:
                yield from _repeats(branch)
        elif op in (sre_constants.ASSERT, sre_constants.ASSERT_NOT):
            yield from _repeats(av[1])


def slow_pattern_problem(regex: str) -> str | None:
    """Why a pattern may take exponential time, or None: an unbounded repeat inside another repeat
    (`(a+)+`, `(\\w*\\s?)*`) backtracks through every split of a long run. Agent patterns run on every
    ingested session, in the request; possessive repeats and atomic groups (`(?>a+)+`) do not
    backtrack and pass."""
    try:
        parsed = sre_parse.parse(regex)
    except re.error:
        return None  # compiling says what is wrong
    for upper, body in _repeats(parsed):
        if upper > 1 and any(inner == sre_constants.MAXREPEAT for inner, _ in _repeats(body)):
            return "has an unbounded repeat inside another repeat (like (a+)+), which can take exponential time"
    return None


def split_placeholders(text: str) -> list[tuple[bool, str]]:
    """Splits text into (is_placeholder, piece) so recognizers never rewrite a placeholder."""
    pieces: list[tuple[bool, str]] = []
    last = 0
    for match in PLACEHOLDER_RE.finditer(text):
        if match.start() > last:
            pieces.append((False, text[last : match.start()]))
        pieces.append((True, match.group(0)))
        last = match.end()
    if last < len(text):
        pieces.append((False, text[last:]))
    return pieces


def apply_recognizer(recognizer: Recognizer, text: str) -> str:
    if recognizer.replace is None:

        def sub(match: re.Match) -> str:
            return "{{" + recognizer.label + "}}"
    else:

        def sub(match: re.Match) -> str:
            replaced = recognizer.replace(match)
            return match.group(0) if replaced is None else replaced

    if "{{" not in text:  # the common case: nothing to protect
        return recognizer.pattern.sub(sub, text)
    return "".join(
        piece if is_placeholder else recognizer.pattern.sub(sub, piece)
        for is_placeholder, piece in split_placeholders(text)
    )


_DIGIT_RE = re.compile(r"\d")
_MARKS = ("@", "=", "/")


class FeaturePass:
    """What Features reads from a text (its marks, its keywords, its gates), found in one pass of
    one RE2 set over the text's UTF-8 instead of four substring searches, a digit search, a set
    pass over the text in lower case for the keywords (KEYWORDS) and one over the text for the gates
    (GATES): 0.069 -> 0.048 s on the 10,186 texts the other repositories' import reads for known
    values. The set holds GATES' patterns (under the same indices), each keyword as a
    case-insensitive literal, "@", "=", "/" and [0-9]. Where it answers, it answers as the passes
    it replaces:
    - a keyword (ASCII, in lower case: checked when the set is built) occurs in a text's lower case
      exactly where RE2 matches it case-insensitively in the text, for a text that folds like
      ASCII (the only texts whose keywords are read: Features.words): there both mean each
      character is the keyword's own letter in either case (RE2's case-insensitive ASCII letters
      take no other character but "\u017f" for s and "\u212a" for k, which such a text has not,
      tests/library/test_redaction_known.py checks every code point);
    - ASCII characters occur in UTF-8 exactly where they occur in the text;
    - `\\d` finds a digit in an ASCII text exactly where [0-9] does (other texts without an ASCII
      digit are searched with `\\d` as before).
    `read` returns None where the set cannot say: a text with a lone surrogate (UTF-8 cannot
    encode it), a set that would not compile, a keyword that is not ASCII in lower case."""

    def __init__(self) -> None:
        self._built_for: tuple[int, int] | None = None
        self._set: Any = None
        self._match: Any = None
        self._gates = 0  # the set's first indices are GATES'
        self._names: list[Any] = []  # per index past the gates: a keyword (str) or a mark (a 1-tuple)
        self._decoded: dict[tuple[int, ...], tuple[frozenset[str], frozenset[str], frozenset[int]]] = {}

    def _build(self) -> Any:
        self._built_for = (KEYWORDS.generation, GATES.generation)
        self._set, self._decoded = None, {}
        words = sorted(KEYWORDS._words)
        if not all(word.isascii() and word == word.lower() for word in words):
            return None
        try:
            found = search_set(  # the gates at their indices, then the keywords, the marks and a digit
                [*GATES.index, *("(?i)" + re2.escape(word) for word in words), *map(re2.escape, _MARKS), "[0-9]"]
            )
        except re2.error:
            return None
        self._set, self._gates = found, len(GATES.index)
        # the set's own Match, given the text's UTF-8 (as re2.Set.Match passes it on: one Python
        # call less a text); the wrapper's where it has none
        self._match = getattr(found, "_set", found).Match
        self._names = [*words, *((mark,) for mark in _MARKS), ("digit",)]
        return found

    def read(self, text: str) -> tuple[frozenset[str], frozenset[str], frozenset[int]] | None:
        """(marks but a non-ASCII digit, keywords as read case-insensitively, gates), or None."""
        found = self._set
        if self._built_for != (KEYWORDS.generation, GATES.generation):
            found = self._build()
        if found is None:
            return None
        try:
            matched = self._match(text.encode())
        except UnicodeEncodeError:
            return None
        if not matched:
            return _NOTHING
        key = tuple(matched)
        decoded = self._decoded.get(key)
        if decoded is None:
            gates, names = self._gates, self._names
            marks: list[str] = []
            words: list[str] = []
            gate_indices: list[int] = []
            for index in key:
                if index < gates:
                    gate_indices.append(index)
                else:
                    name = names[index - gates]
                    if type(name) is tuple:
                        marks.append(name[0])
                    else:
                        words.append(name)
            decoded = (frozenset(marks), frozenset(words), frozenset(gate_indices))
            if len(self._decoded) < 4096:  # the same few matches recur: decoded once
                self._decoded[key] = decoded
        return decoded


_NOTHING: tuple[frozenset[str], frozenset[str], frozenset[int]] = (frozenset(), frozenset(), frozenset())
FEATURE_PASS = FeaturePass()


class Features:
    """What the cheap pre-checks of the recognizers read from a text: which of "@", "=", "/" and
    digits it has, the text in lower case (None when case-insensitive patterns may match it
    where its lower case holds no ASCII keyword: see folds_like_ascii; `folds` says which without
    it), and `words`: which words of KEYWORDS that lower case holds (read only where `lowered` is
    not None). Read in one pass (FeaturePass) where it can; else the marks by substring searches,
    and the keywords and gates each by their own set at their first use. The lower case is made at
    its first use: the known-values pass needs it for few texts, and the excerpt does not redact
    4,484 of the 10,186 texts that pass reads on the other repositories' import (1.75 of their 2.6
    million characters)."""

    __slots__ = ("text", "marks", "folds", "_lowered", "_words", "_gates")

    def __init__(self, text: str):
        self.text = text
        folds = self.folds = folds_like_ascii(text)
        self._lowered: str | None = None
        read = FEATURE_PASS.read(text)
        if read is None:
            marks = {char for char in _MARKS if char in text}
            if _DIGIT_RE.search(text):
                marks.add("digit")
            self.marks = frozenset(marks)
            self._words: frozenset[str] | None = None
            self._gates: frozenset[int] | None | bool = False  # False: not looked for yet
            return
        marks, words, self._gates = read
        if "digit" not in marks and not text.isascii() and _DIGIT_RE.search(text):
            marks = marks | {"digit"}
        self.marks = marks
        self._words = words if folds else None

    @property
    def lowered(self) -> str | None:
        lowered = self._lowered
        if lowered is None and self.folds:
            lowered = self._lowered = self.text.lower()
        return lowered

    @property
    def words(self) -> frozenset[str]:
        if self._words is None:
            self._words = KEYWORDS.found(self.lowered or "")
        return self._words

    @property
    def gates(self) -> frozenset[int] | None:
        """The indices of GATES' patterns that match the text (None: the set cannot say)."""
        if self._gates is False:
            self._gates = GATES.matching(self.text)
        return self._gates  # type: ignore[return-value]


def run_chain(chain: list[Recognizer], text: str) -> str:
    """Applies the recognizers in order to text that holds no placeholder; once one inserts a
    placeholder, the rest run on the pieces between placeholders only."""
    for index, recognizer in enumerate(chain):
        if recognizer.apply is not None:
            replaced = recognizer.apply(text)
        elif recognizer.replace is None:
            label = "{{" + recognizer.label + "}}"
            replaced = recognizer.pattern.sub(lambda m: label, text)
        else:
            replace = recognizer.replace
            replaced = recognizer.pattern.sub(lambda m: _or_original(replace(m), m), text)
        if replaced != text and "{{" in replaced:
            rest = chain[index + 1 :]
            if not rest:
                return replaced
            return "".join(
                piece if is_placeholder else run_chain(rest, piece)
                for is_placeholder, piece in split_placeholders(replaced)
            )
        text = replaced
    return text


def _or_original(replaced: str | None, match: re.Match) -> str:
    return match.group(0) if replaced is None else replaced


class IndexedRecognizers(tuple):
    """Recognizers in order (a tuple of them), indexed by the pre-checks that let a text skip each:
    its keywords (`words`) and its gate's pattern in the RE2 set (`gate_set`). For a text whose
    keywords and gate-set matches are known (it folds like ASCII and UTF-8 can encode it),
    select_recognizers then looks only at the recognizers one of them names and at those with
    neither: each other one would fail its keyword or its gate check there. On the 7,983 texts of
    the other repositories' excerpts it looked at 3-4 recognizers a text instead of 30."""

    always: tuple[int, ...]
    by_word: dict[str, tuple[int, ...]]
    by_gate: dict[int, tuple[int, ...]]

    def __new__(cls, recognizers: Iterable[Recognizer]) -> IndexedRecognizers:
        self = super().__new__(cls, recognizers)
        always: list[int] = []
        by_word: dict[str, list[int]] = {}
        by_gate: dict[int, list[int]] = {}
        for position, recognizer in enumerate(self):
            if recognizer.gate is not None and recognizer.gate_set:
                by_gate.setdefault(GATES.index[recognizer.gate_set], []).append(position)
            elif not recognizer.words:
                always.append(position)
            for word in recognizer.words:
                by_word.setdefault(word, []).append(position)
        self.always = tuple(always)
        self.by_word = {word: tuple(positions) for word, positions in by_word.items()}
        self.by_gate = {index: tuple(positions) for index, positions in by_gate.items()}
        self._words = frozenset(self.by_word)
        self._gates = frozenset(self.by_gate)
        self._picked: dict[tuple[frozenset[str], frozenset[int]], tuple[Recognizer, ...]] = {}
        return self

    def candidates(self, features: Features) -> tuple[Recognizer, ...]:
        """The recognizers that may pass the pre-checks on the text, in order (all of them where its
        keywords or gate-set matches are unknown). They follow from the keywords and gates of the
        index the text has, and few such combinations recur: each is worked out once."""
        if not features.folds:  # (no lower case to read keywords in)
            return self
        gates = features.gates if self.by_gate else frozenset()
        if gates is None:
            return self
        key = (self._words.intersection(features.words), self._gates.intersection(gates))
        picked = self._picked.get(key)
        if picked is None:
            positions = set(self.always)
            for word in key[0]:
                positions.update(self.by_word[word])
            for index in key[1]:
                positions.update(self.by_gate[index])
            picked = tuple(self[position] for position in sorted(positions))
            if len(self._picked) < 4096:
                self._picked[key] = picked
        return picked


def select_recognizers(recognizers: Iterable[Recognizer], features: Features) -> list[Recognizer]:
    """The recognizers that may match the text: those whose necessary features and keywords it has
    and whose gate and check pass. Checked on the whole text (the pieces the recognizers later see
    are parts of it). One loop: it runs for every recognizer on every text redacted; given
    IndexedRecognizers, only over the ones whose keywords or gate the text may have."""
    if isinstance(recognizers, IndexedRecognizers):
        recognizers = recognizers.candidates(features)
    # `folds`: the text has a lower case (Features.lowered), made only where a check reads it
    marks, folds, text = features.marks, features.folds, features.text
    selected = []
    for recognizer in recognizers:
        if recognizer.needs and recognizer.needs not in marks:
            continue
        # a recognizer's words are in KEYWORDS (Recognizer.__post_init__): one pass found them all
        if recognizer.words and folds and features.words.isdisjoint(recognizer.words):
            continue
        gate = recognizer.gate
        if gate is not None and (folds or not recognizer.pattern.flags & re.IGNORECASE):
            if recognizer.gate_set:
                gates = features.gates
                if gates is not None and GATES.index[recognizer.gate_set] not in gates:
                    continue  # the set's pattern matches wherever the gate does
            if gate.search(text) is None:
                continue
        if recognizer.check is not None and not recognizer.check(features):
            continue
        selected.append(recognizer)
    return selected
