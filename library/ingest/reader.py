"""Reads session files of any size: a JSON list, JSON Lines, or one JSON object, item by item."""

from __future__ import annotations

import codecs
import json
from typing import IO, Any, Callable, Iterator


def iter_json_items(stream: IO[bytes], *, chunk_size: int = 1 << 20, on_bytes: Callable[[int], None] | None = None) -> Iterator[Any]:
    """Yields the items of a JSON list, of JSON Lines, or a single JSON object, reading `stream` in
    chunks: memory holds one chunk plus the item being decoded, whatever the file's size.

    Raises ValueError naming the item index and byte-independent position on malformed input."""
    decoder = json.JSONDecoder()
    text_decoder = codecs.getincrementaldecoder("utf-8-sig")()
    buffer = ""
    eof = False
    in_list: bool | None = None
    index = 0

    def more() -> bool:
        nonlocal buffer, eof
        if eof:
            return False
        chunk = stream.read(chunk_size)
        if on_bytes is not None and chunk:
            on_bytes(len(chunk))
        if not chunk:
            eof = True
            buffer += text_decoder.decode(b"", final=True)
            return False
        buffer += text_decoder.decode(chunk)
        return True

    position = 0
    while True:
        # skip whitespace and separators
        while True:
            while position < len(buffer) and buffer[position] in " \t\r\n":
                position += 1
            if position < len(buffer):
                break
            buffer, position = "", 0
            if not more():
                break
        if position >= len(buffer):
            if in_list:
                raise ValueError(f"the JSON list is not closed (after item {index})")
            return
        char = buffer[position]
        if in_list is None:
            in_list = char == "["
            if in_list:
                position += 1
                continue
        if in_list and char == "]":
            return
        if in_list and char == ",":
            position += 1
            continue
        while True:
            try:
                value, end = decoder.raw_decode(buffer, position)
                # a number or literal at the very end of a chunk may be cut; an object/list never ends early
                if end == len(buffer) and not eof and buffer[position] not in "{[\"":
                    raise json.JSONDecodeError("maybe truncated", buffer, end)
                break
            except json.JSONDecodeError as exc:
                if more():
                    continue
                raise ValueError(f"item {index}: invalid JSON: {exc.msg}") from None
        yield value
        index += 1
        buffer, position = buffer[end:], 0
