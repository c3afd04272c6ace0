"""Structure: which keys of tool-call arguments and tool results hold personal data, and the
placeholder each becomes; objects that describe a person (their `name` and `id` are personal);
JSON documents inside strings; and query strings of HTTP-style calls, read the same way."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

from .recognizers import PLACEHOLDER_RE, Recognizer

PERSON = "person_name"
BIRTH = "birth_date"

# Structured keys (normalised: snake_case, lower case) whose values are personal data, and the
# placeholder each becomes. Keys ending in `_id` that are not listed become `{{<key>}}`.
PII_KEYS: dict[str, str] = {
    **dict.fromkeys(
        (
            "first_name",
            "last_name",
            "middle_name",
            "full_name",
            "firstname",
            "lastname",
            "given_name",
            "family_name",
            "given",
            "family",
            "customer_name",
            "passenger_name",
            "patient_name",
            "person_name",
            "maiden_name",
            "birth_name",
            "display_name",
            "contact_name",
            "account_holder",
            "cardholder_name",
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
        (
            "address",
            "address1",
            "address2",
            "address_line",
            "address_line1",
            "address_line2",
            "street",
            "street_address",
        ),
        "address",
    ),
    **dict.fromkeys(("zip", "zip_code", "zipcode", "postal_code", "postcode", "address_postalcode"), "postal_code"),
    **dict.fromkeys(("ssn", "social_security_number"), "ssn"),
    **dict.fromkeys(("national_id", "national_id_number", "tax_id", "id_number", "id_card"), "national_id"),
    **dict.fromkeys(("mrn", "medical_record_number", "record_number"), "medical_record_number"),
    **dict.fromkeys(("member", "member_id", "member_number", "membership_number", "membership_id"), "member_id"),
    **dict.fromkeys(("patient", "patient_id", "subject_id"), "patient_id"),
    **dict.fromkeys(
        ("reservation", "reservation_id", "reservations", "booking", "booking_id", "booking_reference", "pnr"),
        "reservation_id",
    ),
    **dict.fromkeys(("order", "order_id", "orders", "order_number"), "order_id"),
    **dict.fromkeys(
        ("confirmation", "confirmation_number", "confirmation_code", "confirmation_id"), "confirmation_number"
    ),
    **dict.fromkeys(("passport", "passport_number", "passport_no"), "passport_number"),
    **dict.fromkeys(
        (
            "license_number",
            "licence_number",
            "driver_license",
            "drivers_license",
            "driving_licence",
            "driving_license",
            "driver_license_number",
        ),
        "licence_number",
    ),
    **dict.fromkeys(("password", "api_key", "token", "secret", "access_token", "refresh_token"), "secret"),
}
# Keys whose values are plain text that may mention anything (never replaced by key).
_NOT_PERSONAL = {"resource_type", "status", "use", "system", "source", "type"}
# Objects that describe a person: their `name` and `id` are personal.
_PERSON_CONTAINERS = {
    "passengers",
    "saved_passengers",
    "passenger",
    "customer",
    "user",
    "contact",
    "contacts",
    "traveler",
    "traveller",
    "travelers",
    "travellers",
    "patient",
    "person",
    "guest",
    "guests",
    "member",
    "subject",
    "owner",
    "holder",
    "account_holder",
    "recipient",
    "sender",
    "employee",
    "emergency_contact",
    "related_person",
    "practitioner",
}
# Inside these containers the `value`/`text`/`line` strings are personal (FHIR identifier, telecom,
# HumanName, Address).
_VALUE_CONTAINERS = {
    "identifier": "identifier",
    "identifiers": "identifier",
    "telecom": "contact",
    "name": PERSON,
    "address": "address",
}
_FHIR_PERSON_RESOURCES = {"patient", "person", "relatedperson", "practitioner"}


@lru_cache(maxsize=4096)
def normalise_key(key: str) -> str:
    key = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key.strip())
    return key.lower().replace("-", "_").replace(" ", "_").replace(".", "_")


@lru_cache(maxsize=4096)
def key_label(key: str) -> str | None:
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


def is_personal_object(mapping: Mapping, parent_key: str) -> bool:
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
        key = normalise_key(str(raw_key))
        if key not in ("id", "name") and PII_KEYS.get(key) in (
            PERSON,
            BIRTH,
            "email_address",
            "phone_number",
            "address",
            "user_id",
            "ssn",
            "national_id",
        ):
            return True
    return False


def _leaf_label(key: str, parent_key: str, personal_object: bool, resource: str | None) -> str | None:
    """The placeholder for a scalar under `key` inside an object under `parent_key`, or None."""
    label = key_label(key)
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


def parse_json_string(data: str) -> Any:
    """The JSON document a string holds (a tool result often is one), or None."""
    if data[:1] in "{[" and data[-1:] in "}]" and not data.startswith("{{"):  # "{{source_file}}" is no JSON
        try:
            return json.loads(data)
        except ValueError:
            return None
    return None


def person_resource(mapping: Mapping) -> str | None:
    """The FHIR resource type of an object that describes a person (`patient`, `person`, …), in
    lower case, or None."""
    resource_type = mapping.get("resourceType")
    return (
        resource_type.lower()
        if isinstance(resource_type, str) and resource_type.lower() in _FHIR_PERSON_RESOURCES
        else None
    )


_PAYMENT_KEY_RE = re.compile(r"(?:credit_card|debit_card|gift_card|certificate|paypal|bank_account)_\d+")


@lru_cache(maxsize=4096)
def _is_payment_key(key: str) -> bool:
    return _PAYMENT_KEY_RE.fullmatch(key) is not None


@lru_cache(maxsize=4096)
def child_labels(
    keys: tuple, parent_key: str, personal_object: bool, resource: str | None
) -> tuple[tuple[str, str | None, bool], ...]:
    """Per key of an object: the key normalised, the placeholder of a scalar under it (_leaf_label)
    and whether the key is a payment method's id. Objects of the same keys recur (every tool call
    of an agent has the same argument names), so this is worked out once per key set."""
    return tuple(
        (child, _leaf_label(child, parent_key, personal_object, resource), _is_payment_key(str(raw_key)))
        for raw_key in keys
        for child in (normalise_key(str(raw_key)),)
    )


# Query strings of HTTP-style calls: `Patient?name=John%20Smith&birthdate=1970-01-01`.
_QUERY_PARAM_RE = re.compile(r"(?:(?<=[?&;])|^)([A-Za-z_][\w.\-:]*)=([^&#\s;]*)")
_QUERY_DELIMITER_RE = re.compile(r"[?&;]")


def query_params(text: str) -> Iterator[re.Match]:
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


def query_param_label(match: re.Match) -> str | None:
    """The placeholder for the value of a query parameter (a match of query_params), or None."""
    key = normalise_key(match.group(1).split(":", 1)[0])
    return key_label(key) or ("address" if key.startswith("address") else None) or (PERSON if key == "name" else None)


def _query_param(match: re.Match) -> str | None:
    label = query_param_label(match)
    if label is None or not match.group(2) or PLACEHOLDER_RE.fullmatch(match.group(2)):
        return None
    return match.group(1) + "={{" + label + "}}"


def _replace_query_params(text: str) -> str:
    """_QUERY_PARAM_RE.sub with _query_param (a match it declines stays as it is), on the matches of
    query_params."""
    out: list[str] = []
    last = 0
    for match in query_params(text):
        replaced = _query_param(match)
        if replaced is not None:
            out.append(text[last : match.start()])
            out.append(replaced)
            last = match.end()
    if not out:
        return text
    out.append(text[last:])
    return "".join(out)


QUERY_RECOGNIZER = Recognizer(
    "query",
    _QUERY_PARAM_RE,
    replace=_query_param,
    group=2,
    needs="=",
    gate=re.compile(r"=(?<=[\w.\-:]=)"),
    apply=_replace_query_params,
)
