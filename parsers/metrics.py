"""Metric lines (loss, grad_norm, lr, step, epoch) in the formats trainers print them.

Examples of what it reads::

    {'loss': 2.3121, 'grad_norm': 1.84, 'learning_rate': 4.9e-05, 'epoch': 0.02}     # HF Trainer
    step 120 | loss 2.31 | lr 3.0e-04                                                 # plain
    Epoch 0:  45%|████▌     | 45/100 [00:01<00:01, 30.2it/s, v_num=0, train_loss=0.512]  # Lightning
    steps:  10%|█         | 100/1000 [01:00<09:00,  1.66it/s, avr_loss=0.123]          # kohya
    iteration      100/    1000 | lm loss: 6.5E+00 | loss scale: 65536.0 | grad norm: 1.2  # Megatron
    [Iteration 45459] Throughput is 447.2 records/second. Loss is Infinity.           # BigDL

    >>> parse_metrics("{'loss': nan, 'grad_norm': inf, 'learning_rate': 5e-05, 'epoch': 0.4}")
    {'loss': nan, 'grad_norm': inf, 'lr': 5e-05, 'epoch': 0.4}
    >>> parse_metrics("Epoch 0:  45%|####  | 45/100 [00:01<00:01, 30.2it/s, train_loss=0.512]")
    {'step': 45.0, 'epoch': 0.0, 'loss': 0.512, 'it_s': 30.2, 'bar_total': 100.0}
    >>> parse_metrics("[Iteration 45459] Throughput is 447.2 records/second. Loss is Infinity.")
    {'step': 45459.0, 'loss': inf}

Metric lines are the one kind of line that is frequent, so this stays a single compiled regex
over the candidate line; no pyparsing here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

from .lazy import lazy_compile

#: The end of a printed loss tensor: its autograd node is a loss's (``NllLossBackward0``).
_LOSS_GRAD_FN = r"grad_fn=<\w*Loss\w*Backward\d*>\)\s*$"
#: What may follow "loss" in a loss's name: a total's word or a stage's (FastSpeech 2's
#: ``mel_loss_before`` the postnet). The triggers and the named-loss key share it.
_LOSS_TAIL = r"(?:[ _](?:total|sum|avg|mean|before|after))?"
#: The step a value is indexed by, between its name and the value: ``train_batch_loss[ 6590 ]:``.
_INDEXED = r"(?:\[\s{0,8}\d{1,12}\s{0,8}\])?"

TRIGGERS = {
    # Non-finite values are rare and must never be sampled away: the main prefilter finds them.
    "metric_nonfinite": r"(?i)(?:loss|grad[_ ]norm|gnorm|xent)"
    + _LOSS_TAIL
    + _INDEXED
    + r"['\"\]]?\s*(?:[:=]|is )?\s*['\"]?\s*(?:tensor\()?[-+]?(?:nan|inf)",
    "metric_nonfinite_loss_at": r"(?i)loss at (?:step|batch|iter|iteration|epoch) \d+\s*[:=]\s*[-+]?(?:nan|inf)",
}
#: What makes a line a metric line. Metric lines can be half of a log, so they are not part of
#: the main prefilter: a run's first ones are all found, later ones sampled (see extract.py).
METRIC_TRIGGERS = {
    "metric_loss": r"(?i)loss"
    + _LOSS_TAIL
    + _INDEXED
    + r"['\"\]]?\s*(?:[:=]|is )?\s*['\"]?\s*(?:tensor\()?[-+]?(?:\d|\.\d|nan|inf)",
    "metric_grad_norm": r"(?i)(?:grad[_ ]norm|gnorm)['\"]?\s*[:=]?\s*['\"]?[-+]?(?:\d|nan|inf)",
    # ``Average loss at step 2000: 4.352`` (TensorFlow's tutorials, code2seq): the step between.
    "metric_loss_at": r"(?i)loss at (?:step|batch|iter|iteration|epoch) \d+\s*[:=]\s*[-+]?(?:\d|\.\d|nan|inf)",
    # OpenNMT's ``ppl: 55.22; xent: 4.01``: perplexity and cross-entropy are its loss.
    "metric_ppl": r"(?i)\b(?:ppl|xent)\s*[:=]\s*\d",
    "metric_rate": r"\d(?:it/s|s/it)\b|\d ?(?:samples|tokens|tok)/s|SamplesPerSec=\d",
    "metric_step_time": r"(?i)(?:^|[^\w/])(?:batch_|iter_|step_|epoch_)?time(?:_per_(?:step|iter\w*))?\s*[:=]?\s*\d+\.\d|elapsed time per iteration \(ms\)",
    "metric_memory": r"(?i)\b(?:mem(?:ory)?(?:_usage|_allocated|_reserved)?|gpu_mem|max_mem\w*|rss)\s*[:=]?\s*(?:cuda:\d+\s*)?\d+(?:\.\d+)?\s*(?:[KMGT]i?B|[MG]\b)",
    # A memory line whose values sit under generic keys, with or without a unit:
    # ``Mem memory (MB) | allocated: 20.4``, ``Memory info of GPU:0: current: 0.18``,
    # ``memory_usage: 998.12``.
    "metric_memory_keyed": r"(?i)\bmem[^\n]{0,60}(?:allocated|current|used|usage)\s*[:=]\s*\d",
    # print(loss) of a loss tensor: ``tensor(3.6976, device='cuda:0', grad_fn=<NllLossBackward>)``.
    "metric_loss_tensor": r"^\s*tensor\(\s*[-+]?(?:\d|\.\d|nan|inf)[^\n]*" + _LOSS_GRAD_FN,
}
METRIC_PATTERN = "|".join(f"(?:{rx})" for rx in METRIC_TRIGGERS.values())
#: The same, matching within one line whatever the lines around it (multi-line ``^``, no
#: space or separator that is a newline): which lines are metric lines, and so which are
#: sampled, then never depends on where the input was cut into chunks.
METRIC_LINE_PATTERN = METRIC_PATTERN.replace(r"\s", r"[^\S\n]").replace(r"[^\w/]", r"[^\w/\n]")

#: PaddleOCR pads its values with ``{:x<6f}``: a NaN loss prints as ``nanxxx``.
_NUMBER = r"[-+]?(?:nan(?:x{1,3})?|inf(?:inity|x{1,3})?|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_PROGRESS = lazy_compile(r"\|\s*(?P<step>\d+)/(?P<total>\d+)\s*\[")
_LOSS_TENSOR = lazy_compile(
    rf"\s{{0,8}}tensor\(\s{{0,8}}(?P<value>{_NUMBER})\b[^\n]{{0,200}}{_LOSS_GRAD_FN}"
)
# The metric regexes are Python's (a call into the RE2 wrapper costs more than the search on a
# short line) and linear: every number starts where a number starts (``(?<![\d.])``, a run of
# digits is tried once, not from each of its digits), every run of spaces is bounded, and the
# line is cut to MAX_METRIC_TEXT characters.
#: ``30.2it/s`` (tqdm), but not the number before a key ``it/s 5.1``: that one is the key's.
_RATE = lazy_compile(r"(?<![\d.])(?P<rate>\d+(?:\.\d+)?)\s?(?P<unit>it/s|s/it)\b")
_KEYED = lazy_compile(r"\s*[:=]?\s*\d")
#: ``it/s 5.1``, ``it/s: 5.1``, ``s/it=0.2``: the unit as a key, its value after it.
_RATE_KEY = lazy_compile(r"(?<![\w.])(?P<unit>it/s|s/it)\s*[:=]?\s*(?P<rate>\d+(?:\.\d+)?)")
_SAMPLES = lazy_compile(
    r"(?<![\d.])(?P<rate>\d+(?:\.\d+)?)\s?(?:samples|tokens|tok)/s(?:ec)?\b|SamplesPerSec=(?P<rate2>\d+(?:\.\d+)?)"
)
#: Seconds a step took: AverageMeter's ``Time 0.414 (0.414)``, mmcv's ``time: 0.512``, Megatron's
#: ``elapsed time per iteration (ms): 84606.2``. A decimal point is required, so that a clock
#: time or a date (``time: 2021-01-13``) is never read as one. (Python regexes on a line cut to
#: MAX_METRIC_TEXT characters.)
_STEP_TIME = lazy_compile(
    r"(?i)(?<![\w/])(?:batch_|iter_|step_|epoch_)?time(?:_per_(?:step|iter\w*))?\s*[:=]?\s*"
    r"(?P<value>\d+\.\d+)(?P<ms>\s?ms\b)?"
)
_MEGATRON_TIME = lazy_compile(r"elapsed time per iteration \(ms\):\s*(?P<value>\d+(?:\.\d+)?)")
_MEMORY = lazy_compile(
    r"(?i)\b(?:mem(?:ory)?(?:_usage|_allocated|_reserved)?|gpu_mem|max_mem\w{0,32}|rss)"
    r"\s{0,32}[:=]?\s{0,32}(?:cuda:\d{1,3}\s{0,32})?(?P<value>\d+(?:\.\d+)?)\s{0,32}"
    r"(?P<unit>[KMGT]i?B|[MG]\b)"
)
#: The generic keys of a memory line (the first that is not a peak: a maximum only ever rises).
_MEMORY_KEYED = lazy_compile(
    r"(?i)(?<![\w])(?<!max )(?<!peak )(?:allocated|current|used|mem(?:ory)?[_ ]usage)"
    r"\s{0,32}[:=]\s{0,32}(?P<value>\d+(?:\.\d+)?)(?![\d.]|\s?%)\s{0,32}(?P<unit>[KMGT]i?B|[MG]\b)?"
)
#: A unit the line names once for all its values: ``Mem memory (MB) | allocated: 20.4``.
_MEMORY_UNIT_HINT = lazy_compile(r"\((?P<unit>[KMGT]i?B)\)")
_MEMORY_UNITS = {"k": 1 / 2**20, "m": 1 / 2**10, "g": 1.0, "t": 1024.0}
_PLAIN_STEP = lazy_compile(
    r"(?i)\b(?:global[_ ]step|step|iteration|iter)\s{0,32}[:=]?\s{0,32}(?P<step>\d+)\b"
)
#: A value's running average in brackets after it, when that is not finite (``(inf)``, ``(nan)``).
_RUNNING_NONFINITE = lazy_compile(r"\s{1,4}\(\s?(?P<value>[-+]?(?:nan|inf))\s?\)", re.IGNORECASE)
#: The names a running average is read for: losses (a named one has no canonical name).
_LOSSES = frozenset({"loss", "eval_loss", None})
#: A loss printed with its step between the two: ``Average loss at batch 100: nan``.
_LOSS_AT = lazy_compile(
    r"(?i)\bloss at (?P<unit>step|batch|iter|iteration|epoch) {0,4}(?P<count>\d{1,15}) {0,4}[:=]"
    rf" {{0,4}}(?P<value>{_NUMBER})(?![\w.])"
)
#: An epoch counted out of a total that no ``key: value`` pair gave (CNTK's ``Epoch[3 of 20]``).
_EPOCH_OF = lazy_compile(r"(?i)\bepoch\s{0,4}\[?\s{0,4}(?P<epoch>\d+)\s{0,4}(?:of|/)\s{0,4}\d+")
#: A bracketed counter, the step of torchvision's MetricLogger and of the ImageNet example
#: (``Epoch: [0]  [ 100/1000]``, ``Epoch: [1][  21/1424]``, mmcv's ``Epoch [3][50/12414]``);
#: one right after "epoch" counts epochs (``Epoch [2/10]``) and is skipped.
_BRACKET_STEP = lazy_compile(
    r"(?i)(?P<epoch>epoch\W{0,4})?\[\s{0,8}(?P<step>\d+)\s{0,8}/\s{0,8}(?P<total>\d+)\s{0,8}\]"
)

_CANONICAL = {
    "loss": "loss",
    "train_loss": "loss",
    "train/loss": "loss",
    "training_loss": "loss",
    "train loss": "loss",
    "avr_loss": "loss",
    "avg_loss": "loss",
    "lm loss": "loss",
    "lm_loss": "loss",
    "loss_step": "loss",
    "train_loss_step": "loss",
    "eval_loss": "eval_loss",
    "val_loss": "eval_loss",
    "eval/loss": "eval_loss",
    "val/loss": "eval_loss",
    "validation_loss": "eval_loss",
    "valid_loss": "eval_loss",
    "valid loss": "eval_loss",
    "validation loss": "eval_loss",
    "val loss": "eval_loss",
    "vali loss": "eval_loss",  # Informer, Autoformer, Time-Series-Library
    "vali_loss": "eval_loss",
    "eval loss": "eval_loss",
    "dev loss": "eval_loss",
    "dev_loss": "eval_loss",
    "test loss": "eval_loss",
    "test_loss": "eval_loss",
    "grad_norm": "grad_norm",
    "grad norm": "grad_norm",
    "gradient_norm": "grad_norm",
    "gnorm": "grad_norm",
    "train/grad_norm": "grad_norm",
    "lr": "lr",
    "learning_rate": "lr",
    "train/learning_rate": "lr",
    "loss scale": "loss_scale",
    "loss_scale": "loss_scale",
    "grad scale": "loss_scale",
    "fp16 grad scale": "loss_scale",
    "scale": "loss_scale",
    "step": "step",
    "global_step": "step",
    "global step": "step",
    "iteration": "step",
    "iter": "step",
    "epoch": "epoch",
    "train/epoch": "epoch",
    "ppl": "ppl",
    "perplexity": "ppl",
    "train_ppl": "ppl",
    # Cross-entropy is the loss under its own name (OpenNMT prints ``xent: 4.01``).
    "xent": "loss",
    # Accuracy, read only beside a loss (no trigger of its own): the pair says chance level.
    "acc": "accuracy",
    "acc.": "accuracy",
    "accuracy": "accuracy",
    "train_acc": "accuracy",
    "train_accuracy": "accuracy",
    "train acc": "accuracy",
    "train/acc": "accuracy",
    "train/accuracy": "accuracy",
    "training acc": "accuracy",
    "training acc.": "accuracy",
    "training accuracy": "accuracy",
    "val_acc": "eval_accuracy",
    "val_accuracy": "eval_accuracy",
    "val acc": "eval_accuracy",
    "val/acc": "eval_accuracy",
    "valid acc": "eval_accuracy",
    "valid_acc": "eval_accuracy",
    "valid accuracy": "eval_accuracy",
    "valid_accuracy": "eval_accuracy",
    "validation acc": "eval_accuracy",
    "validation accuracy": "eval_accuracy",
    "eval_accuracy": "eval_accuracy",
    "eval_acc": "eval_accuracy",
    "eval/accuracy": "eval_accuracy",
    "test acc": "eval_accuracy",
    "test_acc": "eval_accuracy",
    "test_accuracy": "eval_accuracy",
    "test accuracy": "eval_accuracy",
    "dev acc": "eval_accuracy",
}


# A pair is one of the known keys, then its number. Linear time on any line, in RE2 (a Python
# regex tried at every word start of a 64 KiB line took seconds, and "loss" followed by 2,000
# spaces 100 s): RE2 has no look-around, so the character before the key is consumed (_pairs
# puts a space before the line) and the number's end is checked in Python.
#: A named training loss (``Gen Loss Total``, ``mask_loss``): a key that ends in "loss", or in
#: "loss" and a _LOSS_TAIL word; read as the loss when the line has no plain one.
_NAMED_LOSS_KEY = r"[A-Za-z][A-Za-z0-9_. -]{0,30}[ _]loss" + _LOSS_TAIL
#: A named gradient norm (Dreamer's ``model_grad_norm``, ``actor_grad_norm``): read as the
#: gradient norm when the line has no plain one, the first of them.
_NAMED_GRAD_NORM_KEY = r"[A-Za-z][A-Za-z0-9]{0,30}(?:_[A-Za-z0-9]{1,30}){0,3}_grad_?norm"


def _trie(words: list[str]) -> str:
    """An alternation of ``words`` as a trie: Python's regex engine tries an alternation's
    branches one by one at every position (60 keys, each compared case-blind), a trie only the
    branches that share the next letter. It matches exactly as the words sorted longest first
    would: words that match at one place are prefixes of each other, and the greedy optional
    tail tries the longer one first."""
    if words == [""]:
        return ""
    heads: dict[str, list[str]] = {}
    for word in words:
        if word:
            heads.setdefault(word[0], []).append(word[1:])
    branches = [re.escape(head) + _trie(sorted(rests)) for head, rests in heads.items()]
    body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
    return f"(?:{body})?" if "" in words else body


_KEYS = _trie(sorted(_CANONICAL))
_NOT_TRAINING = lazy_compile(r"(?:^|[\s_/.-])(?:val|valid|validation|eval|test|dev)(?:$|[\s_/.-])")
_BEST_SO_FAR = lazy_compile(r"(?:min|max|best|lowest|highest)[_ ]")
#: A line that opens with evaluation's word reports evaluation's values under plain names:
#: ``Valid Epoch: 16 Loss: nan``, ``Test: [0/782] ... Loss 2.8972``, ``Validation loss=0.41``.
_EVALUATION_LINE = lazy_compile(
    r"(?i)^\W{0,4}(?:val|valid|validation|eval|evaluation|test|testing)\b"
)
_PAIR_TAIL = (
    _INDEXED
    # A value printed as a tensor counts as its number: ``loss = tensor(inf, device='cuda:0')``.
    # A key in brackets counts as the key: ``[Loss] 51566519.44`` (LION's trainer).
    + r"""['"\]]?(?:\s{0,32}[:=]\s{0,32}|\s{1,32}is\s{1,32}|\s{1,32})(?:\[\s{0,32}|tensor\()?['"]?"""
    rf"""(?P<value>{_NUMBER})"""
)
_PAIR = lazy_compile(
    rf"""(?i)[^A-Za-z0-9_./-]['"]?(?P<key>{_KEYS}|{_NAMED_LOSS_KEY}|{_NAMED_GRAD_NORM_KEY}){_PAIR_TAIL}"""
)
#: The same without the named keys, for the lines where they cannot match (most): they start at
#: every letter and run 30 characters ahead, the costliest part of the search.
_PAIR_KNOWN = lazy_compile(rf"""(?i)[^A-Za-z0-9_./-]['"]?(?P<key>{_KEYS}){_PAIR_TAIL}""")
#: Where a named-loss key could end: its " loss" or "_loss".
_LOSS_WORD = lazy_compile(r"(?i)[ _]loss")
_NAMED_LOSS = lazy_compile(rf"(?i){_NAMED_LOSS_KEY}")
#: A number followed by a letter, a digit or a dot and more (a version, a path) goes on; a
#: sentence's full stop ends it ("Loss is 1.308916. Current learning rate ...").
_NUMBER_GOES_ON = lazy_compile(r"\w|\.\w")
#: The pair patterns' groups, read by number in the hot loop (tests hold all four to them; the
#: patterns compile on first use, so no ``groupindex`` is read here).
KEY_GROUP, VALUE_GROUP = 1, 2


def _lower_case(pattern: re.Pattern[str]) -> re.Pattern[str]:
    """``pattern`` without ``(?i)``, for ASCII text already lowered. Its keys and words are
    written in lower case, so on ASCII text it matches exactly where the case-blind one does
    (case-blind matching, where Python's regex engine folds every character it compares, takes
    about three times as long; non-ASCII text, where folding is not one letter for one, keeps
    the case-blind patterns)."""
    assert pattern.pattern.startswith("(?i)")
    return lazy_compile(pattern.pattern[4:])


_PAIR_LOWER, _PAIR_KNOWN_LOWER = _lower_case(_PAIR), _lower_case(_PAIR_KNOWN)
_LOSS_WORD_LOWER, _NAMED_LOSS_LOWER = _lower_case(_LOSS_WORD), _lower_case(_NAMED_LOSS)
#: Characters of a line read for metrics: metric lines are short, a long line is something else
#: that happens to mention a loss (and each regex below costs time per character).
MAX_METRIC_TEXT = 2048


def _value(text: str) -> float:
    lowered = text.lower()
    if "nan" in lowered:
        return math.nan
    if "inf" in lowered:
        return -math.inf if lowered.startswith("-") else math.inf
    return float(text)


#: Values that say where or how a run trains, not what it measured: a line of only these is no
#: metric line.
_NOT_A_MEASURE = frozenset({"step", "epoch", "lr", "bar_total", "step_total", "lr_zero_places"})
#: Metrics whose value may be NaN or infinite in a real log (what the detectors look for).
#: A step, epoch, rate or learning rate that is not finite (``step inf``, or a number too long
#: for a float) is no value at all: it is left out rather than passed on to break arithmetic.
_MAY_BE_NONFINITE = frozenset({"loss", "eval_loss", "grad_norm", "ppl", "loss_scale"})


#: ``Step 380000/1000000``: the step count printed after a step.
_TOTAL = lazy_compile(r"/\s{0,8}(\d{1,15})\b")
#: Accuracies, read only as fractions or percentages.
_ACCURACIES = frozenset({"accuracy", "eval_accuracy"})


def _zero_places(text: str) -> float:
    """The decimals of a printed zero: ``0.00000`` is any rate under 5e-6 rounded, eight places
    are a rate that is zero in practice, and Python's ``0.0`` or ``0`` is exactly zero."""
    if text.lstrip("+-") in ("0", "0.0") or "e" in text.lower():
        return 99.0
    return float(len(text.partition(".")[2]))


def _finite(text: str) -> float | None:
    """``float(text)`` if that is a finite number, else None."""
    value = float(text)
    return value if math.isfinite(value) else None


def _may_name_a_loss(text: str, word: re.Pattern[str], named: re.Pattern[str]) -> bool:
    """Whether a named-loss key could match anywhere in ``text``: it ends in " loss" or
    "_loss" and starts at most 31 characters before, so only those places are searched."""
    for found in word.finditer(text):
        if named.search(text, max(0, found.start() - 31), found.end()):
            return True
    return False


def _pairs(text: str) -> Iterator[tuple[int, int, str, str]]:
    """The key-number pairs of ``text``: where each starts and ends in ``" " + text``, its key
    and its number as written. Each number ends where a number can (a number followed by a
    letter, a digit or a dot is part of something else)."""
    text = " " + text  # the character before a key at the start of the line
    if text.isascii():  # most lines: the lower-case patterns over the lowered text
        subject = text.lower()
        named = "_grad" in subject or _may_name_a_loss(subject, _LOSS_WORD_LOWER, _NAMED_LOSS_LOWER)
        pair = _PAIR_LOWER if named else _PAIR_KNOWN_LOWER
    else:
        subject = text
        named = "_grad" in text.lower() or _may_name_a_loss(text, _LOSS_WORD, _NAMED_LOSS)
        pair = _PAIR if named else _PAIR_KNOWN
    pos = 0
    while pos <= len(subject):
        match = pair.search(subject, pos)
        if match is None:
            return
        end = match.end(VALUE_GROUP)
        if _NUMBER_GOES_ON.match(subject, end):
            pos = match.start(KEY_GROUP)  # not a pair here: look on from this key's first letter
            continue
        key = text[match.start(KEY_GROUP) : match.end(KEY_GROUP)]
        yield match.start(), match.end(), key, text[match.start(VALUE_GROUP) : end]
        pos = match.end()


def parse_metrics(text: str) -> dict[str, float]:
    """Return the metrics a line reports, under canonical names (``loss``, ``eval_loss``,
    ``grad_norm``, ``lr``, ``loss_scale``, ``step``, ``epoch``, ``accuracy``,
    ``eval_accuracy``); ``{}`` if it reports none.

    A line without a plain ``loss`` takes its first named training loss (``Gen Loss Total``,
    ``mask_loss``, ``total_loss``) as the loss: a NaN there is a NaN loss. A named loss of
    validation (``test val_loss``, ``valid_mel_loss``) is the validation loss the same way, and
    a named gradient norm (``model_grad_norm``) the gradient norm."""
    found: dict[str, float] = {}
    text = text[:MAX_METRIC_TEXT]
    named_loss: float | None = None
    named_eval_loss: float | None = None
    named_grad_norm: float | None = None
    for _, end, written, number in _pairs(text):
        key = written.lower()
        name = _CANONICAL.get(key)
        try:
            value = _value(number)
        except ValueError:
            continue
        running = _RUNNING_NONFINITE.match(text, end - 1) if name in _LOSSES else None
        if running is not None and math.isfinite(value):
            # MetricLogger's ``loss: 6.7223 (inf)``: the run's average is not finite, so some
            # step's loss was not either, whatever this step's value. (A grad norm's is, under
            # a loss scaler that skips the steps whose gradients overflowed.)
            value = _value(running["value"])
        if name is None:
            if _BEST_SO_FAR.match(key):
                continue  # "Min_val_loss: 1e10", "best_loss": a record of the run, not this step's
            if key.endswith(("grad_norm", "gradnorm")):
                if named_grad_norm is None:
                    named_grad_norm = value  # "model_grad_norm", "actor_grad_norm"
            elif _NOT_TRAINING.search(key):
                if named_eval_loss is None:
                    named_eval_loss = value  # "test val_loss", "valid_mel_loss"
            elif named_loss is None:
                named_loss = value
            continue
        if name in _ACCURACIES and _TOTAL.match(text, end - 1) is not None:
            # pytorch/examples' ``Accuracy: 9898/10000 (99%)`` counts correct answers: not a
            # fraction, and its ratio is no number the log printed.
            continue
        if name not in found and (math.isfinite(value) or name in _MAY_BE_NONFINITE):
            found[name] = value
            if name == "lr" and value == 0:
                found["lr_zero_places"] = _zero_places(number)
            elif name == "step":
                total = _TOTAL.match(text, end - 1)  # _pairs counts from a leading space
                if total is not None:
                    found["step_total"] = float(total.group(1))
    if "loss" not in found and named_loss is not None:
        found["loss"] = named_loss
    if "eval_loss" not in found and named_eval_loss is not None:
        found["eval_loss"] = named_eval_loss
    if "grad_norm" not in found and named_grad_norm is not None:
        found["grad_norm"] = named_grad_norm
    if "loss" in found and "eval_loss" not in found and _EVALUATION_LINE.match(text):
        found["eval_loss"] = found.pop("loss")
        if "accuracy" in found and "eval_accuracy" not in found:
            found["eval_accuracy"] = found.pop("accuracy")
    lowered = text.lower()
    if "loss" not in found and "loss at " in lowered:
        _loss_at(text, found)
    if not found and "grad_fn=<" in text:
        printed = _LOSS_TENSOR.match(text)
        if printed is not None:
            found["loss"] = _value(printed["value"])
    if "step" not in found:
        progress = _PROGRESS.search(text) if "/" in text else None
        plain = None
        if progress is None and ("step" in lowered or "iter" in lowered):
            plain = _PLAIN_STEP.search(text)
        counter = None
        if progress is None and plain is None and "/" in text and "[" in text:
            progress = counter = _bracket_step(text)
        written = progress["step"] if progress else plain.group(1) if plain else None
        step = _finite(written) if written is not None else None
        if step is not None:
            found = {"step": step, **found}
            if counter is not None and "step_total" not in found:
                found["step_total"] = float(counter["total"])  # MetricLogger's [220/17227]
    if "epoch" not in found and "epoch" in lowered:
        counted = _EPOCH_OF.search(text)
        if counted is not None:
            found["epoch"] = float(counted["epoch"])
    _rates_and_memory(text, lowered, found)
    if found.keys() <= _NOT_A_MEASURE:
        return {}
    return found


def _loss_at(text: str, found: dict[str, float]) -> None:
    """``Average loss at step 2000: 4.352``: the loss, and the step (or epoch) it names."""
    match = _LOSS_AT.search(text)
    if match is None:
        return
    found["loss"] = _value(match["value"])
    counted = "epoch" if match["unit"].lower() == "epoch" else "step"
    found.setdefault(counted, float(match["count"]))


def _bracket_step(text: str) -> re.Match[str] | None:
    """The first bracketed ``[step/total]`` counter of ``text`` that does not count epochs."""
    for found in _BRACKET_STEP.finditer(text):
        if found["epoch"] is None:
            return found
    return None


#: The ASCII characters _number_start passes over: digits, the dot, and str.isspace's.
_NUMBER_RUN = "0123456789. \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f"


def _first_unit(text: str) -> int:
    """Where ``it/s`` or ``s/it`` first occurs in ``text``; -1 if nowhere."""
    its, sit = text.find("it/s"), text.find("s/it")
    return min(its, sit) if its >= 0 and sit >= 0 else max(its, sit)


def _number_start(text: str, end: int) -> int:
    """The start of the run of digits, dots and spaces that ends at ``end`` (a number and the
    space before its unit can only start there or later)."""
    if text.isascii():  # most lines: one C call instead of a Python loop per character
        return len(text[:end].rstrip(_NUMBER_RUN))
    while end and (text[end - 1].isdigit() or text[end - 1] == "." or text[end - 1].isspace()):
        end -= 1
    return end


def _rates_and_memory(text: str, lowered: str, found: dict[str, float]) -> None:
    """Throughput (``it_s``, with ``bar_total`` naming its progress bar) and ``memory_gib``.

    Each regex runs only on lines holding its words: most metric lines hold none of them, and
    a call into RE2 costs more than the substring tests."""
    rate: tuple[str, str] | None = None  # (number, unit)
    unit = _first_unit(text) if "/s" in text or "/it" in text else -1
    if unit >= 0:
        # Both searches start where a match can first start (a regex search walks every
        # character before it): the first unit, or the number just before it.
        keyed = _RATE_KEY.search(text, unit)
        if keyed:
            rate = (keyed["rate"], keyed["unit"])
        else:
            matches = _RATE.finditer(text, _number_start(text, unit))
            tqdm = next((m for m in matches if not _KEYED.match(text, m.end())), None)
            rate = (tqdm.group(1), tqdm.group(2)) if tqdm else None
    value = _finite(rate[0]) if rate else None
    if rate and value is not None:
        found["it_s"] = value if rate[1] == "it/s" else (1 / value if value else 0.0)
        progress = _PROGRESS.search(text)
        total = _finite(progress["total"]) if progress else None
        if total is not None:
            found["bar_total"] = total
    elif not rate and ("/s" in text or "persec" in lowered):
        samples = _SAMPLES.search(text)
        value = _finite(samples.group(1) or samples.group(2)) if samples else None
        if value is not None:
            found["samples_s"] = value
    # Most metric lines carry no timer: a substring test spares them two regex searches.
    megatron = _MEGATRON_TIME.search(text) if "per iteration" in text else None
    step_time = megatron or (_STEP_TIME.search(text) if "ime" in text or "IME" in text else None)
    seconds = _finite(step_time["value"]) if step_time else None
    if seconds is not None:
        found["step_time_s"] = seconds / 1000 if megatron or step_time["ms"] else seconds
    memory = _MEMORY.search(text) if "mem" in lowered or "rss" in lowered else None
    value = _finite(memory.group(1)) if memory else None
    if memory and value is not None:
        found["memory_gib"] = value * _MEMORY_UNITS[memory.group(2)[0].lower()]
    elif memory is None and "mem" in lowered:
        _keyed_memory(text, found)


def _keyed_memory(text: str, found: dict[str, float]) -> None:
    """A memory line's value under a generic key: in GiB when the line names a unit, else as
    ``memory``, a series judged only against itself."""
    keyed = _MEMORY_KEYED.search(text)
    value = _finite(keyed["value"]) if keyed else None
    if keyed is None or value is None:
        return
    hint = keyed["unit"] or next((m["unit"] for m in _MEMORY_UNIT_HINT.finditer(text)), None)
    if hint:
        found["memory_gib"] = value * _MEMORY_UNITS[hint[0].lower()]
    else:
        found["memory"] = value


def memory_text(text: str) -> str | None:
    """The memory value of a metric line as it was printed (``555 MB``, ``20.4``), for evidence
    in summaries: the series holds it converted to GiB."""
    text = text[:MAX_METRIC_TEXT]
    match = _MEMORY.search(text) or _MEMORY_KEYED.search(text)
    if match is None:
        return None
    unit = match["unit"] or next((m["unit"] for m in _MEMORY_UNIT_HINT.finditer(text)), None)
    return f"{match['value']} {unit}" if unit else match["value"]
