"""Detectors over metric series: they emit a fact only when something happens.

A run prints thousands of loss lines; the rules never see them. :class:`SeriesTracker` keeps a
bounded window of each series and emits a draft when a series turns NaN/Inf (with the numbers
around it) or when fp16 loss scaling collapses. Loss-scale messages look like::

    Gradient overflow.  Skipping step, loss scale reduced to 0.5                     # apex
    [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 2, reducing to 1  # DeepSpeed
    Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.
    FloatingPointError: Minimum loss scale reached (0.0001).                           # fairseq
    Found NaN, decreased lg_loss_scale to -16199.354          # guided-diffusion: log2 of it

A handful of overflow skips early in an fp16 run is normal (the scaler searching its range down
from 2^16); only a scale driven to 8 or below by repeated overflows, or to its minimum, is
reported.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, deque

from . import trends
from .base import Draft
from .lazy import lazy_compile
from .lines import LogLine

#: A value named and printed NaN (``D_A: nan``, ``cycle_A=nan``, yolo2's ``w nan``), and a
#: record of three of them.
_NAMED_NAN = r"\b[A-Za-z][\w/.-]{0,40}(?:[ \t]*[:=][ \t]*|[ \t]+)nan\b"
_NAMED_NAN_RECORD_PATTERN = rf"{_NAMED_NAN}(?:[^\n]*{_NAMED_NAN}){{2}}"
#: A row of a column table with three NaN cells side by side, after at most four cells of
#: counters (ultralytics' ``0/272  18/7328  nan  nan  nan  nan  116  0.273`` under its
#: ``Epoch gpu_mem GIoU obj cls total`` header). torch and numpy print ``nan``; pandas'
#: ``NaN`` marks a missing cell of data, not a computation gone NaN.
_NAN_ROW_PATTERN = (
    r"^[ \t]*(?:[^\s:=]+[ \t]+){0,4}(?-i:nan)(?:[ \t]+(?-i:nan)){2}(?:[ \t]|$)"
    # ... and a row of a CSV summary (timm's summary.csv: ``211,nan,nan,1.0,5.0`` under
    # ``epoch,train_loss,eval_loss,eval_top1,eval_top5``): two NaN cells after the epoch.
    r"|^[ \t]*\d+(?:,[-+]?[\d.]+(?:e[-+]?\d+)?){0,3},(?-i:nan),(?-i:nan)(?:,|[ \t]*$)"
)

TRIGGERS = {
    "loss_scale": (
        r"(?i)Skipping step|loss scale already at minimum|Minimum loss scale reached|Grad scale is small"
        r"|gradient overflow|OVERFLOW!|Reducing dynamic loss scale"
        r"|(?:setting|reducing) loss scale to|decreased lg_loss_scale to"
        # PaddlePaddle's AMP: "Found inf or nan, current scale is: 2.84e-14, decrease to: ..."
        r"|Found inf or nan, current scale is:"
    ),
    # The run was stopped from outside (a scheduler's time limit, a person's Ctrl-C): after a
    # silence this marks a hang that someone gave up on, so a shorter silence is enough.
    "stopped": (
        r"(?i)\bKeyboardInterrupt\b|received signal (?:15|2)\b|(?:received|got|caught) SIG(?:TERM|INT)\b"
        r"|exit(?:ed with)? (?:code|status)[: ]+(?:143|130)\b"
    ),
    # Keras prints the epoch on a line of its own above the epoch's record (``Epoch 278/300``,
    # then `` - 80s - loss: 14.5063 - acc: 0.1000``), which names no epoch or step.
    "epoch_header": r"^[ \t]*Epoch (\d+)/\d+[ \t]*$",
    # Values printed with print(): a tensor (or one row of it) that is all NaN, or a line that
    # is only ``nan`` (print(loss.item())), after a step count (print(step, loss.item())). Real
    # logs print nothing else that way.
    "printed_nan": (
        r"(?i)^[ \t]*(?:tensor\([ \t]*)?\[+[ \t]*nan(?:,[ \t]*(?:nan|\.\.\.))+[ \t]*(?:\]|,[ \t]*$)"
        r"|^[ \t]*(?:\d+[ \t,:]{1,4})?nan[ \t]*$"
        # print(loss) of a 0-dim tensor: ``tensor(nan, device='cuda:0')``, counted like a bare nan.
        r"|^[ \t]*tensor\(nan(?:,[^\n]*)?\)[ \t]*$"
        # numpy prints an array without commas: "[Total Loss, KL Loss] : [   nan    nan 2.33]"
        r"|:[ \t]*\[[ \t]*nan[ \t]+(?:[^\]\n]*[ \t])?nan\b[^\]\n]*\][ \t]*$"
        # A record whose every term went NaN, under names that are not "loss" (CycleGAN's
        # "D_A: nan G_A: nan cycle_A: nan idt_A: nan"): three named NaN values on one line.
        rf"|{_NAMED_NAN_RECORD_PATTERN}"
        rf"|{_NAN_ROW_PATTERN}"
        # A key-value table's loss or grad-norm row gone NaN (rlpyt's and OpenAI's loggers:
        # "| model_loss/Average    nan", "| loss | nan |"); like bare values, three such rows.
        r"|(?:^|\|)[ \t]*(?:[A-Za-z][\w/.-]{0,40})?(?:loss|grad_?norm)[\w/.-]{0,20}[ \t]*\|?[ \t]+nan[ \t]*\|?[ \t]*$"
        # A row of a pipe table of numbers with a NaN cell, its header scrolled away (wespeaker's
        # "| 3| 900| 0.65296| 0| nan| 5.5|"); like bare values, three such rows.
        r"|\|(?:[ \t]*[-+]?\d[\d.]*(?:e[-+]?\d+)?[ \t]*\|){1,12}[ \t]*nan[ \t]*\|"
    ),
}

_SCALE = lazy_compile(
    r"(?i)(?:reduced to|reducing to|(?:setting|reducing) loss scale to:?"
    r"|Minimum loss scale reached \("
    r"|loss scale from \S+ to|Grad scale is small:|Found inf or nan, current scale is:)\s*"
    r"(?P<scale>\d+(?:\.\d*)?(?:e[-+]?\d+)?)"
)
#: guided-diffusion and the codebases built on it print the scale's log2, lowered by 1 per NaN.
_LG_SCALE = lazy_compile(r"decreased lg_loss_scale to (?P<lg>-?\d+(?:\.\d*)?)")
_AT_MINIMUM = lazy_compile(r"(?i)already at minimum|Minimum loss scale reached")
WINDOW = 256
#: Non-finite values in a row after which a metric has not recovered (nor at the log's end).
PERSISTED = 2
#: A scale this small after this many overflows means fp16 cannot represent the values.
COLLAPSED_SCALE = 8.0
MIN_OVERFLOWS = 3
#: fairseq's scaler starts at 128, not 2**16 like torch's, apex's and DeepSpeed's, and probes
#: upwards every window, so its "setting loss scale to: 4.0" notes are routine: the same depth
#: below its start is 2**13 times smaller.
_SMALL_START = lazy_compile(r"(?i)NOTE: overflow detected, setting loss scale to")
COLLAPSED_SMALL_START = COLLAPSED_SCALE / 2**13
#: Below this a scale has collapsed however few overflows were logged: every scaler's floor is
#: above it (fairseq's default min_loss_scale is 1e-4; torch's, apex's and DeepSpeed's are 1).
COLLAPSED_ON_SIGHT = 1e-3
_WATCHED = ("loss", "grad_norm", "eval_loss")
#: Bare ``nan`` lines it takes to say the run's printed values went NaN (one may be anything);
#: a printed tensor of NaN says it at once.
PRINTED_NAN_LINES = 3
_TENSOR_OF_NAN = lazy_compile(r"(?i)\[[ \t]*nan[ \t]*,")
#: ... and records of named NaN values it takes (two in a row: the run did not recover).
PRINTED_NAN_RECORDS = 2
_NAMED_NAN_RECORD = lazy_compile(f"(?i){_NAMED_NAN_RECORD_PATTERN}")
#: ... and table rows: one is enough (a table prints a row per epoch or per hundreds of steps).
_NAN_ROW = lazy_compile(_NAN_ROW_PATTERN)
# The module's triggers share one prefilter bit: each handler checks its own line again.
STOPPED = lazy_compile(TRIGGERS["stopped"])
_EPOCH_HEADER = lazy_compile(TRIGGERS["epoch_header"])
_PRINTED_NAN = lazy_compile(TRIGGERS["printed_nan"])
SERIES_CAPACITY = 2048
#: Records of a stretch of zero learning rates kept to judge it.
LR_ZERO_KEPT = 2048
#: Metric lines remembered to recognise the same line in a second file (a bounded memory).
SEEN_LIMIT = 65536
#: metric name -> the series it feeds (throughput series are split per progress bar).
_SERIES_KEYS = {
    "loss": "loss",
    "grad_norm": "grad_norm",
    "eval_loss": "eval_loss",
    "it_s": "it_s",
    "samples_s": "samples_s",
    "memory_gib": "memory_gib",
    "memory": "memory",
    "step_time_s": "step_time_s",
    "ppl": "ppl",
}


#: The losses and the accuracies printed beside them that are judged together (chance level).
_SCORED = (("loss", "accuracy"), ("eval_loss", "eval_accuracy"))
#: Records of each kept for it: enough to see how long a stretch at chance lasted.
SCORED_KEPT = 256

#: What a line may carry and still say nothing of training: a timer runs in evaluation, in a
#: retry loop and in a second pasted run, so it is not the progress that proves an error survived.
#: An accuracy without a loss is evaluation's (MONAI's ``Val 99/5000 5/60 acc 0.60 time 48.11s``).
_TIMING = frozenset(
    {
        "step_time_s",
        "step",
        "epoch",
        "lr",
        "step_total",
        "lr_zero_places",
        "accuracy",
        "eval_accuracy",
    }
)


def _timing_only(metrics: dict[str, float]) -> bool:
    return metrics.keys() <= _TIMING


def _text(value: float) -> str:
    return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")


class Series:
    """A bounded series: when full, every other point is dropped, so its shape survives."""

    def __init__(self, capacity: int = SERIES_CAPACITY) -> None:
        self.points: list[trends.Point] = []
        self.capacity = capacity
        self._stride = 1
        self._skipped = 0

    def add(self, point: trends.Point) -> None:
        """Keep the point, or count it towards the next kept one when decimating."""
        self._skipped += 1
        if self._skipped < self._stride:
            return
        self._skipped = 0
        self.points.append(point)
        if len(self.points) > self.capacity:
            self.points = self.points[::2]
            self._stride *= 2


#: Epochs a run must have gone past its first before a return to it is a restart.
RESTART_EPOCHS = 2


class SeriesTracker:
    """The metric history of one run, bounded in memory, and the detectors over it."""

    def __init__(self) -> None:
        self.history: dict[str, deque[float]] = {}
        self.series: dict[str, Series] = {}
        self.points = 0
        #: Metric lines read per source: whether a file went on training after an error.
        self.points_by_source: Counter[str] = Counter()
        self.last_step: float | None = None
        self.last_time: float | None = None
        #: Whether the log says the run was stopped from outside (see TRIGGERS["stopped"]).
        self.stopped = False
        self.last_line: LogLine | None = None
        self._reported: set[str] = set()
        self._first_seen: dict[int, str] = {}
        self._overflows = 0
        self._first_scale: float | None = None
        self._printed_nan: list[LogLine] = []
        self._nonfinite_streak: Counter[str] = Counter()
        self._persisted: set[str] = set()
        self._last_nonfinite: dict[str, tuple[float, LogLine | None]] = {}
        #: The latest value of each setting a metric line printed (``lr``): what a fix that
        #: changes it starts from.
        self.latest: dict[str, float] = {}
        #: Records in a row that printed a zero learning rate with a loss, and the longest such
        #: stretch that ended (its first LR_ZERO_KEPT records are kept: enough to judge it).
        self._lr_zero_run: list[trends.LrRecord] = []
        self._lr_zero_longest: list[trends.LrRecord] = []
        self._first_epoch: float | None = None
        self._top_epoch: float | None = None
        #: The epoch of a header line (Keras' ``Epoch 278/300``) that no record has taken yet.
        self._header_epoch: float | None = None
        #: The latest records that printed an accuracy beside a loss, training's and evaluation's.
        self._scored: dict[str, deque[trends.ScoredRecord]] = {}

    def header(self, text: str) -> None:
        """Note an epoch header line: the next record that names neither a step nor an epoch
        belongs to it (Keras' ``verbose=2`` record), so that identical records of successive
        epochs read as distinct records, not as one line copied by several ranks."""
        match = _EPOCH_HEADER.search(text)
        if match is not None:
            self._header_epoch = float(match.group(1))

    def restarts(self, metrics: dict[str, float]) -> bool:
        """Whether a metric line's epoch went back to where this run began, after at least
        :data:`RESTART_EPOCHS` more: the same job started again (a second run in one log)."""
        epoch = metrics.get("epoch")
        if epoch is None or self._first_epoch is None or self._top_epoch is None:
            return False
        return epoch <= self._first_epoch and self._top_epoch >= self._first_epoch + RESTART_EPOCHS

    def observe(
        self, metrics: dict[str, float], line: LogLine | None = None, time: float | None = None
    ) -> list[Draft]:
        """Take one metric line's values; return the drafts of anything that just happened."""
        self.points += 1
        if self._header_epoch is not None and "step" not in metrics and "epoch" not in metrics:
            metrics = {**metrics, "epoch": self._header_epoch}
            self._header_epoch = None
        if line is not None:
            self.last_line = line
            if not _timing_only(metrics):
                self.points_by_source[line.path] += 1
            if self._copy_of_another_file(line):
                return []
        if "step" in metrics and math.isfinite(metrics["step"]):  # int() of it must hold
            self.last_step = metrics["step"]
        epoch = metrics.get("epoch")
        if epoch is not None and math.isfinite(epoch):
            self._first_epoch = epoch if self._first_epoch is None else self._first_epoch
            self._top_epoch = epoch if self._top_epoch is None else max(self._top_epoch, epoch)
        lr = metrics.get("lr")
        if lr is not None and math.isfinite(lr) and lr > 0:
            self.latest["lr"] = lr
        if lr is not None:
            self._lr_record(metrics, lr, line)
        drafts = []
        scale = metrics.get("loss_scale")
        if scale is not None and math.isfinite(scale):
            drafts.extend(self._scale_metric(scale))
        for name in _WATCHED:
            value = metrics.get(name)
            if value is None:
                continue
            # get, then create: setdefault would build a deque (or a Series) on every call.
            series = self.history.get(name)
            if series is None:
                series = self.history[name] = deque(maxlen=WINDOW)
            if not math.isfinite(value):
                self._nonfinite_streak[name] += 1
                if name not in self._reported:
                    self._reported.add(name)
                    drafts.append(self._nonfinite(name, value, series, metrics.get("loss")))
                elif self._nonfinite_streak[name] == PERSISTED and name not in self._persisted:
                    self._persisted.add(name)
                    drafts.append(
                        self._nonfinite(name, value, series, metrics.get("loss"), persisted=True)
                    )
                self._last_nonfinite[name] = (value, line)
            else:
                self._nonfinite_streak[name] = 0
                series.append(value)
        for loss_name, accuracy_name in _SCORED:
            self._score(metrics, loss_name, accuracy_name, line, time)
        for name, value in metrics.items():
            key = _SERIES_KEYS.get(name)
            if key is None or not math.isfinite(value):
                continue
            if name == "it_s" and math.isfinite(metrics.get("bar_total", math.nan)):
                key = f"it_s/{int(metrics['bar_total'])}"  # one series per progress bar
            point = trends.Point(
                value, self.points, metrics.get("step"), time, line, metrics.get("epoch")
            )
            kept = self.series.get(key)
            if kept is None:
                kept = self.series[key] = Series()
            kept.add(point)
        if time is not None:
            self.progress.add(trends.Point(0.0, self.points, metrics.get("step"), time, line))
        return drafts

    def _score(
        self,
        metrics: dict[str, float],
        loss_name: str,
        accuracy_name: str,
        line: LogLine | None,
        time: float | None,
    ) -> None:
        """Keep a record that printed an accuracy beside its loss (a progress bar redrawn at
        the same step replaces its earlier drawing)."""
        loss, accuracy = metrics.get(loss_name), metrics.get(accuracy_name)
        if loss is None or accuracy is None or not math.isfinite(loss + accuracy):
            return
        point = trends.Point(
            loss, self.points, metrics.get("step"), time, line, metrics.get("epoch")
        )
        records = self._scored.get(loss_name)
        if records is None:
            records = self._scored[loss_name] = deque(maxlen=SCORED_KEPT)
        if records and point.step is not None and point.step == records[-1].loss.step:
            records.pop()
        records.append(trends.ScoredRecord(point, accuracy))

    def _lr_record(self, metrics: dict[str, float], lr: float, line: LogLine | None) -> None:
        """Follow the stretches of records that print a zero learning rate beside a loss."""
        loss = metrics.get("loss")
        if lr != 0 or loss is None or not math.isfinite(loss):
            if lr != 0 and len(self._lr_zero_run) > len(self._lr_zero_longest):
                self._lr_zero_longest = self._lr_zero_run
            if lr != 0:
                self._lr_zero_run = []
            return
        if len(self._lr_zero_run) < LR_ZERO_KEPT:
            record = trends.LrRecord(
                lr,
                loss,
                metrics.get("step"),
                metrics.get("step_total"),
                metrics.get("lr_zero_places", 0.0),
                line,
                metrics.get("epoch"),
            )
            self._lr_zero_run.append(record)

    def _copy_of_another_file(self, line: LogLine) -> bool:
        """Whether another file already showed this metric line: torchrun's ``--tee`` copies
        every rank's output into the console log, and a run directory holds both, so each value
        would count twice. Repeats within one file are real and kept."""
        key = hash(line.text)
        first = self._first_seen.get(key)
        if first is None:
            if len(self._first_seen) < SEEN_LIMIT:
                self._first_seen[key] = line.path
            return False
        return first != line.path

    @property
    def progress(self) -> Series:
        """The timestamped metric lines, for the silence detector."""
        return self.series.setdefault("progress", Series())

    def conclude(self) -> list[tuple[Draft, list[LogLine]]]:
        """Run the trend detectors over the series so far; each finding is reported once."""
        found: list[tuple[Draft, list[trends.Point]]] = []
        for key, series in self.series.items():
            points = series.points
            name = key.split("/", 1)[0]
            if name in ("loss", "grad_norm") and name not in self._reported:
                found += [
                    (d, [min(points, key=lambda p: p.value), points[-1]])
                    for d in [
                        trends.collapsed(name, points)
                        or trends.divergence(name, points)
                        or trends.exploded(name, points)
                        or trends.jumped(name, points)
                        or trends.spiked(name, points)
                        or trends.erratic(name, points)
                        or trends.climbed(name, points)
                    ]
                    if d
                ]
                found += [
                    (d, [points[0], points[-1]])
                    for d in [
                        trends.plateau(name, points)
                        or trends.at_chance(name, points)
                        or trends.frozen(name, points)
                        or trends.flat(name, points)
                        or trends.hovering_at_chance(name, points)
                    ]
                    if d
                ]
            elif name == "ppl":
                # Perplexity is exp(loss): a climb the loss' ratio test cannot see on a language
                # model's loss of 7 to 10 is a ratio of ten on it.
                found += [
                    (d, [min(points, key=lambda p: p.value), points[-1]])
                    for d in [trends.exploded(name, points) or trends.climbed(name, points)]
                    if d
                ]
            elif name in ("it_s", "samples_s"):
                found += [(d, points[-2:]) for d in [trends.throughput_drop(key, points)] if d]
            elif name == "step_time_s":
                found += [(d, [points[0], points[-1]]) for d in [trends.slowdown(key, points)] if d]
            elif name in ("memory_gib", "memory"):
                found += [
                    (d, [points[0], points[-1]]) for d in [trends.memory_growth(key, points)] if d
                ]
        # Training's records first: evaluation's would say the same thing a second time.
        for loss_name, _ in _SCORED:
            records = list(self._scored.get(loss_name, ()))
            draft = trends.accuracy_at_chance(
                loss_name, records, evaluation=loss_name == "eval_loss"
            )
            if draft and not any(found_draft.kind == "plateau" for found_draft, _ in found):
                stretch = records[-int(draft.fields["points"]) :]
                found.append((draft, [stretch[0].loss, stretch[-1].loss]))
        run = max(self._lr_zero_longest, self._lr_zero_run, key=len)
        found += [(d, [run[0], run[-1]]) for d in [trends.lr_zero(run)] if d]
        evals, train = self.series.get("eval_loss"), self.series.get("loss")
        if evals and train:
            found += [
                (d, evals.points[-2:])
                for d in [trends.overfitting(evals.points, train.points)]
                if d
            ]
        progress = self.series.get("progress")
        if progress:
            found += [
                (d, progress.points[-1:])
                for d in [trends.silence(progress.points, self.last_time, self.stopped)]
                if d
            ]
        # A value that turned non-finite and never came back before the log ended did not recover.
        ended: list[tuple[Draft, list[LogLine]]] = []
        for name, streak in self._nonfinite_streak.items():
            if streak and name not in self._persisted:
                self._persisted.add(name)
                value, line = self._last_nonfinite[name]
                draft = self._nonfinite(name, value, self.history[name], None, persisted=True)
                ended.append((draft, [line] if line is not None else []))
        results = list(ended)
        for draft, points in found:
            key = f"{draft.kind}:{draft.fields.get('metric', '')}"
            if key in self._reported:
                continue
            self._reported.add(key)
            results.append((draft, [p.line for p in points if p.line is not None]))
        return results

    def _nonfinite(
        self,
        name: str,
        value: float,
        series: deque[float],
        loss: float | None,
        persisted: bool = False,
    ) -> Draft:
        fields: dict[str, object] = {
            "metric": name,
            "value": _text(value),
            "points_before": len(series),
            "persisted": persisted,
        }
        if name == "grad_norm":
            # An inf gradient norm beside a loss still at the run's own scale is a mixed-precision
            # step that the loss scaler skipped (YOLO-World's reference log has one). A run
            # blowing up prints a NaN norm, a loss far above its history, or keeps printing inf
            # norms (persisted).
            earlier = list(self.history.get("loss", ()))
            if loss is not None and math.isfinite(loss):
                earlier.pop()  # this record's loss, kept just before its norm (_WATCHED's order)
                fields["overflow_step"] = (
                    value == math.inf and bool(earlier) and loss <= 2 * max(earlier)
                )
            else:
                fields["overflow_step"] = False
        if self.last_step is not None:
            fields["step"] = int(self.last_step)
        if series:
            best = min(series)
            last = series[-1]
            fields["last_finite"] = round(last, 6)
            fields["best"] = round(best, 6)
            fields["median"] = round(statistics.median(series), 6)
            if best > 0:
                fields["rise_ratio"] = round(last / best, 3)
        return Draft("nonfinite_metric", fields)

    def _scale_metric(self, scale: float) -> list[Draft]:
        """A loss scale printed as a metric (Megatron, insightface): collapse is a drop below 1.

        bf16 runs print a constant scale of 1.0, so only a fall from above 1 counts.
        """
        if self._first_scale is None:
            self._first_scale = scale
        if scale >= 1 or self._first_scale < 1 or "loss_scale" in self._reported:
            return []
        self._reported.add("loss_scale")
        fields: dict[str, object] = {
            "overflows": self._overflows,
            "at_minimum": False,
            "scale": scale,
            "first_scale": self._first_scale,
        }
        if self.last_step is not None:
            fields["step"] = int(self.last_step)
        return [Draft("loss_scale_collapse", fields)]

    def printed_nan(self, line: LogLine) -> list[tuple[Draft, list[LogLine]]]:
        """Read a line of printed NaN values (see TRIGGERS["printed_nan"]); return a draft with
        its evidence once they show the run computing NaN: a tensor of NaN at once, bare
        ``nan`` lines from the third."""
        if "printed_nan" in self._reported or not _PRINTED_NAN.search(line.text):
            return []
        self._printed_nan.append(line)
        tensor = _TENSOR_OF_NAN.search(line.text) is not None
        row = not tensor and _NAN_ROW.search(line.text) is not None
        records = _NAMED_NAN_RECORD.search(line.text) is not None
        needed = PRINTED_NAN_RECORDS if records else PRINTED_NAN_LINES
        if not (tensor or row) and len(self._printed_nan) < needed:
            return []
        self._reported.add("printed_nan")
        form = "tensor" if tensor else "row" if row else "record" if records else "number"
        fields: dict[str, object] = {
            "form": form,
            "text": line.text.strip()[:200],
            "points_before": self.points,
        }
        if len(self._printed_nan) > 1:
            fields["lines"] = len(self._printed_nan)
        if self.last_step is not None:
            fields["step"] = int(self.last_step)
        evidence, self._printed_nan = self._printed_nan, []
        return [(Draft("printed_nan", fields), evidence)]

    def loss_scale(self, text: str) -> list[Draft]:
        """Read a loss-scale message; return a draft once the scale has collapsed."""
        match = _SCALE.search(text)
        at_minimum = bool(_AT_MINIMUM.search(text))
        lg = _LG_SCALE.search(text) if match is None else None
        if not match and not at_minimum and lg is None:
            return []
        self._overflows += 1
        scale = float(match["scale"]) if match else None
        if scale is not None and self._first_scale is None:
            self._first_scale = scale
        if lg is not None:
            # Judged as the scale it stands for, but not quoted: the log printed its log2.
            scale = 2.0 ** min(float(lg["lg"]), 64.0)
        threshold = COLLAPSED_SMALL_START if _SMALL_START.search(text) else COLLAPSED_SCALE
        collapsed = at_minimum or (
            scale is not None
            and (
                scale < COLLAPSED_ON_SIGHT
                or (scale <= threshold and self._overflows >= MIN_OVERFLOWS)
            )
        )
        if not collapsed or "loss_scale" in self._reported:
            return []
        self._reported.add("loss_scale")
        fields: dict[str, object] = {"overflows": self._overflows, "at_minimum": at_minimum}
        if lg is not None:
            fields["lg_scale"] = lg["lg"]
        elif scale is not None:
            fields["scale"] = scale
        if self._first_scale is not None and self._first_scale != scale:
            fields["first_scale"] = self._first_scale  # where it fell from, when the log shows it
        if self.last_step is not None:
            fields["step"] = int(self.last_step)
        return [Draft("loss_scale_collapse", fields)]
