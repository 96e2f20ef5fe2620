"""A small on-disk cache for what start-up would otherwise build every time.

Two things are cached: the validated rule base (:mod:`crashcart.engine.rulecache`) and the
compiled Hyperscan prefilter databases (:mod:`crashcart.parsers.prefilter`). Each entry is one
file, named by a hash of everything it was built from, under :func:`cache_dir`:
``$CRASHCART_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/crashcart``, else
``~/.cache/crashcart``.

The cache is never needed for a correct answer. An entry is used only when its header names the
same key and its checksum matches its bytes; a missing, stale, corrupt, foreign (another user's
or writable by others) or unreadable entry reads as "not cached", and a directory that cannot be
written means only that the next start builds again. Writes go to a temporary file in the same
directory and are renamed over the entry (``os.replace``), so a reader never sees half a file,
and two processes writing the same entry leave one whole copy.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from pathlib import Path

#: The environment variable that moves the cache (tests, read-only homes, CI caches).
ENV_VAR = "CRASHCART_CACHE_DIR"
_MAGIC = b"crashcart-cache 1\n"
#: Entries of one kind kept at once; older ones are deleted when a new one is written (a rule
#: file edited ten times should not leave ten copies of the rule base behind).
KEEP = 8


def cache_dir() -> Path:
    """Where cache entries live (the directory need not exist)."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "crashcart"


def digest(*parts: bytes | str) -> str:
    """A short hex key for ``parts`` (each length-prefixed, so no two lists collide)."""
    hasher = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        hasher.update(len(data).to_bytes(8, "little"))
        hasher.update(data)
    return hasher.hexdigest()[:32]


def _path(kind: str, key: str) -> Path:
    return cache_dir() / f"{kind}-{key}.bin"


def read(kind: str, key: str) -> bytes | None:
    """The payload stored for (``kind``, ``key``), or None if there is no sound entry."""
    # O_NONBLOCK: a named pipe put where an entry belongs must not hang the start.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        with open(os.open(_path(kind, key), flags), "rb") as handle:
            info = os.fstat(handle.fileno())
            # Another user's file, or one others may write, could hold anything: the rule base is
            # a pickle, and unpickling runs code. Such an entry is not ours to trust.
            owner = os.getuid() if hasattr(os, "getuid") else info.st_uid  # no uids: Windows
            if not stat.S_ISREG(info.st_mode) or info.st_uid != owner or info.st_mode & 0o022:
                return None
            data = handle.read()
    except OSError:
        return None
    header = _MAGIC + key.encode() + b"\n"
    if not data.startswith(header):
        return None
    checksum, payload = data[len(header) : len(header) + 32], data[len(header) + 32 :]
    if len(checksum) != 32 or hashlib.sha256(payload).digest() != checksum:
        return None
    return payload


def write(kind: str, key: str, payload: bytes) -> bool:
    """Store ``payload`` for (``kind``, ``key``) atomically; False if it could not be written
    (a read-only or full disk: the caller goes on without the cache)."""
    import tempfile  # only here: it imports random and shutil, which a cache hit never needs

    directory = cache_dir()
    partial = None
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        descriptor, partial = tempfile.mkstemp(prefix=f".{kind}-", suffix=".tmp", dir=directory)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(_MAGIC + key.encode() + b"\n")
            handle.write(hashlib.sha256(payload).digest())
            handle.write(payload)
        os.replace(partial, _path(kind, key))
    except OSError:
        if partial is not None:
            with contextlib.suppress(OSError):
                os.unlink(partial)
        return False
    _prune(directory, kind, keep=_path(kind, key).name)
    return True


def _prune(directory: Path, kind: str, keep: str) -> None:
    """Delete all but the :data:`KEEP` newest entries of ``kind`` (never ``keep``)."""
    # Another process may prune at the same time, or the directory go away: nothing to do then.
    with contextlib.suppress(OSError):
        entries = [
            entry
            for entry in os.scandir(directory)
            if entry.name.startswith(f"{kind}-") and entry.name.endswith(".bin")
        ]
        if len(entries) <= KEEP:
            return
        entries.sort(key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
        for entry in entries[KEEP:]:
            if entry.name != keep:
                os.unlink(entry.path)
