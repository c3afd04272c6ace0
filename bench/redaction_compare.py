"""Measures redaction: procmem's hand-written recognizers against Microsoft Presidio's pattern
recognizers and against phonenumbers / python-stdnum, on labelled text (docs/redaction.md).

    .venv/bin/python bench/redaction_compare.py [--taubench DIR]

Presidio, phonenumbers and python-stdnum are optional here (the app does not need them); rows of a
missing package are left out. Install them into a separate target to measure without touching the
app's environment: `pip install --target /tmp/eval presidio-analyzer phonenumbers python-stdnum`
and run with PYTHONPATH=/tmp/eval.

Two corpora, both labelled by construction:
1. tau-bench free text (real): every user and assistant message of the 200 GPT-4o airline sessions.
   The labels are the occurrences of the session's own user's values from airline_db (full name,
   first and last name, e-mail, DOB, user id, payment ids, reservation ids, address line, zip) and
   of the passengers of those reservations. Flight numbers, airports, prices and travel dates are
   there too and are not personal: a recognizer that takes them loses precision.
2. Synthetic sentences built from the tau-bench retail world's people plus the formats the redaction
   requirements name (German mobile and street addresses, passports, licences, IBANs, cards, record numbers),
   each sentence with its personal spans marked, and negatives (item ids, tracking numbers, prices,
   flight numbers, dates, quantities).

Recall: share of personal spans entirely covered by redactions. Precision: share of redacted spans
that overlap a personal span. Shape only (no structure, no echo), so the methods compare like for
like; the last row adds procmem's echo from each session's own tool data (what ingest does).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from library.redaction.recognizers import PLACEHOLDER_RE  # noqa: E402
from library.redaction.redactor import Redactor, redactor_for_session  # noqa: E402
from public_data import data_dir  # noqa: E402

Span = tuple[int, int]


# ---------------------------------------------------------------------------------------------- corpora


def taubench_corpus(directory: Path) -> list[tuple[str, list[tuple[Span, str]], list]]:
    """[(text, [(span, kind)], structured data of its session)] for every free-text message."""
    users = json.loads((directory / "airline_db" / "users.json").read_text())
    reservations = json.loads((directory / "airline_db" / "reservations.json").read_text())
    sessions = json.loads((directory / "gpt-4o-airline.json").read_text())
    corpus = []
    for session in sessions:
        user_id = session["info"]["task"]["user_id"]
        user = users[user_id]
        values: dict[str, str] = {user_id: "user_id", user["email"]: "email", user["dob"]: "dob"}
        people = [user["name"]] + user.get("saved_passengers", [])
        for reservation_id in user.get("reservations", []):
            values[reservation_id] = "reservation_id"
            people += reservations.get(reservation_id, {}).get("passengers", [])
        for person in people:
            values[f"{person['first_name']} {person['last_name']}"] = "name"
            values.setdefault(person["first_name"], "name")
            values.setdefault(person["last_name"], "name")
            if person.get("dob"):
                values[person["dob"]] = "dob"
        for payment_id in user.get("payment_methods", {}):
            values[payment_id] = "payment_id"
        values[user["address"]["address1"]] = "address"
        values[user["address"]["zip"]] = "zip"
        pattern = re.compile(
            r"(?<![\w#])(" + "|".join(re.escape(v) for v in sorted(values, key=len, reverse=True)) + r")(?![\w])"
        )
        structured = []
        for message in session["traj"]:
            for call in message.get("tool_calls") or []:
                structured.append(json.loads(call["function"]["arguments"]))
            if message["role"] == "tool":
                structured.append(message["content"])
        for message in session["traj"]:
            text = message.get("content")
            if message["role"] not in ("user", "assistant") or not isinstance(text, str) or not text:
                continue
            spans = [((m.start(), m.end()), values[m.group(1)]) for m in pattern.finditer(text)]
            corpus.append((text, spans, structured))
    return corpus


def synthetic_corpus(directory: Path, n: int = 600, seed: int = 7) -> list[tuple[str, list[tuple[Span, str]], list]]:
    rng = random.Random(seed)
    users = list(json.loads((directory / "retail_db" / "users.json").read_text()).items())
    orders = json.loads((directory / "retail_db" / "orders.json").read_text())
    items = [item for order in orders.values() for item in order["items"]]
    tracking = [t for order in orders.values() for f in order.get("fulfillments", []) for t in f.get("tracking_id", [])]
    german_streets = ["Hauptstraße", "Berliner Straße", "Gartenweg", "Lindenallee", "Marktplatz", "Bahnhofstraße"]
    cities = ["Berlin", "Hamburg", "München", "Köln", "Leipzig"]

    def phone() -> str:
        kind = rng.randrange(6)
        if kind == 0:
            return f"({rng.randint(201, 989)}) {rng.randint(200, 999)}-{rng.randint(1000, 9999)}"
        if kind == 1:
            return f"+1 {rng.randint(201, 989)} {rng.randint(200, 999)} {rng.randint(1000, 9999)}"
        if kind == 2:
            return f"01{rng.choice([51, 52, 57, 60, 70, 76])} {rng.randint(10000000, 99999999)}"
        if kind == 3:
            return f"+49 {rng.choice([30, 40, 89, 151, 160])} {rng.randint(1000000, 9999999)}"
        if kind == 4:
            return f"020 {rng.randint(7000, 8999)} {rng.randint(1000, 9999)}"
        return f"{rng.randint(201, 989)}-{rng.randint(200, 999)}-{rng.randint(1000, 9999)}"

    def luhn_card() -> str:
        digits = [4] + [rng.randrange(10) for _ in range(14)]
        total = 0
        for index, digit in enumerate(reversed(digits)):
            value = digit * 2 if index % 2 == 0 else digit
            total += value - 9 if value > 9 else value
        digits.append((10 - total % 10) % 10)
        s = "".join(map(str, digits))
        return " ".join(s[i : i + 4] for i in range(0, 16, 4))

    def iban() -> str:
        bban = f"{rng.randint(10000000, 99999999)}{rng.randint(10**9, 10**10 - 1)}"
        check = 98 - int(bban + "131400") % 97  # DE: D=13, E=14
        s = f"DE{check:02d}{bban}"
        return " ".join(s[i : i + 4] for i in range(0, len(s), 4))

    templates: list[Callable[[dict], list]] = [
        lambda v: ["Customer ", (v["name"], "name"), " called about order ", (v["order"], "order_id"), "."],
        lambda v: [(v["name"], "name"), " called and asked for a refund of $", (v["price"], None), "."],
        lambda v: ["Please call me back at ", (v["phone"], "phone"), ", thanks."],
        lambda v: ["My new number is ", (v["phone"], "phone"), " and my zip code is ", (v["zip"], "zip"), "."],
        lambda v: ["Ship it to ", (v["address"], "address"), ", ", (v["city"], None), "."],
        lambda v: ["Lieferadresse: ", (v["de_address"], "address"), ", Mobil ", (v["de_phone"], "phone"), "."],
        lambda v: [
            "Item ",
            (v["item"], None),
            " costs ",
            (v["price"], None),
            " and ships with tracking ",
            (v["tracking"], None),
            ".",
        ],
        lambda v: [
            "My passport number is ",
            (v["passport"], "passport"),
            " and my driver's licence number is ",
            (v["licence"], "licence"),
            ".",
        ],
        lambda v: ["Pay with card ", (v["card"], "card"), " or IBAN ", (v["iban"], "iban"), "."],
        lambda v: [
            "Patient record ",
            (v["mrn"], "record"),
            " belongs to ",
            (v["name"], "name"),
            ", DOB ",
            (v["dob"], "dob"),
            ".",
        ],
        lambda v: [
            "Flight ",
            (v["flight"], None),
            " leaves on ",
            (v["date"], None),
            " with ",
            (v["qty"], None),
            " bags.",
        ],
        lambda v: ["Write to ", (v["email"], "email"), " about ", (v["ticket"], "order_id"), "."],
    ]
    corpus = []
    for _ in range(n):
        user_id, user = rng.choice(users)
        order_id = rng.choice(user.get("orders") or list(orders))
        item = rng.choice(items)
        values = {
            "name": f"{user['name']['first_name']} {user['name']['last_name']}",
            "order": order_id,
            "price": f"{item['price']:.2f}",
            "phone": phone(),
            "de_phone": f"0151 {rng.randint(10000000, 99999999)}",
            "zip": user["address"]["zip"],
            "address": user["address"]["address1"],
            "city": user["address"]["city"],
            "de_address": f"{rng.choice(german_streets)} {rng.randint(1, 120)}, {rng.randint(10000, 99999)} {rng.choice(cities)}",
            "item": item["item_id"],
            "tracking": rng.choice(tracking),
            "passport": rng.choice([f"{rng.randint(100000000, 999999999)}", f"C{rng.randint(10**7, 10**8 - 1)}"]),
            "licence": rng.choice(
                [
                    f"D{rng.randint(10**6, 10**7 - 1)}",
                    f"{rng.choice('ABCDEFGH')}{rng.randint(100, 999)}-{rng.randint(1000, 9999)}-{rng.randint(1000, 9999)}",
                ]
            ),
            "card": luhn_card(),
            "iban": iban(),
            "mrn": f"S{rng.randint(10**6, 10**7 - 1)}",
            "dob": f"{rng.randint(1940, 2004)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
            "flight": f"HAT{rng.randint(1, 300):03d}",
            "date": f"2024-05-{rng.randint(1, 28):02d}",
            "qty": str(rng.randint(1, 5)),
            "email": user["email"],
            "ticket": rng.choice([f"ORD-{rng.randint(10000, 99999)}", f"C-{rng.randint(100000, 999999)}"]),
        }
        text, spans = "", []
        for part in rng.choice(templates)(values):
            if isinstance(part, str):
                text += part
            else:
                value, kind = part
                if kind:
                    spans.append(((len(text), len(text) + len(value)), kind))
                text += value
        corpus.append((text, spans, []))
    return corpus


# ---------------------------------------------------------------------------------------------- methods


def placeholder_spans(original: str, redacted: str) -> list[Span]:
    """Where in the original text the redactor replaced something: align the pieces between
    placeholders (they are copied unchanged) and take what lies between them."""
    pieces = PLACEHOLDER_RE.split(redacted)
    spans, position = [], 0
    for index, piece in enumerate(pieces):
        if index == 0:
            if not original.startswith(piece):
                return []
            position = len(piece)
            continue
        if index == len(pieces) - 1:
            end = len(original) - len(piece) if piece else len(original)
            spans.append((position, end))
            break
        found = original.find(piece, position + 1) if piece else position
        if found < 0:
            return spans
        spans.append((position, found))
        position = found + len(piece)
    return spans


def procmem_shapes() -> Callable[[str, list], list[Span]]:
    redactor = Redactor()
    return lambda text, structured: placeholder_spans(text, redactor.text(text))


def procmem_with_echo() -> Callable[[str, list], list[Span]]:
    cache: dict[int, Redactor] = {}

    def run(text: str, structured: list) -> list[Span]:
        key = id(structured)
        if key not in cache:
            cache[key] = redactor_for_session(structured=structured, texts=[])
        return placeholder_spans(text, cache[key].text(text))

    return run


def presidio(min_score: float) -> Callable[[str, list], list[Span]] | None:
    try:
        import logging

        logging.getLogger("tldextract").setLevel(logging.CRITICAL)
        from presidio_analyzer.predefined_recognizers import (
            CreditCardRecognizer,
            DateRecognizer,
            DePassportRecognizer,
            EmailRecognizer,
            IbanRecognizer,
            IpRecognizer,
            PhoneRecognizer,
            UkPassportRecognizer,
            UsLicenseRecognizer,
            UsPassportRecognizer,
            UsSsnRecognizer,
        )
    except ImportError:
        return None
    recognizers = [
        EmailRecognizer(),
        PhoneRecognizer(supported_regions=("US", "GB", "DE")),
        CreditCardRecognizer(),
        IbanRecognizer(),
        IpRecognizer(),
        UsSsnRecognizer(),
        DateRecognizer(),
        UsPassportRecognizer(),
        UkPassportRecognizer(),
        DePassportRecognizer(),
        UsLicenseRecognizer(),
    ]

    def run(text: str, structured: list) -> list[Span]:
        spans = []
        for recognizer in recognizers:
            for result in recognizer.analyze(text, entities=recognizer.supported_entities, nlp_artifacts=None) or []:
                if result.score >= min_score:
                    spans.append((result.start, result.end))
        return spans

    return run


def phonenumbers_matcher() -> Callable[[str, list], list[Span]] | None:
    try:
        import phonenumbers
    except ImportError:
        return None

    def run(text: str, structured: list) -> list[Span]:
        spans = []
        for region in ("US", "DE", "GB"):
            spans += [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, region)]
        return spans

    return run


_PROCMEM_PHONE = None


def procmem_phone() -> Callable[[str, list], list[Span]]:
    from library.redaction.recognizers import apply_recognizer
    from library.redaction.shapes import BUILTIN_RECOGNIZERS

    phones = [r for r in BUILTIN_RECOGNIZERS if r.label == "phone_number"]

    def run(text: str, structured: list) -> list[Span]:
        redacted = text
        for recognizer in phones:
            redacted = apply_recognizer(recognizer, redacted)
        return placeholder_spans(text, redacted)

    return run


def stdnum_validated(run_inner: Callable[[str, list], list[Span]] | None) -> Callable[[str, list], list[Span]] | None:
    """Presidio's spans, kept only where python-stdnum validates them as a card or IBAN, or they are
    not cards/IBANs (to show what a checksum adds)."""
    try:
        from stdnum import iban as stdnum_iban
        from stdnum import luhn
    except ImportError:
        return None
    if run_inner is None:
        return None

    def run(text: str, structured: list) -> list[Span]:
        kept = []
        for start, end in run_inner(text, structured):
            token = text[start:end]
            compact = re.sub(r"[\s-]", "", token)
            if compact.isdigit() and 13 <= len(compact) <= 19 and not luhn.is_valid(compact):
                continue
            if re.fullmatch(r"[A-Z]{2}\d{2}[A-Z0-9]+", compact) and not stdnum_iban.is_valid(compact):
                continue
            kept.append((start, end))
        return kept

    return run


# ---------------------------------------------------------------------------------------------- scoring


def score(corpus, method, kinds: set[str] | None = None) -> dict:
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    true_spans = flagged = flagged_right = 0
    started = time.perf_counter()
    for text, spans, structured in corpus:
        found = method(text, structured)
        for (start, end), kind in spans:
            if kinds is not None and kind not in kinds:
                continue
            # covered when every non-blank character is inside a redaction ("Omar Davis" may go
            # as "{{person_name}} {{person_name}}")
            covered = all(text[i].isspace() or any(s <= i < e for s, e in found) for i in range(start, end))
            by_kind[kind][0] += covered
            by_kind[kind][1] += 1
            true_spans += 1
        for s, e in found:
            flagged += 1
            flagged_right += any(
                s < end and start < e for (start, end), kind in spans if kinds is None or kind in kinds
            )
    elapsed = time.perf_counter() - started
    recall = sum(v[0] for v in by_kind.values()) / max(1, true_spans)
    return {
        "recall": recall,
        "precision": flagged_right / flagged if flagged else 1.0,
        "per_kind": {k: f"{v[0]}/{v[1]}" for k, v in sorted(by_kind.items())},
        "texts_per_s": len(corpus) / elapsed if elapsed else float("inf"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--taubench", default=str(data_dir("taubench")))
    args = parser.parse_args()
    directory = Path(args.taubench)
    corpora = {
        "tau-bench airline free text": taubench_corpus(directory),
        "synthetic (retail people + formats)": synthetic_corpus(directory),
    }
    presidio_all = presidio(0.0)
    methods = {
        "procmem recognizers (shape only)": procmem_shapes(),
        "Presidio pattern recognizers, any score": presidio_all,
        "Presidio pattern recognizers, score >= 0.5": presidio(0.5),
        "Presidio, cards/IBANs checked by python-stdnum": stdnum_validated(presidio_all),
        "procmem, with echo of the session's tool data": procmem_with_echo(),
    }
    for name, corpus in corpora.items():
        spans = sum(len(s) for _, s, _ in corpus)
        print(f"\n## {name}: {len(corpus)} texts, {spans} personal spans\n")
        print("| method | recall | precision | texts/s | recall per kind |")
        print("| --- | ---: | ---: | ---: | --- |")
        for label, method in methods.items():
            if method is None:
                continue
            result = score(corpus, method)
            print(
                f"| {label} | {result['recall']:.3f} | {result['precision']:.3f} | {result['texts_per_s']:,.0f} | {', '.join(f'{k} {v}' for k, v in result['per_kind'].items())} |"
            )
    print("\n## phone numbers only (synthetic corpus)\n")
    print("| method | recall | precision | texts/s |")
    print("| --- | ---: | ---: | ---: |")
    # sentences without cards and IBANs: in the pipeline those go first, and a phone pattern that
    # also takes them is no loss
    synthetic = [
        c for c in corpora["synthetic (retail people + formats)"] if not any(k in ("card", "iban") for _, k in c[1])
    ]
    for label, method in {
        "procmem phone patterns": procmem_phone(),
        "phonenumbers.PhoneNumberMatcher (US, DE, GB)": phonenumbers_matcher(),
    }.items():
        if method is None:
            continue
        result = score(synthetic, method, kinds={"phone"})
        print(f"| {label} | {result['recall']:.3f} | {result['precision']:.3f} | {result['texts_per_s']:,.0f} |")


if __name__ == "__main__":
    main()
