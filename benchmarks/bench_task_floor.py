"""What the qwen3 scope3 block would cost with its orchestrator loops run as one batch (issue 33).

    python benchmarks/bench_task_floor.py [--cases SUBSTR] [--repeat N]

The speed goal left open in issue 33 (the hidden-4096 last dump within 2x its golden) needs the
tasks of an orchestrator loop run as one batch rather than one by one (docs/speed.md, "Seventh
pass"). Before building that, this measures what it would buy and whether it keeps the bits:

* ``device order, batched``: the program's math written out in plain torch in the order the
  device computes it (each K chunk's FP32 product added in chunk order, the down projection's
  ``inout`` chain added task after task, casts rounding half away from zero), with every task of
  a loop computed at once: each K chunk's product for all the loop's output columns in one
  ``matmul``; the floor of such an executor (one torch thread, as the engine runs);
* ``engine run``: the last dump as the engine runs it today (values only, warm: compiled once);
* ``golden``: the fixture's formula, one thread, in this process;
* ``== --exact``: whether the batched math gives the engine's ``--exact`` output (every loop tile
  by tile) bit for bit, the proof that batching across tasks keeps the device's rounding; and the
  count of output elements where the engine's default (batched loops, docs/speed.md) differs.

The math follows the scope3 block's dumps (K chunk 128, output chunks of 64, as in every
size of the fixture); it is this one program's, written by hand, not a general executor. The scale
goldens are made by the fixtures' own ``make_goldens.py`` in a temporary folder. No asserts: this
measures, it does not judge.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_scale import CASES, SCALE, best_of, golden_math  # noqa: E402

K_CHUNK = 128  # the dumps' K chunk
OUT_CHUNK = 64  # their output chunks (o-projection, MLP, down projection)


def device_order_batched(t: dict[str, Any]) -> Any:
    """The scope3 block in the device's order of operations, every task of a loop at once."""
    import torch

    from pypto_lsp.exec.kernels.cast import _to_half

    def bf16(x: torch.Tensor) -> torch.Tensor:
        return _to_half(x, torch.bfloat16, "round")  # tile.cast(mode='round'): half away from zero

    f32 = torch.float32
    attn, hidden, wo, gamma = t["attn_out"], t["hidden_states"], t["wo"], t["post_rms_weight"]
    w_gate, w_up, w_down = t["w_gate"], t["w_up"], t["w_down"]
    rows, h = attn.shape
    inter = w_gate.shape[1]
    chunks = range(0, h, K_CHUNK)
    # o-projection: each task accumulates its 64 columns chunk by chunk; all tasks' columns at once
    acc = torch.zeros(rows, h, dtype=f32)
    for k0 in chunks:
        acc += attn[:, k0 : k0 + K_CHUNK].float() @ wo[k0 : k0 + K_CHUNK].float()
    resid1 = acc + hidden.float()
    # RMSNorm: squares summed per K chunk, the chunk sums added in order
    sq = torch.zeros(1, rows, dtype=f32)
    for k0 in chunks:
        x = resid1[:, k0 : k0 + K_CHUNK]
        sq = sq + (x * x).sum(-1, keepdim=True).reshape(1, rows)
    inv = torch.rsqrt(sq * (1.0 / h) + 1e-6)
    post = bf16(resid1 * inv.reshape(rows, 1) * gamma)
    # gate and up projections, chunk by chunk; SwiGLU; the BF16 chunk handed to the cube
    gate = torch.zeros(rows, inter, dtype=f32)
    up = torch.zeros(rows, inter, dtype=f32)
    for k0 in chunks:
        p = post[:, k0 : k0 + K_CHUNK].float()
        gate += p @ w_gate[k0 : k0 + K_CHUNK].float()
        up += p @ w_up[k0 : k0 + K_CHUNK].float()
    mlp = bf16(gate * torch.reciprocal(torch.exp(-gate) + 1.0) * up)
    # down projection: the inout chain, task after task (each task's product over every column)
    down = torch.zeros(rows, h, dtype=f32)
    for o0 in range(0, inter, OUT_CHUNK):
        down += mlp[:, o0 : o0 + OUT_CHUNK].float() @ w_down[o0 : o0 + OUT_CHUNK].float()
    return bf16(down + resid1)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=None, help="only cases whose name contains this")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import torch

    from pypto_lsp.validate import engine
    from pypto_lsp.validate.golden import load_bundle
    from pypto_lsp.validate.process_setup import configure_process

    configure_process()  # one intra-op thread, as every run of the engine
    print(f"load average at start: {os.getloadavg()[0]:.1f}; best of {args.repeat}, warm, one torch thread")
    print(f"{'case':<26} {'batched':>9} {'engine run':>10} {'golden':>9} {'x golden':>8} {'== --exact':>10} {'default differs':>15}")
    with tempfile.TemporaryDirectory(prefix="bench-task-floor-") as tmp:
        for name, case, _hidden in CASES:
            if (args.cases and args.cases not in name) or not case.is_dir():
                continue
            if (case / "tensors.pt").is_file():
                ins_p = case / "tensors.pt"
            else:
                out_dir = Path(tmp) / name
                subprocess.run([sys.executable, str(SCALE / "make_goldens.py"), name, str(out_dir)], check=True, capture_output=True)
                ins_p = out_dir / "tensors.pt"
            inputs = load_bundle(ins_p)
            text = sorted((case / "passes_dump").glob("*.py"))[-1].read_text()
            outs = {}
            for exact in (True, False):
                comp = engine.compile_text(text, memory=False, sanitize=False, exact=exact)
                run = engine.run(comp, inputs)
                if run.error is not None:
                    print(f"{name}: the engine failed: {run.error.message}")
                    return 1
                outs[exact] = run.tensors["out"].clone()
            comp = engine.compile_text(text, memory=False, sanitize=False)
            engine_wall, _ = best_of(lambda comp=comp, inputs=inputs: engine.run(comp, inputs), args.repeat)
            batched_wall, _ = best_of(lambda inputs=inputs: device_order_batched(inputs), args.repeat)
            gold_wall, _ = best_of(lambda inputs=inputs: golden_math(inputs), args.repeat)
            got = device_order_batched(inputs).view(torch.int16)
            same = torch.equal(got, outs[True].view(torch.int16))
            differs = int((outs[False].view(torch.int16) != outs[True].view(torch.int16)).sum())
            print(
                f"{name:<26} {batched_wall * 1e3:6.1f} ms {engine_wall:8.3f} s {gold_wall * 1e3:6.1f} ms"
                f" {batched_wall / gold_wall:7.2f}x {str(same):>10} {differs:>8} of {got.numel()}",
                flush=True,
            )
            del inputs, outs
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
