"""The incremental front half: chunks in, findings out, the same whatever the chunk sizes."""

from __future__ import annotations

import textwrap

import pytest

from crashcart.parsers import extract
from crashcart.parsers.extract import Extractor

LOG = textwrap.dedent(
    """\
    ***** Running training *****
      Instantaneous batch size per device = 16
    {'loss': 2.1, 'learning_rate': 5e-05, 'epoch': 0.1}
    [rank1]: Traceback (most recent call last):
    [rank0]: Traceback (most recent call last):
    [rank1]:   File "train.py", line 9, in <module>
    [rank0]:   File "train.py", line 9, in <module>
    [rank1]:     trainer.evaluate()
    [rank0]:     loss.backward()
    [rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 23.65 GiB of which 1.02 GiB is free.
    [rank0]: RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn
    done
    """
).encode()


def run(data: bytes, chunk: int) -> list[tuple[str, int | None, int]]:
    extractor = Extractor()
    findings = []
    for start in range(0, len(data), chunk):
        findings += extractor.feed("train.log", data[start : start + chunk])
    findings += extractor.finish()
    return [(f.draft.kind, f.rank, f.evidence[-1].lineno) for f in findings]


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_findings_do_not_depend_on_chunk_boundaries(chunk: int) -> None:
    assert run(LOG, chunk) == run(LOG, len(LOG))


def test_interleaved_ranks_give_one_traceback_each() -> None:
    kinds = run(LOG, len(LOG))
    assert ("cuda_oom", 1, 10) in kinds
    assert ("requires_grad_error", 0, 11) in kinds
    assert sum(1 for kind, _, _ in kinds if kind == "exception") == 2


def test_an_open_traceback_is_reported_until_its_block_closes() -> None:
    extractor = Extractor()
    assert not extractor.reading_blocks()
    extractor.feed(
        "t.log", b'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n'
    )
    assert extractor.reading_blocks()
    kinds = [finding.draft.kind for finding in extractor.finish("t.log")]
    assert not extractor.reading_blocks()
    assert kinds  # the cut traceback still became a finding when its block closed


def test_phase_comes_from_the_frames() -> None:
    extractor = Extractor()
    findings = extractor.feed("t.log", LOG) + extractor.finish()
    oom = next(f for f in findings if f.draft.kind == "cuda_oom")
    assert oom.draft.fields["phase"] == "eval"
    assert oom.draft.fields["steps_logged"] == 1


def test_config_echo_is_remembered() -> None:
    extractor = Extractor()
    extractor.feed("t.log", LOG)
    assert extractor.config == {"framework": "hf", "micro_batch": 16}


def test_line_numbers_and_byte_counts() -> None:
    extractor = Extractor()
    extractor.feed("t.log", b"a\nb\nc")  # the last line has no newline yet
    assert extractor.stats()["t.log"].lines == 2
    extractor.finish()
    stats = extractor.stats()["t.log"]
    assert (stats.bytes, stats.lines) == (5, 3)


def test_a_line_longer_than_any_chunk_is_capped_not_held() -> None:
    extractor = Extractor()
    huge = b"RuntimeError: CUDA out of memory. " + b"x" * (3 << 20)
    for start in range(0, len(huge), 1 << 20):
        extractor.feed("t.log", huge[start : start + (1 << 20)])
    findings = extractor.feed("t.log", b"\nnext line\n") + extractor.finish()
    stats = extractor.stats()["t.log"]
    assert stats.truncated_lines == 1 and stats.lines == 2
    oom = [f for f in findings if f.draft.kind == "cuda_oom"]
    assert oom and "truncated" in oom[0].evidence[0].text


def test_prefixed_traceback_lines_are_unwrapped() -> None:
    prefix = "2023-04-29 06:01:12.977 [177/train/578 (pid 28936)] "
    text = "\n".join(
        prefix + line
        for line in [
            "Traceback (most recent call last):",
            '  File "/opt/torch/serialization.py", line 379, in save',
            "    _save(obj, opened_zipfile, pickle_module, pickle_protocol)",
            "OSError: [Errno 28] No space left on device",
        ]
    )
    extractor = Extractor()
    findings = extractor.feed("t.log", text.encode() + b"\n") + extractor.finish()
    os_error = next(f for f in findings if f.draft.kind == "os_error")
    assert os_error.draft.fields["phase"] == "save"


def test_headless_traceback_is_still_a_traceback() -> None:
    text = textwrap.dedent(
        """\
          File "train.py", line 193, in test
            stats = evaluator.evaluate_predictions(results)
        RuntimeError: CUDA out of memory. Tried to allocate 4.18 GiB (GPU 0; 10.92 GiB total capacity; 4.68 GiB already allocated; 2.44 GiB free; 7.85 GiB reserved in total by PyTorch)
        """
    )
    extractor = Extractor()
    findings = extractor.feed("t.log", text.encode()) + extractor.finish()
    oom = next(f for f in findings if f.draft.kind == "cuda_oom")
    assert oom.draft.fields["phase"] == "eval"


def test_closing_the_blocks_of_a_file_not_read_yet_is_a_no_op() -> None:
    """The TUI's timer may ask before the bytes read meanwhile were analysed."""
    assert Extractor().flush_blocks("runs/late/train.log") == []


WARNING = (
    "/opt/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have requires_grad=True"
)
RULES = {"warn": r"None of the inputs have requires_grad", "oom": r"CUDA out of memory"}


def _repeats_then_errors() -> bytes:
    """DeepSpeed step lines (the config trigger: log_dist]) and a warning (a rule pattern)
    every step, long past the point where their consumers have had their fill, then lines
    that need those same patterns along with others: the config echo on an OOM line, the
    warning's rule on a line with the OOM's rule too."""
    lines = []
    for step in range(400):
        lines.append(f"[INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[5e-05]")
        lines.append(WARNING)
        lines.append(f"{{'loss': {2.5 - step / 1000:.4f}, 'epoch': {step / 100:.2f}}}")
    lines += [
        "[INFO] [logging.py:96:log_dist] torch.OutOfMemoryError: CUDA out of memory. Tried to "
        "allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.02 GiB is free.",
        f"{WARNING}; then CUDA out of memory",
        "Traceback (most recent call last):",
        '  File "train.py", line 9, in <module>',
        "    loss.backward()",
        "RuntimeError: element 0 of tensors does not require grad and does not have a grad_fn",
    ]
    return ("\n".join(lines) + "\n").encode()


def _findings(data: bytes, chunk: int) -> tuple[list, Extractor]:
    extractor = Extractor(RULES)
    found = []
    for start in range(0, len(data), chunk):
        found += extractor.feed("t.log", data[start : start + chunk])
    found += extractor.finish() + extractor.conclude()
    keyed = [
        (f.draft.kind, sorted(f.draft.fields.items()), [(e.lineno, e.text) for e in f.evidence])
        for f in found
    ]
    return keyed, extractor


@pytest.mark.parametrize("chunk", [97, 4096, 1 << 20])
def test_a_filled_trigger_left_out_of_the_scan_loses_no_later_fact(
    chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Patterns whose every consumer has had its fill are left out of the prefilters (issue
    15: a million reports per GB only to be dropped); the findings stay exactly the same."""
    data = _repeats_then_errors()
    monkeypatch.setattr(extract, "REPORTS_BEFORE_RECOMPILE", 1 << 60)  # never left out
    kept, full = _findings(data, chunk)
    monkeypatch.setattr(extract, "REPORTS_BEFORE_RECOMPILE", 20)
    left_out, reduced = _findings(data, chunk)
    assert "config:any" in full.scanning() and "warn" in full.scanning()
    assert "config:any" not in reduced.scanning() and "warn" not in reduced.scanning()
    assert "oom" in reduced.scanning() and "cuda_oom:any" in reduced.scanning()
    assert left_out == kept
    last = data.count(b"\n")
    oom = [evidence[-1][0] for kind, _, evidence in left_out if kind == "cuda_oom"]
    assert oom[:1] == [last - 5]
    rule_lines = [(dict(f)["pattern"], ev[0][0]) for kind, f, ev in left_out if kind == "line"]
    assert ("oom", last - 5) in rule_lines and ("oom", last - 4) in rule_lines
    assert sum(1 for pattern, _ in rule_lines if pattern == "warn") == extract.REPEAT_LIMIT
    assert ("requires_grad_error", last) in [(k, ev[-1][0]) for k, _, ev in left_out]
    assert reduced.stats()["t.log"].lines == last


def test_a_subset_of_a_prefilter_reports_as_the_whole_with_those_bits_cleared() -> None:
    whole = Extractor(RULES).prefilter
    data = _repeats_then_errors()
    config = whole.bit("config:any")
    subset = whole.without(config)
    assert subset is whole.without(config)  # built once, shared by every run
    expected = [(s, e, m & ~config) for s, e, m in whole.scan(data) if m & ~config]
    assert subset.scan(data) == expected
    assert whole.without((1 << whole.size) - 1).scan(data) == []
