"""Trend detectors on series with the shapes real runs have."""

from __future__ import annotations

import math
import random

from crashcart.parsers import trends
from crashcart.parsers.trends import Point


def series(values: list[float], *, times: list[float] | None = None) -> list[Point]:
    return [Point(v, i, float(i), times[i] if times else None, None) for i, v in enumerate(values)]


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
