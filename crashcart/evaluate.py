"""``crashcart eval``: accuracy of the analyzer on a corpus of cases with expected answers.

A case is a directory with log file(s) and ``expected.yaml`` (see corpus/README.md). A case is a
top-1 hit when the first diagnosis has the expected category (or an accepted alternative),
a top-3 hit when one of the first three has; a healthy case (``category: none``) is a false
alarm when any diagnosis is reported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .analyzer import RuleBase, analyze

HEALTHY = "none"


class CorpusError(Exception):
    """A corpus directory or case that cannot be read."""


@dataclass
class CaseResult:
    """One case: what was expected and what came out."""

    name: str
    expected: str
    accepted: set[str]
    predicted: list[str]
    difficulty: str = ""

    @property
    def top1(self) -> bool:
        """The first diagnosis is right (for a healthy case: there is none)."""
        if self.expected == HEALTHY:
            return not self.predicted
        return bool(self.predicted) and self.predicted[0] in self.accepted

    @property
    def top3(self) -> bool:
        """One of the first three diagnoses is right."""
        if self.expected == HEALTHY:
            return not self.predicted
        return any(p in self.accepted for p in self.predicted[:3])


@dataclass
class CategoryScore:
    """Accuracy for one expected category."""

    category: str
    cases: int = 0
    top1: int = 0
    top3: int = 0
    misses: list[CaseResult] = field(default_factory=list)


def load_cases(corpus: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every case directory under ``corpus`` with its parsed ``expected.yaml``."""
    if not corpus.is_dir():
        raise CorpusError(f"no such corpus directory: {corpus}")
    cases = []
    # Cases may be grouped in folders (corpus/batch-02/...): one batch is scored on its own by
    # naming its folder, the whole corpus by naming the corpus.
    for expected in sorted(corpus.rglob("expected.yaml")):
        try:
            data = yaml.safe_load(expected.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as error:
            raise CorpusError(f"{expected}: {error}") from None
        if not isinstance(data, dict) or "category" not in data:
            raise CorpusError(f"{expected}: needs at least a 'category'")
        cases.append((expected.parent, data))
    if not cases:
        raise CorpusError(f"no cases (*/expected.yaml) in {corpus}")
    return cases


def evaluate(corpus: Path, rulebase: RuleBase | None = None) -> list[CaseResult]:
    """Analyse every case of a corpus."""
    results = []
    for directory, expected in load_cases(corpus):
        report = analyze([directory], rulebase)
        category = expected["category"]
        results.append(
            CaseResult(
                name=directory.relative_to(corpus).as_posix(),
                expected=category,
                accepted={category, *expected.get("alternatives", [])},
                predicted=[d.category for d in report.diagnoses],
                difficulty=str(expected.get("difficulty", "")),
            )
        )
    return results


def score(results: Iterable[CaseResult]) -> dict[str, CategoryScore]:
    """Per-category scores, in category order, healthy (``none``) last."""
    scores: dict[str, CategoryScore] = {}
    for result in results:
        entry = scores.setdefault(result.expected, CategoryScore(result.expected))
        entry.cases += 1
        entry.top1 += result.top1
        entry.top3 += result.top3
        if not result.top1:
            entry.misses.append(result)
    return dict(sorted(scores.items(), key=lambda item: (item[0] == HEALTHY, item[0])))


def summary(results: list[CaseResult]) -> dict[str, Any]:
    """Totals over the failure cases, and false alarms over the healthy ones."""
    failures = [r for r in results if r.expected != HEALTHY]
    healthy = [r for r in results if r.expected == HEALTHY]
    hard = [r for r in failures if r.difficulty == "hard"]
    return {
        "cases": len(results),
        "failure_cases": len(failures),
        "healthy_cases": len(healthy),
        "top1": _ratio(sum(r.top1 for r in failures), len(failures)),
        "top3": _ratio(sum(r.top3 for r in failures), len(failures)),
        "hard_top1": _ratio(sum(r.top1 for r in hard), len(hard)),
        # A failed run that got no diagnosis at all: worse than a wrong one, it looks healthy.
        "silent_cases": sum(not r.predicted for r in failures),
        "silent": _ratio(sum(not r.predicted for r in failures), len(failures))
        if failures
        else 0.0,
        "false_alarms": sum(not r.top1 for r in healthy),
    }


def _ratio(hits: int, total: int) -> float:
    return round(hits / total, 4) if total else 1.0


def to_json(results: list[CaseResult]) -> dict[str, Any]:
    """The ``--json`` document."""
    return {
        "summary": summary(results),
        "categories": {
            name: {
                "cases": s.cases,
                "top1": _ratio(s.top1, s.cases),
                "top3": _ratio(s.top3, s.cases),
                "misses": [{"case": m.name, "predicted": m.predicted} for m in s.misses],
            }
            for name, s in score(results).items()
        },
    }


def markdown_table(results: list[CaseResult]) -> str:
    """The accuracy table, as the README shows it."""
    lines = ["| category | cases | top-1 | top-3 |", "|---|---:|---:|---:|"]
    for name, s in score(results).items():
        if name == HEALTHY:
            continue
        lines.append(f"| {name} | {s.cases} | {s.top1 / s.cases:.2f} | {s.top3 / s.cases:.2f} |")
    totals = summary(results)
    lines.append(
        f"| **all failures** | {totals['failure_cases']} | {totals['top1']:.2f} | {totals['top3']:.2f} |"
    )
    lines.append(
        f"| healthy runs (false alarms) | {totals['healthy_cases']} | "
        f"{totals['false_alarms']} | {totals['false_alarms']} |"
    )
    return "\n".join(lines) + "\n"
