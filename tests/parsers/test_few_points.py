"""Trends and hangs from what a pasted excerpt shows: a few records, a log that stops."""

from __future__ import annotations

import pytest

from tests.conftest import categories, run_text


def test_a_nan_that_stays_is_nan_loss() -> None:
    # Posted in LLaMA-Factory#5660: three records, all with a NaN gradient norm.
    report = run_text(
        """\
        {'loss': 344093.2, 'grad_norm': nan, 'learning_rate': 9.99e-05, 'epoch': 0.0}
        {'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.99e-05, 'epoch': 0.0}
        {'loss': 0.0, 'grad_norm': nan, 'learning_rate': 9.97e-05, 'epoch': 0.0}
        """
    )
    assert categories(report) == ["nan_loss"]
    assert report.diagnoses[0].rule == "nan_loss.persisted"


def test_one_nan_the_run_recovers_from_is_not_persisted() -> None:
    records = "".join(f"{{'loss': {2.0 - i / 50:.3f}, 'grad_norm': 1.5}}\n" for i in range(10))
    report = run_text("{'loss': 2.1, 'grad_norm': nan}\n" + records)
    assert "nan_loss.persisted" not in {d.rule for d in report.diagnoses}


def test_a_loss_at_chance_level_is_a_plateau() -> None:
    # ln(10) = 2.3026: a ten-class model guessing uniformly, epoch after epoch.
    report = run_text(
        """\
        Epoch 1/5 - loss: 2.3026 - acc: 0.1000
        Epoch 2/5 - loss: 2.3026 - acc: 0.1000
        Epoch 3/5 - loss: 2.3026 - acc: 0.1000
        Epoch 4/5 - loss: 2.3026 - acc: 0.1000
        """
    )
    assert categories(report) == ["loss_plateau"]


def test_a_loss_no_healthy_run_reaches_is_an_explosion() -> None:
    report = run_text(
        """\
        step 100 loss 3.2 grad_norm 681325.8
        step 110 loss 344671968.0 grad_norm 9.1e+08
        step 120 loss 912345678.0 grad_norm 2.3e+09
        step 130 loss 1912345678.0 grad_norm 7.3e+09
        """
    )
    assert categories(report)[0] == "gradient_explosion"


def test_a_log_that_ends_waiting_at_a_barrier_is_a_hang() -> None:
    report = run_text(
        """\
        [2021-12-17 16:36:22,800][torch.distributed.distributed_c10d][INFO] - Added key: store_based_barrier_key:1 to store for rank: 6
        [2021-12-17 16:36:32,821][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to initialize process group for rank: 6, key: store_based_barrier_key:1 (world_size=16, worker_count=7, timeout=0:30:00)
        """
    )
    assert categories(report) == ["hang"]
    assert report.diagnoses[0].rule == "hang.stalled"


def test_a_wait_the_run_went_past_is_not_a_hang() -> None:
    report = run_text(
        """\
        Using /root/.cache/torch_extensions/py310_cu118 as PyTorch extensions root...
        Loading extension module fused_adam...
        step 1 loss 2.0
        step 2 loss 1.9
        step 3 loss 1.8
        step 4 loss 1.7
        step 5 loss 1.6
        """
    )
    assert report.diagnoses == []


def test_ctrl_c_inside_a_lock_wait_is_a_hang() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
          File "C:\\\\env\\\\Lib\\\\site-packages\\\\torch\\\\utils\\\\cpp_extension.py", line 1681, in load
            baton.wait()
          File "C:\\\\env\\\\Lib\\\\site-packages\\\\torch\\\\utils\\\\file_baton.py", line 42, in wait
            time.sleep(self.wait_seconds)
        KeyboardInterrupt
        """
    )
    assert categories(report) == ["hang"]


def test_loss_scale_wordings_of_fairseq_and_apex_collapse() -> None:
    fairseq = "".join(
        f"| WARNING: overflow detected, setting loss scale to: {2.0**-k}\n" for k in range(3, 9)
    )
    apex = "".join(
        f"Gradient overflow. Skipping step, loss scaler 0 reducing loss scale to {2.0**-k}\n"
        for k in range(3, 9)
    )
    assert categories(run_text(fairseq)) == ["nan_loss"]
    assert categories(run_text(apex)) == ["nan_loss"]


def test_bitsandbytes_set_up_banner_is_cuda_setup() -> None:
    report = run_text(
        """\
        CUDA SETUP: Detected CUDA version 121
        CUDA SETUP: Required library version not found: libbitsandbytes_cuda121.so. Maybe you need to compile it from source?
        CUDA SETUP: Defaulting to libbitsandbytes_cpu.so...
        """
    )
    assert categories(report) == ["cuda_setup"]


STUCK_AT_ZERO = """\
[2024-07-15 13:32:09] Training for 1000 epochs with 32425 steps per epoch
[2024-07-15 13:32:11] Beginning epoch 0...
Epoch 0:   0%|          | 0/32425 [00:00<?, ?it/s]/envs/lib/python3.9/site-packages/colossalai/nn/optimizer/nvme_optimizer.py:55: UserWarning: TypedStorage is deprecated.
  numel += p.storage().size()
"""


@pytest.mark.parametrize("chunk", [None, 7, 64])
def test_a_log_that_ends_on_a_bar_still_at_zero_is_a_hang(chunk: int | None) -> None:
    # Posted in Open-Sora#608: the first step never completed.
    report = run_text(STUCK_AT_ZERO, chunk=chunk)
    assert categories(report) == ["hang"]
    assert report.diagnoses[0].fields["wait"] == "progress_at_zero"
    assert report.diagnoses[0].evidence[0].lineno == 3


def test_a_bar_that_moved_on_is_not_a_hang() -> None:
    moved = "Epoch 0:   0%|          | 0/100 [00:00<?, ?it/s]\rEpoch 0:  50%|#####     | 50/100\n"
    assert run_text(moved).diagnoses == []
    assert run_text(STUCK_AT_ZERO + "step 1 loss 2.0\n" * 5).diagnoses == []


def test_set_up_chatter_after_a_bar_at_zero_still_ends_on_the_bar() -> None:
    # Posted in pytorch/examples#1160: NCCL's first communicator set-up, then nothing.
    report = run_text(
        """\
        r0 Training Epoch:   0%|          | 0/188 [00:00<?, ?it/s]
        g3:3183:3183 [0] NCCL INFO Bootstrap : Using eno1:160.202.129.119<0>
        g3:3183:3183 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so: cannot open shared object file: No such file or directory
        g3:3183:3183 [0] NCCL INFO NET/Plugin : No plugin found, using internal implementation
        g3:3183:3183 [0] NCCL INFO cudaDriverVersion 12010
        NCCL version 2.18.1+cuda12.1
        g3:3342:3342 [1] NCCL INFO cudaDriverVersion 12010
        """
    )
    assert categories(report) == ["hang"]
    assert report.diagnoses[0].fields["wait"] == "progress_at_zero"
    assert report.diagnoses[0].evidence[0].lineno == 1


def test_nccl_chatter_alone_is_not_a_hang() -> None:
    report = run_text(
        """\
        node:1:2 [0] NCCL INFO Ring 00 : 60 -> 56 [receive] via NET/Socket/0
        node:1:2 [0] NCCL INFO Ring 00 : 56 -> 60 [send] via NET/Socket/0
        """
    )
    assert report.diagnoses == []


CUT_IN_A_WAIT = """\
  File "/work/acodet/torch_train.py", line 115, in train
    for batch in val_loader:
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 741, in __next__
    data = self._next_data()
  File "/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1310, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
"""


def test_a_traceback_cut_inside_a_wait_is_a_hang() -> None:
    # Posted in acodet#47: the stack of a run stuck before its second epoch, no error line.
    report = run_text(CUT_IN_A_WAIT)
    assert categories(report) == ["hang"]
    assert report.diagnoses[0].rule == "hang.cut_while_waiting"
    # The user's frame and the innermost frame with its code, not the caret line.
    assert [line.lineno for line in report.diagnoses[0].evidence] == [1, 5, 6]


def test_a_traceback_cut_before_its_error_line_is_never_silent() -> None:
    # Posted in QueryDet-PyTorch: the paste ends on the frames.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "train_tools/coco_train.py", line 135, in setup
            cfg.merge_from_file(args.config_file)
        """
    )
    assert categories(report) == ["unrecognised"]
    assert "cut before its error line" in report.diagnoses[0].title
    assert "setup in train_tools/coco_train.py" in report.diagnoses[0].summary
