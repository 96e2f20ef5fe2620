"""rules/schema.json is generated from the code and accepts every shipped rule."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

from crashcart.engine.facts import markdown_reference
from crashcart.engine.schema import build_schema

SCHEMA_FILE = Path("rules/schema.json")


def test_committed_schema_is_up_to_date() -> None:
    assert json.loads(SCHEMA_FILE.read_text()) == build_schema(), (
        "regenerate it: python -m crashcart.engine.schema > rules/schema.json"
    )


def test_every_shipped_rule_validates() -> None:
    validator = jsonschema.Draft202012Validator(build_schema())
    for path in sorted(Path("rules").glob("*.yaml")):
        for rule in yaml.safe_load_all(path.read_text()):
            errors = [e.message for e in validator.iter_errors(rule)]
            assert errors == [], f"{path}: {rule.get('id')}: {errors}"


def test_schema_rejects_an_unknown_field() -> None:
    validator = jsonschema.Draft202012Validator(build_schema())
    rule = {
        "id": "cuda_oom.x",
        "category": "cuda_oom",
        "title": "t",
        "confidence": 0.5,
        "when": {"all": [{"fact": "cuda_oom", "where": {"reservd_gib": 1}}]},
        "summary": "s",
        "fixes": [{"title": "t", "command": "c"}],
    }
    assert list(validator.iter_errors(rule))


def test_the_guide_documents_every_fact_kind_and_field() -> None:
    guide = Path("docs/rules.md").read_text()
    assert guide.endswith(markdown_reference()), "regenerate: python -m crashcart.engine.facts"
