"""The redactor with its time-saving pre-checks switched off, for tests that prove those pre-checks
change no redaction (tests/library/test_redaction.py, tests/library/test_redaction_speed.py)."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from unittest import mock

from library.redaction import echo
from library.redaction import redactor as redactor_module


def every_recognizer(recognizers, features):
    """select_recognizers without the pre-checks that only save time (keywords, gates, checks):
    every recognizer whose `needs` the text has runs. `needs` is part of the rule (a passport
    number has a digit: "passport dearname" is none)."""
    return [r for r in recognizers if not r.needs or r.needs in features.marks]


@contextlib.contextmanager
def every_pre_check_off() -> Iterator[None]:
    """Every recognizer runs on every text and piece; the capitalised-word and echo-hint tests pass all."""
    always = re.compile("")
    with (
        mock.patch.object(redactor_module, "select_recognizers", every_recognizer),
        mock.patch.object(redactor_module, "CAPITAL_RE", always),
        mock.patch.object(redactor_module, "_names_may_match", lambda features: True),
        mock.patch.object(echo, "select_recognizers", every_recognizer),
        mock.patch.object(echo, "CAPITAL_RE", always),
        mock.patch.object(echo, "_echo_hint", lambda text, features=None: True),
    ):
        yield
