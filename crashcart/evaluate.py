"""``crashcart eval``: accuracy of the analyzer on a corpus of cases with expected answers.

A case is a directory with log file(s) and ``expected.yaml`` (see corpus/README.md). A case is a
top-1 hit when the first diagnosis has the expected category (or an accepted alternative),
a top-3 hit when one of the first three has; a healthy case (``category: none``) is a false
alarm when any diagnosis is reported.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .analyzer import Analyzer, RuleBase, analyze, default_rulebase

HEALTHY = "none"
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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
            # The C parser where PyYAML has it: 782 cases took 0.7 s with the Python one, time
            # the workers of a parallel run would wait for.
            data = yaml.load(expected.read_text(encoding="utf-8"), Loader=_SafeLoader)
        except (OSError, yaml.YAMLError) as error:
            raise CorpusError(f"{expected}: {error}") from None
        if not isinstance(data, dict) or "category" not in data:
            raise CorpusError(f"{expected}: needs at least a 'category'")
        cases.append((expected.parent, data))
    if not cases:
        raise CorpusError(f"no cases (*/expected.yaml) in {corpus}")
    return cases


def default_jobs() -> int:
    """The cores this process may run on (``--jobs``' default)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def evaluate(corpus: Path, rulebase: RuleBase | None = None, jobs: int = 1) -> list[CaseResult]:
    """Analyse every case of a corpus, in ``jobs`` processes at once (1: in this one).

    The rule base is loaded once, here, and the worker processes are forked from this one with
    it (and the prefilters) already compiled; results come back in case order, the same as
    a serial run's. Where processes cannot be forked (Windows), cases are analysed serially.
    """
    cases = load_cases(corpus)
    rulebase = rulebase or default_rulebase()
    jobs = max(1, min(jobs, len(cases)))
    directories = [directory for directory, _ in cases]
    if jobs == 1 or "fork" not in multiprocessing.get_all_start_methods():
        predictions = [_predict(directory, rulebase) for directory in directories]
    else:
        Analyzer(rulebase).close()  # compiles the prefilters once, before the fork shares them
        context = multiprocessing.get_context("fork")
        # Forked, the workers get the rule base by inheritance: initargs are not pickled.
        with context.Pool(jobs, initializer=_adopt, initargs=(rulebase,)) as pool:
            # Small chunks: case sizes vary a lot, and a worker left with a long tail of big
            # cases would leave the other cores idle.
            predictions = pool.map(_predict_shared, directories, chunksize=4)
    results = []
    for (directory, expected), predicted in zip(cases, predictions, strict=True):
        category = expected["category"]
        results.append(
            CaseResult(
                name=directory.relative_to(corpus).as_posix(),
                expected=category,
                accepted={category, *expected.get("alternatives", [])},
                predicted=predicted,
                difficulty=str(expected.get("difficulty", "")),
            )
        )
    return results


def _predict(directory: Path, rulebase: RuleBase) -> list[str]:
    """The categories of one case's diagnoses, best first."""
    return [d.category for d in analyze([directory], rulebase).diagnoses]


#: The rule base of a worker process, inherited from the parent at the fork.
_worker_rulebase: RuleBase | None = None


def _adopt(rulebase: RuleBase) -> None:
    global _worker_rulebase
    _worker_rulebase = rulebase


def _predict_shared(directory: Path) -> list[str]:
    assert _worker_rulebase is not None, "a worker runs after _adopt"
    return _predict(directory, _worker_rulebase)


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
