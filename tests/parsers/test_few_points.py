"""Trends and hangs from what a pasted excerpt shows: a few records, a log that stops."""

from __future__ import annotations

import pytest

from crashcart.parsers import waits
from crashcart.parsers.metrics import parse_metrics
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


def test_a_loss_named_by_its_stage_is_read_when_it_turns_nan() -> None:
    # TensorFlowTTS#258: FastSpeech 2 logs each loss on its own line; the mel losses before and
    # after the postnet went NaN under mixed precision.
    report = run_text(
        """\
        2020-09-10 11:52:14,448 (base_trainer:831) INFO: (Step: 95400) train_f0_loss = 0.0659.
        2020-09-10 11:52:14,449 (base_trainer:831) INFO: (Step: 95400) train_mel_loss_before = nan.
        2020-09-10 11:52:14,449 (base_trainer:831) INFO: (Step: 95400) train_mel_loss_after = nan.
        """
    )
    assert categories(report) == ["nan_loss"]


def test_records_whose_every_named_term_is_nan_are_nan_loss() -> None:
    # CycleGAN (pytorch-CycleGAN-and-pix2pix#1220): the terms are named D_A, G_A, cycle_A, ...,
    # never "loss", and all of them went NaN from one iteration on.
    record = "(epoch: 1, iters: {}, time: 0.321, data: 0.000) D_A: nan G_A: nan cycle_A: nan idt_A: nan\n"
    report = run_text(record.format(300) + record.format(400))
    assert [d.rule for d in report.diagnoses] == ["nan_loss.printed_values"]
    assert report.diagnoses[0].fields["form"] == "record"
    assert run_text(record.format(300)).diagnoses == []  # one record may be a step it skipped


def test_a_table_row_of_nan_cells_is_nan_loss_at_once() -> None:
    # ultralytics/yolov5#4963: one row per epoch under "Epoch gpu_mem box obj cls labels
    # img_size"; the three loss cells are NaN and nothing names them on the row itself.
    report = run_text(
        """\
             Epoch   gpu_mem       box       obj       cls    labels  img_size
              1/99     2.64G         nan       nan       nan         4       416
        """
    )
    assert [d.rule for d in report.diagnoses] == ["nan_loss.printed_values"]
    assert report.diagnoses[0].fields["form"] == "row"


def test_missing_cells_that_pandas_prints_as_nan_are_not_a_nan_loss() -> None:
    table = "   id  score  label  weight\n" + "".join(
        f"{i}   {i}.5    NaN    NaN    NaN\n" for i in range(5)
    )
    assert run_text(table).diagnoses == []


def test_key_value_table_rows_of_a_nan_loss_are_nan_loss() -> None:
    # rlpyt's tabular logger (dreamer-pytorch#86) and OpenAI's: one row per key, the loss rows
    # NaN. Three rows say it, like bare values; an episode statistic that is NaN is not a loss.
    rows = """\
        2022-07-13 11:45:22.240310  | grad_norm_model/Average        nan
        2022-07-13 11:45:22.240340  | model_loss/Average              nan
        2022-07-13 11:45:22.240390  | actor_loss/Average              nan
        """
    assert [d.rule for d in run_text(rows).diagnoses] == ["nan_loss.printed_values"]
    returns = "".join(f"| ReturnAverage{i}          nan\n" for i in range(4))
    assert run_text(returns).diagnoses == []


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


def test_a_loss_at_chance_in_the_first_steps_is_where_every_run_starts() -> None:
    # pytorch/examples' ImageNet AlexNet (examples#164): steps 14-21 of epoch 0 at ln(1000).
    lines = "".join(
        f"Epoch: [0][{step}/5005]\tTime 0.154 (8.010)\tLoss 6.90{74 + step % 3} (6.9080)\n"
        for step in range(14, 22)
    )
    assert "loss_plateau" not in categories(run_text(lines))
    later = lines.replace("Epoch: [0]", "Epoch: [3]")
    assert categories(run_text(later)) == ["loss_plateau"]


def test_a_loss_at_ln_k_beside_an_accuracy_at_1_over_k_is_chance() -> None:
    # pytorch-pretrained-BERT#566: ten classes, the loss 0.4% above ln 10 and drifting, the
    # accuracy under 0.1 (a loss this far from ln 10 alone is not read as chance).
    report = run_text(
        "".join(
            f"Epoch 1 - Batch {1600 * i}/287417 - Training Acc. {acc} - Training Loss {loss}\n"
            for i, (acc, loss) in enumerate(
                [
                    (0.106250, 2.295977),
                    (0.093125, 2.307725),
                    (0.091458, 2.310017),
                    (0.090625, 2.311030),
                    (0.090083, 2.311357),
                ],
                start=1,
            )
        )
    )
    assert [d.rule for d in report.diagnoses] == ["loss_plateau.accuracy_at_chance"]
    assert "(last 2.311357)" in report.diagnoses[0].summary
    assert "(last 0.090083)" in report.diagnoses[0].summary


def test_keras_validation_at_chance_is_read_from_its_epoch_records() -> None:
    # rwf2000 (Keras): val_loss at ln 2 and val_accuracy 0.5 epoch after epoch.
    lines = "".join(
        f"Epoch {epoch}/30\n200/200 [====] - 4889s 24s/step - loss: {loss} - accuracy: {acc}"
        f" - val_loss: {val_loss} - val_accuracy: {val_acc} - lr: 0.0100\n"
        for epoch, loss, acc, val_loss, val_acc in [
            (1, 0.7078, 0.4938, 0.6930, 0.5000),
            (2, 0.6959, 0.4938, 0.6947, 0.5000),
            (3, 0.6947, 0.5194, 0.7013, 0.5000),
            (4, 0.6857, 0.5612, 0.6876, 0.5000),
        ]
    )
    assert categories(run_text(lines)) == ["loss_plateau"]


def test_evaluations_at_chance_count_from_the_first_and_read_a_percentage() -> None:
    # Evaluation records follow training steps, so three of them need no step count; an
    # accuracy printed in percent (50.12) is the fraction 0.5012.
    lines = "".join(
        f"| val_loss: {loss} | val_acc: {acc}\n"
        for loss, acc in [(0.6967, 50.25), (0.6942, 49.75), (0.6936, 50.25)]
    )
    report = run_text(lines)
    assert [d.rule for d in report.diagnoses] == ["loss_plateau.accuracy_at_chance"]
    assert "(last 50.25)" in report.diagnoses[0].summary


def test_noisy_batch_accuracies_at_chance_are_judged_by_their_medians() -> None:
    # DeepRobust's PGD training on MNIST (batch-110): each batch of a hundred prints 8% to 15%,
    # the loss at ln 10 throughout. A record as far off as 15% does not hide the rest.
    accuracies = (10, 15, 10, 12, 8, 13, 12, 10, 12, 14)
    lines = "".join(
        f"Train Epoch: 7 [{40000 + 2000 * i}/60000 ({67 + 3 * i}%)]\tLoss: 2.30{i}184"
        f"\tAccuracy:{acc}.00%\n"
        for i, acc in enumerate(accuracies)
    )
    lines += "\nTest set: Clean loss: 2.301, Clean Accuracy: 1135/10000 (11%)\n"
    report = run_text(lines)
    assert [d.rule for d in report.diagnoses] == ["loss_plateau.accuracy_at_chance"]
    # A count of correct answers is no fraction: the test line's accuracy is not read as 1135.
    assert "accuracy" not in parse_metrics("Clean loss: 2.301, Clean Accuracy: 1135/10000 (11%)")
    # One batch far off chance (30%) is a model that may be starting to learn.
    learning = lines.replace("Accuracy:12.00%", "Accuracy:30.00%", 1)
    assert run_text(learning).diagnoses == []


def test_an_accuracy_that_climbs_off_chance_is_a_model_learning() -> None:
    # The same run had it learned: the loss leaves ln 2 and the accuracy rises with it.
    lines = "".join(
        f"Epoch {epoch}/30\n200/200 [====] - 4889s 24s/step - loss: {loss} - accuracy: {acc}\n"
        for epoch, loss, acc in [
            (1, 0.6931, 0.50),
            (2, 0.6902, 0.55),
            (3, 0.62, 0.68),
            (4, 0.51, 0.77),
        ]
    )
    assert categories(run_text(lines)) == []
    # At chance in the first steps of a run is where every classifier starts.
    early = "".join(
        f"step {s} loss {loss} acc 0.5000\n"
        for s, loss in [(10, 0.6925), (20, 0.6938), (30, 0.6931), (40, 0.6940)]
    )
    assert categories(run_text(early)) == []


def test_an_accuracy_at_chance_beside_a_loss_off_ln_k_is_no_finding() -> None:
    # An imbalanced binary task: the majority class gives 0.5 accuracy only by coincidence and
    # the loss (0.60) is well under ln 2; nothing says the model guesses uniformly.
    lines = "".join(f"Epoch {e} - loss: 0.60 - acc: 0.50\n" for e in (3, 4, 5, 6))
    assert categories(run_text(lines)) == []


def test_terms_printed_nan_after_their_names_without_a_colon_are_nan_loss() -> None:
    # pytorch-yolo2#87: "w nan, h nan, conf nan" record after record.
    report = run_text(
        "".join(
            f"{step}: nGT 39, recall 0, proposals 0, loss: x 1692.913574, y 1690.920166, w nan,"
            " h nan, conf nan, cls nan, total nan\n"
            for step in (9856, 9872, 9888)
        )
    )
    assert categories(report) == ["nan_loss"]


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


@pytest.mark.parametrize(
    "losses",
    [
        ["-6.02e+05", "-6.02e+05", "-6.47e+05", "-6.86e+05"],  # a flow's NLL: negative and large
        ["2.14e+05", "2.14e+05", "1.84e+05", "1.58e+05"],  # large, and falling as it learns
    ],
)
def test_a_likelihood_loss_at_its_own_large_scale_is_no_explosion(losses: list[str]) -> None:
    # FastFlow in anomalib (openvinotoolkit/anomalib#1107, #1651): healthy runs.
    lines = "".join(
        f"Epoch {i}: 100%|##########| 3/3 [00:23<00:00, loss={v}]\n" for i, v in enumerate(losses)
    )
    assert run_text(lines).diagnoses == []


def test_a_gradient_norm_of_millions_is_an_explosion_even_while_it_falls() -> None:
    report = run_text(
        "".join(
            f"{{'loss': 2.6, 'grad_norm': {norm}}}\n"
            for norm in (2.9e6, 2.5e7, 3.6e7, 6.9e6, 1.7e6)
        )
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
    # Lightning's validation bar sits at 0 when drawn; the epoch's bar completing after it
    # shows the run went on (openvinotoolkit/anomalib#1107).
    validated = (
        "Validation DataLoader 0:   0%|          | 0/1 [00:00<?, ?it/s]\n"
        "Epoch 2: 100%|##########| 3/3 [00:23<00:00,  7.93s/it, loss=1.58]\n"
    )
    assert run_text(validated).diagnoses == []


def test_a_bar_at_zero_redrawn_minutes_later_is_a_live_program_not_a_hang() -> None:
    # verl (volcengine/verl#1299), a run that completed: its one-step bar was redrawn at 02:34.
    redrawn = (
        "Training Progress:   0%|          | 0/1 [02:34<?, ?it/s]\n"
        "(WorkerDict pid=3125824)   warnings.warn( [repeated 7x across cluster]\n"
    )
    assert run_text(redrawn).diagnoses == []


def test_a_bar_at_zero_drawn_after_the_error_that_ended_the_run_is_not_a_hang() -> None:
    # OpenFedLLM#39: TRL's DPO collator raised, then tqdm drew its bar's closing state.
    report = run_text(
        '  File "/envs/lib/python3.10/site-packages/trl/trainer/utils.py", line 471, in __call__\n'
        '    prompt = feature["prompt"]\n'
        "KeyError: 'prompt'\n"
        "  0%|          | 0/10 [00:00<?, ?it/s]\n"
    )
    assert "hang" not in categories(report)
    assert categories(report)[:1] == ["unrecognised"]


@pytest.mark.parametrize(
    ("line", "failed"),
    [
        (b"KeyError: 'prompt'", True),
        (b"AssertionError", True),
        (b"  torch.OutOfMemoryError: CUDA out of memory.", True),
        (b"ErrorHandler registered", False),
        (b"RuntimeErrorCount=3", False),
    ],
)
def test_an_exceptions_last_line_is_told_from_words_that_contain_error(
    line: bytes, failed: bool
) -> None:
    assert bool(waits.FAILED_BEFORE.search(line)) is failed


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


def test_a_log_that_ends_on_nccl_set_up_is_a_probable_hang() -> None:
    # Lightning#19425: eight ranks connected their rings, and nothing came after.
    report = run_text(
        """\
        user-SYS:34364:35141 [2] NCCL INFO Connected all rings
        user-SYS:34596:35137 [4] NCCL INFO Channel 00 : 4[3e000] -> 5[3f000] via P2P/IPC
        user-SYS:34596:35137 [4] NCCL INFO Channel 01 : 4[3e000] -> 5[3f000] via P2P/IPC
        """
    )
    assert [d.rule for d in report.diagnoses] == ["hang.collective_setup"]
    assert report.diagnoses[0].confidence < 0.5  # a paste cut at the set-up looks the same
    assert report.diagnoses[0].evidence[0].lineno == 3


@pytest.mark.parametrize(
    "last",
    [
        "node:1:2 [0] NCCL INFO misc/socket.cc:619 -> 2",  # a failing call traced on its way out
        "node:1:2 [0] NCCL INFO comm 0x5581 rank 0 nranks 2 cudaDev 0 busId 1000 - Destroy COMPLETE",
        "step 10 loss 2.31",
    ],
)
def test_nccl_set_up_followed_by_anything_else_is_not_that_hang(last: str) -> None:
    report = run_text(
        "node:1:2 [0] NCCL INFO Channel 00 : 0[1000] -> 1[2000] via P2P/IPC\n"
        "node:1:2 [0] NCCL INFO Connected all rings\n" + last + "\n"
    )
    assert "hang.collective_setup" not in [d.rule for d in report.diagnoses]


@pytest.mark.parametrize(
    "log",
    [
        # OpenNMT-py#1616: a world size of 2 on one GPU; the run never logged a step.
        "[2019-10-29 12:13:22,665 INFO] Starting training on GPU: [0]\n"
        "[2019-10-29 12:13:22,665 INFO] Start training loop and validate every 10000 steps...\n",
        # transformers#21482: the Trainer's banner, then W&B, then nothing.
        "[INFO|trainer.py:1522] 2023-02-09 22:55:56,474 >>   Total optimization steps = 9824\n"
        "[INFO|integrations.py:579] 2023-02-09 22:55:56,994 >> Automatic Weights & Biases"
        " logging enabled\n",
    ],
)
def test_a_log_that_ends_as_training_starts_is_a_probable_hang(log: str) -> None:
    report = run_text(log)
    assert [d.rule for d in report.diagnoses] == ["hang.before_first_step"]
    assert report.diagnoses[0].fields["wait"] == "training_start"
    assert report.diagnoses[0].confidence < 0.5  # a paste cut there looks the same
    # It reads no words of a message, so its reason quotes none.
    assert report.diagnoses[0].reason.endswith("matched (ranked below specific rules)")


@pytest.mark.parametrize(
    "after",
    [
        # detectron2 (batch-08, healthy): the first step's DDP notes, one per rank.
        "[W reducer.cpp:1303] Warning: find_unused_parameters=True was specified\n" * 2,
        "iter: 0  loss: 12.6127 (12.6127)\n",
        "ERROR: Unexpected bus error encountered in worker.\n",
    ],
)
def test_training_start_followed_by_more_is_not_that_hang(after: str) -> None:
    report = run_text("2021-10-28 14:39:23,165 trainer INFO: Start training\n" + after)
    assert "hang.before_first_step" not in [d.rule for d in report.diagnoses]


def test_the_training_start_is_only_telling_at_the_end() -> None:
    assert waits.signature("INFO: Start training from epoch: 0, iter: 0") == "training_start"
    assert waits.signature("  Total optimization steps = 9824") == "training_start"
    assert waits.signature("restart training from scratch") is None


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


def test_a_loss_printed_as_a_sentence_is_read() -> None:
    # Posted in intel-analytics/BigDL: the last record's loss is Infinity.
    report = run_text(
        """\
        [Epoch 64 736512/1281167][Iteration 45457] Throughput is 408.40378 records/second. Loss is 1.2645824. Current learning rate is 0.046284164
        [Epoch 64 738304/1281167][Iteration 45458] Throughput is 398.6954 records/second. Loss is 1.308916. Current learning rate is 0.0462827653
        [Epoch 64 740096/1281167][Iteration 45459] Throughput is 447.22968 records/second. Loss is Infinity. Current learning rate is 0.046281366
        """
    )
    assert categories(report) == ["nan_loss"]
    assert report.diagnoses[0].fields["step"] == 45459


def test_fairseqs_routine_loss_scale_notes_are_not_a_collapse() -> None:
    # Posted in fairseq#3199: fairseq's scaler starts at 128 and probes; the maintainer: normal.
    notes = "".join(
        f"2021-01-26 03:0{i}:32 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss"
        f" scale to: {scale}\n"
        for i, scale in enumerate(["64.0", "32.0", "16.0", "8.0", "4.0"])
    )
    assert run_text(notes).diagnoses == []
    collapsed = notes + (
        "2021-01-26 04:00:00 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss"
        " scale to: 0.0001220703125\n"
    )
    assert categories(run_text(collapsed)) == ["nan_loss"]


def test_a_log_that_ends_in_a_stack_dump_is_a_hang_however_long_the_dump() -> None:
    frames = "".join(f"    frame_{i} (module_{i}.py:{i})\n" for i in range(20))
    report = run_text(
        'Thread 47037 (idle): "MainThread"\n    wait (file_baton.py:42)\n'
        + frames
        + 'Thread 47073 (idle): "Thread-1"\n    wait (threading.py:324)\n'
        + frames
    )
    assert categories(report) == ["hang"]
    assert report.diagnoses[0].fields["wait"] == "stack_dump"


def test_a_log_that_ends_while_ddp_initialises_is_a_hang() -> None:
    # Posted in Lightning: two nodes, duplicated global ranks, nothing after the set-up.
    report = run_text(
        """\
        LOCAL_RANK: 3 - CUDA_VISIBLE_DEVICES: [0,1,2,3]
        initializing ddp: GLOBAL_RANK: 3, MEMBER: 4/8
        initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8
        initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8
        """
    )
    assert categories(report) == ["hang"]
    assert report.diagnoses[0].fields["wait"] == "rendezvous"
    # Set up, then trained: not a hang.
    assert (
        run_text(
            "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/8\n" + "step 1 loss 2.0\n" * 3
        ).diagnoses
        == []
    )


def test_a_traceback_cut_at_a_wait_call_in_its_code_is_a_hang() -> None:
    # Posted in peft: Ctrl-C after ten silent minutes while saving; the paste stops on the frames.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "/opt/conda/bin/deepspeed", line 6, in <module>
            main()
          File "/opt/conda/lib/python3.10/site-packages/deepspeed/launcher/runner.py", line 586, in main
            result.wait()
        """
    )
    assert categories(report) == ["hang"]
    assert "result.wait()" in report.diagnoses[0].summary


def test_validation_loss_climbing_over_three_evaluations_is_overfitting() -> None:
    # Posted in monodepth: the training loss falls, validation climbs 17% above its best.
    report = run_text(
        """\
        Epoch: 1 train_loss: 1.8654 val_loss: 1.3897
        Epoch: 2 train_loss: 1.7082 val_loss: 1.2999
        Epoch: 3 train_loss: 1.6671 val_loss: 1.2872
        Epoch: 4 train_loss: 1.6340 val_loss: 1.3201
        Epoch: 5 train_loss: 1.6094 val_loss: 1.5058
        """
    )
    assert categories(report) == ["overfitting"]


def test_a_validation_loss_many_times_the_training_loss_and_rising_is_overfitting() -> None:
    # Posted in nanoGPT#97: fine-tuning on a tiny set, two evaluations.
    iters = "".join(
        f"iter {i}: loss {1.2 - (i - 780) / 100:.4f}, time 745.63ms\n" for i in range(780, 800)
    )
    later = "".join(
        f"iter {i}: loss {0.7 - (i - 980) / 200:.4f}, time 745.63ms\n" for i in range(980, 1000)
    )
    report = run_text(
        iters
        + "step 800: train loss 0.9795, val loss 3.7535\n"
        + later
        + "step 1000: train loss 0.6703, val loss 3.8986\n"
    )
    assert categories(report) == ["overfitting"]


def test_a_validation_loss_that_wobbles_once_is_not_overfitting() -> None:
    report = run_text(
        """\
        Epoch: 1 train_loss: 1.86 val_loss: 1.39
        Epoch: 2 train_loss: 1.70 val_loss: 1.30
        Epoch: 3 train_loss: 1.66 val_loss: 1.28
        Epoch: 4 train_loss: 1.63 val_loss: 1.31
        Epoch: 5 train_loss: 1.60 val_loss: 1.27
        """
    )
    assert report.diagnoses == []


def test_a_run_stopped_by_hand_with_no_error_is_a_probable_hang() -> None:
    # fast-reid#212: a two-GPU launch printed its arguments and nothing more until Ctrl-C.
    report = run_text(
        """\
        Command Line Args: Namespace(config_file='configs/bagtricks_R50-ibn.yml', num_gpus=2)
        ^CTraceback (most recent call last):
          File "./tools/train_net.py", line 67, in <module>
            args=(args,),
          File "./fastreid/engine/launch.py", line 68, in launch
            daemon=False,
        """
    )
    assert categories(report)[0] == "hang"
    assert report.diagnoses[0].rule == "hang.interrupted_by_hand"
    assert report.diagnoses[0].evidence[0].text.startswith("^CTraceback")


def test_an_error_that_explains_the_stop_outranks_the_ctrl_c() -> None:
    # The out-of-memory error is the cause; the Ctrl-C pressed afterwards is not.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "train.py", line 40, in <module>
            loss.backward()
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.
        ^C
        """
    )
    assert categories(report)[0] == "cuda_oom"


def test_a_launcher_killing_ranks_after_a_python_error_is_not_a_silent_kill() -> None:
    # DeepSpeed's launcher kills the other ranks whatever the cause; only when no rank printed
    # an error is the dead one a silent (OOM-killer) kill. The error here is printed first.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "train.py", line 3, in <module>
            main()
        ValueError: boom
        [2023-08-22 11:46:23,766] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3211
        """
    )
    assert categories(report) == ["unrecognised"]


def test_a_tensor_printed_full_of_nan_is_nan_loss() -> None:
    # speechbrain#2031: the user printed the wav2vec2 parameters after a few steps.
    report = run_text(
        """\
        speechbrain.core - Info: auto_mix_prec arg from hparam file is used
        tensor([nan, nan, nan,  ..., nan, nan, nan], device='cuda:0',
               requires_grad=True)
        """
    )
    assert categories(report) == ["nan_loss"]
    assert report.diagnoses[0].rule == "nan_loss.printed_values"
    assert report.diagnoses[0].evidence[0].text.startswith("tensor([nan, nan")


def test_bare_nan_lines_are_a_printed_nan_loss_from_the_third() -> None:
    # AuxiliaryASR#7: print(loss.item()) under a progress bar, every batch.
    two = "[train]:   0%|          | 0/5 [00:00<?, ?it/s]\nnan\nnan\n"
    assert "nan_loss" not in categories(run_text(two))
    report = run_text(two + "nan\nnan\n")
    assert categories(report) == ["nan_loss"]
    assert [line.text for line in report.diagnoses[0].evidence] == ["nan", "nan", "nan"]


def test_a_printed_zero_dim_nan_tensor_and_a_csv_row_of_nan_are_nan_loss() -> None:
    # ChatGLM-Finetuning#32: print(loss) every step after the first.
    three = "tensor(2.1309, device='cuda:0')\n" + "tensor(nan, device='cuda:0')\n" * 3
    assert categories(run_text(three)) == ["nan_loss"]
    # timm's summary.csv: epoch, train_loss, eval_loss, eval_top1, eval_top5.
    csv = "epoch,train_loss,eval_loss,eval_top1,eval_top5\n208,2.96,1.31,71.2,90.1\n209,nan,nan,1.0,5.0\n"
    assert categories(run_text(csv)) == ["nan_loss"]
    assert categories(run_text("epoch,loss,acc\n209,2.96,71.2\n210,2.95,71.4\n")) == []


def test_a_mask_row_of_inf_or_a_mixed_tensor_is_not_printed_nan() -> None:
    report = run_text(
        """\
        tensor([[0., -inf, -inf],
                [0., 0., -inf]])
        tensor([nan, 0.5000, 1.2000])
        step 1 loss 2.31
        """
    )
    assert report.diagnoses == []


def test_a_loss_printed_as_a_tensor_is_read_as_its_number() -> None:
    # FOTS#8, traced with PySnooper: the loss is a printed tensor.
    report = run_text(
        """\
            Modified var:.. reg_loss = tensor(0.8213, device='cuda:0', grad_fn=<MeanBackward1>)
            Modified var:.. loss = tensor(1.4421, device='cuda:0', grad_fn=<AddBackward0>)
            Modified var:.. reg_loss = tensor(inf, device='cuda:0', grad_fn=<MeanBackward1>)
            Modified var:.. loss = tensor(inf, device='cuda:0', grad_fn=<AddBackward0>)
        """
    )
    assert categories(report) == ["nan_loss"]


def test_a_loss_frozen_under_torchvisions_metric_logger_is_a_plateau() -> None:
    # MiniGPT-4#67: the same loss at every logged iteration of one epoch. The iterations in
    # brackets tell the records apart (the epoch alone would make them one record).
    lines = "".join(
        f"Train: data epoch: [0]  [{step}/5000]  eta: 0:08:37  lr: 0.000029  loss: 10.3750  "
        f"time: 0.4920  data: 0.0000  max mem: 43374\n"
        for step in range(3950, 4450, 50)
    )
    report = run_text(lines)
    assert categories(report) == ["loss_plateau"]
    # 10.3750 is also ln(32000), chance over Vicuna's vocabulary: judged so past the start,
    # which the bracketed iterations show too.
    assert report.diagnoses[0].rule in ("loss_plateau.frozen", "loss_plateau.at_chance")


def test_a_bar_at_zero_followed_by_an_error_is_a_failure_not_a_hang() -> None:
    # SimpleTuner#1035: the logger's error is glued to the bar, a traceback follows.
    report = run_text(
        "Generating aspect bucket cache:   0%|          | 0/1 [00:00<?, ?it/s]2024-10-08 "
        "04:10:13,267 [ERROR] Error processing image: Aspect buckets must be a list of floats.\n"
        "2024-10-08 04:10:13,268 [ERROR] Error traceback: Traceback (most recent call last):\n"
    )
    assert "hang" not in categories(report)
    assert report.diagnoses  # the error is still reported


def test_a_norm_in_the_millions_on_every_line_shown_is_an_explosion() -> None:
    # GUI-Actor#20: every record of the excerpt is already out of range, so the run's own
    # history offers no healthy scale for the last value to come back down to.
    report = run_text(
        """\
        {'loss': 2.5552, 'grad_norm': 6436024.447018536, 'learning_rate': 4.99e-06, 'epoch': 0.03}
        {'loss': 2.668, 'grad_norm': 25656094.98940503, 'learning_rate': 4.99e-06, 'epoch': 0.03}
        {'loss': 2.81, 'grad_norm': 36071025.201348156, 'learning_rate': 4.99e-06, 'epoch': 0.03}
        {'loss': 2.9197, 'grad_norm': 6908930.777177996, 'learning_rate': 4.99e-06, 'epoch': 0.03}
        {'loss': 3.3198, 'grad_norm': 1759233.4381649764, 'learning_rate': 4.99e-06, 'epoch': 0.03}
        """
    )
    assert report.diagnoses[0].rule == "gradient_explosion.exploded"


def test_a_spike_into_the_millions_that_falls_back_is_not_an_explosion() -> None:
    records = [f"step {i} loss 2.{i:02d} grad_norm 1.5\n" for i in range(10)]
    spike = ["step 10 loss 2.1 grad_norm 9.1e+08\n", "step 11 loss 2.1 grad_norm 2.3e+08\n"]
    back = ["step 12 loss 2.0 grad_norm 1.6\n"]
    report = run_text("".join(records + spike + back))
    assert "gradient_explosion" not in categories(report)


def test_a_loss_at_the_chance_level_of_a_large_output_is_judged_past_the_start() -> None:
    # DINO's loss pinned at ln(65536) = 11.0904 from epoch 151 on (facebookresearch/dino#246).
    late = "\n".join(
        f'{{"train_loss": 11.0902{i}, "train_lr": 0.0005, "epoch": {151 + i}}}' for i in range(4)
    )
    assert categories(run_text(late + "\n")) == ["loss_plateau"]
    # The same level at the first steps is where such a model starts.
    early = "\n".join(f"step {i} loss 11.0902{i}" for i in range(1, 5))
    assert run_text(early + "\n").diagnoses == []


def test_a_running_average_of_the_loss_that_is_not_finite_is_nan_loss() -> None:
    # DINOv2's MetricLogger (facebookresearch/dinov2#492): the step's value, then the average.
    line = (
        "Training  [   {step}/2500000]  eta: 40 days, 13:22:08  lr: 0.0006 (0.0003)  "
        "total_loss: 6.7223 (inf)  koleo_loss: 0.0315 (inf)  time: 1.363414  data: 0.000342"
    )
    report = run_text("\n".join(line.format(step=s) for s in (1250, 1260, 1270)) + "\n")
    assert categories(report) == ["nan_loss"]
    assert report.diagnoses[0].rule != "nan_loss.first_step"  # step 1250 is no first step
    # A grad norm's average is NaN under a loss scaler that skipped a step: no failure.
    healthy = "Train: [0/300][100/1251]  loss 9.01 (9.14)  grad_norm 3.77 (nan)  mem 17GB\n"
    assert run_text(healthy * 3).diagnoses == []


def test_a_perplexity_no_language_model_reaches_is_an_explosion() -> None:
    # OpenNMT-py with Adam at lr 1.0 (OpenNMT/OpenNMT-py#253).
    report = run_text(
        "\n".join(
            f"Epoch  1,   {n}/21692; acc:   0.41; ppl: 26881171418161356094253400435962903554686976.00;"
            f" 3324 src tok/s;     {n // 2} s elapsed"
            for n in (50, 100, 150, 200)
        )
        + "\n"
    )
    assert categories(report) == ["gradient_explosion"]


@pytest.mark.parametrize(
    "printed",
    [
        "76980 nan\n76990 nan\n77000 nan\n",  # print(step, loss.item()) (yanmtt#7)
        # numpy's array of the loss terms (ksw0306/ClariNet#7)
        "Global Step : 67938, [Total Loss, KL Loss, Reg Loss] : [   nan    nan 2.3337]\n" * 3,
    ],
)
def test_nan_printed_after_a_step_or_in_a_numpy_array_is_nan_loss(printed: str) -> None:
    assert categories(run_text(printed)) == ["nan_loss"]


def test_a_pipe_table_with_a_nan_cell_is_printed_nan_from_the_third_row() -> None:
    # wespeaker#178: the table's header scrolled away; the loss column reads nan on every rank.
    row = (
        "[ INFO : 2023-07-06 08:05:18,839 ] - |         3|       900|   0.65296|       nan|  5.5|\n"
    )
    assert "nan_loss" not in categories(run_text(row * 2))
    rows = "".join(row.replace("5.5", value) for value in ("5.5", "3.6", "6.0"))
    assert categories(run_text(rows)) == ["nan_loss"]
    healthy = "|         3|       900|   0.65296|    1.2|  5.5|\n" * 3
    assert run_text(healthy).diagnoses == []


@pytest.mark.parametrize(
    "log",
    [
        # lhotse/VALL-E (batch-84): every rank starts its validation, and nothing comes after.
        "2023-04-13 16:00:05,636 INFO [trainer.py:650] (4/8) Reaches end of dataloader.\n"
        "2023-04-13 16:00:05,637 INFO [trainer.py:626] (4/8) Computing validation loss\n",
        # tensor2tensor on Windows (batch-84): the estimator's batch count stops short of 100.
        "INFO:tensorflow:Evaluation [70/100]\nINFO:tensorflow:Evaluation [80/100]\n",
    ],
)
def test_a_log_that_ends_inside_an_evaluation_is_a_probable_hang(log: str) -> None:
    report = run_text(log)
    assert [d.rule for d in report.diagnoses] == ["hang.during_evaluation"]
    assert report.diagnoses[0].confidence < 0.5  # a paste cut there looks the same


def test_an_evaluation_that_printed_its_results_or_counted_its_last_batch_is_no_hang() -> None:
    ended = "INFO:tensorflow:Evaluation [90/100]\nINFO:tensorflow:Evaluation [100/100]\n"
    assert run_text(ended).diagnoses == []
    results = "INFO Computing validation loss\nINFO Epoch 3, validation: loss=4.183, acc=0.41\n"
    assert run_text(results).diagnoses == []
    assert waits.signature("epoch 36 evaluating [time: 0.99s, valid_score: 0.362800]") is None


@pytest.mark.parametrize(
    "last",
    [
        # ByteTrack on YOLOX (batch-103): pycocotools never printed DONE.
        "2025-02-18 01:10:43 | INFO     | yolox.evaluators.coco_evaluator:205 - Loading and"
        " preparing results...\n",
        # detectron2 on two GPUs (batch-103): the ranks never gathered their predictions.
        "[01/13 18:14:56 d2.evaluation.evaluator]: Total inference pure compute time: 0:05:12"
        " (0.072584 s / img per device, on 2 devices)\n\n",
    ],
)
def test_a_log_whose_last_line_is_a_stage_inside_an_evaluation_is_a_probable_hang(
    last: str,
) -> None:
    report = run_text("epoch: 5/80, iter: 7300/7311, total_loss: 4.855\n" + last)
    assert [d.rule for d in report.diagnoses] == ["hang.during_evaluation"]
    assert report.diagnoses[0].fields["wait"] == "evaluation_stage"


def test_an_evaluation_stage_followed_by_its_result_is_no_hang() -> None:
    # pycocotools prints each stage's DONE on the next line: a stage must be the last line.
    done = "Loading and preparing results...\nDONE (t=0.52s)\ncreating index...\n"
    assert run_text(done).diagnoses == []
    assert run_text("Accumulating evaluation results...\nDONE (t=1.90s).\n").diagnoses == []


def test_a_log_that_ends_initializing_the_process_group_is_a_hang() -> None:
    # YOLOv6 (batch-81) on four GPUs: the process group never formed.
    report = run_text("Using 4 GPU for training...\nInitializing process group...\n")
    assert [d.rule for d in report.diagnoses] == ["hang.stalled"]
    assert report.diagnoses[0].fields["wait"] == "rendezvous"


def test_two_gradient_norms_a_thousand_times_past_the_limit_are_an_explosion() -> None:
    # mmdetection's DetectoRS (batch-84): the log's first two records.
    report = run_text(
        "Epoch [1][50/1749]\tlr: 1.978e-03, loss: 59307.8674, grad_norm: 3801898445783.2650\n"
        "Epoch [1][100/1749]\tlr: 3.976e-03, loss: 21082.3080, grad_norm: 40558643632.8485\n"
    )
    assert categories(report) == ["gradient_explosion"]
    # One record is not enough, nor two merely past the limit.
    first = "Epoch [1][50/1749]\tlr: 1.978e-03, loss: 5.3, grad_norm: 3801898445783.2650\n"
    assert run_text(first).diagnoses == []
    assert run_text(first.replace("3801898445783", "380189") * 2).diagnoses == []


def test_the_same_loss_hundreds_of_steps_apart_is_a_frozen_run() -> None:
    # lit-gpt pretraining Falcon-7B (batch-82): iter 1 and iter 400 print 11.0666.
    frozen = (
        "iter 1: loss 11.0666, time: 13381.00ms, speed: 306 toks/s/device\n"
        "iter 400: loss 11.0666, time: 19090.34ms, speed: 214 toks/s/device\n"
    )
    assert categories(run_text(frozen)) == ["loss_plateau"]
    # Close together, or printed with few digits, the same value says nothing.
    assert run_text(frozen.replace("iter 400", "iter 40")).diagnoses == []
    assert run_text(frozen.replace("11.0666", "11.07")).diagnoses == []


def test_a_progress_percentage_is_not_a_loss_term_that_moves() -> None:
    # StudioGAN (batch-84): the generator's loss printed -0.0 while the progress column moves.
    lines = "".join(
        f"[INFO] > Step: {s:>6} Progress: {s / 1000:.1f}% Gen_loss: -0.0 Dis_loss: 13.82\n"
        for s in range(100, 600, 100)
    )
    assert categories(run_text(lines)) == ["loss_plateau"]


def test_keras_records_under_their_epoch_headers_are_distinct_records() -> None:
    # RMDL#12: Keras with verbose=2 prints the epoch on a line of its own and a record that
    # names no epoch; seven identical records under seven headers are a frozen loss.
    lines = "".join(
        f"Epoch {epoch}/300\n - 80s - loss: 14.5063 - acc: 0.1000 - val_loss: 14.5063\n\n"
        f"Epoch {epoch:05d}: val_acc did not improve from 0.10000\n"
        for epoch in range(278, 285)
    )
    report = run_text(lines)
    assert categories(report) == ["loss_plateau"]
    assert "14.5063" in report.diagnoses[0].summary


def test_identical_records_without_epoch_headers_stay_quiet() -> None:
    # The same seven records with no header between them may be one line copied by seven ranks.
    report = run_text(" - 80s - loss: 14.5063 - acc: 0.1000 - val_loss: 14.5063\n" * 7)
    assert "loss_plateau" not in categories(report)


def test_tcmallocs_warning_is_read_with_the_spaces_colab_prints() -> None:
    # Colab's runtime log keeps two spaces after "tcmalloc:" (batch-133).
    line = "tcmalloc:  large alloc 2400002048 bytes == 0x99a00000 @  0x7fb5f9f8c1e7"
    assert waits.signature(line) == "host_alloc"
