"""Issue 12, item 6, the part the static check cannot see: allocations whose size depends on a
runtime value (a dim bound from an input tensor's shape, a scalar parameter) and the temporaries
of kernels that allocate more than their result. Each reproducer runs the real CLI with a small
budget (nothing near the sizes of the sweep is ever allocated here) and shows the check that fires
on the line, with the exit status the CLI documents (1: something errored)."""

from __future__ import annotations

import re
from pathlib import Path

import torch

from pypto_lsp.exec.codegen import generate
from pypto_lsp.ir import alloc_static as budget
from pypto_lsp.ir.catalogue import lookup
from pypto_lsp.ir.parser import parse_text

from .conftest import cli, report

ORCH = "    @pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)\n"


def dump(name: str, signature: str, body: list[str], dynamic: str = "") -> str:
    head = f"# pypto.program: {name}\nimport pypto.language as pl\n\n"
    if dynamic:
        head += f'{dynamic} = pl.dynamic("{dynamic}")\n\n'
    lines = "".join(f"        {b}\n" for b in body)
    return f"{head}@pl.program\nclass {name}:\n{ORCH}    def main(self, {signature}:\n{lines}"


def line_of(text: str, needle: str) -> int:
    return next(i for i, ln in enumerate(text.splitlines(), 1) if needle in ln)


def case(tmp_path: Path, text: str, inputs: dict[str, torch.Tensor], expected: dict[str, torch.Tensor]) -> list[str]:
    (tmp_path / "passes_dump").mkdir()
    (tmp_path / "passes_dump" / "00_frontend.py").write_text(text)
    torch.save(inputs, tmp_path / "inputs.pt")
    torch.save(expected, tmp_path / "expected.pt")
    return [str(tmp_path / "passes_dump"), "--inputs", str(tmp_path / "inputs.pt"), "--expected", str(tmp_path / "expected.pt")]


# a dim bound from the input's shape: [M, M] FP32 is 64 MiB for M = 4096 (40 GB for M = 100000)
DYN_FROM_SHAPE = dump(
    "DynShape",
    "x: pl.Tensor[[M, 16], pl.FP32], out: pl.Out[pl.Tensor[[M, 16], pl.FP32]]) -> pl.Tensor[[M, 16], pl.FP32]",
    [
        "big: pl.Tensor[[M, M], pl.FP32] = pl.tensor.create([M, M], dtype=pl.FP32)",
        "y: pl.Tensor[[M, 16], pl.FP32] = pl.tensor.muls(x, 2.0)",
        "out: pl.Tensor[[M, 16], pl.FP32] = pl.tensor.assemble(out, y, [0, 0])",
        "return out",
    ],
    dynamic="M",
)

# a scalar parameter: [n, 1024] FP32 is 400 MB for n = 100000
DYN_FROM_SCALAR = dump(
    "DynScalar",
    "n: pl.Scalar[pl.INDEX], x: pl.Tensor[[4, 4], pl.FP32], out: pl.Out[pl.Tensor[[4, 4], pl.FP32]]) -> pl.Tensor[[4, 4], pl.FP32]",
    [
        "buf: pl.Tensor[[n, 1024], pl.FP32] = pl.tensor.create([n, 1024], dtype=pl.FP32)",
        "out: pl.Tensor[[4, 4], pl.FP32] = pl.tensor.assemble(out, pl.tensor.muls(x, 2.0), [0, 0])",
        "return out",
    ],
)

# a [1024, 1024] BF16 product: a 2 MiB result, but the kernel makes the FP32 product (4 MiB) first
MATMUL_TEMPS = dump(
    "MatmulTemps",
    "a: pl.Tensor[[1024, 64], pl.FP32], b: pl.Tensor[[64, 1024], pl.FP32], out: pl.Out[pl.Tensor[[1024, 1024], pl.BF16]]) "
    "-> pl.Tensor[[1024, 1024], pl.BF16]",
    [
        "c: pl.Tensor[[1024, 1024], pl.BF16] = pl.tensor.matmul(a, b, out_dtype=pl.BF16)",
        "out: pl.Tensor[[1024, 1024], pl.BF16] = pl.tensor.assemble(out, c, [0, 0])",
        "return out",
    ],
)


def test_a_dim_bound_from_an_input_shape_is_checked_before_the_allocation(tmp_path: Path) -> None:
    text = DYN_FROM_SHAPE
    prog = parse_text(text).program
    assert prog is not None
    # before: nothing about [M, M] is known statically, so only a run could say how big it is
    assert budget.over_budget(prog, 16 << 20) is None
    x = torch.randn(4096, 16)
    args = case(tmp_path, text, {"x": x, "out": torch.zeros(4096, 16)}, {"out": x * 2})
    # under a budget it fits, the dump runs and allocates the 64 MiB (as every run did before)
    ok = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", "1G")
    assert report(ok)["files"][0]["status"] == "pass" and ok.returncode == 0, ok.stderr
    p = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", "16M")
    err = report(p)["files"][0]["error"]
    assert err["kind"] == "alloc-budget" and err["line"] == line_of(text, "big:"), err
    assert "64.0 MiB" in err["message"] and "[4096, 4096]" in err["message"] and "16.0 MiB" in err["message"], err
    assert p.returncode == 1


def test_a_dim_from_a_scalar_parameter_is_checked_before_the_allocation(tmp_path: Path) -> None:
    text = DYN_FROM_SCALAR
    prog = parse_text(text).program
    assert prog is not None and budget.over_budget(prog, 16 << 20) is None
    x = torch.randn(4, 4)
    args = case(tmp_path, text, {"n": torch.tensor(100000), "x": x, "out": torch.zeros(4, 4)}, {"out": x * 2})
    p = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", "16M")
    err = report(p)["files"][0]["error"]
    assert err["kind"] == "alloc-budget" and err["line"] == line_of(text, "buf:"), err
    assert "[100000, 1024]" in err["message"] and "390.6 MiB" in err["message"], err
    assert p.returncode == 1


def test_kernel_temporaries_count_from_the_catalogue(tmp_path: Path) -> None:
    text = MATMUL_TEMPS
    spec = lookup("tensor.matmul")
    assert spec is not None and spec.temp_bytes > 0  # the one fact the check and the guard read
    prog = parse_text(text).program
    assert prog is not None
    # before (result bytes only): the 2 MiB result fits 3 MiB, but the FP32 product alone is 4 MiB
    assert 1024 * 1024 * 2 <= 3 << 20 < 1024 * 1024 * 4
    big = budget.over_budget(prog, 3 << 20)
    assert big is not None and big.bytes == 1024 * 1024 * (2 + spec.temp_bytes) and big.span.line == line_of(text, "c:")
    a, b = torch.randn(1024, 64), torch.randn(64, 1024)
    args = case(tmp_path, text, {"a": a, "b": b, "out": torch.zeros(1024, 1024, dtype=torch.bfloat16)}, {"out": (a @ b).to(torch.bfloat16)})
    p = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", "3M")
    err = report(p)["files"][0]["error"]
    assert err["kind"] == "alloc-budget" and err["line"] == line_of(text, "c:"), err
    assert f"{spec.temp_bytes} B/element of kernel temporaries" in err["message"], err
    assert p.returncode == 1
    ok = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", "64M")
    assert report(ok)["files"][0]["status"] == "pass", ok.stdout[-2000:]


def test_the_runtime_guard_sits_only_at_runtime_sized_allocations() -> None:
    """The hot path: a statically sized op gets no guard; a write into an existing tensor neither."""
    prog = parse_text(DYN_FROM_SHAPE).program
    assert prog is not None
    src = generate(prog).source
    guards = re.findall(r"_pl_ab\.check\(\(([^)]*)\), (_pl_k\d+)\)", src)
    assert [g[0] for g in guards] == ["M, M, ", "M, 16, "], src  # create and muls; not the assemble into out
    static = parse_text(MATMUL_TEMPS).program
    assert static is not None and "_pl_ab" not in generate(static).source


def test_a_guard_counts_the_kernel_temporaries_too(tmp_path: Path) -> None:
    """A dynamic-shaped matmul: the guard's bytes per element are the result's plus the catalogue's temporaries."""
    text = dump(
        "DynMatmul",
        "x: pl.Tensor[[M, 64], pl.FP32], w: pl.Tensor[[64, 64], pl.FP32], out: pl.Out[pl.Tensor[[M, 64], pl.BF16]]) "
        "-> pl.Tensor[[M, 64], pl.BF16]",
        [
            "c: pl.Tensor[[M, 64], pl.BF16] = pl.tensor.matmul(x, w, out_dtype=pl.BF16)",
            "out: pl.Tensor[[M, 64], pl.BF16] = pl.tensor.assemble(out, c, [0, 0])",
            "return out",
        ],
        dynamic="M",
    )
    spec = lookup("tensor.matmul")
    assert spec is not None
    x, w = torch.randn(8192, 64), torch.randn(64, 64)
    args = case(tmp_path, text, {"x": x, "w": w, "out": torch.zeros(8192, 64, dtype=torch.bfloat16)}, {"out": (x @ w).to(torch.bfloat16)})
    # result 1 MiB fits a 1.5 MiB budget; with the FP32 product it does not
    p = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", str(3 << 19))
    err = report(p)["files"][0]["error"]
    assert err["kind"] == "alloc-budget" and err["line"] == line_of(text, "c:"), err
    assert err["detail"]["bytes"] == 8192 * 64 * (2 + spec.temp_bytes) and err["detail"]["budget"] == 3 << 19, err
    assert p.returncode == 1


def test_a_window_past_the_end_of_its_source_is_checked_before_the_kernel_copies_it(tmp_path: Path) -> None:
    """A kernel makes this allocation itself: a ``tensor.slice`` that overhangs its source is a
    zero-padded copy of the whole window (a fuzzed ``[1, 1, 2**31]`` slice grew to 4.8 GB before
    its timeout). Its size is the op's operand, not a type, so neither the static check nor the
    generated guard saw it; the kernel now asks the run's budget first."""
    text = dump(
        "Overhang",
        "n: pl.Scalar[pl.INDEX], x: pl.Tensor[[4, 16], pl.FP32], out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]",
        [
            "s: pl.Tensor[[4, 16], pl.FP32] = pl.tensor.slice(x, [4, n], [0, 0])",
            "out: pl.Tensor[[4, 16], pl.FP32] = pl.tensor.assemble(out, s, [0, 0])",
            "return out",
        ],
    )
    prog = parse_text(text).program
    assert prog is not None and budget.over_budget(prog, 1 << 20) is None  # nothing typed is big
    x = torch.randn(4, 16)
    args = case(tmp_path, text, {"n": torch.tensor(1048576), "x": x, "out": torch.zeros(4, 16)}, {"out": x})
    p = cli("validate", *args, "--json", "--no-cache", "--no-localize", "--max-alloc", "1M")
    err = report(p)["files"][0]["error"]
    # before: the 16 MiB copy was made, then the shapes disagreed (shape-mismatch)
    assert err["kind"] == "alloc-budget" and err["line"] == line_of(text, "s:"), err
    assert "tensor.slice's window" in err["message"] and "[4, 1048576]" in err["message"] and "16.0 MiB" in err["message"], err
    assert p.returncode == 1
