"""library/redaction/: pure Python, no database."""

import json
import string

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from library.redaction.echo import KnownValues, collect_known_values
from library.redaction.recognizers import compile_agent_patterns, slow_pattern_problem
from library.redaction.redactor import Redactor, redactor_for_session
from tests.redaction_support import every_pre_check_off


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
        ("my date of birth is 1985-03-12", "my date of birth is {{birth_date}}"),
        ("born on 12/03/1985", "born on {{birth_date}}"),
        ("I live at 975 Sunset Drive, Suite 217", "I live at {{address}}"),
        ("pay with credit_card_4421486 or gift_card_1234567", "pay with {{payment_id}} or {{payment_id}}"),
        ("my user id is mia_li_3668", "my user id is {{user_id}}"),
        ("Hi, my name is John Smith.", "Hi, my name is {{person_name}}."),
        ("Dear Maria,", "Dear {{person_name}},"),
        ("api_key=abcdef1234567890 and password: hunter22", "api_key={{secret}} and password: {{secret}}"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "Authorization: {{secret}}"),
        ("token pm_Zx8s0aQ1bC2dE3fG4hI5jK6lM7nO8pQ9", "token {{secret}}"),
        ("order ORD-12345 is late", "order {{order_id}} is late"),  # the agent's own pattern names it
    ],
)
def test_recognizers_replace_with_typed_placeholders(redactor, text, expected):
    assert redactor.text(text) == expected


@pytest.mark.parametrize(
    "text, expected",
    [
        # id-shaped tokens: letters mixed with digits, codes after an id word
        ("3 bags, reservation ZFA04Y, total 1234", "3 bags, reservation {{id}}, total 1234"),
        ("order #W1234567 shipped", "order {{id}} shipped"),
        ("record S6534835 updated", "record {{id}} updated"),
        ("ticket ORD-12345 and account C-998877", "ticket {{id}} and account {{id}}"),
        ("my reservations are VAAOXJ and PGAGLM.", "my reservations are {{id}} and {{id}}."),
        ("confirmation code: QWERTYU", "confirmation code: {{id}}"),
        # free-text names
        ("John Smith called about his refund", "{{person_name}} called about his refund"),
        ("Customer Anna Schmidt wants a refund", "Customer {{person_name}} wants a refund"),
        ("Patient Maria Garcia, seen today", "Patient {{person_name}}, seen today"),
        # street addresses
        ("ship it to 221B Baker Street, London", "ship it to {{address}}, London"),
        ("Lieferung an Hauptstraße 5, 10115 Berlin bitte", "Lieferung an {{address}} bitte"),
        ("wohnt in der Berliner Straße 12a", "wohnt in der {{address}}"),
        # phone numbers, national with a trunk 0
        ("ruf mich an: 0151 23456789", "ruf mich an: {{phone_number}}"),
        ("Tel. 030/1234567", "Tel. {{phone_number}}"),
        # passport and licence numbers after their cue
        ("passport number X1234567 expires", "passport number {{passport_number}} expires"),
        ("my passport is 123456789", "my passport is {{passport_number}}"),
        ("driver's licence no. D1234-56789-01", "driver's licence no. {{licence_number}}"),
        ("zip code 19122 please", "zip code {{postal_code}} please"),
        # FHIR references and query strings
        ("subject Patient/12345", "subject Patient/{{patient_id}}"),
        (
            "GET Patient?name=John%20Smith&birthdate=1970-01-01&_count=5",
            "GET Patient?name={{person_name}}&birthdate={{birth_date}}&_count=5",
        ),
        ("/Patient?family=Smith&given=John", "/Patient?family={{person_name}}&given={{person_name}}"),
    ],
)
def test_shapes_names_and_addresses(text, expected):
    assert Redactor().text(text) == expected


def test_an_id_word_in_one_list_item_does_not_make_the_next_items_capitals_an_id():
    # anthropics/skills algorithmic-art: "code" ended one bullet, and the capitals opening the next
    # were read as a booking code ("**{{id}} OVER {{id}}**")
    text = (
        "### ESSENTIAL PRINCIPLES\n"
        "- **ALGORITHMIC PHILOSOPHY**: Creating a computational worldview to be expressed through code\n"
        "- **PROCESS OVER PRODUCT**: Always emphasize that beauty emerges from the algorithm's execution\n"
        "1. Booking code\n2. STATUS: CONFIRMED"
    )
    assert Redactor().text(text) == text


@pytest.mark.parametrize(
    "text, expected",
    [
        # a list's items read the line that introduces the list, whatever lies between
        ("Reservation codes:\n- VAAOXJ\n- PGAGLM", "Reservation codes:\n- {{id}}\n- {{id}}"),
        (
            "Your bookings:\n\n1. VAAOXJ (NYC, 2 bags)\n2. PGAGLM",
            "Your bookings:\n\n1. {{id}} (NYC, 2 bags)\n2. {{id}}",
        ),
        ("### Reservation numbers\n* VAAOXJ", "### Reservation numbers\n* {{id}}"),
        # an item's own words
        ("- Flight: JFK to LAX\n- Booking code: VAAOXJ", "- Flight: JFK to LAX\n- Booking code: {{id}}"),
        # a line that continues a sentence or a label, as before
        ("Booking code:\nVAAOXJ", "Booking code:\n{{id}}"),
        ("I made the reservation\nthat is called VAAOXJ", "I made the reservation\nthat is called {{id}}"),
    ],
)
def test_codes_in_lists_and_wrapped_lines_stay_redacted(text, expected):
    assert Redactor().text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Hi there, I am looking for help",
        "Call lookupOrder({{order_id}}).",
        "on the 24th at 9pm, a 24-hour window, 1000ml bottle, python3",
        "PLEASE HURRY, it is URGENT",  # shouted words are not codes
        "flight from JFK to LAX on 2024-05-20",
        "created 2024-05-02T03:10:19",
        "New York is lovely in May",
    ],
)
def test_recognizers_leave_ordinary_text(redactor, text):
    assert redactor.text(text) == text


def test_known_values_from_structured_data_are_redacted_everywhere_in_the_session():
    # given a tool result that names the customer, as tau-bench's get_user_details does
    result = '{"name": {"first_name": "Mia", "last_name": "Li"}, "email": "mia.li3818@example.com", "dob": "1990-04-05", "payment_methods": {"credit_card_4421486": {"last_four": "7447"}}, "reservations": ["NO6JO3", "VAAOXJ"]}'
    redactor = redactor_for_session(structured=[{"user_id": "mia_li_3668"}, result])
    # when free text mentions them without any cue
    text = "Thank you, Mia. MIA LI's card ending 7447 and birthday 1990-04-05 are on file for mia_li_3668; VAAOXJ is cancelled."
    # then every one is gone, each with the placeholder of the key it was seen under
    redacted = redactor.text(text)
    for value in ("Mia", "MIA", "LI", "7447", "1990-04-05", "mia_li_3668", "VAAOXJ"):
        assert value not in redacted
    assert "{{person_name}}" in redacted and "{{user_id}}" in redacted and "{{birth_date}}" in redacted
    assert "{{reservation_id}} is cancelled" in redacted


def test_a_value_named_once_in_free_text_goes_from_the_arguments_too():
    # given a DOB and a name the task text introduces with a cue
    task = "Hi, my name is Ivan Petrov, date of birth 1970-01-01."
    args = {"query": "Ivan Petrov 1970-01-01", "note": "for Petrov"}
    redactor = redactor_for_session(structured=[args], texts=[task])
    # then the same values in the arguments (no personal key there) are redacted
    assert redactor.value(args) == {"query": "{{person_name}} {{birth_date}}", "note": "for {{person_name}}"}


def test_query_string_values_echo_into_free_text():
    redactor = redactor_for_session(structured=[{"url": "Patient?name=Okafor&birthdate=1966-02-14"}])
    assert redactor.text("Found Okafor, born 1966-02-14.") == "Found {{person_name}}, born {{birth_date}}."


def test_card_numbers_need_the_luhn_check(redactor):
    assert "{{card_number}}" not in redactor.text("ref 4111111111111112")
    assert redactor.text("ref 4111111111111111") == "ref {{card_number}}"


def test_short_names_match_whole_words_only():
    redactor = redactor_for_session(structured=[{"first_name": "Li"}])
    assert redactor.text("Li asked about the lift") == "{{person_name}} asked about the lift"


def test_value_redacts_personal_keys_and_keeps_the_rest():
    redactor = Redactor()
    value = {
        "user_id": "noah_muller_9847",
        "passengers": [{"first_name": "Noah", "last_name": "Muller", "dob": "1990-01-01"}],
        "cabin": "economy",
        "payment_methods": {"credit_card_1234567": {"amount": 5}},
        "reservation_id": "4WQ150",
        "order": "#W2611340",
        "confirmation": "ABCDEF",
        "membership": "gold",
    }
    assert redactor.value(value) == {
        "user_id": "{{user_id}}",
        "passengers": [{"first_name": "{{person_name}}", "last_name": "{{person_name}}", "dob": "{{birth_date}}"}],
        "cabin": "economy",
        "payment_methods": {"{{payment_id}}": {"amount": 5}},
        "reservation_id": "{{reservation_id}}",
        "order": "{{order_id}}",
        "confirmation": "{{confirmation_number}}",
        "membership": "gold",
    }


def test_id_keys_at_any_depth_are_named_after_the_key():
    redactor = Redactor()
    value = {"a": {"b": [{"patientId": 123, "member": "M-77", "mrn": "S6534835", "ticket_id": "x", "id": "9"}]}}
    assert redactor.value(value) == {
        "a": {
            "b": [
                {
                    "patientId": "{{patient_id}}",
                    "member": "{{member_id}}",
                    "mrn": "{{medical_record_number}}",
                    "ticket_id": "{{ticket_id}}",
                    "id": "9",
                }
            ]
        }
    }


def test_id_and_name_beside_personal_fields_are_personal():
    redactor = Redactor()
    assert redactor.value({"id": "u-1", "name": "Ada Lovelace", "email": "ada@example.org"}) == {
        "id": "{{id}}",
        "name": "{{person_name}}",
        "email": "{{email_address}}",
    }
    # a product's name and id are not
    assert redactor.value({"id": "p-1", "name": "Water Bottle", "price": 3}) == {
        "id": "p-1",
        "name": "Water Bottle",
        "price": 3,
    }


def test_health_records_calls_and_results():
    """A health-records agent: FHIR-style search calls and Patient resources in the results."""
    # given a session that searches a patient by name and birth date and reads the record
    call = {"request": "GET Patient?name=Eve%20Holt&birthdate=1961-07-30", "identifier": "S6534835"}
    result = {
        "resourceType": "Bundle",
        "entry": [
            {
                "resource": {
                    "resourceType": "Patient",
                    "id": "pat-0042",
                    "identifier": [{"system": "urn:oid:1.2.36.146.595.217.0.1", "value": "S6534835"}],
                    "name": [
                        {"use": "official", "family": "Holt", "given": ["Eve", "Marie"], "text": "Eve Marie Holt"}
                    ],
                    "birthDate": "1961-07-30",
                    "telecom": [{"system": "phone", "value": "(03) 5555 6473"}],
                    "address": [{"line": ["534 Erewhon St"], "city": "PleasantVille", "postalCode": "3999"}],
                    "gender": "female",
                }
            }
        ],
    }
    task = "Eve Holt (DOB 1961-07-30) needs her lab results"
    redactor = redactor_for_session(structured=[call, json.dumps(result)], texts=[task])
    # when the call, the result and the texts are redacted
    redacted_call = redactor.value(call)
    redacted_result = json.dumps(redactor.value(result))
    redacted_task = redactor.text(task)
    reply = redactor.text(
        "Eve's record S6534835 (Holt, Eve Marie) shows pat-0042 born 1961-07-30; call Eve Holt at (03) 5555 6473."
    )
    # then no name, DOB, record number, patient id, phone or address line is left
    for leaked in ("Eve", "Holt", "Marie", "1961-07-30", "S6534835", "pat-0042", "5555", "534 Erewhon"):
        assert leaked not in json.dumps(redacted_call) + redacted_result + redacted_task + reply, leaked
    assert redacted_call == {
        "request": "GET Patient?name={{person_name}}&birthdate={{birth_date}}",
        "identifier": "{{identifier}}",
    }
    assert '"birthDate": "{{birth_date}}"' in redacted_result and '"id": "{{patient_id}}"' in redacted_result
    assert '"gender": "female"' in redacted_result and '"system": "phone"' in redacted_result
    assert redacted_task == "{{person_name}} (DOB {{birth_date}}) needs her lab results"


def test_redacting_twice_changes_nothing(redactor):
    once = redactor.text("Hi, my name is John Smith, mail john@example.com, order ORD-55555, reservation ZFA04Y")
    assert redactor.text(once) == once


def test_collect_known_values_reads_json_strings_and_person_containers():
    known = collect_known_values([{"saved_passengers": [{"name": "Ava Brown"}]}, '{"email": "x.y@example.org"}'])
    assert known.values["Ava Brown"] == "person_name" and known.values["Ava"] == "person_name"
    assert known.values["x.y@example.org"] == "email_address"
    assert isinstance(known, KnownValues)


@pytest.mark.parametrize("note", ["dob:1985-03-12", "DOB=1985-03-12;", "passport:X1234567"])
def test_a_value_after_a_cue_without_a_space_is_echoed(note):
    # given a cue and its value written together, in a field that is not personal by its key
    value = note.split(":")[-1].split("=")[-1].rstrip(";")
    redactor = redactor_for_session(structured=[{"note": note}])
    # then the value is a known value of the session, gone wherever it recurs
    assert value in redactor.known.values
    assert value not in redactor.text(f"the value {value} again")


def test_short_codes_are_not_echoed():
    # a state or a one-digit id under a personal key is replaced there, but not hunted in free text
    known = collect_known_values({"address": {"state": "OR", "zip": "97201"}, "member_id": "7"})
    assert "OR" not in known.values and "7" not in known.values and known.values["97201"] == "postal_code"


def test_bad_agent_pattern_names_the_entry():
    with pytest.raises(ValueError, match=r"redaction_patterns\[1\]: invalid regex"):
        compile_agent_patterns([{"label": "ok", "regex": "a+"}, {"label": "bad", "regex": "("}])
    with pytest.raises(ValueError, match=r"redaction_patterns\[0\]"):
        compile_agent_patterns([{"label": "no regex"}])


@pytest.mark.parametrize(
    "text, redacted",
    [
        # as the SWE-bench Django issue texts and commits name people (42 of 231 excerpts kept such a name)
        ("Description (last modified by Tim Bell)", "Description (last modified by {{person_name}})"),
        ("(last modified by François Granade)", "(last modified by {{person_name}})"),
        ("Description (last modified by typonaut)", "Description (last modified by {{person_name}})"),
        ("Author: Mariusz Felisiak <felisiak.mariusz@gmail.com>", "Author: {{person_name}} <{{email_address}}>"),
        ("Co-authored-by: Adam Johnson <me@adamj.eu>", "Co-authored-by: {{person_name}} <{{email_address}}>"),
        ("Reported by Carlton Gibson on the list.", "Reported by {{person_name}} on the list."),
        ("Thanks to Simon Charette for the review.", "Thanks to {{person_name}} for the review."),
        ("You're Chen Smith, living in Jacksonville.", "You're {{person_name}}, living in Jacksonville."),
        # not names
        ("Reported by the user", "Reported by the user"),
        ("Author: 1\nSUCCESS", "Author: 1\nSUCCESS"),
    ],
)
def test_authors_and_reporters_are_names(text, redacted):
    assert Redactor().text(text) == redacted


def test_escapes_in_code_are_not_ids_but_a_token_after_a_path_separator_is():
    # seen in the SWE-bench excerpts: ul = '\u00a1-\uffff' became '\{{id}}-\uffff'
    assert Redactor().text("ul = '\\u00a1-\\uffff'") == "ul = '\\u00a1-\\uffff'"
    assert Redactor().text("C:\\Users\\AB12345 and ORD-12345") == "C:\\Users\\{{id}} and {{id}}"


@pytest.mark.parametrize(
    "regex, slow",
    [
        (r"(a+)+$", True),
        (r"(\w*\s?)*", True),
        (r"(?:ab|c+)*x", True),
        (r"(x+){2,5}", True),
        (r"(?=(a+)+)b", True),
        (r"(?>a+)+", False),
        (r"(a++)+", False),
        (r"\bORD-\d{5}\b", False),
        (r"(a|b)+", False),
        (r"(\d{3}-)+", False),
        (r"(", False),  # not a pattern at all: compiling says so
    ],
)
def test_nested_unbounded_repeats_are_the_slow_patterns(regex, slow):
    assert (slow_pattern_problem(regex) is not None) == slow


# --------------------------------------------------------------------------------------- properties

_words = st.text(alphabet=string.ascii_letters + string.digits + " .,:;!?-#@/_'()", max_size=60)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | _words,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(["a", "note", "text", "items", "data"]), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=_words)
def test_text_redaction_is_idempotent(text):
    redactor = redactor_for_session(structured=[{"first_name": "Mia", "reservation_id": "ZFA04Y"}], texts=[text])
    once = redactor.text(text)
    assert redactor.text(once) == once


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=_json)
def test_value_redaction_is_idempotent(data):
    redactor = Redactor()
    once = redactor.value(data)
    assert redactor.value(once) == once


_PLANTED = [
    ("first_name", "Zhenya"),
    ("last_name", "Okonkwo-Smith"),
    ("dob", "1987-11-23"),
    ("birthDate", "1954-02-01"),
    ("email", "z.okonkwo77@example.net"),
    ("user_id", "zhenya_okonkwo_4821"),
    ("reservation_id", "QX7R2M"),
    ("order_id", "#W7418520"),
    ("mrn", "S6534835"),
    ("payment_id", "credit_card_5550123"),
    ("address1", "17 Quarry Lane"),
    ("given", "Thaddeus"),
    ("family", "Wojcik"),
    ("confirmation", "KZPQRL"),
    ("patient", "P-008877"),
]


@st.composite
def _planted(draw):
    key, value = draw(st.sampled_from(_PLANTED))
    container: object = {key: value}
    for _ in range(draw(st.integers(0, 6))):
        wrap = draw(st.sampled_from(["dict", "list", "json"]))
        if wrap == "dict":
            container = {
                draw(st.sampled_from(["result", "data", "entry", "resource", "x"])): container,
                "n": draw(st.integers(0, 9)),
            }
        elif wrap == "list":
            container = [draw(_json), container]
        else:
            container = {"content": json.dumps(container)}
    mention = draw(st.sampled_from(["Thanks {v}!", "{v}", "About {v}, as agreed.", "re: {v}; ok"])).format(v=value)
    return key, value, container, mention


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(planted=_planted())
def test_no_planted_value_survives_at_any_depth(planted):
    # given a personal value planted under its key at any depth of a tool result
    key, value, container, mention = planted
    redactor = redactor_for_session(structured=[container])
    # then it is gone from the result, from an argument that repeats it and from free text
    assert value not in json.dumps(redactor.value(container), ensure_ascii=False)
    assert value not in json.dumps(redactor.value({"q": mention}), ensure_ascii=False)
    assert value not in redactor.text(mention)


def test_kept_words_such_as_tool_names_are_never_redacted():
    redactor = Redactor(keep=["s3Upload", "getV2Order"])
    text = "Call s3Upload({{file}}), then getV2Order('X9Y8Z7W6') for order AB12345."
    assert redactor.text(text) == "Call s3Upload({{file}}), then getV2Order('{{id}}') for order {{id}}."
    assert Redactor().text("Call s3Upload.") == "Call {{id}}."


# ------------------------------------------------------------ pre-checks and the batch cache (speed only)


def test_only_four_characters_fold_to_ascii():
    # the premise of _folds_like_ascii: besides them, no character matches an ASCII character
    # case-insensitively, turns into ASCII in lower case, or changes length
    import re
    import sys

    from library.redaction.recognizers import ASCII_FOLDS

    ascii_ci = re.compile(r"(?i)[\x00-\x7f]")
    folding = {
        chr(code)
        for code in range(128, sys.maxunicode + 1)
        if not 0xD800 <= code <= 0xDFFF
        and (ascii_ci.fullmatch(chr(code)) or len(chr(code).lower()) != 1 or chr(code).lower().isascii())
    }
    assert folding == set(ASCII_FOLDS)


# every cue of _CUES with each optional ending, as a text writes it
_CUE_SAMPLES = [
    "name is",
    "Name is",
    "name:",
    "you are",
    "You are",
    "this is",
    "This is",
    "i am",
    "I am",
    "I'm",
    "dear",
    "Dear",
    "Thank",
    "thanks",
    "Thanks,",
    "thank,",
    "Thank you,",
    "Hello",
    "hello,",
    "Hi",
    "hi,",
    *(
        f"{title}{dot}"
        for title in ("Mr", "Mrs", "Ms", "Miss", "Mx", "Dr", "Prof", "Herr", "Frau")
        for dot in ("", ".")
    ),
    "named",
    "belongs to",
    "belonging to",
    "on behalf of",
    "signed by",
    "booked for",
    "addressed to",
    *(
        word
        for cue in (
            "customer",
            "client",
            "caller",
            "patient",
            "passenger",
            "guest",
            "member",
            "traveller",
            "traveler",
            "cardholder",
            "account holder",
            "subscriber",
            "kunde",
            "kundin",
        )
        for word in (cue, cue[0].upper() + cue[1:])
    ),
]


@pytest.mark.parametrize("cue", _CUE_SAMPLES)
def test_every_name_cue_passes_the_pre_check(cue):
    from library.redaction.recognizers import Features, select_recognizers
    from library.redaction.shapes import _PERSON_CUE

    text = f"x = 1; {cue} Anna Schmidt-Lee wrote"
    assert _PERSON_CUE.pattern.search(text) is not None
    assert select_recognizers([_PERSON_CUE], Features(text)) == [_PERSON_CUE]
    assert "Anna" not in Redactor().text(text)


# fragments of what the recognizers look for, and of what is near it, in any order
_FRAGMENTS = st.sampled_from(
    [
        *_CUE_SAMPLES,
        " ",
        ", ",
        ". ",
        "\n",
        "Anna",
        "Schmidt",
        "Li",
        "called",
        "asked",
        "#",
        "-",
        "_",
        "/",
        "=",
        "?",
        "&",
        ";",
        ":",
        "@example.com",
        "mia.li",
        "eyJhbGciOiJIUzI1",
        ".eyJzdWIiOiIx",
        "sk-",
        "pm_",
        "AKIA",
        "Bearer ",
        "api_key",
        "password",
        "DE89",
        "3704",
        "0044",
        "0532",
        "4111",
        "1111",
        "123",
        "45",
        "6789",
        "192.168.",
        "10.20",
        "+49",
        "0151",
        "(415)",
        "555",
        "0134",
        " 30 ",
        "-",
        ")",
        "born on",
        "DOB ",
        "1985-03-12",
        "12/03/1985",
        "passport",
        "licence",
        "zip code",
        "975",
        "Sunset",
        "Drive",
        "Suite",
        "Hauptstraße",
        "Berliner Straße",
        "Gartenweg",
        "Str.",
        "12a",
        "10115",
        "credit_card_",
        "4421486",
        "mia_li_",
        "3668",
        "Patient/",
        "ORD-",
        "W1234567",
        "VAAOXJ",
        "reservation",
        "4WQ150",
        "…",
        "é",
        "İ",
        "ı",
        "ſ",
        "K",
        "{{id}}",
        "ÄÖÜ",
    ]
)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.lists(_FRAGMENTS, max_size=14).map("".join))
@example(text="call +1(234)-(567)-8901 now")  # ")-(" between two digits of an international number
def test_pre_checks_never_skip_a_recognizer_that_matches(text):
    from library.redaction import echo
    from library.redaction.recognizers import Features, apply_recognizer, select_recognizers
    from library.redaction.shapes import (
        BUILTIN_RECOGNIZERS,
        NAME_RECOGNIZERS,
        SETS_NARROWER_THAN_GATES,
        SHAPE_RECOGNIZERS,
    )

    features = Features(text)
    for recognizer in (*BUILTIN_RECOGNIZERS, *SHAPE_RECOGNIZERS, *NAME_RECOGNIZERS):
        # `needs` is part of the rule (a passport number has a digit); keywords, gates and checks
        # are only there to save time
        needed = not recognizer.needs or recognizer.needs in features.marks
        matches = recognizer.pattern.search(text) is not None
        if recognizer.gate_set in SETS_NARROWER_THAN_GATES:  # they look for what the recognizer replaces
            matches = apply_recognizer(recognizer, text) != text
        if needed and matches:
            assert select_recognizers([recognizer], features) == [recognizer], (
                recognizer.label,
                recognizer.pattern.pattern[:60],
            )
    assert echo._echo_hint(text) == (echo._ECHO_HINT_RE.search(text) is not None)


def _redactions(text: str) -> tuple[str, str, dict[str, str]]:
    """What the redactors make of `text`: the built-in rules alone, and a session that knows
    personal values and harvests the text's own (the echo)."""
    plain = Redactor().text(text)
    session = redactor_for_session(structured=[{"first_name": "Mia", "reservation_id": "4WQ150"}], texts=[text])
    return plain, session.text(text), session.known.values


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.one_of(
        st.lists(_FRAGMENTS, max_size=14).map("".join),
        st.text(alphabet=string.ascii_letters + string.digits + " -#_.@/+()", max_size=40),
    )
)
def test_the_pre_checks_change_no_redaction(text):
    # The pre-checks (keywords, gates, checks, the capitalised-word and echo-hint tests) are decided
    # on the whole text while the recognizers run on the pieces between placeholders: with them all
    # switched off, every recognizer runs on every text and piece, and the result is the same.
    prefiltered = _redactions(text)
    with every_pre_check_off():
        full = _redactions(text)
    assert prefiltered == full


def test_a_cache_shared_by_sessions_changes_no_redaction():
    from library.redaction.echo import RedactionCache

    sessions = [
        (
            [{"first_name": "Mia", "reservation_id": "ZFA04Y"}],
            ["Thanks Mia, reservation ZFA04Y is booked", "git diff", "Dear Anna Lee,"],
        ),
        ([{"note": "nothing personal"}], ["git diff", "Thanks Mia, reservation ZFA04Y is booked", "Dear Anna Lee,"]),
        ([{"email": "mia.li3818@example.com"}], ["git diff", "write to mia.li3818@example.com", "Thanks Mia"]),
    ]
    cache = RedactionCache()
    for structured, texts in sessions:
        alone = redactor_for_session(structured=structured, texts=texts)
        shared = redactor_for_session(structured=structured, texts=texts, cache=cache)
        assert shared.known.values == alone.known.values
        for text in texts:
            assert shared.text(text) == alone.text(text)
    # the second session knows no "Mia": its own redaction, not the first session's, was used
    assert redactor_for_session(structured=sessions[1][0], cache=cache).text("Thanks Mia") == "Thanks {{person_name}}"
    assert redactor_for_session(structured=sessions[1][0], cache=cache).text("ok Mia") == "ok Mia"


@settings(max_examples=500, deadline=None)
@given(text=st.text(alphabet="ab_=?&;#% \n.:-{}", max_size=30))
def test_query_parameters_are_found_as_the_pattern_finds_them(text):
    from library.redaction import keys
    from library.redaction.recognizers import _or_original

    assert [(m.span(), m.groups()) for m in keys.query_params(text)] == [
        (m.span(), m.groups()) for m in keys._QUERY_PARAM_RE.finditer(text)
    ]
    assert keys._replace_query_params(text) == keys._QUERY_PARAM_RE.sub(
        lambda m: _or_original(keys._query_param(m), m), text
    )
