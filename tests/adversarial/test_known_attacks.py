"""The attacks the sweep found harmless, kept so they stay harmless: the injection corpus
(tests/badinput) and code payloads in dumps, malicious pickles as goldens, concurrent runs on
one cache. (Malformed JSON-RPC, worker kill -9 and shutdown: test_lsp_abuse.)"""

from __future__ import annotations

import builtins
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pypto_lsp.validate.golden import GoldenError, load_bundle

from .conftest import cli, make_case, needs_fixtures, report, statuses

pytestmark = needs_fixtures
BADINPUT = Path(__file__).resolve().parents[1] / "badinput"


def test_the_injection_corpus_validates_to_errors(tmp_path: Path) -> None:
    case = make_case(tmp_path, 0, names=[])
    bad = sorted(BADINPUT.glob("*.py"))
    for i, p in enumerate(bad):
        shutil.copyfile(p, case / "passes_dump" / f"{i}_after_{p.stem}.py")
    p = cli("validate", str(case), "--json", "--no-cache", "--no-localize", "--timeout", "10")
    rep = report(p)
    assert len(rep["files"]) == len(bad)
    assert {s for s in statuses(rep).values()} == {"error"}
    assert p.returncode == 1


PAYLOAD = "__import__('os').system('touch {canary}')"


@pytest.mark.parametrize(
    "where",
    [
        "statement",  # a bare call inside the function
        "annotation",  # in a type annotation
        "default",  # a parameter default
        "decorator",  # a decorator argument
        "string",  # inside a string literal (inert)
    ],
)
def test_code_in_a_dump_never_runs(tmp_path: Path, where: str) -> None:
    case = make_case(tmp_path, 1)
    canary = tmp_path / "PWNED"
    f = case / "passes_dump" / "00_frontend.py"
    text = f.read_text()
    call = PAYLOAD.format(canary=canary)
    if where == "statement":
        text = text.replace("        return c", f"        {call}\n        return c")
    elif where == "annotation":
        text = text.replace("tile_a: pl.Tile[[128, 128], pl.FP32, pl.Mem.Vec]", f"tile_a: {call}")
    elif where == "default":
        text = text.replace("def chunked_add(self, a:", f"def chunked_add(self, z={call}, a:")
    elif where == "decorator":
        text = text.replace("@pl.program", f"@pl.program({call})")
    else:
        text = text.replace("        return c", f"        s = {call!r}\n        return c")
    f.write_text(text)
    p = cli("validate", str(case), "--json", "--no-cache", "--no-localize")
    report(p)
    assert not canary.exists(), f"code in the dump ran ({where})"


class _Evil:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return (builtins.open, (self.marker, "w"))


def _evil_bundles(tmp_path: Path, marker: Path) -> list[Path]:
    out = []
    p = tmp_path / "evil_torch.pt"
    torch.save({"c": torch.zeros(2), "x": _Evil(str(marker))}, p)
    out.append(p)
    p = tmp_path / "evil_pickle.pt"
    with p.open("wb") as fh:
        pickle.dump({"c": _Evil(str(marker))}, fh, protocol=2)
    out.append(p)
    p = tmp_path / "evil_system.pt"  # GLOBAL os.system in a raw protocol-0 pickle
    p.write_bytes(b"cos\nsystem\n(S'touch " + str(marker).encode() + b"'\ntR.")
    out.append(p)
    p = tmp_path / "evil.safetensors"  # a header length of 2**63
    p.write_bytes((1 << 63).to_bytes(8, "little") + b"{}")
    out.append(p)
    return out


def test_malicious_pickles_are_refused(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    case = make_case(tmp_path, 1)
    for evil in _evil_bundles(tmp_path, marker):
        with pytest.raises(GoldenError):
            load_bundle(evil)
        p = cli("validate", str(case), "--inputs", str(case / "tensors.pt"), "--expected", str(evil), "--json")
        assert p.returncode == 2 and "cannot read golden bundle" in p.stderr, (evil.name, p.stderr[-1000:])
        assert not marker.exists(), f"{evil.name}: code ran"


def test_concurrent_runs_on_one_cache_agree(tmp_path: Path) -> None:
    case = make_case(tmp_path, 6, bug_from=4)
    env = {**os.environ, "PYPTO_LSP_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "pypto_lsp", "validate", str(case), "--json", "--no-localize"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) for _ in range(3)]
    results = []
    for pr in procs:
        out, err = pr.communicate(timeout=300)
        results.append((pr.returncode, statuses(report(subprocess.CompletedProcess(cmd, pr.returncode, out, err)))))
    assert all(r == results[0] for r in results), results
    assert results[0][0] == 1 and list(results[0][1].values()) == ["pass"] * 4 + ["fail"] * 2
    # and a later cached run says the same
    again = cli("validate", str(case), "--json", "--no-localize", cache=tmp_path / "cache")
    assert statuses(report(again)) == results[0][1]
