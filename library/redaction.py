"""Redaction of personal data and secrets (pure Python, no Django).

Everything a reviewer can open — session excerpts, candidate evidence and steps, eval cases made
from sessions — passes through a `Redactor` first. It works by structure, by shape and by echo
(docs/redaction.md has the rules, the measurements behind them and the placeholders):

1. Structure. Tool-call arguments and tool results name their personal fields. A value under a
   personal key at any depth becomes a placeholder named after the key: name parts (`first_name`,
   `given`, `family`, a `name` beside personal fields, FHIR `name: [{given, family, text}]`) →
   `{{person_name}}`; birth dates (`dob`, `birthdate`, `birthDate`) → `{{birth_date}}`; id keys
   (`*_id`, `id` beside personal fields, `mrn`, `member`, `patient`, `reservation(s)`, `order(s)`,
   `confirmation`) → `{{reservation_id}}`, `{{patient_id}}`, …; e-mail, phone, address lines,
   payment ids, passports and licences likewise. Query strings of HTTP-style calls
   (`Patient?name=…&birthdate=…`) are read the same way.
2. Echo. Every value seen once in a personal position — by key, in a query string, or after a cue
   in the text ("born 1970-01-01", "my name is …") — becomes a known value of the session and is
   replaced wherever it occurs in that session, free text included: "Thank you, Mia" goes because
   `first_name: "Mia"` was in a tool result; a DOB named in the task goes from the arguments too.
3. Shape. Recognizers modelled on Microsoft Presidio's pattern recognizers, extended for what
   agents' sessions carry: secrets, e-mail, Luhn-checked cards, IBANs, SSNs, IP addresses, phone
   numbers (international, and national with a trunk 0 such as "0151 23456789"), street addresses
   (English "221B Baker Street" and German "Hauptstraße 5, 10115 Berlin"), payment-method ids,
   user handles, id-shaped tokens (letters mixed with digits — `4WQ150`, `S6534835`, `#W1234567`,
   `ORD-12345`, `C-998877` — and all-caps codes of 5–10 letters after an id word such as
   "reservation"), FHIR references (`Patient/123`), passport and licence numbers after their cue, and
   names after a cue ("my name is …", "Customer Anna Schmidt", "John Smith called").
4. Per-agent patterns (`Agent.redaction_patterns`) for ids that no rule can know.

Every match becomes a typed placeholder; placeholders are never matched again, so redacting twice
changes nothing.
"""

from __future__ import annotations

import json
import re
from re import _constants as sre_constants  # the parser of `re` itself, for slow_pattern_problem
from re import _parser as sre_parse
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from urllib.parse import unquote_plus

PLACEHOLDER_RE = re.compile(r"\{\{[a-z_]+\}\}")

PERSON = "person_name"
BIRTH = "birth_date"

# Structured keys (normalised: snake_case, lower case) whose values are personal data, and the
# placeholder each becomes. Keys ending in `_id` that are not listed become `{{<key>}}`.
PII_KEYS: dict[str, str] = {
    **dict.fromkeys(
        (
            "first_name", "last_name", "middle_name", "full_name", "firstname", "lastname", "given_name",
            "family_name", "given", "family", "customer_name", "passenger_name", "patient_name", "person_name",
            "maiden_name", "birth_name", "display_name", "contact_name", "account_holder", "cardholder_name",
        ),
        PERSON,
    ),
    **dict.fromkeys(("dob", "date_of_birth", "birthday", "birth_date", "birthdate", "born", "born_on"), BIRTH),
    **dict.fromkeys(("user_id", "userid", "username", "user_name", "login"), "user_id"),
    **dict.fromkeys(("customer_id", "customer", "client_id"), "customer_id"),
    "account_id": "account_id",
    "account_number": "account_id",
    **dict.fromkeys(("email", "email_address", "e_mail"), "email_address"),
    **dict.fromkeys(("phone", "phone_number", "mobile", "mobile_number", "telephone", "fax"), "phone_number"),
    **dict.fromkeys(("payment_id", "payment_method_id", "payment_method"), "payment_id"),
    **dict.fromkeys(("card_number", "last_four", "card_last_four", "cvv", "cvc"), "card_number"),
    "iban": "iban",
    **dict.fromkeys(
        ("address", "address1", "address2", "address_line", "address_line1", "address_line2", "street",
         "street_address"),
        "address",
    ),
    **dict.fromkeys(("zip", "zip_code", "zipcode", "postal_code", "postcode", "address_postalcode"), "postal_code"),
    **dict.fromkeys(("ssn", "social_security_number"), "ssn"),
    **dict.fromkeys(("national_id", "national_id_number", "tax_id", "id_number", "id_card"), "national_id"),
    **dict.fromkeys(("mrn", "medical_record_number", "record_number"), "medical_record_number"),
    **dict.fromkeys(("member", "member_id", "member_number", "membership_number", "membership_id"), "member_id"),
    **dict.fromkeys(("patient", "patient_id", "subject_id"), "patient_id"),
    **dict.fromkeys(("reservation", "reservation_id", "reservations", "booking", "booking_id", "booking_reference", "pnr"), "reservation_id"),
    **dict.fromkeys(("order", "order_id", "orders", "order_number"), "order_id"),
    **dict.fromkeys(("confirmation", "confirmation_number", "confirmation_code", "confirmation_id"), "confirmation_number"),
    **dict.fromkeys(("passport", "passport_number", "passport_no"), "passport_number"),
    **dict.fromkeys(
        ("license_number", "licence_number", "driver_license", "drivers_license", "driving_licence",
         "driving_license", "driver_license_number"),
        "licence_number",
    ),
    **dict.fromkeys(("password", "api_key", "token", "secret", "access_token", "refresh_token"), "secret"),
}
# Keys whose values are plain text that may mention anything (never replaced by key).
_NOT_PERSONAL = {"resource_type", "status", "use", "system", "source", "type"}
# Objects that describe a person: their `name` and `id` are personal.
_PERSON_CONTAINERS = {
    "passengers", "saved_passengers", "passenger", "customer", "user", "contact", "contacts", "traveler", "traveller",
    "travelers", "travellers", "patient", "person", "guest", "guests", "member", "subject", "owner", "holder",
    "account_holder", "recipient", "sender", "employee", "emergency_contact", "related_person", "practitioner",
}
# Inside these containers the `value`/`text`/`line` strings are personal (FHIR identifier, telecom,
# HumanName, Address).
_VALUE_CONTAINERS = {"identifier": "identifier", "identifiers": "identifier", "telecom": "contact", "name": PERSON, "address": "address"}
_FHIR_PERSON_RESOURCES = {"patient", "person", "relatedperson", "practitioner"}


@lru_cache(maxsize=4096)
def _normalise_key(key: str) -> str:
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key.strip())
    return key.lower().replace("-", "_").replace(" ", "_").replace(".", "_")


@lru_cache(maxsize=4096)
def _key_label(key: str) -> str | None:
    """The placeholder for a value under this (normalised) key, if the key alone makes it personal."""
    label = PII_KEYS.get(key)
    if label is not None or key in _NOT_PERSONAL:
        return label
    if key.endswith("_id") or key.endswith("_ids"):
        label = re.sub(r"[^a-z_]", "", key.removesuffix("s")).strip("_")
        return label or "id"
    if key in ("_id", "ids"):
        return "id"
    return None


def _is_personal_object(mapping: Mapping, parent_key: str) -> bool:
    """An object describes a person when it sits under a person container, is a FHIR Patient-like
    resource, or has personal fields of its own (a `name` beside a `birthDate`, an `id` beside an e-mail)."""
    if parent_key in _PERSON_CONTAINERS:
        return True
    resource = mapping.get("resourceType")
    if isinstance(resource, str) and resource.lower() in _FHIR_PERSON_RESOURCES:
        return True
    return _has_personal_key(tuple(mapping))


@lru_cache(maxsize=4096)
def _has_personal_key(keys: tuple) -> bool:
    """Whether one of an object's keys is a personal field (objects of the same keys recur: every
    tool call of an agent has the same argument names)."""
    for raw_key in keys:
        key = _normalise_key(str(raw_key))
        if key not in ("id", "name") and PII_KEYS.get(key) in (PERSON, BIRTH, "email_address", "phone_number", "address", "user_id", "ssn", "national_id"):
            return True
    return False


def _leaf_label(key: str, parent_key: str, personal_object: bool, resource: str | None) -> str | None:
    """The placeholder for a scalar under `key` inside an object under `parent_key`, or None."""
    label = _key_label(key)
    if label is not None:
        return label
    container = _VALUE_CONTAINERS.get(parent_key)
    if container is not None and key in ("value", "text", "line", "prefix", "suffix"):
        return container
    if personal_object:
        if key == "id":
            return f"{resource}_id" if resource else "id"
        if key in ("name", "text"):
            return PERSON
    return None


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
    # The group that holds the personal value (for echo); 0 is the whole match.
    group: int = 0
    # Only worth running on text that has this feature ("digit", "@", "=", "/"): a cheap pre-check.
    needs: str = ""
    # Only worth running on text that holds one of these lower-case words (in any case): keywords
    # every match contains, read off the pattern, checked with a substring search of the text in
    # lower case. A necessary condition, so skipping changes nothing; texts with one of the four
    # non-ASCII characters that case-insensitive patterns fold to ASCII ("İ", "ı", "ſ", "K")
    # always run the pattern (_folds_like_ascii).
    words: tuple[str, ...] = ()
    # Only worth running on text where this cheap pattern matches: a part every match contains,
    # written so that the regular-expression engine can skip to its first character (the
    # recognizers start with \b or a lookbehind, which makes the engine try every position): a
    # rare literal first, what precedes it as a lookbehind (`-(?<=\d{3}-)\d{2}-\d{4}` for SSNs).
    # Case-insensitive recognizers use it only on texts `words` may be checked on.
    gate: re.Pattern | None = None
    # Replaces in the whole text instead of `pattern` (the session's known values).
    apply: Callable[[str], str] | None = None
    # Any other necessary condition, read off the text's features (after `needs`, `words`, `gate`).
    check: Callable[["_Features"], bool] | None = None


def _keep_prefix(group: int, label: str) -> Callable[[re.Match], str]:
    return lambda m: m.group(0)[: m.start(group) - m.start(0)] + "{{" + label + "}}" + m.group(0)[m.end(group) - m.start(0):]


def _after_cue(
    label: str, pattern: re.Pattern, *, needs: str = "digit", replace=None, words: tuple[str, ...] = (), gate: re.Pattern | None = None,
    check: Callable[["_Features"], bool] | None = None,
) -> Recognizer:
    """A value announced by a cue ("passport no. X", "zip 12345", "customer Jane Doe"): group 1 is the
    value and is replaced by the placeholder; the cue stays."""
    return Recognizer(
        label, pattern, replace=replace or _keep_prefix(1, label), group=1, needs=needs, words=words, gate=gate, check=check
    )


def _card(match: re.Match) -> str | None:
    digits = re.sub(r"\D", "", match.group(0))
    return "{{card_number}}" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else None


def _phone(match: re.Match) -> str | None:
    digits = re.sub(r"\D", "", match.group(0))
    return "{{phone_number}}" if 9 <= len(digits) <= 15 else None


# --- id-shaped tokens ------------------------------------------------------------------------------
# Letters mixed with digits (optionally joined by hyphens, optionally after "#"), at least five
# letters-or-digits, with an upper-case letter or at least two digits: 4WQ150, S6534835, #W1234567,
# ORD-12345, C-998877. Ordinals, times and units (24th, 9pm, 1000ml, 24-hour) are not ids, nor are
# the escapes of code ('\u00a1', '\x1b'); a token after any other backslash is (C:\Users\AB12345).
_MIXED_ID_RE = re.compile(
    r"(?<![\w{}#\-@.])(?!(?<=\\)(?:u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2})(?![A-Za-z0-9]))#?(?=[A-Za-z0-9\-]*\d)(?=[A-Za-z0-9\-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w{}@#]|-\w|\.\w)"
)
_UNIT_RE = re.compile(
    r"^\d+(?:st|nd|rd|th|am|pm|a|p|s|k|m|x|h|hr|hrs|min|mins|ml|l|mg|g|kg|km|cm|mm|gb|mb|tb|kb|lb|lbs|oz|in|ft|px|pt|d|y)$",
    re.IGNORECASE,
)
# "24-hour", "covid-19", and dates with a time ("2024-05-02T03") are not ids either.
_NOT_ID_RE = re.compile(r"^\d+-[a-z]+(?:-[a-z]+)*$|^[a-z]+-\d{1,3}$|^\d{4}-\d{1,2}-\d{1,2}")


def _mixed_id(match: re.Match) -> str | None:
    token = match.group(0)
    core = token.lstrip("#")
    alnum = core.replace("-", "")
    if len(alnum) < 5 or _UNIT_RE.match(core) or _NOT_ID_RE.match(core):
        return None
    digits = sum(char.isdigit() for char in alnum)
    if not (any(char.isupper() for char in alnum) or digits >= 2):
        return None
    return "{{id}}"


# All-caps letter codes (VAAOXJ) are ids only after an id word in the same sentence: shouted words
# ("PLEASE") are not.
_CAPS_CODE_RE = re.compile(r"(?<![\w{}#\-])[A-Z]{5,10}(?![\w{}\-])")
_ID_CUE_RE = re.compile(
    r"(?i)\b(?:reservations?|bookings?|confirmations?|orders?|codes?|records?|tickets?|locators?|pnrs?|ref|reference|"
    r"ids?|numbers?|no|nr|mrn|members?|membership|vouchers?|trips?|accounts?|patients?|cases?|claims?|policy|passport|licen[cs]e)\b"
)


def _caps_code(match: re.Match) -> str | None:
    before = match.string[max(0, match.start() - 60) : match.start()]
    before = re.split(r"[.!?\n]\s", before)[-1]
    return "{{id}}" if _ID_CUE_RE.search(before) else None


_DATE = r"(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*,? \d{4})"
_STREET_SUFFIX = r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way|court|ct|place|pl|terrace|parkway|pkwy|circle|cir|highway|hwy|square|sq|close|crescent|row|walk|gardens|hill)"
_DE_STREET_WORDS = ("straße", "strasse", "str.", "weg", "gasse", "platz", "allee", "ring", "damm", "ufer", "chaussee", "steig", "pfad")
_DE_STREET_NAMES = ("Straße", "Strasse", "Str.", "Weg", "Gasse", "Platz", "Allee", "Ring", "Damm", "Ufer")
_DE_STREET = "(?:" + "|".join(map(re.escape, _DE_STREET_WORDS)) + ")"
# A street word, an optional space, a digit — as a digit with the street word behind it, so that the
# engine only stops at digits (an alternation of words is tried at every position); the last letters
# of the words are looked behind for first, which rules out most digits at once.
_DE_STREET_ENDS = re.escape("".join(sorted({word[-1] for word in (*_DE_STREET_WORDS, *_DE_STREET_NAMES)})))
_DE_STREET_NUMBER_GATE = re.compile(
    rf"\d(?:(?<=[{_DE_STREET_ENDS}]\d)|(?<=[{_DE_STREET_ENDS}] \d))"
    r"(?:" + "|".join(f"(?<={re.escape(word)}{space}\\d)" for word in (*_DE_STREET_WORDS, *_DE_STREET_NAMES) for space in ("", " ")) + ")"
)
_NAME_WORD = r"[A-Z](?:[a-z]+|'[A-Z][a-z]+)(?:-[A-Z][a-z]+)?"

# Query strings of HTTP-style calls: `Patient?name=John%20Smith&birthdate=1970-01-01`.
_QUERY_PARAM_RE = re.compile(r"(?:(?<=[?&;])|^)([A-Za-z_][\w.\-:]*)=([^&#\s;]*)")
_QUERY_DELIMITER_RE = re.compile(r"[?&;]")


def _query_params(text: str) -> Iterator[re.Match]:
    """The matches of _QUERY_PARAM_RE.finditer(text), trying the pattern only where a match can
    start — at 0 and after "?", "&" or ";" — instead of at every position of the text."""
    end = 0
    match = _QUERY_PARAM_RE.match(text)
    if match is not None:
        end = match.end()
        yield match
    for delimiter in _QUERY_DELIMITER_RE.finditer(text):
        start = delimiter.end()
        if start < end:  # inside the last match
            continue
        match = _QUERY_PARAM_RE.match(text, start)
        if match is not None:
            end = match.end()
            yield match


def _query_param(match: re.Match) -> str | None:
    key = _normalise_key(match.group(1).split(":", 1)[0])
    label = _key_label(key) or ("address" if key.startswith("address") else None) or (PERSON if key == "name" else None)
    if label is None or not match.group(2) or PLACEHOLDER_RE.fullmatch(match.group(2)):
        return None
    return match.group(1) + "={{" + label + "}}"


def _replace_query_params(text: str) -> str:
    """_QUERY_PARAM_RE.sub with _query_param (a match it declines stays as it is), on the matches of
    _query_params."""
    out: list[str] = []
    last = 0
    for match in _query_params(text):
        replaced = _query_param(match)
        if replaced is not None:
            out.append(text[last : match.start()])
            out.append(replaced)
            last = match.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


BUILTIN_RECOGNIZERS: list[Recognizer] = [
    # secrets first: they may contain anything else
    Recognizer("secret", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), words=("eyj",)),
    Recognizer(
        "secret", re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}\b"),
        words=("sk-", "sk_", "pk-", "pk_", "rk-", "rk_"),
    ),
    Recognizer(
        "secret", re.compile(r"\b(?:pm_|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|AIza)[A-Za-z0-9_\-]{12,}"),
        words=("pm_", "ghp_", "gho_", "ghs_", "github_pat_", "xox", "akia", "asia", "aiza"),
    ),
    Recognizer("secret", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*"), words=("bearer",)),
    Recognizer(
        "secret",
        re.compile(r"(?i)\b(?:api[_ -]?key|access[_ -]?token|auth[_ -]?token|secret|password|passwd|pwd)\b(\s*[:=]\s*|\s+is\s+)(\"?)([^\s\"',;]{4,})"),
        replace=lambda m: m.group(0)[: m.start(3) - m.start(0)] + "{{secret}}",
        words=("api", "token", "secret", "passw", "pwd"),
    ),
    Recognizer(
        "query", _QUERY_PARAM_RE, replace=_query_param, group=2, needs="=", gate=re.compile(r"=(?<=[\w.\-:]=)"),
        apply=_replace_query_params,
    ),
    Recognizer("email_address", re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b"), needs="@"),
    Recognizer("iban", re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"), needs="digit", gate=re.compile(r"\d(?<=[A-Z]{2}\d)\d")),
    Recognizer(
        "card_number", re.compile(r"\b(?:\d[ -]?){12,18}\d\b"), replace=_card, needs="digit",
        gate=re.compile(r"\d(?:[ -]?\d){12}"),
    ),
    Recognizer("ssn", re.compile(r"\b\d{3}-\d{2}-\d{4}\b"), needs="digit", gate=re.compile(r"-(?<=\d{3}-)\d{2}-\d{4}")),
    Recognizer(
        "ip_address", re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"), needs="digit",
        gate=re.compile(r"\.(?<=\d\.)\d{1,3}\.\d{1,3}\.\d"),
    ),
    _after_cue(
        BIRTH,
        re.compile(
            r"(?i)\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on| in)?|geboren(?: am)?)\b[^0-9a-z{]{0,12}(?:is |was |on |of )?[^0-9a-z{]{0,3}(" + _DATE + r")"
        ),
        words=("dob", "d.o.b", "birth", "born", "geboren"),
    ),
    _after_cue(
        "passport_number", re.compile(r"(?i)\bpassport(?: (?:no\.?|number|nr\.?|#|id))?(?: is|:)?\s*#?\s*([A-Z0-9][A-Z0-9\-]{4,14})\b"),
        words=("passport",),
    ),
    _after_cue(
        "licence_number",
        re.compile(r"(?i)\b(?:driver'?s |driving )?licen[cs]e(?: (?:no\.?|number|nr\.?|#|id))?(?: is|:)?\s*#?\s*([A-Z0-9][A-Z0-9\-]{4,17})\b"),
        replace=lambda m: None if not re.search(r"\d", m.group(1)) else _keep_prefix(1, "licence_number")(m),
        words=("licence", "license"),
    ),
    Recognizer(
        "address",
        re.compile(
            r"(?i)\b\d{1,6}[A-Za-z]?(?: [A-Z][a-z]+){1,4} " + _STREET_SUFFIX + r"\b\.?(?:,? (?:apt|apartment|suite|unit|flat|#) ?[A-Za-z0-9\-]+)?"
        ),
        needs="digit",
        gate=re.compile(r"\d[A-Za-z]? [A-Za-z]"),
    ),
    Recognizer(
        "address",
        re.compile(
            r"(?:\b[A-ZÄÖÜ][a-zäöüß]+[ \-])?\b[A-ZÄÖÜ][a-zäöüß]*(?:" + _DE_STREET + r"|[ \-](?:" + "|".join(map(re.escape, _DE_STREET_NAMES)) + "))"
            r" ?\d{1,4}(?: ?[a-z]\b)?(?:,? \d{5}(?: [A-ZÄÖÜ][a-zäöüß]+(?:[ \-][A-ZÄÖÜ][a-zäöüß]+)?)?)?"
        ),
        needs="digit",
        gate=_DE_STREET_NUMBER_GATE,
    ),
    Recognizer(
        "address", re.compile(r"(?i)\b(?:apt|apartment|suite|unit)\.? ?#? ?\d+[A-Za-z]?\b"), needs="digit",
        words=("apt", "apartment", "suite", "unit"),
    ),
    _after_cue(
        "postal_code", re.compile(r"(?i)\b(?:zip|zip code|zipcode|postal code|postcode|plz)\b(?: is|:)?\s*(\d{4,5}(?:-\d{4})?)\b"),
        words=("zip", "postal", "postcode", "plz"),
    ),
    Recognizer(
        "phone_number",
        re.compile(r"(?<![\w{])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?|\d{2,4}[ .\-])\d{3,4}[ .\-]\d{3,4}(?![\w}])"),
        replace=_phone,
        needs="digit",
        gate=re.compile(r"\d{3}[ .\-]\d{3}"),
    ),
    # national numbers with a trunk 0 (German mobile "0151 23456789", "030/1234567")
    Recognizer(
        "phone_number", re.compile(r"(?<![\w{])\(?0\d{2,4}\)?[ /\-]?\d{5,9}(?![\w}])"), replace=_phone, needs="digit",
        gate=re.compile(r"0\d{2,4}\)?[ /\-]?\d{5}"),  # the number without its edges: from the 0 to 5 digits after
    ),
    # international numbers in any grouping (+49 30 5511786, +44 20 7946 0958, +4915123456789)
    Recognizer(
        "phone_number", re.compile(r"(?<![\w{+])\+\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){1,5}(?![\w}])"), replace=_phone, needs="digit",
        gate=re.compile(r"\+\d"),
    ),
    Recognizer(
        "payment_id",
        re.compile(r"(?i)\b(?:credit_card|debit_card|gift_card|certificate|paypal|bank_account|card|pm)_\d{4,}\b"),
        needs="digit",
        words=("card_", "certificate_", "paypal_", "bank_account_", "pm_"),
    ),
    Recognizer("user_id", re.compile(r"\b[a-z]+_[a-z]+_\d{3,}\b"), needs="digit", gate=re.compile(r"_(?<=[a-z]_)\d{3}")),
    Recognizer(
        "patient_id",
        re.compile(r"\b(Patient|Person|RelatedPerson|Practitioner)/([A-Za-z0-9\-.]{1,64})"),
        replace=lambda m: f"{m.group(1)}/{{{{{'patient_id' if m.group(1) == 'Patient' else 'person_id'}}}}}",
        group=2,
        needs="/",
        words=("patient/", "person/", "practitioner/"),
    ),
]
# Id shapes run after the echo, so that a value the session named (reservation_id: 4WQ150) keeps
# its own placeholder; these catch the ids no structure named.
SHAPE_RECOGNIZERS: list[Recognizer] = [
    Recognizer("id", _MIXED_ID_RE, replace=_mixed_id, needs="digit"),
    Recognizer("id", _CAPS_CODE_RE, replace=_caps_code, gate=re.compile(r"[A-Z]{5}")),
]

# Capitalised words after "Hi", "Thanks", "I am" that are not names.
_NOT_NAMES = {
    "there", "again", "team", "all", "everyone", "sir", "madam", "support", "i", "the", "a", "an", "so", "very", "for",
    "sure", "yes", "no", "not", "happy", "sorry", "here", "looking", "trying", "calling", "writing", "interested",
    "afraid", "glad", "good", "great", "ok", "okay", "please", "could", "can", "would", "unable", "also", "just",
    "i'm", "i'd", "i've", "i'll", "we", "we're", "it", "it's", "this", "that", "my", "our", "your", "service", "services",
    "care", "desk", "center", "centre", "agent", "agents", "relations", "account", "accounts", "id", "number", "support",
}
_CUES = (
    r"\b[Nn]ame is|\b[Nn]ame:|\b[Yy]ou are|\b[Yy]ou're|\b[Tt]his is|\b[Ii] am|\bI'm|\b[Dd]ear|\b[Tt]hanks?,?|\b[Tt]hank you,|\b[Hh]ello,?|\b[Hh]i,?"
    r"|\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Herr|Frau)\.?|\b(?:named|belongs to|belonging to|on behalf of|signed by|booked for|addressed to)"
    r"|\b[Tt]hanks to"
    r"|\b(?:[Cc]ustomer|[Cc]lient|[Cc]aller|[Pp]atient|[Pp]assenger|[Gg]uest|[Mm]ember|[Tt]raveller|[Tt]raveler|[Cc]ardholder|[Aa]ccount holder|[Ss]ubscriber|[Kk]unde|[Kk]undin)"
)
# Names the text introduces: after a cue ("Customer Anna Schmidt"), or two capitalised words before
# a verb of contact ("John Smith called").
_NOT_A_NAME = r"(?!(?i:" + "|".join(re.escape(w) for w in sorted(_NOT_NAMES, key=len, reverse=True)) + r")\b)"
# Each cue of _CUES in lower case with the space after it (a cue that may end in "," or "." once
# with and once without): what the text in lower case holds right before the name.
_CUE_WORDS = (
    "name is ", "name: ", "you are ", "you're ", "this is ", "i am ", "i'm ", "dear ", "thank ", "thank, ", "thanks ", "thanks, ",
    "thank you, ", "hello ", "hello, ", "hi ", "hi, ", "mr ", "mr. ", "mrs ", "mrs. ", "ms ", "ms. ", "miss ", "miss. ",
    "mx ", "mx. ", "dr ", "dr. ", "prof ", "prof. ", "herr ", "herr. ", "frau ", "frau. ", "named ", "belongs to ",
    "belonging to ", "on behalf of ", "signed by ", "booked for ", "addressed to ", "customer ", "client ", "caller ",
    "patient ", "passenger ", "guest ", "member ", "traveller ", "traveler ", "cardholder ", "account holder ",
    "subscriber ", "kunde ", "kundin ", "thanks to ",
)
_SPACE_CAPITAL_RE = re.compile(r" [A-Z]")


def _cue_before_capital(features: _Features) -> bool:
    """A cue word right before a space and a capital: every match of _PERSON_CUE has one. One
    `endswith` per space-capital instead of a substring search per cue word."""
    lowered = features.lowered
    if lowered is None:
        return True
    return any(lowered.endswith(_CUE_WORDS, 0, match.start() + 1) for match in _SPACE_CAPITAL_RE.finditer(features.text))


_PERSON_CUE = _after_cue(
    PERSON, re.compile(r"(?:" + _CUES + r") " + _NOT_A_NAME + r"(" + _NAME_WORD + r"(?: " + _NAME_WORD + r"){0,2})\b"), needs="",
    gate=_SPACE_CAPITAL_RE,  # the name after the cue: a space, then a capital
    check=_cue_before_capital,
)
# two capitalised words before a verb of contact; every match of _PERSON_VERB holds a match of this
# (the pattern without its leading checks), which starts with a capital the engine can scan for
_NAME_BEFORE_VERB = (
    r"(" + _NAME_WORD + r" " + _NAME_WORD + r")(?:'s)? (?:has |had |just |again |also |then )?(?:called|phoned|rang|wrote|emailed|e-mailed|texted|"
    r"messaged|contacted|complained|asked|said|says|reported|requested|mentioned|explained|confirmed|booked|ordered|"
    r"paid|cancell?ed|visited|signed|registered|returned|called in|reached out)\b"
)
_PERSON_VERB = _after_cue(
    PERSON,
    re.compile(r"\b(?=[A-Z])" + _NOT_A_NAME + _NAME_BEFORE_VERB),
    needs="",
    gate=re.compile(_NAME_BEFORE_VERB),  # holds the verbs: cheaper than looking for each verb
)
# two or three capitalised words before an e-mail in angle brackets ("Mariusz Felisiak <m@x.org>",
# as commits and mail headers write an author), the e-mail already redacted or not
_NAME_BEFORE_EMAIL = r"(" + _NAME_WORD + r"(?: " + _NAME_WORD + r"){1,2}) <(?:\{\{email_address\}\}|[^<>\s@]+@)"
_PERSON_EMAIL = _after_cue(
    PERSON, re.compile(r"\b(?=[A-Z])" + _NOT_A_NAME + _NAME_BEFORE_EMAIL), needs="", words=("@", "{{email_address}}"),
    gate=re.compile(r"[a-z] <(?:\{\{email_address\}\}|[^<>\s@]+@)"),
)
# Who wrote, changed or reported something, as issue trackers and commits say it: after the cue a
# name that may be a handle ("TheTerrasque") or hold letters beyond ASCII ("François Granade"); in
# Trac's "(last modified by typonaut)" also a user name in lower case.
_AUTHOR_WORD = r"[^\W\d_][\w'-]*"
_PERSON_AUTHOR = _after_cue(
    PERSON,
    re.compile(
        r"(?:\(last modified by |\b(?:[Mm]odified by|[Rr]eported by|[Ww]ritten by|[Aa]uthored by|Author:|Co-authored-by:|"
        r"Signed-off-by:|Reported-by:|Reviewed-by:) " + _NOT_A_NAME + r"(?=[A-ZÀ-ÖØ-Þ]))"
        r"(" + _AUTHOR_WORD + r"(?: (?=[A-ZÀ-ÖØ-Þ])" + _AUTHOR_WORD + r"){0,2})"
    ),
    needs="",
    words=("modified by", "reported by", "written by", "authored by", "author:", "-by:"),
)
NAME_RECOGNIZERS = [_PERSON_CUE, _PERSON_VERB, _PERSON_EMAIL, _PERSON_AUTHOR]
# Recognizers whose value, once seen in a session, is redacted everywhere in it (echo). Whole-token
# shapes (e-mail, cards, ids) need no echo: the shape finds them again.
_ECHOED = {BIRTH, "passport_number", "licence_number", "postal_code", PERSON}
_ECHOED_SHAPES = [r for r in BUILTIN_RECOGNIZERS if r.label in _ECHOED]
# A text can put a value in a personal position only with one of these (the cues above).
_ECHO_HINT_RE = re.compile(
    r"(?i:dob|d\.o\.b|birth|born|geboren|passport|licen[cs]e|zip|postal|postcode|plz|name|i'm|i am|this is|dear|thank|"
    r"hello|\bhi\b|\b(?:mr|mrs|ms|miss|mx|dr|prof|herr|frau)\b|customer|client|caller|patient|passenger|guest|member|"
    r"travel|cardholder|holder|subscriber|kunde|belong|behalf|signed by|booked for|addressed to|you are|you're|"
    r"modified by|reported by|written by|authored by|author:|-by:)"
    r"|[A-Z][a-z]+ [A-Z][a-z]+"
)
_CAPITAL_RE = re.compile(r"[A-Z][a-z]")
# The same test for ASCII text, faster: the words as substrings of the text in lower case (Python's
# case-insensitive matching of ASCII text is exactly that), the bounded ones and two capitalised
# words by patterns that the regular-expression engine can scan for by their first character.
_ECHO_HINT_WORDS = (
    "dob", "d.o.b", "birth", "born", "geboren", "passport", "licence", "license", "zip", "postal", "postcode", "plz",
    "name", "i'm", "i am", "this is", "dear", "thank", "hello", "customer", "client", "caller", "patient", "passenger",
    "guest", "member", "travel", "cardholder", "holder", "subscriber", "kunde", "belong", "behalf", "signed by",
    "booked for", "addressed to", "you are", "you're", "modified by", "reported by", "written by", "authored by",
    "author:", "-by:",
)
_ECHO_HINT_BOUNDED_RE = re.compile(r"\b(?:hi|mr|mrs|ms|miss|mx|dr|prof|herr|frau)\b")
_TWO_CAPITALISED_RE = re.compile(r"[A-Z][a-z]+ [A-Z][a-z]+")


# The only characters outside ASCII that Python's case-insensitive matching takes for an ASCII
# character ("İ" and "ı" for i, "ſ" for s, the Kelvin sign for k; checked over all of Unicode), and
# "İ" is the only character whose lower case has another length. A text without them matches an
# ASCII word case-insensitively exactly where its lower case holds the word: lower() maps character
# by character, never turns another character into ASCII, and keeps word characters word characters.
_ASCII_FOLDS = ("\u0130", "\u0131", "\u017f", "\u212a")


def _folds_like_ascii(text: str) -> bool:
    """Case-insensitive matching of ASCII words in `text` is a substring search of text.lower():
    true of ASCII text, and of any text without the four characters of _ASCII_FOLDS (an excerpt's
    output cut with "…", a path with "é")."""
    return text.isascii() or not any(char in text for char in _ASCII_FOLDS)


def _echo_hint(text: str) -> bool:
    """_ECHO_HINT_RE.search(text) is not None."""
    if not _folds_like_ascii(text):
        return _ECHO_HINT_RE.search(text) is not None
    lowered = text.lower()
    return (
        any(map(lowered.__contains__, _ECHO_HINT_WORDS))
        or _ECHO_HINT_BOUNDED_RE.search(lowered) is not None
        or _TWO_CAPITALISED_RE.search(text) is not None
    )


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


_DIGIT_RE = re.compile(r"\d")


class _Features:
    """What the cheap pre-checks of the recognizers read from a text: which of "@", "=", "/" and
    digits it has, and the text in lower case (None when case-insensitive patterns may match it
    where its lower case holds no ASCII keyword: see _folds_like_ascii)."""

    __slots__ = ("text", "marks", "lowered")

    def __init__(self, text: str):
        self.text = text
        self.marks = {char for char in "@=/" if char in text}
        if _DIGIT_RE.search(text):
            self.marks.add("digit")
        self.lowered = text.lower() if _folds_like_ascii(text) else None


def _features(text: str) -> _Features:
    return _Features(text)


def _run_chain(chain: list[Recognizer], text: str) -> str:
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
            return "".join(piece if is_placeholder else _run_chain(rest, piece) for is_placeholder, piece in _split_placeholders(replaced))
        text = replaced
    return text


def _or_original(replaced: str | None, match: re.Match) -> str:
    return match.group(0) if replaced is None else replaced


def _select(recognizers: Iterable[Recognizer], features: _Features) -> list[Recognizer]:
    """The recognizers that may match the text: those whose necessary features and keywords it has
    and whose gate and check pass. Checked on the whole text (the pieces the recognizers later see
    are parts of it). One loop: it runs for every recognizer on every text redacted."""
    marks, lowered, text = features.marks, features.lowered, features.text
    selected = []
    for recognizer in recognizers:
        if recognizer.needs and recognizer.needs not in marks:
            continue
        if recognizer.words and lowered is not None and not any(map(lowered.__contains__, recognizer.words)):
            continue
        gate = recognizer.gate
        if gate is not None and (lowered is not None or not recognizer.pattern.flags & re.IGNORECASE) and gate.search(text) is None:
            continue
        if recognizer.check is not None and not recognizer.check(features):
            continue
        selected.append(recognizer)
    return selected


_NO_PATTERN = re.compile(r"(?!)")
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
                if len(part) >= 2 and part.lower() not in _NOT_NAMES:
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


def _parse_json_string(data: str) -> Any:
    if data[:1] in "{[" and data[-1:] in "}]" and not data.startswith("{{"):  # "{{source_file}}" is no JSON
        try:
            return json.loads(data)
        except ValueError:
            return None
    return None


def collect_known_values(data: Any, known: KnownValues | None = None, *, parent_key: str = "") -> KnownValues:
    """Walks JSON-like data (tool-call args, parsed tool results) and records every value that sits
    in a personal position (the same rules `Redactor.value` replaces by)."""
    known = known if known is not None else KnownValues()
    _collect(data, known, parent_key, None, False, None)
    return known


_PAYMENT_KEY_RE = re.compile(r"(?:credit_card|debit_card|gift_card|certificate|paypal|bank_account)_\d+")


@lru_cache(maxsize=4096)
def _is_payment_key(key: str) -> bool:
    return _PAYMENT_KEY_RE.fullmatch(key) is not None


@lru_cache(maxsize=4096)
def _children(keys: tuple, parent_key: str, personal_object: bool, resource: str | None) -> tuple[tuple[str, str | None, bool], ...]:
    """Per key of an object: the key normalised, the placeholder of a scalar under it (_leaf_label)
    and whether the key is a payment method's id. Objects of the same keys recur (every tool call
    of an agent has the same argument names), so this is worked out once per key set."""
    return tuple(
        (child, _leaf_label(child, parent_key, personal_object, resource), _is_payment_key(str(raw_key)))
        for raw_key in keys
        for child in (_normalise_key(str(raw_key)),)
    )


def _collect(data: Any, known: KnownValues, key: str, label: str | None, personal: bool, resource: str | None) -> None:
    if isinstance(data, dict):
        personal_object = _is_personal_object(data, key)
        resource_type = data.get("resourceType")
        resource_id = resource_type.lower() if isinstance(resource_type, str) and resource_type.lower() in _FHIR_PERSON_RESOURCES else None
        children = _children(tuple(data), key, personal_object, resource_id)
        for (raw_key, value), (child, child_label, payment) in zip(data.items(), children):
            if payment:  # payment methods keyed by their id
                known.add(raw_key, "payment_id")
            if child == "name" and isinstance(value, (dict, list)):
                child_label = None  # a name object: its parts are labelled below
            _collect(value, known, child, child_label, personal_object, resource_id)
    elif isinstance(data, list):
        for item in data:
            _collect(item, known, key, label, personal, resource)
    elif isinstance(data, str):
        parsed = _parse_json_string(data)
        if parsed is not None:
            _collect(parsed, known, key, None, personal, resource)
        elif label is not None:
            known.add(data, label)
        else:
            _collect_from_text(data, known)
    elif label is not None and isinstance(data, (int, float)) and not isinstance(data, bool):
        known.add(data, label)


def _collect_from_text(text: str, known: KnownValues) -> None:
    """Values a text puts in a personal position: query-string parameters and what follows a cue."""
    if len(text) < 6 or text in known.read:
        return
    known.read.add(text)
    cache = known.cache
    if cache is None:
        _find_in_text(text, known.add)
        return
    findings = cache.findings.get(text)
    if findings is None:
        found: list[tuple[str, str]] = []
        _find_in_text(text, lambda value, label: found.append((value, label)))
        findings = tuple(found)
        if len(cache.findings) < cache.MAX_ENTRIES:
            cache.findings[text] = findings
    for value, label in findings:
        known.add(value, label)


def _find_in_text(text: str, add: Callable[[Any, str], None]) -> None:
    """Calls `add(value, label)` for each value `text` puts in a personal position, in order."""
    if "=" in text:
        for match in _query_params(text):
            key = _normalise_key(match.group(1).split(":", 1)[0])
            label = _key_label(key) or ("address" if key.startswith("address") else None) or (PERSON if key == "name" else None)
            if label is not None and match.group(2):
                decoded = unquote_plus(match.group(2))
                add(decoded, label)
                if label == PERSON and "," in decoded:
                    for part in decoded.split(","):
                        add(part, label)
    # Most strings in tool results (flight numbers, dates, cities) have no cue at all: one search
    # rules them out before the recognizers run.
    if " " not in text or not _echo_hint(text):
        return
    features = _features(text)
    recognizers = _ECHOED_SHAPES + (NAME_RECOGNIZERS if _CAPITAL_RE.search(text) else [])
    for recognizer in _select(recognizers, features):
        for match in recognizer.pattern.finditer(text):
            if recognizer.replace is not None and recognizer.replace(match) is None:
                continue
            add(match.group(recognizer.group), recognizer.label)


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
        if self._shared is not None and self._shareable(text):
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
        features = _features(text)
        chain = [*self.agent_recognizers, *_select(BUILTIN_RECOGNIZERS, features)]
        if self._by_length:
            chain.append(self._known_recognizer)
        chain.extend(_select(SHAPE_RECOGNIZERS, features))
        if _CAPITAL_RE.search(text):
            chain.extend(_select(NAME_RECOGNIZERS, features))
        if "{{" in text:
            return "".join(piece if is_placeholder else _run_chain(chain, piece) for is_placeholder, piece in _split_placeholders(text))
        return _run_chain(chain, text)

    def _replace_known(self, text: str) -> str:
        """Replaces the session's known values as whole words, ignoring case. Plain substring search
        instead of a regular expression: every session has other values, and compiling a pattern
        for each one cost more than all the other rules together."""
        lowered = text.lower()
        if len(lowered) != len(text):  # a character whose lower case has another length: rare
            pattern = re.compile(r"(?<![\w#])(" + "|".join(re.escape(v) for v in self._by_length) + r")(?![\w])", re.IGNORECASE)
            return pattern.sub(lambda m: "{{" + self._lowered.get(m.group(1).lower(), "personal_data") + "}}", text)
        spans: list[tuple[int, int, str]] = []
        for value in self._by_length:
            start = lowered.find(value)
            while start >= 0:
                end = start + len(value)
                before = text[start - 1] if start else " "
                after = text[end] if end < len(text) else " "
                if not (before.isalnum() or before in "_#") and not (after.isalnum() or after == "_") and not any(
                    s < end and start < e for s, e, _ in spans
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
        normalised = _normalise_key(key) if key else ""
        return self._value(data, normalised, _key_label(normalised) if normalised else None, None)

    def _value(self, data: Any, key: str, label: str | None, resource: str | None) -> Any:
        if isinstance(data, dict):
            personal_object = _is_personal_object(data, key)
            resource_type = data.get("resourceType")
            resource_id = resource_type.lower() if isinstance(resource_type, str) and resource_type.lower() in _FHIR_PERSON_RESOURCES else None
            out = {}
            children = _children(tuple(data), key, personal_object, resource_id)
            for (raw_key, value), (child, child_label, _payment) in zip(data.items(), children):
                if child == "name" and isinstance(value, (dict, list)):
                    child_label = None
                out[self.text(str(raw_key))] = self._value(value, child, child_label, resource_id)
            return out
        if isinstance(data, list):
            return [self._value(item, key, label, resource) for item in data]
        if label is not None and isinstance(data, (str, int, float)) and not isinstance(data, bool):
            if isinstance(data, str) and (not data.strip() or PLACEHOLDER_RE.fullmatch(data.strip())):
                return data
            if isinstance(data, str) and _parse_json_string(data) is not None:
                return json.dumps(self._value(json.loads(data), key, None, resource))
            return "{{" + label + "}}"
        if isinstance(data, str):
            parsed = _parse_json_string(data)
            if parsed is not None:
                return json.dumps(self._value(parsed, key, None, resource))
            redacted = self.text(data)
            if redacted == "{{id}}" and key:  # a whole value of id shape: name it after its key
                return "{{" + (re.sub(r"[^a-z_]", "", key).strip("_") or "id") + "}}"
            return redacted
        return data


def harvest_names(texts: Iterable[str], known: KnownValues) -> KnownValues:
    """Values that texts put in a personal position anywhere in the session (a name after a cue, a
    DOB after "born", a query parameter) become known values, so that the same value elsewhere —
    without a cue, or in a tool argument — goes too."""
    for text in texts:
        if isinstance(text, str) and text:
            _collect_from_text(text, known)
    return known


def redactor_for_session(
    *, structured: Iterable[Any], texts: Iterable[str] = (), agent_patterns: Iterable[Mapping[str, Any]] | None = None,
    cache: RedactionCache | None = None,
) -> Redactor:
    """A redactor that knows the personal values of one session: those its structured data (args,
    tool results) holds in personal positions, and those its texts introduce with a cue. `cache`:
    shared by the sessions of one batch (RedactionCache); the result is the same without it."""
    known = KnownValues(cache=cache)
    for item in structured:
        collect_known_values(item, known)
    harvest_names(texts, known)
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


def contains_placeholder(text: str) -> bool:
    return bool(PLACEHOLDER_RE.search(text or ""))
