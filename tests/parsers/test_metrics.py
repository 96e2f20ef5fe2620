"""Metric lines in the formats trainers print."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from crashcart.parsers import metrics
from crashcart.parsers.metrics import parse_metrics


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "{'loss': 2.3121, 'grad_norm': 1.84, 'learning_rate': 4.9e-05, 'epoch': 0.02}",
            {"loss": 2.3121, "grad_norm": 1.84, "lr": 4.9e-05, "epoch": 0.02},
        ),
        ("step 120 | loss 2.31 | lr 3.0e-04", {"step": 120, "loss": 2.31, "lr": 3e-4}),
        (
            "Epoch 0:  45%|####  | 45/100 [00:01<00:01, 30.2it/s, v_num=0, train_loss=0.512]",
            {"epoch": 0, "step": 45, "loss": 0.512, "it_s": 30.2, "bar_total": 100},
        ),
        (
            "steps:  10%|#         | 100/1000 [01:00<09:00,  1.66it/s, avr_loss=0.123]",
            {"step": 100, "loss": 0.123, "it_s": 1.66, "bar_total": 1000},
        ),
        (
            " iteration      100/    1000 | lm loss: 6.5E+00 | loss scale: 65536.0 | grad norm: 1.2 |",
            {"step": 100, "step_total": 1000, "loss": 6.5, "loss_scale": 65536.0, "grad_norm": 1.2},
        ),
        ("Train Epoch: 1 [0/60000 (0%)]\tLoss: 2.305", {"epoch": 1, "loss": 2.305}),
        ("{'eval_loss': 1.9, 'eval_runtime': 3.2, 'epoch': 1.0}", {"eval_loss": 1.9, "epoch": 1.0}),
        (
            "Epoch=3,Loss:0.349681437,Accuracy:0.8475,Valid Loss:0.514342368,Valid Accuracy:0.7628",
            {
                "epoch": 3,
                "loss": 0.349681437,
                "accuracy": 0.8475,
                "eval_loss": 0.514342368,
                "eval_accuracy": 0.7628,
            },
        ),
        (  # TensorFlowTTS's FastSpeech 2: the mel loss before the postnet
            "INFO: (Step: 95400) train_mel_loss_before = 0.4213.",
            {"step": 95400, "loss": 0.4213},
        ),
        (  # Informer and Time-Series-Library: the validation loss, not the test loss after it
            "Epoch: 3, Steps: 225 | Train Loss: 0.1493344 Vali Loss: 0.1429051 Test Loss: 0.2010405",
            {"epoch": 3, "loss": 0.1493344, "eval_loss": 0.1429051},
        ),
        (
            "Epoch: [1][100/5005]\tTime 8.719 (0.361)\tData 8.597 (0.230)\tLoss 1.2987 (1.2753)",
            {"epoch": 1, "step": 100, "step_total": 5005, "step_time_s": 8.719, "loss": 1.2987},
        ),
        (  # torchvision's MetricLogger, as LAVIS, DETR and DeiT print it
            "Train: data epoch: [0]  [3950/5000]  eta: 0:08:37  lr: 0.000029  loss: 10.3750  "
            "time: 0.4920  data: 0.0000  max mem: 43374",
            {
                "epoch": 0,
                "step": 3950,
                "step_total": 5000,
                "lr": 2.9e-05,
                "loss": 10.375,
                "step_time_s": 0.492,
            },
        ),
        (  # mmcv's text logger
            "mmdet - INFO - Epoch [3][50/12414]\tlr: 1.000e-04, eta: 2:18:26, time: 0.649, "
            "loss_cls: 1.1655, loss_bbox: 0.6587, loss: 1.8242",
            {
                "epoch": 3,
                "step": 50,
                "step_total": 12414,
                "lr": 1e-4,
                "step_time_s": 0.649,
                "loss": 1.8242,
            },
        ),
        ("Epoch [2/10], Loss: 0.2300", {"epoch": 2, "loss": 0.23}),  # a counter of epochs
        (  # CNTK's trainer (Microsoft/CNTK#2354)
            "Finished Epoch[2 of 20]: [Training] loss = 401.341235 * 40, metric = 2.37% * 40",
            {"epoch": 2, "loss": 401.341235},
        ),
        (
            " iteration       15/     600 | elapsed time per iteration (ms): 142474.1 | lm loss: 6.1",
            {"step": 15, "step_total": 600, "step_time_s": 142.4741, "loss": 6.1},
        ),
        ("epoch: 0, test val_loss: nan", {"epoch": 0, "eval_loss": math.nan}),  # transtab
        (
            "epoch 3 | train_mel_loss: 0.41 | valid_mel_loss: 0.52",
            {"epoch": 3, "loss": 0.41, "eval_loss": 0.52},
        ),
        # the step between the loss and its value (TensorFlow's tutorials, code2seq)
        ("Average loss at step 2000: 4.352", {"step": 2000, "loss": 4.352}),
        (
            "Average loss at batch 100: nan, \tthroughput: 175 samples/sec",
            {"step": 100, "loss": math.nan, "samples_s": 175},
        ),
        ("Training loss at epoch 3 = 1.25", {"epoch": 3, "loss": 1.25}),
    ],
)
def test_formats(line: str, expected: dict[str, float]) -> None:
    assert parse_metrics(line) == pytest.approx(expected, nan_ok=True)


def test_nan_and_inf() -> None:
    found = parse_metrics("{'loss': nan, 'grad_norm': inf, 'learning_rate': 5e-05}")
    assert math.isnan(found["loss"])
    assert found["grad_norm"] == math.inf


@pytest.mark.parametrize(
    "line",
    [
        "no metrics here",
        "learning_rate=5e-05",
        "Epoch 3/10",
        "loss function: CrossEntropyLoss",
        "loss at step 5: 2.0.1",
    ],
)
def test_lines_without_a_loss_report_nothing(line: str) -> None:
    assert parse_metrics(line) == {}


def test_a_clock_time_or_a_data_time_is_not_a_step_time() -> None:
    assert "step_time_s" not in parse_metrics("Current time: 2021-01-13 01:36:30 loss: 0.5")
    assert "step_time_s" not in parse_metrics("loss: 0.5, data_time: 0.052")


# -- the fast paths match exactly what the plain regexes match ----------------------------------

_PIECES = [
    *list(" _-./:=,'\"[]()|0123456789eE+\t"),
    *["loss", "Loss ", "LOSS", "_loss", " loss", "grad_norm", "grad norm", "nan", "inf", "lr"],
    *["step ", "iter", "train", "val", "Gen", "Total", "1.5", "e-5", "it/s", "s/it", "/s"],
    *["samples/s", "\u0663", "\u2003", "learning_rate", "loss_scale", "loss scale", "epoch"],
]
_TEXTS = st.lists(st.sampled_from(_PIECES), max_size=30).map("".join)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_TEXTS)
@example("Gen Loss Total 1.5, lossy loss 2")
@example("step 3 mask_loss=0.3 val loss 2")
@example("loss_scale 5 loss_step: 0.1 learning_rate=3e-4")
@example("GEN LOSS TOTAL NaN, Train_Loss=INF, Grad Norm: 1E-3, Val LOSS is 2.5")
@example("\u212a loss 3, \u017ftep 4, Gen Loss 1")  # letters that fold to ASCII ones
def test_the_key_trie_and_the_named_loss_gate_match_as_the_plain_alternation(text: str) -> None:
    # The reference: every key sorted longest first, then the named loss, tried everywhere.
    keys = "|".join(
        [re.escape(k) for k in sorted(metrics._CANONICAL, key=len, reverse=True)]
        + [metrics._NAMED_LOSS_KEY]
    )
    plain = re.compile(rf"""(?i)[^A-Za-z0-9_./-]['"]?(?P<key>{keys}){metrics._PAIR_TAIL}""")
    padded = " " + text
    reference = []
    pos = 0
    while (match := plain.search(padded, pos)) is not None:
        if metrics._NUMBER_GOES_ON.match(padded, match.end("value")):
            pos = match.start("key")
            continue
        reference.append((match.span(), match["key"], match["value"]))
        pos = match.end()
    fast = [((start, end), key, value) for start, end, key, value in metrics._pairs(text)]
    assert fast == reference


def test_the_pair_patterns_groups_are_the_numbers_the_hot_loop_reads() -> None:
    for pattern in (
        metrics._PAIR,
        metrics._PAIR_KNOWN,
        metrics._PAIR_LOWER,
        metrics._PAIR_KNOWN_LOWER,
    ):
        assert pattern.groupindex["key"] == metrics.KEY_GROUP
        assert pattern.groupindex["value"] == metrics.VALUE_GROUP


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_TEXTS)
def test_rates_searched_from_the_first_unit_match_a_search_of_the_whole_line(text: str) -> None:
    found: dict[str, float] = {}
    metrics._rates_and_memory(text, text.lower(), found)
    keyed = metrics._RATE_KEY.search(text)
    tqdm = next(
        (m for m in metrics._RATE.finditer(text) if not metrics._KEYED.match(text, m.end())),
        None,
    )
    rate = keyed or tqdm
    if rate is None or not math.isfinite(float(rate["rate"])):
        assert "it_s" not in found
    else:
        value = float(rate["rate"])
        expected = value if rate["unit"] == "it/s" else (1 / value if value else 0.0)
        assert found["it_s"] == expected


def test_opennmt_cross_entropy_is_the_loss_and_its_step_count_is_read() -> None:
    # OpenNMT-py#966: xent is the loss, ppl its exponential, and the step count follows the step.
    line = (
        "[2018-09-20 19:26:51,217 INFO] Step 510000/1000000; acc:  36.21; ppl: 52.56; "
        "xent: 3.96; lr: 0.00000; 2052/1240 tok/s;  15842 sec"
    )
    found = parse_metrics(line)
    assert found["loss"] == 3.96 and found["ppl"] == 52.56
    assert found["step"] == 510000 and found["step_total"] == 1_000_000
    assert found["lr"] == 0 and found["lr_zero_places"] == 5
    assert parse_metrics("Epoch  1, 13450/37527; acc:   0.00; ppl: nan; xent: nan")["loss"] != 0


def test_gnorm_is_the_gradient_norm_and_a_zero_rate_keeps_its_decimals() -> None:
    assert parse_metrics("step=275  loss=5.82   gnorm=15.6   ← diverging") == {
        "step": 275,
        "loss": 5.82,
        "grad_norm": 15.6,
    }
    paddle = "Train: Rank: 0, epoch: 1, step: 5310, lr: 0.00000000, train_loss: 16.030918"
    assert parse_metrics(paddle)["lr_zero_places"] == 8
    assert parse_metrics("{'loss': 1.2, 'learning_rate': 0.0}")["lr_zero_places"] == 99


@pytest.mark.parametrize(
    "line",
    [
        "Step 380000/1000000; acc:  42.02; xent: 4.01; lr: 0.00000;",
        "step=110  loss=3.80   gnorm=24.4",
        "Average loss at step 2000: 4.352",
    ],
)
def test_the_new_keys_make_a_metric_line(line: str) -> None:
    assert any(re.search(rx, line) for rx in metrics.METRIC_TRIGGERS.values())


@pytest.mark.parametrize(
    ("line", "expected", "printed"),
    [
        # pytorch#115255: the unit named once for the line, the peak after the current value.
        (
            "Mem memory (MB) | allocated: 20.4 | max allocated: 21.8 | reserved: 26.0",
            {"memory_gib": 20.4 / 1024},
            "20.4 MB",
        ),
        # tensorflow#73457 and Lasagne#860: no unit at all.
        (
            "Memory info of GPU /physical_device:GPU:0: current: 0.18, peak: 2.55",
            {"memory": 0.18},
            "0.18",
        ),
        ("      2 memory_usage: 998.12890625", {"memory": 998.12890625}, "998.12890625"),
    ],
)
def test_memory_under_generic_keys(line: str, expected: dict, printed: str) -> None:
    assert parse_metrics(line) == pytest.approx(expected)
    assert metrics.memory_text(line) == printed
    assert any(re.search(rx, line) for rx in metrics.METRIC_TRIGGERS.values())


def test_memory_percentages_and_free_memory_are_no_memory_series() -> None:
    assert (
        parse_metrics("Memory info of CPU: total:201.37Gb, available: 190.78Gb, percent: 5.3%")
        == {}
    )
    assert parse_metrics("GPU memory used: 45%") == {}


@settings(max_examples=400, deadline=None, derandomize=True)
@given(_TEXTS, st.integers(min_value=0, max_value=400))
@example("1.5 \x1c\t2it/s", 7)
def test_the_start_of_a_number_is_found_as_by_the_character_loop(text: str, end: int) -> None:
    end = min(end, len(text))
    reference = end
    while reference and (
        text[reference - 1].isdigit()
        or text[reference - 1] in ". "
        or text[reference - 1].isspace()
    ):
        reference -= 1
    assert metrics._number_start(text, end) == reference


def test_a_named_gradient_norm_is_the_gradient_norm_when_there_is_no_plain_one() -> None:
    # danijar/dreamer: "name value / name value", the world model's norm first.
    dreamer = (
        "[7000] model_grad_norm nan / value_grad_norm 81.3 / actor_grad_norm 0.1 / model_loss 5.2"
    )
    found = parse_metrics(dreamer)
    assert math.isnan(found["grad_norm"]) and found["loss"] == 5.2
    assert parse_metrics("loss 0.3 grad_norm 1.2 enc_grad_norm 5")["grad_norm"] == 1.2
    assert "grad_norm" not in parse_metrics("loss 2 x_grad 5")


def test_a_value_indexed_by_its_step_is_read() -> None:
    # crnn.pytorch#7: print("train_batch_loss[", step, "]: ", loss)
    assert parse_metrics("train_batch_loss[ 6580 ]:  1.9712326526641846") == {
        "loss": 1.9712326526641846
    }
    assert math.isnan(parse_metrics("train_batch_loss[ 6590 ]:  nan")["loss"])
    assert any(re.search(rx, "train_batch_loss[ 6590 ]:  nan") for rx in metrics.TRIGGERS.values())


def test_a_key_in_brackets_and_paddles_padded_nan_are_read() -> None:
    # LION's trainer (batch-84) and PaddleOCR's ``{:x<6f}`` (batch-75, batch-84).
    line = "| E6 iter[ 14/ 15] | [Loss] nan | [exp] ./exp/0125/car | [step]   104 |"
    assert math.isnan(parse_metrics(line)["loss"])
    assert parse_metrics("| E5 | [Loss] 51566519.44 | [step]    89 |")["loss"] == 51566519.44
    paddle = parse_metrics("epoch: [986/2000], global_step: 737800, CTCLoss: nanxxx, loss: nanxxx")
    assert math.isnan(paddle["loss"]) and paddle["step"] == 737800
    assert "loss" not in parse_metrics("loss: nanoseconds 12")


def test_a_printed_loss_tensor_is_the_loss() -> None:
    # insightface_pytorch#71: print(loss) every step.
    line = "tensor(3.6976, device='cuda:0', grad_fn=<NllLossBackward>)"
    assert parse_metrics(line) == {"loss": 3.6976}
    assert math.isnan(parse_metrics("tensor(nan, grad_fn=<MseLossBackward0>)")["loss"])
    assert parse_metrics("tensor(2.0, grad_fn=<AddBackward0>)") == {}  # not a loss


@pytest.mark.parametrize(
    "line",
    [
        "Valid Epoch: 16 Loss: nan: 100% 660/660 [00:04<00:00, 143.71it/s]",  # DMRGCN, batch-130
        "Test: [0/782]   Time 3.426 (3.426)      Loss 2.8972 (2.8972)    Prec@1 57.812 (57.812)",
        "Validation loss=0.4123",
    ],
)
def test_a_line_that_opens_with_evaluation_reports_the_evaluation_loss(line: str) -> None:
    found = parse_metrics(line)
    assert "eval_loss" in found and "loss" not in found


def test_the_best_value_so_far_is_no_measurement_of_this_step() -> None:
    # DMRGCN prints its record after each epoch; 1e10 is its initial "best", not a loss.
    assert parse_metrics("Min_val_epoch: -1, Min_val_loss: 10000000000.0") == {}
    assert parse_metrics("Train Epoch: 21 Loss: 0.35977891")["loss"] == 0.35977891
