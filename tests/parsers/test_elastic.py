"""The elastic grammars on torchrun's failure summary and its one-line reports."""

from __future__ import annotations

import hyperscan
import pytest
import re2

from crashcart.parsers import elastic

BLOCK = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2024-01-01_12:00:01
  host      : node1
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 124)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-01-01_12:00:00
  host      : node1
  rank      : 3 (local_rank: 3)
  exitcode  : -9 (pid: 12345)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 12345
============================================================"""

SINGLE = """\
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2023-06-01_10:20:30
  host      : gpu-7.cluster
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 88)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================"""

ONE_LINERS = [
    (
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0"
        " (pid: 2405) of binary: /usr/bin/python3",
        "process_exit",
        {"exitcode": -9, "local_rank": 0, "pid": 2405, "signal": 9, "signal_name": "SIGKILL"},
    ),
    # torch 2.x logging format; https://github.com/NVIDIA/nccl/issues/1657
    (
        "E0323 21:57:08.583000 23 torch/distributed/elastic/multiprocessing/api.py:869] failed"
        " (exitcode: 1) local_rank: 0 (pid: 88) of binary: /opt/venv/bin/python3",
        "process_exit",
        {"exitcode": 1, "local_rank": 0, "pid": 88},
    ),
    (
        "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 2406 closing signal"
        " SIGTERM",
        "process_terminated",
        {"pid": 2406, "signal_name": "SIGTERM"},
    ),
    (
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 12345 got signal:"
        " 15",
        "process_exit",
        {"pid": 12345, "signal": 15, "signal_name": "SIGTERM"},
    ),
]

NEGATIVES = [
    "loss: 0.3",
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group",
    "[0]:",
    "exitcode  : 0",
]


def test_block_entries() -> None:
    drafts = elastic.parse_block(BLOCK.splitlines())
    assert [d.kind for d in drafts] == ["process_exit", "process_exit"]
    other, root = drafts
    assert other.fields == {
        "time": "2024-01-01_12:00:01",
        "host": "node1",
        "rank": 1,
        "local_rank": 1,
        "exitcode": 1,
        "pid": 124,
        "root_cause": False,
    }
    assert root.fields == {
        "time": "2024-01-01_12:00:00",
        "host": "node1",
        "rank": 3,
        "local_rank": 3,
        "exitcode": -9,
        "pid": 12345,
        "signal": 9,
        "signal_name": "SIGKILL",
        "root_cause": True,
    }


def test_block_with_no_other_failures() -> None:
    drafts = elastic.parse_block(SINGLE.splitlines())
    assert len(drafts) == 1
    assert drafts[0].fields["root_cause"] is True
    assert drafts[0].fields["host"] == "gpu-7.cluster"
    assert "signal" not in drafts[0].fields


def test_parse_accepts_a_joined_block() -> None:
    assert elastic.parse(BLOCK) == elastic.parse_block(BLOCK.splitlines())


def test_block_passes_prefilter() -> None:
    assert any(_any_trigger(line) for line in BLOCK.splitlines())
    assert re2.compile(elastic.BLOCK_START).search("=" * 60)


@pytest.mark.parametrize("text, kind, expected", ONE_LINERS)
def test_one_liner(text: str, kind: str, expected: dict) -> None:
    drafts = elastic.parse(text)
    assert [d.kind for d in drafts] == [kind]
    assert drafts[0].fields == expected


def _any_trigger(text: str) -> bool:
    return any(re2.compile(p).search(text) for p in elastic.TRIGGERS.values())


@pytest.mark.parametrize("text, kind, expected", ONE_LINERS)
def test_one_liner_passes_prefilter(text: str, kind: str, expected: dict) -> None:
    assert _any_trigger(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert elastic.parse(text) == []
    assert elastic.parse_block([text]) == []


@pytest.mark.parametrize("name", sorted(elastic.TRIGGERS))
def test_trigger_compiles_in_re2_and_hyperscan(name: str) -> None:
    pattern = elastic.TRIGGERS[name]
    assert re2.compile(pattern).search("") is None
    hyperscan.Database().compile(expressions=[pattern.encode()])


@pytest.mark.parametrize("junk", [None, 5, ["[0]:", None, 3], ["Root Cause", "[0]:"] * 5000])
def test_never_raises(junk) -> None:
    assert isinstance(elastic.parse_block(junk), list)
    assert isinstance(elastic.parse(junk), list)
