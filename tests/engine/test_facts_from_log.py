"""Facts are what the log says about the run: not PyTorch's advice, not a neighbour's number,
not a NaN step the run went past (issue 17, item 4)."""

from __future__ import annotations

from crashcart.parsers.config import parse_config
from crashcart.parsers.metrics import parse_metrics
from tests.conftest import categories, run_text

OOM_ADVICE = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.20 GiB is free. Of the allocated memory 70.1 GiB is "
    "allocated by PyTorch, and 6.2 GiB is reserved by PyTorch but unallocated. If reserved but "
    "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "to avoid fragmentation."
)


def test_the_oom_messages_advice_is_not_the_runs_alloc_conf() -> None:
    assert parse_config(OOM_ADVICE) == []
    report = run_text(f"step 1 loss 2.0\n{OOM_ADVICE}\n")
    assert "alloc_conf" not in report.config
    assert categories(report)[0] == "cuda_oom"


def test_an_alloc_conf_the_run_set_is_read() -> None:
    assert parse_config("PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:128") == [
        ("alloc_conf", "max_split_size_mb:128")
    ]
    assert parse_config("export PYTORCH_CUDA_ALLOC_CONF='expandable_segments:True'") == [
        ("alloc_conf", "expandable_segments:True")
    ]


def test_it_s_as_a_key_takes_the_number_after_it() -> None:
    assert parse_metrics("step 5 loss 0.2227 it/s 5.1") == {"step": 5, "loss": 0.2227, "it_s": 5.1}
    assert parse_metrics("step 6 loss 0.2 it/s: 4.9")["it_s"] == 4.9
    assert parse_metrics("step 7 loss 0.2 s/it=0.5")["it_s"] == 2.0
    # tqdm's suffix form is unchanged
    bar = "Epoch 0:  45%|####  | 45/100 [00:01<00:01, 30.2it/s, train_loss=0.512]"
    assert parse_metrics(bar)["it_s"] == 30.2
    assert parse_metrics("loss 0.3 2.5 it/s")["it_s"] == 2.5


def test_the_speed_series_holds_the_speed_not_the_loss() -> None:
    text = "".join(f"step {s} loss {2.0 * 0.99**s:.4f} it/s 5.1\n" for s in range(1, 120))
    report = run_text(text)
    assert report.diagnoses == []  # a steady 5.1 it/s: no slowdown from the falling loss


def nan_run(finite_after: int) -> str:
    lines = [f"step {s} loss {2.0 * 0.99**s:.4f}" for s in range(1, 40)]
    lines.append("step 40 loss nan")
    lines += [f"step {s} loss {2.0 * 0.99**s:.4f}" for s in range(41, 41 + finite_after)]
    return "\n".join(lines) + "\n"


def test_a_single_nan_the_run_went_past_is_not_a_failure() -> None:
    report = run_text(nan_run(finite_after=159))
    assert "nan_loss" not in categories(report)
    assert report.diagnoses == []


def test_a_nan_just_seen_is_still_reported() -> None:
    """Live, or at the end of a log that stopped soon after it: nothing says it was survived."""
    assert categories(run_text(nan_run(finite_after=2)))[:1] == ["nan_loss"]


def test_a_nan_that_persisted_is_a_failure() -> None:
    text = nan_run(finite_after=0) + "step 41 loss nan\nstep 42 loss nan\n"
    assert categories(run_text(text))[0] == "nan_loss"
