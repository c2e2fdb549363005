"""The debug adapter on a multi-rank program (ranks simulated in one process, side by side): each
rank's values are paired with that rank's of the previous pass, as validate's localisation pairs
them (``validate.localize.place``), whatever order the ranks ran in; each rank's kernel is a
thread of its own that shows that rank's values (issue 32)."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.dap_client import DapClient

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
X = torch.load(EXAMPLES / "allreduce_ranks/golden/inputs.pt")["x"]  # [ranks, 1, 64]: rank r's slice is x[r]


@pytest.fixture
def dap() -> Iterator[DapClient]:
    c = DapClient()
    yield c
    c.close()


def dumps(tmp_path: Path, name: str) -> Path:
    """A copy of ``examples/<name>``'s dumps (the clean case beside it: its goldens)."""
    for n in {name, "allreduce_ranks"}:
        shutil.copytree(EXAMPLES / n, tmp_path / n)
    return tmp_path / name / "passes_dump"


def line_of(path: Path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text().splitlines(), 1) if needle in text)


def tile(dap: DapClient, var: dict[str, Any]) -> torch.Tensor:
    """A [1, n] tile's valid region rebuilt from its children."""
    rows = [r for r in dap.variables(var["variablesReference"]) if r["name"].startswith("[")]
    return torch.tensor([[float(e["value"]) for e in dap.variables(r["variablesReference"])] for r in rows])


def test_the_first_difference_is_rank_0s_load_of_a_peer_not_yet_staged(dap: DapClient, tmp_path: Path) -> None:
    """The barrier's wait loop gone: without it the ranks run in another order than the pass before,
    so pairing values by occurrence alone compares rank 0's peer index 'p1' with rank 3's and stops
    there; rank by rank, the first value that differs is rank 0's load of its peer's window."""
    prog = dumps(tmp_path, "broken_ranks_race") / "11_after_ConvertTensorToTileOps.py"
    dap.start({"program": str(prog), "stopOnFirstDifference": True})
    ev = dap.wait_event("stopped", timeout=300)["body"]
    line = line_of(prog, "r1: pl.Tile")
    assert ev["reason"] == "exception" and ev["description"] == "first difference"
    assert ev["text"].startswith(f"'r1' on line {line} differs from the previous pass 00_frontend.py"), ev["text"]
    assert line == 20
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert names[ev["threadId"]].endswith("· rank 0")
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line
    loc = dap.locals(frames[0]["id"])
    assert loc["my_rank"]["value"] == "0" and loc["p1"]["value"] == "1"
    # rank 1 has not staged its slice yet: zeros here, rank 1's slice in the previous pass (rank 0's load of it)
    r1 = {k["name"]: k for k in dap.variables(loc["r1"]["variablesReference"])}
    assert torch.equal(tile(dap, loc["r1"]), torch.zeros(1, 64))
    assert torch.allclose(tile(dap, r1["previous pass"]), X[1], atol=1e-6)
    assert "|Δ| 0" in loc["local"]["value"]  # rank 0's own slice, the same as rank 0's before
    dap.request("setExceptionBreakpoints", {"filters": []})
    dap.request("continue", {"threadId": ev["threadId"]})
    dap.wait_event("terminated", timeout=300)


@pytest.mark.parametrize("dump", ["11_after_ConvertTensorToTileOps.py", "35_after_AllocateMemoryAddr.py"])
def test_the_clean_allreduce_has_no_first_difference(dap: DapClient, tmp_path: Path, dump: str) -> None:
    prog = dumps(tmp_path, "allreduce_ranks") / dump
    dap.start({"program": str(prog), "stopOnFirstDifference": True})
    dap.wait_event("terminated", timeout=300)
    assert not [e for e in dap.seen if e["event"] == "stopped"]
    out = "".join(e["body"].get("output", "") for e in dap.seen if e["event"] == "output")
    assert "PASS" in out, out


def test_each_rank_thread_shows_that_ranks_values_and_previous_values(dap: DapClient, tmp_path: Path) -> None:
    """Past the barrier the last rank to arrive stops first, the other three waiting in it: four
    kernel threads, one per rank, each with its rank's slice and that rank's previous-pass slice."""
    prog = dumps(tmp_path, "allreduce_ranks") / "11_after_ConvertTensorToTileOps.py"
    line = line_of(prog, "p1: pl.Scalar")
    # the first-difference stop on (the clean program never makes it): the previous pass is
    # recorded before the run starts, its values are there at the first stop
    dap.start({"program": str(prog), "stopOnFirstDifference": True}, breakpoints=[line])
    for stop in range(2):  # rank 3 (the others in the barrier), then rank 0 (rank 3 finished)
        ev = dap.wait_event("stopped", timeout=300)["body"]
        assert ev["reason"] == "breakpoint"
        ranks = {int(m.group(1)): t["id"] for t in dap.threads() if (m := re.search(r"· rank (\d+)", t["name"]))}
        assert sorted(ranks) == [0, 1, 2, 3]
        assert ev["threadId"] == ranks[3 if stop == 0 else 0]
        for r, tid in ranks.items():
            frames = dap.stack(tid)
            if frames[0]["name"].endswith("finished"):
                assert stop == 1 and r == 3
                continue
            loc = dap.locals(frames[0]["id"])
            assert loc["my_rank"]["value"] == str(r)
            assert "|Δ| 0" in loc["local"]["value"], (r, loc["local"]["value"])
            kids = {k["name"]: k for k in dap.variables(loc["local"]["variablesReference"])}
            assert torch.allclose(tile(dap, loc["local"]), X[r], atol=1e-6)
            assert torch.allclose(tile(dap, kids["previous pass"]), X[r], atol=1e-6)
        if stop == 0:
            dap.request("continue", {"threadId": ev["threadId"]})
    dap.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": []})
    dap.request("continue", {"threadId": ev["threadId"]})
    dap.wait_event("terminated", timeout=300)
