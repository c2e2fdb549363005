"""Issue 35, items 6-9: the debugger's lifecycle. Restart after an edit says what it runs, a slow
previous pass never freezes the adapter, the memory model's write log is bounded, and dump
values named like the generated script's own names are shown."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

from tests.dap_client import ROOT, DapClient

ELEMENTWISE = ROOT / "examples" / "elementwise"
SLOW_LOOP = """            for k in pl.range(0, 100000000, 1):
                x_chunk: pl.Tensor[[32, 128], pl.FP32] = pl.tensor.slice(x, [32, 128], [0, 0])
"""


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(ELEMENTWISE, tmp_path / "elementwise")
    return tmp_path / "elementwise" / "passes_dump"


def _stopped(c: DapClient, reason: str) -> dict:
    while True:
        ev = c.wait_event("stopped", timeout=120)
        if ev["body"]["reason"] == reason:
            return ev["body"]


def test_restart_after_an_edit_says_it_replays_the_launch_text(tmp_path: Path) -> None:
    prog = _copy(tmp_path) / "04_after_ConvertToSSA.py"
    c = DapClient()
    try:
        c.start({"program": str(prog), "stopOnEntry": True})
        _stopped(c, "entry")
        prog.write_text(prog.read_text().replace("1.0)", "2.0)"))
        c.request("restart")
        _stopped(c, "entry")
        said = [e["body"]["output"] for e in c.seen if e.get("event") == "output"]
        assert any("changed on disk" in s for s in said), said
    finally:
        c.close()


def test_a_slow_previous_pass_does_not_freeze_the_adapter(tmp_path: Path) -> None:
    dumps = _copy(tmp_path)
    for f in dumps.glob("*.py"):
        if f.name not in ("00_frontend.py", "04_after_ConvertToSSA.py"):
            f.unlink()
    front = dumps / "00_frontend.py"
    front.write_text(
        front.read_text().replace("            for r in pl.range(0, 64, 32):\n", SLOW_LOOP + "            for r in pl.range(0, 64, 32):\n")
    )
    prog = dumps / "04_after_ConvertToSSA.py"
    line = next(i for i, t in enumerate(prog.read_text().splitlines(), 1) if t.strip().startswith("prod__ssa_v0"))
    c = DapClient()
    try:
        c.start({"program": str(prog)}, breakpoints=[line])  # x_chunk and y_chunk have partners by then
        ev = _stopped(c, "breakpoint")
        frame = c.stack(ev["threadId"])[0]
        t0 = time.monotonic()
        c.request(
            "variables",
            {"variablesReference": c.request("scopes", {"frameId": frame["id"]})["body"]["scopes"][0]["variablesReference"]},
            timeout=20,
        )
        c.request("threads", timeout=20)
        assert time.monotonic() - t0 < 20
        c.request("pause", timeout=20)
    finally:
        c.close()


def test_the_memory_write_log_is_bounded() -> None:
    from pypto_lsp.exec.memory import Session

    s = Session()
    cap = s.writes.cap if hasattr(s.writes, "cap") else None
    n = (cap or 1 << 18) + 1000
    for i in range(n):
        s.writes.append((None, i, "aiv"))  # type: ignore[arg-type]
    assert len(s.writes) == n  # write ids keep counting
    assert sum(1 for _ in s.writes.items) <= (cap or 0)  # type: ignore[union-attr]
    assert s.writes.get(n - 1) == (None, n - 1, "aiv") and s.writes.get(0) is None  # type: ignore[union-attr]


def test_dump_values_named_like_generated_names_are_shown(tmp_path: Path) -> None:
    dumps = _copy(tmp_path)
    prog = dumps / "04_after_ConvertToSSA.py"
    text = prog.read_text().replace("x_chunk__ssa_v0", "_pl_tr").replace("y_chunk__ssa_v0", "self_chunk")
    text = text.replace("prod__ssa_v0", "self").replace("def exp_add_mul(self,", "def exp_add_mul(self,")
    prog.write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if t.strip().startswith("self:"))
    c = DapClient()
    try:
        c.start({"program": str(prog)}, breakpoints=[line])
        ev = _stopped(c, "breakpoint")
        frame = c.stack(ev["threadId"])[0]
        names = c.locals(frame["id"])
        assert "_pl_tr" in names and "self" in names, sorted(names)
        r = c.request("evaluate", {"expression": "_pl_tr", "frameId": frame["id"]})
        assert r["body"]["result"].startswith("[32, 128] FP32")
        r = c.request("evaluate", {"expression": "self", "frameId": frame["id"]})
        assert r["body"]["result"].startswith("[32, 128] FP32")
    finally:
        c.close()
