"""Hostile rule files (issue 18): none may crash, hang or exhaust memory.

Each case must end as the project's usual rule error: ``file:line:column: error: ...`` from
``rules lint`` and the loader, and exit 2 with that error from ``analyze --rules DIR`` (never a
traceback, an "internal error", a segfault or a hang). The time bounds are generous regression
guards for inputs that took minutes or crashed before, not benchmarks.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from crashcart.analyzer import RuleBase
from crashcart.engine import rules as rules_module
from crashcart.engine.durable import MAX_LINE_COMBINATIONS, MAX_LINES_PER_CONDITION, line_cap
from crashcart.engine.fixes import MAX_SHOWN_CHARS, fill
from crashcart.engine.rules import (
    MAX_CONDITIONS,
    MAX_DEPTH,
    MAX_FIXES,
    MAX_IN_VALUES,
    MAX_PLACEHOLDERS,
    MAX_REGEX_CHARS,
    MAX_TEMPLATE_CHARS,
    RuleError,
    RuleLoadError,
    load_file,
    load_rules,
)
from crashcart.engine.rulesource import MAX_FILE_BYTES
from crashcart.ruletools import lint

try:
    import hyperscan
except ImportError:  # pragma: no cover - x86-64 Linux wheels only
    hyperscan = None

GOOD = """\
id: host_oom.hostile
category: host_oom
title: A rule to break
confidence: 0.99
when:
  all:
    - fact: line
      regex: "HOSTILE (?P<what>\\\\w+)"
summary: The log says {what}.
fixes:
  - title: Fix it
    command: echo fix
"""
LOG = "step 1 loss 2.0\nHOSTILE marker\n"
#: One line of an error as the loader reports it.
ERROR_LINE = re.compile(r"^\S+:\d+:\d+: error: .+$")


def rule_with(**replace: str) -> str:
    """GOOD with each ``key:`` line (and the block under it) replaced by ``key: value``."""
    lines = GOOD.splitlines()
    for key, value in replace.items():
        out, skip_deeper_than, found = [], -1, False
        for line in lines:
            indent = len(line) - len(line.lstrip(" -"))
            if skip_deeper_than >= 0 and indent > skip_deeper_than:
                continue  # a child of the replaced key
            skip_deeper_than = -1
            match = re.match(rf"^(\s*-?\s*){key}:", line)
            if match:
                out.append(f"{match[1]}{key}: {value}")
                skip_deeper_than, found = len(match[1]), True
            else:
                out.append(line)
        assert found, key
        lines = out
    return "\n".join(lines) + "\n"


def load(path: Path) -> list[RuleError]:
    errors: list[RuleError] = []
    load_file(path, errors)
    return errors


def write(tmp_path: Path, text: str, name: str = "hostile.yaml") -> Path:
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(text, encoding="utf-8")
    return path


def crashcart(*args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, int]:
    """Run the CLI in a child; returns the result and the child's peak RSS in MiB."""
    code = (
        "import resource, sys\n"
        "from crashcart.cli import main\n"
        "try:\n    main()\n"
        "finally:\n"
        "    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "    print(f'peak-rss-kib {peak}', file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", "CRASHCART_RULES": ""},
        check=False,
    )
    peak = re.search(r"peak-rss-kib (\d+)", result.stderr)
    return result, int(peak[1]) // 1024 if peak else -1


def assert_rule_error(result: subprocess.CompletedProcess, path: Path, message: str) -> None:
    """Exit 2, the error names the file with line and column, no traceback or internal error."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"{path}:") and ERROR_LINE.match(first), first
    assert message in first, first


# --- nesting -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("a: " + "[" * 30_000 + "]" * 30_000 + "\n", id="flow-30000"),
        pytest.param("a: " + "{b: " * 1_000 + "1" + "}" * 1_000 + "\n", id="flow-map-1000"),
        pytest.param(
            "".join(" " * i + f"k{i}:\n" for i in range(200)) + " " * 200 + "v\n",
            id="block-map-200",
        ),
        pytest.param("- " * 5_000 + "a\n", id="block-seq-5000"),
    ],
)
def test_deep_nesting_is_a_rule_error_quickly(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    started = time.monotonic()
    errors = load(path)
    assert time.monotonic() - started < 1.0
    assert len(errors) == 1
    assert f"nested deeper than {MAX_DEPTH} levels" in errors[0].message
    assert errors[0].mark.line >= 1 and errors[0].mark.column > 1


def test_deep_nesting_does_not_crash_lint(tmp_path: Path) -> None:
    # 30,000 levels segfaulted libyaml's composer (exit 139); 1,000 was a RecursionError.
    path = write(tmp_path, GOOD + "explains: " + "[" * 30_000 + "]" * 30_000 + "\n")
    result, _ = crashcart("rules", "lint", str(path.parent))
    assert_rule_error(result, path, f"nested deeper than {MAX_DEPTH} levels")
    assert f"{path}:13:" in result.stderr


def test_nesting_at_the_limit_still_loads(tmp_path: Path) -> None:
    # The document is level 1 and when/all/condition/where/test take 5 more: an `in` list
    # nested to the limit is the deepest a rule can be; it is refused only for what it holds.
    inner = "[" * (MAX_DEPTH - 6) + "1" + "]" * (MAX_DEPTH - 6)
    text = GOOD.replace(
        '      regex: "HOSTILE', f'      where: {{what: {{in: {inner}}}}}\n      regex: "HOSTILE'
    )
    errors = load(write(tmp_path, text))
    assert [e.message for e in errors] == ["in lists plain values (strings, numbers, true/false)"]


# --- numbers and keys ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("replace", "line"),
    [
        ({"confidence": "9" * 5_000}, 4),
        ({"confidence": "-" + "1" * 19}, 4),
        ({"regex": '"x"\n      count: ' + "1" * 5_000}, 9),
    ],
)
def test_huge_integers_are_rule_errors(tmp_path: Path, replace: dict, line: int) -> None:
    path = write(tmp_path, rule_with(**replace))
    errors = load(path)
    assert len(errors) == 1 and "integer of more than 18 digits" in errors[0].message
    assert (errors[0].mark.line, errors[0].mark.column) > (line - 1, 1)
    assert len(errors[0].render()) < 800  # the 5,000 digits are quoted as an excerpt


@pytest.mark.parametrize(
    ("text", "line", "column"),
    [
        ("? [a]\n: 1\n", 1, 3),
        ("? {a: 1}\n: 1\n", 1, 3),
        (GOOD + "? !!set {a}\n: 1\n", 13, 3),
        (GOOD.replace("summary: The", "? [x, y]\n: z\nsummary: The"), 9, 3),
    ],
)
def test_unhashable_keys_are_rule_errors(tmp_path: Path, text: str, line: int, column: int) -> None:
    errors = load(write(tmp_path, text))
    assert len(errors) == 1
    assert errors[0].message == "invalid YAML: a key must be a plain value, not a list or mapping"
    assert (errors[0].mark.line, errors[0].mark.column) == (line, column)


@pytest.mark.parametrize(
    "value", ["[a, b]", "{a: b}", "7", "null", "true", "!!binary aGk=", "2024-01-01"]
)
def test_a_fact_kind_of_any_type_is_a_rule_error(tmp_path: Path, value: str) -> None:
    errors = load(write(tmp_path, rule_with(fact=value)))
    assert any("unknown fact kind" in e.message for e in errors)
    assert all(ERROR_LINE.match(str(e).replace(": ", ": error: ", 1)) for e in errors)


# Every key of a rule, given a value of every wrong type, is a rule error, never an exception:
# a list where a name belongs used to raise TypeError (unhashable) deep in the checker.
KEY_LINES = [
    "id", "category", "title", "confidence", "when", "all", "fact", "regex", "summary",
    "fixes", "title", "command",
]  # fmt: skip
EXTRA_KEYS = {
    "tier": "specific", "explains": "[nccl]", "probe": "host_memory", "references": "[u]",
    "examples": "{fires: [a.log]}", "where": "{what: x}", "as": "hit", "same": "[rank]",
    "after": "f0", "count": "2", "env": "{A: b}", "set": "{num_workers: 2}", "note": "n",
}  # fmt: skip
WRONG = ["[a, [b]]", "{a: {b: c}}", "17", "-1.5e300", ".inf", ".nan", "null", "true", "''",
         "!!binary aGk=", "!!set {a}", "!!omap [a: 1]", "2024-01-01 10:00:00"]  # fmt: skip


def hostile_variants() -> list[tuple[str, str]]:
    variants = []
    for key in dict.fromkeys(KEY_LINES):
        variants += [(f"{key}={wrong}", rule_with(**{key: wrong})) for wrong in WRONG]
    condition = '    - fact: line\n      regex: "HOSTILE (?P<what>\\\\w+)"\n'
    fix = "  - title: Fix it\n    command: echo fix\n"
    for key in EXTRA_KEYS:
        for wrong in WRONG:
            if key in ("as", "same", "after", "count", "where"):
                text = GOOD.replace(condition, condition + f"      {key}: {wrong}\n")
            elif key in ("env", "set", "note"):
                text = GOOD.replace(fix, fix + f"    {key}: {wrong}\n")
            else:
                text = GOOD + f"{key}: {wrong}\n"
            variants.append((f"{key}={wrong}", text))
    return variants


def test_every_key_with_every_wrong_type_is_an_error_or_a_working_rule(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(LOG)
    for label, text in hostile_variants():
        path = write(tmp_path, text)
        errors: list[RuleError] = []
        loaded = load_file(path, errors)
        for error in errors:
            assert error.mark.line >= 1 and error.mark.column >= 1, label
            assert error.render().startswith(f"{path}:"), label
        if not errors:  # a value of a type the key accepts: the rule must work end to end
            rulebase = RuleBase(loaded)
            from crashcart.ruletools import fired_rules

            fired_rules(log, rulebase)


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("{what: {in: 5}}", "in takes a non-empty list of values"),
        ("{what: {in: [[a]]}}", "in lists plain values"),
        ("{what: {in: [" + ", ".join(map(str, range(MAX_IN_VALUES + 1))) + "]}}",
         f"the limit is {MAX_IN_VALUES}"),
        ("{what: {gt: [1]}}", "gt takes a number or a string"),
        ("{what: {lt: .inf}}", "lt takes a number or a string"),
        ("{what: {eq: {a: 1}}}", "eq takes a plain value"),
        ("{what: {exists: yes please}}", "exists takes true or false"),
        ("{what: [1, 2]}", "a test is a plain value"),
        ("{what: .nan}", "a test is a plain value"),
        ("{what: {matches: [a]}}", "matches takes a regex string"),
    ],
)  # fmt: skip
def test_test_operands_of_the_wrong_type_are_rule_errors(
    tmp_path: Path, where: str, message: str
) -> None:
    # `in: 5` loaded and then raised TypeError when the rules engine was built.
    text = GOOD.replace('      regex: "HOSTILE', f'      where: {where}\n      regex: "HOSTILE')
    errors = load(write(tmp_path, text))
    assert [message in e.message for e in errors] == [True], [e.message for e in errors]


# --- patterns ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "regex",
    [
        pytest.param("a" * 1_000_000, id="1MB"),
        pytest.param("|".join(f"w{i}x" for i in range(20_000)), id="20k-alternatives"),
        pytest.param("a" * (MAX_REGEX_CHARS + 1), id="just-over"),
    ],
)
def test_huge_regexes_are_refused_by_lint_and_analyze(tmp_path: Path, regex: str) -> None:
    # Both passed lint and then broke analyze: "Pattern length exceeds limit".
    path = write(tmp_path, rule_with(regex=f'"{regex}"'))
    log = tmp_path / "run.log"
    log.write_text(LOG)
    message = f"regex of {len(regex)} characters; the limit is {MAX_REGEX_CHARS}"
    assert [e.message for e in lint([path.parent]) if "regex" in e.message] == [message]
    result, _ = crashcart("analyze", "--rules", str(path.parent), str(log))
    assert_rule_error(result, path, message)
    assert "nothing was analysed" in result.stderr
    assert len(result.stderr) < 2_000  # the megabyte pattern is not echoed


def test_a_huge_matches_pattern_is_refused(tmp_path: Path) -> None:
    pattern = "b" * 100_000
    condition = f'- fact: exception\n      where: {{detail: {{matches: "{pattern}"}}}}\n    '
    text = GOOD.replace("- fact: line", condition + "- fact: line")
    errors = load(write(tmp_path, text))
    assert [e.message for e in errors] == [
        f"regex of 100000 characters; the limit is {MAX_REGEX_CHARS}"
    ]


@pytest.mark.skipif(hyperscan is None, reason="Hyperscan is not installed on this platform")
def test_a_pattern_only_hyperscan_refuses_is_a_rule_error_for_analyze(tmp_path: Path) -> None:
    # RE2 and Python accept a pattern that matches the empty string; Hyperscan does not:
    # analyze stopped with an internal PatternError.
    path = write(tmp_path, rule_with(regex='"(?P<what>HOSTILE)?"'))
    log = tmp_path / "run.log"
    log.write_text(LOG)
    result, _ = crashcart("analyze", "--rules", str(path.parent), str(log))
    assert result.returncode == 2, result.stderr
    assert "internal error" not in result.stderr
    assert result.stderr.startswith(f"{path}:1:1: error: pattern of host_oom.hostile is rejected")


# --- summaries and rendered output ---------------------------------------------------------


def test_a_summary_with_thousands_of_placeholders_is_refused_in_bounded_memory(
    tmp_path: Path,
) -> None:
    # 20,000 placeholders on a 60 KB line: lint rendered the line under each error and took
    # 23.5 GB before the kernel killed it.
    path = write(tmp_path, rule_with(summary='"' + "{r}" * 20_000 + '"'))
    result, peak_mib = crashcart("rules", "lint", str(path.parent))
    assert_rule_error(
        result, path, f"summary of 60000 characters; the limit is {MAX_TEMPLATE_CHARS}"
    )
    assert len(result.stderr) < 5_000
    # A first run compiles the prefilter's database (no cache yet), which alone can pass 300 MiB;
    # the bound proves the rendering is bounded, against the 23.5 GB it once took.
    assert 0 < peak_mib < 1024, peak_mib


def test_placeholders_past_the_limit_are_refused(tmp_path: Path) -> None:
    summary = '"' + " ".join(["{what}"] * (MAX_PLACEHOLDERS + 1)) + '"'
    errors = load(write(tmp_path, rule_with(summary=summary)))
    assert [e.message for e in errors] == [
        f"summary has {MAX_PLACEHOLDERS + 1} placeholders; the limit is {MAX_PLACEHOLDERS}"
    ]


@pytest.mark.parametrize("placeholder", ["{what:>999999999}", "{what:.100f}", "{what:{what}}"])
def test_large_or_nested_formats_are_refused(tmp_path: Path, placeholder: str) -> None:
    # A width of 10**9 rendered a gigabyte of spaces for each diagnosis.
    errors = load(write(tmp_path, rule_with(summary=f'"x {placeholder}"')))
    assert [e.message for e in errors] == [
        f"placeholder {{what:{placeholder[6:-1]}}} has too large a format"
    ]
    assert errors[0].mark.column == 13  # at the placeholder


def test_small_formats_still_load(tmp_path: Path) -> None:
    assert load(write(tmp_path, rule_with(summary='"{what:>12} {what!r:.40}"'))) == []


def test_a_shown_value_is_cut() -> None:
    huge = "x" * 1_000_000
    assert len(fill("{a} and {a}", {"a": huge})) == 2 * (MAX_SHOWN_CHARS + 1) + len(" and ")
    assert fill("{a}", {"a": huge}).endswith("x…")
    assert fill("{a}", {"a": 10**40}) == str(10**40)  # numbers are never cut


def test_a_huge_captured_value_is_shown_cut_in_the_diagnosis(tmp_path: Path) -> None:
    summary = '"' + " ".join(["{what}"] * MAX_PLACEHOLDERS) + '"'
    path = write(tmp_path, rule_with(summary=summary))
    log = tmp_path / "run.log"
    log.write_text("HOSTILE " + "w" * 60_000 + "\n")
    result, peak_mib = crashcart("analyze", "--rules", str(path.parent), "--json", str(log))
    assert result.returncode == 1, result.stderr
    assert len(result.stdout) < 100_000
    # A first run compiles the prefilter's database (no cache yet), which alone can pass 300 MiB;
    # the bound proves the rendering is bounded, against the 23.5 GB it once took.
    assert 0 < peak_mib < 1024, peak_mib


# --- special and oversized files -----------------------------------------------------------


def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    fifo = directory / "pipe.yaml"
    os.mkfifo(fifo)
    for args in (("rules", "lint", str(directory)), ("rules", "lint", str(fifo))):
        result, _ = crashcart(*args, timeout=60)  # it hung forever
        assert_rule_error(result, fifo, "it is a named pipe, not a regular file")
    log = tmp_path / "run.log"
    log.write_text(LOG)
    result, _ = crashcart("analyze", "--rules", str(directory), str(log), timeout=60)
    assert_rule_error(result, fifo, "it is a named pipe, not a regular file")


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")
def test_a_link_to_a_device_is_refused_without_reading(tmp_path: Path) -> None:
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "zero.yaml").symlink_to("/dev/zero")
    started = time.monotonic()
    errors = lint([directory])
    assert time.monotonic() - started < 5.0  # it read without end
    assert [e.message for e in errors] == [
        "cannot read rule file: it is a character device, not a regular file"
    ]


def test_directories_large_and_binary_files_are_rule_errors(tmp_path: Path) -> None:
    directory = tmp_path / "rules"
    (directory / "folder.yaml").mkdir(parents=True)
    (directory / "large.yaml").write_text("# " + "x" * MAX_FILE_BYTES + "\n")
    (directory / "binary.yaml").write_bytes(b"id: \xff\xfe\n")
    (directory / "dangling.yaml").symlink_to(tmp_path / "nowhere")
    messages = {Path(e.mark.path).name: e.message for e in lint([directory])}
    assert messages == {
        "binary.yaml": "cannot read rule file: not UTF-8 text (invalid start byte at byte 4)",
        "dangling.yaml": "cannot read rule file: No such file or directory",
        "folder.yaml": "cannot read rule file: it is a directory, not a regular file",
        "large.yaml": "rule file is larger than 1024 KiB (the limit of a rule file)",
    }


# --- counts --------------------------------------------------------------------------------


def test_lint_is_linear_in_rules_and_errors(tmp_path: Path) -> None:
    # Every error re-read its file: 1,000 rules took 3.6 s, 4,000 rules 103 s.
    rules = [GOOD.replace("hostile", f"hostile{i}") for i in range(4_000)]
    path = write(tmp_path, "---\n".join(rules))
    started = time.monotonic()
    errors = lint([path.parent])
    rendered = [error.render() for error in errors]
    assert time.monotonic() - started < 10.0
    assert len(rendered) == 3 * 4_000  # no references, no fires and no quiet example
    assert rendered[-3].startswith(f"{path}:{13 * 4_000 - 12}:1: error: rule has no references")


def test_too_many_rules_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The real limit (5,000) takes long to reach on a busy machine; the check is the same.
    monkeypatch.setattr(rules_module, "MAX_RULES", 3)
    path = write(tmp_path, "---\n".join(GOOD.replace("hostile", f"h{i}") for i in range(4)))
    with pytest.raises(RuleLoadError) as raised:
        load_rules([path.parent], shipped=False)
    assert str(raised.value.errors[-1]) == (
        f"{path}:40:1: more than 3 rules; the limit of rules loaded at once"
    )


def test_too_many_conditions_and_fixes_are_refused(tmp_path: Path) -> None:
    condition = '    - fact: line\n      regex: "HOSTILE (?P<what>\\\\w+)"\n'
    fix = "  - title: Fix it\n    command: echo fix\n"
    text = GOOD.replace(condition, condition * (MAX_CONDITIONS + 1)).replace(
        fix, fix * (MAX_FIXES + 1)
    )
    messages = [e.message for e in load(write(tmp_path, text))]
    assert f"rule has {MAX_CONDITIONS + 1} conditions; the limit is {MAX_CONDITIONS}" in messages
    assert f"rule has {MAX_FIXES + 1} fixes; the limit is {MAX_FIXES}" in messages


def test_an_alias_bomb_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    text = GOOD.replace("fixes:", "\n".join(lines) + "\nexplains: *a8\nfixes:")
    started = time.monotonic()
    errors = load(write(tmp_path, text))
    assert time.monotonic() - started < 1.0
    assert errors and all(e.mark.line >= 1 for e in errors)


def test_errors_quote_a_window_of_a_long_line(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD + "explains: [" + "nccl, " * 10_000 + "nowhere]\n")
    (error,) = load(path)
    lines = error.render().splitlines()
    assert lines[0] == f"{path}:13:60012: error: unknown category 'nowhere'"
    assert len(lines[1]) < 200 and lines[1].rstrip().endswith("nowhere]")
    assert lines[1][len(lines[2]) - 1 :].startswith("nowhere")  # the caret stands under it


def test_shipped_rules_stay_within_every_limit() -> None:
    shipped = load_rules()
    assert len(shipped) < rules_module.MAX_RULES
    for rule in shipped:
        assert len(rule.summary) <= MAX_TEMPLATE_CHARS
        assert all(len(c.regex or "") <= MAX_REGEX_CHARS for c in rule.conditions)


def test_yaml_module_is_the_safe_one() -> None:
    # Guard for the loader's bases: PyYAML's safe constructor, never the full one.
    loader: Any = rules_module._loader_for("x")
    assert issubclass(loader, yaml.constructor.SafeConstructor)
    assert not issubclass(loader, yaml.constructor.FullConstructor)
    assert loader("a: [1, b]").get_single_data() == {"a": [1, "b"]}


@pytest.mark.parametrize("newline", ["\r\n", "\r", "\n", "\u2028", "\x85"])
def test_errors_count_lines_as_yaml_does(tmp_path: Path, newline: str) -> None:
    # The line index is built once per file; it must break lines where the YAML parser does.
    path = tmp_path / "lines.yaml"
    path.write_text(newline.join(["# a comment", "id: [1", "x: 1", ""]), newline="")
    (error,) = load(path)
    assert (error.mark.line, error.render().splitlines()[1]) == (3, "    x: 1")


# --- rules whose conditions multiply -------------------------------------------------------


def test_unrelated_line_conditions_do_not_multiply_without_bound(tmp_path: Path) -> None:
    # Four line conditions with nothing joining them fire once per combination of their lines:
    # with 50 lines each (the extractor's limit per pattern), 6.25 million firings, which took
    # hours (three conditions: 125,000 in about 10 s). Each now takes 7 lines: 2,401 firings.
    names = ("alpha", "beta", "gamma", "delta")
    conditions = "".join(f'    - fact: line\n      regex: "{n} \\\\d+"\n' for n in names)
    rule = GOOD.replace('    - fact: line\n      regex: "HOSTILE (?P<what>\\\\w+)"\n', conditions)
    rule = rule.replace("The log says {what}.", "Crossed.")
    path = write(tmp_path, rule)
    log = tmp_path / "crossed.log"
    log.write_text("".join(f"{n} {i}\n" for i in range(200) for n in names))
    started = time.monotonic()
    result, _ = crashcart("analyze", "--json", "--rules", str(path.parent), str(log), timeout=60)
    seconds = time.monotonic() - started
    assert result.returncode == 1, result.stderr[-2000:]
    diagnoses = json.loads(result.stdout)["diagnoses"]
    assert diagnoses[0]["rule"] == "host_oom.hostile"
    assert seconds < 10, f"analyze took {seconds:.1f} s"


def test_line_caps_keep_every_rules_combinations_bounded() -> None:
    assert line_cap(1) == line_cap(2) == MAX_LINES_PER_CONDITION
    for conditions in range(2, 33):
        cap = line_cap(conditions)
        # The most lines each that keeps the product within the bound, and at least one.
        assert cap >= 1 and cap**conditions <= MAX_LINE_COMBINATIONS
        assert (cap + 1) ** conditions > MAX_LINE_COMBINATIONS
