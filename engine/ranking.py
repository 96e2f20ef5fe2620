"""Ranking diagnoses like an expert: causes above symptoms, the first failure first.

The steps, applied to one diagnosis per category:

1. ``explains``: a diagnosis whose rule explains another's category is its cause; the symptom
   loses confidence and moves below (an OOM on rank 3 explains the NCCL timeouts of 0-2).
2. First failure: torchrun's "Root Cause (first observed failure)" names a rank; a diagnosis with
   evidence on that rank is the likelier cause and gains a little.
3. Unrecognised failures: an exception that ended the run and that no rule explains is still
   reported, with a stable fingerprint to search for, below every known cause. An error raised
   while handling an exception is a symptom of that exception's diagnosis, known or not.
4. Order: causes, then symptoms; by confidence; ties to the earliest evidence.
"""

from __future__ import annotations

import hashlib
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..parsers.error_lines import FAILURE_SIGNATURES, SIGNATURE_NAMES
from .diagnosis import Diagnosis
from .facts import Fact

SYMPTOM_FACTOR = 0.6
FIRST_FAILURE_BONUS = 0.05
UNRECOGNISED_CONFIDENCE = 0.3
#: Metric lines a file must log after an error for the run to have survived it.
SURVIVED_AFTER = 5
#: Categories that a run logs through (no traceback ends them): never "survived".
_GOES_ON_LOGGING = {
    "nan_loss",
    "gradient_explosion",
    "loss_plateau",
    "slow_training",
    "memory_leak",
    "overfitting",
    "hang",
}
#: Trends of a run that still goes on: never the reason a rank failed first.
_TRENDS = {"loss_plateau", "slow_training", "memory_leak", "overfitting"}
#: Exceptions that say how the run ended rather than why.
_NOT_A_CAUSE = {"ChildFailedError", "KeyboardInterrupt", "SystemExit", "SignalException"}
_VOLATILE = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?|'[^']*'|\"[^\"]*\"|/[\w./-]+")


def mark_symptom(symptom: Diagnosis, cause: Diagnosis, why: str) -> None:
    """Rank ``symptom`` below ``cause``, which explains it, saying ``why``."""
    symptom.explained_by = cause.category
    symptom.confidence *= SYMPTOM_FACTOR
    symptom.reason += f"; {why}"
    cause.explains.append(symptom.category)


def link_causes(results: list[Diagnosis], explains: Callable[[str], list[str]]) -> None:
    """Mark symptoms ``explained_by`` their cause (step 1)."""
    by_category = {d.category: d for d in results}
    for cause in sorted(results, key=lambda d: (-d.confidence, d.first_seq)):
        if cause.explained_by:
            continue
        for symptom_category in explains(cause.rule):
            symptom = by_category.get(symptom_category)
            if symptom is None or symptom is cause or symptom.explained_by:
                continue
            if cause.category in explains(symptom.rule) and symptom.first_seq < cause.first_seq:
                continue  # each explains the other: the one seen first is the cause
            mark_symptom(symptom, cause, f"a symptom of {cause.category}, which explains it")


def favour_first_failure(results: list[Diagnosis], facts: Iterable[Fact]) -> None:
    """Raise the diagnoses on the rank torchrun saw fail first (step 2)."""
    first = {
        f.fields.get("rank", f.rank)
        for f in facts
        if f.kind == "process_exit" and f.fields.get("root_cause")
    } - {None}
    for diagnosis in results:
        if diagnosis.category in _TRENDS:
            continue  # a slow or flat run is not how a rank failed
        if first & set(diagnosis.ranks) and not diagnosis.explained_by:
            diagnosis.confidence = min(0.99, diagnosis.confidence + FIRST_FAILURE_BONUS)
            ranks = ", ".join(map(str, sorted(first)))
            diagnosis.reason += f"; rank {ranks} failed first (torchrun's first observed failure)"


def fingerprint(exception_type: str, message: str) -> str:
    """A stable id for an error: its type and message with numbers, paths and quotes blanked."""
    normalised = _VOLATILE.sub("_", message.split("\n", 1)[0])[:300]
    return hashlib.sha1(f"{exception_type}:{normalised}".encode()).hexdigest()[:12]


def survived(fact: Fact, progress: Mapping[str, int], after: int = SURVIVED_AFTER) -> bool:
    """Whether the fact's file logged ``after`` metric lines or more after it (training went
    on: the error was handled)."""
    return progress.get(fact.line.path, 0) - fact.progress >= after


def drop_survived(
    results: list[Diagnosis], facts: Iterable[Fact], progress: Mapping[str, int]
) -> list[Diagnosis]:
    """Leave out the errors a run survived (step 3a): a traceback logged and handled (a corrupt
    record skipped with ``logging.exception``) after which the same file logged training
    progress for a while, in a run that no later exception ended. When one did, the survived
    errors stay: a fallback taken after an ImportError can be what failed later. Trends and
    NaN are kept: a run goes on logging through those."""
    facts = list(facts)
    if any(
        fact.kind == "exception"
        and fact.fields.get("type") not in _NOT_A_CAUSE
        and not survived(fact, progress, after=1)
        for fact in facts
    ):
        return results
    handled = {
        (line.path, line.lineno)
        for fact in facts
        if fact.kind == "exception" and survived(fact, progress)
        for line in fact.evidence
    }
    return [
        d
        for d in results
        if d.category in _GOES_ON_LOGGING
        or not d.evidence
        or not all((line.path, line.lineno) in handled for line in d.evidence)
    ]


def drop_skipped_nan(
    results: list[Diagnosis], facts: Iterable[Fact], progress: Mapping[str, int]
) -> list[Diagnosis]:
    """Leave out what rests only on a non-finite value the run went past: one NaN (a skipped
    step: fp16's scaler, a bad batch) that never persisted, after which the same file logged
    ``SURVIVED_AFTER`` metric lines or more. Live, it shows until those lines arrive."""
    facts = list(facts)
    persisted = {
        (fact.line.path, fact.fields.get("metric"))
        for fact in facts
        if fact.kind == "nonfinite_metric" and fact.fields.get("persisted")
    }
    skipped = {
        (line.path, line.lineno)
        for fact in facts
        if fact.kind == "nonfinite_metric"
        and (fact.line.path, fact.fields.get("metric")) not in persisted
        and survived(fact, progress)
        for line in fact.evidence
    }
    if not skipped:
        return results
    return [
        d
        for d in results
        if not d.evidence or not all((line.path, line.lineno) in skipped for line in d.evidence)
    ]


#: Facts that show a failure without an exception of their own (a CUDA or NCCL error line, a
#: signal, an exit code): reported as unrecognised only when nothing else in the run is, so
#: that a run that printed one never goes undiagnosed.
_WEAK_KINDS = {
    "cuda_error",
    "nccl_error",
    "cudnn_error",
    "cublas_error",
    "fatal",
    "process_exit",
    "worker_killed",
}
_ENDING_KINDS = {"fatal", "process_exit", "worker_killed"}


def _failure_text(fact: Fact) -> tuple[str, str]:
    """What failed and its message, as an unrecognised diagnosis names them."""
    fields = fact.fields
    if fact.kind == "exception":
        if fields.get("cut"):
            calls, files = fields.get("calls", "").split(), fields.get("files", "").split()
            where = f"the innermost frame is {calls[-1]} in {files[-1]}" if calls and files else ""
            # IPython's header names the exception even when the paste lost its message.
            if fields.get("qualname"):
                return f"{fields['qualname']}, in a traceback cut before its message", where
            if fields.get("message"):
                return "an error logged before a cut traceback", fields["message"]
            return "a traceback cut before its error line", where
        name = fields.get("qualname", fields.get("type", "Exception"))
        if not fields.get("message") and fields.get("code"):
            return name, fields["code"]  # a bare ``AssertionError``: its assert statement
        return name, fields.get("detail") or fields.get("message", "")
    if fact.kind in _ENDING_KINDS:
        signal = fields.get("signal_name")
        code = fields.get("exitcode")
        if signal and signal != "fatal":
            name = f"the process died with {signal}"
        elif code is not None:
            name = f"the process exited with code {code}"
        else:
            name = "the process died"
        return name, fields.get("message") or fields.get("detail") or ""
    if fact.kind == "error_line":
        return SIGNATURE_NAMES.get(fields.get("signature", ""), "an error"), fields.get(
            "detail", ""
        )
    return fact.kind.replace("_", " "), fields.get("message", "")


def _failure_key(fact: Fact, name: str, message: str) -> str:
    """The fingerprint of a failure (``name`` and ``message`` as :func:`_failure_text` gives
    them), or of the process it names where one failure prints many lines (each frame of a
    stack that a signal handler dumped)."""
    return fingerprint(name, fact.fields.get("process") or message)


def _is_failure(fact: Fact) -> bool:
    if fact.kind == "exception":
        # A logging handler's caught error never ended a run (its disk_full still has a rule).
        return fact.fields.get("type") not in _NOT_A_CAUSE and "logging_error" not in fact.fields
    if fact.kind == "process_exit":
        return fact.fields.get("exitcode", 1) != 0
    if fact.kind == "error_line":
        return fact.fields.get("signature") in FAILURE_SIGNATURES
    return fact.kind in _WEAK_KINDS


#: Error lines that only echo a failure reported elsewhere when there is one: the stack a
#: signal handler dumps after its "Signal: Aborted (6)" line.
_ECHO_SIGNATURES = {"crash_frame"}


def _strength(fact: Fact) -> int:
    """0 for a failure in its own right, 1 for a weak one (a signal, an exit code, an error
    line), 2 for an echo of one; each is reported only when nothing stronger is."""
    if fact.kind == "error_line" and fact.fields.get("signature") in _ECHO_SIGNATURES:
        return 2
    # A worker's cut traceback is the tail of the error its main process raised above it.
    weak = fact.kind in _WEAK_KINDS or fact.kind == "error_line" or "reraised" in fact.fields
    return 1 if weak else 0


def unrecognised(
    results: list[Diagnosis], facts: Iterable[Fact], progress: Mapping[str, int]
) -> list[Diagnosis]:
    """Diagnoses for the failures that no diagnosis accounts for (step 3): an exception that
    ended the run, a CUDA or NCCL error no rule knows, and, when nothing else is diagnosed, the
    signal or exit code the run ended with. A log that shows a failure is never left silent.

    An error after which the run went on logging metrics was handled, not fatal: skipped.
    """
    covered = {(line.path, line.lineno) for d in results for line in d.evidence}
    covered |= {where for d in results for where in d.covers}
    # The same error read twice (torchrun's --tee copies each rank's output into the console
    # log too, a logger repeats a traceback's last line) is covered by a diagnosis of either.
    covered_text = {(line.rank, line.text) for d in results for line in d.evidence}
    facts = [fact for fact in facts if _is_failure(fact) and not survived(fact, progress, after=1)]
    covered_keys = {
        _failure_key(fact, *_failure_text(fact))
        for fact in facts
        if any((line.path, line.lineno) in covered for line in fact.evidence)
    }
    found: dict[str, Diagnosis] = {}
    for strength in (0, 1, 2):
        if strength and (results or found):
            break  # a signal or an exit code only says how a run that failed otherwise ended
        for fact in facts:
            if _strength(fact) != strength:
                continue
            name, message = _failure_text(fact)
            key = _failure_key(fact, name, message)
            if (
                key in covered_keys
                or any((line.path, line.lineno) in covered for line in fact.evidence)
                or (fact.line.rank, fact.line.text) in covered_text
            ):
                continue
            if key in found:
                found[key].ranks = sorted(
                    {*found[key].ranks, *([fact.rank] if fact.rank is not None else [])}
                )
                continue
            found[key] = _unrecognised(fact, name, message, key)
    return list(found.values())


def _unrecognised(fact: Fact, name: str, message: str, key: str) -> Diagnosis:
    # "the process died with SIGKILL" is a clause, an exception's name is a noun.
    lead = "The run ended: " if fact.kind in _ENDING_KINDS else "The run ended with "
    ended = lead + name + (f": {message[:300]}" if message else "")
    return Diagnosis(
        rule="unrecognised",
        category="unrecognised",
        title=f"Unrecognised failure: {name}",
        confidence=UNRECOGNISED_CONFIDENCE,
        summary=(
            f"{ended.rstrip('.')}. No rule knows this failure; search for the message or its "
            f"fingerprint {key}, and consider contributing a rule (docs/rules.md)."
        ),
        evidence=list(fact.evidence),
        fixes=[_facts_fix(fact.line.path)],
        ranks=[fact.rank] if fact.rank is not None else [],
        reason=f"no rule matched this {fact.kind.replace('_', ' ')}",
        fingerprint=key,
        first_seq=fact.seq,
        interrupted=[(fact.line.path, fact.fields["while_handling_line"])]
        if "while_handling_line" in fact.fields
        else [],
    )


def _facts_fix(path: str) -> dict[str, str]:
    """The command that shows the facts of ``path``, runnable as printed: a log read from stdin
    (``<stdin>``) is piped in again, and a path is shell-quoted."""
    title = "See the facts crashcart extracted, to write a rule for this failure"
    if path == "<stdin>":
        return {
            "title": f"{title} (pipe the same log in again)",
            "command": "crashcart analyze --facts -",
        }
    return {"title": title, "command": f"crashcart analyze --facts {shlex.quote(path)}"}


PROBE_CONFIRMED_BONUS = 0.1
PROBE_REFUTED_FACTOR = 0.5


def apply_probe(diagnosis: Diagnosis, result: dict[str, Any]) -> None:
    """A probe's verdict: confirmed diagnoses rank up, refuted ones down."""
    diagnosis.probe = result
    if result["status"] == "confirmed":
        diagnosis.confidence = min(0.99, diagnosis.confidence + PROBE_CONFIRMED_BONUS)
        diagnosis.reason += f"; confirmed by the {result['name']} probe"
    elif result["status"] == "refuted":
        diagnosis.confidence *= PROBE_REFUTED_FACTOR
        diagnosis.reason += f"; refuted by the {result['name']} probe"


#: Categories a failing rank causes on the ranks that wait for it.
_WAITING_SYMPTOMS = ("distributed_timeout", "nccl", "hang")


def unknown_first_failure(results: list[Diagnosis], facts: Iterable[Fact]) -> None:
    """An error no rule knows, on the rank torchrun saw fail first, still explains the
    timeouts and broken connections of the ranks that waited for it (step 3c)."""
    first = {
        f.fields.get("rank", f.rank)
        for f in facts
        if f.kind == "process_exit" and f.fields.get("root_cause")
    } - {None}
    causes = [d for d in results if d.category == "unrecognised" and first & set(d.ranks)]
    if not causes:
        return
    cause = causes[0]
    for symptom in results:
        if symptom.category in _WAITING_SYMPTOMS and not symptom.explained_by:
            if set(symptom.ranks) & first:
                continue  # the failing rank's own error
            ranks = ", ".join(map(str, sorted(first)))
            mark_symptom(symptom, cause, f"a symptom of rank {ranks}'s error")
    if cause.explains:
        cause.reason += "; torchrun's first observed failure"


def follow_handled_exceptions(results: list[Diagnosis]) -> None:
    """An error raised while handling an exception (an emergency checkpoint on a full disk after
    a shape error) is a symptom of the diagnosis of the exception it interrupted (step 3b)."""
    for secondary in results:
        if not secondary.interrupted or secondary.explained_by:
            continue
        wanted = set(secondary.interrupted)
        for cause in results:
            if cause is secondary or not wanted & {(e.path, e.lineno) for e in cause.evidence}:
                continue
            why = f"raised while handling the {cause.category} error before it"
            mark_symptom(secondary, cause, why)
            break


def drop_covered_vocabulary(results: list[Diagnosis]) -> list[Diagnosis]:
    """A vocabulary diagnosis read the words of a message that a specific rule read more
    precisely: where a specific diagnosis shows one of its lines, it adds nothing (step 3d).
    Unless it explains that diagnosis: the words of ``Caught UnidentifiedImageError in DataLoader
    worker process 0`` name the data, the cause of the worker's failure that a rule read."""

    def lines(d: Diagnosis) -> set[tuple[str, int]]:
        return {(line.path, line.lineno) for line in d.evidence}

    specific = [d for d in results if d.tier != "vocabulary"]
    return [
        d
        for d in results
        if d.tier != "vocabulary"
        or not any(s.explained_by != d.category and lines(s) & lines(d) for s in specific)
    ]


def drop_unspoken_vocabulary(results: list[Diagnosis], facts: Iterable[Fact]) -> list[Diagnosis]:
    """A vocabulary diagnosis whose words come only from lines that say no failure is dropped
    (step 3d): errors a logging handler caught and printed (the program went on), and the
    frames of a crashed process' stack, whose symbols (``_ZN5torch8autograd8Variable...``) name
    code, not what went wrong. A specific rule on the same lines (the disk that was full)
    still stands."""
    unspoken = {
        (line.path, line.lineno)
        for fact in facts
        if "logging_error" in fact.fields or fact.fields.get("signature") in _ECHO_SIGNATURES
        for line in fact.evidence
    }
    return [
        d
        for d in results
        if d.tier != "vocabulary" or any((e.path, e.lineno) not in unspoken for e in d.evidence)
    ]


def order(results: list[Diagnosis]) -> list[Diagnosis]:
    """Causes first, then symptoms, each by confidence, ties to the earliest evidence (step 4);
    a vocabulary diagnosis below every specific one of its standing."""
    return sorted(
        results,
        key=lambda d: (
            d.category == "unrecognised" and not d.explains,
            d.explained_by is not None,
            d.tier == "vocabulary",
            -d.confidence,
            d.first_seq,
        ),
    )
