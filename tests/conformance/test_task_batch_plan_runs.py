"""analysis.task_batch_plan against what the tasks do when they run, on every real dump with directions.

For each fixture dump of verdicts.json with a loop the plan says could run as one batch, the dump runs
under the sanitizer, which records the windows every task reads and writes of every global buffer
(exec.sanitizer: the task records its order and race checks use). The plan's roles must hold for the
tasks of each run of the loop: an ``input`` is written by none of them; an ``own-window`` buffer is
read by none and no two of them write a common element; an ``ordered-sum`` buffer is read and written
at the same windows by every task. A dump without ``arg_directions`` (before DeriveCallDirections) has
no task records and is counted apart.
"""

from __future__ import annotations

import json

import pytest
import torch

from pypto_lsp.analysis.task_batch_plan import INPUT, ORDERED_SUM, OWN_WINDOW, plan_task_loops
from pypto_lsp.exec import task_watch
from pypto_lsp.validate import engine
from pypto_lsp.validate.golden import load_bundle

from .conformance import FIXTURES

pytestmark = pytest.mark.conformance


@pytest.mark.timeout(900)
def test_the_plans_roles_hold_for_every_task_that_runs(capsys, monkeypatch):
    monkeypatch.setattr(task_watch, "UNWATCHED", False)  # every task's records from what it did (not made from the first ones)
    if not (FIXTURES / "verdicts.json").is_file():
        pytest.skip(f"shared fixtures not found at {FIXTURES}")
    verdicts = json.loads((FIXTURES / "verdicts.json").read_text())
    seen: set[int] = set()
    loops_checked = tasks_checked = no_records = 0
    problems: list[str] = []
    for case, spec in verdicts.items():
        ins = load_bundle(FIXTURES / spec["inputs"])
        for f in sorted((FIXTURES / spec["dir"] / "passes_dump").glob("*.py")):
            text = f.read_text()
            comp = engine.compile_text(text, entry=spec.get("entry"), memory=True, sanitize=True)
            if comp.program is None or comp.code is None or hash(comp.generated.source) in seen:
                continue
            seen.add(hash(comp.generated.source))
            plans = [p for p in plan_task_loops(comp.program) if p.declined is None and p.trips > 1]
            if not plans:
                continue
            san = engine._sanitizer(comp)
            if not san.ordering:
                no_records += 1
                continue
            engine.run(comp, ins, observers=[san])
            for p in plans:
                tasks = [t for t in san.tasks if t.site.line == p.call_line]
                if not tasks or len(tasks) % p.trips:
                    problems.append(f"{case}/{f.name}: line {p.line}: {len(tasks)} tasks ran, not runs of {p.trips}")
                    continue
                loops_checked += 1
                tasks_checked += len(tasks)
                for run_start in range(0, len(tasks), p.trips):
                    one_run = tasks[run_start : run_start + p.trips]
                    for arg in p.args:
                        why = _check(san, one_run, arg.index, arg.role)
                        if why:
                            problems.append(f"{case}/{f.name}: line {p.line}: '{arg.name}' ({arg.role}): {why}")
    with capsys.disabled():
        print(
            f"\ntask-batch plans: {loops_checked} batchable loops checked against {tasks_checked} tasks that ran; "
            f"{no_records} dumps without arg_directions not checked"
        )
    assert loops_checked > 0, "no batchable loop ran with task records: the test would prove nothing"
    assert not problems, "\n".join(problems[:20])


def _mask(root, boxes) -> torch.Tensor:
    """The elements of ``root`` the boxes cover (a sweep records one box for the windows a batch of
    iterations touched, a peeled iteration its own: the elements are what compare)."""
    flat = any(b.flat for b in boxes)
    size = (root.tensor.untyped_storage().nbytes() // root.tensor.element_size(),) if flat else tuple(root.shape)
    m = torch.zeros(size, dtype=torch.bool)
    for b in boxes:
        b = root.to_flat(b) if flat and not b.flat else b
        m[tuple(slice(lo, hi) for lo, hi in zip(b.lo, b.hi, strict=True))] = True
    return m


def _check(san, tasks, index: int, role: str) -> str | None:
    keys = {k for t in tasks for k, i in t.args.items() if i == index}
    if role not in (INPUT, OWN_WINDOW, ORDERED_SUM) or not keys:
        return None
    if len(keys) != 1:
        return f"the tasks got {len(keys)} different buffers"
    key = keys.pop()
    root = san.roots[key]
    writes = [t.access.get(key, {}).get("w", []) for t in tasks]
    reads = [t.access.get(key, {}).get("r", []) for t in tasks]
    if role == INPUT:
        return "written by a task" if any(writes) else None
    if role == OWN_WINDOW:
        if any(reads):
            return "read by a task"
        written = torch.stack([_mask(root, w).reshape(-1) for w in writes]).sum(0, dtype=torch.int32)
        return f"{int((written > 1).sum())} elements written by more than one task" if bool((written > 1).any()) else None
    first = _mask(root, writes[0])
    if not bool(first.any()):
        return "the first task does not write it"
    for i, (w, r) in enumerate(zip(writes, reads, strict=True)):
        if not torch.equal(_mask(root, w), first) or not torch.equal(_mask(root, r), first):
            return f"task {i} reads or writes other elements than the first task"
    return None
