"""crashcart watch with real processes: pipes, files being rotated, a run that stalls."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import CRASHCART, assert_started, run_crashcart

OOM = Path("rules/examples/cuda_oom/fragmentation.log").read_bytes()
TIMEOUT = Path("rules/examples/distributed_timeout/watchdog.log").read_bytes()
HEALTHY = Path("rules/examples/healthy/plain_training.log").read_bytes()
WATCH_JSON = ["watch", "--json"]
WATCH = [*CRASHCART, *WATCH_JSON]


def events(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_producer_pipeline_reports_once_and_counts_every_byte(tmp_path: Path) -> None:
    producer = tmp_path / "producer.py"
    producer.write_text(
        "import sys, time\n"
        f"healthy = open({str(Path('rules/examples/healthy/plain_training.log').resolve())!r}, 'rb').read()\n"
        f"oom = open({str(Path('rules/examples/cuda_oom/fragmentation.log').resolve())!r}, 'rb').read()\n"
        "out = sys.stdout.buffer\n"
        "for line in healthy.splitlines(keepends=True):\n"
        "    out.write(line); out.flush(); time.sleep(0.002)\n"
        "out.write(oom); out.write(oom); out.flush()\n"
    )
    result = subprocess.run(
        f"{sys.executable} {producer} | {' '.join(WATCH)}",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    found = events(result.stdout)
    diagnoses = [e for e in found if e["event"] == "diagnosis"]
    assert [d["diagnosis"]["category"] for d in diagnoses] == ["cuda_oom"]  # printed once
    summary = found[-1]
    assert summary["event"] == "summary"
    assert summary["files"]["<stdin>"]["bytes"] == len(HEALTHY) + 2 * len(OOM)
    assert_started(result.returncode, result.stderr, [1])


def test_diagnosis_arrives_while_the_producer_is_still_running(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [*WATCH, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin and process.stdout
    process.stdin.write(HEALTHY + OOM)
    process.stdin.flush()
    started = time.monotonic()
    line = json.loads(process.stdout.readline())
    assert line["event"] == "diagnosis" and line["diagnosis"]["category"] == "cuda_oom"
    assert time.monotonic() - started < 10
    _, err = process.communicate(timeout=30)
    assert_started(process.returncode, err, [1])


def test_follows_a_directory_through_rotation_truncation_and_recreation(tmp_path: Path) -> None:
    run = tmp_path / "run-17"
    run.mkdir()
    log = run / "rank0.log"
    log.write_bytes(b"")
    watcher = subprocess.Popen(
        [*WATCH, "--poll", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(1.5)
    writer = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "import os, sys, time\n"
                "log, oom, timeout = sys.argv[1:4]\n"
                "def write(path, data, mode='ab'):\n"
                "    with open(path, mode) as f: f.write(data)\n"
                "for i in range(50): write(log, f'step {i} loss {2 - i / 100:.3f}\\n'.encode()); time.sleep(0.01)\n"
                "os.rename(log, log + '.1')\n"
                "write(log + '.1', b'late line after rotation\\n')\n"
                "write(log, b'fresh file after rotation\\n')\n"
                # Each state lasts long enough for a follower on a loaded 2-core machine to see it.
                "time.sleep(1.5)\n"
                "os.truncate(log, 0)\n"
                "time.sleep(1.5)\n"
                "os.remove(log); time.sleep(1.5)\n"
                "write(log, open(oom, 'rb').read())\n"
                "write(os.path.join(os.path.dirname(log), 'rank1.log'), open(timeout, 'rb').read())\n"
            ),
            str(log),
            str(Path("rules/examples/cuda_oom/fragmentation.log").resolve()),
            str(Path("rules/examples/distributed_timeout/watchdog.log").resolve()),
        ],
        timeout=60,
        check=True,
    )
    assert writer.returncode == 0
    deadline = time.monotonic() + 30
    seen: list[dict] = []
    while time.monotonic() < deadline and not {"cuda_oom", "distributed_timeout"} <= {
        e["diagnosis"]["category"] for e in seen if e["event"] in ("diagnosis", "update")
    }:
        time.sleep(0.5)
        if watcher.poll() is not None:
            break
    watcher.send_signal(signal.SIGINT)
    out, err = watcher.communicate(timeout=30)
    seen = events(out)
    categories = {e["diagnosis"]["category"] for e in seen if e["event"] == "diagnosis"}
    assert {"cuda_oom", "distributed_timeout"} <= categories
    runs = {e["run"] for e in seen if e["event"] == "diagnosis"}
    assert runs == {str(run)}  # both ranks' files are one run
    notices = {e["what"] for e in seen if e["event"] == "notice"}
    assert {"rotated", "truncated"} <= notices or "deleted" in notices
    summary = seen[-1]
    assert summary["event"] == "summary" and summary["files"][str(log)]["rotations"] >= 1
    assert_started(watcher.returncode, err, [1])


def test_a_stalled_run_is_reported_as_a_hang_and_retracted_when_it_resumes() -> None:
    process = subprocess.Popen(
        [*WATCH, "--hang-after", "1", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdin and process.stdout
    time.sleep(3)  # let it start: a backlog read in one go has no cadence to judge
    for step in range(12):
        process.stdin.write(f"step {step} loss {2 - step / 100:.3f}\n")
        process.stdin.flush()
        time.sleep(0.05)
    hang = json.loads(process.stdout.readline())  # after ~1 s of silence
    assert hang["event"] == "diagnosis" and hang["diagnosis"]["category"] == "hang"
    assert "step 11 loss" in hang["diagnosis"]["evidence"][0]["text"]
    process.stdin.write("step 12 loss 1.870\n")
    process.stdin.flush()
    retracted = json.loads(process.stdout.readline())
    assert retracted == {
        "event": "retracted",
        "run": "<stdin>",
        "category": "hang",
        "detail": "progress resumed",
    }
    _, err = process.communicate(timeout=30)
    assert_started(process.returncode, err, [0])


def test_a_guess_from_the_words_waits_for_the_run_to_settle_and_is_retracted_if_explained() -> None:
    silent_stop = Path("rules/examples/host_oom/torchrun_stopped_silently.log").read_bytes()
    process = subprocess.Popen(
        [*WATCH, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin and process.stdout
    # An OOM traceback whose block is still open when torchrun's SIGTERM line comes: the guess
    # (a worker killed silently) must wait, and the OOM then explains the stop.
    process.stdin.write(OOM)
    process.stdin.flush()
    first = json.loads(process.stdout.readline())
    assert first["event"] == "diagnosis" and first["diagnosis"]["category"] == "cuda_oom"
    _, err = process.communicate(timeout=30)
    assert_started(process.returncode, err, [1])

    process = subprocess.Popen(
        [*WATCH, "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin and process.stdout
    process.stdin.write(silent_stop)  # nothing but the SIGTERM: once quiet, the guess is shown
    process.stdin.flush()
    guess = json.loads(process.stdout.readline())
    assert guess["event"] == "diagnosis" and guess["diagnosis"]["category"] == "host_oom"
    process.stdin.write(OOM)  # the error after all: the guess is withdrawn
    process.stdin.flush()
    later = [json.loads(process.stdout.readline()) for _ in range(2)]
    assert {"event": "retracted", "run": "<stdin>", "category": "host_oom"}.items() <= {
        **later[0]
    }.items()
    assert later[1]["event"] == "diagnosis" and later[1]["diagnosis"]["category"] == "cuda_oom"
    _, err = process.communicate(timeout=30)
    assert_started(process.returncode, err, [1])


def test_exec_runs_for_each_new_diagnosis_without_blocking(tmp_path: Path) -> None:
    received = tmp_path / "received.json"
    result = run_crashcart(
        *WATCH_JSON, "--exec", f"cat > {received}; exit 3", "-", input=OOM, expected=[1]
    )
    assert json.loads(received.read_text())["diagnosis"]["category"] == "cuda_oom"
    assert b"--exec command exited with 3" in result.stderr
    slow = run_crashcart(
        *WATCH_JSON, "--exec", "sleep 30", "--exec-timeout", "0.5", "-", input=OOM, expected=[1]
    )
    assert b"timed out after 0.5 s" in slow.stderr


def test_nothing_to_watch_is_a_clear_error() -> None:
    result = run_crashcart(
        "watch", "missing/dir", text=True, timeout=30, stdin=subprocess.DEVNULL, expected=[2]
    )
    assert "no such file or directory" in result.stderr
    os.environ.get("CI")  # the same in CI: no stdin there
