"""Error lines outside an exception, in the forms real logs print them."""

from __future__ import annotations

import pytest

from crashcart.parsers import error_lines


@pytest.mark.parametrize(
    ("line", "signature", "message"),
    [
        (
            "ERROR: Unexpected segmentation fault encountered in worker.",
            "error_level",
            "Unexpected segmentation fault encountered in worker.",
        ),
        (
            "error in ms_deformable_im2col_cuda: an illegal memory access was encountered",
            "error_in",
            "ms_deformable_im2col_cuda: an illegal memory access was encountered",
        ),
        (
            "THCudaCheck FAIL file=mmdet/ops/roi_align/src/roi_align_kernel.cu line=139 error=98 :",
            "thc_check",
            "file=mmdet/ops/roi_align/src/roi_align_kernel.cu line=139 error=98 :",
        ),
        (
            "Exception raised from findAlgorithms at /pytorch/aten/src/ATen/native/cudnn/Conv.cpp:550"
            " (most recent call first):",
            "cxx_raised",
            "findAlgorithms at /pytorch/aten/src/ATen/native/cudnn/Conv.cpp:550 (most recent call"
            " first):",
        ),
        (
            "bd73ab638b22:502:568 [0] include/alloc.h:112 NCCL WARN Cuda failure 999 'unknown error'",
            "nccl_warn_failure",
            "Cuda failure 999 'unknown error'",
        ),
        (
            "(raylet) [2025-04-02 15:02:00,117 E 135782 135782] (raylet) node_manager.cc:3069: 1"
            " Workers (tasks / actors) killed due to memory pressure (OOM)",
            "error_level",
            "(raylet) node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory"
            " pressure (OOM)",
        ),
        (
            "[E ProcessGroupNCCL.cpp:455] Some NCCL operations have failed or timed out.",
            "error_level",
            "Some NCCL operations have failed or timed out.",
        ),
        (
            "c39f5cf046aa:4533:4667 [0] NCCL INFO misc/socket.cc:619 -> 2",
            "nccl_trace",
            "misc/socket.cc:619 returned ncclSystemError (2)",
        ),
        (
            "/usr/include/cuda_fp16.h:12: fatal error: cuda_runtime.h: No such file or directory",
            "compiler_fatal",
            "cuda_runtime.h: No such file or directory",
        ),
        (  # Omniverse Kit's logger in Isaac Sim / Isaac Lab (IsaacLab#4244)
            "2025-12-18T08:52:52Z [8,385ms] [Error] [gpu.foundation.plugin] The currently installed"
            " NVIDIA graphics driver is unsupported or has known issues.",
            "error_level",
            "The currently installed NVIDIA graphics driver is unsupported or has known issues.",
        ),
        (  # ai-toolkit's job runner, after the progress bar it shares a line with
            "Style:   0%|          | 0/5000 [00:00<?, ?it/s]Error running job: Missing control"
            " images for QwenImageEditPlusModel",
            "error_doing",
            "Missing control images for QwenImageEditPlusModel",
        ),
        (  # a CUDA extension's check macro (faster-rcnn.pytorch#224's NMS, compute 6.1)
            "cudaCheckError() failed : invalid device function",
            "thc_check",
            "invalid device function",
        ),
        (  # Chainer's trainer and its heirs (PaddleSpeech#3694, ESPnet 1)
            "Exception in main training loop: Variable Shape not match, Variable [ w_0_moment1_0 ]"
            " need tensor with shape [] but load set tensor with shape [1]",
            "error_doing",
            "Variable Shape not match, Variable [ w_0_moment1_0 ] need tensor with shape [] but load"
            " set tensor with shape [1]",
        ),
        (  # TensorFlow's XLA without CUDA's libdevice (sleap#1485)
            "2023-09-14 08:17:07.669298: W tensorflow/core/framework/op_kernel.cc:1830]"
            " OP_REQUIRES failed at xla_ops.cc:446 : INTERNAL: libdevice not found at"
            " ./libdevice.10.bc",
            "tf_op_failed",
            "INTERNAL: libdevice not found at ./libdevice.10.bc",
        ),
        (  # TensorFlow's logger at FATAL, its timestamp already taken off (KataGo#325)
            "F .\\tensorflow/core/kernels/random_op_gpu.h:227] Non-OK-status:"
            " GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>, num_blocks, block_size,"
            " 0, d.stream(), gen, data, size, dist) status: Internal: invalid device function",
            "fatal_logged",
            "Non-OK-status: GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>, num_blocks,"
            " block_size, 0, d.stream(), gen, data, size, dist) status: Internal: invalid device"
            " function",
        ),
        (  # ... and as it prints it, and glog's own FATAL
            "2018-05-28 23:08:09.915981: F tensorflow/core/kernels/conv_ops.cc:667] Check failed:"
            " stream->parent()->GetConvolveAlgorithms(",
            "fatal_logged",
            "Check failed: stream->parent()->GetConvolveAlgorithms(",
        ),
        (
            "F1123 12:00:00.123456  1234 tensor_adapter.cc:23] Check failed: !available_",
            "fatal_logged",
            "Check failed: !available_",
        ),
        (  # TensorRT's trtexec logger (TensorRT#4258)
            "[11/22/2024-13:40:47] [E] Error[1]: [defaultAllocator.cpp::allocate::31] Error Code 1:"
            " Cuda Runtime (out of memory)",
            "error_level",
            "Error[1]: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of"
            " memory)",
        ),
        (  # onnxruntime's logger on Windows (ZenlessZoneZero-Auto#137)
            "2024-08-08 21:43:38.9311958 [E:onnxruntime:Default, provider_bridge_ort.cc:1546"
            " onnxruntime::TryGetProviderInfo_CUDA] onnxruntime::ProviderLibrary::Get"
            " [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed with error 126",
            "error_level",
            "onnxruntime::ProviderLibrary::Get [ONNXRuntimeError] : 1 : FAIL : LoadLibrary failed"
            " with error 126",
        ),
        (  # a frame of the stack Open MPI's signal handler dumps (DeepRec#838)
            "[n193-019-222:14623] [ 5] /usr/lib/python3.8/site-packages/sparse_operation_kit/lib/"
            "libcore.so(_ZN4core10BufferImpl7reserveERKNS_5ShapeE+0x313)[0x7fb5a5025143]",
            "crash_frame",
            "[n193-019-222:14623] [ 5] /usr/lib/python3.8/site-packages/sparse_operation_kit/lib/"
            "libcore.so(_ZN4core10BufferImpl7reserveERKNS_5ShapeE+0x313)[0x7fb5a5025143]",
        ),
        (  # PhysX's error callback under Isaac Lab (IsaacLab#1199)
            "/buildAgent/work/99bede84aa0a52c2/source/gpunarrowphase/src/PxgNarrowphaseCore.cpp"
            " (2185) : internal error : PxgDynamicsMemoryConfig::collisionStackSize buffer overflow"
            " detected, please increase its size to at least 1484579544 in the scene desc!",
            "physx_error",
            "PxgDynamicsMemoryConfig::collisionStackSize buffer overflow detected, please increase"
            " its size to at least 1484579544 in the scene desc!",
        ),
        (  # sentencepiece's failed CHECK (sentencepiece#859)
            "unigram_model_trainer.cc(150) [!std::isnan(score)]",
            "cxx_check",
            "unigram_model_trainer.cc(150) [!std::isnan(score)]",
        ),
        (  # a compiler that cannot build the extension the run needs (DA-Transformer#17)
            "cc1plus: fatal error: cuda_runtime.h: No such file or directory compilation"
            " terminated.",
            "compiler_fatal",
            "cuda_runtime.h: No such file or directory compilation terminated.",
        ),
        (  # pointnet2's CUDA ops (Vote2Cap-DETR#22)
            "CUDA kernel failed : no kernel image is available for execution on the device",
            "thc_check",
            "no kernel image is available for execution on the device",
        ),
        (  # Marian's report of what stopped it, after its timestamp (firefox-translations)
            "[2025-01-21 16:30:37] Error: CUDA error 999 'unknown error' - /builds/src/tensors/"
            "gpu/algorithm.cu:54: cudaStreamSynchronize(0)",
            "error_report",
            "CUDA error 999 'unknown error' - /builds/src/tensors/gpu/algorithm.cu:54:"
            " cudaStreamSynchronize(0)",
        ),
    ],
)
def test_error_line_forms(line: str, signature: str, message: str) -> None:
    (draft,) = error_lines.parse(line)
    assert draft.kind == "error_line"
    assert draft.fields["signature"] == signature
    assert draft.fields["message"] == message
    assert draft.fields["detail"] == line


@pytest.mark.parametrize(
    "line",
    [
        "RuntimeError: CUDA error: an illegal memory access was encountered",  # an exception
        "ERROR:root:ValueError: Expected input batch_size (64) to match target batch_size (32).",
        "Validation finished: 0 errors",
        "node1:1:1 [0] NCCL WARN NET/Plugin : Plugin load returned 2 : libnccl-net.so",
        "step 12 loss 0.53 error_rate 0.1",
        # ncclInProgress (7): a non-blocking communicator still setting up, not a failure.
        "node1:1:1 [0] NCCL INFO init.cc:1234 -> 7",
        "node1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC",
        "g3:1:1 [0] NCCL INFO NET/Plugin : Plugin load (libnccl-net.so) returned 2 : libnccl-net.so:"
        " cannot open shared object file: No such file or directory",
        # dlopen's "dlerror: " is no compiler error: TensorFlow probing for an optional library.
        "2022-04-29 10:30:55.950484: W tensorflow/stream_executor/platform/default/dso_loader.cc:64]"
        " Could not load dynamic library 'libcudart.so.11.0'; dlerror: libcudart.so.11.0: cannot"
        " open shared object file",
        # A tf.data iterator that reached its end: every epoch of a healthy run logs it.
        "2021-03-01 10:00:00.1: W tensorflow/core/framework/op_kernel.cc:1767] OP_REQUIRES failed"
        " at iterator_ops.cc:1000 : OUT_OF_RANGE: End of sequence",
        # TensorRT's warning and onnxruntime's.
        "[11/22/2024-13:40:47] [W] [TRT] Requested amount of GPU memory could not be allocated.",
        "2024-08-08 21:43:38.9401202 [W:onnxruntime:Default, onnxruntime_pybind_state.cc:861"
        " onnxruntime::python::CreateExecutionProviderInstance] Failed to create"
        " CUDAExecutionProvider.",
        # sentencepiece's routine progress, and TensorFlow's INFO and WARNING records.
        "trainer_interface.cc(435) LOG(INFO) Done! preprocessed 54664344 sentences.",
        "2020-10-03 17:02:22.488913: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1325]"
        " Created TensorFlow device",
        "W tensorflow/core/kernels/data/generator_dataset_op.cc:103] Error occurred when"
        " finalizing GeneratorDataset iterator",
    ],
)
def test_not_error_lines(line: str) -> None:
    assert error_lines.parse(line) == []


def test_a_tools_system_error_is_read_after_the_progress_bar_it_shares_a_line_with() -> None:
    # SpeechBrain on Colab: sox's perror() printed on the line tqdm was redrawing.
    line = (
        "  0% 0/1 [00:00<?, ?it/s]formats: can't open input file"
        " `./Speech Brain/converteddata/01/01-1_01.wav': No such file or directory"
    )
    (draft,) = error_lines.parse(line)
    assert draft.fields["signature"] == "os_error"
    assert draft.fields["message"] == (
        "formats: can't open input file `./Speech Brain/converteddata/01/01-1_01.wav':"
        " No such file or directory"
    )
    assert "os_error" not in error_lines.FAILURE_SIGNATURES  # `ls` says it in healthy runs too


@pytest.mark.parametrize("junk", [None, 12, "(" * 50_000, "ERROR: " * 5_000])
def test_never_raises(junk) -> None:
    assert isinstance(error_lines.parse(junk), list)


def test_only_a_logged_error_is_one_on_the_last_line() -> None:
    last = error_lines.last_logged("[HCDEBUG][ERROR] DataHeaderError /hugectr/data_reader.hpp:58")
    assert last is not None and last.fields["signature"] == "last_logged"
    assert "last_logged" in error_lines.FAILURE_SIGNATURES
    assert error_lines.last_logged("error in roi_align_forward_cuda: invalid argument") is None
    assert error_lines.last_logged("step 10 loss 2.31") is None


def test_a_fatal_record_is_a_failure_wherever_it_stands() -> None:
    # FATAL aborts the process: no traceback follows, often nothing at all.
    fatal = "2020-10-03 17:02:24.528951: F tensorflow/core/kernels/random_op_gpu.h:227] Non-OK"
    assert error_lines.parse(fatal)[0].fields["signature"] in error_lines.FAILURE_SIGNATURES


def test_a_compilers_fatal_error_and_a_programs_error_report_are_failures() -> None:
    assert {"compiler_fatal", "error_report"} <= error_lines.FAILURE_SIGNATURES
    # A compiler's plain error may be one it recovers from (a probe for an optional feature).
    assert "compiler" not in error_lines.FAILURE_SIGNATURES
    assert (
        error_lines.parse("x.cpp:3: error: 'nullptr' was not declared")[0].fields["signature"]
        == "compiler"
    )
    assert error_lines.parse("Validation Error: 0.31 at epoch 3") == []  # not at a line's start


def test_the_sentence_a_log_ends_on_is_read_when_it_says_something_failed() -> None:
    # vLLM's engine printed this and exited, without an exception (vllm#10517).
    ended = (
        "The model's max seq len (29000) is larger than the maximum number of tokens that can be"
        " stored in KV cache (23648). Try increasing `gpu_memory_utilization` or decreasing"
        " `max_model_len` when initializing the engine."
    )
    draft = error_lines.last_line(ended)
    assert draft is not None and draft.fields["signature"] == "last_line"
    assert draft.fields["detail"] == ended
    assert "last_line" not in error_lines.FAILURE_SIGNATURES  # only vocabulary rules read it


@pytest.mark.parametrize(
    "line",
    [
        "Training finished, saving the model to ./output",  # nothing failed
        "epoch 3 | loss 0.31 | error 0.12",  # a metric line, no sentence
        # A note on something optional (fairseq falls back to its CPU op).
        "cannot import name 'libnat_cuda' from 'fairseq' (/f/__init__.py)... fall back to CPU",
        "UserWarning: the number of workers could not be determined",
        "RuntimeError: CUDA error: out of memory",  # the traceback reader's
        "error in roi_align_forward_cuda: invalid argument",  # an error line of its own
        "zsh: bus error  python train.py",  # a fatal signal
        "Error caught was: No module named 'triton'",  # xformers' note on an optional import
    ],
)
def test_a_last_line_that_is_no_failed_sentence_is_not_read(line: str) -> None:
    assert error_lines.last_line(line) is None


def test_an_extension_prints_its_error_in_capitals_too() -> None:
    # neural_renderer's CUDA kernels under iPERCore (batch-131).
    line = "Error in forward_face_index_map_1: no kernel image is available for execution on the device"
    (draft,) = error_lines.parse(line)
    assert draft.fields["signature"] == "error_in"
    assert draft.fields["message"] == (
        "forward_face_index_map_1: no kernel image is available for execution on the device"
    )


def test_a_failed_host_assertion_is_a_failure() -> None:
    # glibc's assert() in MAGMA under ROMP (batch-131); a device-side one is torch_errors'.
    line = (
        "python: /opt/conda/conda-bld/magma/work/interface_cuda/interface.cpp:899: void"
        " magma_queue_create_from_cuda_internal(magma_device_t, cudaStream_t): Assertion"
        " `queue->dBarray__ != __null' failed."
    )
    (draft,) = error_lines.parse(line)
    assert draft.fields["signature"] == "c_assert"
    assert draft.fields["message"] == "Assertion `queue->dBarray__ != __null' failed."
    assert "c_assert" in error_lines.FAILURE_SIGNATURES
    kernel = "/pytorch/aten/src/ATen/native/cuda/Loss.cu:240: block: [0,0,0], thread: [5,0,0] Assertion `t >= 0` failed."
    assert not any(d.fields["signature"] == "c_assert" for d in error_lines.parse(kernel))
