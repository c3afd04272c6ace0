"""manage.py import_sessions keeps what is good: a bad line or byte is refused with its line number
and the rest is imported; the summary is true; an agent the import created (or left without
tools) gets the tools of the sessions stored."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from library.ingest.reader import read_items
from library.models import Agent, AgentSession

from .test_ingest import procmem_item

pytestmark = pytest.mark.django_db


def _run(path, *args):
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("import_sessions", str(path), *args, "--no-progress", stdout=out, stderr=err)
        failure = None
    except CommandError as exc:
        failure = str(exc)
    return out.getvalue(), err.getvalue(), failure


def _lines(*items) -> bytes:
    return b"\n".join(i if isinstance(i, bytes) else json.dumps(i).encode() for i in items) + b"\n"


def test_a_bad_line_and_a_bad_byte_are_refused_by_line_and_the_rest_is_imported(agent, tmp_path):
    # given: 100 good sessions, then a malformed line, a line with a non-UTF-8 byte, and 5 more good ones
    good = [procmem_item(f"g-{i}") for i in range(100)]
    path = tmp_path / "sessions.jsonl"
    path.write_bytes(
        _lines(
            *good,
            b'{"session_id": "broken", ',
            b'{"session_id": "latin-\xe9"}',
            *[procmem_item(f"h-{i}") for i in range(5)],
        )
    )
    out, err, failure = _run(path, "--agent", agent.name, "--batch-size", "30")
    assert AgentSession.objects.filter(agent=agent).count() == 105
    assert "line 101:" in err and "line 102:" in err
    assert "support_agent: 105 stored, 0 duplicate, 2 refused." in out
    assert (
        failure
        == "2 items refused (listed above); 105 stored and 0 duplicate were kept, each item whole or not at all."
    )


def test_the_summary_never_claims_what_did_not_happen(agent, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(_lines(procmem_item("x", outcome="done")))
    out, _err, failure = _run(path, "--agent", agent.name)
    assert "0 stored, 0 duplicate, 1 refused" in out and "0 stored" in failure and "others" not in failure


def test_a_json_list_keeps_the_items_before_a_malformed_one_and_says_where_it_stopped(agent, tmp_path):
    path = tmp_path / "list.json"
    body = "[\n" + ",\n".join(json.dumps(procmem_item(f"l-{i}")) for i in range(3)) + ',\n{"session_id": oops}\n]'
    path.write_text(body)
    out, err, failure = _run(path, "--agent", agent.name)
    assert AgentSession.objects.filter(agent=agent).count() == 3
    assert "line 5:" in err and "after line 5 was not read" in out and failure


def test_an_agent_created_by_an_import_gets_the_tools_of_the_stored_sessions(tmp_path):
    path = tmp_path / "fhir.jsonl"
    sessions = [
        procmem_item(
            "f-1", agent=None, tool_calls=[{"name": "GET Patient", "args": {}}, {"name": "GET Observation", "args": {}}]
        ),
        procmem_item(
            "f-2", agent=None, tool_calls=[{"name": "bad\x00tool", "args": {}}]
        ),  # refused: its tool is not seen
    ]
    path.write_bytes(_lines(*sessions))
    _run(path, "--agent", "fhir_agent", "--create-agent")
    assert Agent.objects.get(name="fhir_agent").tools == ["GET_Observation", "GET_Patient"]


def test_a_reimport_fills_an_empty_tool_list(agent, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(procmem_item("r-1")))
    _run(path, "--agent", agent.name)
    Agent.objects.filter(pk=agent.pk).update(tools=[])
    # when: the same file again; every session is a duplicate
    out, _err, failure = _run(path, "--agent", agent.name)
    assert "0 stored, 1 duplicate, 0 refused" in out and failure is None
    assert Agent.objects.get(pk=agent.pk).tools == ["createApproval", "lookupOrder"]


def test_an_agent_with_tools_keeps_its_list(agent, tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(_lines(procmem_item("k-1", tool_calls=[{"name": "somethingElse", "args": {}}])))
    before = list(Agent.objects.get(pk=agent.pk).tools)
    _run(path, "--agent", agent.name)
    assert Agent.objects.get(pk=agent.pk).tools == before


@pytest.mark.parametrize(
    "data, expected",
    [
        (b'{"a": 1}\n\n{"a": 2}\n', [(1, {"a": 1}, ""), (3, {"a": 2}, "")]),
        (b'\xef\xbb\xbf{"a": 1}\n{"a": \n{"a": 3}\n', [(1, {"a": 1}, ""), (2, None, "x"), (3, {"a": 3}, "")]),
        (b'{"a": oops}\n{"a": 2}\n', [(1, None, "x"), (2, {"a": 2}, "")]),
        (b'{\n  "a": 1\n}\n', [(1, {"a": 1}, "")]),
        (b'[\n {"a": 1},\n {"a": 2}\n]', [(2, {"a": 1}, ""), (3, {"a": 2}, "")]),
        (b'[\n {"a": 1},\n {"a": "\xff"}\n]', [(2, {"a": 1}, ""), (3, None, "x")]),
        (b"", []),
    ],
)
@pytest.mark.parametrize("sized", [False, True])
def test_read_items_numbers_lines(data, expected, sized):
    # with the size known, a pretty-printed object is parsed whole: same items, same lines, same errors
    got = [
        (item.line, item.value, "x" if item.error else "")
        for item in read_items(io.BytesIO(data), chunk_size=8, size=len(data) if sized else None)
    ]
    assert got == expected


@pytest.mark.parametrize("chunk_size", [1, 7, 16, 1 << 20])
def test_the_items_before_a_byte_that_is_not_utf8_are_read_whatever_the_chunks(chunk_size):
    data = b'[\n {"a": "\xc3\xa9"},\n {"b": 2}\n\xff]'
    items = [(i.line, i.value, i.error, i.fatal) for i in read_items(io.BytesIO(data), chunk_size=chunk_size)]
    assert items == [(2, {"a": "é"}, "", False), (3, {"b": 2}, "", False), (4, None, "is not UTF-8 (byte 0xff)", True)]


@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1}\n\n{"a": 2}\n',  # JSON Lines
        b'{\n  "a": 1,\n  "b": "' + b"x" * 100 + b'"\n}\n',  # one object over several lines (a .traj.json)
        b'[\n {"a": 1},\n {"a": 2}\n]',  # a JSON list
        b'\n\n{"a": oops}\n{"a": 2}\n',
    ],
)
@pytest.mark.parametrize("sized", [False, True])
def test_read_items_reports_every_byte_it_reads_once(data, sized):
    # the import's progress bar counts these: a pretty-printed trajectory counted only its first line
    counted = []
    list(read_items(io.BytesIO(data), on_bytes=counted.append, chunk_size=8, size=len(data) if sized else None))
    assert sum(counted) == len(data)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.dictionaries(st.text(max_size=8), _json_values, max_size=6),
    cut=st.integers(min_value=0),
    junk=st.sampled_from([b"", b"x", b"\n{", b"]", b"\xff"]),
)
# found by CI: an intact object and a byte that is not UTF-8 in one chunk lost the object
@example(value={"00\r\x07\x80\x80\x80\U00010000": None}, cut=34, junk=b"\xff")
def test_reading_an_object_whole_gives_what_streaming_gives(value, cut, junk):
    """The whole-file path (size known) against the streaming decoder, on objects intact, cut short
    or followed by junk: the same items, lines and errors."""
    data = json.dumps(value, indent=2, ensure_ascii=False).encode()
    data = data[: cut % (len(data) + 1)] + junk if junk or cut % 3 == 0 else data

    def items(size):
        return [
            (item.line, item.value, item.error, item.fatal)
            for item in read_items(io.BytesIO(data), chunk_size=16, size=size)
        ]

    assert items(len(data)) == items(None)


@pytest.mark.parametrize(
    "data, checked",
    [
        (b'{\n  "a": "x\\u00e9",\n  "b": [1, 2.5]\n}\n', True),
        (b'{\n  "a": "x\\u0000"\n}\n', False),
        (b'{\n  "a": "\\\\u0000"\n}\n', False),  # no NUL, but the text cannot tell: the strings are checked
    ],
)
def test_an_object_read_whole_says_whether_its_strings_are_storable(data, checked):
    # the storable-value check of the item (parse_item) then walks only its numbers and nesting
    (item,) = read_items(io.BytesIO(data), size=len(data))
    assert (item.error, item.texts_checked) == ("", checked)
    (streamed,) = read_items(io.BytesIO(data))
    assert streamed.value == item.value and not streamed.texts_checked


def test_a_nul_in_a_file_read_whole_is_refused_with_where(tmp_path):
    # given a trajectory whose task holds the escape \u0000
    from library.ingest.formats import ItemInvalid, parse_item

    data = b'{\n  "instance_id": "x__y-1",\n  "messages": [{"role": "user", "content": "a\\u0000b"}]\n}\n'
    (item,) = read_items(io.BytesIO(data), size=len(data))
    # then parse_item refuses it as before, naming the place
    with pytest.raises(ItemInvalid) as excinfo:
        parse_item(item.value, fmt="mini-swe-agent", texts_checked=item.texts_checked)
    assert "messages[0].content: contains a NUL character" in str(excinfo.value)
