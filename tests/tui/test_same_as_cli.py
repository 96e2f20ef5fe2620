"""The TUI and ``crashcart analyze`` say the same about one run directory: the same diagnoses,
confidence and evidence lines, the user's frame, each event once (issue 17, item 5)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.tui.conftest import ROOT, async_test, new_app, wait_for

DDP = ROOT / "corpus" / "ddp_badbatch_rank1_peer_closed"


def summary(diagnoses: list[dict]) -> list[tuple[str, float, list[tuple[str, int]]]]:
    return [
        (d["rule"], d["confidence"], [(e["path"], e["line"]) for e in d["evidence"]])
        for d in diagnoses
    ]


@async_test
async def test_tui_and_cli_show_the_same_evidence_and_confidence(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = Path("runs") / "ddp"
    shutil.copytree(DDP, run, ignore=shutil.ignore_patterns("*.yaml"))
    cli = subprocess.run(
        [sys.executable, "-m", "crashcart", "analyze", "--json", str(run)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert cli.returncode == 1, cli.stderr
    expected = summary(json.loads(cli.stdout)["diagnoses"])
    assert len(expected) >= 2
    app = new_app("runs")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: len(app.diagnoses.get(str(run), [])) >= len(expected))
        await wait_for(pilot, lambda: time.monotonic() - app.last_message > 1.0)
        shown = summary([d.to_json() for d in app.diagnoses[str(run)]])
    assert shown == expected
    for _, _, evidence in expected:
        assert not any(path.endswith("train.log") for path, _ in evidence)  # the rank's copy
    texts = [e["text"] for d in json.loads(cli.stdout)["diagnoses"] for e in d["evidence"]]
    assert not any("site-packages" in text for text in texts)
    assert any("distributed.py" in text for text in texts)
