"""Redaction of personal data and secrets (pure Python, no Django).

Everything a reviewer can open — session excerpts, candidate evidence — passes through a
`Redactor` first. Three layers (applied as: agent patterns, built-in recognizers, known values,
then names after a cue — whole tokens such as e-mail addresses go before the names inside them):

1. Known values. Structured data names its personal fields: tool-call arguments and tool results
   carry `first_name`, `user_id`, `email`, `dob`, `payment_id`, `address1`, … (`collect_known_values`).
   Every such value found anywhere in a session is replaced wherever it occurs in that session's
   text, so "Thank you, Mia" is caught because `first_name: "Mia"` was in a tool result. Names are
   also taken from user handles (`sophia_silva_7557`), name-shaped e-mail addresses and names the
   text introduces with a cue ("Hi, I'm Mei Brown" → "Mei Brown, a Gold member" later).
2. Per-agent patterns (`Agent.redaction_patterns`: `[{"label": "order_id", "regex": "\\bORD-\\d{4,}\\b"}]`)
   for ids that no library can know.
3. Pattern recognizers modelled on Microsoft Presidio's predefined pattern recognizers (whose
   analyzer needs spaCy models that cannot be installed here): secrets (API keys, bearer tokens,
   JWTs, `password=`), e-mail addresses, credit card numbers (Luhn-checked), IBANs, US SSNs,
   IP addresses, phone numbers, dates of birth (a date next to "born", "DOB", "birthday"), street
   addresses, payment-method ids (`credit_card_4421486`), user handles (`mia_li_3668`) and names
   after a cue ("my name is …", "Dear …", "Thanks, …").

Every match becomes a typed placeholder such as `{{email_address}}`; placeholders are never matched
again, so redacting twice changes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

PLACEHOLDER_RE = re.compile(r"\{\{[a-z_]+\}\}")

# Structured keys whose values are personal data, and the placeholder each becomes.
PII_KEYS: dict[str, str] = {
    "first_name": "person",
    "last_name": "person",
    "middle_name": "person",
    "full_name": "person",
    "firstname": "person",
    "lastname": "person",
    "given_name": "person",
    "family_name": "person",
    "customer_name": "person",
    "passenger_name": "person",
    "user_id": "user_id",
    "userid": "user_id",
    "customer_id": "user_id",
    "account_id": "account_id",
    "username": "user_id",
    "email": "email_address",
    "email_address": "email_address",
    "phone": "phone_number",
    "phone_number": "phone_number",
    "mobile": "phone_number",
    "dob": "date_of_birth",
    "date_of_birth": "date_of_birth",
    "birthday": "date_of_birth",
    "birth_date": "date_of_birth",
    "payment_id": "payment_id",
    "payment_method_id": "payment_id",
    "card_number": "card_number",
    "last_four": "card_number",
    "iban": "iban",
    "address": "address",
    "address1": "address",
    "address2": "address",
    "street": "address",
    "street_address": "address",
    "zip": "address",
    "zip_code": "address",
    "postal_code": "address",
    "postcode": "address",
    "ssn": "ssn",
    "password": "secret",
    "api_key": "secret",
    "token": "secret",
    "secret": "secret",
}
# "name" is personal only where it holds a person's name: a string directly under a person-like
# object, or an object with first/last name parts (handled by recursion).
_PERSON_CONTAINERS = {"passengers", "saved_passengers", "customer", "user", "contact", "traveler", "travellers", "travelers"}


def _normalise_key(key: str) -> str:
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key)
    return key.strip().lower().replace("-", "_")


def _luhn_ok(digits: str) -> bool:
    total, parity = 0, len(digits) % 2
    for index, char in enumerate(digits):
        value = int(char)
        if index % 2 == parity:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


@dataclass(frozen=True)
class Recognizer:
    label: str
    pattern: re.Pattern
    # Replaces one match; returns None to keep the text (a validator said it is not a real hit).
    replace: Callable[[re.Match], str | None] | None = None
    group: int = 0


def _card(match: re.Match) -> str | None:
    digits = re.sub(r"\D", "", match.group(0))
    return "{{card_number}}" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else None


def _phone(match: re.Match) -> str | None:
    digits = re.sub(r"\D", "", match.group(0))
    return "{{phone_number}}" if 9 <= len(digits) <= 15 else None


_DATE = r"(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}|\d{1,2}(?:st|nd|rd|th)? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*,? \d{4})"
_STREET_SUFFIX = r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way|court|ct|place|pl|terrace|parkway|pkwy|circle|cir|highway|hwy|square|sq)"

BUILTIN_RECOGNIZERS: list[Recognizer] = [
    # secrets first: they may contain anything else
    Recognizer("secret", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    Recognizer("secret", re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}\b")),
    Recognizer("secret", re.compile(r"\b(?:pm_|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|AIza)[A-Za-z0-9_\-]{12,}")),
    Recognizer("secret", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*")),
    Recognizer(
        "secret",
        re.compile(r"(?i)\b(?:api[_ -]?key|access[_ -]?token|auth[_ -]?token|secret|password|passwd|pwd)\b(\s*[:=]\s*|\s+is\s+)(\"?)([^\s\"',;]{4,})"),
        replace=lambda m: m.group(0)[: m.start(3) - m.start(0)] + "{{secret}}",
    ),
    Recognizer("email_address", re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b")),
    Recognizer("iban", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b")),
    Recognizer("card_number", re.compile(r"\b(?:\d[ -]?){12,18}\d\b"), replace=_card),
    Recognizer("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b")),
    Recognizer("ip_address", re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b")),
    Recognizer(
        "date_of_birth",
        re.compile(
            r"(?i)\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on)?)\b[^0-9a-z]{0,12}(?:is |was |on |of )?[^0-9a-z]{0,3}(" + _DATE + r")"
        ),
        replace=lambda m: m.group(0)[: m.start(1) - m.start(0)] + "{{date_of_birth}}",
    ),
    Recognizer(
        "address",
        re.compile(r"(?i)\b\d{1,6}(?: [A-Z][a-z]+){1,4} " + _STREET_SUFFIX + r"\b\.?(?:,? (?:apt|apartment|suite|unit|#) ?[A-Za-z0-9\-]+)?"),
    ),
    Recognizer("address", re.compile(r"(?i)\b(?:apt|apartment|suite|unit)\.? ?#? ?\d+[A-Za-z]?\b")),
    Recognizer(
        "phone_number",
        re.compile(r"(?<![\w{])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?|\d{2,4}[ .\-])\d{3,4}[ .\-]\d{3,4}(?![\w}])"),
        replace=_phone,
    ),
    Recognizer("phone_number", re.compile(r"(?<![\w{])\+\d{9,15}\b")),
    Recognizer("payment_id", re.compile(r"(?i)\b(?:credit_card|debit_card|gift_card|certificate|paypal|bank_account|card|pm)_\d{4,}\b")),
    Recognizer("user_id", re.compile(r"\b[a-z]+_[a-z]+_\d{3,}\b")),
    Recognizer(
        "person",
        re.compile(
            r"(?:\b[Mm]y name is|\b[Tt]his is|\b[Ii] am|\bI'm|\b[Dd]ear|\b[Tt]hanks?,?|\b[Tt]hank you,|\b[Hh]ello,?|\b[Hh]i,?|\b(?:Mr|Mrs|Ms|Miss|Dr)\.?) ((?:[A-Z][a-z'\-]+)(?: [A-Z][a-z'\-]+){0,2})\b"
        ),
        replace=lambda m: None if m.group(1).lower() in _NOT_NAMES else m.group(0)[: m.start(1) - m.start(0)] + "{{person}}",
    ),
]
# Capitalised words after "Hi", "Thanks", "I am" that are not names.
_NOT_NAMES = {
    "there", "again", "team", "all", "everyone", "sir", "madam", "support", "i", "the", "a", "an", "so", "very", "for",
    "sure", "yes", "no", "not", "happy", "sorry", "here", "looking", "trying", "calling", "writing", "interested",
    "afraid", "glad", "good", "great", "ok", "okay", "please", "could", "can", "would", "unable", "also", "just",
    "i'm", "i'd", "i've", "i'll", "we", "we're", "it", "it's", "this", "that", "my", "our", "your",
}


_PERSON_CUE = next(r for r in BUILTIN_RECOGNIZERS if r.label == "person")
_NEEDS_DIGIT = {"iban", "card_number", "ssn", "ip_address", "date_of_birth", "address", "phone_number", "payment_id", "user_id"}
_DIGIT_RE = re.compile(r"\d")


def compile_agent_patterns(patterns: Iterable[Mapping[str, Any]] | None) -> list[Recognizer]:
    """Turns Agent.redaction_patterns into recognizers. Raises ValueError naming the bad entry."""
    compiled: list[Recognizer] = []
    for index, entry in enumerate(patterns or []):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("regex"), str):
            raise ValueError(f"redaction_patterns[{index}]: needs {{\"label\": ..., \"regex\": ...}}")
        label = re.sub(r"[^a-z_]", "_", str(entry.get("label") or "id").lower()) or "id"
        try:
            compiled.append(Recognizer(label, re.compile(entry["regex"])))
        except re.error as exc:
            raise ValueError(f"redaction_patterns[{index}]: invalid regex {entry['regex']!r}: {exc}") from None
    return compiled


def _split_placeholders(text: str) -> list[tuple[bool, str]]:
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


def _apply(recognizer: Recognizer, text: str) -> str:
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
        for is_placeholder, piece in _split_placeholders(text)
    )


_HANDLE_RE = re.compile(r"^([a-z]+)_([a-z]+)_\d+$")
_EMAIL_NAME_RE = re.compile(r"^([a-z]+)[._]([a-z]+)\d*@", re.IGNORECASE)


@dataclass
class KnownValues:
    """Personal values found in one session's structured data: value → placeholder label."""

    values: dict[str, str] = field(default_factory=dict)

    def add(self, value: Any, label: str) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            return
        value = value.strip()
        if len(value) < 2 or PLACEHOLDER_RE.fullmatch(value):
            return
        self.values.setdefault(value, label)
        if label == "person" and " " in value:  # "Mia Li" → also "Mia" and "Li"
            for part in value.split():
                if len(part) >= 2:
                    self.values.setdefault(part, label)
        # Handles and addresses built from a name give the name away even where no tool result
        # spells it out: sophia_silva_7557 → Sophia, Silva; mia.li3818@… → Mia, Li.
        handle = _HANDLE_RE.match(value) if label == "user_id" else None
        if handle is None and label == "email_address":
            handle = _EMAIL_NAME_RE.match(value)
        if handle is not None:
            for part in handle.groups():
                if len(part) >= 2:
                    self.values.setdefault(part, "person")

    def pattern(self) -> re.Pattern | None:
        if not self.values:
            return None
        # longest first, so "mia_li_3668" wins over "Mia"
        alternatives = sorted(self.values, key=len, reverse=True)
        return re.compile(r"(?<![\w])(" + "|".join(re.escape(v) for v in alternatives) + r")(?![\w])", re.IGNORECASE)


def collect_known_values(data: Any, known: KnownValues | None = None, *, parent_key: str = "") -> KnownValues:
    """Walks JSON-like data (tool-call args, parsed tool results) and records personal values by key."""
    known = known if known is not None else KnownValues()
    if isinstance(data, Mapping):
        for raw_key, value in data.items():
            key = _normalise_key(str(raw_key))
            label = PII_KEYS.get(key)
            if key == "name" and (isinstance(value, str) and parent_key in _PERSON_CONTAINERS):
                label = "person"
            if label is not None and not isinstance(value, (Mapping, list)):
                known.add(value, label)
            if key == "name" and isinstance(value, Mapping):
                for part in value.values():
                    known.add(part, "person")
            collect_known_values(value, known, parent_key=key)
    elif isinstance(data, list):
        for item in data:
            collect_known_values(item, known, parent_key=parent_key)
    elif isinstance(data, str) and data[:1] in "{[":
        try:
            parsed = json.loads(data)
        except ValueError:
            return known
        collect_known_values(parsed, known, parent_key=parent_key)
    return known


class Redactor:
    """Redacts text and JSON-like values. Build one per session (known values differ per session)."""

    def __init__(self, *, agent_patterns: Iterable[Mapping[str, Any]] | None = None, known: KnownValues | None = None):
        self.agent_recognizers = compile_agent_patterns(agent_patterns)
        self.known = known or KnownValues()
        self._known_pattern = self.known.pattern()
        self._cache: dict[str, str] = {}

    def text(self, text: str) -> str:
        if not text:
            return text
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        redacted = self._redact(text)
        if len(self._cache) < 4096:
            self._cache[text] = redacted
        return redacted

    def _redact(self, text: str) -> str:
        # Recognizers that need a digit or an "@" are skipped for text without one: most strings in
        # tool arguments are short enums and ids, and ingestion redacts every one of them.
        has_digit = _DIGIT_RE.search(text) is not None
        has_at = "@" in text
        # Order matters: whole tokens first (the agent's ids, e-mails, handles), so that a known
        # first name never splits "mia.li3818@example.com" into "{{person}}.li3818@…".
        for recognizer in self.agent_recognizers:
            text = _apply(recognizer, text)
        for recognizer in BUILTIN_RECOGNIZERS:
            if recognizer is _PERSON_CUE or (recognizer.label in _NEEDS_DIGIT and not has_digit):
                continue
            if recognizer.label == "email_address" and not has_at:
                continue
            text = _apply(recognizer, text)
        if self._known_pattern is not None:
            text = "".join(
                piece if is_placeholder else self._known_pattern.sub(lambda m: "{{" + self._label_for(m.group(1)) + "}}", piece)
                for is_placeholder, piece in _split_placeholders(text)
            )
        return _apply(_PERSON_CUE, text)

    def _label_for(self, matched: str) -> str:
        label = self.known.values.get(matched)
        if label is None:
            lowered = matched.lower()
            label = next((lab for value, lab in self.known.values.items() if value.lower() == lowered), "personal_data")
        return label

    def value(self, data: Any, *, key: str = "") -> Any:
        """Redacts JSON-like data: values under personal keys become their placeholder outright;
        every other string (and every dict key) goes through `text`."""
        normalised = _normalise_key(key) if key else ""
        label = PII_KEYS.get(normalised)
        if label is not None and isinstance(data, (str, int, float)) and not isinstance(data, bool):
            return "{{" + label + "}}"
        if isinstance(data, Mapping):
            return {self.text(str(k)): self.value(v, key=str(k)) for k, v in data.items()}
        if isinstance(data, list):
            return [self.value(item, key=key) for item in data]
        if isinstance(data, str):
            return self.text(data)
        return data


def harvest_names(texts: Iterable[str], known: KnownValues) -> KnownValues:
    """Names introduced with a cue anywhere in the session ("Hi, I'm Mei Brown") become known
    values, so that the same name without a cue elsewhere ("Mei Brown, a Gold member, …") goes too."""
    for text in texts:
        if not isinstance(text, str):
            continue
        for match in _PERSON_CUE.pattern.finditer(text):
            name = match.group(1)
            if name.lower() not in _NOT_NAMES:
                known.add(name, "person")
    return known


def redactor_for_session(
    *, structured: Iterable[Any], texts: Iterable[str] = (), agent_patterns: Iterable[Mapping[str, Any]] | None = None
) -> Redactor:
    """A redactor that knows the personal values of one session: those its structured data (args,
    tool results) names by key, and the names its text introduces."""
    known = KnownValues()
    for item in structured:
        collect_known_values(item, known)
    harvest_names(texts, known)
    return Redactor(agent_patterns=agent_patterns, known=known)


def strings_in(data: Any) -> Iterator[str]:
    """Every string inside JSON-like data (for harvesting names from free-text arguments)."""
    if isinstance(data, str):
        yield data
    elif isinstance(data, Mapping):
        for value in data.values():
            yield from strings_in(value)
    elif isinstance(data, list):
        for item in data:
            yield from strings_in(item)


def contains_placeholder(text: str) -> bool:
    return bool(PLACEHOLDER_RE.search(text or ""))
