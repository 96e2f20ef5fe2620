"""Ranking on the real pipeline: root cause first, symptoms below, fixes with the log's numbers."""

from __future__ import annotations

import pytest

from tests.conftest import categories, run_text

MULTI_RANK = """\
    {'loss': 1.91, 'learning_rate': 2e-05, 'epoch': 0.4}
    [rank5]:[E ProcessGroupNCCL.cpp:563] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15734, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600037 milliseconds before timing out.
    [rank6]:[E ProcessGroupNCCL.cpp:563] [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15734, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=600000) ran for 600041 milliseconds before timing out.
    [rank2]: Traceback (most recent call last):
    [rank2]:   File "train.py", line 9, in <module>
    [rank2]:     loss.backward()
    [rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 336.00 MiB. GPU 2 has a total capacity of 79.15 GiB of which 141.25 MiB is free. Process 2109115 has 78.99 GiB memory in use. Of the allocated memory 77.21 GiB is allocated by PyTorch, and 276.90 MiB is reserved by PyTorch but unallocated.
"""


def test_oom_on_one_rank_outranks_the_timeouts_it_caused() -> None:
    report = run_text(MULTI_RANK)
    assert categories(report) == ["cuda_oom", "distributed_timeout"]
    cause, symptom = report.diagnoses
    assert cause.explains == ["distributed_timeout"]
    assert symptom.explained_by == "cuda_oom"
    assert symptom.confidence < cause.confidence
    assert symptom.ranks == [5, 6]
    assert "5-6" in symptom.reason


def test_evidence_lines_point_at_the_log() -> None:
    report = run_text(MULTI_RANK)
    evidence = report.diagnoses[0].evidence
    assert any("OutOfMemoryError" in line.text and line.rank == 2 for line in evidence)
    assert all(line.path == "train.log" and line.lineno > 0 for line in evidence)


def test_specific_rule_leads_and_generic_is_listed_as_also_matched() -> None:
    report = run_text(
        """\
        RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 23.65 GiB total capacity; 12.00 GiB already allocated; 100.00 MiB free; 20.00 GiB reserved in total by PyTorch)
        """
    )
    top = report.diagnoses[0]
    assert top.rule == "cuda_oom.fragmentation"
    assert "cuda_oom.generic" in top.also_matched
    assert "8.00 GiB reserved but unallocated" in top.summary


def test_fix_uses_the_batch_size_the_log_echoed() -> None:
    report = run_text(
        """\
        ***** Running training *****
          Instantaneous batch size per device = 16
          Gradient Accumulation steps = 1
        Traceback (most recent call last):
          File "train.py", line 3, in <module>
            trainer.train()
        torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.02 GiB is free.
        """
    )
    top = report.diagnoses[0]
    assert top.rule == "cuda_oom.first_step"
    batch_fix = next(f for f in top.fixes if "micro-batch" in f["title"])
    assert batch_fix["patch"] == "--per_device_train_batch_size 8 --gradient_accumulation_steps 2"
    assert "per_device_train_batch_size 16 → 8" in batch_fix["change"]
    assert "effective batch per device stays 16" in batch_fix["change"]


def test_healthy_log_gives_nothing() -> None:
    report = run_text(
        """\
        {'loss': 2.31, 'grad_norm': 1.2, 'learning_rate': 5e-05, 'epoch': 0.1}
        {'loss': 2.05, 'grad_norm': 0.9, 'learning_rate': 4e-05, 'epoch': 0.2}
        node1:123:456 [0] NCCL INFO Channel 00/02 :    0   1
        UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly
        """
    )
    assert report.diagnoses == []


def test_repeated_message_is_one_fact() -> None:
    line = (
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`\n"
    )
    once = run_text(line)
    report = run_text(line * 50)
    # One cuda_oom fact and the exception line itself, however often the line repeats.
    assert sorted(fact["kind"] for fact in once.facts) == ["cuda_oom", "exception"]
    assert report.stats["facts"] == once.stats["facts"] == 2


def test_a_yaml_error_pasted_without_its_type_line_is_a_config_file_to_fix() -> None:
    # QueryDet (detectron2 config): the paste starts at PyYAML's problem and its mark.
    report = run_text(
        """\
        mapping values are not allowed here
          in "/home/xxx/project/QueryDet-PyTorch-main/models/config.py", line 5, column 29
          File "/home/xxx/project/QueryDet-PyTorch-main/train_tools/coco_train.py", line 135, in setup
            cfg.merge_from_file(args.config_file)
        """
    )
    assert report.diagnoses[0].rule == "config_error.unparsable_file"
    assert "mapping values are not allowed here" in report.diagnoses[0].summary
    # The same words inside a sentence of a healthy run are not a parse error.
    assert run_text("note: mapping values are not allowed here, so we use lists\n").diagnoses == []


def test_a_slurm_cgroup_oom_kill_is_the_cause_of_the_step_cancel_that_follows() -> None:
    # K-Net on a Slurm cluster (ZwwWayne/K-Net#30): srun reports the OOM, then cancels the step.
    report = run_text(
        """\
        slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s) in StepId=9411285.0. Some of your processes may have been killed by the cgroup out-of-memory handler.
        srun: error: gpu20-15: task 0: Out Of Memory
        slurmstepd-gpu20-15: error: *** STEP 9411285.0 ON gpu20-15 CANCELLED AT 2022-05-17T17:58:10 ***
        """
    )
    assert categories(report)[:2] == ["host_oom", "preemption"]
    assert report.diagnoses[0].rule == "host_oom.cgroup"


def test_a_divisibility_complaint_is_a_config_error_whatever_its_exception_type() -> None:
    # Megatron's parallel_state under NeMo on one GPU (NVIDIA/NeMo#11480).
    report = run_text("RuntimeError: world_size (1) is not divisible by 2\n")
    assert report.diagnoses[0].rule == "config_error.invalid_value"


def test_torchrun_given_sighup_is_a_session_that_closed_in_every_wording() -> None:
    # torch 2.4+ names the signal; Qwen3-VL#1933 shows the older number under a progress bar.
    for line in (
        "W1215 23:37:18.348000 762532 torch/distributed/elastic/agent/server/api.py:723] "
        "Received 1 death signal, shutting down workers",
        "Received Signals.SIGHUP death signal, shutting down workers",
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4015698 got "
        "signal: 1",
    ):
        report = run_text(f" 51%|#####     | 105/205 [47:23<47:05, 28.25s/it]\n{line}\n")
        assert report.diagnoses[0].rule == "preemption.hangup", line


def test_torchrun_given_sigterm_is_stopped_from_outside() -> None:
    report = run_text("Received Signals.SIGTERM death signal, shutting down workers\n")
    assert report.diagnoses[0].rule == "preemption.sigterm"


def test_a_device_index_beyond_the_visible_gpus_is_cuda_setup() -> None:
    # MACE#1197: two ranks on an H200 split into MIG slices, each seeing one GPU.
    report = run_text(
        """\
        RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED
        at "../aten/src/ATen/cuda/CUDAContext.cpp":49
        device=1, num_gpus=1
        """
    )
    assert report.diagnoses[0].rule == "cuda_setup.cpu_only_torch"


def test_a_compressed_data_file_that_does_not_decompress_is_data_error() -> None:
    # nnUNet#1797: a .npz unpacked on Windows.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "D:\\nnunet\\lib\\zipfile.py", line 1000, in _read1
            data = self._decompressor.decompress(data, n)
        zlib.error: Error -3 while decompressing data: invalid stored block lengths
        """
    )
    assert categories(report)[0] == "data_error"


def test_hydras_composition_errors_are_config_errors() -> None:
    for text in (
        "Cannot find primary config 'train'. Check that it's in your config search path.",
        "Could not override 'trainer.limit_train_batches'.\n"
        "To append to your config use +trainer.limit_train_batches=2",
    ):
        report = run_text(
            text + "\n\nSet the environment variable HYDRA_FULL_ERROR=1 for a "
            "complete stack trace.\n"
        )
        assert report.diagnoses[0].rule == "config_error.hydra_compose", text


def test_a_native_library_missing_for_this_torch_is_an_extension_build_problem() -> None:
    # dgl#7438: DGL ships one graphbolt library per torch version.
    report = run_text(
        "FileNotFoundError: Cannot find DGL C++ graphbolt library at "
        "/home/james/dgl/python/dgl/graphbolt/libgraphbolt_pytorch_2.3.0.so\n"
    )
    assert report.diagnoses[0].rule == "import_error.extension_abi"
    assert "libgraphbolt_pytorch_2.3.0.so" in report.diagnoses[0].summary


def test_an_unknown_architecture_name_is_a_config_error() -> None:
    report = run_text("ValueError: Unknown architecture: torchmd_gn\n")
    assert categories(report) == ["config_error"]


def test_a_missing_name_the_library_falls_back_from_is_no_failure() -> None:
    # fairseq#3597: the optional CUDA kernel is missing, the CPU version runs, every step.
    fallback = (
        "cannot import name 'libnat_cuda' from 'fairseq' (/home/u/fairseq/fairseq/__init__.py)..."
        " fall back to CPU version\n"
    )
    assert run_text(fallback * 3).diagnoses == []
    missing = "ImportError: cannot import name 'libnat_cuda' from 'fairseq' (/home/u/x.py)\n"
    assert categories(run_text(missing)) == ["import_error"]


@pytest.mark.parametrize(
    "dialog",
    [
        # Colab's dialog (FTCP#8, batch-133) and Kaggle's (DDCap#39's title).
        "> Your session crashed after using all available RAM. If you are interested in access"
        " to high-RAM runtimes, you may want to check out Colab Pro.",
        "Your notebook tried to allocate more memory than is available. It has restarted.",
    ],
)
def test_a_notebook_service_saying_it_ran_out_of_ram_is_host_memory(dialog: str) -> None:
    (diagnosis,) = run_text(dialog + "\n").diagnoses
    assert diagnosis.rule == "host_oom.notebook_out_of_ram"
