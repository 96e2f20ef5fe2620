"""Many rules cost little per run (issue 15): what a rule base compiles is compiled once, facts go
only to the rulesets that can use them, and a mask's rule patterns are found by its set bits.

benchmarks/rule_scaling.py measures 10x and 100x the shipped rules on the corpus.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from crashcart.analyzer import Analyzer, RuleBase, analyze
from crashcart.engine.durable import RULES_PER_SET
from crashcart.parsers.extract import compile_rule_patterns
from crashcart.parsers.prefilter import Prefilter, hyperscan

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
RULE = (
    "---\nid: config_error.generated_{i}\ncategory: config_error\ntitle: generated {i}\n"
    'confidence: 0.5\nwhen:\n  all:\n    - fact: line\n      regex: "custom failure E{i:05d} in '
    '(?P<where>\\\\w+)"\nsummary: generated rule {i} matched in {{where}}\n'
    'fixes:\n  - title: nothing\n    command: "true"\n'
)


@pytest.fixture(scope="module")
def many_rules(tmp_path_factory: pytest.TempPathFactory) -> RuleBase:
    """The shipped rules and 1,200 generated line rules (13 rulesets, 1,250+ line patterns)."""
    directory = tmp_path_factory.mktemp("rules")
    (directory / "generated.yaml").write_text("".join(RULE.format(i=i) for i in range(1200)))
    return RuleBase.load([directory])


def test_runs_share_what_the_rule_base_compiled(many_rules: RuleBase) -> None:
    # Each run compiled every rule pattern again: with 10x the shipped rules that cost 17x the
    # corpus's analysis time.
    first, second = Analyzer(many_rules), Analyzer(many_rules)
    try:
        assert first.extractor.rule_prefilter is second.extractor.rule_prefilter is not None
        assert first.extractor._rule_regexes is second.extractor._rule_regexes
        assert first.extractor._bits is second.extractor._bits
    finally:
        first.close()
        second.close()


def test_more_than_a_thousand_rule_patterns_are_still_scanned_with_hyperscan(
    many_rules: RuleBase,
) -> None:
    # Past 1,000 patterns RE2 took over, and the corpus took 12x the shipped rules' time.
    if hyperscan is None:
        pytest.skip("Hyperscan is not installed on this platform (RE2 is used)")
    assert len(many_rules.line_patterns) > 1000
    assert many_rules.rule_patterns.prefilter.engine == "hyperscan"


def test_a_generated_rule_fires_among_many(many_rules: RuleBase, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("step 1 loss 2.0\ncustom failure E01111 in loader\n")
    report = analyze(log, many_rules)
    assert [d.rule for d in report.diagnoses] == ["config_error.generated_1111"]


def test_facts_go_only_to_rulesets_with_a_rule_on_their_kind(many_rules: RuleBase) -> None:
    session = many_rules.session
    assert len(session._sets) >= 13
    # The generated rules are all line rules: an exception fact goes to the shipped rules' sets.
    exception_sets = session._sets_for({"kind": "exception"})
    shipped_sets = math.ceil(len(RuleBase.load().rules) / RULES_PER_SET)
    assert exception_sets and len(exception_sets) <= shipped_sets
    for name in exception_sets:
        rules = [r for r in many_rules.rules if session._set_of_rule[r.id] == name]
        assert any(c.fact == "exception" for r in rules for c in r.conditions)
    assert session._sets_for({"kind": "no_such_kind"}) == []


def test_shipped_results_unchanged_on_corpus_cases(many_rules: RuleBase) -> None:
    """Routing facts by kind and sharing compiled patterns change no diagnosis."""
    shipped = RuleBase.load()
    cases = sorted(p.parent for p in CORPUS.glob("*/expected.yaml"))[:40]
    for case in cases:
        alone = [d.rule for d in analyze([case], shipped).diagnoses]
        among_many = [d.rule for d in analyze([case], many_rules).diagnoses]
        assert among_many == alone, case


def test_set_bits_give_the_same_names_as_a_scan_of_every_bit() -> None:
    patterns = {f"p{i}": f"word{i}x" for i in range(300)}
    prefilter = Prefilter(patterns, engine="re2")
    compiled = compile_rule_patterns(patterns)
    bits = compiled.bits
    rng = random.Random(15)
    for _ in range(200):
        mask = sum(1 << i for i in rng.sample(range(300), rng.randint(0, 6)))
        every = [prefilter._names[i] for i in range(300) if mask >> i & 1]
        assert list(prefilter.names(mask)) == every
        # Rule bits sit above the main prefilter's; those below must not count.
        names = compiled.prefilter.pattern_names
        expected = [names[i] for i in range(300) if mask >> i & 1]
        assert bits.rule_ids(mask << bits.rule_shift | 0b101) == expected
