"""The debug adapter end to end: the real ``python -m pypto_lsp debug`` over stdio, driven by a
small DAP client (tests/dap_client.py), on copies of ``examples/`` and hand-written dumps; the
values it shows are checked against plain torch."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.dap_client import DapClient
from tests.framing import frame, read_frame

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


@pytest.fixture
def dap() -> Iterator[DapClient]:
    c = DapClient()
    yield c
    c.close()


def case(tmp_path: Path, name: str) -> Path:
    """A copy of ``examples/<name>`` (goldens of a sibling case copied too)."""
    shutil.copytree(EXAMPLES / name, tmp_path / name)
    if name.startswith("broken_"):
        shutil.copytree(EXAMPLES / "elementwise", tmp_path / "elementwise")
    return tmp_path / name / "passes_dump"


def line_of(path: Path, needle: str) -> int:
    for i, text in enumerate(path.read_text().splitlines(), 1):
        if needle in text:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def tile_values(dap: DapClient, var: dict[str, Any]) -> torch.Tensor:
    """A 2-D tile's valid region rebuilt from its children (rows, then elements)."""
    rows = [r for r in dap.variables(var["variablesReference"]) if r["name"].startswith("[")]
    out = []
    for r in rows:
        out.append([float(e["value"]) for e in dap.variables(r["variablesReference"])])
    return torch.tensor(out, dtype=torch.float64)


def stopped(dap: DapClient, reason: str | None = None) -> dict[str, Any]:
    ev = dap.wait_event("stopped")["body"]
    if reason is not None:
        assert ev["reason"] == reason, ev
    return ev


# ---------------------------------------------------------------------- breakpoints and values


def test_breakpoint_continue_and_stack_show_the_line(dap: DapClient, tmp_path: Path) -> None:
    dumps = case(tmp_path, "elementwise")
    prog = dumps / "11_after_ConvertTensorToTileOps.py"
    line = line_of(prog, "y_chunk__tile: pl.Tile")
    bps = dap.start({"program": str(prog)}, breakpoints=[line])
    assert bps["body"]["breakpoints"][0]["verified"] and bps["body"]["breakpoints"][0]["line"] == line
    ev = stopped(dap, "breakpoint")
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line and Path(frames[0]["source"]["path"]) == prog.resolve()
    assert frames[0]["name"].startswith("exp_add_mul_incore_0") and "iteration 1" in frames[0]["name"]
    assert frames[1]["name"] == "exp_add_mul" and frames[1]["line"] == line_of(prog, "out__rv_v2: pl.Tensor[[64, 128], pl.FP32] = self.")
    inputs = torch.load(EXAMPLES / "elementwise/golden/inputs.pt")
    loc = dap.locals(frames[0]["id"])
    y = loc["y_chunk__tile"]
    assert y["value"].startswith("[32, 128] FP32") and "|Δ| 0" in y["value"]  # the same as 09's value
    assert torch.allclose(tile_values(dap, y), inputs["y"][:32].double(), atol=1e-5)
    assert loc["r__idx_v0"]["value"] == "0"
    # the second iteration: the same line again, the next rows
    dap.request("continue", {"threadId": ev["threadId"]})
    ev = stopped(dap, "breakpoint")
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line and "iteration 2" in frames[0]["name"]
    y = dap.locals(frames[0]["id"])["y_chunk__tile"]
    assert torch.allclose(tile_values(dap, y), inputs["y"][32:].double(), atol=1e-5)
    r = dap.request("evaluate", {"expression": "y_chunk__tile[3, 5]", "frameId": frames[0]["id"], "context": "hover"})
    assert float(r["body"]["result"].split("min ")[1].split()[0]) == pytest.approx(float(inputs["y"][35, 5]), abs=1e-5)
    for expr in ("__import__('os').system('true')", "y_chunk__tile + 1", "open"):  # read with ast, never evaluated
        assert not dap.request("evaluate", {"expression": expr, "frameId": frames[0]["id"]}, ok=False)["success"]
    dap.request("continue", {"threadId": ev["threadId"]})
    dap.wait_event("terminated")
    out = "".join(e["body"].get("output", "") for e in dap.seen if e["event"] == "output")
    assert "PASS" in out


def test_a_socket_instead_of_stdio(tmp_path: Path) -> None:
    import json
    import os
    import socket
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "pypto_lsp", "debug", "--port", "0"], stderr=subprocess.PIPE, env=env, cwd=str(tmp_path))
    try:
        assert proc.stderr is not None
        line = b""
        while b"listening on" not in line:
            line = proc.stderr.readline()
            assert line, "the adapter ended before listening"
        port = int(line.decode().rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
            body = json.dumps({"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "pypto"}}).encode()
            s.sendall(frame(body))
            msg = json.loads(read_frame(s.makefile("rb")) or b"null")
            assert msg["success"] and any(x["filter"] == "nan" for x in msg["body"]["exceptionBreakpointFilters"])
    finally:
        proc.kill()
        proc.wait()


def test_hit_condition_and_unverified_lines(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "elementwise") / "11_after_ConvertTensorToTileOps.py"
    line = line_of(prog, "t__tile_1: pl.Tile")
    dap.request("initialize", {"adapterID": "pypto"})
    dap.request("launch", {"program": str(prog)})
    dap.wait_event("initialized")
    r = dap.request(
        "setBreakpoints",
        {"source": {"path": str(prog)}, "breakpoints": [{"line": line, "hitCondition": "2"}, {"line": 7}, {"line": 999}, {"line": 1}]},
    )
    b = r["body"]["breakpoints"]
    assert b[0]["verified"] and b[0]["line"] == line
    assert b[1]["verified"] and b[1]["line"] == line_of(prog, "for r__idx_v0")  # moved to the first statement
    assert not b[2]["verified"] and not b[3]["verified"]  # past the end; before any function
    dap.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": [{"line": line, "hitCondition": "2"}]})
    dap.request("configurationDone")
    ev = stopped(dap, "breakpoint")
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line and "iteration 2" in frames[0]["name"]  # the first hit was skipped


def test_a_breakpoint_on_a_statement_that_binds_nothing_or_a_return(dap: DapClient, tmp_path: Path) -> None:
    """A push (an expression statement) and a ``return`` hold breakpoints of their own: the AIC stops
    on its ``tpush_to_aiv`` line with the pushed tile in its Locals, an AIV lane on its ``return``."""
    prog = case(tmp_path, "mixed_matmul") / "22_after_ExpandMixedKernel.py"
    push, ret = line_of(prog, "pl.tile.tpush_to_aiv("), line_of(prog, "        return c__ssa_v0")
    dap.request("initialize", {"adapterID": "pypto"})
    dap.request("launch", {"program": str(prog)})
    dap.wait_event("initialized")
    b = dap.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": [{"line": push}, {"line": ret}]})["body"][
        "breakpoints"
    ]
    assert [(x["verified"], x["line"]) for x in b] == [(True, push), (True, ret)]  # neither moved to another line
    dap.request("configurationDone")
    ev = stopped(dap, "breakpoint")
    frames = dap.stack(ev["threadId"])
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert frames[0]["line"] == push and names[ev["threadId"]].startswith("AIC · mm_scale_aic")
    assert "acc__tile" in dap.locals(frames[0]["id"])
    dap.request("continue", {"threadId": ev["threadId"]})
    ev = stopped(dap, "breakpoint")
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert dap.stack(ev["threadId"])[0]["line"] == ret and names[ev["threadId"]].startswith("AIV")


def test_variables_of_the_cube_and_a_lane_equal_plain_torch(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "mixed_matmul") / "24_after_SplitVectorKernel.py"
    acc_line = line_of(prog, "acc__tile: pl.Tile")
    t_line = line_of(prog, "t__tile: pl.Tile")
    dap.start({"program": str(prog)}, breakpoints=[acc_line, t_line])
    inputs = torch.load(EXAMPLES / "mixed_matmul/golden/inputs.pt")
    mm = inputs["a"].float() @ inputs["b"].float()
    ev = stopped(dap, "breakpoint")
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert names[ev["threadId"]] == "AIC · mm_scale_aic · task 1"
    frames = dap.stack(ev["threadId"])
    assert [f["name"] for f in frames] == ["mm_scale_aic", "mm_scale (group)", "scaled_matmul"]
    assert frames[0]["line"] == acc_line
    acc = dap.locals(frames[0]["id"])["acc__tile"]
    assert acc["type"] == "Tile [32, 64] FP32"
    assert torch.allclose(tile_values(dap, acc), mm.double(), rtol=1e-5, atol=1e-4)
    # a client paging the rows gets rows, not the named children (previous pass, |Δ|)
    page = dap.request("variables", {"variablesReference": acc["variablesReference"], "filter": "indexed", "start": 3, "count": 2})["body"][
        "variables"
    ]
    assert [v["name"] for v in page] == ["[3]", "[4]"]
    assert acc["indexedVariables"] == 32
    dap.request("continue", {"threadId": ev["threadId"]})
    ev = stopped(dap, "breakpoint")
    assert dap.stack(ev["threadId"])[0]["line"] == t_line
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert names[ev["threadId"]] == "AIV0 · mm_scale_aiv · task 1"
    assert any(n.startswith("AIC · mm_scale_aic") for n in names.values())
    frames = dap.stack(ev["threadId"])
    t = dap.locals(frames[0]["id"])["t__tile"]
    assert t["value"].startswith("[16, 64] FP32")
    assert torch.allclose(tile_values(dap, t), (mm[:16] * 2).double(), rtol=1e-5, atol=1e-4)
    pipes = {p["name"]: p for p in dap.scope(frames[0]["id"], "Pipes")}
    lane1 = next(p for n, p in pipes.items() if "lane=1" in n)
    assert lane1["value"] == "1 tile queued"  # lane 1's half, not popped yet
    slot = dap.variables(lane1["variablesReference"])[0]
    assert torch.allclose(tile_values(dap, slot), mm[16:].double(), rtol=1e-5, atol=1e-4)


V2C = """# pypto.program: PingPong
import pypto.language as pl

@pl.program
class PingPong:
    @pl.function(type=pl.FunctionType.AIC, level=pl.Level.AIC, role=pl.Role.SubWorker)
    def pp_aic(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]):
        x__mat: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Mat)
        r__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Mat] = pl.tile.tpop_from_aiv(split=0)
        out__ssa_v2: pl.Tensor[[32, 64], pl.FP32] = pl.tile.store(r__tile, [0, 0], out)
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def pp_aiv(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        x__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [32, 64], [32, 64], target_memory=pl.Mem.Vec)
        e__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.exp(x__tile)
        f__tile: pl.Tile[[32, 64], pl.FP32, pl.Mem.Vec] = pl.tile.adds(e__tile, 1.0)
        pl.tile.tpush_to_aic(f__tile, split=0)
        return out
    @pl.function(type=pl.FunctionType.Group, level=pl.Level.CORE_GROUP, role=pl.Role.SubWorker)
    def pp(x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        self.pp_aic(x, out)
        out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.pp_aiv(x, out)
        return out__ssa_v1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, x: pl.Tensor[[32, 64], pl.FP32], out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.pp(x, out)
        return out__ssa_v1
"""


def test_two_cores_one_steps_while_the_other_waits_on_its_pipe(dap: DapClient, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    prog = tmp_path / "d" / "00_frontend.py"
    prog.write_text(V2C)
    x_line, e_line, f_line = (line_of(prog, s) for s in ("x__tile: pl.Tile", "e__tile: pl.Tile", "f__tile: pl.Tile"))
    dap.start({"program": str(prog)}, breakpoints=[x_line])  # no goldens: differential
    ev = stopped(dap, "breakpoint")
    aiv = ev["threadId"]
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert names[aiv] == "AIV0 · pp_aiv · task 1"
    aic = next(i for i, n in names.items() if n.startswith("AIC · pp_aic · task 1"))
    assert "waiting on tile.tpop_from_aiv" in names[aic]
    aic_frames = dap.stack(aic)
    assert aic_frames[0]["line"] == line_of(prog, "tpop_from_aiv") and "waiting on tile.tpop_from_aiv" in aic_frames[0]["name"]
    assert "x__mat" in dap.locals(aic_frames[0]["id"])
    for want in (e_line, f_line):
        dap.request("next", {"threadId": aiv})
        ev = stopped(dap, "step")
        assert ev["threadId"] == aiv
        assert dap.stack(aiv)[0]["line"] == want
        names = {t["id"]: t["name"] for t in dap.threads()}
        assert "waiting on tile.tpop_from_aiv" in names[aic]  # still waiting: nothing pushed yet
    # one statement back on the lane (a replay of the run: the AIC waits on its pipe again)
    dap.request("stepBack", {"threadId": aiv})
    ev = stopped(dap, "step")
    assert ev["threadId"] == aiv and dap.stack(aiv)[0]["line"] == e_line
    assert "waiting on tile.tpop_from_aiv" in {t["id"]: t["name"] for t in dap.threads()}[aic]
    dap.request("next", {"threadId": aiv})
    stopped(dap, "step")
    frames = dap.stack(aiv)
    assert frames[0]["line"] == f_line
    f = dap.locals(frames[0]["id"])["f__tile"]
    e = dap.locals(frames[0]["id"])["e__tile"]
    assert torch.allclose(tile_values(dap, f), tile_values(dap, e) + 1.0, atol=1e-5)
    # step out of the lane: the AIC takes the pushed tile, the orchestration's call ends
    dap.request("stepOut", {"threadId": aiv})
    ev = stopped(dap, "step")
    assert ev["threadId"] == 1
    assert dap.stack(1)[0]["line"] == line_of(prog, "out__ssa_v1: pl.Tensor[[32, 64], pl.FP32] = self.pp(")


# ---------------------------------------------------------------------- exception stops

NAN = """# pypto.program: MakesNaN
import pypto.language as pl

@pl.program
class MakesNaN:
    @pl.function(type=pl.FunctionType.InCore, level=pl.Level.CHIP_DIE, role=pl.Role.SubWorker)
    def k(x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [0, 0], [16, 32], [16, 32], target_memory=pl.Mem.Vec)
        b__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.adds(a__tile, -0.5)
        c__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.sqrt(b__tile)
        d__tile: pl.Tile[[16, 32], pl.FP32, pl.Mem.Vec] = pl.tile.muls(c__tile, 2.0)
        out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = pl.tile.store(d__tile, [0, 0], out)
        return out__ssa_v1
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32], out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        out__ssa_v1: pl.Tensor[[16, 32], pl.FP32] = self.k(x, out)
        return out__ssa_v1
"""


def test_stop_on_the_first_nan(dap: DapClient, tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    prog = tmp_path / "d" / "00_frontend.py"
    prog.write_text(NAN)
    x = torch.rand(16, 32)  # in [0, 1): x - 0.5 is negative about half the time
    x[0, 0] = 0.25
    torch.save({"x": x, "out": torch.zeros(16, 32)}, tmp_path / "in.pt")
    torch.save({"out": torch.sqrt(x - 0.5) * 2}, tmp_path / "exp.pt")
    dap.start({"program": str(prog), "inputs": str(tmp_path / "in.pt"), "expected": str(tmp_path / "exp.pt"), "stopOnNaN": True})
    ev = stopped(dap, "exception")
    assert ev["description"] == "NaN / Inf" and "c__tile" in ev["text"]
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line_of(prog, "c__tile: pl.Tile")
    c = dap.locals(frames[0]["id"])["c__tile"]
    n_nan = int(torch.isnan(torch.sqrt(x - 0.5)).sum())
    assert f"NaN {n_nan}" in c["value"]
    # the NaN filter off: the run goes to its end
    dap.request("setExceptionBreakpoints", {"filters": []})
    dap.request("continue", {"threadId": ev["threadId"]})
    dap.wait_event("terminated")


def test_stop_on_the_first_difference_at_the_injected_line(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "broken_elementwise") / "11_after_ConvertTensorToTileOps.py"
    dap.start({"program": str(prog), "stopOnFirstDifference": True})
    ev = stopped(dap, "exception")
    assert ev["description"] == "first difference" and "y_chunk__tile" in ev["text"] and "09_after_OutlineIncoreScopes" in ev["text"]
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line_of(prog, "y__ssa_v0, [0, 0]") == 10
    assert "iteration 2" in frames[0]["name"]  # the first chunk reads the right rows
    y = dap.locals(frames[0]["id"])["y_chunk__tile"]
    inputs = torch.load(EXAMPLES / "elementwise/golden/inputs.pt")
    delta = float((inputs["y"][:32] - inputs["y"][32:]).abs().max())
    assert float(y["value"].split("|Δ| ")[1]) == pytest.approx(delta, rel=1e-4)
    kids = {k["name"]: k for k in dap.variables(y["variablesReference"])}
    assert torch.allclose(tile_values(dap, kids["previous pass"]), inputs["y"][32:].double(), atol=1e-5)
    # the tile as an error map (the VS Code extension's picture), against the previous pass
    m = dap.request("pyptoErrorMap", {"expression": "y_chunk__tile", "frameId": frames[0]["id"]})["body"]
    assert m["against"] == "the previous pass" and m["maps"][0]["shape"] == [32, 128]
    assert m["maps"][0]["max_abs_diff"] == pytest.approx(delta, rel=1e-4) and m["maps"][0]["bad_elements"] > 0


def test_stop_on_a_memory_finding(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "broken_memory") / "35_after_AllocateMemoryAddr.py"
    dap.start({"program": str(prog), "stopOnFinding": True})
    ev = stopped(dap, "exception")
    assert ev["description"] == "memory overwrite" and "y_chunk__tile" in ev["text"]
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line_of(prog, "prod__tile: pl.Tile") == 16
    mem = {m["name"]: m for m in dap.scope(frames[0]["id"], "Memory")}
    vec = next(m for n, m in mem.items() if n.startswith("Vec"))
    rows = {r["name"]: r["value"] for r in dap.variables(vec["variablesReference"])}
    assert rows["y_chunk__tile"].startswith("[32768, 49152)") and rows["t__tile"].startswith("[32768, 49152)")
    assert "findings" in mem


OOB = """# pypto.program: oob
import pypto.language as pl

@pl.program
class oob:
    @pl.function(type=pl.FunctionType.AIV, level=pl.Level.AIV, role=pl.Role.SubWorker)
    def k(x: pl.Tensor[[20, 16], pl.FP32], out: pl.Out[pl.Tensor[[20, 16], pl.FP32]]) -> pl.Tensor[[20, 16], pl.FP32]:
        t0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.load(x, [8, 0], [16, 16], [16, 16], target_memory=pl.Mem.Vec)
        u0: pl.Tile[[16, 16], pl.FP32, pl.Mem.Vec] = pl.tile.adds(t0, 1.0)
        s0: pl.Tensor[[20, 16], pl.FP32] = pl.tile.store(u0, [0, 0], out)
        return out
    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)
    def main(self, a: pl.Tensor[[20, 16], pl.FP32], c: pl.Out[pl.Tensor[[20, 16], pl.FP32]]) -> pl.Tensor[[20, 16], pl.FP32]:
        c1: pl.Tensor[[20, 16], pl.FP32] = self.k(a, c, attrs={"arg_directions": [pl.adir.input, pl.adir.output_existing]})
        return c1
"""


def test_stop_on_a_sanitizer_finding(dap: DapClient, tmp_path: Path) -> None:
    """A window past its tensor's end (the sanitizer, docs/sanitizer.md) stops the run on its line."""
    (tmp_path / "d").mkdir()
    prog = tmp_path / "d" / "00_frontend.py"
    prog.write_text(OOB)
    a = torch.arange(320, dtype=torch.float32).reshape(20, 16)
    torch.save({"a": a, "c": torch.zeros(20, 16)}, tmp_path / "in.pt")
    torch.save({"c": a + 1}, tmp_path / "exp.pt")
    dap.start({"program": str(prog), "inputs": str(tmp_path / "in.pt"), "expected": str(tmp_path / "exp.pt"), "stopOnFinding": True})
    ev = stopped(dap, "exception")
    assert ev["description"] == "sanitizer out-of-bounds" and "tile.load" in ev["text"], ev
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line_of(prog, "t0: pl.Tile") == 8


def test_stop_on_a_deadlock(dap: DapClient, tmp_path: Path) -> None:
    dumps = case(tmp_path, "mixed_matmul")
    prog = dumps / "24_after_SplitVectorKernel.py"
    prog.write_text(re.sub(r"\n\s*pl\.tile\.tpush_to_aiv\(.*\)", "", prog.read_text()))
    dap.start({"program": str(prog)}, exceptions=["deadlock"])
    ev = stopped(dap, "exception")
    assert ev["description"] == "deadlock" and "tpop_from_aic" in ev["text"]
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert "waiting on tile.tpop_from_aic" in names[ev["threadId"]] and names[ev["threadId"]].startswith("AIV0")
    assert dap.stack(ev["threadId"])[0]["line"] == line_of(prog, "tpop_from_aic")
    dap.request("continue", {"threadId": ev["threadId"]})
    dap.wait_event("terminated")
    out = "".join(e["body"].get("output", "") for e in dap.seen if e["event"] == "output")
    assert "deadlock" in out


# ---------------------------------------------------------------------- a client that never saw the dump

FIRST_ASSIGNMENT = re.compile(r"^\s+(\w+)\s*:\s*pl\.[^=]*=\s*pl\.")


def first_assignment(path: Path) -> tuple[int, str]:
    for i, text in enumerate(path.read_text().splitlines(), 1):
        m = FIRST_ASSIGNMENT.match(text)
        if m:
            return i, m.group(1)
    raise AssertionError(path)


def any_dumps() -> list[tuple[str, str, bool]]:
    out = []
    for folder in sorted(p for p in EXAMPLES.iterdir() if (p / "passes_dump").is_dir()):
        files = sorted((folder / "passes_dump").glob("*.py"))
        out.append((folder.name, files[-1].name, True))
        out.append((folder.name, files[len(files) // 2].name, False))
    return out


@pytest.mark.parametrize(("folder", "dump", "goldens"), any_dumps())
def test_a_client_that_never_saw_the_dump(tmp_path: Path, folder: str, dump: str, goldens: bool) -> None:
    """Any dump plus inputs/expected, or nothing at all (differential): the first assignment's
    line stops the run there, with that name among the Locals."""
    shutil.copytree(EXAMPLES / folder / "passes_dump", tmp_path / "passes_dump")  # no pypto-lsp.toml: nothing to find
    prog = tmp_path / "passes_dump" / dump
    launch: dict[str, Any] = {"program": str(prog)}
    gold = (
        EXAMPLES
        / {"broken_elementwise": "elementwise", "broken_memory": "elementwise", "broken_softmax": "softmax"}.get(folder, folder)
        / "golden"
    )
    if goldens and (gold / "inputs.pt").is_file():
        launch.update(inputs=str(gold / "inputs.pt"), expected=str(gold / "expected.pt"))
    line, name = first_assignment(prog)
    c = DapClient(cwd=tmp_path)
    try:
        if folder == "gather_rows" and "inputs" not in launch:
            # its index table cannot be synthesized: the case's config says what it is
            shutil.copy(EXAMPLES / folder / "pypto-lsp.toml", tmp_path / "pypto-lsp.toml")
        c.start(launch, breakpoints=[line])
        ev = stopped(c, "breakpoint")
        frames = c.stack(ev["threadId"])
        assert frames[0]["line"] == line
        assert name in c.locals(frames[0]["id"])
    finally:
        c.close()


def test_bad_launches_are_answered_not_crashed(dap: DapClient, tmp_path: Path) -> None:
    dap.request("initialize", {"adapterID": "pypto"})
    r = dap.request("launch", {"program": str(tmp_path / "missing.py")}, ok=False)
    assert not r["success"] and "no such dump file" in r["message"]
    bad = tmp_path / "d" / "00_frontend.py"
    bad.parent.mkdir()
    bad.write_text("# pypto.program: X\nimport pypto.language as pl\n@pl.program\nclass X:\n    def f(:\n")
    r = dap.request("launch", {"program": str(bad)}, ok=False)
    assert not r["success"] and "line" in r["message"]
    r = dap.request("stackTrace", {"threadId": 1}, ok=False)
    assert not r["success"]
    assert dap.request("frobnicate", ok=False)["success"] is False
    # goldens that do not fit the entry: said at launch, with the parameter's name
    other = case(tmp_path, "softmax") / "32_after_InitMemRef.py"
    gold = EXAMPLES / "elementwise" / "golden"
    r = dap.request("launch", {"program": str(other), "inputs": str(gold / "inputs.pt"), "expected": str(gold / "expected.pt")}, ok=False)
    assert not r["success"] and "scores" in r["message"], r
    # still alive: a good launch works
    prog = case(tmp_path, "elementwise") / "04_after_ConvertToSSA.py"
    dap.request("launch", {"program": str(prog), "stopOnEntry": True})
    dap.wait_event("initialized")
    dap.request("configurationDone")
    ev = stopped(dap, "entry")
    assert dap.stack(ev["threadId"])[0]["line"] > 0


def test_stops_in_a_kernel(dap: DapClient, tmp_path: Path) -> None:
    """A breakpoint on a kernel's first assignment (examples/mixed_matmul: an AIC kernel of a
    cross-core group) stops on that core's thread with the value among its Locals."""
    prog = sorted((case(tmp_path, "mixed_matmul")).glob("*.py"))[-1]
    line, name = first_assignment(prog)
    dap.start({"program": str(prog)}, breakpoints=[line])
    ev = stopped(dap, "breakpoint")
    frames = dap.stack(ev["threadId"])
    assert frames[0]["line"] == line and name in dap.locals(frames[0]["id"])
    thread = next(t["name"] for t in dap.threads() if t["id"] == ev["threadId"])
    assert thread.startswith("AIC · mm_scale_aic"), thread


def test_entry_next_pause_and_step_out(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "elementwise") / "11_after_ConvertTensorToTileOps.py"
    dap.start({"program": str(prog), "stopOnEntry": True})
    ev = stopped(dap, "entry")
    kernel = ev["threadId"]
    names = {t["id"]: t["name"] for t in dap.threads()}
    assert names[kernel] == "InCore · exp_add_mul_incore_0 · task 1"
    assert dap.stack(kernel)[0]["line"] == line_of(prog, "for r__idx_v0")
    seen = []
    for _ in range(3):  # the for line binds its iter_args too (one stop each), then the body
        dap.request("next", {"threadId": kernel})
        stopped(dap, "step")
        seen.append(dap.stack(kernel)[0]["line"])
        if seen[-1] != line_of(prog, "for r__idx_v0"):
            break
    assert seen[-1] == line_of(prog, "x_chunk__tile: pl.Tile"), seen
    dap.request("pause", {"threadId": kernel})
    dap.request("continue", {"threadId": kernel})
    stopped(dap, "pause")
    assert dap.stack(kernel)[0]["line"] == line_of(prog, "y_chunk__tile: pl.Tile")
    dap.request("stepOut", {"threadId": kernel})
    ev = stopped(dap, "step")
    assert ev["threadId"] == 1
    frames = dap.stack(1)
    assert [f["name"] for f in frames] == ["exp_add_mul"] and frames[0]["line"] == line_of(prog, "= self.exp_add_mul_incore_0(")
    assert "out__rv_v2" in dap.locals(frames[0]["id"])


def test_step_back_reverse_continue_and_restart_replay_the_run(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "elementwise") / "11_after_ConvertTensorToTileOps.py"
    x_line, y_line, t_line = (line_of(prog, s) for s in ("x_chunk__tile: pl.Tile", "y_chunk__tile: pl.Tile", "t__tile: pl.Tile"))
    caps = dap.request("initialize", {"adapterID": "pypto"})["body"]
    assert caps["supportsStepBack"] and caps["supportsRestartRequest"]
    dap.request("launch", {"program": str(prog)})
    dap.wait_event("initialized")
    dap.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": [{"line": y_line}]})
    dap.request("configurationDone")
    inputs = torch.load(EXAMPLES / "elementwise/golden/inputs.pt")

    def top() -> tuple[int, str, dict[str, Any]]:
        f = dap.stack(tid)[0]
        return f["line"], f["name"], dap.locals(f["id"])

    tid = stopped(dap, "breakpoint")["threadId"]
    dap.request("next", {"threadId": tid})
    stopped(dap, "step")
    assert top()[0] == t_line
    dap.request("stepBack", {"threadId": tid})
    ev = stopped(dap, "step")
    assert ev["threadId"] == tid and ev.get("description") == "stepped back"
    line, name, loc = top()
    assert line == y_line and "iteration 1" in name and "t__tile" not in loc
    assert torch.allclose(tile_values(dap, loc["y_chunk__tile"]), inputs["y"][:32].double(), atol=1e-5)
    # on to the second iteration's breakpoint, one statement back, then back to the first hit
    dap.request("continue", {"threadId": tid})
    stopped(dap, "breakpoint")
    assert "iteration 2" in top()[1]
    dap.request("stepBack", {"threadId": tid})
    stopped(dap, "step")
    line, name, loc = top()
    assert line == x_line and "iteration 2" in name
    assert torch.allclose(tile_values(dap, loc["x_chunk__tile"]), inputs["x"][32:].double(), atol=1e-5)
    dap.request("reverseContinue", {"threadId": tid})
    stopped(dap, "step")
    line, name, _ = top()
    assert line == y_line and "iteration 1" in name
    # restart: the run again from its start, to the first breakpoint hit
    dap.request("continue", {"threadId": tid})
    stopped(dap, "breakpoint")
    dap.request("restart", {})
    stopped(dap, "breakpoint")
    line, name, _ = top()
    assert line == y_line and "iteration 1" in name
    dap.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": []})
    dap.request("continue", {"threadId": tid})
    dap.wait_event("terminated")


def test_restart_frame_replays_to_the_start_of_the_call(dap: DapClient, tmp_path: Path) -> None:
    prog = case(tmp_path, "elementwise") / "11_after_ConvertTensorToTileOps.py"
    loop_line, y_line = line_of(prog, "for r__idx_v0"), line_of(prog, "y_chunk__tile: pl.Tile")
    caps = dap.request("initialize", {"adapterID": "pypto"})["body"]
    assert caps["supportsRestartFrame"]
    dap.request("launch", {"program": str(prog)})
    dap.wait_event("initialized")
    dap.request("setBreakpoints", {"source": {"path": str(prog)}, "breakpoints": [{"line": y_line, "hitCondition": "2"}]})
    dap.request("configurationDone")
    tid = stopped(dap, "breakpoint")["threadId"]
    top = dap.stack(tid)[0]
    assert "iteration 2" in top["name"]
    dap.request("restartFrame", {"frameId": top["id"]})
    ev = stopped(dap, "step")
    f = dap.stack(ev["threadId"])[0]
    assert f["line"] == loop_line, f  # the first statement of the kernel call: its loop, first time round
    r = dap.request("restartFrame", {"frameId": 999999}, ok=False)
    assert not r["success"]
