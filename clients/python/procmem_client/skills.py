"""Agent Skills names and SKILL.md front matter: the procmem side of the open Agent Skills format
(agentskills.io). Pure Python; the reader needs PyYAML (the `skills` extra), the writer nothing.

Skill names. A procedure id is dotted lower-case words (`^[a-z][a-z0-9_]*(\\.[a-z0-9_]+)+$`, at most
120 characters: library/models/agents.py); a skill name is 1-64 lower-case letters, digits and
single hyphens, neither first nor last, equal to its folder's name. The mapping:

- `refund.over_limit` -> `refund-over-limit`: the plain form, an id whose first segment is one
  word, with one dot and the other words joined by single underscores (and whose last word is
  not shaped like a tag, below). Most ids are like this, and their names read as written.
- any other id -> its words (the runs of letters and digits) joined by hyphens, then a tag
  `-x<n>` that records the separators between them: `returns.damaged_item.photo` ->
  `returns-damaged-item-photo-x<n>`. `n` is the separator runs (`.` as 1, `_` as 2, a 0 between
  runs) read as a base-3 number after a leading 1, so every id has its own tag.
- an id whose name would pass 64 characters -> its first words, then `-h` and ten base-36 digits
  of the id's SHA-256. Such a name does not give the id back by itself: the SKILL.md's
  `metadata.procmem-id` does (and `skill_name_to_id` says so).

So `skill_name_to_id(id_to_skill_name(i)) == i` for every valid id whose name needs no hash
(Hypothesis checks it in tests/test_skills.py), and two ids never share a name.

Front matter. `write_front_matter` emits a small, fixed subset of YAML: the keys in the order
given, a name as a bare word, every other string double-quoted with the escapes both PyYAML and
the TypeScript client agree on, one level of string-to-string mapping (`metadata`). Python and
TypeScript write the same bytes (clients/typescript/src/skills.ts). `read_skill_file` reads any
SKILL.md with PyYAML's safe loader and says what is wrong and where.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

# The server's procedure id rule (library/models/agents.py PROCEDURE_KEY_RE, max_length 120), here
# because the client does not import the server. fullmatch: `$` would let a trailing newline pass.
PROCEDURE_ID_RE = re.compile(r"[a-z][a-z0-9_]*(\.[a-z0-9_]+)+")
PROCEDURE_ID_MAX = 120
SKILL_NAME_RE = re.compile(r"[a-z0-9]+(-[a-z0-9]+)*")
SKILL_NAME_MAX = 64
DESCRIPTION_MAX = 1024

_WORD = re.compile(r"[a-z0-9]+")
_SEPARATORS = re.compile(r"[._]+")
_PLAIN = re.compile(r"[a-z][a-z0-9]*\.[a-z0-9]+(_[a-z0-9]+)*")
_STRUCTURE_TAG = re.compile(r"x([0-9]+)")
_HASH_TAG = re.compile(r"h[0-9a-z]{10}")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


class SkillNameError(ValueError):
    """A skill name procmem cannot turn back into a procedure id, with the reason."""


class SkillFileError(ValueError):
    """A SKILL.md procmem cannot read: `field` names the front matter key or part at fault."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field
        self.reason = message


def is_procedure_id(value: str) -> bool:
    return len(value) <= PROCEDURE_ID_MAX and PROCEDURE_ID_RE.fullmatch(value) is not None


def is_skill_name(value: str) -> bool:
    """The specification's rule for `name`: 1-64 characters, [a-z0-9] and single inner hyphens."""
    return len(value) <= SKILL_NAME_MAX and SKILL_NAME_RE.fullmatch(value) is not None


def _is_tag(word: str) -> bool:
    return bool(_STRUCTURE_TAG.fullmatch(word) or _HASH_TAG.fullmatch(word))


def _base36(number: int) -> str:
    digits = ""
    while True:
        number, digit = divmod(number, 36)
        digits = _BASE36[digit] + digits
        if not number:
            return digits


def _structure_tag(procedure_id: str) -> str:
    runs = [run.replace(".", "1").replace("_", "2") for run in _SEPARATORS.findall(procedure_id)]
    return f"x{int('1' + '0'.join(runs), 3)}"


def _hashed_name(procedure_id: str, words: list[str]) -> str:
    digest = _base36(int.from_bytes(hashlib.sha256(procedure_id.encode()).digest(), "big"))[:10].rjust(10, "0")
    tag = f"h{digest}"
    kept: list[str] = []
    for word in words:
        if len("-".join([*kept, word, tag])) > SKILL_NAME_MAX:
            break
        kept.append(word)
    if not kept:  # one word longer than the whole budget: cut it
        kept = [words[0][: SKILL_NAME_MAX - len(tag) - 1]]
    return "-".join([*kept, tag])


def id_to_skill_name(procedure_id: str) -> str:
    """The skill name of a procedure id (see the module docstring). ValueError for a non-id."""
    if not is_procedure_id(procedure_id):
        raise ValueError(f"not a procedure id: {procedure_id!r}")
    words = _WORD.findall(procedure_id)
    if _PLAIN.fullmatch(procedure_id) and not _is_tag(words[-1]):
        name = "-".join(words)
    else:
        name = "-".join([*words, _structure_tag(procedure_id)])
    return name if len(name) <= SKILL_NAME_MAX else _hashed_name(procedure_id, words)


def _separator_runs(number: int) -> list[str]:
    digits = ""
    while number:
        number, digit = divmod(number, 3)
        digits = str(digit) + digits
    if not digits.startswith("1"):
        raise SkillNameError("its -x tag is not one procmem writes")
    body = digits[1:]
    runs = body.split("0") if body else []
    if any(not run for run in runs):
        raise SkillNameError("its -x tag is not one procmem writes")
    return [run.replace("1", ".").replace("2", "_") for run in runs]


def skill_name_to_id(name: str) -> str:
    """The procedure id a skill name stands for: the inverse of `id_to_skill_name`. SkillNameError
    when the name is not one procmem writes or is a shortened (`-h…`) name, whose id is in the
    SKILL.md's `metadata.procmem-id`."""
    if not is_skill_name(name):
        raise SkillNameError(f"{name!r} is not a valid skill name")
    words = name.split("-")
    last = words[-1]
    if _HASH_TAG.fullmatch(last):
        raise SkillNameError(f"{name!r} is a shortened name: its procedure id is in metadata.procmem-id")
    tag = _STRUCTURE_TAG.fullmatch(last)
    if tag is None:
        if len(words) < 2:
            raise SkillNameError(f"{name!r} has one word: a procedure id has at least two")
        procedure_id = f"{words[0]}.{'_'.join(words[1:])}"
    else:
        words = words[:-1]
        runs = _separator_runs(int(tag.group(1)))
        if len(runs) not in (len(words) - 1, len(words)):
            raise SkillNameError(f"{name!r}: its -x tag does not fit its {len(words)} words")
        procedure_id = "".join(word + (runs[i] if i < len(runs) else "") for i, word in enumerate(words))
    if not is_procedure_id(procedure_id) or id_to_skill_name(procedure_id) != name:
        raise SkillNameError(f"{name!r} is not a name procmem gives any procedure id")
    return procedure_id


# ------------------------------------------------------------------------------------------- front matter

# What PyYAML reads as printable inside a double-quoted scalar, less the line breaks (which would
# fold) and the byte order mark; everything else is written as an escape.
_UNPRINTABLE = re.compile("[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")
_BARE_KEY = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)+")
_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def quote(value: str) -> str:
    """A YAML double-quoted scalar on one line that PyYAML (and js-yaml) read back as `value`.
    Three hyphens in a row are written `--\\x2d`: the reference validator (skills-ref) finds the end
    of the front matter at the next `---` anywhere, even inside a quoted value."""
    escaped = _UNPRINTABLE.sub(_escape, value.replace("\\", "\\\\").replace('"', '\\"'))
    return '"' + escaped.replace("---", "--\\x2d") + '"'


def _key(key: str) -> str:
    # hyphenated lower-case words are never a YAML 1.1 boolean, null or number: written bare
    return key if _BARE_KEY.fullmatch(key) else quote(key)


def write_front_matter(fields: Mapping[str, Any]) -> str:
    """`---`, one line per key in the order given, `---`, each line ending in a newline. Values:
    `name` as a bare word (it is a valid skill name), strings double-quoted, a mapping of strings
    one level deep (values quoted, keys bare when they are hyphenated words), a list of strings as a flow sequence."""
    lines = ["---"]
    for key, value in fields.items():
        if key == "name":
            if not is_skill_name(value):
                raise ValueError(f"name: {value!r} is not a valid skill name")
            lines.append(f"name: {value}")
        elif isinstance(value, str):
            lines.append(f"{key}: {quote(value)}")
        elif isinstance(value, Mapping):
            lines.append(f"{key}:" if value else f"{key}: {{}}")
            lines.extend(f"  {_key(str(k))}: {quote(str(v))}" for k, v in value.items())
        elif isinstance(value, list | tuple):
            lines.append(f"{key}: [{', '.join(quote(str(item)) for item in value)}]")
        else:
            raise TypeError(f"{key}: write a str, a mapping of str or a list of str, not {type(value).__name__}")
    lines.append("---")
    return "\n".join(lines) + "\n"


def split_front_matter(text: str) -> tuple[str, str]:
    """(the YAML between the `---` lines, the body after them). SkillFileError without them."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        raise SkillFileError("SKILL.md must open with a `---` line and YAML front matter", field="front matter")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n").rstrip() == "---":
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise SkillFileError("the front matter has no closing `---` line", field="front matter")


def read_skill_file(text: str) -> tuple[dict[str, Any], str]:
    """(front matter as a dict, Markdown body) of a SKILL.md, read with PyYAML's safe loader.
    Checks what every skill must have: a `name` that is a valid skill name and a `description` of
    1-1,024 characters; SkillFileError names the field otherwise. Other keys are returned as read."""
    import yaml  # the `skills` extra: only reading needs it

    raw, body = split_front_matter(text)
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        # the front matter starts on the file's second line
        where = f" (SKILL.md line {mark.line + 2}, column {mark.column + 1})" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise SkillFileError(f"not valid YAML: {problem}{where}", field="front matter") from None
    if not isinstance(data, dict):
        raise SkillFileError("the front matter must be a mapping of keys to values", field="front matter")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise SkillFileError("required, a string", field="name")
    if not is_skill_name(name):
        raise SkillFileError(
            f"{name!r} is not a valid skill name (1-64 lower-case letters, digits and single hyphens, "
            "not first or last)",
            field="name",
        )
    description = data.get("description")
    if not isinstance(description, str) or not description.strip():
        raise SkillFileError("required, a non-empty string", field="description")
    if len(description) > DESCRIPTION_MAX:
        raise SkillFileError(f"{len(description)} characters, at most {DESCRIPTION_MAX}", field="description")
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise SkillFileError("must be a mapping of keys to values", field="metadata")
    return data, body


__all__ = [
    "DESCRIPTION_MAX",
    "PROCEDURE_ID_MAX",
    "SKILL_NAME_MAX",
    "SkillFileError",
    "SkillNameError",
    "id_to_skill_name",
    "is_procedure_id",
    "is_skill_name",
    "quote",
    "read_skill_file",
    "skill_name_to_id",
    "split_front_matter",
    "write_front_matter",
]
