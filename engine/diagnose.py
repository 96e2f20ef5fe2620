"""From findings to diagnoses: facts into the engine, hypotheses out, one diagnosis per category.

:class:`Diagnoser` holds one run: it numbers findings into facts (dropping exact repeats, and
bounding how many facts of a kind a run keeps), asserts them into the rule session and records
each rule that fires as a hypothesis. :meth:`Diagnoser.diagnoses` turns the hypotheses of each
category into one diagnosis (the most confident rule leads with its explanation and fixes; the
other rules that fired are listed as ``also_matched``) and hands them to :mod:`.ranking`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import re2

from ..parsers.extract import Finding
from ..parsers.lines import LogLine
from ..parsers.traceback import frame_file
from . import ranking
from .diagnosis import Diagnosis, ranges
from .durable import EngineError, Firing, RuleSession
from .facts import Fact
from .fixes import fill, render_fix
from .rules import Rule

#: A run keeps at most this many facts of one kind (a log of 10⁶ NCCL WARN lines stays bounded).
MAX_FACTS_PER_KIND = 200
_EVIDENCE_LINES = 12


@dataclass
class Hypothesis:
    """A rule that fired, with every set of facts it fired on."""

    rule: Rule
    matches: list[list[Fact]] = field(default_factory=list)

    @property
    def facts(self) -> list[Fact]:
        """Every matched fact, once, in log order."""
        seen: dict[int, Fact] = {}
        for facts in self.matches:
            for fact in facts:
                seen.setdefault(fact.seq, fact)
        return sorted(seen.values(), key=lambda f: f.seq)

    @property
    def first_seq(self) -> int:
        """The order of its earliest fact."""
        return min(f.seq for f in self.facts)


class Diagnoser:
    """The engine side of one run."""

    def __init__(self, session: RuleSession, sid: str) -> None:
        self.session = session
        self.sid = sid
        self.facts: dict[int, Fact] = {}
        self.hypotheses: dict[str, Hypothesis] = {}
        self.config: dict[str, Any] = {}
        #: Settings the metric lines printed (``lr=0.116``): the current values fixes start from.
        self.printed: dict[str, Any] = {}
        self._seq = 0
        self._signatures: dict[tuple[Any, ...], int] = {}  # -> the seq of the fact kept
        #: seq -> evidence of the same fact read again from another file of the run (torchrun's
        #: --tee console log and the rank's own log): evidence then reads the same whichever
        #: file was read first (the CLI reads in name order, the live UI as bytes arrive).
        self._copies: dict[int, list[LogLine]] = {}
        self._per_kind: Counter[str] = Counter()
        self._per_pattern: Counter[str] = Counter()
        self.dropped = Counter[str]()
        self._closed = False

    def add(self, finding: Finding) -> list[Hypothesis]:
        """Assert one finding; return the hypotheses it created or strengthened."""
        draft = finding.draft
        if draft.kind == "config":
            self.config[draft.fields["key"]] = draft.fields["value"]
        signature = (
            draft.kind,
            finding.rank,
            finding.attempt,
            tuple(sorted(map(str, draft.fields.items()))),
        )
        if signature in self._signatures:
            seq = self._signatures[signature]
            if seq in self.facts and finding.evidence[:1] != self.facts[seq].evidence[:1]:
                copies = self._copies.setdefault(seq, [])
                if len(copies) < _EVIDENCE_LINES:
                    copies.extend(finding.evidence)
            return []  # the same message printed again (logger + traceback, retries)
        if self._per_kind[draft.kind] >= MAX_FACTS_PER_KIND:
            self.dropped[draft.kind] += 1
            return []
        if draft.kind == "line":
            # A rule's unrelated line conditions join as a cross product: each takes only so
            # many lines that their combinations stay bounded (docs/rules.md, Limits).
            pattern = str(draft.fields.get("pattern", ""))
            if self._per_pattern[pattern] >= self.session.line_caps.get(pattern, 1 << 30):
                self.dropped[draft.kind] += 1
                return []
            self._per_pattern[pattern] += 1
        self._per_kind[draft.kind] += 1
        self._seq += 1
        self._signatures[signature] = self._seq
        fact = Fact(
            draft.kind,
            draft.fields,
            finding.evidence,
            self._seq,
            finding.rank,
            finding.attempt,
            finding.progress or 0,
        )
        try:
            firings = self.session.assert_fact(fact.to_engine(self.sid))
        except EngineError:
            self.dropped[f"rejected {draft.kind}"] += 1  # counted in the report, never fatal
            return []
        self.facts[fact.seq] = fact
        return self._record(firings)

    def _record(self, firings: list[Firing]) -> list[Hypothesis]:
        touched = []
        for firing in firings:
            if firing.veto:
                self._withdraw(firing)
                continue
            facts = [self.facts[i] for i in firing.fact_ids if i in self.facts]
            if not facts:
                continue
            hypothesis = self.hypotheses.setdefault(firing.rule.id, Hypothesis(firing.rule))
            hypothesis.matches.append(facts)
            touched.append(hypothesis)
        return touched

    def _withdraw(self, veto: Firing) -> None:
        """Drop the match a veto names: a fact its rule's ``none`` forbids came after it."""
        hypothesis = self.hypotheses.get(veto.rule.id)
        if hypothesis is None:
            return
        vetoed = set(veto.fact_ids)
        hypothesis.matches = [m for m in hypothesis.matches if {f.seq for f in m} != vetoed]
        if not hypothesis.matches:
            del self.hypotheses[veto.rule.id]

    def retract(self, kind: str) -> bool:
        """Withdraw every fact of ``kind`` and the hypotheses built on them (a live suspicion
        that no longer holds, such as a hang whose progress resumed); True if any was held."""
        gone = {seq for seq, fact in self.facts.items() if fact.kind == kind}
        for seq in gone:
            fact = self.facts.pop(seq)
            self.session.retract_fact(fact.to_engine(self.sid))
            self._per_kind[kind] -= 1
            if kind == "line":
                self._per_pattern[str(fact.fields.get("pattern", ""))] -= 1
        for rule_id, hypothesis in list(self.hypotheses.items()):
            hypothesis.matches = [m for m in hypothesis.matches if not gone & {f.seq for f in m}]
            if not hypothesis.matches:
                del self.hypotheses[rule_id]
        self._signatures = {s: q for s, q in self._signatures.items() if s[0] != kind}
        return bool(gone)

    def close(self) -> None:
        """Release the run's facts in the engine, and its session id for a later run."""
        if self._closed:
            return
        self._closed = True
        for fact in self.facts.values():
            self.session.retract_fact(fact.to_engine(self.sid))
        self.session.close_run(self.sid)

    # -- ranking ---------------------------------------------------------------------------

    def diagnoses(self, progress: Mapping[str, int] | None = None) -> list[Diagnosis]:
        """Rank the hypotheses so far; ``progress`` is the metric lines read per source, to
        tell the errors a run survived from those that ended it (see ranking)."""
        progress = progress or {}
        by_category: dict[str, list[Hypothesis]] = {}
        for hypothesis in _best_vocabulary(self.hypotheses.values()):
            by_category.setdefault(hypothesis.rule.category, []).append(hypothesis)
        handled = _handled_regions(self.facts.values())
        frames = _frames_by_message(self.facts.values(), self._copies)
        results = [self._diagnosis(group, handled, frames) for group in by_category.values()]
        if all(fact.attempt == 1 for fact in self.facts.values()):
            for diagnosis in results:
                diagnosis.attempts = []  # one attempt: nothing to tell apart
        ranking.link_causes(results, self._explains)
        ranking.favour_first_failure(results, self.facts.values())
        results = ranking.drop_survived(results, self.facts.values(), progress)
        results = ranking.drop_skipped_nan(results, self.facts.values(), progress)
        results = ranking.drop_covered_vocabulary(results)
        results = ranking.drop_unspoken_vocabulary(results, self.facts.values())
        results += ranking.unrecognised(results, self.facts.values(), progress)
        ranking.unknown_first_failure(results, self.facts.values())
        ranking.follow_handled_exceptions(results)
        return ranking.order(results)

    def _explains(self, rule_id: str) -> list[str]:
        return self.session.rules[rule_id].explains

    def _diagnosis(
        self, group: list[Hypothesis], handled: list[_Region], frames: _Frames
    ) -> Diagnosis:
        group.sort(key=lambda h: (-h.rule.confidence, h.first_seq))
        best = group[0]
        rule = best.rule
        facts = best.matches[0]
        fields = self._fields(rule, facts)
        printed = {**self.printed, **self.config}  # a setting echoed wins over a metric's value
        rendered = [render_fix(spec, fields, printed) for spec in rule.fixes]
        fixes = [fix for fix in rendered if fix is not None]
        all_facts = {f.seq: f for h in group for f in h.facts}
        ranks = sorted({f.rank for f in all_facts.values() if f.rank is not None})
        attempts = sorted({f.attempt for f in all_facts.values()})
        confidence = rule.confidence
        reason = f"rule {rule.id} matched"
        repeats = _distinct_matches(best)
        if repeats > 1:
            confidence = min(0.99, confidence + 0.02 * min(repeats - 1, 5))
            reason += f" {repeats} times"
        if ranks and len(ranks) > 1:
            reason += f" on ranks {ranges(ranks)}"
        if rule.tier == "vocabulary":
            words = _words(rule, facts)
            reason = (
                f"vocabulary rule {rule.id}: the message names {words}"
                if words
                else f"vocabulary rule {rule.id} matched (ranked below specific rules)"
            )
        if len(group) > 1:
            reason += f"; {len(group) - 1} more rule(s) of this category agree"
            confidence = min(0.99, confidence + 0.03)
        return Diagnosis(
            rule=rule.id,
            category=rule.category,
            title=rule.title,
            confidence=confidence,
            summary=fill(rule.summary, fields),
            evidence=_evidence(best, frames, self._copies),
            fixes=fixes,
            ranks=ranks,
            reason=reason,
            also_matched=[h.rule.id for h in group[1:]],
            references=rule.references,
            probe_name=rule.probe,
            first_seq=best.first_seq,
            attempts=attempts,
            fields=fields,
            interrupted=_interrupted(all_facts.values(), handled),
            tier=rule.tier,
            covers={(line.path, line.lineno) for f in all_facts.values() for line in f.evidence},
        )

    def _fields(self, rule: Rule, facts: list[Fact]) -> dict[str, Any]:
        """Template fields: each fact's fields, flat and under its condition name, plus config."""
        fields: dict[str, Any] = {}
        names = [c.name for c in [*rule.all, *rule.any]]
        by_name = dict(zip(names, facts, strict=False))
        for fact in reversed(facts):
            fields.update(fact.fields)
            if fact.rank is not None:  # an unknown rank is left out: "(rank ?)" tells nothing
                fields["rank"] = fact.rank
            fields["line"] = fact.line.lineno
        for name, fact in by_name.items():
            for key, value in fact.fields.items():
                fields[f"{name}.{key}"] = value
        for key, value in self.config.items():
            fields[f"config.{key}"] = value
        return fields


def _best_vocabulary(hypotheses: Iterable[Hypothesis]) -> list[Hypothesis]:
    """Each message read by its best vocabulary rule only: the words of an NCCL error that also
    says "invalid usage" make it an NCCL error, not a configuration error as well."""
    hypotheses = list(hypotheses)
    best: dict[int, float] = {}
    for hypothesis in hypotheses:
        if hypothesis.rule.tier == "vocabulary":
            for fact in hypothesis.facts:
                best[fact.seq] = max(best.get(fact.seq, 0.0), hypothesis.rule.confidence)
    kept = []
    for hypothesis in hypotheses:
        if hypothesis.rule.tier == "vocabulary":
            confidence = hypothesis.rule.confidence
            matches = [m for m in hypothesis.matches if all(best[f.seq] <= confidence for f in m)]
            if not matches:
                continue
            hypothesis = Hypothesis(hypothesis.rule, matches)
        kept.append(hypothesis)
    return kept


#: Words a vocabulary rule's reason quotes at most.
_MAX_WORDS = 6


def _words(rule: Rule, facts: list[Fact]) -> str:
    """The words of the matched facts that a vocabulary rule's ``matches`` tests found; empty
    for a rule that reads no words (a log that ends on NCCL's set-up)."""
    words: dict[str, None] = {}
    for condition, fact in zip([*rule.all, *rule.any], facts, strict=False):
        for name, test in condition.where.items():
            if not isinstance(test, dict) or "matches" not in test:
                continue
            text = str(fact.fields.get(name, ""))
            for match in re2.finditer(test["matches"], text):
                words.setdefault(f'"{match.group(0).strip()[:40]}"')
                if len(words) >= _MAX_WORDS:
                    break
    return ", ".join(words)


#: (path, line of an exception's message) -> the frame line its traceback's evidence names.
_Frames = dict[tuple[str, int], list[LogLine]]


def _frames_by_message(
    facts: Iterable[Fact], copies: Mapping[int, list[LogLine]] | None = None
) -> _Frames:
    """The frame (the user's own, see parsers.extract) of each exception's traceback, by the
    lines of its message: a rule that matched the message line shows where it was raised."""
    found: _Frames = {}
    for fact in facts:
        if fact.kind != "exception":
            continue
        for evidence in (fact.evidence, (copies or {}).get(fact.seq, [])):
            frames = [line for line in evidence if frame_file(line.text) is not None]
            for line in evidence:
                if frames and line not in frames:
                    found.setdefault((line.path, line.lineno), frames)
    return found


def _evidence(
    hypothesis: Hypothesis,
    frames: _Frames | None = None,
    copies: Mapping[int, list[LogLine]] | None = None,
) -> list[LogLine]:
    lines: dict[tuple[str, int], LogLine] = {}
    for fact in hypothesis.facts:
        for line in [*fact.evidence, *(copies or {}).get(fact.seq, [])]:
            lines.setdefault((line.path, line.lineno), line)
    for key in list(lines):
        for frame in (frames or {}).get(key, []):
            lines.setdefault((frame.path, frame.lineno), frame)
    ordered = sorted(lines.values(), key=lambda line: (line.path, line.lineno))
    # One event, two files: torchrun's --tee copies each rank's lines into the console log, and
    # a run directory holds both. A line is listed once, from the first file by name.
    first_path: dict[tuple[int | None, str], str] = {}
    kept = []
    for line in ordered:
        key = (line.rank, line.text.strip())
        if first_path.setdefault(key, line.path) == line.path:
            kept.append(line)
    return kept[:_EVIDENCE_LINES]


def _distinct_matches(hypothesis: Hypothesis) -> int:
    """How many times the rule matched, an event read from two files of the run counted once."""
    return len(
        {
            tuple((f.kind, f.rank, f.line.text.strip()) for f in match)
            for match in hypothesis.matches
        }
    )


#: (path, interrupted line, first line, last line): the lines of an exception raised while
#: handling the exception at the interrupted line.
_Region = tuple[str, int, int, int]


def _handled_regions(facts: Iterable[Fact]) -> list[_Region]:
    """Where the log shows exceptions raised while handling another (their whole traceback)."""
    return [
        (
            fact.line.path,
            fact.fields["while_handling_line"],
            fact.evidence[0].lineno,
            fact.line.lineno,
        )
        for fact in facts
        if fact.kind == "exception" and "while_handling_line" in fact.fields
    ]


def _interrupted(facts: Iterable[Fact], handled: list[_Region]) -> list[tuple[str, int]]:
    """Where the exceptions are whose handling raised the errors behind these facts, if every
    one of these facts is such a secondary error; else ``[]``."""
    found = set()
    for fact in facts:
        if fact.kind == "config":
            continue
        line = fact.line
        where = [
            (path, interrupted)
            for path, interrupted, first, last in handled
            if path == line.path and interrupted < line.lineno <= last and first <= line.lineno
        ]
        if not where:
            return []
        found.add(where[0])
    return sorted(found)
