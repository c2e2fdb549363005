"""Task sweeps (analysis.task_sweep_plan, exec.sweep.Sweep.run_tasks) against the tasks one by one,
on every real dump where one applies, with the sanitizer on (the default settings).

Each fixture dump of verdicts.json whose program has a loop planned as a task sweep runs twice:
as the default run does (every task of such a loop at once) and with ``exact`` (every loop as
written) and every task watched (``exec.task_watch.UNWATCHED`` off: a watched sweep's middle tasks
get the records their watched runs make). The two results must be the same: status, error, every output tensor's figures, the
writes, the call counts, the memory model's and the sanitizer's findings, the task graph; and the
output tensors the same bytes. Some dump must have run a task sweep (else the test proves nothing).
``tests/conformance/test_batching.py`` compares the values-only runs of every dump the same way.
"""

from __future__ import annotations

import json

import pytest
import torch

import pypto_lsp.exec.sweep as sweep
from pypto_lsp.analysis.task_sweep_plan import plan_task_sweeps
from pypto_lsp.exec import task_watch
from pypto_lsp.ir.parser import parse_text
from pypto_lsp.validate import engine
from pypto_lsp.validate.golden import load_bundle

from .conformance import FIXTURES

pytestmark = pytest.mark.conformance

_VOLATILE = ("seconds", "cached", "file", "stats", "worker")


def _result(text: str, ins, exp, spec, exact: bool, monkeypatch) -> tuple[str, dict[str, torch.Tensor]]:
    monkeypatch.setattr(task_watch, "UNWATCHED", not exact)
    kept: dict[str, torch.Tensor] = {}
    r = engine.run_text(
        text, ins, exp, rtol=spec["rtol"], atol=spec["atol"], entry=spec.get("entry"), sanitize=True, exact=exact, keep=kept
    )
    js = r.to_json()
    for k in _VOLATILE:
        js.pop(k, None)
    return json.dumps(js, sort_keys=True, default=str), {k: kept[k] for k in exp if k in kept}


@pytest.mark.timeout(900)
def test_task_sweeps_leave_what_the_tasks_one_by_one_leave(monkeypatch, capsys):
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    swept = 0
    real = sweep.Sweep.run_tasks

    def counted(self, variant, *args):
        nonlocal swept
        out = real(self, variant, *args)
        swept += out is not sweep.FAILED
        return out

    monkeypatch.setattr(sweep.Sweep, "run_tasks", counted)
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    seen: set[tuple[str, str, str]] = set()  # (a dump whose text and bundles another case has: run once)
    dumps = 0
    problems: list[str] = []
    for case, spec in verdicts.items():
        ins = {k: v for k, v in load_bundle(FIXTURES / spec["inputs"]).items() if isinstance(v, torch.Tensor)}
        exp = load_bundle(FIXTURES / spec["expected"])
        for f in sorted((FIXTURES / spec["dir"] / "passes_dump").glob("*.py")):
            text = f.read_text()
            res = parse_text(text, f.name)
            key = (text, spec["inputs"], spec["expected"])
            if res.program is None or not plan_task_sweeps(res.program).loops or key in seen:
                continue
            seen.add(key)
            dumps += 1
            batched, out_b = _result(text, ins, exp, spec, exact=False, monkeypatch=monkeypatch)
            one_by_one, out_e = _result(text, ins, exp, spec, exact=True, monkeypatch=monkeypatch)
            where = f"{case}/{f.name}"
            if batched != one_by_one:
                problems.append(f"{where}: {batched[:300]} != {one_by_one[:300]}")
            elif out_b.keys() != out_e.keys() or not all(torch.equal(out_b[k], out_e[k]) for k in out_b):
                problems.append(f"{where}: the outputs differ in their bits")
    with capsys.disabled():
        print(f"\ntask sweeps: {dumps} dumps with a loop planned as one, {swept} task sweeps run, all compared both ways")
    assert not problems, "\n".join(problems[:10])
    assert dumps and swept, "no fixture dump ran a task sweep"
