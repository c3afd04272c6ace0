"""The redactor of one session: the agent's patterns, the built-in shapes, the session's known
values and names, applied in that order to texts and by structure to JSON-like values."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .echo import KnownValues, RedactionCache, collect_arguments, collect_known_values, harvest_names
from .keys import child_labels, is_personal_object, key_label, normalise_key, parse_json_string, person_resource
from .recognizers import (
    GATES,
    PLACEHOLDER_RE,
    Features,
    IndexedRecognizers,
    Recognizer,
    compile_agent_patterns,
    run_chain,
    select_recognizers,
    split_placeholders,
)
from .shapes import BUILTIN_RECOGNIZERS, CAPITAL_RE, NAME_RECOGNIZERS, SHAPE_RECOGNIZERS

_NO_PATTERN = re.compile(r"(?!)")
_JSON_STARTS = ("", "{", "[")  # a text that parse_json_string may read as JSON starts so (or is empty)
_OPENINGS = ("{", "[")
# the built-in recognizers indexed by their pre-checks (select_recognizers looks at fewer of them), the
# three lists as one (Redactor._chain), with and without the name recognizers
_BUILTIN_AND_SHAPES = IndexedRecognizers([*BUILTIN_RECOGNIZERS, *SHAPE_RECOGNIZERS])
_BUILTIN_SHAPES_AND_NAMES = IndexedRecognizers([*BUILTIN_RECOGNIZERS, *SHAPE_RECOGNIZERS, *NAME_RECOGNIZERS])
_BUILTIN_IDS = frozenset(map(id, BUILTIN_RECOGNIZERS))
# the keywords and RE2 set patterns by which a name recognizer may be a candidate (IndexedRecognizers)
_NAME_WORDS = frozenset(word for recognizer in NAME_RECOGNIZERS for word in recognizer.words)
_NAME_GATES = frozenset(GATES.index[r.gate_set] for r in NAME_RECOGNIZERS if r.gate is not None and r.gate_set)


def _names_may_match(features: Features) -> bool:
    """Whether a name recognizer may be among the candidates of the text (then the capitalised-word
    test decides): not where the text's keywords and gates are known and hold none of theirs. The
    capitalised-word search then runs on the texts with one (2,933 of the 7,983 excerpt texts of the
    other repositories' import have a space and a capital, the name cue's gate) instead of on all."""
    if not features.folds:
        return True
    gates = features.gates
    return gates is None or not (features.words.isdisjoint(_NAME_WORDS) and gates.isdisjoint(_NAME_GATES))


class Redactor:
    """Redacts text and JSON-like values. Build one per session (known values differ per session)."""

    def __init__(
        self,
        *,
        agent_patterns: Iterable[Mapping[str, Any]] | None = None,
        known: KnownValues | None = None,
        keep: Iterable[str] = (),
        cache: RedactionCache | None = None,
    ):
        """`keep`: words never redacted, such as the agent's tool names in a drafted step
        (`s3Upload` has the shape of an id). `cache`: shared with the other sessions of a batch."""
        self.agent_recognizers = compile_agent_patterns(agent_patterns)
        self._keep = sorted({word for word in keep if isinstance(word, str) and len(word) >= 3}, key=len, reverse=True)
        self.known = known or KnownValues()
        self._lowered = {value.lower(): label for value, label in self.known.values.items()}
        # longest first, so "mia_li_3668" wins over "Mia"
        self._by_length = sorted(self._lowered, key=len, reverse=True)
        self._known_recognizer = Recognizer("known", _NO_PATTERN, apply=self._replace_known)
        self._cache: dict[str, str] = {}
        self._plans: dict[tuple[tuple, str], tuple] = {}  # (an object's keys, its parent key) → _object_plan
        # texts redacted by the built-in rules alone, shared across sessions: only a redactor whose
        # own additions (agent patterns, kept words) are empty may read or fill it
        self._shared = cache.redacted if cache is not None and not self.agent_recognizers and not self._keep else None

    def _shareable(self, text: str) -> bool:
        """True when no known value of the session occurs in `text`: then the known values change
        nothing (the recognizers only ever see parts of the text), and the text redacts as it would
        in any session. Decided for ASCII text only, where parts of the text in lower case are
        parts of the text's lower case."""
        if not self._by_length:
            return True
        if not text.isascii():
            return False
        lowered = text.lower()
        return not any(map(lowered.__contains__, self._by_length))

    def text(self, text: str) -> str:
        if not text:
            return text
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        if self._shared is not None and (not self._by_length or self._shareable(text)):
            redacted = self._shared.get(text)
            if redacted is None:
                redacted = self._redact(text)
                if len(self._shared) < RedactionCache.MAX_ENTRIES:
                    self._shared[text] = redacted
            if len(self._cache) < 4096:
                self._cache[text] = redacted
            return redacted
        kept = [word for word in self._keep if word in text]
        if kept:
            # kept words stand in as placeholders (which no rule touches) and come back after
            sentinels = {f"{{{{keep_{chr(97 + i // 26)}{chr(97 + i % 26)}}}}}": word for i, word in enumerate(kept)}
            masked = text
            for sentinel, word in sentinels.items():
                masked = re.sub(rf"(?<![\w]){re.escape(word)}(?![\w])", sentinel, masked)
            redacted = self._redact(masked)
            for sentinel, word in sentinels.items():
                redacted = redacted.replace(sentinel, word)
        else:
            redacted = self._redact(text)
        if len(self._cache) < 4096:
            self._cache[text] = redacted
        return redacted

    def _redact(self, text: str) -> str:
        # Order matters: whole tokens first (the agent's ids, secrets, e-mails, handles), so that a
        # known first name never splits "mia.li3818@example.com" into "{{person_name}}.li3818@…";
        # then the session's known values (their own placeholders), then id shapes, then names.
        chain = self._chain(text)
        if not chain:  # (4,493 of the 7,983 excerpt texts of the other repositories' import)
            return text
        if "{{" in text:
            return "".join(
                piece if is_placeholder else run_chain(chain, piece)
                for is_placeholder, piece in split_placeholders(text)
            )
        return run_chain(chain, text)

    def _chain(self, text: str) -> list[Recognizer]:
        """The recognizers that may change `text`, in the order they run: the agent's patterns, the
        built-in ones, the known values, the id shapes, the names (with a capitalised word). The
        three built-in lists are selected from at once, as one list (select_recognizers keeps the
        order): one selection a text instead of three (0.025 s instead of 0.037 s on the 7,983
        excerpt texts of the other repositories' import)."""
        features = self.known.features.get(text) or Features(text)  # read already by the echo, often
        chain = select_recognizers(
            _BUILTIN_SHAPES_AND_NAMES
            if _names_may_match(features) and CAPITAL_RE.search(text)
            else _BUILTIN_AND_SHAPES,
            features,
        )
        if self.agent_recognizers or self._by_length:
            builtin = 0  # the built-in ones selected: the agent's patterns go before them, the known values after
            while builtin < len(chain) and id(chain[builtin]) in _BUILTIN_IDS:
                builtin += 1
            if self._by_length:
                chain.insert(builtin, self._known_recognizer)
            chain[:0] = self.agent_recognizers
        return chain

    def _replace_known(self, text: str) -> str:
        """Replaces the session's known values as whole words, ignoring case. Plain substring search
        instead of a regular expression: every session has other values, and compiling a pattern
        for each one cost more than all the other rules together."""
        lowered = text.lower()
        if len(lowered) != len(text):  # a character whose lower case has another length: rare
            pattern = re.compile(
                r"(?<![\w#])(" + "|".join(re.escape(v) for v in self._by_length) + r")(?![\w])", re.IGNORECASE
            )
            return pattern.sub(lambda m: "{{" + self._lowered.get(m.group(1).lower(), "personal_data") + "}}", text)
        spans: list[tuple[int, int, str]] = []
        for value in self._by_length:
            start = lowered.find(value)
            while start >= 0:
                end = start + len(value)
                before = text[start - 1] if start else " "
                after = text[end] if end < len(text) else " "
                if (
                    not (before.isalnum() or before in "_#")
                    and not (after.isalnum() or after == "_")
                    and not any(s < end and start < e for s, e, _ in spans)
                ):
                    spans.append((start, end, value))
                start = lowered.find(value, start + 1)
        if not spans:
            return text
        out, last = [], 0
        for start, end, value in sorted(spans):
            out.append(text[last:start])
            out.append("{{" + self._lowered[value] + "}}")
            last = end
        out.append(text[last:])
        return "".join(out)

    def value(self, data: Any, *, key: str = "") -> Any:
        """Redacts JSON-like data: values in a personal position (see the module docstring) become
        their placeholder outright; every other string (and every object key) goes through `text`."""
        normalised = normalise_key(key) if key else ""
        return self._value(data, normalised, key_label(normalised) if normalised else None, None)

    def _value(self, data: Any, key: str, label: str | None, resource: str | None) -> Any:
        if isinstance(data, dict):
            resource_id, entries = self._object_plan(data, key)
            out = {}
            for value, (out_key, child, child_label) in zip(data.values(), entries):
                kind = type(value)
                if child_label is None and (kind is int or (kind is str and value[:1] not in _JSON_STARTS)):
                    # the common leaves inline, as _value returns them: a number under a key that is not
                    # personal stays; a text that cannot be JSON is redacted as text
                    out[out_key] = value if kind is int else self._text_under(value, child)
                    continue
                if child == "name" and isinstance(value, (dict, list)):
                    child_label = None
                out[out_key] = self._value(value, child, child_label, resource_id)
            return out
        if isinstance(data, list):
            return [self._value(item, key, label, resource) for item in data]
        if label is not None and isinstance(data, (str, int, float)) and not isinstance(data, bool):
            if isinstance(data, str) and (not data.strip() or PLACEHOLDER_RE.fullmatch(data.strip())):
                return data
            if isinstance(data, str) and parse_json_string(data) is not None:
                return json.dumps(self._value(json.loads(data), key, None, resource))
            return "{{" + label + "}}"
        if isinstance(data, str):
            parsed = parse_json_string(data)
            if parsed is not None:
                return json.dumps(self._value(parsed, key, None, resource))
            return self._text_under(data, key)
        return data

    def shown_arguments(self, data: Any, cut: int, show: int) -> dict | None:
        """For an object whose values are all whole numbers, and texts that cannot be JSON (empty, not
        starting with { or [, or starting with {{ as a placeholder does: parse_json_string), under keys
        that are not personal (every coding tool call's arguments): its texts cut to `cut` characters,
        redacted, and cut to `show`, in one pass: what `value` returns for the object with its long
        texts cut (as the excerpt shows a call), with its long texts cut again. None for any other
        value (the caller then cuts, redacts and cuts in three passes). A text longer than a limit is
        cut to its first limit - 1 characters and "…" (as the excerpt cuts)."""
        if type(data) is not dict:
            return None
        resource_id, entries = self._object_plan(data, "")
        if resource_id is not None:
            return None
        out = {}
        for value, (out_key, child, child_label) in zip(data.values(), entries):
            kind = type(value)
            if child_label is not None or not (
                kind is int or (kind is str and (value[:1] not in _OPENINGS or value[:2] == "{{"))
            ):
                return None
            if kind is str and value:  # (an empty text stays as it is)
                if len(value) > cut:
                    value = value[: cut - 1] + "…"
                # _text_under, with the redactor's own cache read here: most texts are short ones
                # that recur in every call (an activity, a step, a path)
                redacted = self._cache.get(value)
                value = self.text(value) if redacted is None else redacted
                if value == "{{id}}" and child:
                    value = "{{" + (re.sub(r"[^a-z_]", "", child).strip("_") or "id") + "}}"
                if len(value) > show:
                    value = value[: show - 1] + "…"
            out[out_key] = value
        return out

    def _object_plan(self, data: dict, key: str) -> tuple[str | None, tuple[tuple[str, str, str | None], ...]]:
        """An object's FHIR resource (person_resource) and, per key, the key redacted, normalised and
        the placeholder of a scalar under it (child_labels). Without a `resourceType` these follow
        from the object's keys and its parent key alone, and objects of the same keys recur (every
        tool call of a coding agent has the same arguments): worked out once per redactor for such
        an object with text keys, instead of for each object (Redactor.value over the 4,913 calls of
        the other repositories' excerpts 0.026-0.027 -> 0.020 s with every text cached)."""
        keys = tuple(data)
        cacheable = "resourceType" not in data
        if cacheable:
            plan = self._plans.get((keys, key))
            if plan is not None:
                return plan
        resource_id = person_resource(data)
        children = child_labels(keys, key, is_personal_object(data, key), resource_id)
        plan = (
            resource_id,
            tuple(
                (self.text(str(raw_key)), child, child_label)
                for raw_key, (child, child_label, _payment) in zip(keys, children)
            ),
        )
        if cacheable and len(self._plans) < 4096 and all(type(raw_key) is str for raw_key in keys):
            self._plans[(keys, key)] = plan
        return plan

    def _text_under(self, data: str, key: str) -> str:
        """A text that is no JSON document, under `key`, redacted."""
        redacted = self.text(data)
        if redacted == "{{id}}" and key:  # a whole value of id shape: name it after its key
            return "{{" + (re.sub(r"[^a-z_]", "", key).strip("_") or "id") + "}}"
        return redacted


def redactor_for_session(
    *,
    structured: Iterable[Any],
    texts: Iterable[str] = (),
    arguments: Iterable[Any] = (),
    agent_patterns: Iterable[Mapping[str, Any]] | None = None,
    cache: RedactionCache | None = None,
) -> Redactor:
    """A redactor that knows the personal values of one session: those its structured data (args,
    tool results) holds in personal positions, and those its texts introduce with a cue. `cache`:
    shared by the sessions of one batch (RedactionCache); the result is the same without it.
    `arguments` (tool calls' arguments) are structured data read before `structured`, whose strings
    are texts read after `texts`: the same as structured=[*arguments, *structured] and
    texts=[*texts, *strings_in(arguments)], with the strings read as text by structure not walked
    again (collect_arguments)."""
    known = KnownValues(cache=cache)
    unread: list[Any] = []
    for item in arguments:
        collect_arguments(item, known, unread)
    for item in structured:
        collect_known_values(item, known)
    harvest_names(texts, known)
    if unread:
        harvest_names(strings_in(unread), known)
    return Redactor(agent_patterns=agent_patterns, known=known, cache=cache)


def strings_in(data: Any) -> Iterator[str]:
    """Every string inside JSON-like data, in order (for harvesting names from free-text arguments).
    Iterative: a generator per level cost more than the harvest on coding sessions."""
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, Mapping):
            stack.extend(reversed(list(item.values())))
        elif isinstance(item, list):
            stack.extend(reversed(item))
