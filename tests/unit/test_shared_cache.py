"""The result cache on a folder many processes write at once (``cache_dir`` shared by machines).

Real processes, not threads: each writes the same keys many times over (as CI runs on several
machines validating the same dumps do), while another reads them; no reader ever sees a torn or
foreign entry, and what is left is whole, under its own name, with no temporary file behind.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

from pypto_lsp.validate.folders import ENTRY_KEY, ResultCache
from pypto_lsp.validate.report import PASS, FileResult, TensorResult

KEYS = [f"{i:02x}" + "ab" * 19 for i in range(12)]
WRITES = 25


def _value(key: str, writer: int, n: int) -> dict:
    # a big entry: a torn write would show as a short file
    fr = FileResult(f"{key}.py", PASS, {f"t{i}": TensorResult(float(writer), float(n), True) for i in range(200)})
    return fr.to_json()


def _writer(directory: str, writer: int) -> None:
    cache = ResultCache(Path(directory))
    for n in range(WRITES):
        for key in KEYS:
            cache.put(key, _value(key, writer, n))
            cache.memory.clear()
    os._exit(0 if cache.enabled else 3)


def _reader(directory: str, out: str) -> None:
    bad = 0
    seen = 0
    for _ in range(WRITES):
        for key in KEYS:
            cache = ResultCache(Path(directory))  # no in-memory copy: every get reads the file
            hit = cache.get(key)
            if hit is None:
                continue
            seen += 1
            fr = FileResult.from_json(hit)
            writers = {t.max_abs_diff for t in fr.tensors.values()}
            if fr.file != f"{key}.py" or len(fr.tensors) != 200 or len(writers) != 1 or hit[ENTRY_KEY] != key:
                bad += 1
    Path(out).write_text(f"{seen} {bad}")
    os._exit(0)


def test_concurrent_writers_never_leave_a_torn_or_wrong_entry(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), w)) for w in range(4)]
    procs.append(ctx.Process(target=_reader, args=(str(tmp_path), str(tmp_path / "reader.txt"))))
    for p in procs:
        p.start()
    for p in procs:
        p.join(240)
        assert p.exitcode == 0, p.exitcode
    seen, bad = map(int, (tmp_path / "reader.txt").read_text().split())
    assert bad == 0
    entries = sorted(tmp_path.glob("??/*.json"))
    assert len(entries) == len(KEYS)
    assert not list(tmp_path.glob("??/*.tmp"))  # every writer renamed its own temporary file
    fresh = ResultCache(tmp_path)
    for key in KEYS:
        hit = fresh.get(key)
        assert hit is not None and hit["file"] == f"{key}.py" and len(hit["tensors"]) == 200


def test_an_entry_under_another_name_is_no_result(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    cache.put(KEYS[0], _value(KEYS[0], 0, 0))
    src = tmp_path / KEYS[0][:2] / f"{KEYS[0]}.json"
    dst = tmp_path / KEYS[1][:2] / f"{KEYS[1]}.json"
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(src.read_bytes())  # a whole, valid result: of another key
    assert ResultCache(tmp_path).get(KEYS[1]) is None
    assert ResultCache(tmp_path).get(KEYS[0]) is not None


def test_a_torn_entry_is_a_miss(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    cache.put(KEYS[0], _value(KEYS[0], 0, 0))
    p = tmp_path / KEYS[0][:2] / f"{KEYS[0]}.json"
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    assert ResultCache(tmp_path).get(KEYS[0]) is None
