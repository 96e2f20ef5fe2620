"""Evidence names the user's own frame, and an event a run directory holds twice is listed once
(issue 17, item 5)."""

from __future__ import annotations

import shutil
from pathlib import Path

from crashcart import analyze
from crashcart.parsers.traceback import is_library_file
from tests.conftest import run_text

ROOT = Path(__file__).resolve().parents[2]
DDP = ROOT / "corpus" / "ddp_badbatch_rank1_peer_closed"


def test_library_files_are_told_from_the_users() -> None:
    for path in (
        "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py",
        "/usr/local/lib/python3.8/dist-packages/transformers/trainer.py",
        "/usr/lib/python3.11/json/decoder.py",
        "<frozen runpy>",
        "torch/nn/modules/module.py",
        "C:\\Python311\\Lib\\site-packages\\torch\\nn\\modules\\module.py",
    ):
        assert is_library_file(path), path
    for path in ("train.py", "/home/me/proj/train.py", "src/models/torch_utils.py"):
        assert not is_library_file(path), path


def test_the_evidence_frame_is_the_users() -> None:
    report = run_text(
        """\
        Traceback (most recent call last):
          File "/home/me/proj/train.py", line 88, in <module>
            out = model(batch)
          File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py", line 1501, in _call_impl
            return forward_call(*args, **kwargs)
          File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 114, in forward
            return F.linear(input, self.weight, self.bias)
        RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x31 and 32x1)
        """
    )
    evidence = [line.text.strip() for line in report.diagnoses[0].evidence]
    assert evidence[0].startswith('File "/home/me/proj/train.py", line 88')
    assert not any("site-packages" in text for text in evidence)


def test_only_library_frames_keep_the_innermost() -> None:
    report = analyze(ROOT / "rules" / "examples" / "cuda_oom" / "fragmentation.log")
    assert "sdpa_attention.py" in report.diagnoses[0].evidence[0].text


def test_an_event_in_train_log_and_rank_log_is_listed_once(tmp_path: Path) -> None:
    run = tmp_path / "ddp"
    shutil.copytree(DDP, run)
    report = analyze(run)
    for diagnosis in report.diagnoses:
        texts = [(line.rank, line.text.strip()) for line in diagnosis.evidence]
        assert len(texts) == len(set(texts)), diagnosis.rule
        assert "matched 2 times" not in diagnosis.reason
    timeout = next(d for d in report.diagnoses if d.category == "distributed_timeout")
    frames = [line.text for line in timeout.evidence if "File " in line.text]
    assert frames and all("distributed.py" in text for text in frames)
