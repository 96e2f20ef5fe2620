"""The report as SARIF 2.1.0, the format code-scanning tools read (GitHub, GitLab, VS Code).

One run whose ``tool.driver.rules`` is the rule base; one result per diagnosis, with its rule
id, a level (a root cause is an ``error``, a symptom another diagnosis explains a ``warning``),
the title and summary as the message, and the evidence lines as locations in the log files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

from . import __version__
from .analyzer import Report, RuleBase
from .engine.diagnosis import Diagnosis
from .engine.rules import Rule
from .parsers.lines import LogLine

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


def _descriptor(rule: Rule) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": rule.id,
        "shortDescription": {"text": rule.title},
        "defaultConfiguration": {"level": "error"},
        "properties": {"category": rule.category, "confidence": rule.confidence},
    }
    if rule.references:
        entry["helpUri"] = rule.references[0]
    return entry


def _uri(path: str) -> str:
    """A file path as a URI reference (relative paths stay relative to the working folder)."""
    return quote(Path(path).as_posix())


def _location(line: LogLine) -> dict[str, Any] | None:
    """A physical location in the log, or None for input with no file (stdin)."""
    if not line.path or line.path in ("-", "<stdin>"):
        return None
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(line.path)},
            "region": {"startLine": max(1, line.lineno), "snippet": {"text": line.text}},
        }
    }


def _result(diagnosis: Diagnosis, index: int) -> dict[str, Any]:
    locations = [loc for loc in map(_location, diagnosis.evidence) if loc]
    result: dict[str, Any] = {
        "ruleId": diagnosis.rule,
        "ruleIndex": index,
        "level": "warning" if diagnosis.explained_by else "error",
        "message": {"text": f"{diagnosis.title}: {diagnosis.summary}"},
        "locations": locations[:1],
        "properties": {
            "category": diagnosis.category,
            "confidence": round(diagnosis.confidence, 3),
            "fixes": [fix["title"] for fix in diagnosis.fixes],
        },
    }
    if len(locations) > 1:
        result["relatedLocations"] = [
            {"id": number, **loc} for number, loc in enumerate(locations[1:], 1)
        ]
    if diagnosis.fingerprint:
        result["partialFingerprints"] = {"crashcart/v1": diagnosis.fingerprint}
    return result


def to_sarif(report: Report, rulebase: RuleBase, top: int | None = None) -> dict[str, Any]:
    """The SARIF 2.1.0 log of one analysis: every rule of the rule base, then the results."""
    rules = [_descriptor(rule) for rule in sorted(rulebase.rules, key=lambda r: r.id)]
    index = {entry["id"]: number for number, entry in enumerate(rules)}
    diagnoses = report.diagnoses[:top] if top else report.diagnoses
    for diagnosis in diagnoses:
        if diagnosis.rule not in index:  # e.g. "unrecognised": no rule file behind it
            index[diagnosis.rule] = len(rules)
            rules.append(
                {
                    "id": diagnosis.rule,
                    "shortDescription": {"text": diagnosis.title},
                    "properties": {"category": diagnosis.category},
                }
            )
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "crashcart",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "artifacts": [
                    {"location": {"uri": _uri(str(item["path"]))}}
                    for item in report.inputs
                    if item.get("path") not in (None, "-", "<stdin>")
                ],
                "results": [_result(d, index[d.rule]) for d in diagnoses],
            }
        ],
    }
