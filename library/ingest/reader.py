"""Reads session files of any size: a JSON list, JSON Lines, or one JSON object, item by item.

`read_items` is what imports use: it numbers every item by the line it starts on and never lets
one bad line cost the others.

- JSON Lines (the first line is a JSON value on its own): line by line. A line that is not JSON,
  not UTF-8, or nested too deep is yielded as an error with its line number, and reading goes on.
- A JSON list, or one (pretty-printed) JSON object: streamed in chunks. A malformed item cannot be
  skipped (where it ends is unknown), so it is yielded as a fatal error with its line number and
  reading stops there; everything before it has been yielded.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import tarfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any

from isal import igzip, isal_zlib

from .. import safe_json


@dataclass(frozen=True)
class ReadItem:
    line: int  # the line the item starts on (1-based)
    value: Any = None
    error: str = ""  # why the item could not be read ("": it was)
    fatal: bool = False  # nothing after it can be read
    # its strings and keys are storable (safe_json.texts_storable of the text it was parsed from)
    texts_checked: bool = False


class _Prepended:
    """A byte stream with `head` put back in front (what was read to detect the format). `on_bytes`
    counts what comes from `stream` only: the head was counted when it was read."""

    def __init__(self, head: bytes, stream: IO[bytes], on_bytes: Callable[[int], None] | None = None):
        self.head, self.stream, self.on_bytes = head, stream, on_bytes

    def read(self, size: int = -1) -> bytes:
        if self.head:
            data, self.head = (
                (self.head, b"") if size < 0 or size >= len(self.head) else (self.head[:size], self.head[size:])
            )
            return data
        data = self.stream.read(size)
        if self.on_bytes is not None and data:
            self.on_bytes(len(data))
        return data


WHOLE_FILE_BYTES = 32 << 20  # a pretty-printed JSON object up to this size is parsed in one call


def read_items(
    stream: IO[bytes],
    *,
    on_bytes: Callable[[int], None] | None = None,
    chunk_size: int = 1 << 20,
    size: int | None = None,
) -> Iterator[ReadItem]:
    """`size`: the stream's length when known (a file, an archive member). A pretty-printed JSON
    object (a mini-swe-agent trajectory) of at most WHOLE_FILE_BYTES is then read whole and parsed
    by one call of the JSON parser, much faster than the streaming decoder; anything that call
    does not read as one object goes the streaming way, with the same items and errors."""
    first = b""
    # the first line that is not blank decides the format
    while True:
        line = stream.readline()
        if on_bytes is not None and line:
            on_bytes(len(line))
        first += line
        if not line or line.strip(b" \t\r\n\xef\xbb\xbf"):
            break
    start_line = first.count(b"\n") - (1 if first.endswith(b"\n") else 0) + 1
    text = first.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text:
        return
    if not text.startswith(b"["):
        try:
            first_item = ReadItem(start_line, safe_json.parse(text, check_values=False))
        except safe_json.JsonRefused as exc:
            # a broken first line of JSON Lines still looks like one line: `{` … `}`
            stripped = text.strip()
            one_line = stripped.startswith(b"{") and stripped.endswith(b"}")
            first_item = ReadItem(start_line, error=exc.message) if one_line else None
        if first_item is not None:
            yield first_item
            yield from _json_lines(stream, start_line + 1, on_bytes)
            return
        if size is not None and size <= WHOLE_FILE_BYTES and text.startswith(b"{"):
            rest = stream.read()
            if on_bytes is not None and rest:
                on_bytes(len(rest))
            data = text + rest
            try:
                whole = safe_json.parse(data, check_values=False)
            except safe_json.JsonRefused:
                whole = None
            if isinstance(whole, dict):
                yield ReadItem(start_line, whole, texts_checked=safe_json.texts_storable(data))
                return
            first, stream, on_bytes = first + rest, io.BytesIO(b""), None
    for line_number, value, error in _numbered_json_items(
        _Prepended(first, stream, on_bytes), chunk_size=chunk_size, on_bytes=None
    ):
        if error:
            yield ReadItem(line_number, error=error, fatal=True)
            return
        yield ReadItem(line_number, value)


def _json_lines(stream: IO[bytes], number: int, on_bytes: Callable[[int], None] | None) -> Iterator[ReadItem]:
    for raw in stream:
        if on_bytes is not None:
            on_bytes(len(raw))
        if raw.strip():
            try:
                yield ReadItem(number, safe_json.parse(raw, check_values=False))
            except safe_json.JsonRefused as exc:
                yield ReadItem(number, error=exc.message)
        number += 1


def iter_json_items(
    stream: IO[bytes], *, chunk_size: int = 1 << 20, on_bytes: Callable[[int], None] | None = None
) -> Iterator[Any]:
    """Yields the items of a JSON list, of JSON Lines, or a single JSON object, reading `stream` in
    chunks: memory holds one chunk plus the item being decoded, whatever the file's size.

    Raises ValueError naming the item index and its line on malformed input."""
    for index, (line, value, error) in enumerate(
        _numbered_json_items(stream, chunk_size=chunk_size, on_bytes=on_bytes)
    ):
        if error:
            raise ValueError(f"item {index} (line {line}): {error}")
        yield value


def _numbered_json_items(
    stream, *, chunk_size: int, on_bytes: Callable[[int], None] | None
) -> Iterator[tuple[int, Any, str]]:
    """(line, value, "") per item, or (line, None, why) once for the item that cannot be read."""
    decoder = json.JSONDecoder()
    text_decoder = codecs.getincrementaldecoder("utf-8-sig")()
    buffer = ""
    eof = False
    in_list: bool | None = None
    index = 0
    lines_before = 0  # newlines in the text already dropped from the buffer

    unreadable: _Unreadable | None = None  # met after the text still in the buffer

    def more() -> bool:
        nonlocal buffer, eof, unreadable
        if unreadable is not None:
            raise unreadable
        if eof:
            return False
        chunk = stream.read(chunk_size)
        if on_bytes is not None and chunk:
            on_bytes(len(chunk))
        try:
            if not chunk:
                eof = True
                buffer += text_decoder.decode(b"", final=True)
                return False
            buffer += text_decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            # exc.object: the bytes the decoder read (a character cut at the file's end is in none of the
            # chunks). What comes before the bad byte is text: its items are read before the error, so
            # where the chunks happen to end never decides what is read.
            valid = exc.object[: exc.start]
            bad_line = lines_before + buffer.count("\n") + valid.count(b"\n") + 1
            unreadable = _Unreadable(bad_line, f"is not UTF-8 (byte 0x{exc.object[exc.start]:02x})")
            if not valid:
                raise unreadable from None
            buffer += valid.decode("utf-8")
        return True

    def drop(upto: int) -> None:
        nonlocal buffer, lines_before
        lines_before += buffer.count("\n", 0, upto)
        buffer = buffer[upto:]

    position = 0
    try:
        while True:
            # skip whitespace and separators
            while True:
                while position < len(buffer) and buffer[position] in " \t\r\n":
                    position += 1
                if position < len(buffer):
                    break
                drop(len(buffer))
                position = 0
                if not more():
                    break
            if position >= len(buffer):
                if in_list:
                    yield lines_before + 1, None, f"the JSON list is not closed (after item {index})"
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
                    if end == len(buffer) and not eof and buffer[position] not in '{["':
                        raise json.JSONDecodeError("maybe truncated", buffer, end)
                    break
                except json.JSONDecodeError as exc:
                    if more():
                        continue
                    yield lines_before + buffer.count("\n", 0, exc.pos) + 1, None, f"invalid JSON: {exc.msg}"
                    return
                except RecursionError:
                    yield lines_before + buffer.count("\n", 0, position) + 1, None, "is nested too deep"
                    return
            yield lines_before + buffer.count("\n", 0, position) + 1, value, ""
            index += 1
            drop(end)
            position = 0
    except _Unreadable as exc:
        yield exc.line, None, exc.reason


class _Unreadable(Exception):
    def __init__(self, line: int, reason: str):
        super().__init__(reason)
        self.line, self.reason = line, reason


SESSION_FILE_SUFFIXES = (".json", ".jsonl", ".ndjson")


def is_archive(path: str) -> bool:
    return path.endswith((".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz"))


# What reading an archive may raise when the file is cut or corrupt (EOFError: a cut gzip stream;
# IsalError: deflate data that does not decode; OSError: a gzip header or trailer that is wrong).
ARCHIVE_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError, zlib.error, isal_zlib.error, tarfile.TarError)
_GZIP_MAGIC = b"\x1f\x8b"


@contextmanager
def _open_archive(path: str) -> Iterator[tarfile.TarFile]:
    """The tar archive at `path`. A gzipped one is gunzipped by ISA-L (isal.igzip): the 33 MB of the
    other repositories' trajectories in 0.035 s of CPU instead of zlib's 0.09 s, in the import
    command's own process, before any worker gets a file. Any other archive is opened as tarfile
    detects it."""
    with open(path, "rb") as raw:
        gzipped = raw.read(2) == _GZIP_MAGIC
    if not gzipped:
        with tarfile.open(path, "r:*") as archive:
            yield archive
        return
    with igzip.open(path, "rb") as stream, tarfile.open(fileobj=stream, mode="r:") as archive:
        yield archive


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
        with _open_archive(path) as archive:
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
