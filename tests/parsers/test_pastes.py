"""What a paste adds to a log (quotes, pytest's E, emphasis) and how rich draws a traceback."""

from __future__ import annotations

import pytest

from crashcart.parsers.lines import peel
from crashcart.parsers.traceback import from_ipython, unbox
from tests.conftest import categories, run_text


def test_decorations_are_peeled() -> None:
    assert peel("> E   **RuntimeError: x**")[0] == "RuntimeError: x"
    assert peel('>   File "x.py", line 3, in f')[0] == '  File "x.py", line 3, in f'
    assert peel("__init__.py")[0] == "__init__.py"
    assert peel(">>> import torch")[0] == ">>> import torch"
    # Each line wrapped in markdown's inline code, a space before the closing backtick.
    assert peel("`Traceback (most recent call last):`")[0] == "Traceback (most recent call last):"
    assert peel("`RuntimeError: x `")[0] == "RuntimeError: x"


def test_a_kernel_assertion_that_markdown_stripped_of_backticks_is_read() -> None:
    # learning-dynamics-of-llm#4: every line of the paste in inline code, the assertion's own
    # backticks eaten by the rendering.
    report = run_text(
        """\
        `indexSelectLargeIndex: block: [213,0,0], thread: [63,0,0] Assertion srcIndex < srcSelectDimSize failed. `
        `Computing eval metrics: 69%|#### | 22/32 [25:46<11:43, 70.32s/it] `
        """
    )
    assert categories(report)[0] == "cuda_device_assert"


def test_a_quoted_traceback_is_read_as_a_traceback() -> None:
    report = run_text(
        """\
        > Traceback (most recent call last):
        >   File "train.py", line 88, in <module>
        >     loss = criterion(out, y)
        > RuntimeError: expected scalar type Float but found Half
        """
    )
    assert categories(report)[0] == "dtype_mismatch"


def test_rich_box_lines_become_frames() -> None:
    assert unbox("│ /home/me/train.py:88 in main                 │") == (
        '  File "/home/me/train.py", line 88, in main'
    )
    assert unbox("│ ❱ 88 │   loss = model(batch)          │") == "    loss = model(batch)"
    assert unbox("╰──────────────────────────────────╯") == ""
    assert unbox("RuntimeError: x") == "RuntimeError: x"


def test_a_rich_traceback_with_a_wrapped_message_is_diagnosed() -> None:
    report = run_text(
        """\
        ╭──────────────── Traceback (most recent call last) ─────────────────╮
        │ /home/me/train.py:88 in main                                       │
        │                                                                    │
        │ ❱ 88 │   loss = model(batch)                                       │
        ╰────────────────────────────────────────────────────────────────────╯
        RuntimeError: Expected all tensors to be on the same device, but found at least two
        devices, cuda:0 and cpu! (when checking argument for argument mat1 in method wrapper_addmm)
        """
    )
    assert categories(report)[0] == "device_mismatch"
    facts = [f for f in report.facts if f["kind"] == "exception"]
    assert facts[0]["calls"] == "main"
    assert "cuda:0 and cpu" in facts[0]["detail"]


def test_a_traceback_pasted_without_its_indentation_is_read() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
        File "tools/train.py", line 27, in custom_train_model
        custom_train_detector(
        File "mmcv/runner/epoch_based_runner.py", line 127, in run
        epoch_runner(data_loaders[i], **kwargs)
        RuntimeError: CUDA error: an illegal memory access was encountered
        """
    )
    assert categories(report)[0] == "cuda_illegal_access"
    facts = [f for f in report.facts if f["kind"] == "exception"]
    assert facts[0]["calls"] == "custom_train_model run"


def test_ipython_frame_lines_become_frames() -> None:
    assert from_ipython("Cell In[4], line 2") == '  File "Cell In[4]", line 2, in <cell>'
    assert from_ipython(r"File ~\OCR\trainer\dataset.py:101, in Dataset.get_batch(self)") == (
        r'  File "~\OCR\trainer\dataset.py", line 101, in Dataset.get_batch'
    )
    assert from_ipython("<ipython-input-14-495233eaf2b4> in <module>") == (
        '  File "<ipython-input-14-495233eaf2b4>", line 0, in <module>'
    )
    assert from_ipython("----> 1 learn.fit_one_cycle(4)") == "    learn.fit_one_cycle(4)"
    assert from_ipython("     21     callbacks.append(cb)") == ""
    assert from_ipython("BrokenPipeError: [Errno 32] Broken pipe") == (
        "BrokenPipeError: [Errno 32] Broken pipe"
    )


def test_an_ipython_traceback_points_at_the_notebook_cell() -> None:
    # A Colab paste (pytorch/vision#138 style): IPython's frames, then the message.
    report = run_text(
        """        ---------------------------------------------------------------------------
        RuntimeError                              Traceback (most recent call last)
        <ipython-input-23-0b0a62a9f8d8> in <module>
              3 for epoch in range(3):
        ----> 4     loss = criterion(model(x), y)
              5     loss.backward()

        /usr/local/lib/python3.7/dist-packages/torch/nn/modules/loss.py in forward(self, input, target)
        --> 530         return F.mse_loss(input, target, reduction=self.reduction)

        RuntimeError: Found dtype Double but expected Float
        """
    )
    assert categories(report)[0] == "dtype_mismatch"
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["calls"] == "<module> forward"
    evidence = [line.text for line in report.diagnoses[0].evidence]
    assert evidence[0] == "<ipython-input-23-0b0a62a9f8d8> in <module>"  # the user's cell


def test_an_ipython_traceback_cut_before_its_message_keeps_the_name_its_header_gave() -> None:
    # EasyOCR's trainer in a Windows notebook (JaidedAI/EasyOCR#1021): the paste stops in the
    # frames, but IPython's header already said what was raised.
    report = run_text(
        r"""
        UnidentifiedImageError                    Traceback (most recent call last)
        Cell In[4], line 2
              1 opt = get_config("config_files/en_filtered_config.yaml")
        ----> 2 train(opt, amp=False)

        File ~\OCR\trainer\dataset.py:101, in Batch_Balanced_Dataset.get_batch(self)
             99 for i, data_loader_iter in enumerate(self.dataloader_iter_list):
            100     try:
        --> 101         image, text = next(data_loader_iter)
        """
    )
    assert categories(report)[0] == "data_error"
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["qualname"] == "UnidentifiedImageError" and fact["cut"] is True
    assert fact["code"] == "image, text = next(data_loader_iter)"


def test_a_colab_traceback_goes_on_past_the_frames_it_folded() -> None:
    # Colab folds library frames into "6 frames" (Lightning on a TPU, Lightning-AI#2735); the
    # frames after the fold belong to the same traceback, and the header named the exception.
    report = run_text(
        """
        KeyboardInterrupt                         Traceback (most recent call last)
        <ipython-input-4-fd5234884739> in <module>()
        ----> 6 trainer_1.fit(autoencoder_1, DataLoader(dataset_mnist_train))
        6 frames
        /usr/local/lib/python3.6/dist-packages/pytorch_lightning/trainer/trainer.py in fit(self, model)
        --> 473         results = self.accelerator_backend.train()
            474         self.accelerator_backend.teardown()
        [... skipping hidden 1 frame]
        /usr/local/lib/python3.6/dist-packages/torch/multiprocessing/spawn.py in join(self, timeout)
        --> 77         ready = multiprocessing.connection.wait(
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["calls"] == "<module> fit join" and fact["qualname"] == "KeyboardInterrupt"
    evidence = [line.text for line in report.diagnoses[0].evidence]
    assert evidence[0].startswith("KeyboardInterrupt  ")  # the header names what was raised


def test_a_stack_that_inductor_quotes_under_a_warning_is_no_exception() -> None:
    # Ultralytics under torch.compile (ultralytics#21975): "Found from :" and the frames of the
    # graph's origin, in a run that trained fine.
    report = run_text(
        """\
        skipping cudagraphs due to skipping cudagraphs due to cpu device (cat_1). Found from :
           File "/usr/lib/python3.12/site-packages/ultralytics/utils/loss.py", line 258, in __call__
            imgsz = torch.tensor(feats[0].shape[2:], device=self.device, dtype=dtype)
        """
    )
    assert report.diagnoses == []


def test_a_traceback_cut_right_after_its_header_is_never_silent() -> None:
    # sd-scripts: the paste ends on the header of the traceback that followed the message.
    report = run_text(
        """\
        Load dataset config from Z:\\LORA\\dataset.toml
        Invalid user config
        Traceback (most recent call last):
        """
    )
    assert categories(report) == ["unrecognised"]
    assert report.diagnoses[0].evidence[0].text == "Traceback (most recent call last):"


@pytest.mark.parametrize(
    ("message", "category"),
    [
        # torch.distributions' checks fail on NaN parameters (unitree_rl_lab#20)
        ("RuntimeError: normal expects all elements of std >= 0.0", "nan_loss"),
        # Ray's old memory monitor (ray-project/ray#4877): the node's RAM, not the GPU's
        (
            "ray.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node Local"
            " is used (15.98 / 16.82 GB).",
            "host_oom",
        ),
        # Isaac Gym's bindings for another Python (legged_gym#21)
        (
            "RuntimeError: No gym module found for the active version of Python (3.8)",
            "import_error",
        ),
        # RAFT-Stereo's own check on its predictions (princeton-vl/RAFT-Stereo#66)
        (
            "AssertionError: assert not torch.isnan(flow_preds[i]).any() and not"
            " torch.isinf(flow_preds[i]).any()",
            "nan_loss",
        ),
        # a compiled extension's pybind11 signature from another release (mamba#352)
        (
            "TypeError: causal_conv1d_fwd(): incompatible function arguments. The following"
            " argument types are supported:",
            "import_error",
        ),
        # a kernel's size requirement (mamba#345)
        (
            "RuntimeError: causal_conv1d only supports channel dimension divisible by 8 for now",
            "config_error",
        ),
        # transformers' VLMs (LLaMA-Factory#8329)
        (
            "ValueError: Image features and image tokens do not match: tokens: 2005, features 2695",
            "shape_mismatch",
        ),
        # DGL's graph frames (dgl#3165)
        (
            "dgl._ffi.base.DGLError: Expect number of features to match number of nodes (len(u))."
            " Got 18612081 and 18612080 instead.",
            "shape_mismatch",
        ),
        # torch 1.x's CPU allocator: posix_memalign failed with ENOMEM (pyg#581)
        (
            "RuntimeError: [enforce fail at CPUAllocator.cpp:56] posix_memalign(&data, gAlignment,"
            " nbytes) == 0. 12 vs 0",
            "host_oom",
        ),
        # gradient checkpointing's checkpoint(), not a saved checkpoint (LLaMA-Factory#6405)
        (
            "RuntimeError: none of output has requires_grad=True, this checkpoint() is not"
            " necessary",
            "requires_grad",
        ),
        # bitsandbytes asks for GPU memory, not the host's (bitsandbytes#881)
        (
            "ValueError: Some modules are dispatched on the CPU or the disk. Make sure you have"
            " enough GPU RAM to fit the quantized model.",
            "cuda_oom",
        ),
        # the shell's "Killed" printed over a line redrawn with \r (facebookresearch/dlrm#4)
        ("Killedg in train batch: 127687 / 263115", "host_oom"),
        # an ImportError's message logged by a library that caught it (TabPFN#571)
        (
            "\t\tcannot import name 'resolve_model_path' from 'tabpfn.model.loading'"
            " (/content/tabpfn/src/tabpfn/model/loading.py)",
            "import_error",
        ),
        # TensorFlow's wordings of the same categories (batch-98's families)
        (
            "tensorflow.python.framework.errors_impl.InvalidArgumentError:  Received a label value"
            " of 66908 which is outside the valid range of [0, 66908).  Label values: 1 5",
            "cuda_device_assert",
        ),
        (
            "ValueError: Failed to convert a NumPy array to a Tensor (Unsupported object type"
            " float).",
            "dtype_mismatch",
        ),
        (
            "ValueError: Dimensions must be equal, but are 19 and 39 for '{{node Equal}} = Equal"
            "[T=DT_INT64]' with input shapes: [?,19], [?,39].",
            "shape_mismatch",
        ),
        (
            "tensorflow.python.framework.errors_impl.InvalidArgumentError: Invalid JPEG data or"
            " crop window, data size 32768",
            "data_error",
        ),
        # CUDA spelled GPU: the device vocabulary reads it (cell2location on pyro, scvi#926)
        (
            "RuntimeError: Tensor for 'out' is on CPU, Tensor for argument #1 'self' is on CPU,"
            " but expected them to be on GPU (while checking arguments for addmm)",
            "device_mismatch",
        ),
        # torch.load's legacy reader on a file cut short (hgl-pytorch#2)
        (
            "RuntimeError: unexpected EOF, expected 4859355 more bytes. The file might be"
            " corrupted.",
            "checkpoint_load",
        ),
        # Caffe's glog check on a CUDA call (hf-fcn#7)
        (
            "F1025 17:11:54.660645  1436 syncedmem.cpp:58] Check failed: error == cudaSuccess (2"
            " vs. 0)  out of memory",
            "cuda_oom",
        ),
        # XLA's HLO names a broadcast op: no collective (pytorch/xla#2918)
        (
            "RuntimeError: Internal: Seen floating point types of different precisions in"
            " %batch-norm-grad.5797 = (f32[8192]{0} %broadcast.5779, f64[1,8192,768]{2,1,0}"
            " %reshape.5789), but mixed precision is disallowed.",
            "dtype_mismatch",
        ),
    ],
)
def test_the_words_of_a_message_name_its_category(message: str, category: str) -> None:
    assert categories(run_text(message + "\n"))[0] == category


def test_a_vscode_exception_block_is_read_as_its_traceback() -> None:
    # VS Code's debugger names the exception, then the message, then the frames innermost first
    # (huggingface/transformers#31434).
    report = run_text(
        """\
        Exception has occurred: RuntimeError       (note: full exception trace is shown but execution is paused at: _run_module_as_main)
        split_with_sizes expects split_sizes to sum exactly to 2700 (input tensor's size at dimension -1), but got split_sizes=[3]
          File "/home/me/.local/lib/python3.10/site-packages/torch/_tensor.py", line 921, in split
            return torch._VF.split_with_sizes(self, split_size, dim)
          File "/home/me/project/train.py", line 12, in <module>
            loss = model(batch)
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["type"] == "RuntimeError"
    assert fact["message"].startswith("split_with_sizes expects")
    assert fact["calls"] == "<module> split"  # outermost first, as a traceback prints them
    assert "cut" not in fact
    assert [d.rule for d in report.diagnoses] == ["unrecognised"]  # one failure, not two


def test_a_log_that_ends_on_a_logged_error_is_never_silent() -> None:
    # HugeCTR (NVIDIA-Merlin/HugeCTR#39): its reader logs the error and the run stops there.
    text = (
        "[21d09h02m30s][HUGECTR][INFO]: num_internal_buffers 1\n"
        "[HCDEBUG][ERROR] DataHeaderError /hugectr/HugeCTR/include/data_readers/data_reader_worker.hpp:58\n"
    )
    report = run_text(text)
    assert [d.rule for d in report.diagnoses] == ["unrecognised"]
    assert report.diagnoses[0].evidence[0].lineno == 2
    # In the middle of a run that goes on, a logged error may be routine.
    assert run_text(text + "step 10 loss 2.31\n" * 3).diagnoses == []


def test_a_windows_path_in_a_frame_keeps_its_backslashes() -> None:
    # pyparsing's quoted strings turn backslash-t and backslash-f into a tab and a form feed by default.
    report = run_text(
        r"""
        Traceback (most recent call last):
          File "C:\Users\me\fastai\train.py", line 9, in <module>
            learn.fit(4)
        RuntimeError: boom
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["files"] == r"C:\Users\me\fastai\train.py"


def test_a_bare_assertion_error_is_read_by_its_assert_statement() -> None:
    # GPT-SoVITS on Windows (RVC-Boss/GPT-SoVITS#1382): Python prints no message for `assert x`.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "E:\\GPT-SoVITS\\GPT_SoVITS\\s2_train.py", line 85, in run
            train_dataset = TextAudioSpeakerLoader(hps.data)
          File "E:\\GPT-SoVITS\\GPT_SoVITS\\module\\data_utils.py", line 35, in __init__
            assert os.path.exists(self.path2)
        AssertionError
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["code"] == "assert os.path.exists(self.path2)"
    assert fact["quote"] == "AssertionError at assert os.path.exists(self.path2)"
    assert categories(report) == ["data_error"]
    assert "(AssertionError at assert os.path.exists(self.path2))" in report.diagnoses[0].summary


def test_an_unknown_bare_assertion_names_its_statement() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
          File "train.py", line 12, in <module>
            assert len(queue) < limit
        AssertionError
        """
    )
    (diagnosis,) = report.diagnoses
    assert diagnosis.category == "unrecognised"
    assert "AssertionError: assert len(queue) < limit." in diagnosis.summary


def test_a_bare_assertion_on_the_settings_is_a_configuration_error() -> None:
    # XLM's trainer (XLM#343) checks its flags with asserts: --fp16 needs --amp 1 or more.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "/content/XLM/xlm/trainer.py", line 58, in __init__
            assert params.amp >= 1 or not params.fp16
        AssertionError
        """
    )
    assert [d.rule for d in report.diagnoses] == ["config_error.assertion_on_settings"]
    assert "assert params.amp >= 1 or not params.fp16" in report.diagnoses[0].summary


def test_a_traceback_cut_at_its_raise_statement_keeps_the_name_it_raises() -> None:
    # PyKEEN's training loop (pykeen/pykeen#1300): the paste stops where the message begins.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "/afs/x/resume_training.py", line 32, in <module>
            result = pipeline(
          File "/afs/x/site-packages/pykeen/training/training_loop.py", line 1185, in _load_state
            raise CheckpointMismatchError(
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["cut"] and fact["qualname"] == "CheckpointMismatchError"
    assert categories(report)[0] == "checkpoint_load"


def test_a_traceback_cut_at_a_raise_of_a_variable_names_nothing() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
          File "/root/ai-toolkit/run.py", line 108, in main
            raise e
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["cut"] and fact["qualname"] == ""
    assert categories(report) == ["unrecognised"]


def test_a_logged_message_before_a_cut_traceback_on_its_line_is_read() -> None:
    # SimpleTuner logs f"{e}, traceback: {format_exc()}"; the paste keeps two frames of it.
    report = run_text(
        """\
        2024-03-28 21:44:52,843 [ERROR] (__main__) No images were discovered by the bucket manager in the dataset: pelolisu., traceback: Traceback (most recent call last):
          File "/mnt/f/Projetos/SimpleTuner/train_sdxl.py", line 428, in main
            configure_multi_databackend(
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["cut"]
    assert fact["message"] == (
        "No images were discovered by the bucket manager in the dataset: pelolisu"
    )
    assert categories(report) == ["data_error"]
    assert report.diagnoses[0].evidence[0].lineno == 1


def test_a_logged_message_a_few_lines_above_a_cut_traceback_is_its_message() -> None:
    # ai-toolkit (ostris/ai-toolkit#34) prints "Error running job: ...", a summary of its jobs,
    # then the traceback, which the paste cuts before its last line.
    report = run_text(
        """\
        EC Style:   0%|          | 0/4000 [00:00<?, ?it/s]Error running job: cannot pickle 'weakref.ReferenceType' object

        ========================================
        Result:
         - 0 completed jobs
         - 1 failure
        ========================================
        Traceback (most recent call last):
          File "D:\\ai-toolkit\\run.py", line 86, in main
            raise e
        """
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["cut"] and fact["message"] == "cannot pickle 'weakref.ReferenceType' object"
    assert categories(report) == ["dataloader_worker"]
    assert [line.lineno for line in report.diagnoses[0].evidence][:2] == [1, 8]


def test_a_logged_error_far_above_a_cut_traceback_is_not_its_message() -> None:
    report = run_text(
        "ERROR: could not reach the metrics server: retried\n"
        + "step 1 loss 0.5\n" * 60
        + "Traceback (most recent call last):\n"
        + '  File "/root/ai-toolkit/run.py", line 108, in main\n'
        + "    raise e\n"
    )
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["cut"] and fact["message"] == ""


def test_a_cut_worker_traceback_is_the_tail_of_the_error_above_it() -> None:
    report = run_text(
        """\
        KeyError: Caught KeyError in DataLoader worker process 0.
        Original Traceback (most recent call last):
          File "/usr/lib/python3/site-packages/torch/utils/data/_utils/worker.py", line 202, in _worker_loop
            data = fetcher.fetch(index)
        """
    )
    (cut,) = [f for f in report.facts if f["kind"] == "exception" and f.get("cut")]
    assert cut["reraised"]
    assert categories(report) == ["dataloader_worker"]


def test_a_traceback_a_logging_handler_printed_is_no_failure() -> None:
    # flair on a Windows console (flairNLP/flair#718): the record could not be encoded.
    report = run_text(
        """\
        --- Logging error ---
        Traceback (most recent call last):
          File "...\\lib\\logging\\__init__.py", line 1037, in emit
            stream.write(msg + self.terminator)
        UnicodeEncodeError: 'charmap' codec can't encode characters in position 28-31: character maps to <undefined>
        Call stack:
          File "...flair_lm.py", line 33, in <module>
          File "...\\flair\\trainers\\language_model_trainer.py", line 336, in train
            log.info(self.model.generate_text())
        Message: (...)
        Arguments: ()
        """
    )
    assert report.diagnoses == []
    (fact,) = [f for f in report.facts if f["kind"] == "exception"]
    assert fact["logging_error"]


def test_an_ipython_traceback_inside_pytest_output_is_read() -> None:
    # papermill run under pytest (microsoft/nlp-recipes#501): every line behind pytest's "E".
    report = run_text(
        """\
        E           ImportError                               Traceback (most recent call last)
        E           <ipython-input-1-14cd61902c6c> in <module>
        E                 8 from sklearn.metrics import classification_report
        E           ----> 9 from utils_nlp.models.transformers.sequence_classification import SequenceClassifier
        E
        """
    )
    assert categories(report) == ["import_error"]


def test_a_warning_that_speaks_of_nan_losses_is_no_nan_loss() -> None:
    # ultralytics#1348: the AMP self-check fails, AMP is turned off, training goes on in fp32.
    report = run_text(
        "AMP: checks failed . Anomalies were detected with AMP on your system that may lead to"
        " NaN losses or zero-mAP results, so AMP will be disabled during training.\n"
        "      1/500      2.91G      1.523      2.871      1.312         38        640\n"
    )
    assert "nan_loss" not in categories(report)
    stopped = run_text("Epoch 3: NaN loss detected, stopping training.\n")
    assert categories(stopped)[:1] == ["nan_loss"]


def test_a_shell_kill_with_the_pastes_closing_backtick_is_read() -> None:
    # llama.cpp#5156: the code block's closing backtick on the shell's "Killed" line.
    report = run_text("blk.35.ffn_norm.weight, n_dims = 1, torch.bfloat16 --> float32\nKilled`\n")
    assert categories(report) == ["host_oom"]


def test_a_shell_kill_written_over_a_progress_bar_is_read() -> None:
    # alfred#33: "Killed" over the start of the bar it interrupted.
    report = run_text(
        "Killed:   0%|\u258f                    | 4/2628 [00:11<2:09:00,  2.95s/it]\n"
    )
    assert categories(report) == ["host_oom"]
