"""The durable-rules adapter: our conditions compiled and run by the real engine."""

from __future__ import annotations

import datetime
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from crashcart.engine import durable
from crashcart.engine.durable import RuleSession, to_json
from crashcart.engine.rules import load_file

RULES = """\
id: cuda_oom.big
category: cuda_oom
title: big
confidence: 0.5
when:
  all:
    - fact: cuda_oom
      where: {requested_gib: {gte: 2}, phase: {in: [train, eval]}}
summary: x
fixes: [{title: t, command: c}]
---
id: distributed_timeout.after_oom_same_rank
category: distributed_timeout
title: ordered
confidence: 0.5
when:
  all:
    - fact: cuda_oom
      as: oom
    - fact: collective_timeout
      same: [rank]
      after: oom
summary: x
fixes: [{title: t, command: c}]
---
id: cuda_oom.without_alloc_conf
category: cuda_oom
title: absence
confidence: 0.5
when:
  all:
    - fact: cuda_oom
  none:
    - fact: config
      where: {key: alloc_conf}
summary: x
fixes: [{title: t, command: c}]
---
id: nan_loss.many_overflows
category: nan_loss
title: counted
confidence: 0.5
when:
  all:
    - fact: line
      regex: "OVERFLOW!"
      count: 3
summary: x
fixes: [{title: t, command: c}]
"""


def session(tmp_path: Path) -> RuleSession:
    path = tmp_path / "r.yaml"
    path.write_text(RULES)
    errors: list = []
    rules = load_file(path, errors)
    assert errors == []
    return RuleSession(rules)


def fact(seq: int, kind: str, **fields: object) -> dict:
    return {"sid": "run", "id": seq, "seq": seq, "kind": kind, "rank": 0, "line": seq, **fields}


def fired(firings: list) -> list[str]:
    """The rules that matched (not the vetoes that withdraw a match)."""
    return sorted(f.rule.id for f in firings if not f.veto)


def test_numeric_and_membership_conditions(tmp_path: Path) -> None:
    rules = session(tmp_path)
    assert fired(rules.assert_fact(fact(1, "cuda_oom", requested_gib=1.0, phase="train"))) == [
        "cuda_oom.without_alloc_conf"
    ]
    assert "cuda_oom.big" in fired(
        rules.assert_fact(fact(2, "cuda_oom", requested_gib=4.0, phase="eval"))
    )


def test_order_and_same_rank_correlation(tmp_path: Path) -> None:
    rules = session(tmp_path)
    assert rules.assert_fact(fact(1, "collective_timeout", rank=0)) == []  # before any OOM
    rules.assert_fact(fact(2, "cuda_oom", requested_gib=1.0))
    assert rules.assert_fact(fact(3, "collective_timeout", rank=1)) == []  # other rank
    matched = rules.assert_fact(fact(4, "collective_timeout", rank=0))
    assert fired(matched) == ["distributed_timeout.after_oom_same_rank"]
    assert matched[0].fact_ids == [2, 4]


def test_absence_condition(tmp_path: Path) -> None:
    rules = session(tmp_path)
    rules.assert_fact(fact(1, "config", key="alloc_conf", value="expandable_segments:True"))
    assert "cuda_oom.without_alloc_conf" not in fired(
        rules.assert_fact(fact(2, "cuda_oom", requested_gib=1.0))
    )


def test_a_forbidden_fact_that_comes_later_withdraws_the_match(tmp_path: Path) -> None:
    # "none" means no such fact in the run, not "none yet": the engine's own absence test only
    # sees the facts asserted before the positives, so a veto rule reports the later one.
    rules = session(tmp_path)
    matched = rules.assert_fact(fact(1, "cuda_oom", requested_gib=1.0))
    assert [(f.rule.id, f.fact_ids, f.veto) for f in matched] == [
        ("cuda_oom.without_alloc_conf", [1], False)
    ]
    vetoes = rules.assert_fact(fact(2, "config", key="alloc_conf", value="expandable_segments"))
    assert [(f.rule.id, f.fact_ids, f.veto) for f in vetoes] == [
        ("cuda_oom.without_alloc_conf", [1], True)
    ]


def test_facts_no_rule_wants_are_not_errors(tmp_path: Path) -> None:
    assert session(tmp_path).assert_fact(fact(1, "nccl_warn", message="x")) == []


def test_retracted_facts_no_longer_match(tmp_path: Path) -> None:
    rules = session(tmp_path)
    oom = fact(1, "cuda_oom", requested_gib=1.0)
    rules.assert_fact(oom)
    rules.retract_fact(oom)
    assert rules.assert_fact(fact(2, "collective_timeout", rank=0)) == []


def test_count_needs_that_many_facts(tmp_path: Path) -> None:
    rules = session(tmp_path)
    pattern = "rule:nan_loss.many_overflows:f0"
    assert rules.assert_fact(fact(1, "line", pattern=pattern)) == []
    assert rules.assert_fact(fact(2, "line", pattern=pattern)) == []
    matched = rules.assert_fact(fact(3, "line", pattern=pattern))
    assert fired(matched) == ["nan_loss.many_overflows"]
    assert matched[0].fact_ids == [1, 2, 3]


def test_floats_in_exponent_notation_reach_the_engine(tmp_path: Path) -> None:
    # durable-rules' JSON parser rejects 5e-05; the adapter writes 0.00005.
    rules = session(tmp_path)
    assert fired(rules.assert_fact(fact(1, "cuda_oom", requested_gib=5e-05, phase="x"))) == [
        "cuda_oom.without_alloc_conf"
    ]
    assert rules.assert_fact(fact(2, "config", key="lr", value=1e26)) == []


def test_facts_are_encoded_once_compactly_with_floats_positional() -> None:
    assert to_json({"kind": "config", "value": "größe", "id": 1, "ok": True, "none": None}) == (
        '{"kind":"config","value":"größe","id":1,"ok":true,"none":null}'
    )
    assert to_json({"kind": "x", "lr": 5e-05, "big": 1e26, "name": "ü"}) == (
        '{"kind":"x","lr":0.00005,"big":100000000000000000000000000,"name":"ü"}'
    )


def test_firing_a_rule_warns_nothing(tmp_path: Path) -> None:
    # durable-rules' clock called datetime.utcfromtimestamp: a DeprecationWarning per firing on
    # Python 3.12 and later, until the adapter replaced that clock.
    rules = session(tmp_path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert fired(rules.assert_fact(fact(1, "cuda_oom", requested_gib=1.0))) == [
            "cuda_oom.without_alloc_conf"
        ]
    assert [str(warning.message) for warning in caught] == []


def test_a_rule_fires_when_deprecation_warnings_are_errors(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(RULES)
    script = (
        "import pathlib\n"
        "from crashcart.engine.durable import RuleSession\n"
        "from crashcart.engine.rules import load_file\n"
        f"rules = RuleSession(load_file(pathlib.Path({str(tmp_path / 'r.yaml')!r}), []))\n"
        "fact = {'sid': 'run', 'id': 1, 'seq': 1, 'kind': 'cuda_oom', 'rank': 0, 'line': 1,\n"
        "        'requested_gib': 4.0, 'phase': 'train'}\n"
        "print(sorted(firing.rule.id for firing in rules.assert_fact(fact)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "['cuda_oom.big', 'cuda_oom.without_alloc_conf']\n"


def test_the_engines_clock_keeps_the_value_durable_computed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        epoch = datetime.datetime.utcfromtimestamp(0)  # durable-rules' own formula
    theirs = (datetime.datetime.now() - epoch).total_seconds()
    assert abs(durable.durable_engine._unix_now() - theirs) < 1.0


def test_every_operator_reaches_the_engine_in_its_own_spelling(tmp_path: Path) -> None:
    # durable-rules spells "not equal" $neq: a rule using `ne` once silently never fired.
    path = tmp_path / "ops.yaml"
    tests = {"ne": "a", "eq": "b", "in": ["b", "c"], "not_in": ["a", "c"]}
    tests |= {"gt": 1, "gte": 2, "lt": 9, "lte": 8}
    path.write_text(
        "\n---\n".join(
            f"id: nccl.{op}\ncategory: nccl\ntitle: t\nconfidence: 0.5\nwhen:\n  all:\n"
            f"    - fact: nccl_warn\n      where: {{message: {{{op}: {value!r}}}}}\n"
            "summary: x\nfixes: [{title: t, command: c}]"
            for op, value in tests.items()
            if not isinstance(value, int)
        )
        + "\n---\n"
        + "\n---\n".join(
            f"id: cuda_oom.{op}\ncategory: cuda_oom\ntitle: t\nconfidence: 0.5\nwhen:\n  all:\n"
            f"    - fact: cuda_oom\n      where: {{requested_gib: {{{op}: {value}}}}}\n"
            "summary: x\nfixes: [{title: t, command: c}]"
            for op, value in tests.items()
            if isinstance(value, int)
        )
    )
    errors: list = []
    rules = RuleSession(load_file(path, errors))
    assert errors == []
    assert fired(rules.assert_fact(fact(1, "nccl_warn", message="b"))) == [
        "nccl.eq",
        "nccl.in",
        "nccl.ne",
        "nccl.not_in",
    ]
    assert fired(rules.assert_fact(fact(3, "nccl_warn", message="a"))) == []
    assert fired(rules.assert_fact(fact(2, "cuda_oom", requested_gib=5.0))) == [
        "cuda_oom.gt",
        "cuda_oom.gte",
        "cuda_oom.lt",
        "cuda_oom.lte",
    ]


def test_not_matches_passes_a_field_that_does_not_match_or_is_missing(tmp_path: Path) -> None:
    # The same fact must pass one pattern and fail another (a `none` veto cannot say that: it
    # looks for a second fact). Both tests on one field keep separate flags.
    path = tmp_path / "not_matches.yaml"
    path.write_text(
        "id: nccl.words\ncategory: nccl\ntitle: t\nconfidence: 0.5\nwhen:\n  all:\n"
        "    - fact: nccl_warn\n"
        "      where: {message: {matches: 'pickle', not_matches: 'serialization'}}\n"
        "summary: x\nfixes: [{title: t, command: c}]\n---\n"
        "id: nccl.absent\ncategory: nccl\ntitle: t\nconfidence: 0.5\nwhen:\n  all:\n"
        "    - fact: nccl_warn\n      where: {subsystem: {not_matches: 'serialization'}}\n"
        "summary: x\nfixes: [{title: t, command: c}]\n"
    )
    errors: list = []
    rules = RuleSession(load_file(path, errors))
    assert errors == []
    assert fired(rules.assert_fact(fact(1, "nccl_warn", message="cannot pickle"))) == [
        "nccl.absent",
        "nccl.words",
    ]
    assert fired(rules.assert_fact(fact(2, "nccl_warn", message="pickle in serialization"))) == [
        "nccl.absent"
    ]
    assert fired(rules.assert_fact(fact(3, "nccl_warn", subsystem="serialization"))) == []


def test_a_ruleset_is_built_only_when_a_fact_first_goes_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A healthy log asserts no fact, so it should pay for no ruleset; a fact builds only the
    # sets with a rule on its kind, and they fire as an eagerly built session's would.
    monkeypatch.setattr(durable, "RULES_PER_SET", 1)
    rules = session(tmp_path)
    assert rules.built_sets == []
    rules.retract_fact(fact(1, "cuda_oom", requested_gib=4.0))  # nothing built, nothing to do
    assert rules.built_sets == []
    assert fired(rules.assert_fact(fact(2, "cuda_oom", requested_gib=4.0, phase="train"))) == [
        "cuda_oom.big",
        "cuda_oom.without_alloc_conf",
    ]
    cuda_oom_sets = rules.built_sets
    assert 0 < len(cuda_oom_sets) < len(rules.rules)
    rules.build()
    assert len(rules.built_sets) == len(rules.rules)
    assert fired(rules.assert_fact(fact(3, "cuda_oom", requested_gib=4.0, phase="train"))) == [
        "cuda_oom.big",
        "cuda_oom.without_alloc_conf",
    ]
