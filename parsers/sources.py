"""Where log bytes come from: a file (plain or gzip), standard input, or a run directory.

A directory is one run: every log file in it (``*.log *.txt *.out *.err``, gzipped or not) is a
source, and a rank found in a file's name (``rank3.log``, ``worker_3.out``, ``node0-rank12.txt``)
becomes the default rank of its lines.
"""

from __future__ import annotations

import gzip
import os
import re
import sys
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .lazy import lazy_compile

CHUNK_BYTES = 1 << 20
LOG_GLOBS = ("*.log", "*.txt", "*.out", "*.err")
_GZIP_MAGIC = b"\x1f\x8b"
# At most 7 digits: a longer number in a file name is no rank (nor something int() accepts).
_RANK_IN_NAME = lazy_compile(r"(?:rank|worker|proc|default)[_\-.]?(\d{1,7})(?!\d)", re.IGNORECASE)


class InputError(Exception):
    """A path the user gave cannot be read; the CLI prints it as one line and exits 2."""


@dataclass(frozen=True)
class Source:
    """A named stream of log bytes."""

    name: str
    path: Path | None = None
    default_rank: int | None = None

    def open(self) -> BinaryIO:
        """Open for reading bytes, transparently decompressing gzip."""
        if self.path is None:
            return sys.stdin.buffer
        try:
            handle = open(self.path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
        except OSError as error:
            raise InputError(f"cannot read {self.name}: {error.strerror or error}") from None
        if handle.peek(2)[:2] == _GZIP_MAGIC:
            return gzip.GzipFile(fileobj=handle, mode="rb")  # type: ignore[return-value]
        return handle

    def chunks(self, size: int = CHUNK_BYTES) -> Iterator[bytes]:
        """Yield the source's bytes in chunks of about ``size`` bytes."""
        handle = self.open()
        try:
            while True:
                try:
                    chunk = handle.read(size)
                except (OSError, EOFError, zlib.error) as error:
                    # zlib.error: a gzip file with a corrupt block (gzip raises OSError for a
                    # bad header or checksum, EOFError for a cut file).
                    raise InputError(f"cannot read {self.name}: {error}") from None
                if not chunk:
                    return
                yield chunk
        finally:
            if handle is not sys.stdin.buffer:
                handle.close()


def rank_from_name(name: str) -> int | None:
    """The rank a per-rank log file's name announces, if any."""
    match = _RANK_IN_NAME.search(Path(name).stem)
    return int(match.group(1)) if match else None


def is_log_file(path: Path) -> bool:
    """Whether a file in a run directory is one of its logs."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return any(Path(name).match(pattern) for pattern in LOG_GLOBS)


def resolve(arg: str) -> list[Source]:
    """Turn one command-line argument into its sources, or raise :class:`InputError`."""
    if arg == "-":
        return [Source("<stdin>")]
    path = Path(arg)
    if not path.exists():
        raise InputError(f"no such file or directory: {arg}")
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and is_log_file(p))
        if not files:
            patterns = " ".join(LOG_GLOBS)
            raise InputError(f"no log files ({patterns}, optionally .gz) in directory {arg}")
        return [Source(str(p), p, rank_from_name(p.name)) for p in files]
    if not os.access(path, os.R_OK):
        raise InputError(f"cannot read {arg}: permission denied")
    return [Source(arg, path, rank_from_name(path.name))]
