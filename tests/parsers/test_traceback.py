"""Traceback blocks: collecting and parsing."""

from __future__ import annotations

import pytest

from crashcart.parsers.traceback import TracebackCollector, is_exception_line, parse_block

SIMPLE = [
    "Traceback (most recent call last):",
    '  File "train.py", line 41, in <module>',
    "    main()",
    '  File "train.py", line 33, in main',
    "    loss.backward()",
    "    ^^^^^^^^^^^^^^^",
    "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
]

CHAINED = [
    "Traceback (most recent call last):",
    '  File "data.py", line 5, in load',
    "    return cache[key]",
    "KeyError: 'shard-7'",
    "",
    "During handling of the above exception, another exception occurred:",
    "",
    "Traceback (most recent call last):",
    '  File "data.py", line 9, in load',
    "    raise FileNotFoundError(key)",
    "FileNotFoundError: shard-7",
]


def test_frames_and_final_exception() -> None:
    parsed = parse_block(SIMPLE)
    assert parsed is not None
    assert parsed.final.type == "RuntimeError"
    assert parsed.final.message.startswith("element 0 of tensors")
    assert [(f.file, f.line, f.func) for f in parsed.frames] == [
        ("train.py", 41, "<module>"),
        ("train.py", 33, "main"),
    ]
    assert parsed.frames[-1].code == "loss.backward()"


def test_chained_exceptions_keep_their_causes() -> None:
    parsed = parse_block(CHAINED)
    assert parsed is not None
    assert parsed.final.qualname == "FileNotFoundError"
    assert [e.type for e in parsed.chain] == ["KeyError"]
    assert parsed.final.while_handling and not parsed.chain[0].while_handling
    direct = [
        line.replace(
            "During handling of the above exception, another exception occurred:",
            "The above exception was the direct cause of the following exception:",
        )
        for line in CHAINED
    ]
    assert not parse_block(direct).final.while_handling  # raise ... from: not a second failure


def test_a_block_indented_by_the_paste_keeps_its_exception_line() -> None:
    # mmdetection#1179: every line but the header shifted four spaces to the right.
    quoted = [
        "Traceback (most recent call last):",
        '      File "tools/train.py", line 86, in main',
        "        datasets = [build_dataset(cfg.data.train)]",
        '      File "/opt/mmdet/utils/registry.py", line 67, in build_from_cfg',
        "        obj_type, registry.name))",
        "    KeyError: 'None is not in the dataset registry'",
    ]
    parsed = parse_block(quoted)
    assert parsed is not None and not parsed.final.cut
    assert parsed.final.type == "KeyError"
    assert parsed.final.message == "'None is not in the dataset registry'"
    assert parsed.frames[-1].code == "obj_type, registry.name))"
    # Python's own indentation is not the paste's: the message continues, the code stays code.
    assert parse_block(SIMPLE).final.message.startswith("element 0 of tensors")


def test_qualified_exception_names() -> None:
    parsed = parse_block([*SIMPLE[:-1], "torch.OutOfMemoryError: CUDA out of memory."])
    assert parsed is not None
    assert (parsed.final.qualname, parsed.final.type) == (
        "torch.OutOfMemoryError",
        "OutOfMemoryError",
    )


def feed_all(lines: list[str]) -> tuple[list[str] | None, list[str]]:
    collector = TracebackCollector()
    collector.start(lines[0])
    for index, line in enumerate(lines[1:], 1):
        block, consumed = collector.feed(line)
        if block is not None:
            return block, lines[index if not consumed else index + 1 :]
    return collector.finish(), []


def test_collector_ends_at_the_next_log_record_and_hands_it_back() -> None:
    block, rest = feed_all([*SIMPLE, "INFO - shutting down", "more"])
    assert block == SIMPLE
    assert rest[0] == "INFO - shutting down"


@pytest.mark.parametrize(
    "record",
    [
        "[W623 16:45:48.055158738 ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has "
        "NOT been destroyed before we destruct ProcessGroupNCCL.",
        "W0623 16:45:48.055000 812 torch/distributed/elastic/multiprocessing/api.py:900] Sending",
        "[E1105 09:12:01.123 ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective timeout",
    ],
)
def test_a_c10d_or_glog_record_is_not_part_of_the_message(record: str) -> None:
    # torch 2.4+ warns at exit after any error; read as the message's next line, its NCCL words
    # made a ZeroDivisionError look like a collective's failure.
    block, rest = feed_all([*SIMPLE, record])
    assert block == SIMPLE
    assert rest[0] == record


def test_collector_keeps_a_chain_together() -> None:
    block, _ = feed_all([*CHAINED, "", "wandb: finished"])
    assert block is not None
    parsed = parse_block(block)
    assert parsed is not None and parsed.chain


def test_collector_keeps_multi_line_messages() -> None:
    lines = [
        *SIMPLE[:-1],
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, unhandled cuda error",
        "ncclUnhandledCudaError: Call to CUDA function failed.",
        "Last error:",
        "Cuda failure 'out of memory'",
    ]
    block, _ = feed_all([*lines, ""])
    parsed = parse_block(block or [])
    assert parsed is not None
    assert parsed.final.message.endswith("Cuda failure 'out of memory'")


def test_is_exception_line() -> None:
    assert is_exception_line("ValueError: bad")
    assert is_exception_line("KeyboardInterrupt")
    assert not is_exception_line("    main()")
    assert not is_exception_line("loss 0.3 step 4: fine")
