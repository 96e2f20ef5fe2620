"""The on-disk cache of start-up (issue 15): the rule base and the prefilter databases are built
once and read back, and a stale, corrupt, foreign or unwritable cache changes nothing but the
time it takes."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
from pathlib import Path

import pytest

from crashcart import diskcache
from crashcart.engine.rulecache import KIND, load_rules_cached, rules_key
from crashcart.engine.rules import load_rules
from crashcart.parsers.prefilter import Prefilter, hyperscan
from tests.conftest import CRASHCART, assert_started

ROOT = Path(__file__).resolve().parents[1]
RULE = (
    "id: config_error.lab_quota\ncategory: config_error\ntitle: {title}\n"
    "confidence: 0.9\nwhen:\n  all:\n    - fact: line\n"
    '      regex: "quota exceeded for project (?P<project>\\\\w+)"\n'
    "summary: Project {{project}} used its GPU hours.\nfixes:\n"
    "  - title: Ask for more hours\n    command: labctl quota request {{project}}\n"
)
#: Small corpus logs: no traceback, a DataLoader crash with a traceback, a NaN cascade.
LOGS = [
    "corpus/nan_diverge_after_warmup_plain/train.log",
    "corpus/dataloader_worker_exit/train.log",
    "corpus/cascade_nan_target_clip_nonfinite_histc/train.log",
]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory of this test's own."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(diskcache.ENV_VAR, str(directory))
    return directory


def user_rules(tmp_path: Path, title: str) -> Path:
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    (directory / "quota.yaml").write_text(RULE.format(title=title))
    return directory


def entries(cache: Path, kind: str = KIND) -> list[Path]:
    return sorted(cache.glob(f"{kind}-*.bin"))


def lab_rule(rules: list) -> object:
    return next(rule for rule in rules if rule.id == "config_error.lab_quota")


def test_the_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(diskcache.ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere/cache")
    assert diskcache.cache_dir() == Path("/somewhere/cache/crashcart")
    monkeypatch.setenv(diskcache.ENV_VAR, "/elsewhere")
    assert diskcache.cache_dir() == Path("/elsewhere")


def test_a_stored_rule_base_is_what_the_next_load_returns(cache: Path, tmp_path: Path) -> None:
    rules_dir = user_rules(tmp_path, "Quota ran out")
    first = load_rules_cached([rules_dir])
    assert first == load_rules([rules_dir])
    [entry] = entries(cache)
    # Put a marked rule base under the same key: the next load returns it, so it reads the cache.
    marked = pickle.loads(diskcache.read(KIND, rules_key([rules_dir])))
    lab_rule(marked).title = "read from the cache"
    assert diskcache.write(KIND, rules_key([rules_dir]), pickle.dumps(marked))
    assert lab_rule(load_rules_cached([rules_dir])).title == "read from the cache"
    assert entries(cache) == [entry]


def test_a_changed_rule_file_is_not_served_from_a_stale_entry(cache: Path, tmp_path: Path) -> None:
    rules_dir = user_rules(tmp_path, "Quota ran out")
    assert lab_rule(load_rules_cached([rules_dir])).title == "Quota ran out"
    user_rules(tmp_path, "The quota changed")  # same file, same size class, new text
    assert lab_rule(load_rules_cached([rules_dir])).title == "The quota changed"
    assert len(entries(cache)) == 2  # one entry per content; the old one is never used again
    # Disabling a rule is part of the key too.
    assert all(
        rule.id != "config_error.lab_quota"
        for rule in load_rules_cached([rules_dir], ["config_error.lab_quota"])
    )


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: b"",  # empty
        lambda data: data[: len(data) // 2],  # cut short
        lambda data: data[:-1] + bytes([data[-1] ^ 0xFF]),  # one byte flipped
        lambda data: b"not a cache entry at all\n" * 10,
    ],
    ids=["empty", "truncated", "flipped", "garbage"],
)
def test_a_corrupt_entry_is_rebuilt(cache: Path, tmp_path: Path, damage) -> None:
    rules_dir = user_rules(tmp_path, "Quota ran out")
    expected = load_rules([rules_dir])
    load_rules_cached([rules_dir])
    [entry] = entries(cache)
    entry.write_bytes(damage(entry.read_bytes()))
    assert diskcache.read(KIND, rules_key([rules_dir])) is None
    assert load_rules_cached([rules_dir]) == expected
    # ... and written again, sound.
    assert pickle.loads(diskcache.read(KIND, rules_key([rules_dir]))) == expected


def test_a_sound_entry_that_does_not_unpickle_to_rules_is_rebuilt(cache: Path) -> None:
    expected = load_rules()
    key = rules_key([])
    diskcache.write(KIND, key, pickle.dumps({"not": "rules"}))
    assert load_rules_cached() == expected
    diskcache.write(KIND, key, b"\x80\x05 no pickle")  # checksum right, payload no pickle
    assert load_rules_cached() == expected


def test_an_entry_others_may_write_is_not_trusted(cache: Path) -> None:
    load_rules_cached()
    [entry] = entries(cache)
    entry.chmod(0o666)
    assert diskcache.read(KIND, rules_key([])) is None
    assert load_rules_cached() == load_rules()  # and the entry is replaced by one of ours
    assert diskcache.read(KIND, rules_key([])) is not None


def test_a_named_pipe_in_place_of_an_entry_does_not_hang_the_start(cache: Path) -> None:
    cache.mkdir(parents=True)
    os.mkfifo(cache / f"{KIND}-{rules_key([])}.bin")  # a plain open would wait for a writer
    assert diskcache.read(KIND, rules_key([])) is None
    assert load_rules_cached() == load_rules()


def test_writes_are_atomic_and_old_entries_pruned(cache: Path) -> None:
    for index in range(diskcache.KEEP + 3):
        assert diskcache.write("test", f"key{index}", b"payload %d" % index)
    assert len(entries(cache, "test")) == diskcache.KEEP
    assert diskcache.read("test", f"key{diskcache.KEEP + 2}") == b"payload %d" % (
        diskcache.KEEP + 2
    )
    assert not list(cache.glob("*.tmp"))  # no half-written file left behind


def test_an_unwritable_cache_dir_still_loads(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache dir cannot be made below a file\n")
    monkeypatch.setenv(diskcache.ENV_VAR, str(blocker / "cache"))
    assert not diskcache.write("test", "key", b"payload")
    assert load_rules_cached() == load_rules()


@pytest.mark.skipif(hyperscan is None, reason="hyperscan has no wheel for this platform")
def test_a_corrupt_prefilter_database_is_compiled_again(cache: Path) -> None:
    patterns = {"oom": r"CUDA out of memory", "nccl": r"NCCL (?:WARN|error)"}
    log = b"step 1\nRuntimeError: CUDA out of memory.\nnode [0] NCCL WARN Net failed\n"
    expected = Prefilter(patterns).scan(log)
    [entry] = entries(cache, "prefilter")
    entry.write_bytes(entry.read_bytes()[:100])
    assert Prefilter(patterns).scan(log) == expected
    assert diskcache.read("prefilter", entry.name[len("prefilter-") : -len(".bin")]) is not None


def analyze_json(log: str, env: dict[str, str]) -> dict:
    result = subprocess.run(
        [*CRASHCART, "analyze", "--json", log],
        capture_output=True,
        cwd=ROOT,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )
    assert_started(result.returncode, result.stderr, expected=[0, 1])
    assert result.stderr == b""
    report = json.loads(result.stdout)
    del report["stats"]["seconds"]
    return report


def test_cached_and_uncached_start_ups_diagnose_alike(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    uncached = {diskcache.ENV_VAR: str(blocker / "cache")}  # never written, never read
    cached = {diskcache.ENV_VAR: str(tmp_path / "cache")}
    for log in LOGS:
        assert (ROOT / log).stat().st_size < 100_000
        built = analyze_json(log, cached)  # the first run fills the cache ...
        assert entries(tmp_path / "cache")
        from_cache = analyze_json(log, cached)  # ... the second reads it
        assert from_cache == built == analyze_json(log, uncached)
        assert from_cache["diagnoses"]
