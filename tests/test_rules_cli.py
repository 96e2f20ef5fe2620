"""The rule author's workflow, as docs/rules.md tells it: write, lint, test, use."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import xml.etree.ElementTree as ET
from collections.abc import Collection
from pathlib import Path

import pytest

from tests.conftest import EXIT_CODES, run_crashcart

ANOMALY_LOG = Path("rules/examples/nan_loss/anomaly.log")
HEALTHY_LOG = Path("rules/examples/healthy/plain_training.log")
RULE = """\
id: nan_loss.solve_backward
category: nan_loss
title: Linear solve produced NaN in the backward pass
confidence: 0.95
when:
  all:
    - fact: line
      regex: "Function '(?P<function>Solve\\\\w*)' returned nan values"
summary: >-
  {function} produced NaN: the matrix was singular or ill-conditioned.
fixes:
  - title: Regularise the matrix before solving
    code: torch.linalg.solve(a + 1e-6 * torch.eye(a.shape[-1]), b)
references:
  - https://pytorch.org/docs/stable/generated/torch.linalg.solve.html
examples:
  fires: [examples/anomaly.log]
  quiet: [examples/healthy.log]
"""


def crashcart(
    *args: str, env: dict | None = None, expected: Collection[int] = EXIT_CODES
) -> subprocess.CompletedProcess:
    return run_crashcart(
        *args, text=True, timeout=300, env={"NO_COLOR": "1", **(env or {})}, expected=expected
    )


@pytest.fixture
def my_rules(tmp_path: Path) -> Path:
    directory = tmp_path / "my-rules"
    (directory / "examples").mkdir(parents=True)
    shutil.copy(ANOMALY_LOG, directory / "examples" / "anomaly.log")
    shutil.copy(HEALTHY_LOG, directory / "examples" / "healthy.log")
    (directory / "nan.yaml").write_text(RULE)
    return directory


def test_shipped_rules_lint_clean() -> None:
    result = crashcart("rules", "lint")
    assert result.returncode == 0, result.stderr


def test_shipped_rules_pass_their_examples_and_the_healthy_logs(tmp_path: Path) -> None:
    report = tmp_path / "rules.xml"
    result = crashcart("rules", "test", "--junitxml", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    assert " 0 failed" in result.stdout
    suite = ET.parse(report).getroot()
    assert suite.get("failures") == "0" and int(suite.get("tests", "0")) > 80


def test_a_typo_fails_lint_with_position_caret_and_hint(my_rules: Path) -> None:
    rule = my_rules / "nan.yaml"
    rule.write_text(RULE.replace("  {function} produced", "  {functon} produced"))
    result = crashcart("rules", "lint", str(my_rules))
    assert result.returncode == 2
    assert f"{rule}:10:3: error: placeholder {{functon}} names no field" in result.stderr
    assert "    ^" in result.stderr
    assert "hint: known:" in result.stderr and "function" in result.stderr


def test_lint_reports_every_error_and_house_style(my_rules: Path) -> None:
    text = RULE.replace("category: nan_loss", "category: nan_lost").replace(
        "references:\n  - https://pytorch.org/docs/stable/generated/torch.linalg.solve.html\n", ""
    )
    (my_rules / "nan.yaml").write_text(text)
    result = crashcart("rules", "lint", str(my_rules))
    assert "unknown category 'nan_lost'" in result.stderr
    assert "rule has no references" in result.stderr


def test_rules_test_passes_the_new_rule_and_catches_a_false_positive(my_rules: Path) -> None:
    result = crashcart("rules", "test", str(my_rules))
    assert result.returncode == 0, result.stdout
    assert "nan_loss.solve_backward" in result.stdout and "1 passed, 0 failed" in result.stdout
    rule = my_rules / "nan.yaml"
    rule.write_text(RULE.replace("quiet: [examples/healthy.log]", "quiet: [examples/anomaly.log]"))
    result = crashcart("rules", "test", str(my_rules))
    assert result.returncode == 1
    assert "FAIL nan_loss.solve_backward: fired on" in result.stdout


def test_analyze_ranks_the_user_rule_first(my_rules: Path) -> None:
    result = crashcart(
        "analyze", "--json", "--rules", str(my_rules), str(ANOMALY_LOG), expected=[1]
    )
    top = json.loads(result.stdout)["diagnoses"][0]
    assert top["rule"] == "nan_loss.solve_backward"
    assert top["summary"].startswith("SolveBackward produced NaN")


def test_config_file_env_and_disable(my_rules: Path, tmp_path: Path) -> None:
    config = tmp_path / "xdg" / "crashcart" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(f"rules: [{my_rules}]\ndisable: [nan_loss.anomaly]\n")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    top = json.loads(crashcart("analyze", "--json", str(ANOMALY_LOG), env=env, expected=[1]).stdout)
    assert top["diagnoses"][0]["rule"] == "nan_loss.solve_backward"
    assert "nan_loss.anomaly" not in top["diagnoses"][0].get("also_matched", [])
    env_only = {"XDG_CONFIG_HOME": str(tmp_path / "none"), "CRASHCART_RULES": str(my_rules)}
    result = crashcart("analyze", "--json", str(ANOMALY_LOG), env=env_only, expected=[1])
    top = json.loads(result.stdout)
    assert top["diagnoses"][0]["rule"] == "nan_loss.solve_backward"


def test_malformed_config_is_one_clear_line(tmp_path: Path) -> None:
    config = tmp_path / "crashcart" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text("rules: [unclosed\n")
    result = crashcart("analyze", str(ANOMALY_LOG), env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert result.returncode == 2
    assert f"{config}:2:1: invalid YAML" in result.stderr and "Traceback" not in result.stderr


def test_list_and_show() -> None:
    listed = crashcart("rules", "list", expected=[0]).stdout
    assert "cuda_oom.fragmentation" in listed and "rules/cuda_oom.yaml" in listed
    shown = crashcart("rules", "show", "cuda_oom.fragmentation")
    assert shown.returncode == 0 and "id: cuda_oom.fragmentation" in shown.stdout
    assert crashcart("rules", "show", "no.such_rule").returncode == 2


def test_a_hostile_user_pattern_cannot_hang_the_analyzer(my_rules: Path, tmp_path: Path) -> None:
    (my_rules / "nan.yaml").write_text(
        RULE.replace(
            "Function '(?P<function>Solve\\\\w*)' returned nan values", "(?P<function>(x+x+)+y)"
        )
    )
    hostile = tmp_path / "hostile.log"
    hostile.write_text(("x" * 5000 + "\n") * 200)
    started = time.perf_counter()
    crashcart("analyze", "--rules", str(my_rules), str(hostile), expected=[0, 1])
    assert time.perf_counter() - started < 60  # a backtracking engine would not finish


def test_a_bad_regex_is_one_error_without_re2_log_lines(my_rules: Path) -> None:
    """RE2's own C++ log line stays off stderr, and no follow-on error repeats the failure."""
    rule = my_rules / "nan.yaml"
    rule.write_text(RULE.replace("(?P<function>Solve\\\\w*)", "(?P<function>Solve\\\\w*"))
    result = crashcart("rules", "lint", str(my_rules))
    assert result.returncode == 2
    assert "re2.cc" not in result.stderr and "absl" not in result.stderr
    assert result.stderr.count("error:") == 1, result.stderr
    assert "invalid regex: missing )" in result.stderr and 'b"' not in result.stderr
    assert "1 problem(s)" in result.stderr


def test_docs_list_every_category() -> None:
    from crashcart.engine.vocabulary import CATEGORIES

    text = Path("docs/rules.md").read_text(encoding="utf-8")
    section = text[text.index("## Categories") : text.index("## Fact kinds")]
    assert [c for c in CATEGORIES if f"`{c}`" not in section] == []
