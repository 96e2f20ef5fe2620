"""What the command line looks like to a person and to a script (issue 17, items 10 and 11)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from crashcart.analyzer import RuleBase, analyze
from crashcart.engine.rules import load_rules
from crashcart.probes import probe_names
from crashcart.report import render_text

OOM = Path("rules/examples/cuda_oom/fragmentation.log")
HEALTHY = Path("rules/examples/healthy/plain_training.log")


def crashcart(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "crashcart", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "80", **(env or {})},
        check=False,
    )


def test_help_shows_examples_and_exit_codes() -> None:
    text = crashcart("--help").stdout
    assert "Examples:" in text and "crashcart analyze train.log" in text
    assert "Exit codes:" in text
    for code in ("0 ", "1 ", "2 ", "130"):
        assert re.search(rf"^\s+{code}", text, re.MULTILINE), code


def test_one_line_helps_are_whole_sentences() -> None:
    for args in (["--help"], ["rules", "--help"]):
        text = crashcart(*args).stdout
        commands = text[text.index("Commands:") :].split("\n\n")[0]
        assert "..." not in commands.replace("disk...", ""), commands


def test_probe_help_keeps_every_name_whole() -> None:
    text = crashcart("probe", "--help").stdout
    words = set(re.findall(r"[a-z_]+", text))
    assert set(probe_names()) <= words, text


def test_a_healthy_log_says_so_on_a_terminal_and_nothing_in_a_pipe() -> None:
    piped = crashcart("analyze", str(HEALTHY))
    assert piped.returncode == 0 and piped.stdout == ""
    assert crashcart("analyze", "--json", str(HEALTHY)).stdout.startswith("{")
    controller, terminal = pty.openpty()
    with os.fdopen(controller, "rb", buffering=0) as reader:
        process = subprocess.Popen(
            [sys.executable, "-m", "crashcart", "analyze", str(HEALTHY)],
            stdout=terminal,
            stderr=subprocess.PIPE,
            env={**os.environ, "NO_COLOR": "1"},
        )
        os.close(terminal)
        assert process.wait(timeout=120) == 0, process.stderr.read()
        output = b""
        with contextlib.suppress(OSError):  # the terminal closed (EIO): all was read
            while chunk := reader.read(4096):
                output += chunk
    lines = [line for line in output.decode().splitlines() if line.strip()]
    assert lines == [f"no problem found: {HEALTHY} looks healthy"]


def test_wrapped_report_lines_keep_their_indent() -> None:
    report = analyze([OOM])
    console = Console(
        file=io.StringIO(), width=60, force_terminal=True, color_system=None, highlight=False
    )
    render_text(report, console)
    lines = console.file.getvalue().splitlines()
    body = lines[lines.index(next(line for line in lines if line.startswith("   "))) :]
    assert len(body) > 10
    for line in body:
        assert not line.strip() or line.startswith("   "), line
    evidence = body[body.index("   evidence") + 1 :]
    assert all(line.startswith("     ") for line in evidence[: evidence.index("   fix")])


def test_rules_test_in_a_pipe_keeps_rule_ids_whole_and_uses_the_healthy_corpus() -> None:
    result = crashcart("rules", "test")
    assert result.returncode == 0, result.stdout + result.stderr
    listed = {line.split()[0] for line in result.stdout.splitlines()[1:-1] if line.strip()}
    assert {rule.id for rule in load_rules()} <= listed
    healthy = int(re.search(r"healthy FP \(of (\d+)\)", result.stdout).group(1))
    assert healthy > 10  # the corpus's healthy runs, not one example log


def test_rules_show_takes_a_directory_like_lint_and_test(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    rule = Path("rules/cuda_oom.yaml").read_text(encoding="utf-8").split("\n---")[0]
    (mine / "oom.yaml").write_text(
        rule.replace("id: cuda_oom.", "id: cuda_oom.mine_").split("examples:")[0]
    )
    rule_id = re.search(r"^id: (\S+)", (mine / "oom.yaml").read_text(), re.MULTILINE).group(1)
    for args in (
        ["rules", "show", rule_id, str(mine)],
        ["rules", "show", rule_id, "--rules", str(mine)],
    ):
        shown = crashcart(*args)
        assert shown.returncode == 0, shown.stderr
        assert f"id: {rule_id}" in shown.stdout


def test_output_and_quiet(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = crashcart("analyze", "--json", "--output", str(out), str(OOM))
    assert result.returncode == 1 and result.stdout == ""
    assert json.loads(out.read_text())["diagnoses"][0]["category"] == "cuda_oom"
    quiet = crashcart("analyze", "-q", str(OOM))
    assert quiet.returncode == 1 and quiet.stdout == "" and quiet.stderr == ""
    assert crashcart("analyze", "--quiet", str(HEALTHY)).returncode == 0
    bad = crashcart("analyze", "-o", str(tmp_path / "no" / "such" / "dir.txt"), str(OOM))
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_sarif_report_has_the_rules_results_and_log_locations() -> None:
    result = crashcart("analyze", "--format", "sarif", str(OOM))
    assert result.returncode == 1, result.stderr
    sarif = json.loads(result.stdout)
    assert sarif["version"] == "2.1.0" and "sarif-2.1.0" in sarif["$schema"]
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "crashcart"
    rule_ids = [rule["id"] for rule in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids)) == len(RuleBase.load([]).rules)
    assert all(rule["shortDescription"]["text"] for rule in driver["rules"])
    top = run["results"][0]
    assert top["ruleId"] == "cuda_oom.fragmentation"
    assert driver["rules"][top["ruleIndex"]]["id"] == top["ruleId"]
    assert top["level"] in ("error", "warning", "note")
    assert top["message"]["text"]
    location = top["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == OOM.as_posix()
    line = location["region"]["startLine"]
    # The snippet is the evidence text (a rank prefix such as "[rank11]:" peeled off).
    assert location["region"]["snippet"]["text"].strip() in OOM.read_text().splitlines()[line - 1]
    healthy = json.loads(crashcart("analyze", "--format", "sarif", str(HEALTHY)).stdout)
    assert healthy["runs"][0]["results"] == []


def test_json_and_another_format_conflict() -> None:
    result = crashcart("analyze", "--json", "--format", "sarif", str(OOM))
    assert result.returncode == 2 and "disagree" in result.stderr


def test_a_usage_error_is_one_line_on_stderr_naming_the_help() -> None:
    for args in (
        ["analyze", "--top", "0", str(OOM)],
        ["analyze", "--bogus", str(OOM)],
        ["probe", "no_such_probe"],
        ["eval", "--min-top1", "2", "corpus"],
    ):
        result = crashcart(*args)
        assert result.returncode == 2 and result.stdout == "", args
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("crashcart: error: "), result.stderr
