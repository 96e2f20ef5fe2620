"""Detectors over metric series."""

from __future__ import annotations

import math

from crashcart.parsers.detectors import SeriesTracker


def feed(tracker: SeriesTracker, losses: list[float]) -> list:
    drafts = []
    for step, loss in enumerate(losses, 1):
        drafts += tracker.observe({"step": float(step), "loss": loss})
    return drafts


def test_divergence_before_nan_is_measured() -> None:
    drafts = feed(SeriesTracker(), [3.0, 2.0, 1.5, 1.2, 2.5, 6.0, 40.0, math.nan, math.nan])
    # Reported once when it turns NaN, once more when it stays so; not for every NaN line.
    assert [d.fields["persisted"] for d in drafts] == [False, True]
    fields = drafts[0].fields
    assert drafts[0].kind == "nonfinite_metric"
    assert fields["metric"] == "loss" and fields["value"] == "nan" and fields["step"] == 8
    assert fields["best"] == 1.2 and fields["last_finite"] == 40.0
    assert fields["rise_ratio"] > 30


def test_nan_from_the_first_step() -> None:
    drafts = feed(SeriesTracker(), [math.nan, math.nan])
    assert drafts[0].fields["points_before"] == 0


def test_healthy_noisy_series_reports_nothing() -> None:
    losses = [2.0 - 0.01 * i + (0.3 if i % 7 == 0 else 0.0) for i in range(300)]
    assert feed(SeriesTracker(), losses) == []


def test_an_inf_grad_norm_beside_a_loss_at_its_own_scale_is_a_skipped_step() -> None:
    def first_grad_norm(records: list[tuple[float, float]]) -> dict:
        tracker = SeriesTracker()
        drafts = []
        for step, (loss, norm) in enumerate(records, 1):
            drafts += tracker.observe({"step": float(step), "loss": loss, "grad_norm": norm})
        return next(d.fields for d in drafts if d.fields["metric"] == "grad_norm")

    steady = [(420.3, 764.8), (421.6, 776.4), (423.7, 793.4)]
    assert first_grad_norm([*steady, (414.5, math.inf)])["overflow_step"] is True
    assert first_grad_norm([*steady, (414.5, math.nan)])["overflow_step"] is False
    assert first_grad_norm([*steady, (4.9e10, math.inf)])["overflow_step"] is False
    assert first_grad_norm([*steady, (math.nan, math.inf)])["overflow_step"] is False


def test_early_fp16_overflow_skips_are_normal() -> None:
    tracker = SeriesTracker()
    scale = 65536.0
    drafts = []
    for _ in range(6):
        scale /= 2
        drafts += tracker.loss_scale(
            f"Gradient overflow.  Skipping step, loss scale reduced to {scale}"
        )
    assert drafts == []


def test_loss_scale_collapse() -> None:
    tracker = SeriesTracker()
    drafts = []
    for scale in (64, 32, 16, 8, 4, 2):
        line = f"[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: {scale}, reducing to {scale // 2}"
        drafts += tracker.loss_scale(line)
    assert len(drafts) == 1
    assert drafts[0].kind == "loss_scale_collapse"
    assert drafts[0].fields["scale"] == 8


def test_a_scale_below_every_scalers_floor_has_collapsed_at_first_sight() -> None:
    # icefall warns once per rank (k2-fsa/icefall#1463); 1e-26 is below any scaler's minimum.
    tracker = SeriesTracker()
    drafts = tracker.loss_scale(
        "2024-01-14 01:03:00,826 WARNING [train.py:1057] (2/4) Grad scale is small: 1.29e-26"
    )
    assert drafts[0].kind == "loss_scale_collapse" and drafts[0].fields["scale"] == 1.29e-26
    assert SeriesTracker().loss_scale("Grad scale is small: 0.5") == []


def test_paddles_scale_is_read_and_not_said_to_fall_from_itself() -> None:
    # PaddleOCR#6848: Paddle's AMP prints the scale before each halving.
    tracker = SeriesTracker()
    drafts = tracker.loss_scale(
        "Found inf or nan, current scale is: 2.842170943040401e-14, decrease to:"
        " 2.842170943040401e-14*0.5"
    )
    assert drafts[0].kind == "loss_scale_collapse"
    assert drafts[0].fields["scale"] == 2.842170943040401e-14
    assert "first_scale" not in drafts[0].fields
    assert SeriesTracker().loss_scale("Found inf or nan, current scale is: 32768.0, decrease") == []


def test_guided_diffusions_log2_scale_is_judged_and_quoted_as_printed() -> None:
    # openai/guided-diffusion#50: the scale's log2 falls by one for each NaN step.
    tracker = SeriesTracker()
    drafts = tracker.loss_scale("Found NaN, decreased lg_loss_scale to -16199.354")
    assert drafts[0].kind == "loss_scale_collapse"
    assert drafts[0].fields["lg_scale"] == "-16199.354" and "scale" not in drafts[0].fields
    # fp16's ordinary search for its range: 2**19, 2**18, ... no collapse.
    healthy = SeriesTracker()
    for lg in (19.0, 18.0, 17.0):
        assert healthy.loss_scale(f"Found NaN, decreased lg_loss_scale to {lg}") == []


def test_at_minimum_message() -> None:
    tracker = SeriesTracker()
    drafts = tracker.loss_scale(
        "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run."
    )
    assert drafts[0].fields["at_minimum"] is True


def test_constant_bf16_scale_of_one_is_not_a_collapse() -> None:
    tracker = SeriesTracker()
    drafts = []
    for step in range(50):
        drafts += tracker.observe({"step": float(step), "loss": 2.0, "loss_scale": 1.0})
    assert drafts == []


def test_a_line_copied_into_a_second_file_counts_once() -> None:
    """torchrun --tee: the console log and rank0.log hold the same lines."""
    from crashcart.parsers.lines import LogLine

    tracker = SeriesTracker()
    for path in ("train.log", "rank0.log"):
        for step in range(5):
            text = f"step {step} loss {2 - step / 10}"
            tracker.observe({"loss": 2 - step / 10}, LogLine(path, step + 1, text))
    tracker.observe({"loss": 1.5}, LogLine("train.log", 6, "step 4 loss 1.6"))  # a real repeat
    assert len(tracker.series["loss"].points) == 6
    assert tracker.points_by_source == {"train.log": 6, "rank0.log": 5}


def test_records_of_a_zero_learning_rate_are_followed_to_a_finding() -> None:
    # PaddleSpeech#675: every record prints lr: 0.00000000 beside a loss around 15.
    from crashcart.parsers.metrics import parse_metrics

    tracker = SeriesTracker()
    for step, loss in enumerate(["16.030918", "15.383665", "17.136696", "16.347980"], 5310):
        line = f"Train: Rank: 0, epoch: 1, step: {step}, lr: 0.00000000, train_loss: {loss}"
        tracker.observe(parse_metrics(line))
    kinds = [draft.kind for draft, _ in tracker.conclude()]
    assert kinds == ["lr_zero"]
    # A rate that is not zero ends the stretch; a new one must be three records long again.
    tracker = SeriesTracker()
    for lr in [0.0, 0.0, 1e-4, 0.0, 0.0]:
        tracker.observe({"loss": 2.0, "lr": lr, "lr_zero_places": 8.0})
    assert [draft.kind for draft, _ in tracker.conclude()] == []


def test_perplexity_is_watched_for_a_climb_beside_the_loss() -> None:
    # OpenNMT-py#709: ppl climbs tenfold while xent only goes from 7.73 to 9.95.
    tracker = SeriesTracker()
    for ppl, xent in [(3770.76, 8.24), (2268.05, 7.73), (2482.59, 7.82), (2981.62, 8.0)]:
        tracker.observe({"ppl": ppl, "loss": xent})
    tracker.observe({"ppl": 16091.52, "loss": 9.69})
    tracker.observe({"ppl": 20872.71, "loss": 9.95})
    found = [draft.fields for draft, _ in tracker.conclude() if draft.kind == "divergence"]
    assert [f["metric"] for f in found] == ["ppl"] and found[0]["value"] == 20872.71
