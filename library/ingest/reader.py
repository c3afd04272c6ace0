"""Reads session files of any size: a JSON list, JSON Lines, or one JSON object, item by item."""

from __future__ import annotations

import codecs
import json
import os
import tarfile
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


SESSION_FILE_SUFFIXES = (".json", ".jsonl", ".ndjson")


def is_archive(path: str) -> bool:
    return path.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"))


def iter_session_files(path: str) -> Iterator[tuple[str, IO[bytes], int]]:
    """(name, binary stream, size) of each session file under `path`: the file itself, every
    .json/.jsonl file of a directory (recursively, sorted), or of a tar archive (e.g. a folder of
    mini-swe-agent .traj.json files, one session each). Streams are closed after the caller's loop
    step; an archive is read member by member, never unpacked to disk."""
    if os.path.isdir(path):
        names = sorted(
            os.path.join(root, name)
            for root, _dirs, files in os.walk(path)
            for name in files
            if name.endswith(SESSION_FILE_SUFFIXES)
        )
        for name in names:
            with open(name, "rb") as stream:
                yield name, stream, os.path.getsize(name)
        return
    if is_archive(path):
        with tarfile.open(path, "r:*") as archive:
            for member in archive:
                if not member.isfile() or not member.name.endswith(SESSION_FILE_SUFFIXES):
                    continue
                stream = archive.extractfile(member)
                if stream is None:
                    continue
                with stream:
                    yield f"{path}:{member.name}", stream, member.size
        return
    with open(path, "rb") as stream:
        yield path, stream, os.path.getsize(path)
