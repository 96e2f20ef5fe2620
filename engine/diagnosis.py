"""The diagnosis: what the report, the JSON document and the TUI show for one cause."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..parsers.lines import LogLine


@dataclass
class Diagnosis:
    """One ranked answer: a category, its best rule, the evidence and the fixes."""

    rule: str
    category: str
    title: str
    confidence: float
    summary: str
    evidence: list[LogLine]
    fixes: list[dict[str, Any]]
    ranks: list[int]
    reason: str
    explains: list[str] = field(default_factory=list)
    explained_by: str | None = None
    also_matched: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    probe_name: str | None = None
    probe: dict[str, Any] | None = None
    fingerprint: str | None = None
    fields: dict[str, Any] = field(default_factory=dict, repr=False)  # of the facts it matched
    attempts: list[int] = field(default_factory=list)
    first_seq: int = 0
    #: (path, line) of the exceptions this one's errors were raised while handling, when every
    #: fact behind it is such a secondary failure (see ranking.follow_handled_exceptions).
    interrupted: list[tuple[str, int]] = field(default_factory=list, repr=False)
    #: The tier of the rule behind it: ``vocabulary`` diagnoses rank below ``specific`` ones.
    tier: str = "specific"
    #: (path, line) of every fact any rule of its category matched, shown or not.
    covers: set[tuple[str, int]] = field(default_factory=set, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The diagnosis as the JSON report's ``diagnoses`` entries (DESIGN.md contract)."""
        data: dict[str, Any] = {
            "rule": self.rule,
            "category": self.category,
            "title": self.title,
            "confidence": round(self.confidence, 3),
            "reason": self.reason,
            "summary": self.summary,
            "evidence": [_evidence_json(line) for line in self.evidence],
            "fixes": self.fixes,
            "explains": self.explains,
            "ranks": self.ranks,
        }
        if self.explained_by:
            data["explained_by"] = self.explained_by
        if self.also_matched:
            data["also_matched"] = self.also_matched
        if self.references:
            data["references"] = self.references
        if self.probe is not None:
            data["probe"] = self.probe
        if self.fingerprint:
            data["fingerprint"] = self.fingerprint
        if self.attempts:
            data["attempts"] = self.attempts
        return data


def _evidence_json(line: LogLine) -> dict[str, Any]:
    item: dict[str, Any] = {"path": line.path, "line": line.lineno, "text": line.text}
    if line.rank is not None:
        item["rank"] = line.rank
    if line.time is not None:
        item["time"] = line.time
    return item


def ranges(ranks: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    parts: list[str] = []
    start = prev = ranks[0]
    for rank in [*ranks[1:], None]:
        if rank is not None and rank == prev + 1:
            prev = rank
            continue
        parts.append(f"{start}-{prev}" if prev != start else f"{start}")
        if rank is not None:
            start = prev = rank
    return ", ".join(parts)
