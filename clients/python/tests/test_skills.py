"""Skill names from procedure ids and back, and SKILL.md front matter (procmem_client/skills.py)."""

from __future__ import annotations

import re

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from procmem_client.skills import (
    SkillFileError,
    SkillNameError,
    id_to_skill_name,
    is_procedure_id,
    is_skill_name,
    quote,
    read_skill_file,
    skill_name_to_id,
    write_front_matter,
)

# The server's own rule, read from its source so the two cannot drift apart unnoticed.
SERVER_RULE = r"^[a-z][a-z0-9_]*(\.[a-z0-9_]+)+$"

procedure_ids = st.from_regex(re.compile(r"[a-z][a-z0-9_]{0,20}(\.[a-z0-9_]{1,20}){1,5}"), fullmatch=True).filter(
    lambda value: len(value) <= 120
)
long_ids = st.from_regex(re.compile(r"[a-z][a-z0-9_]{0,60}(\.[a-z0-9_]{1,60}){1,3}"), fullmatch=True).filter(
    lambda value: len(value) <= 120
)


@pytest.mark.parametrize(
    ("procedure_id", "name"),
    [
        ("refund.over_limit", "refund-over-limit"),
        ("order.status", "order-status"),
        ("airline.cancel_reservation", "airline-cancel-reservation"),
        ("returns.damaged_item.photo", "returns-damaged-item-photo-x343"),
        ("order_status.lookup", "order-status-lookup-x46"),
        ("a.x12", "a-x12-x4"),
        ("a._", "a-x14"),
    ],
)
def test_names_read_as_the_id_and_come_back(procedure_id, name):
    assert id_to_skill_name(procedure_id) == name
    assert skill_name_to_id(name) == procedure_id


@settings(max_examples=150)
@given(procedure_ids)
@example("a.b")
@example("a.b.c_d__e_")
@example("z9.__")
def test_every_id_maps_to_a_valid_name_that_maps_back(procedure_id):
    assert re.match(SERVER_RULE, procedure_id)
    name = id_to_skill_name(procedure_id)
    assert is_skill_name(name), name
    assert len(name) <= 64 and "--" not in name and not name.startswith("-") and not name.endswith("-")
    if re.fullmatch(r".*-h[0-9a-z]{10}", name):  # shortened: an id too long for 64 characters
        with pytest.raises(SkillNameError, match="metadata.procmem-id"):
            skill_name_to_id(name)
    else:
        assert skill_name_to_id(name) == procedure_id


@settings(max_examples=100)
@given(long_ids)
def test_long_ids_get_a_valid_shortened_name_that_says_where_the_id_is(procedure_id):
    name = id_to_skill_name(procedure_id)
    assert is_skill_name(name)
    try:
        assert skill_name_to_id(name) == procedure_id
    except SkillNameError as error:
        assert "metadata.procmem-id" in str(error)
        assert re.fullmatch(r".*-h[0-9a-z]{10}", name)


@settings(max_examples=150)
@given(procedure_ids, procedure_ids)
def test_two_ids_never_share_a_name(first, second):
    if first != second:
        assert id_to_skill_name(first) != id_to_skill_name(second)


@settings(max_examples=150)
@given(st.from_regex(re.compile(r"[a-z0-9]{1,8}(-[a-z0-9]{1,8}){0,5}"), fullmatch=True))
def test_any_name_either_maps_to_an_id_that_maps_back_or_is_refused(name):
    try:
        procedure_id = skill_name_to_id(name)
    except SkillNameError:
        return
    assert is_procedure_id(procedure_id)
    assert id_to_skill_name(procedure_id) == name


@pytest.mark.parametrize("value", ["", "a", "A.b", "a.b\n", "1a.b", "a.", ".a", "a..b", "a.b-c", "a." + "b" * 119])
def test_what_is_not_a_procedure_id_has_no_name(value):
    with pytest.raises(ValueError, match="not a procedure id"):
        id_to_skill_name(value)


@pytest.mark.parametrize("name", ["", "-a", "a-", "a--b", "Ab-c", "a_b", "a" * 65, "single"])
def test_what_is_not_a_procmem_name_is_refused_with_the_reason(name):
    with pytest.raises(SkillNameError):
        skill_name_to_id(name)


# ------------------------------------------------------------------------------------------- front matter

text_values = st.text(st.characters(codec="utf-8"), max_size=60)


@settings(max_examples=150)
@given(text_values)
@example("yes")
@example("null")
@example("# not a comment")
@example("a: b")
@example("line\nbreak\r\n\u2028\u0085\ufeff\t\x7f\x00")
@example("'\"\\")
@example("a---b----c\\---")
def test_a_quoted_string_reads_back_as_itself_with_pyyaml(value):
    assert yaml.safe_load(f"key: {quote(value)}\n") == {"key": value}
    assert "\n" not in quote(value) and "---" not in quote(value)


@settings(max_examples=100)
@given(
    procedure_ids.map(id_to_skill_name),
    text_values.filter(lambda d: d.strip()),
    st.dictionaries(st.text(max_size=10), text_values, max_size=4),
)
def test_the_front_matter_writer_reads_back_with_pyyaml(name, description, metadata):
    written = write_front_matter({"name": name, "description": description[:1024], "metadata": metadata})
    data, body = read_skill_file(written + "Body\n")
    assert data == {"name": name, "description": description[:1024], "metadata": metadata}
    assert body == "Body\n"


def test_the_front_matter_is_written_in_the_order_given():
    written = write_front_matter(
        {"name": "refund-over-limit", "description": 'Refunds "over" the limit.', "metadata": {"procmem-id": "r.o"}}
    )
    assert written == (
        '---\nname: refund-over-limit\ndescription: "Refunds \\"over\\" the limit."\n'
        'metadata:\n  procmem-id: "r.o"\n---\n'
    )


@pytest.mark.parametrize(
    ("text", "field", "reason"),
    [
        ("no front matter", "front matter", "must open with"),
        ("---\nname: a-b\n", "front matter", "no closing"),
        ("---\nname: [a\n---\n", "front matter", "SKILL.md line 3"),
        ("---\n- a\n---\n", "front matter", "mapping"),
        ("---\ndescription: x\n---\n", "name", "required"),
        ("---\nname: Bad_Name\ndescription: x\n---\n", "name", "not a valid skill name"),
        ("---\nname: a-b\n---\n", "description", "required"),
        ("---\nname: a-b\ndescription: '" + "x" * 1025 + "'\n---\n", "description", "1025 characters"),
        ("---\nname: a-b\ndescription: x\nmetadata: [1]\n---\n", "metadata", "mapping"),
    ],
)
def test_a_bad_skill_file_says_which_field_and_why(text, field, reason):
    with pytest.raises(SkillFileError) as caught:
        read_skill_file(text)
    assert caught.value.field == field
    assert reason in str(caught.value)


def test_a_real_skill_file_with_crlf_and_a_bom_reads():
    data, body = read_skill_file("\ufeff---\r\nname: pdf\r\ndescription: Use for PDFs.\r\n---\r\n# PDF\r\n")
    assert data == {"name": "pdf", "description": "Use for PDFs."}
    assert body == "# PDF\r\n"
