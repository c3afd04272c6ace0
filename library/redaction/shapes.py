"""The built-in recognizers by shape: secrets, e-mail, cards, IBANs, SSNs, IP addresses, dates of
birth, passports and licences, street addresses, phone numbers, payment and user ids, FHIR
references, id-shaped tokens, and names after a cue (docs/redaction.md has the measurements)."""

from __future__ import annotations

import re
from collections.abc import Callable

from .keys import BIRTH, PERSON, QUERY_RECOGNIZER
from .recognizers import KEYWORDS, Features, Recognizer


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


def _keep_prefix(group: int, label: str) -> Callable[[re.Match], str]:
    return lambda m: (
        m.group(0)[: m.start(group) - m.start(0)] + "{{" + label + "}}" + m.group(0)[m.end(group) - m.start(0) :]
    )


def _after_cue(
    label: str,
    pattern: re.Pattern,
    *,
    needs: str = "digit",
    replace=None,
    words: tuple[str, ...] = (),
    gate: re.Pattern | None = None,
    check: Callable[[Features], bool] | None = None,
    gate_set: str = "",
) -> Recognizer:
    """A value announced by a cue ("passport no. X", "zip 12345", "customer Jane Doe"): group 1 is the
    value and is replaced by the placeholder; the cue stays."""
    return Recognizer(
        label,
        pattern,
        replace=replace or _keep_prefix(1, label),
        group=1,
        needs=needs,
        words=words,
        gate=gate,
        check=check,
        gate_set=gate_set,
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
# Every match holds a letter and a digit with only hyphens between them: the lookaheads find a digit
# and a letter in one run of [A-Za-z0-9-] from the token's start, and where that run's letters and
# digits meet, one stands next to the other or to a hyphen. So a digit with a letter or a hyphen on
# either side: the engine skips to digits instead of trying the pattern's lookbehind at every
# position (the pattern cost ~0.1 s on the 7,983 excerpt texts of the other-repos import).
_MIXED_ID_GATE = re.compile(r"\d(?:(?<=[A-Za-z\-]\d)|[A-Za-z\-])")
# The characters of an id token and what may stand before its start: every one of them (a letter, a
# digit, "#", "-") is a character the pattern's lookbehind refuses before a match, so a match can only
# start where a run of them starts.
_ID_RUN_CHARS = frozenset("#-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_ID_RUN_END_RE = re.compile(r"[#A-Za-z0-9\-]*")


def _replace_mixed_ids(text: str) -> str:
    """_MIXED_ID_RE.sub with _mixed_id (a match it declines stays as it is), trying the pattern only
    at the start of the runs of [#A-Za-z0-9-] that hold a gate's match. Every match lies in one run
    and starts at its start (the lookbehind refuses all the run's characters before a match), and
    holds a gate's match (see _MIXED_ID_GATE); so the runs without one hold no match, and within a
    run no other start is possible. The engine then skips to digits instead of trying the pattern's
    lookbehind at every position: 0.036 s instead of 0.087 s on the 4,117 texts of the other
    repositories' import that have the gate (tests/library/test_redaction_speed.py: the same result as
    the plain substitution on generated texts and on every text of the real coding sessions). A run
    of fewer than five characters is not tried: a token _mixed_id replaces has five letters or digits."""
    gate = _MIXED_ID_GATE.search(text)
    if gate is None:
        return text
    out: list[str] = []
    last = 0  # the end of the last replaced match
    position = 0  # where the next match may start
    while gate is not None:
        start = gate.start()
        while start > 0 and text[start - 1] in _ID_RUN_CHARS:
            start -= 1
        # past the run (a digit outside ASCII, which \d takes and no run holds, is passed by one)
        run_end = max(_ID_RUN_END_RE.match(text, gate.start()).end(), gate.start() + 1)
        if start < position:  # the gate is in a run tried already
            position = max(position, run_end)
        elif run_end - start < 5:  # a token it replaces has five letters or digits
            position = run_end
        else:
            match = _MIXED_ID_RE.match(text, start)
            if match is None:
                position = run_end
            else:
                replaced = _mixed_id(match)
                if replaced is not None:
                    out.append(text[last : match.start()])
                    out.append(replaced)
                    last = match.end()
                position = match.end()
        gate = _MIXED_ID_GATE.search(text, position)
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


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
    if not (any(map(str.isupper, alnum)) or sum(map(str.isdigit, alnum)) >= 2):
        return None
    return "{{id}}"


# All-caps letter codes (VAAOXJ) are ids only after an id word in the same sentence: shouted words
# ("PLEASE") are not.
# (?<![\w{}#\-])[A-Z]{5,10}(?![\w{}\-]) with the lookbehind after the first capital: the engine then
# skips to capitals instead of trying the lookbehind at every position (a third of the time); the
# same matches (tests/library/test_redaction_speed.py)
_CAPS_CODE_RE = re.compile(r"[A-Z](?<![\w{}#\-][A-Z])[A-Z]{4,9}(?![\w{}\-])")
_ID_CUE_RE = re.compile(
    r"(?i)\b(?:reservations?|bookings?|confirmations?|orders?|codes?|records?|tickets?|locators?|pnrs?|ref|reference|"
    r"ids?|numbers?|no|nr|mrn|members?|membership|vouchers?|trips?|accounts?|patients?|cases?|claims?|policy|passport|licen[cs]e)\b"
)


# a line that opens a list item: "- ", "* ", "+ ", "• ", "1. ", "2) "
_LIST_ITEM_RE = re.compile(r"[ \t]*(?:[-*+•]|\d{1,3}[.)])[ \t]")
_LIST_LOOKBACK = 400  # how far back an item looks for the line that introduces its list


def _cue_context(text: str, start: int) -> str:
    """The text before `start` whose id words make the capitals there an id: the sentence, within
    60 characters. A line break that opens a list item ends it: the item reads its own words and the
    line that introduces the list ("Reservation codes:" above "- VAAOXJ" and "- PGAGLM", a blank line
    or other items between), never a sibling item's ("…expressed through code" ending one bullet and
    "- **PROCESS OVER PRODUCT**" opening the next). Any other line reads on into the one before, as a
    wrapped sentence or a label ("Booking code:" above "VAAOXJ") does."""
    line_start = text.rfind("\n", 0, start) + 1
    own = text[line_start:start]
    if not _LIST_ITEM_RE.match(own):
        return re.split(r"[.!?\n]\s", text[max(0, start - 60) : start])[-1]
    own = _LIST_ITEM_RE.sub("", own, count=1)
    end = line_start - 1  # the line break before the item
    while end > 0 and start - end < _LIST_LOOKBACK:
        previous_start = text.rfind("\n", 0, end) + 1
        previous = text[previous_start:end]
        if previous.strip() and not _LIST_ITEM_RE.match(previous):
            own = f"{previous[-60:]}\n{own}"
            break
        end = previous_start - 1
    return re.split(r"[.!?]\s", own[-60:])[-1]


def _caps_code(match: re.Match) -> str | None:
    return "{{id}}" if _ID_CUE_RE.search(_cue_context(match.string, match.start())) else None


_DATE = r"(?:\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*,? \d{4})"
_STREET_SUFFIX = r"(?:street|st|avenue|ave|road|rd|drive|dr|lane|ln|boulevard|blvd|way|court|ct|place|pl|terrace|parkway|pkwy|circle|cir|highway|hwy|square|sq|close|crescent|row|walk|gardens|hill)"
_DE_STREET_WORDS = (
    "straße",
    "strasse",
    "str.",
    "weg",
    "gasse",
    "platz",
    "allee",
    "ring",
    "damm",
    "ufer",
    "chaussee",
    "steig",
    "pfad",
)
_DE_STREET_NAMES = ("Straße", "Strasse", "Str.", "Weg", "Gasse", "Platz", "Allee", "Ring", "Damm", "Ufer")
_DE_STREET = "(?:" + "|".join(map(re.escape, _DE_STREET_WORDS)) + ")"
# A street word, an optional space, a digit — as a digit with the street word behind it, so that the
# engine only stops at digits (an alternation of words is tried at every position); the last letters
# of the words are looked behind for first, which rules out most digits at once.
_DE_STREET_ENDS = re.escape("".join(sorted({word[-1] for word in (*_DE_STREET_WORDS, *_DE_STREET_NAMES)})))
_DE_STREET_NUMBER_GATE = re.compile(
    rf"\d(?:(?<=[{_DE_STREET_ENDS}]\d)|(?<=[{_DE_STREET_ENDS}] \d))"
    r"(?:"
    + "|".join(
        f"(?<={re.escape(word)}{space}\\d)" for word in (*_DE_STREET_WORDS, *_DE_STREET_NAMES) for space in ("", " ")
    )
    + ")"
)
_NAME_WORD = r"[A-Z](?:[a-z]+|'[A-Z][a-z]+)(?:-[A-Z][a-z]+)?"
# Gates for two recognizers that `needs` alone ran on most texts of coding sessions (which have
# digits and "@" everywhere): the part of every match from its last digit to the street word, and
# the "@" of an address with a character before it and a domain after it. The address pattern is
# case-insensitive: its gate is only used on text that folds like ASCII (recognizers.select_recognizers),
# where its [A-Z][a-z]+ is two or more ASCII letters in any case.
_STREET_GATE = re.compile(r"\d[A-Za-z]?(?: [A-Za-z]{2,}){1,4} (?i:" + _STREET_SUFFIX + ")")
_EMAIL_GATE = re.compile(r"@(?<=[A-Za-z0-9._%+\-]@)[A-Za-z0-9.\-]+\.[A-Za-z]{2}")


# The phone patterns with their lookbehind after the first character they consume, so that the engine
# skips to the characters a number starts with ("+", "(", "0", a digit) instead of trying the
# lookbehind at every position (a third to a tenth of the time on the texts of the other
# repositories' import); each matches exactly where the plain form does
# (tests/library/test_redaction_speed.py, which keeps the plain forms):
# (?<![\w{])(?:\+\d{1,3}[ .\-]?)?(?:\(\d{2,4}\)[ .\-]?|\d{2,4}[ .\-])\d{3,4}[ .\-]\d{3,4}(?![\w}])
_PHONE_RE = re.compile(
    r"[+(\d](?<![\w{].)(?:(?<=\+)\d{1,3}[ .\-]?(?:\(\d{2,4}\)[ .\-]?|\d{2,4}[ .\-])|(?<=\()\d{2,4}\)[ .\-]?|(?<=\d)\d{1,3}[ .\-])"
    r"\d{3,4}[ .\-]\d{3,4}(?![\w}])"
)
# (?<![\w{])\(?0\d{2,4}\)?[ /\-]?\d{5,9}(?![\w}])
_NATIONAL_PHONE_RE = re.compile(r"(?:\((?<![\w{]\()0|0(?<![\w{]0))\d{2,4}\)?[ /\-]?\d{5,9}(?![\w}])")
# (?<![\w{+])\+\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){1,5}(?![\w}])
_INTERNATIONAL_PHONE_RE = re.compile(r"\+(?<![\w{+]\+)\d{1,3}(?:[ .\-]?\(?\d{1,5}\)?){1,5}(?![\w}])")

# Set patterns (recognizers.GATES) narrower than the phone gates, for texts of code, where those gates
# match numbers that are no phone numbers: the part every match of _PHONE_RE has, from the area code's
# last two digits on (126 of the 126 excerpt texts of the other repositories' import with the gate
# have none); "+" and the nine digits _phone asks for, with at most a ")", a separator and a "("
# between two of them (a diff's "+1,6 @@" has none).
_PHONE_SET = r"\p{Nd}{2}(?:\)[ .\-]?|[ .\-])\p{Nd}{3,4}[ .\-]\p{Nd}{3}"
_INTERNATIONAL_PHONE_SET = r"\+\p{Nd}(?:[ .\-()]{0,3}\p{Nd}){8}"


BUILTIN_RECOGNIZERS: list[Recognizer] = [
    # secrets first: they may contain anything else
    Recognizer(
        "secret", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"), words=("eyj",)
    ),
    Recognizer(
        "secret",
        re.compile(r"\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{16,}\b"),
        words=("sk-", "sk_", "pk-", "pk_", "rk-", "rk_"),
    ),
    Recognizer(
        "secret",
        re.compile(r"\b(?:pm_|ghp_|gho_|ghs_|github_pat_|xox[abpr]-|AKIA|ASIA|AIza)[A-Za-z0-9_\-]{12,}"),
        words=("pm_", "ghp_", "gho_", "ghs_", "github_pat_", "xox", "akia", "asia", "aiza"),
    ),
    Recognizer("secret", re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/\-]{16,}=*"), words=("bearer",)),
    Recognizer(
        "secret",
        re.compile(
            r"(?i)\b(?:api[_ -]?key|access[_ -]?token|auth[_ -]?token|secret|password|passwd|pwd)\b(\s*[:=]\s*|\s+is\s+)(\"?)([^\s\"',;]{4,})"
        ),
        replace=lambda m: m.group(0)[: m.start(3) - m.start(0)] + "{{secret}}",
        words=("api", "token", "secret", "passw", "pwd"),
    ),
    QUERY_RECOGNIZER,
    Recognizer(
        "email_address",
        re.compile(r"\b[A-Za-z0-9._%+\-]+@[A-Za-z0-9.\-]+\.[A-Za-z]{2,}\b"),
        needs="@",
        # the "@" with what every address has around it: not a decorator or a diff's "@@ -1,5 +1,6 @@"
        gate=_EMAIL_GATE,
        gate_set=r"[A-Za-z0-9._%+\-]@[A-Za-z0-9.\-]+\.[A-Za-z]{2}",
    ),
    Recognizer(
        "iban",
        re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"),
        needs="digit",
        gate=re.compile(r"\d(?<=[A-Z]{2}\d)\d"),
        gate_set=r"[A-Z]{2}\p{Nd}\p{Nd}",
    ),
    Recognizer(
        "card_number",
        re.compile(r"\b(?:\d[ -]?){12,18}\d\b"),
        replace=_card,
        needs="digit",
        gate=re.compile(r"\d(?:[ -]?\d){12}"),
        gate_set=r"\p{Nd}(?:[ -]?\p{Nd}){12}",
    ),
    Recognizer(
        "ssn",
        re.compile(r"\b\d{3}-\d{2}-\d{4}\b"),
        needs="digit",
        gate=re.compile(r"-(?<=\d{3}-)\d{2}-\d{4}"),
        gate_set=r"\p{Nd}{3}-\p{Nd}{2}-\p{Nd}{4}",
    ),
    Recognizer(
        "ip_address",
        re.compile(r"\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b"),
        needs="digit",
        gate=re.compile(r"\.(?<=\d\.)\d{1,3}\.\d{1,3}\.\d"),
        gate_set=r"\p{Nd}\.\p{Nd}{1,3}\.\p{Nd}{1,3}\.\p{Nd}",
    ),
    _after_cue(
        BIRTH,
        re.compile(
            r"(?i)\b(?:dob|d\.o\.b\.?|date of birth|birth ?date|birthday|born(?: on| in)?|geboren(?: am)?)\b[^0-9a-z{]{0,12}(?:is |was |on |of )?[^0-9a-z{]{0,3}("
            + _DATE
            + r")"
        ),
        words=("dob", "d.o.b", "birth", "born", "geboren"),
    ),
    _after_cue(
        "passport_number",
        re.compile(r"(?i)\bpassport(?: (?:no\.?|number|nr\.?|#|id))?(?: is|:)?\s*#?\s*([A-Z0-9][A-Z0-9\-]{4,14})\b"),
        words=("passport",),
    ),
    _after_cue(
        "licence_number",
        re.compile(
            r"(?i)\b(?:driver'?s |driving )?licen[cs]e(?: (?:no\.?|number|nr\.?|#|id))?(?: is|:)?\s*#?\s*([A-Z0-9][A-Z0-9\-]{4,17})\b"
        ),
        replace=lambda m: None if not re.search(r"\d", m.group(1)) else _keep_prefix(1, "licence_number")(m),
        words=("licence", "license"),
    ),
    Recognizer(
        "address",
        re.compile(
            r"(?i)\b\d{1,6}[A-Za-z]?(?: [A-Z][a-z]+){1,4} "
            + _STREET_SUFFIX
            + r"\b\.?(?:,? (?:apt|apartment|suite|unit|flat|#) ?[A-Za-z0-9\-]+)?"
        ),
        needs="digit",
        gate=_STREET_GATE,
        gate_set=r"\p{Nd}[A-Za-z]?(?: [A-Za-z]{2,}){1,4} (?i:" + _STREET_SUFFIX + ")",
    ),
    Recognizer(
        "address",
        re.compile(
            r"(?:\b[A-ZÄÖÜ][a-zäöüß]+[ \-])?\b[A-ZÄÖÜ][a-zäöüß]*(?:"
            + _DE_STREET
            + r"|[ \-](?:"
            + "|".join(map(re.escape, _DE_STREET_NAMES))
            + "))"
            r" ?\d{1,4}(?: ?[a-z]\b)?(?:,? \d{5}(?: [A-ZÄÖÜ][a-zäöüß]+(?:[ \-][A-ZÄÖÜ][a-zäöüß]+)?)?)?"
        ),
        needs="digit",
        gate=_DE_STREET_NUMBER_GATE,
        gate_set="(?:" + "|".join(map(re.escape, (*_DE_STREET_WORDS, *_DE_STREET_NAMES))) + r") ?\p{Nd}",
    ),
    Recognizer(
        "address",
        re.compile(r"(?i)\b(?:apt|apartment|suite|unit)\.? ?#? ?\d+[A-Za-z]?\b"),
        needs="digit",
        words=("apt", "apartment", "suite", "unit"),
    ),
    _after_cue(
        "postal_code",
        re.compile(r"(?i)\b(?:zip|zip code|zipcode|postal code|postcode|plz)\b(?: is|:)?\s*(\d{4,5}(?:-\d{4})?)\b"),
        words=("zip", "postal", "postcode", "plz"),
    ),
    Recognizer(
        "phone_number",
        _PHONE_RE,
        replace=_phone,
        needs="digit",
        gate=re.compile(r"\d{3}[ .\-]\d{3}"),
        gate_set=_PHONE_SET,
    ),
    # national numbers with a trunk 0 (German mobile "0151 23456789", "030/1234567")
    Recognizer(
        "phone_number",
        _NATIONAL_PHONE_RE,
        replace=_phone,
        needs="digit",
        gate=re.compile(r"0\d{2,4}\)?[ /\-]?\d{5}"),  # the number without its edges: from the 0 to 5 digits after
        gate_set=r"0\p{Nd}{2,4}\)?[ /\-]?\p{Nd}{5}",
    ),
    # international numbers in any grouping (+49 30 5511786, +44 20 7946 0958, +4915123456789)
    Recognizer(
        "phone_number",
        _INTERNATIONAL_PHONE_RE,
        replace=_phone,
        needs="digit",
        gate=re.compile(r"\+\d"),
        gate_set=_INTERNATIONAL_PHONE_SET,
    ),
    Recognizer(
        "payment_id",
        re.compile(r"(?i)\b(?:credit_card|debit_card|gift_card|certificate|paypal|bank_account|card|pm)_\d{4,}\b"),
        needs="digit",
        words=("card_", "certificate_", "paypal_", "bank_account_", "pm_"),
    ),
    Recognizer(
        "user_id",
        re.compile(r"\b[a-z]+_[a-z]+_\d{3,}\b"),
        needs="digit",
        gate=re.compile(r"_(?<=[a-z]_)\d{3}"),
        gate_set=r"[a-z]_\p{Nd}{3}",
    ),
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
    Recognizer(
        "id",
        _MIXED_ID_RE,
        replace=_mixed_id,
        needs="digit",
        gate=_MIXED_ID_GATE,
        apply=_replace_mixed_ids,
        gate_set=r"[A-Za-z\-]\p{Nd}|\p{Nd}[A-Za-z\-]",
    ),
    Recognizer("id", _CAPS_CODE_RE, replace=_caps_code, gate=re.compile(r"[A-Z]{5}"), gate_set="[A-Z]{5}"),
]

# Capitalised words after "Hi", "Thanks", "I am" that are not names.
NOT_NAMES = {
    "there",
    "again",
    "team",
    "all",
    "everyone",
    "sir",
    "madam",
    "support",
    "i",
    "the",
    "a",
    "an",
    "so",
    "very",
    "for",
    "sure",
    "yes",
    "no",
    "not",
    "happy",
    "sorry",
    "here",
    "looking",
    "trying",
    "calling",
    "writing",
    "interested",
    "afraid",
    "glad",
    "good",
    "great",
    "ok",
    "okay",
    "please",
    "could",
    "can",
    "would",
    "unable",
    "also",
    "just",
    "i'm",
    "i'd",
    "i've",
    "i'll",
    "we",
    "we're",
    "it",
    "it's",
    "this",
    "that",
    "my",
    "our",
    "your",
    "service",
    "services",
    "care",
    "desk",
    "center",
    "centre",
    "agent",
    "agents",
    "relations",
    "account",
    "accounts",
    "id",
    "number",
}
_CUES = (
    r"\b[Nn]ame is|\b[Nn]ame:|\b[Yy]ou are|\b[Yy]ou're|\b[Tt]his is|\b[Ii] am|\bI'm|\b[Dd]ear|\b[Tt]hanks?,?|\b[Tt]hank you,|\b[Hh]ello,?|\b[Hh]i,?"
    r"|\b(?:Mr|Mrs|Ms|Miss|Mx|Dr|Prof|Herr|Frau)\.?|\b(?:named|belongs to|belonging to|on behalf of|signed by|booked for|addressed to)"
    r"|\b[Tt]hanks to"
    r"|\b(?:[Cc]ustomer|[Cc]lient|[Cc]aller|[Pp]atient|[Pp]assenger|[Gg]uest|[Mm]ember|[Tt]raveller|[Tt]raveler|[Cc]ardholder|[Aa]ccount holder|[Ss]ubscriber|[Kk]unde|[Kk]undin)"
)
# Names the text introduces: after a cue ("Customer Anna Schmidt"), or two capitalised words before
# a verb of contact ("John Smith called").
_NOT_A_NAME = r"(?!(?i:" + "|".join(re.escape(w) for w in sorted(NOT_NAMES, key=len, reverse=True)) + r")\b)"
# Each cue of _CUES in lower case with the space after it (a cue that may end in "," or "." once
# with and once without): what the text in lower case holds right before the name.
_CUE_WORDS = (
    "name is ",
    "name: ",
    "you are ",
    "you're ",
    "this is ",
    "i am ",
    "i'm ",
    "dear ",
    "thank ",
    "thank, ",
    "thanks ",
    "thanks, ",
    "thank you, ",
    "hello ",
    "hello, ",
    "hi ",
    "hi, ",
    "mr ",
    "mr. ",
    "mrs ",
    "mrs. ",
    "ms ",
    "ms. ",
    "miss ",
    "miss. ",
    "mx ",
    "mx. ",
    "dr ",
    "dr. ",
    "prof ",
    "prof. ",
    "herr ",
    "herr. ",
    "frau ",
    "frau. ",
    "named ",
    "belongs to ",
    "belonging to ",
    "on behalf of ",
    "signed by ",
    "booked for ",
    "addressed to ",
    "customer ",
    "client ",
    "caller ",
    "patient ",
    "passenger ",
    "guest ",
    "member ",
    "traveller ",
    "traveler ",
    "cardholder ",
    "account holder ",
    "subscriber ",
    "kunde ",
    "kundin ",
    "thanks to ",
)
_SPACE_CAPITAL_RE = re.compile(r" [A-Z]")


# the cue words are keywords too: a text's features then say which of them its lower case holds
KEYWORDS.add(_CUE_WORDS)
_CUE_WORD_SET = frozenset(_CUE_WORDS)


def _cue_before_capital(features: Features) -> bool:
    """A cue word right before a space and a capital: every match of _PERSON_CUE has one. Each cue
    word the text in lower case holds (found with the other keywords in one pass) is looked up
    where it occurs, and the character after it tested: every cue word ends with the space, and
    the text and its lower case have the same length here (folds_like_ascii). Instead of an
    `endswith` of all the cue words at every space-capital: 0.033 s on the 18,169 texts of the other
    repositories' import (6,988 with a space-capital), now a few thousandths."""
    lowered = features.lowered
    if lowered is None:
        return True
    text = features.text
    for word in features.words & _CUE_WORD_SET:
        start = lowered.find(word)
        while start >= 0:
            end = start + len(word)
            if end < len(text) and "A" <= text[end] <= "Z":
                return True
            start = lowered.find(word, start + 1)
    return False


_PERSON_CUE = _after_cue(
    PERSON,
    re.compile(r"(?:" + _CUES + r") " + _NOT_A_NAME + r"(" + _NAME_WORD + r"(?: " + _NAME_WORD + r"){0,2})\b"),
    needs="",
    gate=_SPACE_CAPITAL_RE,  # the name after the cue: a space, then a capital
    gate_set=_SPACE_CAPITAL_RE.pattern,
    check=_cue_before_capital,
)
# two capitalised words before a verb of contact; every match of _PERSON_VERB holds a match of this
# (the pattern without its leading checks), which starts with a capital the engine can scan for
_NAME_BEFORE_VERB = (
    r"("
    + _NAME_WORD
    + r" "
    + _NAME_WORD
    + r")(?:'s)? (?:has |had |just |again |also |then )?(?:called|phoned|rang|wrote|emailed|e-mailed|texted|"
    r"messaged|contacted|complained|asked|said|says|reported|requested|mentioned|explained|confirmed|booked|ordered|"
    r"paid|cancell?ed|visited|signed|registered|returned|called in|reached out)\b"
)
_PERSON_VERB = _after_cue(
    PERSON,
    re.compile(r"\b(?=[A-Z])" + _NOT_A_NAME + _NAME_BEFORE_VERB),
    needs="",
    gate=re.compile(_NAME_BEFORE_VERB),  # holds the verbs: cheaper than looking for each verb
    # the same for RE2: ASCII classes and literals, and a final \b that RE2 (ASCII) finds wherever
    # Python (Unicode) does after an ASCII letter
    gate_set=_NAME_BEFORE_VERB,
)
# two or three capitalised words before an e-mail in angle brackets ("Mariusz Felisiak <m@x.org>",
# as commits and mail headers write an author), the e-mail already redacted or not
_NAME_BEFORE_EMAIL = r"(" + _NAME_WORD + r"(?: " + _NAME_WORD + r"){1,2}) <(?:\{\{email_address\}\}|[^<>\s@]+@)"
_PERSON_EMAIL = _after_cue(
    PERSON,
    re.compile(r"\b(?=[A-Z])" + _NOT_A_NAME + _NAME_BEFORE_EMAIL),
    needs="",
    words=("@", "{{email_address}}"),
    gate=re.compile(r"[a-z] <(?:\{\{email_address\}\}|[^<>\s@]+@)"),
    # RE2's \s is ASCII: [^<>\s@] takes more characters there, never fewer
    gate_set=r"[a-z] <(?:\{\{email_address\}\}|[^<>\s@]+@)",
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
# every match of the name recognizers holds a capitalised word: a text without one needs none of them
CAPITAL_RE = re.compile(r"[A-Z][a-z]")
# The set patterns narrower than their recognizers' gates: each matches wherever its recognizer
# changes a text (not wherever the gate matches); tests/library/test_redaction*.py check them so.
SETS_NARROWER_THAN_GATES = frozenset({_PHONE_SET, _INTERNATIONAL_PHONE_SET})
