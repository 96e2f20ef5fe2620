"""The rule author's tools behind ``crashcart rules lint|test|list|show``.

``rules test`` runs the real pipeline on every rule's examples: each ``fires`` log must make the
rule fire (true positive, else a false negative) and each ``quiet`` log must not (true negative,
else a false positive); on every healthy log no rule may be reported (a rule may fire on a
traceback the run survived: the ranking leaves that out, and so does this check). It never
stops at the first failure and can write a JUnit XML report for CI.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .analyzer import Analyzer, RuleBase, prefilter_errors
from .engine.rules import (
    MAX_RULES,
    Rule,
    RuleError,
    load_file,
    rule_files,
    shipped_rules_dir,
    too_many_rules,
)
from .engine.rulesource import read_source
from .parsers.sources import resolve


def lint(paths: Iterable[Path]) -> list[RuleError]:
    """Every schema, semantic and house-style problem in the rule files under ``paths``.

    Each file is read once and its lines indexed once (errors quote lines from that index), so
    linting is linear in the size of the files and the number of problems.
    """
    errors: list[RuleError] = []
    seen: dict[str, Rule] = {}
    loaded = 0
    for path in paths:
        for file in rule_files(path):
            for rule in load_file(file, errors, style=True):
                loaded += 1
                if loaded > MAX_RULES:
                    errors.append(too_many_rules(rule))
                    return errors
                first = seen.setdefault(rule.id, rule)
                if first is not rule:
                    errors.append(
                        RuleError(
                            rule.mark,
                            f"duplicate rule id {rule.id!r}",
                            f"first defined at {first.path}:{first.line}",
                        )
                    )
                errors.extend(prefilter_errors(rule))
    return errors


@dataclass
class RuleResult:
    """How one rule did on its examples and on the healthy logs."""

    rule: Rule
    true_positives: list[Path] = field(default_factory=list)
    false_negatives: list[Path] = field(default_factory=list)
    true_negatives: list[Path] = field(default_factory=list)
    false_positives: list[Path] = field(default_factory=list)
    healthy_false_positives: list[Path] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """No missed example, no false alarm."""
        return not (self.false_negatives or self.false_positives or self.healthy_false_positives)


def fired_rules(path: Path, rulebase: RuleBase, reported: bool = False) -> set[str]:
    """The ids of every rule that fires on a log file or run directory (``reported``: only
    those behind a diagnosis the report shows)."""
    analyzer = Analyzer(rulebase)
    try:
        for source in resolve(str(path)):
            for chunk in source.chunks():
                analyzer.feed(source.name, chunk, source.default_rank)
            analyzer.finish(source.name)
        analyzer.conclude()
        if reported:
            return {r for d in analyzer.diagnoses() for r in [d.rule, *d.also_matched]}
        return set(analyzer.diagnoser.hypotheses)
    finally:
        analyzer.close()


def run_tests(rules: list[Rule], rulebase: RuleBase, healthy: list[Path]) -> list[RuleResult]:
    """Run every rule's examples and the healthy logs; each log is analysed once."""
    cache: dict[tuple[Path, bool], set[str]] = {}

    def fired(path: Path, reported: bool = False) -> set[str]:
        if (path, reported) not in cache:
            cache[(path, reported)] = fired_rules(path, rulebase, reported)
        return cache[(path, reported)]

    results = []
    for rule in rules:
        result = RuleResult(rule)
        for path in rule.examples.get("fires", []):
            (result.true_positives if rule.id in fired(path) else result.false_negatives).append(
                path
            )
        for path in rule.examples.get("quiet", []):
            (result.false_positives if rule.id in fired(path) else result.true_negatives).append(
                path
            )
        result.healthy_false_positives = [p for p in healthy if rule.id in fired(p, True)]
        results.append(result)
    return results


def default_healthy_dirs() -> list[Path]:
    """Where ``rules test`` finds healthy logs by default: the shipped healthy examples and,
    when crashcart runs from a checkout, the corpus's healthy cases (dozens of runs, against the
    one example log a wheel carries)."""
    shipped = shipped_rules_dir()
    corpus = shipped.parent / "corpus"
    return [shipped / "examples" / "healthy", *([corpus] if corpus.is_dir() else [])]


def healthy_logs(dirs: Iterable[Path]) -> list[Path]:
    """Healthy logs: ``*.log`` files of the given directories, and corpus cases expecting none."""
    found: list[Path] = []
    unique = {path.resolve(): path for path in reversed(list(dirs))}  # each directory once
    for directory in reversed(unique.values()):
        for expected in sorted(directory.glob("*/expected.yaml")):
            if expected.read_text(encoding="utf-8").splitlines()[0].strip() == "category: none":
                found.append(expected.parent)
        found += sorted(directory.glob("*.log"))
    return found


def junit_xml(results: list[RuleResult], healthy_count: int) -> str:
    """A JUnit XML report: one test case per rule and example."""
    suite = ET.Element("testsuite", name="crashcart rules")
    failures = 0
    for result in results:
        cases = [
            *((p, "fires", None) for p in result.true_positives),
            *((p, "fires", "did not fire") for p in result.false_negatives),
            *((p, "quiet", None) for p in result.true_negatives),
            *((p, "quiet", "fired on a log it must stay quiet on") for p in result.false_positives),
            *((p, "healthy", "fired on a healthy log") for p in result.healthy_false_positives),
        ]
        if not result.healthy_false_positives:
            cases.append((Path(f"{healthy_count} healthy logs"), "healthy", None))
        for path, kind, failure in cases:
            case = ET.SubElement(
                suite, "testcase", classname=result.rule.id, name=f"{kind}: {path}"
            )
            if failure:
                failures += 1
                ET.SubElement(case, "failure", message=failure).text = str(path)
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    return ET.tostring(suite, encoding="unicode")


def rule_source(rule: Rule) -> str:
    """The text of one rule's YAML document, as written in its file."""
    source = rule.source or read_source(Path(rule.path))
    lines = source.lines
    start = rule.line - 1
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("---")), len(lines))
    while start > 0 and lines[start - 1].startswith("#"):
        start -= 1
    return "\n".join(lines[start:end]).rstrip()
