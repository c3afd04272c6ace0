"""The import's faster walks over a session's data change no redaction (issue 38, bench/RESULTS.md):
each against the walk as it was, on generated JSON and on the real coding sessions. Pure Python,
no database."""

from __future__ import annotations

import json
import tarfile

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from library.redaction.echo import KnownValues
from library.redaction.keys import (
    child_labels,
    is_personal_object,
    key_label,
    normalise_key,
    parse_json_string,
    person_resource,
)
from library.redaction.recognizers import PLACEHOLDER_RE
from library.redaction.redactor import _JSON_STARTS, Redactor
from tests.conftest import SWEBENCH_DIR, require_swebench


def _value_before(self, data, key, label, resource):
    """Redactor._value as it was: each object's resource, labels and keys worked out for the object."""
    if isinstance(data, dict):
        personal_object = is_personal_object(data, key)
        resource_id = person_resource(data)
        out = {}
        children = child_labels(tuple(data), key, personal_object, resource_id)
        for (raw_key, value), (child, child_label, _payment) in zip(data.items(), children):
            kind = type(value)
            if child_label is None and (kind is int or (kind is str and value[:1] not in _JSON_STARTS)):
                out[self.text(str(raw_key))] = value if kind is int else self._text_under(value, child)
                continue
            if child == "name" and isinstance(value, (dict, list)):
                child_label = None
            out[self.text(str(raw_key))] = _value_before(self, value, child, child_label, resource_id)
        return out
    if isinstance(data, list):
        return [_value_before(self, item, key, label, resource) for item in data]
    if label is not None and isinstance(data, (str, int, float)) and not isinstance(data, bool):
        if isinstance(data, str) and (not data.strip() or PLACEHOLDER_RE.fullmatch(data.strip())):
            return data
        if isinstance(data, str) and parse_json_string(data) is not None:
            return json.dumps(_value_before(self, json.loads(data), key, None, resource))
        return "{{" + label + "}}"
    if isinstance(data, str):
        parsed = parse_json_string(data)
        if parsed is not None:
            return json.dumps(_value_before(self, parsed, key, None, resource))
        return self._text_under(data, key)
    return data


_KEYS = st.sampled_from(
    ["resourceType", "name", "given", "family", "birthDate", "email", "id", "user_id", "path", "Path", "output"]
    + ["command", "role", "patient", "credit_card_1234567", "address", "telecom", "value", "Anna"]
)
_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.sampled_from(["Patient", "Person", "Anna Lee", "anna", "path", "ls -R", "4WQ150", "mia_li_3668", "", "{{id}}"]),
    st.text(max_size=12),
)
_DATA = st.recursive(
    _LEAVES,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(_KEYS, children, max_size=5),
    max_leaves=16,
)
_KNOWN = {"Anna Lee": "person_name", "Anna": "person_name", "Path": "person_name", "4WQ150": "reservation_id"}
# shared across examples: the plans of objects of the same keys are read from the redactor's cache
_SHARED = [Redactor(), Redactor(known=KnownValues(values=dict(_KNOWN)))]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_DATA, key=st.sampled_from(["", "patient", "payment_methods", "name", "resource"]))
def test_the_object_plans_redact_as_each_object_worked_out(data, key):
    # objects of the same keys, with and without a resourceType, under the same and other keys, in
    # one redactor after another (whose keys are known values or not): the same redacted value
    for redactor in (*_SHARED, Redactor(known=KnownValues(values=dict(_KNOWN)))):
        got = redactor.value(data, key=key)
        normalised = normalise_key(key)
        want = _value_before(redactor, data, normalised, key_label(normalised) if normalised else None, None)
        assert json.dumps(got, ensure_ascii=False) == json.dumps(want, ensure_ascii=False), key


def test_objects_of_the_same_keys_with_another_resource_type_are_worked_out_each():
    # a resourceType makes the object a person (or not) by its value, not by its keys
    redactor = Redactor()
    patient = {"resourceType": "Patient", "id": "p1", "name": "Anna Lee", "note": "seen"}
    observation = {"resourceType": "Observation", "id": "o1", "name": "Anna Lee", "note": "seen"}
    for data in (observation, patient, observation, [patient, observation], {"entry": [patient, observation]}):
        assert redactor.value(data) == _value_before(redactor, data, "", None, None)
    assert redactor.value(patient)["name"] == "{{person_name}}"


def _short_args(value, limit):
    """build_excerpt's short_args (library/ingest/store.py)."""
    if isinstance(value, str):
        return value if len(value) <= limit else value[: limit - 1] + "…"
    if isinstance(value, dict):
        return {k: _short_args(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [_short_args(v, limit) for v in value[:20]]
    return value


_ARGUMENT_VALUES = st.one_of(
    st.integers(min_value=-(10**6), max_value=10**6),
    st.booleans(),
    st.floats(allow_nan=False),
    st.none(),
    st.sampled_from(
        [
            "",
            "{",
            "[1]",
            "{{id}}",
            "Anna Lee",
            "anna",
            "path",
            "ls -R",
            "mia_li_3668",
            "my name is Anna Lee",
            "{{source_file}}",
            "{{x",
            "{x}",
            "[]",
            "{{",
        ]
    ),
    st.lists(st.sampled_from(["x" * 7, " Anna Lee ", "\n", "é", "4WQ150", "call 415-555-0134", "1"]), max_size=60).map(
        "".join
    ),
    st.lists(st.integers(), max_size=2),
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.dictionaries(_KEYS, _ARGUMENT_VALUES, max_size=8), cut=st.sampled_from([5, 40, 260]))
def test_the_arguments_shown_in_one_pass_are_the_three_passes(data, cut):
    # cut, redacted, cut again: the excerpt's arguments as build_excerpt made them in three passes
    show = max(cut - 60, 3)
    for redactor in (*_SHARED, Redactor(known=KnownValues(values=dict(_KNOWN)))):
        got = redactor.shown_arguments(data, cut, show)
        want = _short_args(_value_before(redactor, _short_args(data, cut), "", None, None), show)
        assert got is None or json.dumps(got, ensure_ascii=False) == json.dumps(want, ensure_ascii=False)
        # None only for an object that is not flat: a value of another kind, one that may be JSON, or
        # one under a personal key
        resource, entries = redactor._object_plan(data, "")
        flat = all(
            type(v) is int or (type(v) is str and (v[:1] not in ("{", "[") or v[:2] == "{{")) for v in data.values()
        )
        assert (got is None) == (not flat or resource is not None or any(label for _, _, label in entries))


@pytest.mark.parametrize("length", [0, 1, 2, 199, 200, 201, 259, 260, 261, 400])
def test_the_arguments_shown_in_one_pass_are_cut_where_the_three_passes_cut(length):
    # texts at and around both limits, and ones that redaction makes longer across them
    for redactor in (*_SHARED, Redactor(known=KnownValues(values=dict(_KNOWN)))):
        for text in ("x" * length, ("Anna " * length)[:length], ("x" * (length - 5) + " Anna") if length > 5 else "y"):
            data = {"command": text, "returncode": 1, "output": "ok " + text}
            want = _short_args(_value_before(redactor, _short_args(data, 260), "", None, None), 200)
            assert redactor.shown_arguments(data, 260, 200) in (None, want)
            assert redactor.shown_arguments(data, 260, 200) == want


def test_an_id_shown_again_from_the_cache_is_named_after_its_key():
    # the second time from the redactor's own cache (read in shown_arguments): named as the first time
    data = {"command": "4WQ150", "returncode": 0, "output": "4WQ150"}
    for redactor in (Redactor(), Redactor(known=KnownValues(values=dict(_KNOWN)))):
        want = _short_args(_value_before(redactor, _short_args(data, 260), "", None, None), 200)
        assert redactor.shown_arguments(data, 260, 200) == want
        assert redactor.shown_arguments(data, 260, 200) == want
    assert Redactor().shown_arguments(data, 260, 200) == {
        "command": "{{command}}",
        "returncode": 0,
        "output": "{{output}}",
    }


def _other_repository_sessions() -> list:
    from library.ingest.formats import parse_item

    require_swebench()
    sessions = []
    with tarfile.open(SWEBENCH_DIR / "gemini-3-pro-other-repos-trajs.tar.gz", "r:*") as tar:
        for member in tar:
            if member.isfile() and member.name.endswith(".json"):
                with tar.extractfile(member) as stream:
                    sessions.append(parse_item(json.loads(stream.read()), fmt="mini-swe-agent"))
    assert len(sessions) > 100
    return sessions


def test_the_walks_redact_the_real_sessions_as_before(monkeypatch):
    # the excerpts of the 140 other repositories' sessions, with the walks as they were: byte for byte
    from library.ingest.store import build_excerpt, redactor_for
    from library.redaction.echo import RedactionCache

    sessions = _other_repository_sessions()
    cache = RedactionCache()
    fast = [build_excerpt(s, redactor_for(s, [], cache)) for s in sessions]
    monkeypatch.setattr(Redactor, "_value", _value_before)
    monkeypatch.setattr(Redactor, "shown_arguments", lambda self, data, cut, show: None)  # three passes
    cache = RedactionCache()
    plain = [build_excerpt(s, redactor_for(s, [], cache)) for s in sessions]
    for got, want in zip(fast, plain, strict=True):
        assert json.dumps(got, ensure_ascii=False) == json.dumps(want, ensure_ascii=False)
