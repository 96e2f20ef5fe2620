"""The vocabulary tier: a category from the words of a message no specific rule knows."""

from __future__ import annotations

import pytest

from crashcart.analyzer import Analyzer, default_rulebase
from tests.conftest import categories, run_text


def test_an_unknown_wording_is_named_by_its_words() -> None:
    # Posted in pytorch/pytorch#36553: a wording no specific rule knows.
    report = run_text("RuntimeError: expected dtype Double but got dtype Float\n")
    (diagnosis,) = report.diagnoses
    assert diagnosis.category == "dtype_mismatch"
    assert diagnosis.tier == "vocabulary"
    assert '"dtype"' in diagnosis.reason
    assert diagnosis.confidence < 0.7


def test_a_specific_rule_on_the_same_message_wins_alone() -> None:
    report = run_text(
        "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)\n"
    )
    assert categories(report) == ["shape_mismatch"]
    assert report.diagnoses[0].tier == "specific"


def test_each_message_is_read_by_its_best_vocabulary_rule_only() -> None:
    # NCCL words and "invalid" (a config word) in one message: NCCL, not a config error too.
    report = run_text(
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, "
        "invalid usage, NCCL version 2.19.3\n"
    )
    assert categories(report)[:1] == ["nccl"]
    assert "config_error" not in categories(report)


def test_vocabulary_ranks_below_a_specific_diagnosis() -> None:
    report = run_text(
        """\
        RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 23.65 GiB total capacity; 21.00 GiB already allocated; 100.00 MiB free; 21.50 GiB reserved in total by PyTorch)
        mylib.LoaderError: state_dict of the EMA copy is stale
        """
    )
    assert categories(report) == ["cuda_oom", "checkpoint_load"]
    assert [d.tier for d in report.diagnoses] == ["specific", "vocabulary"]


def test_every_category_with_messages_has_a_vocabulary_rule() -> None:
    tiers = {rule.category for rule in default_rulebase().rules if rule.tier == "vocabulary"}
    trends = {"loss_plateau", "slow_training", "gradient_explosion", "memory_leak", "overfitting"}
    assert {"shape_mismatch", "dtype_mismatch", "device_mismatch", "cuda_oom", "nccl"} <= tiers
    assert not tiers & trends


def test_analyses_in_one_process_reuse_the_engine_session_ids() -> None:
    """The rules engine never frees a session id's memory: closed runs' ids are reused, so
    memory stays flat over thousands of analyses (eval, watch, tui)."""
    session = default_rulebase().session
    sids = set()
    for _ in range(50):
        sid = session.open_run()
        sids.add(sid)
        session.close_run(sid)
    assert len(sids) == 1
    # And through the pipeline: an analysis closed, the next one takes over its id.
    first = Analyzer(default_rulebase())
    sid = first.diagnoser.sid
    first.close()
    first.close()  # closing twice does not hand the id out twice
    second, third = Analyzer(default_rulebase()), Analyzer(default_rulebase())
    assert second.diagnoser.sid == sid != third.diagnoser.sid
    second.close()
    third.close()


def test_a_missing_data_file_is_unreadable_data_and_a_missing_checkpoint_is_not() -> None:
    # VCoder (LLaVA) training: the dataset's annotation file was never downloaded.
    data = run_text(
        "FileNotFoundError: [Errno 2] No such file or directory:"
        " './playground/data/coco_segm_text/train/panoptic.txt'\n"
    )
    assert categories(data)[:1] == ["data_error"]
    weights = run_text(
        "FileNotFoundError: [Errno 2] No such file or directory: 'runs/exp3/weights/best.pt'\n"
    )
    assert categories(weights)[:1] == ["checkpoint_load"]


def test_a_path_that_does_not_exist_is_a_setting_to_fix() -> None:
    # diffusers' train_dreambooth.py given an --instance_data_dir that was never created.
    report = run_text("ValueError: Instance images root doesn't exists.\n")
    assert categories(report)[:1] == ["config_error"]


def test_invalid_syntax_is_the_codes_grammar_not_a_setting() -> None:
    # NoisyDARTS run on a Python where `async` is a keyword: the word "invalid" names no setting.
    report = run_text(
        '  File "train_search.py", line 12\n'
        "    from utils import async\n"
        "                          ^\n"
        "SyntaxError: invalid syntax\n"
    )
    assert categories(report)[:1] == ["unrecognised"]
    assert categories(run_text("ValueError: invalid value for --lr_scheduler\n"))[:1] == [
        "config_error"
    ]


def test_a_key_missing_from_what_a_loader_read_is_a_checkpoint_problem() -> None:
    # Real-ESRGAN (basicsr) given a pretrained file that keeps its weights under another key.
    frames = (
        "Traceback (most recent call last):\n"
        '  File "realesrgan/train.py", line 11, in <module>\n'
        "    train_pipeline(root_path)\n"
        '  File "basicsr/models/base_model.py", line 300, in {function}\n'
        "    load_net = load_net[param_key]\n"
        "KeyError: 'params'\n"
    )
    assert categories(run_text(frames.format(function="load_network")))[:1] == ["checkpoint_load"]
    assert "checkpoint_load" not in categories(run_text(frames.format(function="__getitem__")))


def test_an_error_raised_by_the_dataloaders_reraise_is_a_worker_failure() -> None:
    # chineseocr: the worker's exception could not be re-created in the main process, and the
    # "Caught X in DataLoader worker" header never printed.
    report = run_text(
        "Traceback (most recent call last):\n"
        '  File "train-ocr.py", line 180, in <module>\n'
        "    cpu_images, cpu_texts = train_iter.next()\n"
        '  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 819,'
        " in __next__\n"
        "    return self._process_data(data)\n"
        '  File "/usr/lib/python3.6/site-packages/torch/utils/data/dataloader.py", line 846,'
        " in _process_data\n"
        "    data.reraise()\n"
        '  File "/usr/lib/python3.6/site-packages/torch/_utils.py", line 369, in reraise\n'
        "    raise self.exc_type(msg)\n"
        "TypeError: function takes exactly 5 arguments (1 given)\n"
    )
    assert categories(report)[:1] == ["dataloader_worker"]


def test_cuda_tensors_shared_with_workers_are_a_data_loading_failure() -> None:
    # fastai on Windows: spawned DataLoader workers cannot receive CUDA tensors.
    report = run_text(
        "THCudaCheck FAIL file=..\\torch/csrc/generic/StorageSharing.cpp line=253 error=801 :"
        " operation not supported\n"
    )
    assert categories(report)[:1] == ["dataloader_worker"]


def test_paddles_reader_that_raised_is_a_worker_failure_not_a_kill() -> None:
    # PaddleClas#649 (batch-99): the queue "is killed" because the reader raised; no process was.
    report = run_text(
        "SystemError: (Fatal) Blocking queue is killed because the data reader raises an"
        " exception.\n"
    )
    assert categories(report) == ["dataloader_worker"]
    killed = "RuntimeError: DataLoader worker (pid 812) is Killed by signal: Killed.\n"
    assert "host_oom" in categories(run_text(killed))


def test_a_key_missing_from_a_loaded_checkpoint_is_a_checkpoint_problem() -> None:
    # LlamaGen's vq_train.py (batch-108): the checkpoint was saved without its optimizer.
    report = run_text(
        "Traceback (most recent call last):\n"
        '  File "tokenizer/tokenizer_image/vq_train.py", line 150, in main\n'
        '    optimizer.load_state_dict(checkpoint["optimizer"])\n'
        "KeyError: 'optimizer'\n"
    )
    assert categories(report) == ["checkpoint_load"]
    # The same KeyError on a batch's dict is the data's, not the checkpoint's.
    other = run_text(
        "Traceback (most recent call last):\n"
        '  File "train.py", line 50, in main\n'
        '    images = batch["image"]\n'
        "KeyError: 'image'\n"
    )
    assert "checkpoint_load" not in categories(other)


def test_an_error_in_the_helper_of_a_checkpoint_loader_is_a_checkpoint_problem() -> None:
    # lora-svc's HuBERT feature dump (batch-111): fairseq upgrades a checkpoint whose "args"
    # is None, one frame below load_checkpoint_to_cpu.
    report = run_text(
        "Traceback (most recent call last):\n"
        '  File "fairseq/checkpoint_utils.py", line 232, in load_checkpoint_to_cpu\n'
        "    state = _upgrade_state_dict(state)\n"
        '  File "fairseq/checkpoint_utils.py", line 420, in _upgrade_state_dict\n'
        '    state["args"].task = "translation"\n'
        "AttributeError: 'NoneType' object has no attribute 'task'\n"
    )
    assert categories(report) == ["checkpoint_load"]


def test_a_node_out_of_ram_is_host_memory_though_it_says_oom() -> None:
    # Ray's memory monitor (WMPO#3): "OOM" alone would read as the GPU's.
    report = run_text(
        "(raylet) [2025-12-07 09:57:19,206 E 393463 393463] (raylet) node_manager.cc:3277: 2 Workers"
        " (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other"
        " reasons at node\n"
    )
    assert categories(report)[:1] == ["host_oom"]
    assert "cuda_oom" not in categories(report)


def test_other_accelerators_memory_words_name_an_out_of_memory() -> None:
    # intel/intel-extension-for-pytorch#629: Intel XPU, the CUDA sentence with another name.
    xpu = run_text(
        "RuntimeError: XPU out of memory. Tried to allocate 1.00 GiB (GPU 0; 15.56 GiB total"
        " capacity; 990.00 MiB already allocated; 990.00 MiB reserved in total by PyTorch)\n"
    )
    assert categories(xpu)[:1] == ["cuda_oom"]
    # open-edge-platform/physical-ai-studio#440: Level Zero's status under SYCL.
    level_zero = run_text(
        "terminate called after throwing an instance of 'sycl::_V1::exception'\n"
        "  what():  Enqueue process failed.\n"
        "level_zero backend failed with error: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)\n"
    )
    assert categories(level_zero)[:1] == ["cuda_oom"]
    # erfanzar/EasyDeL#78: XLA's compiler on a TPU v2-8.
    tpu = run_text(
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent"
        " error. Ran out of memory in memory space hbm. Used 21.90G of 7.48G hbm. Exceeded hbm"
        " capacity by 14.42G.\n"
    )
    assert categories(tpu)[:1] == ["cuda_oom"]
    assert tpu.diagnoses[0].rule == "cuda_oom.tpu_hbm"


def test_a_setting_the_device_does_not_support_is_a_setting_to_fix() -> None:
    # huggingface/accelerate#3064: bf16 asked for on an Apple MPS machine.
    report = run_text(
        "ValueError: bf16 mixed precision requires PyTorch >= 1.10 and a supported device\n"
    )
    assert categories(report)[:1] == ["config_error"]


def test_rocm_and_xla_device_words_name_their_categories() -> None:
    # pytorch/xla#2960: a CPU tensor reached an op on the TPU.
    xla = run_text("RuntimeError: torch_xla/csrc/aten_xla_bridge.cpp:69 : Check failed: xtensor\n")
    assert categories(xla)[:1] == ["device_mismatch"]
    # ROCm/MIOpen#3943: MIOpen is ROCm's cuDNN.
    miopen = run_text("RuntimeError: miopenStatusUnknownError\n")
    assert categories(miopen)[:1] == ["cudnn"]
    assert "MIOpen" in miopen.diagnoses[0].summary  # not "cuDNN" alone


def test_words_that_explain_a_worker_failure_rank_above_it() -> None:
    # Siamese-pytorch on Windows (bubbliiiing/Siamese-pytorch#33): a Thumbs.db in the images.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "F:\\work\\Siamese-pytorch-master\\utils\\utils_fit.py", line 21, in fit_one_epoch
            for iteration, batch in enumerate(gen):
          File "D:\\anaconda\\envs\\ai\\lib\\site-packages\\torch\\_utils.py", line 434, in reraise
            raise exception
        PIL.UnidentifiedImageError: Caught UnidentifiedImageError in DataLoader worker process 0.
        Original Traceback (most recent call last):
          File "D:\\anaconda\\envs\\ai\\lib\\site-packages\\torch\\utils\\data\\_utils\\worker.py", line 287, in _worker_loop
            data = fetcher.fetch(index)
        """
    )
    assert categories(report) == ["data_error", "dataloader_worker"]
    assert report.diagnoses[0].tier == "vocabulary"
    assert report.diagnoses[1].explained_by == "data_error"


@pytest.mark.parametrize(
    ("line", "category"),
    [
        # batches 30-33 (video, tracking, detection, LLM post-training), as posted
        (
            "AttributeError: module 'torchvision.transforms.v2' has no attribute 'ConvertDtype'",
            "import_error",
        ),
        ("KeyError: 'ChannelMapper is not in the neck registry'", "import_error"),
        ("RuntimeError: No supported device detected.", "cuda_setup"),
        (
            "RuntimeError: Cannot find valid samples, check `data/README.md` for the data format.",
            "data_error",
        ),
        (
            "decord._ffi.base.DECORDError: [17:31:57] /io/decord/src/video/video_reader.cc:90: Check"
            " failed: st_nb >= 0 (-1381258232 vs. 0) ERROR cannot find video stream with wanted index: -1",
            "data_error",
        ),
        (
            "xml.etree.ElementTree.ParseError: junk after document element: line 27, column 0",
            "data_error",
        ),
        (
            "ValueError: loaded state dict contains a parameter group that doesn't match the size of"
            " optimizer's group",
            "checkpoint_load",
        ),
        ("RuntimeError: running_mean should contain 54 elements not 75", "shape_mismatch"),
        ("RuntimeError: Tensors must be CUDA and dense", "device_mismatch"),
        (  # pytorch-forecasting's integer_histogram: scatter on the CPU
            "RuntimeError: index 25 is out of bounds for dimension 0 with size 25",
            "cuda_device_assert",
        ),
        ("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR", "cuda_setup"),
        ("ValueError: unregistered extension code 175", "checkpoint_load"),  # torch.load, no pickle
        ("RuntimeError: Invalid magic number; corrupt file?", "checkpoint_load"),
        (  # THNN's ClassNLLCriterion given one-hot or multi-column targets
            "RuntimeError: multi-target not supported at"
            " d:\\projects\\pytorch\\torch\\lib\\thnn\\generic/ClassNLLCriterion.c:22",
            "shape_mismatch",
        ),
        (
            "TypeError: Accelerator.__init__() got an unexpected keyword argument 'logging_dir'",
            "import_error",
        ),
        (  # act-plus-plus against a newer diffusers
            "TypeError: __init__() missing 1 required positional argument: 'parameters'",
            "import_error",
        ),
        (  # mmcv's registry builds the runner from the config dict
            "TypeError: EpochBasedRunner: __init__() got an unexpected keyword argument 'max_epoch'",
            "config_error",
        ),
        (
            "TypeError: TrainingArguments.__init__() got an unexpected keyword argument 'warmup'",
            "config_error",
        ),
        # batches 48-56 (detection, speech, BERT era, RL, embeddings, pose, Kaggle), as posted
        ("RuntimeError: apex.optimizers.FusedAdam requires cuda extensions", "import_error"),
        (
            "RuntimeError: p_copy.type().is_cuda() ASSERT FAILED at csrc/fused_adam_cuda.cpp:13,"
            " please report a bug to PyTorch. p_copy must be a CUDA tensor",
            "device_mismatch",
        ),
        (
            "RuntimeError: Input, output and indices must be on the current device",
            "device_mismatch",
        ),
        (
            "RuntimeError: Input tensor at index 3 has invalid shape [32, 32], but expected"
            " [32, 34]",
            "shape_mismatch",
        ),
        (
            "RuntimeError: All tensor operands to scatter/gather must have the same number of"
            " elements",
            "shape_mismatch",
        ),
        ("AssertionError: number of labels does not match (3008 != 12034)", "data_error"),
        (
            "ValueError: Labels' sequence length 495 cannot exceed the maximum allowed length of"
            " 448 tokens.",
            "data_error",
        ),
        (
            "ValueError: FP16 Mixed precision training with AMP or APEX (`--fp16`) and FP16 half"
            " precision evaluation (`--fp16_full_eval`) can only be used on CUDA devices.",
            "cuda_setup",
        ),
        (
            "RuntimeError: cuda runtime error (30) : unknown error at"
            " d:\\pytorch\\pytorch\\torch\\lib\\thc\\generic/THCTensorMathPointwise.cu:606",
            "cuda_setup",
        ),
        ("AttributeError: module 'torch._C' has no attribute '_cuda_getDevice'", "cuda_setup"),
        # Windows words the error in the user's language; its number is the same in all.
        ("OSError: [WinError 1455] 页面文件太小，无法完成操作。", "host_oom"),
        (
            "ValueError: could not broadcast input array from shape (8) into shape (28)",
            "shape_mismatch",
        ),
        # pickle cannot find the class of a whole model saved with torch.save(model)
        (
            "AttributeError: Can't get attribute 'Net' on <module '__main__' from 'cifar10.py'>",
            "checkpoint_load",
        ),
        (
            "RuntimeError: Invalid index in scatter at"
            " /pytorch/aten/src/TH/generic/THTensorEvenMoreMath.cpp:151",
            "cuda_device_assert",
        ),
        # batches 106-112 (flows and VAEs, compression, data preparation), as posted
        ("RuntimeError: mat1 dim 1 must match mat2 dim 0", "shape_mismatch"),
        (
            "FileNotFoundError: Couldn't find any class folder in /home/nathan/new/DALLE-pytorch/"
            "images.",
            "data_error",
        ),
        ("ValueError: didn't find ['y.txt'] in ['__key__', 'x.pyd']", "data_error"),
        (
            "RuntimeError: CUDA is available for PyTorch, but NNCF could not compile GPU"
            " quantization extensions. Make sure that you have installed CUDA development tools"
            " and that 'nvcc' is available on your system's PATH variable.",
            "cuda_setup",
        ),
        (
            "RuntimeError: Internal: src/trainer_interface.cc(661) [(trainer_spec_.vocab_size())"
            " == (model_proto->pieces_size())] Vocabulary size too high (500000). Please set it"
            " to a value <= 455361.",
            "config_error",
        ),
        # training data that is not where the run looked, as posted (batches 31-111)
        (
            "FileNotFoundError: Dataset not found: train (/Users/angelo/PycharmProjects/Prova/"
            "access/resources/datasets/_2912c535c2343258d2e6375bca3e3a3d/fairseq_preprocessed)",
            "data_error",
        ),
        ("ValueError: No training data provided.", "data_error"),
        (
            "ValueError: Training set not found or empty. Must provide training set for"
            " fine-tuning.",
            "data_error",
        ),
        ("AssertionError: datasets should not be an empty iterable", "data_error"),
        ('RuntimeError: Missing file "vimeo_triplet/train.list"', "data_error"),
        (
            "FileNotFoundError: Directory LinkSoul/instruction_merge_set/data is neither a"
            " `Dataset` directory nor a `DatasetDict` directory.",
            "data_error",
        ),
        # a kernel the GPU cannot run, in TensorFlow's FATAL record (KataGo#325)
        (
            "2020-10-03 17:02:24.528951: F .\\tensorflow/core/kernels/random_op_gpu.h:227]"
            " Non-OK-status: GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>,"
            " num_blocks, block_size, 0, d.stream(), gen, data, size, dist) status: Internal:"
            " invalid device function",
            "cuda_setup",
        ),
        # a value the settings must give or bound (vLLM's max_model_len, fairseq's language pair)
        (
            "ValueError: Prompt length of 4834 is longer than the maximum model length of 4096.",
            "config_error",
        ),
        (
            "Exception: Could not infer language pair, please provide it explicitly",
            "config_error",
        ),
    ],
)
def test_library_wordings_name_their_category(line: str, category: str) -> None:
    assert categories(run_text(line + "\n"))[:1] == [category]


def test_a_models_own_forward_called_with_missing_inputs_is_no_version_problem() -> None:
    line = "TypeError: forward() missing 2 required positional arguments: 'x' and 'mask'\n"
    assert "import_error" not in categories(run_text(line))


def test_a_bare_assert_on_the_gpu_count_is_a_cuda_setup_problem() -> None:
    # ByteTrack on a CPU-only torch build: torch.cuda.device_count() is 0.
    report = run_text(
        "Traceback (most recent call last):\n"
        '  File "tools/train.py", line 112, in <module>\n'
        "    assert num_gpu <= torch.cuda.device_count()\n"
        "AssertionError\n"
    )
    assert categories(report)[:1] == ["cuda_setup"]


def test_data_and_settings_words_stay_quiet_on_their_look_alikes() -> None:
    # A missing config file, a dataset that was found, a length within the maximum.
    assert "data_error" not in categories(
        run_text('RuntimeError: Missing file "configs/train.yaml"\n')
    )
    assert not run_text(
        "INFO: Dataset found: train (12000 examples), training data ready\n"
    ).diagnoses
    assert "config_error" not in categories(
        run_text("ValueError: please provide a tokenizer or a processor\n")
    )


def test_a_buffer_that_overflowed_is_a_capacity_to_raise_not_a_nan() -> None:
    # IsaacLab#1199: PhysX's collision stack, too small for 16k environments.
    physx = (
        "/buildAgent/work/99bede84aa0a52c2/source/gpunarrowphase/src/PxgNarrowphaseCore.cpp (2185)"
        " : internal error : PxgDynamicsMemoryConfig::collisionStackSize buffer overflow"
        " detected, please increase its size to at least 1484579544 in the scene desc!\n"
    )
    assert categories(run_text(physx)) == ["config_error"]
    assert categories(run_text("RuntimeError: gradient overflow, loss is inf\n")) == ["nan_loss"]


@pytest.mark.parametrize(
    ("message", "category"),
    [
        # nvdiffrast's CUDA checks print the runtime's error code, not its name.
        ("RuntimeError: Cuda error: 2[cudaMalloc(&m_gpuPtr, bytes);]", "cuda_oom"),
        (
            "RuntimeError: Cuda error: 700[cudaMemcpyAsync(&atomics[0], m_crAtomics.getPtr(),"
            " sizeof(CRAtomics) * m_numImages, cudaMemcpyDeviceToHost, stream);]",
            "cuda_illegal_access",
        ),
        # Triton's kernel asks more on-chip shared memory than the GPU has: no /dev/shm problem.
        (
            "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required:"
            " 163840, Hardware limit: 101376. Reducing block sizes or num_stages may help.",
            "cuda_setup",
        ),
        # A compiled extension whose import a try/except swallowed (UNetMamba#10).
        (
            "NameError: name 'selective_scan_cuda_core' is not defined. Did you mean:"
            " 'selective_scan_flop_jit'?",
            "import_error",
        ),
        # PyPI's "apex" is another package than NVIDIA's (fast-reid#366).
        (
            "TypeError: Class advice impossible in Python3.  Use the @implementer class"
            " decorator instead.",
            "import_error",
        ),
        ("ValueError: Target modules [] not found in the base model.", "config_error"),
    ],
)
def test_more_wordings_are_named_by_their_words(message: str, category: str) -> None:
    assert categories(run_text(message + "\n"))[:1] == [category]


def test_a_name_error_on_a_plain_variable_is_no_import_error() -> None:
    report = run_text("NameError: name 'train_loader' is not defined\n")
    assert "import_error" not in categories(report)


def test_a_division_by_the_length_of_anything_empty_is_an_empty_dataset() -> None:
    # RAVE#148: the training split came out empty.
    report = run_text(
        """\
        Traceback (most recent call last):
          File "/workspace/RAVE/train_rave.py", line 156, in <module>
            nepoch = args.VAL_EVERY // len(train)
        ZeroDivisionError: integer division or modulo by zero
        """
    )
    assert categories(report)[:1] == ["data_error"]


def test_the_symbols_of_a_crashed_process_stack_are_not_its_words() -> None:
    # Open MPI's handler dumps the stack; a frame names torch::autograd (pytorch#10344).
    log = """\
        [ip-172-31-77-112:61444] *** Process received signal ***
        [ip-172-31-77-112:61444] Signal: Segmentation fault (11)
        [ip-172-31-77-112:61444] [ 3] /t/lib/libcaffe2.so(THStorage_free+0x38)[0x7f109f2320c8]
        [ip-172-31-77-112:61444] [ 6] /t/_C.so(_ZN5torch8autograd8Variable4ImplD1Ev+0x291)[0x7f10a733e411]
    """
    assert categories(run_text(log)) == ["unrecognised"]


def test_the_flags_of_a_failed_command_are_not_its_words() -> None:
    # accelerate's launcher re-raises the child's failure with its command line (batch-121).
    log = """\
        subprocess.CalledProcessError: Command '['python', 'train.py', '--config_file', 'c.yaml', '--invalid_flag_words']' returned non-zero exit status 1.
    """
    assert categories(run_text(log)) == ["unrecognised"]
