"""Which of many regular expressions cannot match a text, told by the literal strings their matches
must contain (pure Python, no Django): the policy screen's patterns (rules.py) and concepts
(concepts/) are long IGNORECASE alternations after ``\\b`` that the engine tries at every position of
every text, most of them to find nothing.

`required(pattern)` reads a pattern with the parser of `re` itself and gives strings one of which
every match contains (``\\b(skip|bypass\\w*)`` → {"skip", "bypass"}; ``(ohne|ignorier(e|en)?)`` →
{"ohne", "ignorier", "ignoriere", "ignorieren"}), or None where it cannot say (a wildcard, a class of many characters, a group
with its own flags): such a pattern is always searched. `Literals` holds the strings of many
patterns and finds those a text holds in one pass (an Aho-Corasick automaton, pyahocorasick); a
pattern none of whose strings the text holds has no match in it, and is not searched.

That holds where a case-insensitive match is a substring match: in a text equal to its own lower
case (policy.normalise's is) without any of the few characters Python's case-insensitive matching
takes for another (``ı`` for ``i``, ``ſ`` for ``s``, the old Cyrillic forms; re._casefix). Anywhere
else `may_match` answers yes and every pattern is searched as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from re import _constants as sre_constants  # the parser of `re` itself (as redaction.recognizers)
from re import _parser as sre_parse

import ahocorasick

try:  # the characters case-insensitive matching takes for another beyond their case: {"i": (ı,), ...}
    from re._casefix import _EXTRA_CASES
except ImportError:  # pragma: no cover  (another Python: no character is known safe, nothing is skipped)
    _EXTRA_CASES = None

# The most strings a part of a pattern is expanded into ("(e|es|ed|ing)" is 4, "[ée]" 2): past it the
# part is not a literal, and a shorter run of literals before it stands for the pattern.
_CAP = 64
_SMALL_CLASS = 8
_LONG = 5  # a string this long is seldom in a text by chance
_ZERO_WIDTH = (sre_constants.AT, sre_constants.ASSERT, sre_constants.ASSERT_NOT)
_REPEATS = (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT, sre_constants.POSSESSIVE_REPEAT)


def _char(code: int) -> str | None:
    lowered = chr(code).lower()
    return lowered if len(lowered) == 1 else None


class _Reader:
    """Reads one parsed pattern; each part's answers kept, since a part is asked about again from
    each level above it."""

    def __init__(self) -> None:
        self._exact: dict[int, set[str] | None] = {}

    def exact(self, item) -> set[str] | None:
        """Every string (in lower case) one part of a pattern can match, or None: too many or
        unknown. An assertion (``\\b``, a lookaround) matches the empty string."""
        if item[0] is sre_constants.LITERAL:  # most parts: not kept
            char = _char(item[1])
            return None if char is None else {char}
        key = id(item)
        if key not in self._exact:
            self._exact[key] = self._exact_of(*item)
        return self._exact[key]

    def _exact_of(self, op, av) -> set[str] | None:
        if op is sre_constants.LITERAL:
            char = _char(av)
            return None if char is None else {char}
        if op in _ZERO_WIDTH:
            return {""}
        if op is sre_constants.IN:
            chars: set[str] = set()
            for member, value in av:
                if member is sre_constants.LITERAL:
                    codes: Iterable[int] = (value,)
                elif member is sre_constants.RANGE and value[1] - value[0] < _SMALL_CLASS:
                    codes = range(value[0], value[1] + 1)
                else:  # a negated class, a category (\w, \s), a wide range
                    return None
                for code in codes:
                    char = _char(code)
                    if char is None:
                        return None
                    chars.add(char)
            return chars if len(chars) <= _SMALL_CLASS else None
        if op is sre_constants.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            return None if add_flags or del_flags else self.exact_sequence(sub.data)
        if op is sre_constants.BRANCH:
            found: set[str] = set()
            for alternative in av[1]:
                one = self.exact_sequence(alternative.data)
                if one is None:
                    return None
                found |= one
                if len(found) > _CAP:
                    return None
            return found
        if op in _REPEATS:
            low, high, sub = av
            if high > 1:
                return None
            one = self.exact_sequence(sub.data)
            if one is None:
                return None
            return one | {""} if low == 0 else one
        return None

    def exact_sequence(self, items) -> set[str] | None:
        found = {""}
        for item in items:
            one = self.exact(item)
            if one is None:
                return None
            found = {a + b for a in found for b in one}
            if len(found) > _CAP:
                return None
        return found

    def required(self, op, av) -> set[str] | None:
        if op is sre_constants.SUBPATTERN:
            _group, add_flags, del_flags, sub = av
            return None if add_flags or del_flags else self.required_sequence(sub.data)
        if op is sre_constants.BRANCH:
            found: set[str] = set()
            for alternative in av[1]:
                one = self.required_sequence(alternative.data)
                if one is None:
                    return None
                found |= one
            return found
        if op in _REPEATS:
            low, _high, sub = av
            return self.required_sequence(sub.data) if low >= 1 else None
        if op is sre_constants.ATOMIC_GROUP:
            return self.required_sequence(av.data)
        return None

    def required_sequence(self, items) -> set[str] | None:
        """A match of a sequence is its parts' matches one after the other: a run of parts with few
        exact strings gives their concatenations, a part with its own required strings gives those."""
        best: set[str] | None = None
        run = {""}
        for item in items:
            one = self.exact(item)
            if one is not None:
                joined = {a + b for a in run for b in one}
                if len(joined) <= _CAP:
                    run = joined
                else:
                    best, run = _better(best, run), one
                continue
            best, run = _better(best, run), {""}
            best = _better(best, self.required(*item))
        return _better(best, run)


def _better(best: set[str] | None, other: set[str] | None) -> set[str] | None:
    """Of two sets of strings each match must hold one of, the one whose shortest string is longer
    (up to _LONG: past it, the one with fewer strings); a set holding the empty string says nothing."""
    if not other or min(map(len, other)) == 0:
        return best
    if best is None:
        return other
    score = lambda strings: (min(min(map(len, strings)), _LONG), -len(strings))  # noqa: E731
    return other if score(other) > score(best) else best


def required(pattern: str, flags: int = 0) -> frozenset[str] | None:
    """Strings in lower case one of which every match of `pattern` holds, or None where it cannot say."""
    try:
        found = _Reader().required_sequence(sre_parse.parse(pattern, flags).data)
    except Exception:  # noqa: BLE001  (a pattern `re` reads differently: searched always)
        return None
    return frozenset(found) if found else None


class Literals:
    """The required strings of some patterns (`add`, keyed by any name), and a text's look-up."""

    def __init__(self) -> None:
        self._required: dict[object, frozenset[str] | None] = {}
        self._automaton = ahocorasick.Automaton()
        self._twins: frozenset[str] | None = frozenset()

    def add(self, key: object, pattern: str, flags: int = 0) -> None:
        strings = required(pattern, flags)
        self._required[key] = strings
        if strings is None:
            return
        for string in strings:
            self._automaton.add_word(string, string)
        if _EXTRA_CASES is None:
            self._twins = None
        elif self._twins is not None:
            letters = {char for string in strings for char in string}
            self._twins = self._twins | {chr(twin) for char in letters for twin in _EXTRA_CASES.get(ord(char), ())}

    def found(self, text: str) -> frozenset[str] | None:
        """The required strings `text` holds, or None when a substring search cannot stand for a
        case-insensitive match in it (then every pattern may match)."""
        twins = self._twins
        if twins is None or text != text.lower() or any(char in text for char in twins):
            return None
        automaton = self._automaton
        if automaton.kind != ahocorasick.AHOCORASICK:
            if automaton.kind == ahocorasick.EMPTY:
                return frozenset()
            automaton.make_automaton()
        return frozenset([string for _end, string in automaton.iter(text)])

    def may_match(self, key: object, found: frozenset[str] | None) -> bool:
        """False only where pattern `key` has no match in the text `found` was taken of."""
        strings = self._required[key]
        return found is None or strings is None or not strings.isdisjoint(found)
