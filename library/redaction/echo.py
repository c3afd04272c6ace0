"""Echo: every value a session puts in a personal position once (by key, in a query string, or
after a cue in its text) becomes a known value of the session, replaced wherever it occurs in it."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote_plus

from .keys import (
    BIRTH,
    PERSON,
    child_labels,
    is_personal_object,
    parse_json_string,
    person_resource,
    query_param_label,
    query_params,
)
from .recognizers import GATES, KEYWORDS, PLACEHOLDER_RE, Features, IndexedRecognizers, select_recognizers
from .shapes import BUILTIN_RECOGNIZERS, CAPITAL_RE, NAME_RECOGNIZERS, NOT_NAMES

# shapes (e-mail, cards, ids) need no echo: the shape finds them again.
_ECHOED = {BIRTH, "passport_number", "licence_number", "postal_code", PERSON}
_ECHOED_SHAPES = [r for r in BUILTIN_RECOGNIZERS if r.label in _ECHOED]
_ECHOED_ONLY = IndexedRecognizers(_ECHOED_SHAPES)  # for a text without a capitalised word
_ECHOED_AND_NAMES = IndexedRecognizers(_ECHOED_SHAPES + NAME_RECOGNIZERS)
# A text can put a value in a personal position only with one of these (the cues of shapes.py).
_ECHO_HINT_RE = re.compile(
    r"(?i:dob|d\.o\.b|birth|born|geboren|passport|licen[cs]e|zip|postal|postcode|plz|name|i'm|i am|this is|dear|thank|"
    r"hello|\bhi\b|\b(?:mr|mrs|ms|miss|mx|dr|prof|herr|frau)\b|customer|client|caller|patient|passenger|guest|member|"
    r"travel|cardholder|holder|subscriber|kunde|belong|behalf|signed by|booked for|addressed to|you are|you're|"
    r"modified by|reported by|written by|authored by|author:|-by:)"
    r"|[A-Z][a-z]+ [A-Z][a-z]+"
)
# The same test for text that folds like ASCII, faster: the words as substrings of the text in lower
# case (Python's case-insensitive matching of such text is exactly that: recognizers.folds_like_ascii),
# found with the recognizers' keywords in one pass (recognizers.KEYWORDS), the bounded ones and two
# capitalised words by patterns that the regular-expression engine can scan for by their first character.
_ECHO_HINT_WORDS = (
    "dob",
    "d.o.b",
    "birth",
    "born",
    "geboren",
    "passport",
    "licence",
    "license",
    "zip",
    "postal",
    "postcode",
    "plz",
    "name",
    "i'm",
    "i am",
    "this is",
    "dear",
    "thank",
    "hello",
    "customer",
    "client",
    "caller",
    "patient",
    "passenger",
    "guest",
    "member",
    "travel",
    "cardholder",
    "holder",
    "subscriber",
    "kunde",
    "belong",
    "behalf",
    "signed by",
    "booked for",
    "addressed to",
    "you are",
    "you're",
    "modified by",
    "reported by",
    "written by",
    "authored by",
    "author:",
    "-by:",
)
KEYWORDS.add(_ECHO_HINT_WORDS)
_ECHO_HINT_WORD_SET = frozenset(_ECHO_HINT_WORDS)
# \b(?:hi|mr|mrs|ms|miss|mx|dr|prof|herr|frau)\b with the boundary before the word looked behind for
# after its first letter: every branch then starts with a letter, and the engine skips to those
# letters instead of trying the boundary at every position (0.035 s instead of 0.09 s on the
# 10,186 texts of the other repositories' import)
_ECHO_HINT_BOUNDED_RE = re.compile(
    r"h(?<!\wh)(?:i|err)\b|m(?<!\wm)(?:rs?|s|iss|x)\b|d(?<!\wd)r\b|p(?<!\wp)rof\b|f(?<!\wf)rau\b"
)
_TWO_CAPITALISED_RE = re.compile(r"[A-Z][a-z]+ [A-Z][a-z]+")
# The two patterns in the recognizers' RE2 set (recognizers.GATES), found in the pass over the text
# that the recognizers' gates make anyway (the excerpt reads the gates of most of the same texts): two
# capitalised words as they are (ASCII classes: RE2 matches exactly where `re` does), the bounded
# words case-insensitively in the text itself with RE2's ASCII \b (wherever the lower-case text has
# a match of _ECHO_HINT_BOUNDED_RE, so only the texts with a match of this one run it). 0.03 s less
# on the 10,186 texts the other repositories' import reads for known values.
_TWO_CAPITALISED_GATE = r"[A-Z][a-z]+ [A-Z][a-z]+"
_ECHO_HINT_BOUNDED_GATE = r"(?i)\b(?:hi|herr|mrs?|ms|miss|mx|dr|prof|frau)\b"
GATES.add(_TWO_CAPITALISED_GATE)
GATES.add(_ECHO_HINT_BOUNDED_GATE)
_TWO_CAPITALISED_INDEX = GATES.index[_TWO_CAPITALISED_GATE]
_ECHO_HINT_BOUNDED_INDEX = GATES.index[_ECHO_HINT_BOUNDED_GATE]
# Where keys.query_params finds a parameter, this matches: at the start or after "?", "&" or ";", a
# letter or "_", characters that are none of "=", "\t", "\n", "\f", "\r", " " (no \w, ".", "-" or
# ":" is), then "=". In the gate set, it rules out the texts with "=" but no parameter before the
# parameters are looked for: 3,283 of the 3,303 texts with "=" that the other repositories' import
# reads for known values (0.011 s of looking).
_QUERY_GATE = r"(?:^|[?&;])[A-Za-z_][^=\t\n\f\r ]*="
GATES.add(_QUERY_GATE)
_QUERY_INDEX = GATES.index[_QUERY_GATE]


def _echo_hint(text: str, features: Features | None = None) -> bool:
    """_ECHO_HINT_RE.search(text) is not None. `features`: the text's, if they were read already."""
    features = features or Features(text)
    if not features.folds:  # (features.lowered is None)
        return _ECHO_HINT_RE.search(text) is not None
    if not features.words.isdisjoint(_ECHO_HINT_WORD_SET):
        return True
    gates = features.gates
    if gates is not None:
        if _TWO_CAPITALISED_INDEX in gates:
            return True
        if _ECHO_HINT_BOUNDED_INDEX not in gates:
            return False
    elif _TWO_CAPITALISED_RE.search(text) is not None:  # the set cannot read the text: both patterns
        return True
    return _ECHO_HINT_BOUNDED_RE.search(features.lowered or "") is not None


_JSON_STARTS = ("", "{", "[")  # a text that parse_json_string may read as JSON starts so (or is empty)
_HANDLE_RE = re.compile(r"^([a-z]+)_([a-z]+)_\d+$")
_EMAIL_NAME_RE = re.compile(r"^([a-z]+)[._]([a-z]+)\d*@", re.IGNORECASE)


class RedactionCache:
    """What redaction computed from a text alone, shared by the redactors of one batch of sessions
    (an import, an API request): the same command, output or task recurs across sessions.

    - `findings`: text → the (value, label) pairs `_collect_from_text` adds for it, in order — a
      function of the text only;
    - `redacted`: text → the text redacted by the built-in rules with no known value — what any
      redactor without agent patterns or kept words makes of a text in which none of its known
      values occurs (see Redactor.text).
    Bounded: past MAX_ENTRIES a map takes nothing more (a cache miss only costs the work)."""

    MAX_ENTRIES = 50_000

    __slots__ = ("findings", "redacted")

    def __init__(self) -> None:
        self.findings: dict[str, tuple[tuple[str, str], ...]] = {}
        self.redacted: dict[str, str] = {}


@dataclass
class KnownValues:
    """Personal values seen in one session in a personal position: value → placeholder label."""

    values: dict[str, str] = field(default_factory=dict)
    # texts already read for values (a session's strings are read once, by structure and as text)
    read: set[str] = field(default_factory=set, compare=False, repr=False)
    # what texts gave across sessions (RedactionCache.findings), or None
    cache: RedactionCache | None = field(default=None, compare=False, repr=False)
    # the features of the texts read (recognizers.Features), for the session's redactor: the
    # excerpt redacts many of the same texts (a short command or output whole)
    features: dict[str, Features] = field(default_factory=dict, compare=False, repr=False)

    def add(self, value: Any, label: str) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return
        value = value.strip()
        if len(value) < 2 or PLACEHOLDER_RE.search(value) or len(value) > 200:
            return
        if label == "secret" or (label not in (PERSON, "user_id") and len(value) < 3):
            return  # a short code ("TX", "2") would redact ordinary words; secrets have their own shapes
        if value.isdigit() and len(value) < 5 and label != "card_number":
            return  # "123" would take prices and house numbers; a card's last four is worth it
        self.values.setdefault(value, label)
        if label == PERSON and " " in value:  # "Mia Li" → also "Mia" and "Li"
            for part in value.split():
                part = part.strip(".,")
                if len(part) >= 2 and part.lower() not in NOT_NAMES:
                    self.values.setdefault(part, label)
        # Handles and addresses built from a name give the name away even where no tool result
        # spells it out: sophia_silva_7557 → Sophia, Silva; mia.li3818@… → Mia, Li.
        handle = _HANDLE_RE.match(value) if label == "user_id" else None
        if handle is None and label == "email_address":
            handle = _EMAIL_NAME_RE.match(value)
        if handle is not None:
            for part in handle.groups():
                if len(part) >= 2:
                    self.values.setdefault(part, PERSON)


def collect_known_values(data: Any, known: KnownValues | None = None, *, parent_key: str = "") -> KnownValues:
    """Walks JSON-like data (tool-call args, parsed tool results) and records every value that sits
    in a personal position (the same rules `Redactor.value` replaces by)."""
    known = known if known is not None else KnownValues()
    _collect(data, known, parent_key, None, False, None)
    return known


def collect_arguments(data: Any, known: KnownValues, unread: list[Any]) -> None:
    """collect_known_values(data, known), and adds to `unread` the values inside `data` whose strings
    were not all read as text on the way (strings_in of them holds every string of `data` that
    harvest_names may still read): an object's values but numbers and texts that cannot be JSON, or
    `data` itself when it is no object. A tool call's arguments are read for known values by
    structure and, afterwards, every string of them as text: with `unread`, the second reading
    reads only these instead of the 28,000 strings of the other repositories' 6,405 calls, each of
    them read already."""
    if type(data) is dict:
        _collect_object(data, known, "", unread)
    else:
        _collect(data, known, "", None, False, None)
        unread.append(data)


def _collect(data: Any, known: KnownValues, key: str, label: str | None, personal: bool, resource: str | None) -> None:
    if isinstance(data, dict):
        _collect_object(data, known, key, None)
    elif isinstance(data, list):
        for item in data:
            _collect(item, known, key, label, personal, resource)
    elif isinstance(data, str):
        parsed = parse_json_string(data)
        if parsed is not None:
            _collect(parsed, known, key, None, personal, resource)
        elif label is not None:
            known.add(data, label)
        else:
            _collect_from_text(data, known)
    elif label is not None and isinstance(data, (int, float)) and not isinstance(data, bool):
        known.add(data, label)


def _collect_object(data: dict, known: KnownValues, key: str, unread: list[Any] | None) -> None:
    """_collect of an object under `key` (`unread`: see collect_arguments)."""
    keys = tuple(data)
    plan = _PLANS.get((keys, key)) if "resourceType" not in data else None
    if plan is None:
        personal_object = is_personal_object(data, key)
        resource_id = person_resource(data)
        plan = (personal_object, resource_id, child_labels(keys, key, personal_object, resource_id))
        if resource_id is None and len(_PLANS) < 4096 and all(type(raw_key) is str for raw_key in keys):
            _PLANS[(keys, key)] = plan
    personal_object, resource_id, children = plan
    read = known.read
    for (raw_key, value), (child, child_label, payment) in zip(data.items(), children):
        if payment:  # payment methods keyed by their id
            known.add(raw_key, "payment_id")
        if child_label is None:
            # the common leaves inline, as _collect reads them: a number under a key that is not
            # personal gives nothing; a text that is no JSON document is read as text
            # (_collect_from_text, whose first test is inline), one that is is read by structure
            kind = type(value)
            if kind is int:
                continue
            if kind is str:
                parsed = parse_json_string(value) if value[:1] in _JSON_STARTS else None
                if parsed is None:
                    if len(value) >= 6 and value not in read:
                        _read_text(value, known)
                    continue
                _collect(parsed, known, child, None, personal_object, resource_id)
                if unread is not None:
                    unread.append(value)
                continue
        if child == "name" and isinstance(value, (dict, list)):
            child_label = None  # a name object: its parts are labelled below
        _collect(value, known, child, child_label, personal_object, resource_id)
        if unread is not None:
            unread.append(value)


# (an object's keys, its parent key) → (is_personal_object, person_resource, child_labels) of an
# object of text keys without a resourceType: those follow from the keys and the parent key alone,
# and objects of the same keys recur (every tool call of a coding agent has the same arguments)
_PLANS: dict[tuple[tuple[str, ...], str], tuple[bool, str | None, tuple]] = {}


def _collect_from_text(text: str, known: KnownValues) -> None:
    """Values a text puts in a personal position: query-string parameters and what follows a cue."""
    if len(text) >= 6 and text not in known.read:
        _read_text(text, known)


def _read_text(text: str, known: KnownValues) -> None:
    """_collect_from_text of a text of 6 characters or more that `known` has not read (the callers
    that test that inline call this)."""
    known.read.add(text)
    cache = known.cache
    if cache is None:
        findings = _find_in_text(text, known.features)
    else:
        findings = cache.findings.get(text)  # type: ignore[assignment]
        if findings is None:
            findings = _find_in_text(text, known.features)
            if len(cache.findings) < cache.MAX_ENTRIES:
                cache.findings[text] = findings
    for value, label in findings:
        known.add(value, label)


def _find_in_text(text: str, features_of: dict[str, Features] | None = None) -> tuple[tuple[str, str], ...]:
    """The (value, label) of each value `text` puts in a personal position, in order (most texts have
    none). `features_of`: where the text's features are kept (text → Features) for the redactor."""
    found: list[tuple[str, str]] = []
    features = Features(text)
    if features_of is not None:
        features_of[text] = features
    gates = features.gates if "=" in features.marks else frozenset()
    if gates is None or _QUERY_INDEX in gates:  # "=" in the text, and a parameter may be there
        for match in query_params(text):
            label = query_param_label(match)
            if label is not None and match.group(2):
                decoded = unquote_plus(match.group(2))
                found.append((decoded, label))
                if label == PERSON and "," in decoded:
                    found.extend((part, label) for part in decoded.split(","))
    # Most strings in tool results (flight numbers, dates, cities) have no cue at all: one search
    # rules them out before the recognizers run. (A text without a space is not ruled out: a cue
    # needs none, as in "dob:1985-03-12".)
    if _echo_hint(text, features):
        recognizers = _ECHOED_AND_NAMES if CAPITAL_RE.search(text) else _ECHOED_ONLY
        for recognizer in select_recognizers(recognizers, features):
            for match in recognizer.pattern.finditer(text):
                if recognizer.replace is not None and recognizer.replace(match) is None:
                    continue
                found.append((match.group(recognizer.group), recognizer.label))
    return tuple(found) if found else ()


def harvest_names(texts: Iterable[str], known: KnownValues) -> KnownValues:
    """Values that texts put in a personal position anywhere in the session (a name after a cue, a
    DOB after "born", a query parameter) become known values, so that the same value elsewhere —
    without a cue, or in a tool argument — goes too."""
    read = known.read
    for text in texts:
        # _collect_from_text's first test inline: most texts of a session were read already
        if isinstance(text, str) and len(text) >= 6 and text not in read:
            _read_text(text, known)
    return known
