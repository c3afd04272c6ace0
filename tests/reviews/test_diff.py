"""reviews/diff.py: word-level pieces, list alignment, per-field comparisons."""

from reviews.diff import Content, Piece, align_items, compare_contents, compare_set, side, word_diff


def _text(pieces, ops=("equal", "insert", "delete")):
    return "".join(p.text for p in pieces if p.op in ops)


def test_word_diff_marks_whole_words_and_reassembles_both_texts():
    old = "Tell the customer with replyTemplates('refund_pending') that the refund is being processed."
    new = "Tell the customer the expected wait with replyTemplates('approval_pending')."
    pieces = word_diff(old, new)
    assert _text(pieces, ("equal", "delete")) == old
    assert _text(pieces, ("equal", "insert")) == new
    assert Piece("delete", "refund_pending") in pieces
    assert Piece("insert", "approval_pending") in pieces
    # word level: no piece cuts a word in half
    for piece in pieces:
        if piece.op != "equal":
            assert not piece.text[:1].isalnum() or piece.text.split()[0] in old + new


def test_word_diff_of_equal_texts_is_one_equal_piece():
    assert word_diff("same text", "same text") == [Piece("equal", "same text")]
    assert word_diff("", "") == []


def test_semantic_cleanup_does_not_keep_a_lone_space_as_an_equality():
    # without the clean-up: delete alpha, insert gamma, equal " ", delete beta, insert delta
    assert word_diff("alpha beta", "gamma delta") == [Piece("delete", "alpha beta"), Piece("insert", "gamma delta")]


def test_side_drops_the_other_sides_changes_and_merges_neighbours():
    pieces = [Piece("equal", "a "), Piece("delete", "b"), Piece("insert", "c"), Piece("equal", " d")]
    assert side(pieces, "old") == [Piece("equal", "a "), Piece("delete", "b"), Piece("equal", " d")]
    assert side(pieces, "new") == [Piece("equal", "a "), Piece("insert", "c"), Piece("equal", " d")]
    assert side([Piece("equal", "a"), Piece("delete", "x"), Piece("equal", "b")], "new") == [Piece("equal", "ab")]


def test_align_items_keeps_one_step_per_row_and_pairs_edited_steps():
    old = ["Look up the order.", "Check the return window.", "Tell the customer the refund is processed."]
    new = [
        "Look up the order.",
        "Check the return window.",
        "Create an approval request.",
        "Tell the customer the expected wait.",
    ]
    rows = align_items(old, new)
    assert [r.kind for r in rows] == ["same", "same", "added", "changed"]
    assert [(r.old_number, r.new_number) for r in rows] == [(1, 1), (2, 2), (None, 3), (3, 4)]
    changed = rows[3]
    assert Piece("insert", "expected wait") in changed.new or any(
        p.op == "insert" and "wait" in p.text for p in changed.new
    )
    assert all(p.op != "insert" for p in changed.old)


def test_unrelated_replacement_shows_as_removed_and_added_not_as_a_change():
    rows = align_items(["Escalate to a human."], ["Look up the order with lookupOrder."])
    assert [r.kind for r in rows] == ["removed", "added"]
    assert rows[0].sign == "−" and rows[1].sign == "+"


def test_tools_compare_as_a_set_ignoring_order():
    same = compare_set("requiredTools", "Required tools", ["a", "b"], ["b", "a"])
    assert not same.has_changed()
    changed = compare_set("requiredTools", "Required tools", ["a", "b"], ["b", "c"])
    assert [(r.kind, r.new[0].text if r.new else r.old[0].text) for r in changed.rows] == [
        ("same", "b"),
        ("added", "c"),
        ("removed", "a"),
    ]
    assert changed.summary == "1 added, 1 removed"


def test_compare_contents_flags_only_changed_fields():
    old = Content("When X.", ["s1", "s2"], ["a"], ["Do not Y."])
    new = Content("When X.", ["s1", "s2 changed"], ["a"], ["Do not Y."])
    fields = {f.name: f for f in compare_contents(old, new)}
    assert [name for name, f in fields.items() if f.has_changed()] == ["steps"]
    assert fields["steps"].summary == "1 changed"


def test_a_new_procedure_has_every_field_added():
    fields = compare_contents(None, Content("When X.", ["s1", "s2", "s3"], ["a"], []))
    assert all(r.kind == "added" for f in fields for r in f.rows)
    assert fields[1].counts["added"] == 3
    assert fields[3].summary == "none"


def test_markup_in_text_stays_text_in_pieces():
    pieces = word_diff("Reply.", "Reply <script>alert(1)</script>.")
    assert "<script>" in _text(pieces)  # the diff keeps the characters; the template escapes them
