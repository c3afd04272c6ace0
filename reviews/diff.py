"""Diffs between two versions of a procedure, computed apart from rendering.

diff-match-patch output becomes `Piece(op, text)` tuples (op is "equal", "insert" or "delete"); the
templates render them auto-escaped, so procedure text can never become markup. One comparison per
field, each with `has_changed()`:

- appliesWhen: one text, word-level highlights;
- steps and forbiddenActions: lists aligned one item per row (an item diff first, then word-level
  highlights inside the rows that changed);
- requiredTools: a set (order carries no meaning): kept, added, removed;
- a coding procedure's preconditions and postconditions (lists) and verifyCommand (text), compared
  only when either side has them, so other procedures' diffs show the four fields as before.

Word level: words, runs of whitespace and punctuation are mapped to one character each (the
"lines to chars" trick of diff-match-patch, on words), diffed, then `diff_cleanupSemantic` merges
the small equalities that make a diff unreadable.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from diff_match_patch import diff_match_patch

from library.services import Content

Op = Literal["equal", "insert", "delete"]
RowKind = Literal["same", "changed", "added", "removed"]

_OPS: dict[int, Op] = {0: "equal", 1: "insert", -1: "delete"}
_TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
# Private-use code points: never in real text, never surrogates, and plenty of them.
_TOKEN_BASE = 0xF0000


@dataclass(frozen=True)
class Piece:
    op: Op
    text: str


def _engine() -> diff_match_patch:
    dmp = diff_match_patch()
    dmp.Diff_Timeout = 0.2  # seconds; a pathological pair degrades to a coarser diff, never hangs a page
    return dmp


def _encode(tokens_of: Sequence[Sequence[str]]) -> tuple[list[str], list[str]]:
    """Maps each distinct token to one character; returns the encoded strings and the table."""
    table: list[str] = []
    index: dict[str, int] = {}
    encoded: list[str] = []
    for tokens in tokens_of:
        chars = []
        for token in tokens:
            if token not in index:
                index[token] = len(table)
                table.append(token)
            chars.append(chr(_TOKEN_BASE + index[token]))
        encoded.append("".join(chars))
    return encoded, table


def _decode(diffs, table: list[str]) -> list[tuple[Op, list[str]]]:
    return [(_OPS[op], [table[ord(ch) - _TOKEN_BASE] for ch in chars]) for op, chars in diffs]


def word_diff(old: str, new: str) -> list[Piece]:
    """Word-level diff of two texts with semantic clean-up. Adjacent pieces of one op are merged."""
    if old == new:
        return [Piece("equal", old)] if old else []
    (a, b), table = _encode([_TOKEN_RE.findall(old), _TOKEN_RE.findall(new)])
    dmp = _engine()
    diffs = dmp.diff_main(a, b, False)
    dmp.diff_cleanupSemantic(diffs)
    pieces: list[Piece] = []
    for op, tokens in _decode(diffs, table):
        text = "".join(tokens)
        if not text:
            continue
        if pieces and pieces[-1].op == op:
            pieces[-1] = Piece(op, pieces[-1].text + text)
        else:
            pieces.append(Piece(op, text))
    return pieces


def side(pieces: Sequence[Piece], which: Literal["old", "new"]) -> list[Piece]:
    """The pieces one side of a side-by-side view shows: the old side drops insertions, the new
    side drops deletions."""
    dropped = "insert" if which == "old" else "delete"
    kept: list[Piece] = []
    for piece in pieces:
        if piece.op == dropped:
            continue
        if kept and kept[-1].op == piece.op:
            kept[-1] = Piece(piece.op, kept[-1].text + piece.text)
        else:
            kept.append(piece)
    return kept


@dataclass(frozen=True)
class Row:
    """One row of a side-by-side list: an item on the left (old), on the right (new), or both."""

    kind: RowKind
    old_number: int | None
    new_number: int | None
    old: list[Piece]
    new: list[Piece]

    @property
    def sign(self) -> str:
        # Shown next to colour, so that a colour-blind reviewer reads the change too.
        return {"same": " ", "changed": "~", "added": "+", "removed": "−"}[self.kind]

    @property
    def label(self) -> str:
        return {"same": "unchanged", "changed": "changed", "added": "added", "removed": "removed"}[self.kind]


_WORD_RE = re.compile(r"\w+", re.UNICODE)
PAIR_MIN_SIMILARITY = 0.3


def _similarity(a: str, b: str) -> float:
    """Jaccard similarity of the lower-cased word sets: cheap and good enough to pair edited items."""
    wa, wb = set(_WORD_RE.findall(a.lower())), set(_WORD_RE.findall(b.lower()))
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def _pair_by_similarity(removed: Sequence[str], added: Sequence[str]) -> list[tuple[str | None, str | None]]:
    """Order-preserving alignment of a run of removed items with a run of added ones that maximises
    the summed similarity of the pairs (a small Needleman-Wunsch with free gaps). Pairs below
    PAIR_MIN_SIMILARITY are not paired: a rewritten step next to a new one shows as removed + added
    rather than as a "change" between two unrelated texts."""
    n, m = len(removed), len(added)
    if not n or not m:
        return [(r, None) for r in removed] + [(None, a) for a in added]
    sim = [[_similarity(r, a) for a in added] for r in removed]
    best = [[0.0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            pair = sim[i][j] + best[i + 1][j + 1] if sim[i][j] >= PAIR_MIN_SIMILARITY else -1.0
            best[i][j] = max(pair, best[i + 1][j], best[i][j + 1])
    out: list[tuple[str | None, str | None]] = []
    i = j = 0
    while i < n and j < m:
        if sim[i][j] >= PAIR_MIN_SIMILARITY and best[i][j] == sim[i][j] + best[i + 1][j + 1]:
            out.append((removed[i], added[j]))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            out.append((removed[i], None))
            i += 1
        else:
            out.append((None, added[j]))
            j += 1
    out += [(r, None) for r in removed[i:]] + [(None, a) for a in added[j:]]
    return out


def align_items(old: Sequence[str], new: Sequence[str]) -> list[Row]:
    """Aligns two lists one item per row. Items are diffed as units; a run of removed items next to
    a run of added ones is paired up in order as "changed" rows with word-level highlights, the
    rest stay pure removals or additions."""
    (a, b), table = _encode([list(old), list(new)])
    dmp = _engine()
    diffs = _decode(dmp.diff_main(a, b, False), table)
    rows: list[Row] = []
    old_no = new_no = 0
    pending_removed: list[str] = []
    pending_added: list[str] = []

    def flush() -> None:
        nonlocal old_no, new_no
        for before, after in _pair_by_similarity(pending_removed, pending_added):
            if before is not None and after is not None:
                old_no += 1
                new_no += 1
                pieces = word_diff(before, after)
                rows.append(Row("changed", old_no, new_no, side(pieces, "old"), side(pieces, "new")))
            elif before is not None:
                old_no += 1
                rows.append(Row("removed", old_no, None, [Piece("delete", before)], []))
            else:
                new_no += 1
                rows.append(Row("added", None, new_no, [], [Piece("insert", after)]))
        pending_removed.clear()
        pending_added.clear()

    for op, items in diffs:
        if op == "equal":
            flush()
            for item in items:
                old_no += 1
                new_no += 1
                rows.append(Row("same", old_no, new_no, [Piece("equal", item)], [Piece("equal", item)]))
        elif op == "delete":
            pending_removed.extend(items)
        else:
            pending_added.extend(items)
    flush()
    return rows


# ------------------------------------------------------------------------------------------- per field


@dataclass
class FieldComparison:
    name: str  # the record's field name, e.g. "appliesWhen"
    label: str
    kind: Literal["text", "list", "set"]
    rows: list[Row] = field(default_factory=list)

    def has_changed(self) -> bool:
        return any(row.kind != "same" for row in self.rows)

    @property
    def counts(self) -> dict[str, int]:
        counts = {"changed": 0, "added": 0, "removed": 0, "same": 0}
        for row in self.rows:
            counts[row.kind] += 1
        return counts

    @property
    def summary(self) -> str:
        if not self.rows:
            return "none"
        if not self.has_changed():
            return "unchanged"
        counts = self.counts
        parts = [f"{counts[k]} {k}" for k in ("changed", "added", "removed") if counts[k]]
        return ", ".join(parts)


def compare_text(name: str, label: str, old: str | None, new: str) -> FieldComparison:
    if old is None:
        return FieldComparison(name, label, "text", [Row("added", None, 1, [], [Piece("insert", new)])])
    if old == new:
        return FieldComparison(name, label, "text", [Row("same", 1, 1, [Piece("equal", old)], [Piece("equal", new)])])
    pieces = word_diff(old, new)
    return FieldComparison(name, label, "text", [Row("changed", 1, 1, side(pieces, "old"), side(pieces, "new"))])


def compare_list(name: str, label: str, old: Sequence[str] | None, new: Sequence[str]) -> FieldComparison:
    return FieldComparison(name, label, "list", align_items(list(old or []), list(new)))


def compare_set(name: str, label: str, old: Sequence[str] | None, new: Sequence[str]) -> FieldComparison:
    """Tools: the order carries no meaning. Kept ones first (in the new order), then added, then removed."""
    before, after = list(old or []), list(new)
    rows = [Row("same", None, None, [Piece("equal", t)], [Piece("equal", t)]) for t in after if t in before]
    rows += [Row("added", None, None, [], [Piece("insert", t)]) for t in after if t not in before]
    rows += [Row("removed", None, None, [Piece("delete", t)], []) for t in before if t not in after]
    return FieldComparison(name, label, "set", rows)


def compare_contents(old: Content | None, new: Content) -> list[FieldComparison]:
    """The content fields of a procedure, old (None: a new procedure) against new."""
    fields = [
        compare_text("appliesWhen", "Applies when", old.applies_when if old else None, new.applies_when),
        compare_list("steps", "Steps", old.steps if old else None, new.steps),
        compare_set("requiredTools", "Required tools", old.required_tools if old else None, new.required_tools),
        compare_list(
            "forbiddenActions", "Forbidden actions", old.forbidden_actions if old else None, new.forbidden_actions
        ),
    ]
    if new.is_coding or (old is not None and old.is_coding):
        fields += [
            compare_list(
                "preconditions", "Preconditions (before)", old.preconditions if old else None, new.preconditions
            ),
            compare_list(
                "postconditions", "Postconditions (after)", old.postconditions if old else None, new.postconditions
            ),
            compare_text("verifyCommand", "Verify command", old.verify_command if old else None, new.verify_command),
        ]
    return fields


def content_of(version) -> Content:
    """Adapts a ProcedureVersion (or anything with the content attributes; the coding ones are optional)."""
    return Content(
        version.applies_when,
        list(version.steps),
        list(version.required_tools),
        list(version.forbidden_actions),
        list(getattr(version, "preconditions", None) or []),
        list(getattr(version, "postconditions", None) or []),
        getattr(version, "verify_command", "") or "",
    )


def compare_versions(old, new) -> list[FieldComparison]:
    return compare_contents(content_of(old) if old is not None else None, content_of(new))
