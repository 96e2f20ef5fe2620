"""The oserror grammars on real errno, checkpoint-save, shm and DataLoader worker messages."""

from __future__ import annotations

import hyperscan
import pytest
import re2

from crashcart.parsers import oserror

POSITIVES = [
    (
        "OSError: [Errno 28] No space left on device: '/ckpt/step_1000/pytorch_model.bin'",
        "os_error",
        {
            "errno": 28,
            "strerror": "No space left on device",
            "path": "/ckpt/step_1000/pytorch_model.bin",
            "dir": "/ckpt/step_1000",
        },
    ),
    (
        "RuntimeError: saving failed\n[Errno 28] No space left on device",
        "os_error",
        {"errno": 28, "strerror": "No space left on device"},
    ),
    ("IOError: [Errno 28] No space left on device", "os_error", {"errno": 28}),
    (
        "OSError: [Errno 12] Cannot allocate memory",
        "os_error",
        {"errno": 12, "strerror": "Cannot allocate memory"},
    ),
    (
        "FileNotFoundError: [Errno 2] No such file or directory: 'x'",
        "os_error",
        {"errno": 2, "path": "x"},
    ),
    (
        "PermissionError: [Errno 13] Permission denied: '/root/.cache/huggingface/hub/models--gpt2'",
        "os_error",
        {"errno": 13, "mount_hint": "cache", "dir": "/root/.cache/huggingface/hub"},
    ),
    (
        "OSError: [Errno 122] Disk quota exceeded: '/tmp/ray/session_1'",
        "os_error",
        {"errno": 122, "strerror": "Disk quota exceeded", "mount_hint": "/tmp"},
    ),
    (
        'OSError: [Errno 28] No space left on device: "/dev/shm/ckpt.pt"',
        "os_error",
        {"mount_hint": "/dev/shm", "dir": "/dev/shm"},
    ),
    ("cp: write error: No space left on device", "os_error", {"errno": 28}),
    ("No space left on device (28)", "os_error", {"errno": 28}),
    # https://github.com/ultralytics/ultralytics/issues/1238
    (
        "RuntimeError: unable to write to file </torch_722_783672312_1>: No space left on device"
        " (28)",
        "os_error",
        {"errno": 28, "path": "/torch_722_783672312_1", "mount_hint": "/dev/shm"},
    ),
    # https://github.com/zai-org/ChatGLM-6B/issues/1166
    (
        "RuntimeError: [enforce fail at inline_container.cc:471] . PytorchStreamWriter failed"
        " writing file data/3: file write failed",
        "save_error",
        {"file": "data/3", "detail": "file_write_failed"},
    ),
    # https://github.com/SWivid/F5-TTS/issues/458
    (
        "RuntimeError: [enforce fail at inline_container.cc:778] . PytorchStreamWriter failed"
        " writing file data.pkl: file write failed",
        "save_error",
        {"file": "data.pkl"},
    ),
    (
        "RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 1591795840 vs"
        " 1591795728",
        "save_error",
        {"detail": "unexpected_pos", "pos": 1591795840, "expected_pos": 1591795728},
    ),
    (
        "RuntimeError: [enforce fail at inline_container.cc:337] . PytorchStreamWriter failed"
        " writing central directory: file write failed",
        "save_error",
        {"detail": "central_directory"},
    ),
    # https://github.com/MVIG-SJTU/AlphaPose/issues/564
    (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient"
        " shared memory (shm).",
        "shm_error",
        {"variant": "bus_error"},
    ),
    # https://github.com/NVIDIA/Megatron-LM/issues/878
    (
        "RuntimeError: DataLoader worker (pid 56811) is killed by signal: Bus error. It is possible"
        " that dataloader's workers are out of shared memory. Please try to raise your shared"
        " memory limit.",
        "shm_error",
        {"variant": "bus_error", "pid": 56811},
    ),
    (
        "RuntimeError: DataLoader worker (pid 56811) is killed by signal: Bus error. It is possible"
        " that dataloader's workers are out of shared memory. Please try to raise your shared"
        " memory limit.",
        "worker_killed",
        {"pid": 56811, "signal_name": "SIGBUS", "detail": "Bus error"},
    ),
    # https://github.com/MIC-DKFZ/nnUNet/issues/2162
    (
        "RuntimeError: unable to write to file </torch_8289_606636967_0>: No space left on device"
        " (28)",
        "shm_error",
        {"variant": "no_space", "pid": 8289},
    ),
    (
        "RuntimeError: unable to open shared memory object </torch_1_2> in read-write mode: Too"
        " many open files (24)",
        "shm_error",
        {"variant": "too_many_open_files"},
    ),
    # https://github.com/huaweicloud/dls-example/issues/26
    (
        "RuntimeError: unable to write to file </torch_76_3625483894> at"
        " /pytorch/aten/src/TH/THAllocator.c:383",
        "shm_error",
        {"variant": "write_failed", "pid": 76},
    ),
    # https://github.com/MVIG-SJTU/AlphaPose/issues/564
    (
        "RuntimeError: unable to write to file </torch_995_2167858072>",
        "shm_error",
        {"variant": "write_failed", "pid": 995},
    ),
    (
        "RuntimeError: unable to open shared memory object </torch_5_6> in read-write mode",
        "shm_error",
        {"variant": "other", "pid": 5},
    ),
    # https://github.com/pytorch/torchtitan/issues/853
    (
        "  Error while creating shared memory segment /dev/shm/nccl-1YsMbG (size 7340384)",
        "shm_error",
        {"variant": "nccl_segment"},
    ),
    # https://github.com/NVIDIA/nccl/issues/525
    (
        "[3] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device",
        "shm_error",
        {"variant": "no_space"},
    ),
    # https://github.com/msr-fiddle/pipedream/issues/76 (UCX's crash handler inside NCCL)
    (
        "[8d6bf97c3bf4:3039 :0:3095] Caught signal 7 (Bus error: nonexistent physical address)",
        "shm_error",
        {"variant": "bus_error"},
    ),
    # LLaMA-Factory#1013: UCX's backtrace of the crash, its signal line lost from the paste
    (
        " 2 0x0000000003e1160d ncclShmOpen()  /pytorch/third_party/nccl/nccl/src/misc/shmutils.cc:52",
        "shm_error",
        {"variant": "nccl_segment"},
    ),
    (
        "RuntimeError: DataLoader worker (pid 1234) is killed by signal: Killed.",
        "worker_killed",
        {"pid": 1234, "signal_name": "SIGKILL", "detail": "Killed"},
    ),
    (
        "RuntimeError: DataLoader worker (pid 99) is killed by signal: Segmentation fault.",
        "worker_killed",
        {"pid": 99, "signal_name": "SIGSEGV"},
    ),
    (
        "RuntimeError: DataLoader worker (pid(s) 1234, 1235) exited unexpectedly",
        "worker_killed",
        {"pid": 1234, "pids": [1234, 1235], "detail": "exited unexpectedly"},
    ),
]

NEGATIVES = [
    "loss: 0.3",
    "Permission denied (publickey).",
    "disk usage 12 GB, free space 3 TB",
    "Saving model checkpoint to /ckpt/step_1000",
    "num_workers=8, DataLoader ready",
    "shared memory size: 64G",
    "[1:2:3] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)",
]


def _any_trigger(text: str) -> bool:
    return any(re2.compile(p).search(text) for p in oserror.TRIGGERS.values())


@pytest.mark.parametrize("text, kind, expected", POSITIVES)
def test_positive(text: str, kind: str, expected: dict) -> None:
    drafts = [d for d in oserror.parse(text) if d.kind == kind]
    assert len(drafts) == 1, oserror.parse(text)
    fields = drafts[0].fields
    for key, value in expected.items():
        assert fields[key] == value, key
    assert None not in fields.values()


@pytest.mark.parametrize("text, kind, expected", POSITIVES)
def test_positive_passes_prefilter(text: str, kind: str, expected: dict) -> None:
    assert _any_trigger(text)


@pytest.mark.parametrize("text", NEGATIVES)
def test_negative(text: str) -> None:
    assert oserror.parse(text) == []
    assert not _any_trigger(text)


def test_signal_kill_is_not_shm() -> None:
    kinds = [
        d.kind for d in oserror.parse("DataLoader worker (pid 7) is killed by signal: Killed.")
    ]
    assert kinds == ["worker_killed"]


def test_plain_path_is_an_ordinary_disk() -> None:
    fields = oserror.parse("OSError: [Errno 28] No space left on device: '/data/x.bin'")[0].fields
    assert fields["mount_hint"] == "disk"


@pytest.mark.parametrize("name", sorted(oserror.TRIGGERS))
def test_trigger_compiles_in_re2_and_hyperscan(name: str) -> None:
    pattern = oserror.TRIGGERS[name]
    assert re2.compile(pattern).search("") is None
    hyperscan.Database().compile(expressions=[pattern.encode()])


@pytest.mark.parametrize(
    "junk", [None, "[Errno " * 10_000, "ab " * 30_000 + "(28)", "DataLoader worker (pid " * 3000]
)
def test_never_raises(junk) -> None:
    assert isinstance(oserror.parse(junk), list)
