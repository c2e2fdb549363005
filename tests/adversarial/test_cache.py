"""Item 2: a result cache that can neither crash a run nor lie.

Damaged entries (valid JSON of the wrong shape), a pruning race between concurrent runs over a
full cache, dangling symlinks and symlink loops in the cache folder, and a golden rewritten
with other values of the same size with its mtime restored (identified by content now)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pypto_lsp.validate.folders import ResultCache
from pypto_lsp.validate.golden import load_bundle

from .conftest import cli, make_case, needs_fixtures, report, statuses

pytestmark = needs_fixtures


@pytest.mark.parametrize("junk", ["[]", "{}", '{"status": "pass"}'])
def test_wrong_shape_entries_are_misses(tmp_path: Path, junk: str) -> None:
    case = make_case(tmp_path, 2)
    cache = tmp_path / "cache"
    first = cli("validate", str(case), "--json", "--no-localize", "--jobs", "1", cache=cache)
    assert first.returncode == 0, first.stderr
    entries = list(cache.glob("*/*.json"))
    assert entries
    for p in entries:
        p.write_text(junk)
    again = cli("validate", str(case), "--json", "--no-localize", "--jobs", "1", cache=cache)
    assert again.returncode == 0, again.stderr[-2000:]
    rep = report(again)
    assert statuses(rep) == statuses(report(first))
    assert rep["summary"]["pass"] == 2
    assert "Traceback" not in again.stderr


def test_in_process_get_refuses_wrong_shapes(tmp_path: Path) -> None:
    c = ResultCache(tmp_path)
    key = "ab" + "0" * 38
    (tmp_path / "ab").mkdir()
    bad = ("[]", "{}", "null", '"x"', '{"status": "pass"}', '{"file": 1, "status": "pass"}', '{"file": "f", "status": "bogus"}')
    for junk in (*bad, '{"file": "f", "status": "pass", "tensors": {"c": 1}}'):
        (tmp_path / "ab" / f"{key}.json").write_text(junk)
        c.memory.clear()
        assert c.get(key) is None, junk
    good = {"file": "f", "status": "pass", "tensors": {"c": {"max_abs_diff": 0.0, "max_rel_diff": 0.0, "pass": True}}}
    (tmp_path / "ab" / f"{key}.json").write_text(__import__("json").dumps(good))
    assert c.get(key) == good


def _fill(cache: Path, n: int) -> None:
    for i in range(n):
        d = cache / f"{i % 256:02x}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{i % 256:02x}{i:038d}.json").write_text("{}")


def test_concurrent_runs_prune_a_full_cache(tmp_path: Path) -> None:
    case = make_case(tmp_path, 3)
    cache = tmp_path / "cache"
    _fill(cache, ResultCache.MAX_ENTRIES + 600)
    env = {**os.environ, "PYPTO_LSP_CACHE_DIR": str(cache)}
    cmd = [sys.executable, "-m", "pypto_lsp", "validate", str(case), "--json", "--no-localize", "--jobs", "1"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
        rep = report(subprocess.CompletedProcess(cmd, p.returncode, out, err))
        assert rep["summary"]["pass"] == 3
    assert len(list(cache.glob("*/*.json"))) <= ResultCache.MAX_ENTRIES


def test_prune_while_the_folder_is_deleted_and_refilled(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    _fill(cache, ResultCache.MAX_ENTRIES + 50)
    c = ResultCache(cache)
    # entries vanish between listing and unlinking (another run pruned them): never an error
    import shutil

    for sub in list(cache.iterdir())[:100]:
        shutil.rmtree(sub)
    c.prune()
    shutil.rmtree(cache)
    c.prune()  # no folder at all


def test_dangling_symlinks_and_loops_in_the_cache(tmp_path: Path) -> None:
    case = make_case(tmp_path, 2)
    cache = tmp_path / "cache"
    _fill(cache, ResultCache.MAX_ENTRIES + 10)
    (cache / "00" / "dangling.json").symlink_to(tmp_path / "nowhere.json")
    (cache / "zz").symlink_to(cache / "zz")  # a loop
    (cache / "ab").mkdir(exist_ok=True)
    (cache / "ab" / "loop.json").symlink_to(cache / "ab" / "loop.json")
    (cache / "q1").symlink_to(tmp_path / "missing-dir")
    p = cli("validate", str(case), "--json", "--no-localize", "--jobs", "1", cache=cache)
    assert p.returncode == 0, p.stderr[-2000:]
    assert report(p)["summary"]["pass"] == 2


def _rewrite_same_size(path: Path, scale: float) -> None:
    st = path.stat()
    data = torch.load(path, weights_only=True)
    torch.save({k: v * scale for k, v in data.items()}, path)
    assert path.stat().st_size == st.st_size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_no_stale_pass_after_a_same_size_same_mtime_golden_rewrite(tmp_path: Path) -> None:
    case = make_case(tmp_path, 2)
    cache = tmp_path / "cache"
    before = cli("validate", str(case), "--json", "--no-localize", cache=cache)
    assert before.returncode == 0 and report(before)["summary"]["pass"] == 2
    _rewrite_same_size(case / "expected.pt", 3.0)
    cached = cli("validate", str(case), "--json", "--no-localize", cache=cache)
    fresh = cli("validate", str(case), "--json", "--no-localize", "--no-cache", cache=cache)
    assert report(fresh)["summary"]["fail"] == 2
    assert statuses(report(cached)) == statuses(report(fresh))
    assert cached.returncode == fresh.returncode == 1


def test_in_process_golden_cache_follows_content(tmp_path: Path) -> None:
    p = tmp_path / "g.pt"
    torch.save({"x": torch.ones(64)}, p)
    assert float(load_bundle(p)["x"].sum()) == 64
    _rewrite_same_size(p, 2.0)
    assert float(load_bundle(p)["x"].sum()) == 128
