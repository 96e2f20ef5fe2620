"""tools/durable_wheel.py: which flags each Python's durable-rules build gets, and where it is kept."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import sysconfig
from pathlib import Path

spec = importlib.util.spec_from_file_location("durable_wheel", "tools/durable_wheel.py")
assert spec and spec.loader
durable_wheel = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = durable_wheel  # its dataclass looks its module up there
spec.loader.exec_module(durable_wheel)


def target(version: tuple[int, int], abi: str = "cpython-313-x86_64-linux-gnu"):
    return durable_wheel.Target("python3", version, abi, [sys.executable, "-m", "pip"])


def test_flags_optimise_everywhere_and_fix_python_3_13_only(monkeypatch) -> None:
    monkeypatch.delenv("CPPFLAGS", raising=False)
    assert durable_wheel.cppflags(target((3, 12))) == "-O2 -DNDEBUG"
    fix = "-DPyEval_CallObject=PyObject_CallObject"
    assert durable_wheel.cppflags(target((3, 13))) == f"-O2 -DNDEBUG {fix}"
    assert durable_wheel.cppflags(target((3, 14)), optimised=False) == fix
    monkeypatch.setenv("CPPFLAGS", "-I/opt/include")  # the user's own come first
    assert durable_wheel.cppflags(target((3, 11))) == "-I/opt/include -O2 -DNDEBUG"


def test_wheels_are_kept_per_interpreter_abi_and_flags(tmp_path: Path) -> None:
    py313, py312 = target((3, 13)), target((3, 12), "cpython-312-x86_64-linux-gnu")
    folders = {
        durable_wheel.wheel_dir(py313, "-O2 -DNDEBUG", tmp_path),
        durable_wheel.wheel_dir(py313, "", tmp_path),
        durable_wheel.wheel_dir(py312, "-O2 -DNDEBUG", tmp_path),
    }
    assert len(folders) == 3 and {folder.parent for folder in folders} == {tmp_path}


def test_this_interpreter_is_described() -> None:
    this = durable_wheel.Target.of(sys.executable)
    assert this.version == sys.version_info[:2]
    assert f".{this.abi}.so" == sysconfig.get_config_var("EXT_SUFFIX")
    assert this.pip == [sys.executable, "-m", "pip"]  # .venv has its own pip


def test_a_wheel_already_built_is_reused(tmp_path: Path) -> None:
    this = durable_wheel.Target.of(sys.executable)
    folder = durable_wheel.wheel_dir(this, "-O2 -DNDEBUG", tmp_path)
    folder.mkdir(parents=True)
    wheel = folder / "durable_rules-2.0.28-cp311-cp311-linux_x86_64.whl"
    wheel.write_bytes(b"")
    this.pip = ["false"]  # any build would fail
    assert durable_wheel.build(this, "-O2 -DNDEBUG", tmp_path) == wheel


def test_an_interpreter_that_does_not_run_is_one_clear_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "tools/durable_wheel.py", "--python", str(tmp_path / "python9")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.startswith("durable_wheel: ") and result.stderr.count("\n") == 1
