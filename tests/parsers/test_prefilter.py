"""The combined prefilter, on both engines."""

from __future__ import annotations

import time

import pytest

from crashcart.parsers.prefilter import (
    PatternError,
    Prefilter,
    check_pattern,
    hyperscan,
    without_line_edges,
)

ENGINES = ["re2"] + (["hyperscan"] if hyperscan is not None else [])
PATTERNS = {"oom": r"CUDA out of memory", "nccl": r"NCCL (?:WARN|error)", "loss": r"(?i)loss"}
LOG = (
    b"step 1 Loss 2.0\n"
    b"noise\n"
    b"RuntimeError: CUDA out of memory. loss\n"
    b"node:1:2 [0] NCCL WARN Net failed\n"
    b"last line without newline loss"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_scan_returns_whole_candidate_lines_with_their_patterns(engine: str) -> None:
    prefilter = Prefilter(PATTERNS, engine=engine)
    found = [(LOG[s:e], sorted(prefilter.names(m))) for s, e, m in prefilter.scan(LOG)]
    assert found == [
        (b"step 1 Loss 2.0", ["loss"]),
        (b"RuntimeError: CUDA out of memory. loss", ["loss", "oom"]),
        (b"node:1:2 [0] NCCL WARN Net failed", ["nccl"]),
        (b"last line without newline loss", ["loss"]),
    ]


def test_engines_agree_on_a_real_log() -> None:
    if hyperscan is None:
        pytest.skip("hyperscan has no wheel for this platform")
    with open("rules/examples/cuda_oom/fragmentation.log", "rb") as handle:
        data = handle.read()
    a = Prefilter(PATTERNS, engine="re2").scan(data)
    b = Prefilter(PATTERNS, engine="hyperscan").scan(data)
    assert a == b


def test_backreferences_are_rejected() -> None:
    with pytest.raises(PatternError):
        check_pattern(r"(a)\1")


@pytest.mark.parametrize("engine", ENGINES)
def test_catastrophic_backtracking_pattern_stays_linear(engine: str) -> None:
    # (a+)+$ takes exponential time in a backtracking engine on "aaaa...b".
    prefilter = Prefilter({"evil": r"(a+)+$"}, engine=engine)
    hostile = b"a" * 200_000 + b"b\n"
    started = time.perf_counter()
    prefilter.scan(hostile)
    assert time.perf_counter() - started < 5  # backtracking would not finish this century


@pytest.mark.parametrize("engine", ENGINES)
def test_a_subset_keeps_the_other_patterns_bits(engine: str) -> None:
    prefilter = Prefilter(PATTERNS, engine=engine)
    loss = prefilter.bit("loss")
    subset = prefilter.without(loss)
    assert subset.scanned == ["oom", "nccl"] and subset.pattern_names == prefilter.pattern_names
    found = [(LOG[s:e], sorted(subset.names(m))) for s, e, m in subset.scan(LOG)]
    assert found == [
        (b"RuntimeError: CUDA out of memory. loss", ["oom"]),
        (b"node:1:2 [0] NCCL WARN Net failed", ["nccl"]),
    ]
    assert prefilter.without(0) is prefilter
    assert prefilter.without(prefilter.bit("oom") | prefilter.bit("nccl") | loss).scan(LOG) == []


#: Two rule patterns that Hyperscan 5.4, compiled together as written, lost the line of.
LINE_START_RULES = {
    "omegaconf": r"^\s*full_key: (?P<key>[\w.\[\]-]+)\s*$",
    "yaml": r"^\s*(?P<error>mapping values are not allowed here|found unexpected end of stream)\s*$",
}


@pytest.mark.parametrize("engine", ENGINES)
def test_line_start_patterns_find_lines_after_the_first(engine: str) -> None:
    prefilter = Prefilter(LINE_START_RULES, engine=engine, rare=LINE_START_RULES)
    data = b"Unexpected object type: dict\n full_key: optimizer_params\n"
    found = [(data[s:e], sorted(prefilter.names(m))) for s, e, m in prefilter.scan(data)]
    assert found == [(b" full_key: optimizer_params", ["omegaconf"])]


@pytest.mark.parametrize(
    ("pattern", "relaxed"),
    [
        (r"^\s*full_key: \w+", r"\s*full_key: \w+"),
        (r"(?:^|\d\s+|: |\])Killed", r"(?:|\d\s+|: |\])Killed"),
        (r"[^a]^x", r"[^a]x"),  # a class's own "^" stays
        (r"[]^]a", r"[]^]a"),  # "]" first in a class is a literal
        (r"[^]^]b", r"[^]^]b"),
        (r"\^x", r"\^x"),  # an escaped caret is a character
        # A line's end may follow a paste's closing backtick, which peel() takes off.
        (r"Killed\s*$", r"Killed\s*[`*\s]*$"),
        (r"\$\{\w+\}|[$]x", r"\$\{\w+\}|[$]x"),  # an escaped or a class' dollar stays
    ],
)
def test_without_line_edges_drops_only_anchors(pattern: str, relaxed: str) -> None:
    assert without_line_edges(pattern) == relaxed


def test_the_shipped_rules_prefilter_misses_no_line_of_their_examples() -> None:
    """Every line a rule pattern matches on its own is a candidate of the combined prefilter:
    an engine that loses matches when patterns are combined shows up here, not as a rule that
    goes quiet on some user's log."""
    from pathlib import Path

    import re2

    from crashcart.analyzer import RuleBase

    rulebase = RuleBase.load()
    prefilter = rulebase.rule_patterns.prefilter
    patterns = {pid: re2.compile(p.encode()) for pid, p in rulebase.line_patterns.items()}
    missed = []
    for log in sorted(Path("rules/examples").glob("*/*.log")):
        data = log.read_bytes()
        found = {data[s:e]: set(prefilter.names(m)) for s, e, m in prefilter.scan(data)}
        for line in data.splitlines():
            for pid, regex in patterns.items():
                if regex.search(line) and pid not in found.get(line, set()):
                    missed.append(f"{log}: {pid}: {line[:80]!r}")
    assert missed == []
