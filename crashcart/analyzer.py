"""The pipeline, end to end and incremental: bytes in, ranked diagnoses out.

    >>> from crashcart import analyze
    >>> report = analyze("rules/examples/cuda_oom/fragmentation.log")     # doctest: +SKIP
    >>> report.diagnoses[0].category                                       # doctest: +SKIP
    'cuda_oom'

:class:`Analyzer` is one run fed chunk by chunk; ``analyze`` is that run taken to the end of
its input, and the live modes feed the same object as bytes arrive.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .engine.diagnose import Diagnoser, Hypothesis
from .engine.diagnosis import Diagnosis
from .engine.durable import RuleSession, line_pattern_id
from .engine.rulecache import load_rules_cached
from .engine.rules import Rule, RuleError, RuleLoadError
from .parsers.base import Draft, ParserErrors
from .parsers.extract import Extractor, Finding, compile_rule_patterns
from .parsers.prefilter import PatternError, Prefilter
from .parsers.sources import Source, resolve

SCHEMA_VERSION = 1

#: One path, or several (any iterable of them).
PathArg = str | Path
PathsArg = PathArg | Iterable[PathArg]


def as_paths(paths: PathsArg) -> list[str]:
    """``paths`` as a list of path strings: a single ``str`` or ``Path`` is one path (a string
    is an iterable of its characters, and ``"/"`` among them would read the whole disk)."""
    if isinstance(paths, str | Path):
        return [str(paths)]
    return [str(path) for path in paths]


class RuleBase:
    """Loaded rules, compiled once into a durable-rules host, shared by the runs of a process."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules
        self.session = RuleSession(rules)
        self.line_patterns = {
            line_pattern_id(rule, condition): condition.regex
            for rule in rules
            for condition in rule.conditions
            if condition.fact == "line" and condition.regex
        }
        # Compiled here, once, so that a pattern set the prefilter refuses is a rule error the
        # command reports and exits on, not a failure in the middle of an analysis.
        try:
            self.rule_patterns = compile_rule_patterns(self.line_patterns)
        except PatternError as error:
            errors = [problem for rule in rules for problem in prefilter_errors(rule)]
            raise RuleLoadError(
                errors
                or [
                    RuleError(
                        rules[0].mark,
                        f"the rules' patterns together are refused by the prefilter: {error}",
                        "fewer or simpler line patterns",
                    )
                ]
            ) from None

    @classmethod
    def load(cls, dirs: PathsArg = (), disable: str | Iterable[str] = ()) -> RuleBase:
        """Load the shipped rules plus ``dirs``, one rule directory or file or several, ``str``
        or ``Path`` (raises ``RuleLoadError`` with every problem); ``disable``: rule ids."""
        disabled = (disable,) if isinstance(disable, str) else tuple(disable)
        # Parsed and validated once, then read from the on-disk cache (engine/rulecache.py).
        return cls(load_rules_cached([Path(path) for path in as_paths(dirs)], disabled))


def prefilter_errors(rule: Rule) -> list[RuleError]:
    """The rule's line patterns that the prefilter's engines refuse (Hyperscan, where present,
    has limits of its own that RE2 has not)."""
    errors = []
    for condition in rule.conditions:
        if condition.regex is None:
            continue
        try:
            Prefilter({"p": condition.regex}, rare=["p"])  # as the rules' prefilter has it
        except PatternError as error:
            errors.append(
                RuleError(
                    rule.mark,
                    f"pattern of {rule.id} is rejected by the prefilter: {error}",
                )
            )
    return errors


_default: RuleBase | None = None


def default_rulebase() -> RuleBase:
    """The shipped rules, loaded on first use."""
    global _default
    if _default is None:
        _default = RuleBase.load()
    return _default


@dataclass
class Report:
    """What one run's analysis found, and what was read to find it."""

    inputs: list[dict[str, Any]]
    stats: dict[str, Any]
    diagnoses: list[Diagnosis]
    config: dict[str, Any]
    facts: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        """The versioned JSON document of DESIGN.md."""
        return {
            "schema": SCHEMA_VERSION,
            "inputs": self.inputs,
            "stats": self.stats,
            "config": self.config,
            "diagnoses": [d.to_json() for d in self.diagnoses],
        }


class Analyzer:
    """One run's pipeline: feed it bytes per source, ask for diagnoses at any time."""

    def __init__(self, rulebase: RuleBase | None = None) -> None:
        self.rulebase = rulebase or default_rulebase()
        self.extractor = Extractor(self.rulebase.rule_patterns)
        self.diagnoser = Diagnoser(self.rulebase.session, self.rulebase.session.open_run())
        self.started = time.monotonic()

    def feed(self, source: str, data: bytes, default_rank: int | None = None) -> list[Hypothesis]:
        """Take the next bytes of ``source``; return hypotheses that this evidence completed."""
        return self._add(self.extractor.feed(source, data, default_rank))

    def finish(self, source: str | None = None) -> list[Hypothesis]:
        """End of input for ``source`` (or all sources): flush what was held back."""
        return self._add(self.extractor.finish(source))

    def conclude(self) -> list[Hypothesis]:
        """End of the run's input (or a live checkpoint): run the trend detectors."""
        return self._add(self.extractor.conclude())

    def flush_blocks(self, source: str) -> list[Hypothesis]:
        """Close open multi-line blocks of ``source`` now (the live evidence bound passed)."""
        return self._add(self.extractor.flush_blocks(source))

    def _add(self, findings: list[Finding]) -> list[Hypothesis]:
        touched: list[Hypothesis] = []
        progress = self.extractor.series.points_by_source
        for finding in findings:
            if finding.progress is None and finding.evidence:  # found at the end of its file
                finding.progress = progress[finding.evidence[-1].path]
            try:
                touched.extend(self.diagnoser.add(finding))
            except Exception as error:  # one fact must not end the run: counted and reported
                where = finding.evidence[0].location() if finding.evidence else ""
                self.extractor.errors.record(f"engine ({finding.draft.kind})", error, where)
        return touched

    @property
    def errors(self) -> ParserErrors:
        """What a parser or the engine raised on this run's lines (contained and counted)."""
        return self.extractor.errors

    def diagnoses(self) -> list[Diagnosis]:
        """The ranked diagnoses so far."""
        self.diagnoser.printed = dict(self.extractor.series.latest)
        return self.diagnoser.diagnoses(self.extractor.series.points_by_source)

    def report(self) -> Report:
        """A report of everything read so far."""
        per_source = self.extractor.stats()
        inputs = [
            {"path": name, "bytes": s.bytes, "lines": s.lines, "truncated_lines": s.truncated_lines}
            for name, s in per_source.items()
        ]
        stats = {
            "bytes": sum(s.bytes for s in per_source.values()),
            "lines": sum(s.lines for s in per_source.values()),
            "facts": len(self.diagnoser.facts),
            "facts_dropped": sum(self.diagnoser.dropped.values()),
            "prefilter": self.extractor.prefilter.engine,
            # Errors a parser raised on a line, contained: the line was skipped, nothing else.
            "parse_errors": self.extractor.errors.count,
            "seconds": round(time.monotonic() - self.started, 3),
        }
        facts = [
            {**fact.to_engine("")} | {"source": fact.line.path}
            for fact in self.diagnoser.facts.values()
        ]
        for fact in facts:
            del fact["sid"], fact["id"]
        if self.extractor.errors.count:
            stats["parse_error_examples"] = list(self.extractor.errors.examples)
        return Report(inputs, stats, self.diagnoses(), dict(self.diagnoser.config), facts)

    def probe(self, report: Report) -> Report:
        """Run the probes of the report's top diagnoses; their verdicts become ``probe`` facts
        of the run and move the diagnoses up (confirmed) or down (refuted)."""
        from .engine.ranking import order
        from .probing import probe_diagnoses

        results = probe_diagnoses(report.diagnoses, report.config)
        for result, diagnosis in zip(
            results, [d for d in report.diagnoses if d.probe], strict=False
        ):
            self.record_probe(diagnosis, result)
        report.diagnoses = order(report.diagnoses)
        return report

    def record_probe(self, diagnosis: Diagnosis, result: dict[str, Any]) -> None:
        """Feed a probe's verdict on ``diagnosis`` back as a ``probe`` fact of the run."""
        fields = {key: result.get(key, "") for key in ("name", "status", "rule", "summary")}
        evidence = diagnosis.evidence[-1:]
        if evidence:
            self.diagnoser.add(Finding(Draft("probe", fields), evidence, None))

    def close(self) -> None:
        """Release the run's state in the rules engine."""
        self.diagnoser.close()


def errors_warning(count: int, examples: list[str]) -> str:
    """The one stderr line about ``count`` contained errors (see :class:`ParserErrors`)."""
    first = examples[0] if examples else "?"
    return (
        f"crashcart: warning: {count} error(s) while reading log lines were skipped"
        f" (first: {first}); the rest of the analysis stands. Please report this as a bug."
    )


def analyze_sources(
    sources: list[Source], rulebase: RuleBase | None = None, *, probe: bool = False
) -> Report:
    """Read every source to its end as one run and report; ``probe`` runs the top diagnoses'
    probes and feeds their verdicts back (see :mod:`crashcart.probing`)."""
    analyzer = Analyzer(rulebase)
    try:
        for source in sources:
            for chunk in source.chunks():
                analyzer.feed(source.name, chunk, source.default_rank)
            analyzer.finish(source.name)
            if source.name not in analyzer.extractor.stats():
                analyzer.feed(source.name, b"", source.default_rank)  # empty input still counts
        analyzer.conclude()
        report = analyzer.report()
        if probe:
            report = analyzer.probe(report)
        return report
    finally:
        analyzer.close()


def analyze(paths: PathsArg, rulebase: RuleBase | None = None) -> Report:
    """Analyse one path or several as one run: files, gzip files, run directories, or ``-``
    (stdin); each a ``str`` or a ``Path``. Raises ``InputError`` for a path that cannot be read."""
    sources = [source for path in as_paths(paths) for source in resolve(path)]
    return analyze_sources(sources, rulebase)
