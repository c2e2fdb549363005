"""Batched loops (pypto_lsp.exec.batching, exec.pipebatch, exec.sweep) against the loops as written, on every real dump.

For each fixture dump of verdicts.json (and the scale dumps at hidden 1024, whose goldens
``make_goldens.py`` writes into a temporary folder): the script with batching and with
``--exact``, with the memory model on (placed dumps: sweeps run their first and last iterations in
the arenas, the memory findings must be the same) and, for placed dumps, values only too; where they differ, both are run and must reach the same verdict
and the same outputs bit for bit: a batched loop adds its chunks in the loop's order
(``exec.batching.add_in_order``) and makes each chunk's product as the loop's matmul does
(``exec.batching.chunk_products``). Prints how many dumps batching changed and how many outputs.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import torch

from pypto_lsp.validate import engine
from pypto_lsp.validate.golden import load_bundle

from .conformance import FIXTURES

pytestmark = pytest.mark.conformance

# a batched K-chunk loop (exec.batching), a batched loop on a cross-core pipe (exec.pipebatch) or a
# loop nest run over all its iterations at once (exec.sweep)
_BATCHED = re.compile(r"_pl_kchunk\.kchunk\(|_pl_pipebatch\.(push_loop|pop_accumulate)\(|_pl_sweeps\.Sweep\(")


def _cases(tmp_dir) -> list[tuple[str, list, dict, dict, float, float, str | None]]:
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    out = []
    for case, spec in verdicts.items():
        files = sorted((FIXTURES / spec["dir"] / "passes_dump").glob("*.py"))
        out.append((case, files, spec["inputs"], spec["expected"], spec["rtol"], spec["atol"], spec.get("entry")))
    scale = FIXTURES / "scale" / "qwen3_scope3_910b_h1024"
    if scale.is_dir():
        subprocess.run(
            [sys.executable, str(FIXTURES / "scale" / "make_goldens.py"), scale.name, str(tmp_dir)], check=True, capture_output=True
        )
        out.append(
            (
                scale.name,
                sorted((scale / "passes_dump").glob("*.py")),
                str(tmp_dir / "tensors.pt"),
                str(tmp_dir / "expected.pt"),
                5e-2,
                5e-2,
                None,
            )
        )
    return out


def _run(text: str, ins, exp, rtol: float, atol: float, entry: str | None, exact: bool, memory: bool = True):
    """The verdict (run_text) and the output tensors that run left (``keep``: the entry's tensors
    after it, the inputs themselves untouched)."""
    kept: dict[str, torch.Tensor] = {}
    r = engine.run_text(text, ins, exp, rtol=rtol, atol=atol, entry=entry, memory=memory, exact=exact, keep=kept)
    outs = {k: kept[k] for k in exp if k in kept} if r.status in ("pass", "fail") else {}
    return r, outs


@pytest.mark.timeout(1500)
def test_batched_and_exact_paths_reach_the_same_verdicts(tmp_path, capsys):
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    changed = 0
    total = 0
    compared = 0  # output tensors compared bit for bit
    problems = []
    placed_runs = 0  # of them, placed dumps with the memory model on (sweeps peeled)
    # a dump whose script is another's of its case (the same program but for comments: most passes
    # change only some dumps) runs as its twin did, bit for bit: compared once
    seen: set[tuple[str, bool, int]] = set()
    twins = 0
    for case, files, ins_p, exp_p, rtol, atol, entry in _cases(tmp_path):
        ins = load_bundle(ins_p if str(ins_p).startswith("/") else FIXTURES / ins_p)
        exp = load_bundle(exp_p if str(exp_p).startswith("/") else FIXTURES / exp_p)
        for f in files:
            text = f.read_text()
            total += 1
            comp = engine.compile_text(text, entry=entry, memory=True)
            placed = comp.generated is not None and "_pl_mem_session" in comp.generated.source
            # unplaced: the memory-on script is the values-only one
            for memory in (True, False) if placed else (True,):
                if not memory:
                    comp = engine.compile_text(text, entry=entry, memory=False)
                if comp.generated is None or not _BATCHED.search(comp.generated.source):
                    continue  # no batched loop: the script is the exact one
                changed += 1
                script = (case, memory, hash(comp.generated.source))
                if script in seen:
                    twins += 1
                    continue
                seen.add(script)
                placed_runs += memory and placed
                a, out_a = _run(text, ins, exp, rtol, atol, entry, exact=True, memory=memory)
                b, out_b = _run(text, ins, exp, rtol, atol, entry, exact=False, memory=memory)
                where = f"{case}/{f.name}{' (memory on)' if memory and placed else ''}"
                if a.status != b.status:
                    problems.append(f"{where}: exact {a.status}, batched {b.status}")
                if a.memory != b.memory:  # peeled sweeps (exec.sweep.Sweep.peeled): the same findings
                    problems.append(f"{where}: exact memory findings {a.memory}, batched {b.memory}")
                for k, ta in out_a.items():
                    tb = out_b[k]
                    compared += 1
                    same = ta.dtype == tb.dtype and ta.shape == tb.shape and bool(((ta == tb) | (ta.isnan() & tb.isnan())).all())
                    if not same:
                        d = (
                            float((ta.double() - tb.double()).abs().nan_to_num(0.0).max())
                            if ta.numel() and ta.shape == tb.shape
                            else float("nan")
                        )
                        problems.append(f"{where}:{k}: batched and exact outputs differ (largest by {d:.3e})")
    with capsys.disabled():
        print(
            f"\nbatching changed {changed} runs of {total} dumps: {changed - twins} distinct scripts ({placed_runs} with the memory model on placed tiles), {compared} outputs compared bit for bit"
        )
    assert changed > 0, "no fixture dump has a batched loop: the test would prove nothing"
    assert placed_runs > 0, "no placed dump has a peeled sweep: the memory-on half would prove nothing"
    assert not problems, "\n".join(problems)
