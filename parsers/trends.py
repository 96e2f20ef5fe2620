"""Trend detectors: what a whole metric series says that no single line does.

They run when a run's input ends (and, live, periodically) over the series that
:class:`~.detectors.SeriesTracker` keeps, and emit one fact per finding with the numbers that
prove it. Each is built to stay quiet on healthy runs: noisy losses, warm-up, learning-rate
restarts, a single spike, a converged (flat) tail, evaluation bars running at their own speed.

- ``divergence``: the loss (or grad norm) is far above its best and still rising at the end.
- ``plateau``: the loss never went down over the whole run.
- ``throughput_drop``: it/s (or samples/s) at the end well below the run's own median.
- ``slowdown``: the time a step takes rose to twice its early value and stayed there.
- ``memory_growth``: a memory series rising steadily, step over step.
- ``overfitting``: validation loss rising for several evaluations while training loss falls.
- ``silence``: the last progress line is followed by a gap far longer than the run's cadence.

    >>> from crashcart.parsers.trends import Point, plateau
    >>> flat = [Point(2.30 + 0.01 * (i % 3), i) for i in range(80)]
    >>> plateau("loss", flat).fields["points"]
    80
"""

from __future__ import annotations

import itertools
import math
import statistics
from dataclasses import dataclass
from typing import Any

from .base import Draft
from .lazy import lazy_compile
from .metrics import memory_text

#: Fewer points than this and a trend is not a trend.
MIN_POINTS = {"divergence": 12, "plateau": 50, "throughput_drop": 20, "memory_growth": 10}
TAIL = 5


@dataclass(slots=True)
class Point:
    """One value of a series, where it was logged."""

    value: float
    index: int
    step: float | None = None
    time: float | None = None
    line: Any = None  # the LogLine, kept for evidence
    epoch: float | None = None


def _median(points: list[Point]) -> float:
    return statistics.median(p.value for p in points)


def _where(point: Point) -> dict[str, Any]:
    return {"step": int(point.step)} if point.step is not None else {}


def divergence(name: str, points: list[Point]) -> Draft | None:
    """The series' tail is far above its best and every tail value is above the one before."""
    if len(points) < MIN_POINTS["divergence"]:
        return None
    best = min(points, key=lambda p: p.value)
    tail = points[-TAIL:]
    if best.value <= 0 or best in tail:
        return None
    baseline = _median(points[: len(points) // 2])
    threshold = 10.0 if name == "grad_norm" else 3.0
    rising = all(b.value >= a.value for a, b in itertools.pairwise(tail))
    ratio = tail[-1].value / best.value
    elevated = tail[0].value > 1.5 * best.value and tail[-1].value > 2 * baseline
    if not rising or ratio < threshold or not elevated:
        return None
    fields = {
        "metric": name,
        "value": round(tail[-1].value, 6),
        "best": round(best.value, 6),
        "baseline": round(baseline, 6),
        "ratio": round(ratio, 2),
        **_where(tail[-1]),
    }
    return Draft("divergence", fields)


#: Loss values no healthy run prints: a loss or a gradient norm this large is an explosion even
#: when the log shows too few points to compare it with its own history.
EXPLODED = {"loss": 1e5, "grad_norm": 1e5, "ppl": 1e7}
#: Points a few-point detector needs (a pasted excerpt shows a handful of records).
FEW_POINTS = 3
#: ... and how far past its limit a value must be for two records to be enough: a gradient
#: norm of 4e10 and then 3.8e12 (mmdetection's first two log lines) needs no third.
FAR_PAST_LIMIT = 1000


def _divergence(name: str, at: Point, points: list[Point], baseline: float) -> Draft:
    """A ``divergence`` draft for the few-point detectors: the value ``at`` against the run's
    best and the level before it went wrong."""
    best = min(points, key=lambda p: p.value)
    fields = {
        "metric": name,
        "value": round(at.value, 6),
        "best": round(best.value, 6),
        "baseline": round(baseline, 6),
        "ratio": round(at.value / best.value, 2) if best.value > 0 else 0.0,
        **_where(at),
    }
    return Draft("divergence", fields)


def exploded(name: str, points: list[Point]) -> Draft | None:
    """The last few values are all of a magnitude no healthy run reaches, and not falling.

    Only large positive values count: a likelihood loss (a normalizing flow's NLL, FastFlow's
    -6e5) is rightly negative and large, and falls as the model learns. A loss whose tail falls
    (never rising) is learning at its own scale, however large that is (FastFlow's 2.1e5, 1.8e5,
    1.6e5)."""
    limit = EXPLODED.get(name)
    if limit is None:
        return None
    tail = points[-FEW_POINTS:]
    # A log of two records is enough when both are this far past the limit (one is not).
    far = len(points) == 2 and all(p.value >= FAR_PAST_LIMIT * limit for p in points)
    if (len(tail) < FEW_POINTS and not far) or any(p.value < limit for p in tail):
        return None
    # Only a loss: a gradient norm of millions is never healthy, falling or not.
    falling = all(b.value <= a.value for a, b in itertools.pairwise(tail))
    if name == "loss" and falling and tail[-1].value < tail[0].value:
        return None
    baseline = _median(points[: max(1, len(points) // 2)])
    healthy_scale = abs(baseline) < limit  # a run whose every value is that large never had one
    if (
        healthy_scale
        and tail[-1].value < tail[0].value / 10
        and tail[-1].value <= 100 * abs(baseline)
    ):
        return None  # coming back down to the run's own scale: a spike it recovered from
    draft = _divergence(name, tail[-1], points, baseline)
    draft.fields["limit"] = limit
    return draft


#: The epoch from which a record is past any warm-up (Keras counts from 1, others from 0).
PAST_WARMUP_EPOCH = 2


def _past_warmup(point: Point) -> bool:
    """Whether a record was logged well into training: a paste that starts at Keras'
    ``Epoch 11/20`` shows no warm-up, so a loss that climbs from its first record there is a
    run coming apart."""
    return point.epoch is not None and point.epoch >= PAST_WARMUP_EPOCH


#: How far a few-point climb must go: times its best (perplexity is exp(loss), so its ratio is
#: the exponential of a loss difference and needs more).
CLIMB_RATIO = {"loss": 3.0, "grad_norm": 10.0, "ppl": 5.0}
#: Records in a row, each above the one before, that make a climb.
CLIMB_HELD = 3


def climbed(name: str, points: list[Point]) -> Draft | None:
    """Too few records for :func:`divergence`, but every record since the best is above the one
    before, for at least three, to several times the best: a run that learned, then came apart
    (a QLoRA run going 1.43, 5.82, 7.05, 10.03 after its warm-up). A climb from the very first
    record counts only to a magnitude no healthy run prints (0.85, 2.44, 63118.6, 1.08e13): a
    loss that rises at the start is often a warm-up, unless that first record is epochs into
    the run."""
    ratio = CLIMB_RATIO.get(name)
    if ratio is None or len(points) < CLIMB_HELD + 1:
        return None
    best_at = min(range(len(points)), key=lambda i: points[i].value)
    best, after = points[best_at], points[best_at + 1 :]
    if len(after) < CLIMB_HELD or best.value <= 0:
        return None
    if not all(b.value > a.value for a, b in itertools.pairwise([best, *after])):
        return None
    last = after[-1]
    if last.value < ratio * best.value or last.value - best.value < JUMP_MIN:
        return None
    limit = EXPLODED.get(name, math.inf)
    if best_at == 0 and last.value < limit and not _past_warmup(best):
        return None
    baseline = _median(points[: best_at + 1])
    return _divergence(name, last, points, baseline)


#: A jump is this many times the level before it, and at least this much in absolute terms.
JUMP_RATIO, JUMP_MIN = 3.0, 1.0
#: Values after the jump that must all stay up (fewer is a spike), and the most looked at.
JUMP_HELD, JUMP_LOOKBACK = 4, 50


def jumped(name: str, points: list[Point]) -> Draft | None:
    """The loss jumped to several times its level and stayed there to the end of the log.

    Training that breaks (a bad batch, an lr spike, a precision overflow) often does not climb
    on and on; it jumps once and sits at the loss of an untrained model (1.7 to 11.5 for a
    code model). Every value after the jump must stay above 3x (and 1.0 above) the level of
    the twenty values before it: a spike that comes back is not this. Four values before the
    jump set the level, or one when twice as many stay up after it (a paste cut just before).
    """
    if len(points) < JUMP_HELD + 1 or EXPLODED.get(name) is None:
        return None
    longest = min(JUMP_LOOKBACK, len(points) - 1)
    for held in range(longest, JUMP_HELD - 1, -1):
        before, after = points[:-held], points[-held:]
        if len(before) < 4 and held < 2 * JUMP_HELD:
            continue
        level = _median(before[-20:])
        floor = max(JUMP_RATIO * level, level + JUMP_MIN)
        if level > 0 and min(p.value for p in after) >= floor:
            return _divergence(name, after[-1], points, level)
    return None


#: A last record this many times the run's level, and ten times any record before it, after
#: at least this many records of the same form.
SPIKE_RATIO, SPIKE_BEFORE = 100.0, 4
_NUMBER = lazy_compile(r"[-+]?\d[\d.]*(?:[eE][-+]?\d+)?")


def spiked(name: str, points: list[Point]) -> Draft | None:
    """The log ends on a loss a hundred times the run's level (CHGNet's ``Loss 0.3473`` then
    ``Loss 124.5792``; RLE's ``loss:-99.62`` then ``loss:16064.90``), printed in the same form as
    the records before it: the paste stops where training blew up. The level is of magnitudes,
    so that a likelihood loss, rightly negative, counts too."""
    if name != "loss" or len(points) < SPIKE_BEFORE + 1:
        return None
    last, before = points[-1], points[-21:-1]
    magnitudes = [abs(p.value) for p in before]
    level = statistics.median(magnitudes)
    if level <= 0 or last.value < SPIKE_RATIO * level or last.value < 10 * max(magnitudes):
        return None
    if last.value - level < JUMP_MIN or not _same_form(before[-1], last):
        return None
    draft = _divergence(name, last, points, level)
    draft.fields.update(spike_text=printed(last.value), before_text=printed(before[-1].value))
    return draft


def _same_form(first: Point, second: Point) -> bool:
    """Whether two records were printed by the same statement (their lines alike but for their
    numbers): an epoch's summed loss after per-batch ones is another quantity, not a spike."""
    if first.line is None or second.line is None:
        return False
    return _NUMBER.sub("#", first.line.text)[:80] == _NUMBER.sub("#", second.line.text)[:80]


def erratic(name: str, points: list[Point]) -> Draft | None:
    """The loss swings over orders of magnitude, up and down, to values no healthy run prints:
    three of the last twenty above the explosion limit and three jumps of 100x between
    neighbours. Training that blew up and keeps blowing up, without a NaN to stop it."""
    limit = EXPLODED.get(name)
    tail = points[-20:]
    if limit is None or len(tail) < 6:
        return None
    huge = [p for p in tail if abs(p.value) >= limit]
    jumps = sum(
        1
        for a, b in itertools.pairwise(tail)
        if a.value > 0 and b.value > 0 and max(a.value / b.value, b.value / a.value) >= 100
    )
    if len(huge) < 3 or jumps < 3:
        return None
    worst = max(tail, key=lambda p: p.value)
    return _divergence(name, worst, points, _median(points[: max(1, len(points) // 2)]))


#: Class counts whose chance-level cross-entropy, ln(k), a stuck classifier prints for ever.
_CLASS_COUNTS = (2, 3, 4, 5, 6, 7, 8, 9, 10, 20, 21, 80, 81, 91, 100, 200, 1000)
#: Output sizes of self-supervised heads and language models (DINO's 65536 prototypes, BERT's
#: and Llama's vocabularies). Their ln(k) is also where such a model starts, so a loss there
#: is judged only past the run's start (a step of 100 or an epoch of 1 printed beside it).
_OUTPUT_SIZES = (4096, 8192, 16384, 30522, 32000, 32768, 50257, 65536, 131072)
_PAST_START_STEP, _PAST_START_EPOCH = 100, 1
_CHANCE_TOLERANCE = 0.002


def at_chance(name: str, points: list[Point]) -> Draft | None:
    """The last few loss values all sit at ln(k), the loss of a uniform guess over k classes:
    the model has learned nothing, however few records the log shows (a longer series is
    judged by :func:`plateau`, against its own noise)."""
    tail = points[-FEW_POINTS:]
    if name != "loss" or len(tail) < FEW_POINTS or len(points) >= MIN_POINTS["plateau"]:
        return None
    started = tail[0].step is not None and tail[0].step >= _PAST_START_STEP
    started = started or (tail[0].epoch is not None and tail[0].epoch >= _PAST_START_EPOCH)
    if not started and tail[0].step is not None:
        return None  # the first steps of a run: every classifier starts at chance
    for classes in _CLASS_COUNTS + (_OUTPUT_SIZES if started else ()):
        chance = math.log(classes)
        if all(abs(p.value - chance) <= _CHANCE_TOLERANCE * chance + 5e-4 for p in tail):
            # A loss at chance never improved, whatever its first record happened to be.
            return _plateau_draft(name, points, improvement_pct=0.0, chance_classes=classes)
    return None


#: Class counts whose chance-level loss a noisy series is compared with. Only two: a noisy loss
#: around 1.1 or 1.4 is an ordinary level for many models mid-training (the value alone does not
#: say the task has three or four classes), while 0.69 is the well-known binary classifier stuck
#: at its prior; exact values (at_chance) are judged for every count.
_NOISY_CLASS_COUNTS = (2,)
#: Records a noisy series needs before its level can be placed at chance.
NOISY_CHANCE_POINTS = 15


def hovering_at_chance(name: str, points: list[Point]) -> Draft | None:
    """A noisy loss whose second half hovers at ln 2 and never goes
    clearly below it (a binary classifier at 0.67 to 0.95 around ln 2 = 0.693, step after step):
    a classifier that predicts the prior has learned nothing. Longer series go to
    :func:`plateau`, exact values to :func:`at_chance`."""
    if name != "loss" or not NOISY_CHANCE_POINTS <= len(points) < MIN_POINTS["plateau"]:
        return None
    half = points[len(points) // 2 :]
    level, low = _median(half), min(p.value for p in half)
    for classes in _NOISY_CLASS_COUNTS:
        chance = math.log(classes)
        if 0.98 * chance <= level <= 1.05 * chance and low >= 0.95 * chance:
            return _plateau_draft(name, points, chance_classes=classes)
    return None


@dataclass(slots=True)
class ScoredRecord:
    """A record that printed an accuracy beside its loss."""

    loss: Point
    accuracy: float


#: Class counts an accuracy beside a loss is compared with: the usual small label sets, and
#: CIFAR-100's and ImageNet's.
_PAIR_CLASS_COUNTS = (*range(2, 21), 100, 1000)
#: How near chance each of the pair must be: the loss within 2% of ln k, the accuracy within 20%
#: of 1/k. Either alone is looser than :func:`at_chance` allows a loss (a noisy 2.311 is 0.4% off
#: ln 10); the two together are what a uniform guess prints, and nothing that learns does.
PAIR_LOSS_TOLERANCE, PAIR_ACCURACY_TOLERANCE = 0.02, 0.2


def _fraction(accuracy: float) -> float:
    """An accuracy as a fraction (``val_acc: 50.00`` is a percentage)."""
    return accuracy / 100 if accuracy > 1 else accuracy


#: Records whose medians are judged, and how much farther than the tolerances one of them may
#: stray: accuracies of single batches are noisy (10%, 14%, 8% on batches of a hundred).
CHANCE_WINDOW, CHANCE_NOISE = 9, 2.5


def _near_chance(loss: float, accuracy: float, classes: int, slack: float = 1.0) -> bool:
    """A loss at ln k and an accuracy at 1/k, each within ``slack`` times its tolerance."""
    chance_loss, chance_accuracy = math.log(classes), 1 / classes
    return (
        abs(loss - chance_loss) <= slack * PAIR_LOSS_TOLERANCE * chance_loss
        and abs(_fraction(accuracy) - chance_accuracy)
        <= slack * PAIR_ACCURACY_TOLERANCE * chance_accuracy
    )


def _paired_at_chance(record: ScoredRecord, classes: int) -> bool:
    """One record near chance, within the noise a single batch's accuracy shows."""
    return _near_chance(record.loss.value, record.accuracy, classes, CHANCE_NOISE)


def _window_at_chance(window: list[ScoredRecord], classes: int) -> bool:
    """Every record of ``window`` near chance (within the noise allowed), and its medians at it."""
    return all(_paired_at_chance(record, classes) for record in window) and _near_chance(
        statistics.median(record.loss.value for record in window),
        statistics.median(record.accuracy for record in window),
        classes,
    )


def accuracy_at_chance(
    name: str, records: list[ScoredRecord], evaluation: bool = False
) -> Draft | None:
    """The last records print an accuracy at 1/k beside a loss at ln k (``val_loss: 0.6930 -
    val_accuracy: 0.5000`` epoch after epoch, ``Acc. 0.0906 - Loss 2.311``): predictions no
    better than a uniform guess over k classes. The last few records are judged by their
    medians, each allowed 2.5 times the tolerance (a batch's accuracy is noisy). Training records
    count once past the run's first steps (every classifier starts there); evaluations come
    after training anyway."""
    tail = records[-FEW_POINTS:]
    if len(tail) < FEW_POINTS:
        return None
    first = tail[0].loss
    started = first.step is not None and first.step >= _PAST_START_STEP
    started = started or (first.epoch is not None and first.epoch >= _PAST_START_EPOCH)
    if not (started or evaluation):
        return None
    window = records[-CHANCE_WINDOW:]
    for classes in _PAIR_CLASS_COUNTS:
        if _window_at_chance(window, classes):
            start = len(records)
            while start and _paired_at_chance(records[start - 1], classes):
                start -= 1
            stretch = records[start:]
            return _plateau_draft(
                name,
                [record.loss for record in stretch],
                improvement_pct=0.0,
                chance_classes=classes,
                accuracy_text=printed(stretch[-1].accuracy),
            )
    return None


#: Records in a row with the same loss that show the weights no longer change: a value printed
#: with three significant digits or more repeats by chance almost never; a loss of exactly
#: zero needs more of them.
FROZEN_RECORDS, FROZEN_ZERO_RECORDS = 3, 5
#: A loss printed the same below this, but not zero, is a model that fits its data (torch_xla's
#: MNIST at ``Loss=0.00135`` step after step), not one that stopped learning.
CONVERGED_LOSS = 0.01


def printed(value: float) -> str:
    """A value as the log printed it (the shortest text that reads back as the same float:
    ``5.7257``, ``16.030918``; a printed ``0.0000`` is ``0.0``), for summaries, which show
    other numbers rounded."""
    return repr(value)


def _significant_digits(value: float) -> int:
    digits = repr(abs(value)).split("e")[0].replace(".", "").lstrip("0")
    return len(digits)


def _records(points: list[Point]) -> list[Point]:
    """One point per record: a progress bar redrawn at one step, or a line printed twice for the
    same step or epoch, is one record."""
    kept: list[Point] = []
    for point in points:
        if kept and _record_key(point) is not None and _record_key(point) == _record_key(kept[-1]):
            kept[-1] = point
            continue
        kept.append(point)
    return kept


def _record_key(point: Point) -> tuple[float | None, float | None] | None:
    """The step and epoch that name a record; None when the line printed neither."""
    if point.step is None and point.epoch is None:
        return None
    return (point.step, point.epoch)


#: Two records are enough when they are this many steps apart and print the same loss to this
#: many significant digits (lit-gpt's ``iter 1: loss 11.0666`` and ``iter 400: loss 11.0666``):
#: a model that learns moves its loss in the fourth digit within a few hundred steps.
FROZEN_PAIR_STEPS, FROZEN_PAIR_DIGITS = 100, 5


def _far_apart_and_equal(first: Point, last: Point) -> bool:
    if first.step is None or last.step is None or last.step - first.step < FROZEN_PAIR_STEPS:
        return False
    return (
        first.value == last.value
        and abs(last.value) >= CONVERGED_LOSS
        and _significant_digits(last.value) >= FROZEN_PAIR_DIGITS
    )


#: A loss this far from zero cannot reach exactly zero by the next record: a model that learns
#: approaches zero through small values (0.0025, 0.0007, ...), it does not jump there.
COLLAPSED_FROM = 0.5
#: Records of exactly zero, to the end of the log, that make a collapse.
COLLAPSED_RECORDS = 3


def _trailing_run(records: list[Point], value: float) -> int:
    """How many records at the end printed exactly ``value``."""
    run = 0
    for point in reversed(records):
        if point.value != value:
            break
        run += 1
    return run


def collapsed(name: str, points: list[Point]) -> Draft | None:
    """The loss jumped from a real value to exactly zero and stayed there to the end of the log
    (the HF Trainer's ``'loss': 12.6002`` then ``'loss': 0.0`` record after record): the loss no
    longer measures anything. Under fp16 the step losses overflowed to inf or NaN and the
    trainer's NaN filter or a skipped step hides them; otherwise every label of every batch
    is masked out."""
    if name != "loss":
        return None
    records = _records(points)
    run = _trailing_run(records, 0.0)
    if run < COLLAPSED_RECORDS or run == len(records):
        return None
    before = records[-run - 1]
    if not before.value >= COLLAPSED_FROM:
        return None
    first_zero = records[-run]
    fields: dict[str, Any] = {
        "metric": name,
        "before": printed(before.value),
        "records": run,
        **_where(first_zero),
        **({"epoch": first_zero.epoch} if first_zero.epoch is not None else {}),
    }
    return Draft("collapsed", fields)


def frozen(name: str, points: list[Point]) -> Draft | None:
    """The loss printed identically record after record to the end of the log (Keras'
    ``loss: 5.7257`` three epochs running, ``loss:0.0000`` for twelve): the weights no longer
    change, or the loss no longer depends on them. Before the frozen stretch the loss must have
    moved from record to record, so that one line copied by several ranks is not taken for it."""
    if name != "loss":
        return None
    records = _records(points)
    if len(records) == 2 and _far_apart_and_equal(*records):
        return _plateau_draft(name, records, frozen_records=2)
    if len(records) < FROZEN_RECORDS:
        return None
    value = records[-1].value
    run = _trailing_run(records, value)
    before = records[: len(records) - run]
    distinct = all(_record_key(p) is not None for p in records[-run:])
    if value == 0:
        if run < FROZEN_ZERO_RECORDS or (before and abs(before[-1].value) < CONVERGED_LOSS):
            return None  # it fell to zero gradually (0.0025, 0.0007 ...): a converged fit
    elif abs(value) < CONVERGED_LOSS:
        return None  # a fit this close to zero stops changing in its printed digits
    elif run < FROZEN_RECORDS or _significant_digits(value) < 3:
        return None
    if not distinct and (
        not before or any(a.value == b.value for a, b in itertools.pairwise(before))
    ):
        return None
    if _terms_move(records[-run:]):
        return None
    return _plateau_draft(name, records, frozen_records=run)


#: Records at the end, and their spread relative to their level, that make a loss which moves
#: only past its fourth significant digit.
FLAT_RECORDS, FLAT_SPREAD = 15, 1e-4


def flat(name: str, points: list[Point]) -> Draft | None:
    """The loss still moves, but only in its fifth significant digit, over its last fifteen
    records or more (MuLan's ``loss: 6.236410617828369``, ``6.236483573913574``,
    ``6.236449241638184``, ...): printed with the digits to show progress, it makes none. A
    loss near zero is a converged fit, and one printed with fewer digits is :func:`frozen`'s."""
    if name != "loss":
        return None
    records = _records(points)
    if not records or abs(records[-1].value) < CONVERGED_LOSS:
        return None
    # Within the spread allowed, any value of the stretch stands for its level.
    allowed = FLAT_SPREAD * abs(records[-1].value)
    low = high = records[-1].value
    run = 0
    for point in reversed(records):
        low, high = min(low, point.value), max(high, point.value)
        if high - low > allowed:
            break
        run += 1
    stretch = records[len(records) - run :]
    if run < FLAT_RECORDS or low == high:
        return None
    if min(_significant_digits(p.value) for p in stretch) < 5 or _terms_move(stretch):
        return None
    return _plateau_draft(name, stretch, flat_records=run, high_text=printed(high))


#: ``name: 0.00133`` pairs on a metric line, and the names that are not terms of the loss: the
#: loss itself, rates and schedules, counters, times, and evaluation metrics (which vary from
#: batch to batch even on a model that learns nothing).
_NAMED_NUMBER = lazy_compile(
    r"(?<![\w.])([A-Za-z][\w/.\-]{0,40})\s{0,4}[:=]\s{0,4}(-?\d+\.\d+(?:[eE][-+]?\d+)?)"
)
_NOT_A_TERM = lazy_compile(
    r"(?i)^(?:train[_/]?)?loss$|time|cost|lr|learning|eta|speed|epoch|step|iter|mem|acc|prec"
    r"|recall|f1|auc|iou|psnr|ssim|score|reward|grad|norm|scale|sec|throughput|token|sample|data"
    r"|progress|percent"
)


def _terms_move(records: list[Point]) -> bool:
    """Whether the terms printed beside a frozen loss still change from record to record
    (PaddleScience's ``loss: 0.01095, EQ: 0.00166, BC_bottom: 0.00133`` then ``0.00132``): the
    total is the same only to its printed digits, and the weights are still changing."""
    seen: dict[str, set[str]] = {}
    for point in records:
        text = getattr(point.line, "text", None)
        if not isinstance(text, str):
            return False
        for key, value in _NAMED_NUMBER.findall(text):
            if not _NOT_A_TERM.search(key):
                seen.setdefault(key, set()).add(value)
    return any(len(values) > 1 for values in seen.values())


#: Records in a row printing a learning rate of zero, and the decimals a printed zero needs to
#: be one (``0.00000`` is any rate below 5e-6, which fine-tuning uses; eight decimals are not).
LR_ZERO_RECORDS, LR_ZERO_PLACES = 3, 6
#: An exact zero (``0``, ``0.0``: Python's repr of the float) is counted as this many decimals.
EXACT_ZERO_PLACES = 99
#: A rounded zero this early in the printed step count is a warm-up still ramping up from zero
#: (VideoMAE's ``lr: 0.000000`` at step 220 of 17227), not a rate that stays at zero.
WARMUP_FRACTION = 0.05


@dataclass(slots=True)
class LrRecord:
    """A metric record that printed both a learning rate and a loss."""

    lr: float
    loss: float
    step: float | None
    total: float | None  # the step count the line printed after the step (``Step 380000/1000000``)
    places: float  # decimals of a printed zero learning rate
    line: Any = None
    epoch: float | None = None


def lr_zero(run: list[LrRecord]) -> Draft | None:
    """Consecutive records that print a learning rate of zero while the loss does not fall: the
    optimizer takes steps of size zero, so the model cannot learn (a schedule that decayed to zero
    long before the end, a warm-up that never starts, an lr the scheduler overwrote). Zero is what
    the log printed: either a zero too precise to be a small rate rounded, or, rounded, one far
    from the end of the step count the line prints (the end of a decay is zero by design)."""
    if len(run) < LR_ZERO_RECORDS:
        return None
    first, last = run[0], run[-1]
    places = min(r.places for r in run)
    done = None
    if last.total is not None and last.step is not None:
        done = last.step / last.total if last.total else None
    mid_run = done is not None and done <= 0.9
    if not mid_run and places < LR_ZERO_PLACES:
        return None
    warming_up = done is not None and done <= WARMUP_FRACTION and not last.epoch
    if warming_up and places < EXACT_ZERO_PLACES:
        return None
    half = len(run) // 2
    before = statistics.median(r.loss for r in run[:half])
    after = statistics.median(r.loss for r in run[half:])
    if before <= 0 or after < 0.95 * before:
        return None  # the loss still falls: the rate is only printed too coarsely
    losses = [r.loss for r in run]
    fields: dict[str, Any] = {
        "metric": "loss",
        "records": len(run),
        "loss_low": printed(min(losses)),
        "loss_high": printed(max(losses)),
        "first_loss": round(first.loss, 6),
        "last_loss": round(last.loss, 6),
        **({"first_step": int(first.step)} if first.step is not None else {}),
        **({"step": int(last.step)} if last.step is not None else {}),
        **({"total_steps": int(last.total)} if last.total is not None else {}),
    }
    return Draft("lr_zero", fields)


def _noise_floor(points: list[Point], window: int, level: float) -> float:
    """The smallest relative change between two window medians that is not noise: 2%, or
    more on a noisy loss (per-step noise estimated from successive differences, robust to the
    trend; the difference of two medians of ``window`` values, at 2.5 standard errors)."""
    diffs = [abs(b.value - a.value) for a, b in itertools.pairwise(points)]
    if not diffs or level <= 0:
        return 0.02
    # |a - b| of two noisy values has median 0.6745 * sqrt(2) * sigma; a median of n values
    # has standard error 1.2533 * sigma / sqrt(n); the difference of two, sqrt(2) times that.
    sigma = statistics.median(diffs) / (0.6745 * math.sqrt(2))
    standard_error = math.sqrt(2) * 1.2533 * sigma / math.sqrt(window)
    return max(0.02, 2.5 * standard_error / level)


def _plateau_draft(name: str, points: list[Point], **extra: Any) -> Draft:
    """A ``plateau`` draft over ``points`` as printed: first, last and best values, the
    improvement from first to last, and where the last one is; ``extra`` adds or overrides."""
    first, last = points[0].value, points[-1].value
    best = min(p.value for p in points)
    fields = {
        "metric": name,
        "first": round(first, 6),
        "last": round(last, 6),
        "best": round(best, 6),
        "improvement_pct": round(100 * (first - last) / first, 2) if first else 0.0,
        "points": len(points),
        "last_text": printed(last),
        "best_text": printed(best),
        **_where(points[-1]),
        **extra,
    }
    return Draft("plateau", fields)


def plateau(name: str, points: list[Point]) -> Draft | None:
    """The loss at the end is no better than at the start, over a long run."""
    if name != "loss" or len(points) < MIN_POINTS["plateau"]:
        return None
    window = max(5, len(points) // 10)
    first, last = _median(points[:window]), _median(points[-window:])
    if first <= 0:
        return None
    improvement = (first - last) / first
    # The best stretch, not the best single value: one lucky batch in a noisy flat loss is not
    # progress.
    step = max(1, window // 2)
    best = min(_median(points[i : i + window]) for i in range(0, len(points) - window + 1, step))
    if improvement >= _noise_floor(points, window, first) or (first - best) / first >= 0.1:
        return None
    fields = {
        "metric": name,
        "first": round(first, 6),
        "last": round(last, 6),
        "best": round(best, 6),
        "improvement_pct": round(100 * improvement, 2),
        "points": len(points),
        **_where(points[-1]),
    }
    return Draft("plateau", fields)


def throughput_drop(name: str, points: list[Point]) -> Draft | None:
    """The last values run at less than half the series' own median speed."""
    if len(points) < MIN_POINTS["throughput_drop"]:
        return None
    body = points[3:]  # the first values include start-up and compilation
    baseline = _median(body)
    recent = _median(points[-TAIL * 2 :])
    if baseline <= 0 or recent >= 0.5 * baseline:
        return None
    fields = {
        "metric": name,
        "baseline": round(baseline, 3),
        "recent": round(recent, 3),
        "ratio": round(recent / baseline, 3),
        "points": len(points),
        **_where(points[-1]),
    }
    return Draft("throughput_drop", fields)


def slowdown(name: str, points: list[Point]) -> Draft | None:
    """Steps that take at least twice as long as the run's early ones, to the end of the log.

    Few points suffice (people paste three Megatron iterations), because the test is strict:
    every value of the last third is 1.5x the early median and the last is 2x. A single slow
    step (an evaluation, a checkpoint, the first step after a DataLoader restart) in the tail
    is not a slowdown; the first step, which includes start-up, is left out when there are six.
    """
    if len(points) < 3:
        return None
    if _cumulative([p.value for p in points]) or _tracks_the_clock(points):
        return None
    body = points[1:] if len(points) >= 6 else points
    early = body[: max(1, len(body) // 3)]
    tail = body[-max(2, len(body) // 3) :]
    baseline = _median(early)
    if baseline <= 0 or min(p.value for p in tail) < 1.5 * baseline:
        return None
    if tail[-1].value < 2 * baseline:
        return None
    fields = {
        "metric": name,
        "baseline_s": round(baseline, 4),
        "recent_s": round(tail[-1].value, 4),
        "ratio": round(tail[-1].value / baseline, 2),
        "points": len(points),
        **_where(points[-1]),
    }
    return Draft("slowdown", fields)


def _cumulative(values: list[float]) -> bool:
    """Whether a timer counts the time since the start (``time: 985.6 s``, ``2059.1 s``, ...)
    rather than per step: even increments, and a first value about one increment; or, over
    five records or more, increments that never grow while the first value is one to two of
    them (habitat-baselines' ``env-time: 175.496s``, ``296.408s``, ... as the run speeds up)."""
    steps = [b - a for a, b in itertools.pairwise(values)]
    if not steps or min(steps) <= 0:
        return False
    mean = statistics.fmean(steps)
    if max(abs(s - mean) for s in steps) <= 0.2 * mean and abs(values[0] - mean) <= 0.25 * mean:
        return True
    never_growing = all(b <= 1.1 * a for a, b in itertools.pairwise(steps))
    return len(steps) >= 4 and never_growing and 0.75 * mean <= values[0] <= 2.5 * mean


def _tracks_the_clock(points: list[Point]) -> bool:
    """Whether a timer counts the time since the start however its records are spaced: it grows
    by as many seconds as the lines' own timestamps do (cellpose's ``Epoch 5, Time 4981.4s``,
    then every ten epochs ``Time 9074.8s``, ``28029.8s``, ... over 27 hours of timestamps), or
    by the same seconds per epoch from a start near zero (``Epoch 8, Time 5.2s``, ``Epoch 9,
    Time 5.6s``, ``Epoch 20, Time 9.8s``)."""
    if any(b.value <= a.value for a, b in itertools.pairwise(points)):
        return False
    timed = [p for p in points if p.time is not None]
    if len(timed) >= 3 and all(a.time < b.time for a, b in itertools.pairwise(timed)):  # type: ignore[operator]
        elapsed = timed[-1].time - timed[0].time  # type: ignore[operator]
        return abs(timed[-1].value - timed[0].value - elapsed) <= 0.1 * elapsed
    if len(points) < 4 or any(p.epoch is None for p in points):
        return False
    pairs = list(itertools.pairwise(points))
    if any(b.epoch <= a.epoch for a, b in pairs):  # type: ignore[operator]
        return False
    rates = [(b.value - a.value) / (b.epoch - a.epoch) for a, b in pairs]  # type: ignore[operator]
    mean = statistics.fmean(rates)
    even = max(abs(r - mean) for r in rates) <= 0.25 * mean
    return even and points[0].value <= 2 * mean * max(points[0].epoch, 1.0)  # type: ignore[type-var]


def memory_growth(name: str, points: list[Point]) -> Draft | None:
    """Memory that keeps rising. Three shapes, each with a good share of its growth in the second
    half of the series (a cache filling during the first epoch and then flat is not a leak):

    - most steps up, and at least 20% (and, in GiB, 0.5 GiB) more at the end;
    - a creep: ten readings or more, never one down, up on at least 40% of them and in each
      third (a tensor kept per step, 20.4 to 21.0 MB allocated; RSS 998.1 to 1000.1 MB);
    - six readings or more, each above the one before, 20% more at the end.

    Its size alone does not decide: a leak of a few MB per step is a leak. A series without a
    unit is judged only against itself."""
    if len(points) < 6:
        return None
    first, last = points[0].value, points[-1].value
    pairs = list(itertools.pairwise(points))
    ups = sum(b.value > a.value for a, b in pairs)
    downs = sum(b.value < a.value for a, b in pairs)
    if first <= 0 or last <= first:
        return None
    second_half = points[len(points) // 2 :]
    if second_half[-1].value - second_half[0].value < 0.25 * (last - first):
        return None
    minimum = 0.5 if name.startswith("memory_gib") else 0.0
    grew = (
        len(points) >= MIN_POINTS["memory_growth"]
        and last - first >= max(0.2 * first, minimum)
        and ups >= 3 * max(downs, 1)
    )
    thirds = [pairs[i * len(pairs) // 3 : (i + 1) * len(pairs) // 3] for i in range(3)]
    crept = (
        len(points) >= MIN_POINTS["memory_growth"]
        and downs == 0
        and ups >= 0.4 * len(pairs)
        and all(any(b.value > a.value for a, b in third) for third in thirds)
    )
    climbed = ups == len(pairs) and last >= 1.2 * first
    if not (grew or crept or climbed):
        return None
    fields = {
        "metric": name,
        "first_gib": round(first, 3),
        "last_gib": round(last, 3),
        "growth_pct": round(100 * (last - first) / first, 1),
        "points": len(points),
        "first_text": _memory_text(points[0]),
        "last_text": _memory_text(points[-1]),
        **_where(points[-1]),
    }
    return Draft("memory_growth", fields)


def _memory_text(point: Point) -> str:
    """The memory value of a point as its line printed it."""
    text = memory_text(point.line.text) if point.line is not None else None
    return text if text is not None else printed(point.value)


def overfitting(eval_points: list[Point], train_points: list[Point]) -> Draft | None:
    """Validation loss rising after its best while training loss falls.

    Many evaluations: rising for 3+ of them, or settled well above the best. Few (people paste
    the last two or three): every evaluation since the best higher than the one before, with
    the last 10% above the best, or, from two, a validation loss three times the training loss
    and still rising (a model learning its training set by heart).
    """
    if len(eval_points) < 2 or len(train_points) < 2:
        return None
    best_at = min(range(len(eval_points)), key=lambda i: eval_points[i].value)
    after = eval_points[best_at:]
    best, last = after[0], after[-1]
    if len(after) < 2 or last.value <= best.value:
        return None
    train_then = [p.value for p in train_points if p.index <= best.index][-TAIL:]
    train_now = [p.value for p in train_points if p.index > best.index][-TAIL:]
    if not train_then or not train_now:
        return None
    then, now = statistics.median(train_then), statistics.median(train_now)
    if now >= then:
        return None
    values = [p.value for p in after]
    climbing = all(b > a for a, b in itertools.pairwise(values))
    if not (
        _rose_over_many(values, len(eval_points))
        or (climbing and len(values) >= 3 and last.value >= 1.1 * best.value)
        or (climbing and now > 0 and last.value >= 3 * now)
    ):
        return None
    fields = {
        "best_eval": round(best.value, 6),
        "last_eval": round(last.value, 6),
        "evals_since_best": len(after) - 1,
        "train_then": round(then, 6),
        "train_now": round(now, 6),
        **({"best_step": int(best.step)} if best.step is not None else {}),
        **_where(last),
    }
    return Draft("overfitting", fields)


def _rose_over_many(values: list[float], evaluations: int) -> bool:
    """Four or more evaluations from the best on: rising step by step, or (a noisy validation
    set) settled well above the best and higher in the second half than in the first."""
    if evaluations < 4 or len(values) < 4 or values[-1] < 1.05 * values[0]:
        return False
    ups = sum(b > a for a, b in itertools.pairwise(values))
    half = len(values) // 2
    risen = statistics.median(values[-max(3, len(values) // 3) :]) >= 1.25 * values[0]
    rising = statistics.median(values[half:]) >= 1.1 * statistics.median(values[:half])
    return ups >= (len(values) - 1) * 2 / 3 or (risen and rising)


def silence(progress: list[Point], last_time: float | None, stopped: bool = False) -> Draft | None:
    """The log went on (an error, a timeout) long after progress stopped.

    A silence counts from ten times the run's own cadence and at least 5 minutes (evaluations
    and checkpoints pause a healthy run for minutes). When the run was then stopped from outside
    (SIGTERM, Ctrl-C), someone gave up waiting: thirty times the cadence and 20 s suffice.
    """
    times = [p.time for p in progress if p.time is not None]
    if len(times) < 5 or last_time is None:
        return None
    gaps = [b - a for a, b in itertools.pairwise(times) if b >= a]
    cadence = statistics.median(gaps) if gaps else 0
    if not cadence:  # timestamps in whole seconds, several lines a second
        cadence = (times[-1] - times[0]) / (len(times) - 1)
    quiet = last_time - times[-1]
    if quiet < (max(30 * cadence, 20) if stopped else max(10 * cadence, 300)):
        return None
    fields = {
        "silence_s": round(quiet, 1),
        "cadence_s": round(cadence, 1),
        "last_progress": (progress[-1].line.text[:200] if progress[-1].line else ""),
        **_where(progress[-1]),
    }
    return Draft("silence", fields)
