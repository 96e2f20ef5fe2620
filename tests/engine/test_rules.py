"""Rule loading: validation errors point at file:line:column with a caret."""

from __future__ import annotations

from pathlib import Path

import pytest

from crashcart.engine.rules import RuleLoadError, load_file, load_rules

GOOD = """\
id: cuda_oom.tiny_gpu
category: cuda_oom
title: OOM on a small GPU
confidence: 0.8
when:
  all:
    - fact: cuda_oom
      where: {total_gib: {lt: 8}}
summary: GPU has {total_gib} GiB.
fixes:
  - title: Halve the batch
    set: {micro_batch: half}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return path


def test_shipped_rules_load() -> None:
    rules = load_rules()
    ids = [rule.id for rule in rules]
    assert len(ids) == len(set(ids)) > 30


def test_a_good_rule_loads(tmp_path: Path) -> None:
    errors: list = []
    rules = load_file(write(tmp_path, GOOD), errors)
    assert errors == [] and rules[0].id == "cuda_oom.tiny_gpu"


def test_unknown_field_is_reported_with_position_caret_and_hint(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD.replace("total_gib: {lt", "totl_gib: {lt"))
    errors: list = []
    load_file(path, errors)
    assert len(errors) == 1
    rendered = errors[0].render()
    assert rendered.splitlines()[0] == (
        f"{path}:8:15: error: unknown field 'totl_gib' of fact 'cuda_oom'"
    )
    assert rendered.splitlines()[2].index("^") == 4 + 14
    assert "hint: known:" in rendered and "total_gib" in rendered


def test_every_error_is_reported_not_only_the_first(tmp_path: Path) -> None:
    text = GOOD.replace("category: cuda_oom", "category: cuda_boom").replace(
        "{total_gib} GiB", "{missing} GiB"
    )
    errors: list = []
    load_file(write(tmp_path, text), errors)
    messages = [e.message for e in errors]
    assert any("unknown category 'cuda_boom'" in m for m in messages)
    assert any("placeholder {missing}" in m for m in messages)


def test_yaml_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    errors: list = []
    load_file(write(tmp_path, "id: a.b\ntitle: [unclosed\n"), errors)
    assert errors and errors[0].mark.line >= 2
    assert "invalid YAML" in errors[0].message


def test_unsafe_yaml_tags_are_refused(tmp_path: Path) -> None:
    errors: list = []
    load_file(write(tmp_path, "!!python/object/apply:os.system ['echo pwned']\n"), errors)
    assert errors and "invalid YAML" in errors[0].message


def test_bad_regex_on_a_line_rule(tmp_path: Path) -> None:
    text = GOOD.replace(
        "    - fact: cuda_oom\n      where: {total_gib: {lt: 8}}",
        '    - fact: line\n      regex: "(a)\\\\1"',
    )
    text = text.replace("{total_gib}", "?")
    errors: list = []
    load_file(write(tmp_path, text), errors)
    assert any("invalid regex" in e.message for e in errors)


def test_user_rule_overrides_shipped_rule_by_id(tmp_path: Path) -> None:
    text = GOOD.replace("cuda_oom.tiny_gpu", "cuda_oom.generic")
    write(tmp_path, text)
    rules = {rule.id: rule for rule in load_rules([tmp_path])}
    assert rules["cuda_oom.generic"].title == "OOM on a small GPU"


def test_duplicate_ids_in_one_directory(tmp_path: Path) -> None:
    write(tmp_path, GOOD + "---\n" + GOOD)
    with pytest.raises(RuleLoadError) as raised:
        load_rules([tmp_path])
    assert "duplicate rule id" in raised.value.errors[0].message
