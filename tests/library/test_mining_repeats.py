"""Long repeated skeletons compressed into a repeat step (library/mining/skeletons.py
`compress_skeleton`, drafted by drafting.py `compressed_steps`): on MINT's ALFWorld sessions
(public_data/mint-alfworld, where weaker models loop goto → open → take), and on generated
skeletons whose repeat is known."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from library.mining.drafting import compressed_steps
from library.mining.skeletons import Span, compress_skeleton, compressed_length, reduce_skeleton
from tests.conftest import MINT_ALFWORLD_DIR, require_mint_alfworld


def _expand(skeleton, spans: list[Span]) -> list[str]:
    out: list[str] = []
    for span in spans:
        out += list(skeleton[span.start : span.start + span.length]) * span.times
    return out


def _assert_well_formed(skeleton, spans: list[Span]) -> None:
    """The spans tile the skeleton in order, each repeat is a block that follows itself directly,
    and expanding them gives the skeleton back."""
    position = 0
    for span in spans:
        assert span.start == position and span.length >= 1 and span.times >= 1
        block = list(skeleton[span.start : span.start + span.length])
        assert list(skeleton[position : position + span.length * span.times]) == block * span.times
        position += span.length * span.times
    assert position == len(skeleton)
    assert _expand(skeleton, spans) == list(skeleton)


def test_alfworld_sessions_that_loop_compress_losslessly_into_repeat_steps():
    require_mint_alfworld()
    looping, total, saved = 0, 0, 0
    longest: tuple[tuple[str, ...], list[Span]] | None = None
    with (MINT_ALFWORLD_DIR / "sessions.jsonl").open() as handle:
        for line in handle:
            item = json.loads(line)
            skeleton = reduce_skeleton(call["name"] for call in item["tool_calls"])
            spans = compress_skeleton(skeleton)
            total += 1
            _assert_well_formed(skeleton, spans)
            if any(s.times > 1 for s in spans):
                looping += 1
                saved += len(skeleton) - len(spans)
                if longest is None or len(skeleton) > len(longest[0]):
                    longest = (skeleton, spans)
            assert compressed_length(skeleton) == len(spans) <= len(skeleton)
    # the data has the repeats the step was made for: 1,053 of 4,628 sessions loop
    assert total == 4628 and 900 <= looping <= 1400 and saved > 5 * looping  # 7,987 steps fewer
    skeleton, spans = longest
    repeats = [s for s in spans if s.times > 1]
    assert len(skeleton) >= 50 and len(spans) <= len(skeleton) // 2
    # the biggest saving first: a 10-call search loop run 3 times, not its parts
    assert max((s.times - 1) * s.length for s in repeats) >= 20


def test_a_drafted_procedure_reads_the_alfworld_loop_as_one_repeat_step():
    skeleton = ("goto", "open", "take", "goto", "open", "take", "goto", "open", "take", "goto", "heat", "goto", "put")
    steps = [f"Call {name}(…)." for name in skeleton]
    assert compress_skeleton(skeleton) == [Span(0, 3, 3), Span(9, 1, 1), Span(10, 1, 1), Span(11, 1, 1), Span(12, 1, 1)]
    assert compressed_steps(skeleton, steps) == [
        "Repeat 3 times: call goto(…), then call open(…), then call take(…).",
        "Call goto(…).",
        "Call heat(…).",
        "Call goto(…).",
        "Call put(…).",
    ]


_names = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@given(skeleton=st.lists(_names, max_size=30))
def test_any_skeleton_compresses_losslessly_and_never_grows(skeleton):
    spans = compress_skeleton(skeleton)
    _assert_well_formed(skeleton, spans)
    assert len(spans) <= len(skeleton)
    assert all(s.length == 1 for s in spans if s.times == 1)


@given(
    prefix=st.lists(st.sampled_from(["p", "q"]), max_size=4, unique=True),
    block=st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=2, max_size=4, unique=True),
    times=st.integers(2, 6),
    suffix=st.lists(st.sampled_from(["x", "y"]), max_size=4, unique=True),
)
def test_a_generated_loop_becomes_one_repeat_step_with_its_count(prefix, block, times, suffix):
    skeleton = [*prefix, *(block * times), *suffix]
    spans = compress_skeleton(skeleton)
    assert spans == [
        *(Span(i, 1, 1) for i in range(len(prefix))),
        Span(len(prefix), len(block), times),
        *(Span(len(prefix) + len(block) * times + i, 1, 1) for i in range(len(suffix))),
    ]
    steps = compressed_steps(skeleton, [f"Use {name}." for name in skeleton])
    assert steps[len(prefix)] == f"Repeat {times} times: " + ", then ".join(f"use {n}" for n in block) + "."
