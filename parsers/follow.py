"""Follow log files by name, like ``tail -F``, for ``crashcart watch`` and the TUI.

A :class:`Follower` watches files and directories and hands out, in order, the bytes appended to
each followed file (:class:`Data`) and the things a person should be told (:class:`Notice`):
a file opened, truncated, rotated, deleted or re-created, or an error.

How it follows a name
    One reader thread owns every descriptor. Files are known by identity (``st_dev``,
    ``st_ino``), not by name: a file renamed to another followed name (logrotate's ``a.log ->
    a.1.log``) is read on there from its offset, never again from byte 0. For each followed
    name it keeps a short chain of open descriptors: the file now at the name, and files that
    left it (rotation, deletion), which are drained for ``drain_seconds`` more, because a
    writer that has not reopened its log keeps writing to the old descriptor (``tail -F``
    loses those lines). The new file at the name is read at once, beside the ones drained;
    their bytes are reported under the name as whole lines, never mixed (a partial last line
    of one waits until it ends or the other is done). Offsets are kept per descriptor and
    every read is a ``pread`` at that offset, so no byte is read twice or skipped.

Truncation
    A file whose size falls below the offset read so far was truncated (also
    ``copytruncate``). One truncated and written again past the offset before the next look
    is seen too: every read re-reads the ``FINGERPRINT`` bytes before the offset, and if they
    changed, the file was rewritten. Either way reading starts again at byte 0 and a
    ``truncated`` notice says so, with the bytes known to be lost (seen on disk, never read).

Limits (following by name cannot do better; ``tail -F`` neither)
    - A file that lives at a followed name for less than the follower takes to look (about
      ``poll_interval`` polling, or the time to handle an event; ~0.2 s under load) is never
      opened, and bytes a truncation destroys before the first read of a file are not known
      to have existed: neither is told.
    - A rewrite that puts back the very same ``FINGERPRINT`` bytes before the offset is not
      seen; what follows the offset is then delivered as if appended.
    - Bytes written to a renamed or deleted file more than ``drain_seconds`` after it left
      its name are not read.

When it looks
    With inotify (watchdog's native observer), a change event wakes the reader at once; a safety
    tick re-checks every file and re-scans directories each second anyway, because watchdog
    reports a truncation only as a modification and events can be lost (queue overflow). Where
    events cannot be trusted (``poll=True``, an observer that fails to start, such as when the
    inotify watch limit is reached, or a target on a network filesystem, where changes made by
    other machines raise no event) the tick runs every ``poll_interval`` instead.

Bounds (memory stays flat however fast or long a log grows)
    - the output queue holds at most ``QUEUE_ITEMS`` events, each at most ``read_size`` bytes;
      a full queue blocks the reader (back-pressure) instead of dropping bytes;
    - per followed name: a few integers and at most ``MAX_CHAIN`` open descriptors;
    - at most ``MAX_FILES`` names are followed; further ones get one error notice;
    - nothing is decoded and no per-line object is made: bytes are passed through as read
      (invalid UTF-8 and binary too), and lines are only counted.
"""

from __future__ import annotations

import fnmatch
import os
import queue
import stat
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers.api import BaseObserver

DEFAULT_GLOBS = ("*.log", "*.txt", "*.out", "*.err")
QUEUE_ITEMS = 64  # with the default read size: at most 64 MiB waiting for the consumer
MAX_CHAIN = 4  # descriptors per name: the current file and up to three still being drained
MAX_FILES = 1024  # names followed at once; each holds at least one descriptor
SAFETY_TICK = 1.0  # seconds between full re-checks when change events are trusted
READS_PER_PASS = 8  # chunks read from one file before giving the others a turn
FINGERPRINT = 128  # bytes before the offset re-read with every read: a rewrite is seen

# Filesystems where inotify does not see changes made by other machines (or by the host of a VM).
NETWORK_FILESYSTEMS = frozenset(
    {
        "nfs", "nfs4", "cifs", "smb", "smb2", "smb3", "smbfs", "ncpfs", "afs", "9p", "virtiofs",
        "lustre", "gpfs", "beegfs", "ceph", "glusterfs", "vboxsf", "prl_fs", "vmhgfs",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Data:
    """Bytes read from a followed file, in order, never overlapping, under the name followed."""

    path: str
    data: bytes


@dataclass(frozen=True)
class Notice:
    """Something a person should be told about a followed file."""

    path: str
    what: str  # "opened" | "truncated" | "rotated" | "deleted" | "recreated" | "error"
    detail: str
    lost: int = 0  # for "truncated": bytes seen on disk but destroyed before they were read


@dataclass(frozen=True)
class FileStats:
    """What was delivered for one name: bytes, newlines, and how often it started over."""

    bytes: int = 0
    lines: int = 0
    truncations: int = 0
    rotations: int = 0  # the name moved to another file: rotation, or deletion and re-creation


@dataclass(eq=False)
class _Handle:
    """One open file, known by its identity, whatever names it has had."""

    fd: int
    ident: tuple[int, int]  # (st_dev, st_ino)
    offset: int
    owner: _File  # the followed name its bytes are delivered under
    tail: bytes = b""  # the last FINGERPRINT bytes before offset, as they were read
    stamp: tuple[int, int, int] = (-1, -1, -1)  # (size, mtime_ns, ctime_ns) at the last look
    announced: bool = False  # its opening notice is out: its bytes may follow
    left_at: float | None = None  # monotonic time it stopped being the file at the name


@dataclass(eq=False)
class _File:
    """A followed name."""

    path: str  # as reported: the target given, or target/relative for a directory's files
    absolute: str
    # Files delivered under this name: those that left it and are still drained, and last
    # the one at the name. At most MAX_CHAIN.
    chain: list[_Handle] = field(default_factory=list)
    at_name: _Handle | None = None  # the file at the name at the last look
    open_line: _Handle | None = None  # delivered the last bytes, which ended inside a line
    later: list[tuple[Notice, _Handle | None]] = field(default_factory=list)  # told at line end
    opened: bool = False  # a file was ever opened at this name
    gone: bool = False  # the name was seen missing since its last file was opened
    error: str | None = None  # the last error told, so a lasting error is told once
    bytes: int = 0
    lines: int = 0
    truncations: int = 0
    rotations: int = 0


def filesystem_type(path: str | Path) -> str | None:
    """The type of the filesystem holding ``path`` (Linux ``/proc/self/mountinfo``), if known."""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as mounts:
            lines = mounts.readlines()
    except OSError:
        return None
    real = os.path.realpath(path)
    best, best_type = "", None
    for line in lines:
        before, _, after = line.partition(" - ")
        fields = before.split()
        if len(fields) < 5 or not after:
            continue
        # Mount points escape spaces and other odd characters as octal (\040).
        mount = fields[4].encode().decode("unicode_escape")
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= len(best):
            best, best_type = mount, after.split()[0]
    return best_type


def _is_network(path: str | Path) -> bool:
    fstype = filesystem_type(path) or ""
    return fstype in NETWORK_FILESYSTEMS or fstype.startswith("fuse.")  # sshfs, s3fs, gcsfuse...


def _under(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip(os.sep) + os.sep)


class Follower:
    """Follow files and directories by name; see the module docstring for how and what it costs.

    ``targets`` are files and/or directories (a directory: every file under it whose name
    matches ``globs``, now and later). A file target need not exist yet. ``poll=None`` uses
    change events where they work, else polling every ``poll_interval`` seconds; after
    :meth:`start`, ``mode`` ("events" or "polling") and ``mode_reason`` say which and why.
    ``from_start`` reads files present at :meth:`start` from their first byte (``tail -n +1
    -F``); otherwise from their end. Files that appear later are always read from the start.
    """

    def __init__(
        self,
        targets: Sequence[str | Path],
        *,
        globs: Sequence[str] = DEFAULT_GLOBS,
        poll: bool | None = None,
        poll_interval: float = 0.2,
        from_start: bool = True,
        drain_seconds: float = 5.0,
        read_size: int = 1 << 20,
    ) -> None:
        self._targets = [str(t) for t in targets]
        self._globs = tuple(globs)
        self._poll = poll
        self._poll_interval = poll_interval
        self._from_start = from_start
        self._drain = drain_seconds
        self._read_size = read_size
        self._queue: queue.Queue[Data | Notice] = queue.Queue(maxsize=QUEUE_ITEMS)
        self._files: dict[str, _File] = {}  # by absolute path; only the reader thread adds
        self._dirs: dict[str, str] = {}  # absolute directory -> the target as given
        self._held: dict[tuple[int, int], _Handle] = {}  # every open file, by identity
        self._lock = threading.Lock()  # guards _files, the counters and _pending
        self._wake = threading.Event()
        self._pending: set[str] = set()  # absolute paths that events mentioned
        self._rescan = False
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._observer: BaseObserver | None = None
        self._too_many_told = False
        self.mode = "polling"
        self.mode_reason = "not started"

    # The public interface.

    def start(self) -> None:
        """Find the files, take the starting offsets, and start following."""
        if self._thread is not None:
            return
        for target in self._targets:
            absolute = os.path.abspath(target)
            if os.path.isdir(absolute):
                self._dirs[absolute] = target
            else:
                self._add(absolute, target)
        # Offsets are taken now, in the caller's thread, so that "from the end" means the end
        # at start(): whatever is written after start() returns is delivered.
        self._scan_dirs()
        now = time.monotonic()
        for file in list(self._files.values()):
            self._follow_name(file, now, initial=True)
        self._start_observer()
        self._thread = threading.Thread(target=self._run, name="crashcart-follow", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop following, join the threads and close every descriptor; safe to call twice."""
        self._stopping.set()
        self._wake.set()
        if self._observer is not None:
            self._observer.stop()
            self._observer.join()
            self._observer = None
        if self._thread is not None:
            self._thread.join()
        for handle in self._held.values():
            os.close(handle.fd)
        self._held.clear()
        for file in self._files.values():
            file.chain.clear()
            file.at_name = file.open_line = None

    def get(self, timeout: float | None = None) -> Data | Notice | None:
        """The next event, or None when none comes within ``timeout`` seconds."""
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def __iter__(self) -> Iterator[Data | Notice]:
        """Events as they come, until :meth:`stop` is called and the queue is empty."""
        while True:
            item = self.get(timeout=0.1)
            if item is not None:
                yield item
            elif self._stopping.is_set():
                return

    def stats(self) -> dict[str, FileStats]:
        """Per name: the bytes and lines delivered, and the truncations and rotations seen."""
        with self._lock:
            return {
                f.path: FileStats(f.bytes, f.lines, f.truncations, f.rotations)
                for f in self._files.values()
            }

    def __enter__(self) -> Follower:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    # Choosing how to be woken.

    def _start_observer(self) -> None:
        if self._poll:
            self.mode, self.mode_reason = "polling", "polling was asked for"
            return
        from watchdog.observers import Observer
        from watchdog.observers.polling import PollingObserver

        if Observer is PollingObserver:
            # Watchdog's own fallback would poll too; our tick does the same with less work.
            self.mode, self.mode_reason = "polling", "no native file events on this platform"
            return
        parents = {os.path.dirname(f.absolute) for f in self._files.values()}
        network = [p for p in [*self._dirs, *parents] if _is_network(p)]
        if network and self._poll is None:
            fstype = filesystem_type(network[0])
            self.mode = "polling"
            self.mode_reason = f"{network[0]} is on a network filesystem ({fstype})"
            return
        handler = _Wake(self)
        observer = Observer()
        try:
            for directory in self._dirs:
                observer.schedule(handler, directory, recursive=True)
            # A file is watched through its directory, so that a new file at its name is seen.
            for parent in parents - set(self._dirs):
                if os.path.isdir(parent):
                    observer.schedule(handler, parent, recursive=False)
            observer.start()
        except OSError as error:  # e.g. the inotify watch or instance limit is reached
            observer.stop()
            self.mode = "polling"
            self.mode_reason = f"file events unavailable ({error.strerror or error})"
            return
        self._observer = observer
        self.mode, self.mode_reason = "events", f"{type(observer).__name__} events"

    def _notify(self, paths: Sequence[str], rescan: bool) -> None:
        """Called from the observer's thread: note what changed and wake the reader."""
        with self._lock:
            self._pending.update(paths)
            self._rescan = self._rescan or rescan
        self._wake.set()

    # The reader thread.

    def _run(self) -> None:
        last_full = float("-inf")
        tick = 0.0
        more: set[str] = set()  # files that had more to read than one pass takes
        while not self._stopping.is_set():
            self._wake.clear()  # before looking, so that an event arriving meanwhile is kept
            with self._lock:
                pending, self._pending = self._pending, set()
                rescan, self._rescan = self._rescan, False
            try:
                if time.monotonic() - last_full >= tick:
                    last_full = time.monotonic()
                    self._scan_dirs()
                    more = self._check_all(list(self._files))
                else:
                    if rescan:
                        self._scan_dirs()
                    for path in pending - self._files.keys():
                        if self._wanted(path):
                            self._add(path, self._display(path))
                    more = self._check_all([p for p in pending | more if p in self._files])
            except Exception as error:  # never let the thread die: say so and go on
                self._tell_error(None, f"follower error: {error!r}")
                more = set()
            # A file being drained raises no event at its name: look at it often.
            draining = any(h.left_at is not None for h in self._held.values())
            tick = self._poll_interval if self.mode == "polling" or draining else SAFETY_TICK
            if not more:
                self._wake.wait(max(0.0, tick - (time.monotonic() - last_full)))

    def _check_all(self, paths: Sequence[str]) -> set[str]:
        """Check the files; return those with more to read right away."""
        more = set()
        for path in paths:
            if self._stopping.is_set():
                break
            file = self._files[path]
            try:
                if self._check(file):
                    more.add(path)
            except OSError as error:
                self._tell_error(file, f"cannot read {file.path}: {error.strerror or error}")
        return more

    def _check(self, file: _File) -> bool:
        """Follow the name, then read every file delivered under it; True when more waits.

        The file now at the name is read at once, while the ones that left it are still
        drained: a rotation delays nothing.
        """
        now = time.monotonic()
        self._follow_name(file, now)
        more = False
        for handle in list(file.chain):
            if handle.owner is not file:
                continue  # renamed to another followed name meanwhile, which reads it on
            if self._read(file, handle):
                more = True
            elif handle.left_at is not None and now - handle.left_at >= self._drain:
                # Drained for long enough: whatever is left goes out now, then it is closed.
                self._read(file, handle, limit=None, final=True)
                self._release(handle, now)
                more = True  # a partial line the others held back may go out now
        file.error = None
        return more

    def _follow_name(self, file: _File, now: float, initial: bool = False) -> None:
        """Compare the name with the file held for it: deleted, replaced, renamed here."""
        current = file.at_name
        try:
            st = os.stat(file.absolute)
        except FileNotFoundError:
            st = None
        if st is None or not stat.S_ISREG(st.st_mode):
            if current is not None:
                self._leave(file, current, now, missing=True)
            return
        ident = (st.st_dev, st.st_ino)
        if current is not None and current.ident == ident:
            return
        held = self._held.get(ident)
        if held is not None and held.owner is not file and not self._may_move(held):
            return
        if current is not None:
            self._leave(file, current, now, missing=False)
        if held is None:
            self._open(file, initial)
        elif held.owner is file:  # renamed away and back while it was drained
            held.left_at, file.at_name = None, held
        else:
            self._move(held, file)

    def _may_move(self, handle: _Handle) -> bool:
        """Whether a held file now at another followed name may be read on under that name.

        Not while its old name still shows it (a second link to one file is read once, under
        the name that found it first), nor while its last bytes end inside a line (the rest of
        the line goes where its start went).
        """
        old = handle.owner
        if old.open_line is handle:
            return False
        if old.at_name is handle:
            try:
                st = os.stat(old.absolute)
            except OSError:
                st = None
            if st is not None and (st.st_dev, st.st_ino) == handle.ident:
                return False
            old.at_name = None
        return True

    def _move(self, handle: _Handle, file: _File) -> None:
        """Read on, under ``file``, a held file renamed to it (``a.log -> a.1.log``).

        Its bytes are never delivered twice: reading goes on from its offset.
        """
        old = handle.owner
        old.chain.remove(handle)
        handle.owner, handle.left_at, handle.announced = file, None, False
        detail = (
            f"{file.path} is now the file that was {old.path}; reading on from byte "
            f"{handle.offset} (its bytes before that were delivered under {old.path})"
        )
        self._attach(file, handle, "rotated" if file.opened else "opened", detail)

    def _open(self, file: _File, initial: bool = False) -> None:
        """Open the file now at the name; the ones that left it go on being drained."""
        try:
            fd = os.open(file.absolute, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return
        except OSError as error:
            self._tell_error(file, f"cannot open {file.path}: {error.strerror or error}")
            return
        st = os.fstat(fd)
        ident = (st.st_dev, st.st_ino)
        if not stat.S_ISREG(st.st_mode) or ident in self._held:
            os.close(fd)  # replaced again since the stat: the next look sees what is there
            return
        offset = st.st_size if initial and not self._from_start else 0
        handle = _Handle(fd, ident, offset, file)
        if offset:
            # What was skipped is still checked: a rewrite of it is a truncation.
            start = max(0, offset - FINGERPRINT)
            handle.tail = os.pread(fd, offset - start, start)
        self._held[ident] = handle
        if not file.opened:
            how, detail = "opened", f"following {file.path} from byte {offset}"
        elif file.gone:
            how, detail = "recreated", f"{file.path} was created again; reading it from the start"
        else:
            how = "rotated"
            detail = f"{file.path} is a new file (rotated); reading it from the start"
        self._attach(file, handle, how, detail)

    def _attach(self, file: _File, handle: _Handle, how: str, detail: str) -> None:
        """Make ``handle`` the file at the name, and say so before any of its bytes."""
        if file.opened:
            with self._lock:
                file.rotations += 1
        file.opened, file.gone = True, False
        file.chain.append(handle)
        file.at_name = handle
        self._tell(file, Notice(file.path, how, detail), handle)
        # Bounded: when rotations pile up faster than the drain window, finish the oldest now.
        while len(file.chain) > MAX_CHAIN:
            oldest = file.chain[0]
            self._read(file, oldest, limit=None, final=True)
            self._release(oldest, time.monotonic(), rescan=False)

    def _leave(self, file: _File, handle: _Handle, now: float, missing: bool) -> None:
        """The file left the name: read what it holds, then drain it for a while."""
        self._read(file, handle, limit=None)  # what it held comes before the notice
        handle.left_at = now
        file.at_name = None
        # Still linked somewhere: renamed away, the first half of a rotation, which is told
        # when the new file appears. Otherwise it was deleted.
        if missing and os.fstat(handle.fd).st_nlink == 0:
            file.gone = True
            self._tell(file, Notice(file.path, "deleted", self._leaving("was deleted")))

    def _read(
        self, file: _File, handle: _Handle, limit: int | None = READS_PER_PASS, final: bool = False
    ) -> bool:
        """Deliver what the file holds past its offset; True when more is waiting now.

        Lines are never mixed: while another file is delivered under the same name (a
        rotated file being drained beside its successor), each delivers whole lines only,
        and a file whose last bytes ended inside a line keeps the name until that line
        ends. ``final``: deliver everything now, the file is being closed.
        """
        if not handle.announced or (file.open_line not in (None, handle) and not final):
            return False
        st = os.fstat(handle.fd)
        size = st.st_size
        stamp = (size, st.st_mtime_ns, st.st_ctime_ns)
        previous, handle.stamp = handle.stamp, stamp
        seen = previous[0]
        if size < handle.offset:
            self._truncated(file, handle, f"it shrank from {handle.offset} to {size} bytes", seen)
        elif size == handle.offset and handle.tail and stamp != previous:
            # Changed without growing: truncated and written again to the same length?
            start = handle.offset - len(handle.tail)
            if os.pread(handle.fd, len(handle.tail), start) != handle.tail:
                self._truncated(file, handle, self._rewritten(handle, size), seen)
        shared = any(h is not handle and h.announced for h in file.chain)
        reads = 0
        while handle.offset < size and (limit is None or reads < limit):
            keep = len(handle.tail)
            want = min(self._read_size, size - handle.offset)
            # The bytes before the offset come with every read: if they are not what was read
            # there before, the file was truncated and has grown past the offset again.
            data = os.pread(handle.fd, keep + want, handle.offset - keep)
            if data[:keep] != handle.tail:
                self._truncated(file, handle, self._rewritten(handle, size), seen)
                size = os.fstat(handle.fd).st_size
                continue
            chunk = data[keep:]
            if not chunk:
                return False  # truncated since fstat: the next look says so
            if shared and not final:
                end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1
                if end:
                    chunk = chunk[:end]
                elif file.open_line is not handle and len(chunk) < self._read_size:
                    return False  # a partial line waits for its end, or for the other to finish
            if not self._emit(Data(file.path, chunk), file):
                return False  # stopping
            handle.offset += len(chunk)
            handle.tail = (handle.tail + chunk[-FINGERPRINT:])[-FINGERPRINT:]
            if chunk[-1:] in (b"\n", b"\r"):
                self._line_ended(file)
            else:
                file.open_line = handle
            reads += 1
            if len(chunk) < want:
                return False  # a partial line held back
        return handle.offset < size

    def _rewritten(self, handle: _Handle, size: int) -> str:
        return (
            f"the bytes before byte {handle.offset} changed: it was truncated and written "
            f"again ({size} bytes now)"
        )

    def _truncated(self, file: _File, handle: _Handle, how: str, seen: int) -> None:
        """Start the file over from byte 0, and say what was lost."""
        lost = max(0, seen - handle.offset)
        if lost:
            loss = f"{lost} bytes seen past byte {handle.offset} were never read and are lost"
        else:
            loss = f"whatever was written past byte {handle.offset} before it was lost"
        with self._lock:
            file.truncations += 1
        handle.offset, handle.tail = 0, b""
        detail = f"{file.path} was truncated: {how}; {loss}; reading it from the start"
        notice = Notice(file.path, "truncated", detail, lost)
        if file.open_line is handle:
            file.open_line = None  # the notice ends the torn line
        if file.open_line is None:
            self._emit(notice)
            self._line_ended(file)
        else:
            file.later.append((notice, None))

    def _line_ended(self, file: _File) -> None:
        """The name's last delivered byte ends a line: tell what waited for that."""
        file.open_line = None
        while file.later and file.open_line is None:
            notice, handle = file.later.pop(0)
            self._emit(notice)
            if handle is not None:
                handle.announced = True

    def _release(self, handle: _Handle, now: float, rescan: bool = True) -> None:
        """Close a drained file, unless it was renamed to a name we also follow."""
        if rescan and self._dirs:
            # Its new name may not have been looked at yet: reading it there from byte 0
            # would deliver its bytes twice.
            for new in self._scan_dirs():
                self._follow_name(new, now)
            if handle.owner.at_name is handle or handle not in handle.owner.chain:
                return
        file = handle.owner
        file.chain.remove(handle)
        del self._held[handle.ident]
        if file.at_name is handle:
            file.at_name = None
        if file.open_line is handle:
            self._line_ended(file)
        os.close(handle.fd)

    def _emit(self, item: Data | Notice, file: _File | None = None) -> bool:
        """Queue an event, waiting while the queue is full; False when stopped meanwhile."""
        while not self._stopping.is_set():
            try:
                self._queue.put(item, timeout=0.1)
            except queue.Full:
                continue
            if file is not None and isinstance(item, Data):
                with self._lock:
                    file.bytes += len(item.data)
                    file.lines += item.data.count(b"\n")
            return True
        return False

    def _tell(self, file: _File, notice: Notice, handle: _Handle | None = None) -> None:
        """Tell a notice now, or when the line being delivered under the name ends."""
        file.later.append((notice, handle))
        if file.open_line is None:
            self._line_ended(file)

    def _leaving(self, what: str) -> str:
        if self._drain <= 0:
            return f"the file {what}"
        return f"the file {what}; still reading what is written to it for {self._drain:g} s"

    def _tell_error(self, file: _File | None, detail: str) -> None:
        if file is not None:
            if file.error == detail:
                return
            file.error = detail
        self._emit(Notice(file.path if file else "", "error", detail))

    # Which files to follow.

    def _scan_dirs(self) -> list[_File]:
        """Add the directories' new files that match; return them."""
        added = []
        for directory in self._dirs:
            for root, _dirs, names in os.walk(directory):
                for name in names:
                    path = os.path.join(root, name)
                    if path not in self._files and self._wanted(path):
                        file = self._add(path, self._display(path))
                        if file is not None:
                            added.append(file)
        return added

    def _wanted(self, absolute: str) -> bool:
        name = os.path.basename(absolute)
        if not any(fnmatch.fnmatchcase(name, glob) for glob in self._globs):
            return False
        if not any(_under(absolute, d) for d in self._dirs):
            return False
        try:
            st = os.stat(absolute)
        except OSError:
            return False
        # A file renamed here from a followed name (run.log -> run.1.log) is followed here
        # too: it is known by its identity and read on from its offset, never twice.
        return stat.S_ISREG(st.st_mode)

    def _display(self, absolute: str) -> str:
        for directory, target in self._dirs.items():
            if _under(absolute, directory):
                return os.path.join(target, os.path.relpath(absolute, directory))
        return absolute

    def _add(self, absolute: str, display: str) -> _File | None:
        if len(self._files) >= MAX_FILES:
            if not self._too_many_told:
                self._too_many_told = True
                detail = f"not following {display}: already following {MAX_FILES} files"
                self._emit(Notice(display, "error", detail))
            return None
        file = _File(display, absolute)
        with self._lock:
            self._files[absolute] = file
        return file


class _Wake(FileSystemEventHandler):
    """Watchdog event handler: an event only wakes the reader thread, which does all reading."""

    def __init__(self, follower: Follower) -> None:
        self._follower = follower

    def dispatch(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return  # our own opens of the files would wake us for nothing
        paths = [os.fsdecode(p) for p in (event.src_path, event.dest_path) if p]
        self._follower._notify(paths, rescan=event.is_directory)
