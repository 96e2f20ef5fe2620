"""Reading one rule file as untrusted input: a regular file of bounded size, read once.

A rule file may come from anyone (a shared rules directory, ``CRASHCART_RULES``), so reading it
must not hang (a named pipe blocks a plain ``open`` until a writer appears), read without end
(a link to ``/dev/zero``) or hold more than :data:`MAX_FILE_BYTES`. The text is read once and
its lines indexed once: every error of the file quotes its line from here, so ``rules lint``
stays linear in the number of errors (it used to read the file again for each one).
"""

from __future__ import annotations

import os
import re
import stat
from array import array
from bisect import bisect_right
from itertools import accumulate
from pathlib import Path

#: The largest rule file read (the largest shipped one is under 10 KiB).
MAX_FILE_BYTES = 1 << 20

#: Where YAML breaks lines (PyYAML and libyaml agree): line numbers in marks count these.
_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")
_RARE_BREAK = re.compile("[\r\x85\u2028\u2029]")

#: A quoted line longer than this shows a window around the caret, not the whole line.
EXCERPT_CHARS = 160

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SourceError(Exception):
    """A rule file that cannot be read as text (the message says why, in one line)."""


class SourceText:
    """The text of one rule file with its line starts indexed once."""

    def __init__(self, path: str, text: str) -> None:
        """Keep ``text`` (read from ``path``); its lines are indexed when first asked for."""
        self.path = path
        self.text = text
        self._index: array | None = None

    @property
    def _starts(self) -> array:
        """The offset of each line's start, computed once, on the first error (a file without
        errors never needs it). One machine word per line: a list of ints would take five, and
        a megabyte of empty lines is a million of them."""
        if self._index is None:
            if _RARE_BREAK.search(self.text) is None:  # only \n: split at C speed
                pieces = map(len, self.text.split("\n"))
                self._index = array("q", accumulate(pieces, lambda at, n: at + n + 1, initial=0))
                self._index.pop()  # the offset past the end
            else:
                self._index = array("q", [0])
                self._index.extend(match.end() for match in _BREAK.finditer(self.text))
        return self._index

    def line(self, number: int) -> str | None:
        """Line ``number`` (1-based) without its line break, or None past the end."""
        if not 1 <= number <= len(self._starts):
            return None
        start = self._starts[number - 1]
        found = _BREAK.search(self.text, start)
        return self.text[start : found.start() if found else len(self.text)]

    @property
    def lines(self) -> list[str]:
        """Every line, without line breaks."""
        return _BREAK.split(self.text)

    def position(self, offset: int) -> tuple[int, int]:
        """The 1-based (line, column) of a character offset into the text."""
        index = bisect_right(self._starts, offset) - 1
        return index + 1, offset - self._starts[index] + 1

    def offset(self, line: int, column: int) -> int:
        """The character offset of a 1-based (line, column)."""
        line = min(max(line, 1), len(self._starts))
        return self._starts[line - 1] + column - 1

    def excerpt(self, number: int, column: int) -> tuple[str, int] | None:
        """Line ``number`` as quoted under an error, and the caret's 1-based column in it: a
        line longer than :data:`EXCERPT_CHARS` is cut to a window around the column (marked
        with ``…``), so a megabyte-long line prints a few dozen characters per error."""
        line = self.line(number)
        if line is None:
            return None
        if len(line) <= EXCERPT_CHARS:
            return line, column
        start = max(0, min(column - 1 - EXCERPT_CHARS // 2, len(line) - EXCERPT_CHARS))
        window = line[start : start + EXCERPT_CHARS]
        caret = column - start
        if start > 0:
            window, caret = "…" + window, caret + 1
        if start + EXCERPT_CHARS < len(line):
            window += "…"
        return window, caret


def read_source(path: Path) -> SourceText:
    """Read a rule file: a regular file (links followed) of at most :data:`MAX_FILE_BYTES`, in
    UTF-8. Raises :class:`SourceError` otherwise; never blocks on a pipe or a device."""
    # O_NONBLOCK: opening a named pipe for reading would otherwise wait for a writer.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        raise SourceError(f"cannot read rule file: {error.strerror}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise SourceError(f"cannot read rule file: it is {kind}, not a regular file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:  # read by chunks: the file may grow while we read
            chunk = os.read(descriptor, min(1 << 16, MAX_FILE_BYTES + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as error:
        raise SourceError(f"cannot read rule file: {error.strerror}") from None
    finally:
        os.close(descriptor)
    if size > MAX_FILE_BYTES:
        raise SourceError(
            f"rule file is larger than {MAX_FILE_BYTES // 1024} KiB (the limit of a rule file)"
        )
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as error:
        raise SourceError(
            f"cannot read rule file: not UTF-8 text ({error.reason} at byte {error.start})"
        ) from None
    return SourceText(str(path), text)
