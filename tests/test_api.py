"""The Python API: ``analyze`` and ``RuleBase.load`` take ``str`` or ``Path``, one or several,
and the README's example runs as written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from crashcart import InputError, Report, RuleBase, analyze

ROOT = Path(__file__).resolve().parents[1]
OOM = ROOT / "rules" / "examples" / "cuda_oom" / "fragmentation.log"
#: Relative to the repository root: a string read letter by letter fails at once on "r" (an
#: absolute one would start with "/" and read the whole disk).
OOM_REL = "rules/examples/cuda_oom/fragmentation.log"
RULE = (
    "id: config_error.lab_quota\ncategory: config_error\ntitle: The lab's GPU quota ran out\n"
    "confidence: 0.9\nwhen:\n  all:\n    - fact: line\n"
    '      regex: "quota exceeded for project (?P<project>\\\\w+)"\n'
    "summary: Project {project} used its GPU hours.\nfixes:\n"
    "  - title: Ask for more hours\n    command: labctl quota request {project}\n"
)


@pytest.mark.parametrize(
    "arg", [OOM_REL, Path(OOM_REL), [OOM_REL], [Path(OOM_REL)], (p for p in [OOM_REL])]
)
def test_analyze_takes_one_path_or_several_as_str_or_path(arg, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    report = analyze(arg)
    assert [item["path"] for item in report.inputs] == [OOM_REL]  # one file, not its letters
    assert report.diagnoses[0].rule == "cuda_oom.fragmentation"


def test_analyze_a_directory_given_as_a_string(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    shutil.copyfile(OOM, run / "rank0.log")
    (run / "rank1.log").write_text("step 1 loss 2.0\n")
    report = analyze(str(run))
    assert sorted(item["path"] for item in report.inputs) == [
        str(run / "rank0.log"),
        str(run / "rank1.log"),
    ]


def test_analyze_a_missing_path_raises_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file or directory"):
        analyze(str(tmp_path / "nope.log"))


@pytest.mark.parametrize("as_arg", [str, Path, lambda p: [str(p)], lambda p: [p]])
def test_rulebase_load_takes_str_or_path_one_or_several(tmp_path: Path, as_arg) -> None:
    rules = tmp_path / "my_rules"
    rules.mkdir()
    (rules / "quota.yaml").write_text(RULE)
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.0\nquota exceeded for project vision\n")
    rulebase = RuleBase.load(as_arg(rules))
    assert "config_error.lab_quota" in {rule.id for rule in rulebase.rules}
    assert analyze(log, rulebase).diagnoses[0].rule == "config_error.lab_quota"
    assert not analyze(
        log, RuleBase.load(as_arg(rules), disable="config_error.lab_quota")
    ).diagnoses


def test_report_fields_and_json() -> None:
    report = analyze(OOM)
    assert isinstance(report, Report)
    assert report.stats["lines"] == 6 and report.stats["bytes"] == OOM.stat().st_size
    document = report.to_json()
    assert set(document) == {"schema", "inputs", "stats", "config", "diagnoses"}
    top = document["diagnoses"][0]
    assert {"rule", "category", "title", "confidence", "reason", "summary"} <= set(top)
    assert {"evidence", "fixes", "explains", "ranks"} <= set(top)
    assert {"path", "line", "text"} <= set(top["evidence"][0])


def test_readme_python_example_runs(monkeypatch, capsys) -> None:
    """The README's Python block, executed as written from the repository root."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README.md shows no Python example"
    monkeypatch.chdir(ROOT)
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})
    out = capsys.readouterr().out
    assert "cuda_oom" in out
