"""Multi-rank hazards (exec/rank_hazards.py) on the hand-broken copies of examples/allreduce_ranks and RingPush."""

from __future__ import annotations

from pathlib import Path

import torch

from pypto_lsp.validate.engine import run_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(case: str, dump: str, golden: str, text: str | None = None):  # type: ignore[no-untyped-def]
    path = EXAMPLES / case / "passes_dump" / dump
    inputs = torch.load(EXAMPLES / golden / "golden" / "inputs.pt")
    expected = torch.load(EXAMPLES / golden / "golden" / "expected.pt")
    return run_text(text if text is not None else path.read_text(), inputs, expected, filename=str(path))


def _kinds(res) -> list[str]:  # type: ignore[no-untyped-def]
    return [h["kind"] for h in (res.memory or {}).get("hazards", [])]


def test_the_correct_programs_have_no_finding() -> None:
    for dump in ("00_frontend.py", "11_after_ConvertTensorToTileOps.py", "35_after_AllocateMemoryAddr.py"):
        res = _run("allreduce_ranks", dump, "allreduce_ranks")
        assert res.status == "pass" and _kinds(res) == [], res.memory
    assert _run("broken_ranks_fence", "00_frontend.py", "broken_ranks_fence").status == "pass"


def test_a_load_of_a_peer_window_no_wait_orders_is_a_cross_rank_race() -> None:
    res = _run("broken_ranks_race", "11_after_ConvertTensorToTileOps.py", "allreduce_ranks")
    assert res.status == "fail"
    races = [h for h in res.memory["hazards"] if h["kind"] == "race"]  # type: ignore[index]
    raw = [h for h in races if h["race"] == "RAW"]
    assert raw and raw[0]["other_line"] == 13 and "pld.tile.remote_load" in raw[0]["message"]
    assert raw[0]["rank"] != raw[0]["other_rank"] and "(rank " in raw[0]["name"]


def test_a_notify_that_can_never_count_is_a_deadlock() -> None:
    res = _run("broken_ranks_deadlock", "11_after_ConvertTensorToTileOps.py", "allreduce_ranks")
    assert res.error is not None and res.error.kind == "distributed:deadlock"
    assert res.error.detail["ranks"] == [0, 1, 2, 3]


def test_a_remote_write_not_fenced_before_its_notify_is_a_fence_finding() -> None:
    res = _run("broken_ranks_fence", "48_after_InsertCommFence.py", "broken_ranks_fence")
    assert res.status == "fail" and _kinds(res) == ["fence"]
    (h,) = res.memory["hazards"]  # type: ignore[index]
    assert (h["line"], h["other_line"]) == (14, 15) and h["rank"] == 0
    assert res.tensors["y"].passed  # the numbers agree: the finding alone fails it
    text = (EXAMPLES / "broken_ranks_fence" / "passes_dump" / "48_after_InsertCommFence.py").read_text()
    fixed = text.replace(
        "        pld.system.notify(flag",
        "        pl.system.fence()\n        pld.system.notify(flag",
    )
    res = _run("broken_ranks_fence", "48_after_InsertCommFence.py", "broken_ranks_fence", fixed)
    assert res.status == "pass" and _kinds(res) == []


def test_the_task_graph_shows_the_rank_of_each_task() -> None:
    from pypto_lsp.formats.taskgraph import task_graph_layout

    res = _run("allreduce_ranks", "35_after_AllocateMemoryAddr.py", "allreduce_ranks")
    assert res.tasks is not None
    assert sorted(n["rank"] for n in res.tasks["nodes"]) == [0, 1, 2, 3]
    layout = task_graph_layout(res.tasks)
    assert sorted(n["label"].split(" ")[0] for n in layout["nodes"]) == ["r0", "r1", "r2", "r3"]


def test_localisation_pairs_values_rank_by_rank() -> None:
    from pypto_lsp.validate.localize import first_differing_value

    prev = (EXAMPLES / "broken_ranks_race" / "passes_dump" / "00_frontend.py").read_text()
    cur = (EXAMPLES / "broken_ranks_race" / "passes_dump" / "11_after_ConvertTensorToTileOps.py").read_text()
    inputs = torch.load(EXAMPLES / "allreduce_ranks" / "golden" / "inputs.pt")
    v = first_differing_value(prev, cur, inputs, rtol=1e-5, atol=1e-5)
    # without its barrier a rank runs ahead of the others, so the k-th value of a name is another rank's
    # unless ranks are told apart: the first value that differs is the first peer load, not a peer index
    assert v is not None and v.name == "r1" and v.line == 20 and v.rank is not None, v
    assert f"rank {v.rank}" in v.describe("00_frontend.py")
