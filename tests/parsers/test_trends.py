"""Trend detectors on series with the shapes real runs have."""

from __future__ import annotations

import math
import random

from crashcart.parsers import trends
from crashcart.parsers.lines import LogLine
from crashcart.parsers.trends import Point
from tests.conftest import categories, run_text


def series(
    values: list[float], *, times: list[float] | None = None, lines: bool = False
) -> list[Point]:
    """Points at steps 0, 1, ...; with ``lines``, each on a line printed by one statement."""
    return [
        Point(
            v,
            i,
            float(i),
            times[i] if times else None,
            LogLine("train.log", i + 1, f"Epoch: [0][{i}/44451] | Loss {v}") if lines else None,
        )
        for i, v in enumerate(values)
    ]


def noisy_decay(n: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [2.0 * math.exp(-i / (n / 4)) + 0.3 + rng.uniform(-0.15, 0.15) for i in range(n)]


def test_divergence_needs_a_sustained_rise_far_above_the_best() -> None:
    values = [*noisy_decay(40), 0.9, 1.4, 2.2, 3.5, 5.0, 7.5]
    draft = trends.divergence("loss", series(values))
    assert draft is not None and draft.kind == "divergence"
    assert draft.fields["ratio"] > 3 and draft.fields["step"] == len(values) - 1


def test_a_single_spike_that_recovers_is_not_divergence() -> None:
    values = noisy_decay(60)
    values[40] = 25.0
    assert trends.divergence("loss", series(values)) is None


def test_warm_up_spike_at_the_start_is_not_divergence() -> None:
    values = [2.0, 9.0, 14.0, *noisy_decay(60)]
    assert trends.divergence("loss", series(values)) is None


def test_plateau_on_a_flat_run_but_not_on_a_converged_one() -> None:
    rng = random.Random(1)
    flat = [2.3 + rng.uniform(-0.05, 0.05) for _ in range(120)]
    assert trends.plateau("loss", series(flat)) is not None
    converged = noisy_decay(60) + [0.3 + rng.uniform(-0.02, 0.02) for _ in range(120)]
    assert trends.plateau("loss", series(converged)) is None


def test_lr_restarts_are_not_a_plateau_or_divergence() -> None:
    values = []
    for cycle in range(4):
        values += [x + 0.2 * (3 - cycle) for x in noisy_decay(50, seed=cycle)]
    assert trends.plateau("loss", series(values)) is None
    assert trends.divergence("loss", series(values)) is None


def test_throughput_drop() -> None:
    speeds = [1.0, 3.0] + [30.0 + (i % 3) for i in range(40)] + [9.0] * 12
    draft = trends.throughput_drop("it_s/1000", series(speeds))
    assert draft is not None and draft.fields["ratio"] < 0.5
    steady = [1.0, 3.0] + [30.0 + (i % 5) for i in range(60)]
    assert trends.throughput_drop("it_s/1000", series(steady)) is None


def test_memory_growth_but_not_warm_up_then_flat() -> None:
    growing = [8.0 + 0.15 * i for i in range(30)]
    draft = trends.memory_growth("memory_gib", series(growing))
    assert draft is not None and draft.fields["growth_pct"] > 20
    warm_then_flat = [2.0, 5.0, 7.5, 8.0] + [8.0 + (0.01 if i % 2 else -0.01) for i in range(40)]
    assert trends.memory_growth("memory_gib", series(warm_then_flat)) is None


def test_overfitting_needs_eval_rising_while_train_falls() -> None:
    train = series([2.0 - 0.01 * i for i in range(150)])
    evals = [
        Point(v, 10 + 15 * i, None)
        for i, v in enumerate([1.9, 1.6, 1.4, 1.35, 1.4, 1.5, 1.6, 1.75])
    ]
    draft = trends.overfitting(evals, train)
    assert draft is not None and draft.fields["evals_since_best"] == 4
    improving = [Point(v, 10 + 15 * i, None) for i, v in enumerate([1.9, 1.6, 1.4, 1.3, 1.25, 1.2])]
    assert trends.overfitting(improving, train) is None


def test_silence_is_relative_to_the_run_cadence() -> None:
    progress = series([0.0] * 20, times=[1000.0 + 2 * i for i in range(20)])
    assert trends.silence(progress, last_time=1038.0 + 400) is not None
    assert trends.silence(progress, last_time=1038.0 + 30) is None


def test_silence_before_an_outside_stop_needs_less() -> None:
    """A run stopped (SIGTERM, Ctrl-C) after going quiet: someone gave up on a hang."""
    progress = series([0.0] * 20, times=[1000.0 + 0.2 * i for i in range(20)])
    last = progress[-1].time
    assert trends.silence(progress, last_time=last + 25, stopped=True) is not None
    assert trends.silence(progress, last_time=last + 25) is None  # an eval pause, maybe
    assert trends.silence(progress, last_time=last + 5, stopped=True) is None


def test_silence_with_whole_second_timestamps() -> None:
    progress = series([0.0] * 20, times=[1000.0 + i // 4 for i in range(20)])
    draft = trends.silence(progress, last_time=1004.0 + 33, stopped=True)
    assert draft is not None and draft.fields["cadence_s"] > 0


def test_plateau_is_not_undone_by_one_lucky_batch() -> None:
    rng = random.Random(1)
    flat = [1.6 + rng.uniform(-0.08, 0.08) for _ in range(200)]
    flat[120] = 1.3  # one easy batch
    assert trends.plateau("loss", series(flat)) is not None


def test_overfitting_on_a_noisy_validation_set() -> None:
    train = series([1.0 * 0.97**i for i in range(180)])
    noisy = [0.66, 0.93, 0.72, 1.16, 1.39, 1.25, 1.33, 1.25, 1.5, 1.41, 1.57, 1.32, 1.4, 1.42]
    evals = [Point(v, 10 + 12 * i, None) for i, v in enumerate(noisy)]
    assert trends.overfitting(evals, train) is not None
    flat = [0.9, 1.1, 0.95, 1.05, 0.9, 1.08, 0.97, 1.02, 0.93, 1.06, 0.95, 1.0]
    evals = [Point(v, 10 + 12 * i, None) for i, v in enumerate(flat)]
    assert trends.overfitting(evals, train) is None  # noisy but not rising


def test_on_a_noisy_loss_a_small_difference_is_noise_not_progress() -> None:
    rng = random.Random(4)
    flat = [1.6 - 0.04 * i / 120 + rng.uniform(-0.1, 0.1) for i in range(120)]  # 2.5%: noise
    assert trends.plateau("loss", series(flat)) is not None
    learning = [1.6 - 0.4 * i / 120 + rng.uniform(-0.1, 0.1) for i in range(120)]
    assert trends.plateau("loss", series(learning)) is None


def test_slowdown_from_three_megatron_iterations() -> None:
    draft = trends.slowdown("step_time_s", series([84.6, 142.5, 202.4]))
    assert draft is not None and draft.kind == "slowdown"
    assert draft.fields["baseline_s"] == 84.6 and draft.fields["recent_s"] == 202.4


def test_slowdown_when_steps_jump_and_stay_slow() -> None:
    values = [0.414, 0.200, 0.170, 0.169, 0.168, 8.719, 8.955, 8.576]
    draft = trends.slowdown("step_time_s", series(values))
    assert draft is not None and draft.fields["ratio"] > 40


def test_no_slowdown_from_one_slow_step_at_the_end_or_a_fast_run() -> None:
    spike = [0.2, 0.17, 0.17, 0.16, 0.17, 0.17, 8.7]
    assert trends.slowdown("step_time_s", series(spike)) is None
    assert trends.slowdown("step_time_s", series([5.0, 0.3, 0.3, 0.29, 0.31, 0.3])) is None
    assert trends.slowdown("step_time_s", series([0.3, 0.35])) is None


def test_a_timer_counting_since_the_start_is_no_slowdown() -> None:
    # habitat-baselines (sound-spaces#7): env-time totals, each stretch shorter as fps rises.
    totals = [175.496, 296.408, 407.734, 497.451, 578.911, 643.510]
    assert trends.slowdown("step_time_s", series(totals)) is None
    # Per-step times that climb faster and faster are a slowdown, however smooth.
    assert trends.slowdown("step_time_s", series([1.0, 1.1, 1.3, 1.8, 2.6, 3.9])) is not None


def test_a_loss_that_jumps_and_stays_up_diverged() -> None:
    values = [1.9, 1.8, 1.75, 1.8, 1.72, 1.7, 1.69, 1.7019, 11.46, 11.75, 11.5, 11.48, 12.19, 10.02]
    draft = trends.jumped("loss", series(values))
    assert draft is not None and draft.kind == "divergence"
    assert draft.fields["value"] == 10.02 and draft.fields["baseline"] < 1.8
    pasted = [1.7019, 11.463, 11.7545, 11.5019, 11.4807, 12.1935, 10.022, 10.9364, 10.5513]
    assert trends.jumped("loss", series(pasted)) is not None
    assert trends.jumped("loss", series(pasted[:5])) is None  # one value before, four after


def test_a_spike_that_comes_back_or_a_small_loss_wobbling_is_no_jump() -> None:
    spike = [1.9, 1.8, 1.75, 1.8, 1.72, 9.0, 9.5, 9.1, 1.7, 1.69, 1.7]
    assert trends.jumped("loss", series(spike)) is None
    wobble = [0.01, 0.012, 0.011, 0.01, 0.012, 0.04, 0.05, 0.045, 0.05, 0.048]
    assert trends.jumped("loss", series(wobble)) is None


def test_a_loss_swinging_over_orders_of_magnitude_blew_up() -> None:
    values = [5.7e9, 12931.2, 4574.5, 23840.9, 4.38e7, 46215.6, 164779.7, 4258.1, 920.6, 7249.9]
    draft = trends.erratic("loss", series(values))
    assert draft is not None and draft.fields["value"] == 5.7e9


def test_a_large_but_smooth_loss_is_not_erratic() -> None:
    values = [9e6 * 0.8**i for i in range(20)]  # a regression on raw prices, converging
    assert trends.erratic("loss", series(values)) is None


def test_a_few_records_climbing_from_their_best_diverged() -> None:
    # entrenar: a QLoRA run that learned to 1.43, then climbed record after record.
    values = [15.50, 13.00, 3.80, 2.39, 1.43, 5.82, 7.05, 10.03]
    draft = trends.climbed("loss", series(values))
    assert draft is not None and draft.fields["value"] == 10.03 and draft.fields["best"] == 1.43
    # From the first record on, only to a magnitude no healthy run prints (mmdet, 1e13).
    assert trends.climbed("loss", series([0.8474, 2.4435, 63118.5509, 10791241863295.7031]))
    assert trends.climbed("loss", series([0.8, 1.9, 2.9, 4.1])) is None  # a warm-up
    assert trends.climbed("loss", series([2.0, 1.2, 1.3, 1.4, 1.5])) is None  # a wobble


def test_a_climb_from_a_first_record_epochs_into_the_run_is_no_warm_up() -> None:
    # tensorflow/tensorflow#62361 on Apple Silicon: Keras' epochs 11 to 16, loss 0.73 to 2.43.
    values = [0.7349, 0.9430, 1.1816, 1.5326, 1.9404, 2.4296]
    late = [Point(v, i, epoch=11.0 + i) for i, v in enumerate(values)]
    draft = trends.climbed("loss", late)
    assert draft is not None and draft.fields["value"] == 2.4296
    # The same values from the first epoch on are a warm-up, or a log that names no epoch.
    early = [Point(v, i, epoch=float(i)) for i, v in enumerate(values)]
    assert trends.climbed("loss", early) is None
    assert trends.climbed("loss", series(values)) is None


def test_perplexity_climbing_tenfold_diverged() -> None:
    # OpenNMT#709: ppl 2268.05 -> 20872.71 over four reports (xent only 7.73 -> 9.95).
    ppl = [12792.57, 35173.75, 42885.19, 24048.64, 26476.23, 9686.04, 3770.76]
    ppl += [2268.05, 2482.59, 2981.62, 16091.52, 20872.71]
    assert trends.climbed("ppl", series(ppl)) is not None
    assert trends.climbed("loss", series([math.log(v) for v in ppl])) is None


def test_a_loss_frozen_to_the_last_digit_is_a_plateau() -> None:
    # Keras#2392: loss 5.7257 three epochs running (lines without a step).
    keras = [Point(v, i) for i, v in enumerate([5.7178, 5.7257, 5.7257, 5.7257])]
    draft = trends.frozen("loss", keras)
    assert draft is not None and draft.fields["last_text"] == "5.7257"
    # Medical-Transformer#48: loss:0.0000 from epoch 1 on, the epochs printed.
    zeros = [Point(0.2294, 0, epoch=0.0)] + [Point(0.0, i, epoch=float(i)) for i in range(1, 13)]
    assert trends.frozen("loss", zeros).fields["frozen_records"] == 12


def test_repeated_lines_are_not_a_frozen_loss() -> None:
    # One progress bar redrawn at one step, a value with too few digits, four ranks printing
    # the same all-reduced loss, three zeros.
    assert trends.frozen("loss", series([2.31, 2.2, 2.1])[:1] * 4) is None
    assert trends.frozen("loss", [Point(v, i) for i, v in enumerate([0.5, 0.1, 0.1, 0.1])]) is None
    ranks = [Point(v, i) for i, v in enumerate([0.6931] * 4 + [0.6822] * 4)]
    assert trends.frozen("loss", ranks) is None
    assert trends.frozen("loss", series([0.3, 0.0, 0.0, 0.0])) is None
    # torch_xla's MNIST on a TPU (pytorch/xla#6026), a healthy run: converged, not stuck.
    assert trends.frozen("loss", series([0.00171, 0.00135, 0.00135, 0.00135, 0.00135])) is None
    # A warm-up that fits its batch: the printed loss reaches 0.0000 through 0.0025, 0.0007 ...
    decayed = [8.05, 1.11, 0.19, 0.041, 0.0098, 0.0025, 0.0007, 0.0002, 0.0001] + [0.0] * 8
    assert trends.frozen("loss", series(decayed)) is None


def test_a_total_frozen_while_its_terms_move_is_not_frozen() -> None:
    # PaddleScience's heat equation at epoch 986 of 1000 (a healthy, converged run): the total
    # prints 0.01095 five times while BC_bottom and BC_left still move in their last digit.
    healthy = """\
        [Train][Epoch 984/1000][Avg] loss: 0.01095, EQ: 0.00166, BC_top: 0.00329, BC_bottom: 0.00133, BC_left: 0.00253
        [Train][Epoch 985/1000][Avg] loss: 0.01095, EQ: 0.00166, BC_top: 0.00329, BC_bottom: 0.00133, BC_left: 0.00254
        [Train][Epoch 986/1000][Avg] loss: 0.01095, EQ: 0.00166, BC_top: 0.00329, BC_bottom: 0.00132, BC_left: 0.00254
        [Train][Epoch 987/1000][Avg] loss: 0.01095, EQ: 0.00166, BC_top: 0.00329, BC_bottom: 0.00132, BC_left: 0.00253
        """
    assert categories(run_text(healthy)) == []
    # The same lines with every term frozen too are a model that stopped changing.
    stuck = "\n".join(
        line.replace("0.00132", "0.00133").replace("0.00254", "0.00253")
        for line in healthy.splitlines()
    )
    assert categories(run_text(stuck)) == ["loss_plateau"]
    # An evaluation metric moving beside a frozen loss is batch noise, not learning.
    tf = "\n".join(f"step: {i} loss: 0.6931 accuracy:0.{50 + i * 7 % 30}" for i in range(20, 28))
    assert categories(run_text(tf)) == ["loss_plateau"]


def test_a_noisy_loss_hovering_at_ln_2_is_at_chance() -> None:
    # snorkel#870: a Bi-LSTM binary classifier, batch steps 5 to 26.
    values = [0.845315, 0.706016, 0.717638, 0.77187, 0.731818, 0.762896, 0.690147, 0.7032]
    values += [0.745951, 0.950101, 0.717052, 0.712117, 0.700079, 0.716837, 0.714996]
    values += [0.694084, 0.70559, 0.671527, 0.713507, 0.746347, 0.696672, 0.703526]
    draft = trends.hovering_at_chance("loss", series(values))
    assert draft is not None and draft.fields["chance_classes"] == 2
    learning = [0.69 * math.exp(-i / 8) + 0.01 * (i % 2) for i in range(22)]
    assert trends.hovering_at_chance("loss", series(learning)) is None


def _lr_records(
    losses: list[float], *, places: float, total: float | None = None, first: float = 0.0
):
    return [trends.LrRecord(0.0, v, first + 100.0 * i, total, places) for i, v in enumerate(losses)]


def test_a_zero_learning_rate_with_a_flat_loss() -> None:
    # PaddleSpeech#675: lr: 0.00000000 and train_loss around 15.
    hovering = [16.030918, 15.383665, 17.136696, 16.34798, 12.675243, 15.479199, 16.016537]
    assert trends.lr_zero(_lr_records(hovering, places=8)).kind == "lr_zero"
    # OpenNMT#966: lr: 0.00000 (a rounded zero) at step 510000 of 1000000.
    opennmt = _lr_records([4.01, 4.02, 3.98, 3.96], places=5, total=1_000_000, first=510_000)
    assert trends.lr_zero(opennmt) is not None


def test_a_rounded_zero_in_the_first_steps_is_a_warm_up() -> None:
    # VideoMAE (healthy): lr: 0.000000 at steps 220-260 of 17227 in epoch 0, the warm-up's start.
    warming = _lr_records([5.9914] * 5, places=6, total=17227, first=220)
    assert trends.lr_zero(warming) is None
    # An exact zero there is no rounding, and a rounded one in a later epoch no warm-up.
    assert trends.lr_zero(_lr_records([5.9914] * 5, places=99, total=17227, first=220))
    later = _lr_records([5.9914] * 5, places=6, total=17227, first=220)
    for record in later:
        record.epoch = 7
    assert trends.lr_zero(later)


def test_a_rate_rounded_to_zero_or_a_falling_loss_is_no_zero_learning_rate() -> None:
    flat = [2.1, 2.0, 2.1, 2.0]
    assert trends.lr_zero(_lr_records(flat, places=5)) is None  # 2e-6 printed as 0.00000
    assert trends.lr_zero(_lr_records(flat, places=5, total=320)) is None  # the end of a decay
    assert trends.lr_zero(_lr_records([2.3, 2.0, 1.6, 1.3], places=8)) is None  # still learning
    assert trends.lr_zero(_lr_records(flat[:2], places=99)) is None  # too few


def test_memory_that_creeps_or_climbs_every_reading_leaks() -> None:
    # pytorch#115255: allocated 20.4 -> 21.0 MB, never down (in GiB, as parsed).
    allocated = [20.4, 20.5, 20.5, 20.6, 20.6, 20.6, 20.7, 20.7, 20.8, 20.8, 20.9, 20.9, 21.0]
    assert trends.memory_growth("memory_gib", series([v / 1024 for v in allocated]))
    # tensorflow#73457: GPU current 0.18 -> 0.35, up at every one of seven readings.
    current = [0.18, 0.21, 0.24, 0.27, 0.29, 0.32, 0.35]
    assert trends.memory_growth("memory", series(current))


def test_a_peak_that_settles_or_memory_that_wobbles_is_no_leak() -> None:
    # A maximum rising while the first batches come, then flat; a current value up and down.
    peak = [3.1, 3.4, 3.4, 3.6, 3.6, 3.6, 3.6, 3.6, 3.6, 3.6, 3.6, 3.6]
    assert trends.memory_growth("memory", series(peak)) is None
    wobble = [5.0, 5.2, 5.1, 5.3, 5.2, 5.4, 5.3, 5.2, 5.4, 5.3, 5.2]
    assert trends.memory_growth("memory", series(wobble)) is None
    assert trends.memory_growth("memory", series([1.0, 1.05, 1.1, 1.12, 1.15, 1.18])) is None


def test_a_loss_that_jumps_to_exactly_zero_and_stays_there_collapsed() -> None:
    # Transformers4Rec#493 under fp16: 12.6002, then 'loss': 0.0 on every record after.
    losses = [14.3249, 14.083, 13.9319, 13.8982, 12.6002, 0.0, 0.0, 0.0]
    draft = trends.collapsed("loss", series(losses))
    assert draft is not None and draft.kind == "collapsed"
    assert draft.fields == {"metric": "loss", "before": "12.6002", "records": 3, "step": 5}
    # As the HF Trainer prints it: records of one epoch are one record each.
    report = run_text(
        """\
        {'loss': 2.9325, 'learning_rate': 0.0004995433789954337, 'epoch': 0.01}
        {'loss': 0.0, 'learning_rate': 0.0004990867579908676, 'epoch': 0.02}
        {'loss': 0.0, 'learning_rate': 0.0004986301369863013, 'epoch': 0.03}
        {'loss': 0.0, 'learning_rate': 0.0004981735159817352, 'epoch': 0.04}
        """
    )
    assert categories(report) == ["nan_loss"]
    assert report.diagnoses[0].rule == "nan_loss.collapsed_to_zero"


def test_a_loss_that_nears_zero_gradually_or_only_for_a_moment_did_not_collapse() -> None:
    converged = [0.9, 0.3, 0.05, 0.004, 0.0, 0.0, 0.0]
    assert trends.collapsed("loss", series(converged)) is None
    recovered = [2.9, 0.0, 0.0, 0.0, 2.7]
    assert trends.collapsed("loss", series(recovered)) is None
    too_few = [2.9, 0.0, 0.0]
    assert trends.collapsed("loss", series(too_few)) is None
    only_zeros = [0.0, 0.0, 0.0, 0.0]
    assert trends.collapsed("loss", series(only_zeros)) is None
    assert trends.collapsed("grad_norm", series([2.9, 0.0, 0.0, 0.0])) is None


def test_a_timer_that_counts_from_the_start_is_no_slowdown() -> None:
    # cellpose's "Epoch 5, Time 4981.4s", then every ten epochs: the seconds grow as the lines'
    # timestamps do (batch-133), or by the same seconds per epoch from near zero.
    clock = [0.0, 4093.4, 23048.4, 31152.4, 39322.4, 47508.2]
    elapsed = [4981.4 + c for c in clock]
    timed = [
        Point(v, i, None, 1e9 + c, None, 5.0 + 10 * i)
        for i, (v, c) in enumerate(zip(elapsed, clock, strict=True))
    ]
    assert trends.slowdown("step_time_s", timed) is None
    per_epoch = [
        Point(0.39 * e + 2.1, i, None, None, None, e)
        for i, e in enumerate([8.0, 9, 10, 20, 30, 40])
    ]
    assert trends.slowdown("step_time_s", per_epoch) is None
    # Steps that really take longer, with timestamps that do not keep pace, still are one.
    slower = [
        Point(v, i, None, 1e9 + 60 * i, None, float(i))
        for i, v in enumerate([1.0, 1.1, 1.0, 3.2, 3.4, 3.5])
    ]
    assert trends.slowdown("step_time_s", slower) is not None


def test_a_last_record_a_hundred_times_the_level_is_a_spike() -> None:
    values = [0.4351, 0.9594, 1.3189, 0.3473, 124.5792]  # CHGNet, batch-127
    draft = trends.spiked("loss", series(values, lines=True))
    assert draft is not None and draft.fields["spike_text"] == "124.5792"
    assert draft.fields["before_text"] == "0.3473"
    assert trends.spiked("loss", series([-179.8, -178.2, -105.9, -99.7, 16064.9], lines=True))
    assert trends.spiked("loss", series([0.4, 0.9, 1.3, 0.3, 12.0], lines=True)) is None
    assert trends.spiked("loss", series([0.4, 0.9, 1.3, 124.5], lines=True)) is None  # too few


def test_a_spike_printed_in_another_form_is_another_quantity() -> None:
    points = series([0.4351, 0.9594, 1.3189, 0.3473, 124.5792], lines=True)
    points[-1].line.text = "Epoch 1 summed loss: 124.5792"  # type: ignore[union-attr]
    assert trends.spiked("loss", points) is None


def test_a_loss_that_moves_only_in_its_fifth_digit_is_flat() -> None:
    stuck = [6.23641 + 0.00007 * ((i * 7) % 5) / 4 for i in range(18)]  # MuLan, batch-132
    draft = trends.flat("loss", series([6.44, 6.27, *stuck]))
    assert draft is not None and draft.fields["flat_records"] == 18
    noisy = [6.2364 + 0.01 * ((i * 7) % 5) for i in range(30)]
    assert trends.flat("loss", series(noisy)) is None
    assert trends.flat("loss", series([0.00012 + 1e-9 * i for i in range(30)])) is None  # converged
    assert trends.flat("loss", series([6.2364] * 30)) is None  # frozen's, not flat's
