"""exec.task_watch against watching every task, on every real dump with a loop it follows.

Each fixture dump of verdicts.json whose sanitizer would run some tasks unwatched (the middle tasks
of a loop that could run as one batch) runs twice under the sanitizer: every task watched, and the
middle ones unwatched with their records made from the first ones. Both runs must give the same
values, the same findings (the memory model's too), the same task graph, the same call counts and,
task by task, records of the same elements of every global buffer; and every loop's watched tasks
after the first three must be the ones predicted. The tasks whose group leaves its idle AIV lane 1
out (exec.task_watch; in a loop without task records, before DeriveCallDirections, only that) are
counted: some must. Task sweeps off: the loops run task by task under the watch (a watched task
sweep runs the middle tasks as one: ``test_task_sweeps_runs.py`` compares it with every task watched).
"""

from __future__ import annotations

import json

import pytest
import torch

from pypto_lsp.analysis import lowering
from pypto_lsp.exec import task_watch
from pypto_lsp.exec.memory import MemoryObserver
from pypto_lsp.exec.observe import CallCounter
from pypto_lsp.validate import engine
from pypto_lsp.validate.golden import load_bundle

from .conformance import FIXTURES
from .test_task_batch_plan_runs import _mask

pytestmark = pytest.mark.conformance


def _run(comp, ins, unwatched: bool, monkeypatch):
    monkeypatch.setattr(task_watch, "UNWATCHED", unwatched)
    san = engine._sanitizer(comp)
    mem, calls = MemoryObserver(), CallCounter()
    out = engine.run(comp, {k: v.clone() for k, v in ins.items()}, observers=[mem, calls, san])
    return san, out, mem.findings, calls.counts


@pytest.mark.timeout(900)
def test_unwatched_middle_tasks_give_the_records_and_findings_of_watched_ones(monkeypatch, capsys):
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    monkeypatch.setattr(lowering, "TASK_SWEEPS", False)
    monkeypatch.setattr(engine, "_COMPILED", {})
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    seen: set[int] = set()
    dumps = unwatched = left_out = lanes_only = 0
    problems: list[str] = []
    for case, spec in verdicts.items():
        ins = load_bundle(FIXTURES / spec["inputs"])
        for f in sorted((FIXTURES / spec["dir"] / "passes_dump").glob("*.py")):
            comp = engine.compile_text(f.read_text(), entry=spec.get("entry"), memory=True, sanitize=True)
            # (one script with and without task records: DeriveCallDirections changes no generated line)
            key = hash((comp.generated.source, tuple(sorted(comp.task_loops.items())))) if comp.generated is not None else 0
            if comp.program is None or comp.code is None or not comp.task_loops or key in seen:
                continue
            seen.add(key)
            where = f"{case}/{f.name}"
            fast, out_fast, mem_fast, calls_fast = _run(comp, ins, True, monkeypatch)
            slow, out_slow, mem_slow, calls_slow = _run(comp, ins, False, monkeypatch)
            dumps += 1
            n = sum(w.unwatched for w in fast.loops.values())
            unwatched += n
            with_records = any(w.records for w in fast.loops.values())
            left_out += fast.lanes_left_out
            if slow.lanes_left_out:
                problems.append(f"{where}: a watched task left its lane 1 out")
            if calls_fast != calls_slow:
                problems.append(f"{where}: call counts differ: {calls_fast} / {calls_slow}")
            if mem_fast != mem_slow:
                problems.append(f"{where}: memory findings differ: {mem_fast} / {mem_slow}")
            if with_records and not n:
                problems.append(f"{where}: no task ran unwatched")
            lanes_only += not with_records
            if any(w.mismatched for w in fast.loops.values()):
                problems.append(f"{where}: watched tasks not as predicted: {[w.mismatched for w in fast.loops.values()]}")
            if (out_fast.error is None) != (out_slow.error is None):
                problems.append(f"{where}: errors differ: {out_fast.error} / {out_slow.error}")
                continue
            for k, v in out_slow.tensors.items():
                if not torch.equal(out_fast.tensors[k], v):
                    problems.append(f"{where}: output '{k}' differs")
            if fast.findings != slow.findings:
                problems.append(f"{where}: findings differ: {fast.findings} / {slow.findings}")
            races_fast, races_slow = fast.races(), slow.races()
            if races_fast != races_slow or fast.graph(races_fast) != slow.graph(races_slow):
                problems.append(f"{where}: races or task graph differ")
            if len(fast.tasks) != len(slow.tasks):
                problems.append(f"{where}: {len(fast.tasks)} tasks against {len(slow.tasks)}")
                continue
            for a, b in zip(fast.tasks, slow.tasks, strict=True):
                if a.deps != b.deps:
                    problems.append(f"{where}: task {a.index}: dependencies differ")
                ka = {a.args.get(k): (k, v) for k, v in a.access.items()}
                kb = {b.args.get(k): (k, v) for k, v in b.access.items()}
                if ka.keys() != kb.keys():
                    problems.append(f"{where}: task {a.index} touched other buffers")
                    continue
                for i, (key_a, kinds_a) in ka.items():
                    key_b, kinds_b = kb[i]
                    for kind in ("r", "w"):
                        ma = _mask(fast.roots[key_a], kinds_a.get(kind, [])) if kinds_a.get(kind) else None
                        mb = _mask(slow.roots[key_b], kinds_b.get(kind, [])) if kinds_b.get(kind) else None
                        if (ma is None) != (mb is None) or (ma is not None and not torch.equal(ma, mb)):
                            problems.append(f"{where}: task {a.index} ({a.site.callee}): argument {i} '{kind}' records other elements")
    with capsys.disabled():
        print(
            f"\ntask watch: {dumps} dumps run both ways ({lanes_only} without task records), {unwatched} tasks unwatched,"
            f" {left_out} tasks without their idle lane 1"
        )
    assert dumps > 0 and unwatched > 0, "no task ran unwatched: the test would prove nothing"
    assert left_out > 0, "no group left its idle lane out: the test would prove nothing of it"
    assert not problems, "\n".join(problems[:20])
