"""library/redaction.py: pure Python, no database."""

import pytest

from library.redaction import KnownValues, Redactor, collect_known_values, compile_agent_patterns, redactor_for_session


@pytest.fixture
def redactor():
    return Redactor(agent_patterns=[{"label": "order_id", "regex": r"\bORD-\d{4,}\b"}])


@pytest.mark.parametrize(
    "text, expected",
    [
        ("write to anna.schmidt42@example.com please", "write to {{email_address}} please"),
        ("card 4111 1111 1111 1111 ok", "card {{card_number}} ok"),
        ("card 4111-1111-1111-1111", "card {{card_number}}"),
        ("call +1 (415) 555-0134 now", "call {{phone_number}} now"),
        ("or 415-555-0134", "or {{phone_number}}"),
        ("ssn 123-45-6789", "ssn {{ssn}}"),
        ("from 192.168.10.20", "from {{ip_address}}"),
        ("IBAN DE89 3704 0044 0532 0130 00", "IBAN {{iban}}"),
        ("my date of birth is 1985-03-12", "my date of birth is {{date_of_birth}}"),
        ("born on 12/03/1985", "born on {{date_of_birth}}"),
        ("I live at 975 Sunset Drive, Suite 217", "I live at {{address}}"),
        ("pay with credit_card_4421486 or gift_card_1234567", "pay with {{payment_id}} or {{payment_id}}"),
        ("my user id is mia_li_3668", "my user id is {{user_id}}"),
        ("Hi, my name is John Smith.", "Hi, my name is {{person}}."),
        ("Dear Maria,", "Dear {{person}},"),
        ("api_key=abcdef1234567890 and password: hunter22", "api_key={{secret}} and password: {{secret}}"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "Authorization: {{secret}}"),
        ("token pm_Zx8s0aQ1bC2dE3fG4hI5jK6lM7nO8pQ9", "token {{secret}}"),
        ("order ORD-12345 is late", "order {{order_id}} is late"),
    ],
)
def test_recognizers_replace_with_typed_placeholders(redactor, text, expected):
    assert redactor.text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "flight HAT136 on 2024-05-20",  # a travel date is not a date of birth
        "3 bags, reservation ZFA04Y, total 1234",
        "Hi there, I am looking for help",
        "Call lookupOrder({{order_id}}).",
    ],
)
def test_recognizers_leave_ordinary_text(redactor, text):
    assert redactor.text(text) == text


def test_known_values_from_structured_data_are_redacted_everywhere_in_the_session():
    # given a tool result that names the customer, as tau-bench's get_user_details does
    result = '{"name": {"first_name": "Mia", "last_name": "Li"}, "email": "mia.li3818@example.com", "dob": "1990-04-05", "payment_methods": {"credit_card_4421486": {"last_four": "7447"}}}'
    redactor = redactor_for_session(structured=[{"user_id": "mia_li_3668"}, result])
    # when free text mentions them without any cue
    text = "Thank you, Mia. MIA LI's card ending 7447 and birthday 1990-04-05 are on file for mia_li_3668."
    # then every one is gone
    redacted = redactor.text(text)
    for value in ("Mia", "MIA", "LI", "7447", "1990-04-05", "mia_li_3668"):
        assert value not in redacted
    assert "{{person}}" in redacted and "{{user_id}}" in redacted and "{{date_of_birth}}" in redacted


def test_card_numbers_need_the_luhn_check(redactor):
    assert "{{card_number}}" not in redactor.text("ref 4111111111111112")
    assert redactor.text("ref 4111111111111111") == "ref {{card_number}}"


def test_short_names_match_whole_words_only():
    redactor = redactor_for_session(structured=[{"first_name": "Li"}])
    assert redactor.text("Li asked about the lift") == "{{person}} asked about the lift"


def test_value_redacts_personal_keys_and_keeps_the_rest():
    redactor = Redactor()
    value = {
        "user_id": "noah_muller_9847",
        "passengers": [{"first_name": "Noah", "last_name": "Muller", "dob": "1990-01-01"}],
        "cabin": "economy",
        "payment_methods": {"credit_card_1234567": {"amount": 5}},
    }
    assert redactor.value(value) == {
        "user_id": "{{user_id}}",
        "passengers": [{"first_name": "{{person}}", "last_name": "{{person}}", "dob": "{{date_of_birth}}"}],
        "cabin": "economy",
        "payment_methods": {"{{payment_id}}": {"amount": 5}},
    }


def test_redacting_twice_changes_nothing(redactor):
    once = redactor.text("Hi, my name is John Smith, mail john@example.com, order ORD-55555")
    assert redactor.text(once) == once


def test_collect_known_values_reads_json_strings_and_person_containers():
    known = collect_known_values([{"saved_passengers": [{"name": "Ava Brown"}]}, '{"email": "x.y@example.org"}'])
    assert known.values["Ava Brown"] == "person" and known.values["Ava"] == "person"
    assert known.values["x.y@example.org"] == "email_address"
    assert isinstance(known, KnownValues)


def test_bad_agent_pattern_names_the_entry():
    with pytest.raises(ValueError, match=r"redaction_patterns\[1\]: invalid regex"):
        compile_agent_patterns([{"label": "ok", "regex": "a+"}, {"label": "bad", "regex": "("}])
    with pytest.raises(ValueError, match=r"redaction_patterns\[0\]"):
        compile_agent_patterns([{"label": "no regex"}])
