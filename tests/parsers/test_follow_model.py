"""The follower against a random model of writers (tests/parsers/follow_model.py), and the
minimal reproductions of what the model found (issue 18), each as a test of its own.

The model runs a few short seeded sequences here (about 3 s each); benchmarks/follow_soak.py
runs as many as asked. A failure prints the seed and the operations: rerun one sequence with
``CRASHCART_FOLLOW_SEEDS=<seed> pytest tests/parsers/test_follow_model.py -k model``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from follow_model import Model, check, run_sequence
from test_follow import Collector, append, following

from crashcart.parsers.follow import Notice

SEEDS = [int(s) for s in os.environ.get("CRASHCART_FOLLOW_SEEDS", "20251123 20251124 7 8").split()]


@pytest.mark.parametrize("seed", SEEDS)
def test_model(seed: int, tmp_path: Path) -> None:
    """Nothing twice, out of order or mixed; nothing lost that was on disk; every loss said."""
    model, result = run_sequence(seed, 25, tmp_path / "logs")
    summary = {k: v for k, v in vars(result).items() if k != "examples"}
    assert result.ok, (
        f"seed {seed} ({'poll' if seed % 2 == 0 else 'events'}): {summary}\n"
        + "\n".join(result.examples)
        + f"\noperations: {model.operations}"
    )
    assert result.delivered > 0 and result.lines > 0  # the model did write and read


def test_a_truncation_that_ends_a_torn_line_announces_the_lines_after_it(tmp_path) -> None:
    """The start of a line is delivered, then the file is truncated and written again: the
    ``truncated`` notice that ends the torn line is the notice between the lines before and
    after (the model took the torn line for a delivery after that notice, and called every
    line destroyed with it lost silently: the CI failure of seed 20251124)."""
    directory = tmp_path / "logs"
    directory.mkdir()
    model = Model(1, directory, poll=True)
    model.follower.start()
    model.collector.start()
    try:
        model._new_log()
        log = model.logs[0]
        assert log.fd is not None
        line = model._write_lines(log, [400])
        os.write(log.fd, line[:200])
        deadline = time.monotonic() + 10
        while not _delivered(model).endswith(line[:200]) and time.monotonic() < deadline:
            time.sleep(0.01)
        model._truncate_and_write(log)
        model._close(log)
        model._quiet()
    finally:
        model.follower.stop()
        model.collector.finish()
    result = check(model, model.collector.events)
    assert result.notices.get("truncated") == 1
    assert result.ok, result.examples
    assert result.lost_announced >= 1 and result.lost_unannounced == 0


def _delivered(model: Model) -> bytes:
    return b"".join(e.data for e in list(model.collector.events) if not isinstance(e, Notice))


@pytest.fixture
def follow() -> Iterator[Callable[..., Collector]]:
    yield from following(drain_seconds=30.0)


@pytest.mark.parametrize("poll", [True, False], ids=["poll", "events"])
def test_numbered_rotation_reads_the_renamed_file_on_not_again(poll, follow, tmp_path) -> None:
    """``a.log -> a.1.log -> a.2.log`` with every name followed: each byte once (it was read
    again from byte 0 under its new name)."""
    log, one, two = (tmp_path / n for n in ("a.log", "a.1.log", "a.2.log"))
    writer = open(log, "ab", buffering=0)  # noqa: SIM115 - kept open across the rotations
    writer.write(b"first 1\nfirst 2\n")
    c = follow(tmp_path, poll=poll, globs=["*.log"])
    c.wait_data(str(log), b"first 1\nfirst 2\n")
    for generation in (2, 3):
        if one.exists():
            one.rename(two)
        log.rename(one)
        writer.write(b"late %d\n" % (generation - 1))  # the writer has not reopened yet
        writer.close()
        writer = open(log, "ab", buffering=0)  # noqa: SIM115
        writer.write(b"gen %d\n" % generation)
        c.wait(lambda g=generation: b"gen %d\n" % g in c.data(str(log)))
    writer.close()
    c.quiet(0.3)
    everything = b"".join(c.data(str(p)) for p in (log, one, two))
    assert sorted(everything.splitlines()) == sorted(
        [b"first 1", b"first 2", b"late 1", b"gen 2", b"late 2", b"gen 3"]
    )
    assert c.data(str(log)).startswith(b"first 1\nfirst 2\n")


def test_a_truncation_that_regrew_past_the_offset_is_said_and_read_from_0(follow, tmp_path):
    """Truncated and written again past the offset before the next look: said, read from
    byte 0 (it was read on from the old offset: lines skipped silently, a torn line)."""
    log = tmp_path / "train.log"
    log.write_bytes(b"old line %d\n" % 1)
    c = follow(log, poll=True, poll_interval=0.5)
    c.wait_data(str(log), b"old line 1\n")
    new = b"".join(b"new line %d\n" % i for i in range(10))
    with open(log, "r+b") as handle:  # both before the next look, 0.5 s away
        handle.truncate(0)
        handle.write(new)
    c.wait_data(str(log), b"old line 1\n" + new)
    notice = next(e for e in c.events if isinstance(e, Notice) and e.what == "truncated")
    assert "truncated and written again" in notice.detail
    assert c.follower.stats()[str(log)].truncations == 1


def test_a_truncation_rewritten_to_the_same_length_is_said(follow, tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_bytes(b"step 1 loss 9\n")
    c = follow(log, poll=True, poll_interval=0.5)
    c.wait_data(str(log), b"step 1 loss 9\n")
    with open(log, "r+b") as handle:
        handle.truncate(0)
        handle.write(b"step 1 loss 7\n")
    c.wait(lambda: "truncated" in c.notices(str(log)))
    c.wait_data(str(log), b"step 1 loss 9\nstep 1 loss 7\n")


@pytest.mark.parametrize("poll", [True, False], ids=["poll", "events"])
def test_the_new_file_is_read_while_the_old_one_drains(poll, follow, tmp_path) -> None:
    """After a rename rotation the new file is read at once (it waited for the 5 s drain, and
    a truncation inside that window lost its lines)."""
    log = tmp_path / "train.log"
    log.write_bytes(b"before\n")
    c = follow(log, poll=poll)
    c.wait_data(str(log), b"before\n")
    log.rename(tmp_path / "train.log.1")
    log.write_bytes(b"new 1\nnew 2\n")
    c.wait_data(str(log), b"before\nnew 1\nnew 2\n", timeout=10)  # the drain is 30 s
    os.truncate(log, 0)
    append(log, b"after truncation\n")
    c.wait_data(str(log), b"before\nnew 1\nnew 2\nafter truncation\n")
    assert "truncated" in c.notices(str(log))


def test_lines_of_the_old_and_the_new_file_are_never_mixed(follow, tmp_path) -> None:
    """While both are read, each gives whole lines: a partial line of the new file waits."""
    log = tmp_path / "train.log"
    writer = open(log, "ab", buffering=0)  # noqa: SIM115
    writer.write(b"before\n")
    c = follow(log, poll=True)
    c.wait_data(str(log), b"before\n")
    log.rename(tmp_path / "train.log.1")
    append(log, b"new par")
    c.wait(lambda: "rotated" in c.notices(str(log)))
    time.sleep(0.1)
    writer.write(b"late li")
    time.sleep(0.1)
    writer.write(b"ne\n")
    writer.close()
    c.wait_data(str(log), b"before\nlate line\n")
    append(log, b"tial\n")
    c.wait_data(str(log), b"before\nlate line\nnew partial\n")
