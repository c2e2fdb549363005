"""Differential mode: no goldens needed, the folder's earliest dump is the reference.

Without golden tensors, the first dump of a ``passes_dump/`` folder (``00_frontend.py``,
the program as written) computes what every later pass must still compute. The entry's
parameters are synthesized from their declared types: floating point from a standard
normal distribution (drawn in FP32, rounded to the parameter's dtype), ``pl.Out`` buffers
zeroed, one seeded generator per parameter (its name and the seed), so the same folder
gets the same inputs on every machine. The standard deviation is 1/sqrt(last dimension) for
matrices and higher (a fan-in scale: a chain of matmuls stays of order 1 and low-precision
rounding stays relative), 1 for vectors and scalars; ``name = {mean = 0, std = 0.5}`` overrides it. Integer, index and boolean inputs (block tables,
lengths, configs) and dynamic dimensions cannot be guessed: they come from the case's
``[cases.generate]`` table in ``pypto-lsp.toml``::

    [cases.generate]
    block_table = {low = 0, high = 4}   # uniform integers in [low, high)
    lengths = [16, 32, 48, 64]          # the values, reshaped to the parameter's shape
    config = "golden/config.pt"         # a tensor, or a dict holding one under the name
    N = 128                             # a dynamic dimension (or a scalar parameter)
    x = {mean = 0.0, std = 0.5}         # a float input from another normal distribution

Otherwise :class:`GenerateError` names every parameter that needs values, once.

The earliest dump is run once on those inputs; the entry's outputs after the run
(``pl.Out``/``pl.InOut`` parameters, any parameter the run changed, and what it returns
when that is no parameter: ``return`` / ``return.0`` ..., see :mod:`.returned`) are the
expected values for every file of the folder, the first included. The pair is cached on disk
(keyed by the normalised frontend text, the entry, the seed and the table), next to the
per-file results, which are keyed by the tensors themselves as usual.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from ..analysis.index_inputs import IndexRange, input_ranges
from ..analysis.int_inputs import IntRange, integer_ranges
from ..exec.stored_dtypes import representable
from ..exec.values import DTYPES
from ..ir.model import Const, Name, Program, ScalarType, TensorType, TileType
from ..ir.parser import read_dump
from .config import earliest_dump
from .engine import ENGINE_VERSION, SSA_SUFFIX, compile_text, run_text
from .folders import cache_dir, normalise
from .golden import GoldenError
from .returned import is_return_key

DEFAULT_SEED = 0


class GenerateError(GoldenError):
    """Parameters whose values cannot be synthesized; the message names each, and what to write."""


class DifferentialError(GoldenError):
    """The earliest dump cannot serve as the reference (it does not parse or run)."""


@dataclass(slots=True)
class Reference:
    """Synthesized inputs and the earliest dump's outputs on them: the expected values."""

    inputs: dict[str, torch.Tensor]
    expected: dict[str, torch.Tensor]
    frontend: Path
    seed: int
    # parameters taken from [cases.generate], and integer inputs drawn from the range their uses allow
    generated: list[str] = field(default_factory=list)
    cached: bool = False
    seconds: float = 0.0
    given: str | None = None  # the input bundle the reference ran on (an empty expected bundle), else synthesized

    @property
    def label(self) -> str:
        """What results are compared with, as lenses and the CLI show it."""
        return f"{self.frontend.stem} (no goldens)"

    def describe(self) -> str:
        if self.given is not None:
            return f"{self.frontend.name} run on the inputs of {self.given} (the expected bundle holds no tensors)"
        gen = f"; from [cases.generate] or the program's use of them: {', '.join(self.generated)}" if self.generated else ""
        return f"{self.frontend.name} run on synthesized inputs (no goldens; seed {self.seed}{gen})"

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "frontend",
            "label": self.label,
            "file": str(self.frontend),
            "seed": self.seed,
            "inputs": sorted(self.inputs),
            "expected": sorted(self.expected),
            "generated": self.generated,
        }


def goldens_json(inputs: str | Path | None, expected: str | Path | None) -> dict[str, Any]:
    """The ``compared_with`` entry of a run against golden bundles."""
    return {
        "kind": "goldens",
        "label": "goldens",
        "inputs": str(inputs) if inputs else None,
        "expected": str(expected) if expected else None,
    }


# ---------------------------------------------------------------------- synthesis


def _lookup(generate: Mapping[str, Any], name: str) -> tuple[str, Any] | None:
    for cand in (name, SSA_SUFFIX.sub("", name), name.split("__")[0] if "__" in name.strip("_") else name):
        if cand in generate:
            return cand, generate[cand]
    return None


def _param_seed(seed: int, name: str) -> torch.Generator:
    # one generator per parameter: adding a parameter does not change the others' values
    return torch.Generator().manual_seed((seed * 1_000_003 + zlib.crc32(name.encode())) % (2**63))


def _shape(ptype: TensorType | TileType, generate: Mapping[str, Any], pname: str, missing: list[str]) -> list[int] | None:
    dims: list[int] = []
    for d in ptype.shape:
        if isinstance(d, Const) and isinstance(d.value, int) and not isinstance(d.value, bool):
            dims.append(d.value)
        elif isinstance(d, Name) and isinstance(generate.get(d.id), int) and not isinstance(generate.get(d.id), bool):
            dims.append(int(generate[d.id]))
        elif isinstance(d, Name):
            missing.append(f"dynamic dimension '{d.id}' of '{pname}' (give its size: {d.id} = 128)")
            return None
        else:
            missing.append(f"'{pname}': a shape dimension that is not a constant")
            return None
    return dims


def _std(shape: list[int]) -> float:
    """1/sqrt(last dimension) for a matrix or higher (a fan-in scale: a chain of matmuls stays of
    order 1, where BF16/FP16 rounding is relative, not hundreds); 1 for vectors and scalars."""
    return 1.0 / math.sqrt(shape[-1]) if len(shape) >= 2 and shape[-1] > 0 else 1.0


def _from_spec(spec: Any, key: str, shape: list[int], dtype: torch.dtype, gen: torch.Generator, where: str) -> torch.Tensor:
    """A tensor of ``shape``/``dtype`` from one ``[cases.generate]`` value."""
    if isinstance(spec, dict) and set(spec) <= {"mean", "std"} and spec:
        mean, std = spec.get("mean", 0.0), spec.get("std", 1.0)
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in (mean, std)) or std < 0:
            raise GenerateError(f"{where}: '{key}' = {{mean, std}} needs numbers, std >= 0, got {spec!r}")
        return (torch.randn(shape, generator=gen, dtype=torch.float64) * std + mean).to(dtype)
    if isinstance(spec, dict):
        low, high = spec.get("low", 0), spec.get("high")
        if not isinstance(low, int) or not isinstance(high, int) or high <= low:
            raise GenerateError(f"{where}: '{key}' = {{low, high}} needs integers with low < high, got {spec!r}")
        if dtype.is_floating_point:
            return (torch.rand(shape, generator=gen, dtype=torch.float64) * (high - low) + low).to(dtype)
        return torch.randint(low, high, shape, generator=gen, dtype=torch.int64).to(dtype)
    if isinstance(spec, list):
        values = torch.tensor(spec, dtype=torch.float64 if any(isinstance(v, float) for v in spec) else torch.int64)
        n = 1
        for s in shape:
            n *= s
        if values.numel() == n:
            return values.reshape(shape).to(dtype)
        if values.numel() == 0:
            raise GenerateError(f"{where}: '{key}' = [] gives no values")
        # fewer or more values than elements: draw from them
        idx = torch.randint(0, values.numel(), shape, generator=gen)
        return values[idx].to(dtype)
    if isinstance(spec, str):
        from .golden import GoldenError, load_bundle

        p = Path(spec)
        try:
            if p.suffix == ".safetensors":
                bundle = load_bundle(p)
                t: Any = bundle.get(key)
            else:
                data = torch.load(str(p), map_location="cpu", weights_only=True)
                t = data.get(key) if isinstance(data, Mapping) else data
        except (OSError, GoldenError, RuntimeError, ValueError) as exc:
            raise GenerateError(f"{where}: '{key}' = {spec!r}: cannot read it: {exc}") from exc
        if not isinstance(t, torch.Tensor):
            raise GenerateError(f"{where}: '{key}' = {spec!r} holds no tensor (nor a dict with '{key}')")
        if list(t.shape) != shape and t.numel() == 1 and not shape:
            t = t.reshape(())
        if list(t.shape) != shape:
            raise GenerateError(f"{where}: '{key}' from {spec!r} has shape {list(t.shape)}, the entry declares {shape}")
        return t.to(dtype)
    if isinstance(spec, bool | int | float):
        return torch.full(shape, spec, dtype=dtype)
    raise GenerateError(f"{where}: '{key}' must be {{low = , high = }}, [values], a .pt path or a number, got {spec!r}")


def _rank_dims(fn: Any, generate: Mapping[str, Any]) -> Mapping[str, Any]:
    """A HOST entry (a multi-rank program) takes stacked ``[N_RANKS, ...]`` inputs: a dynamic leading
    dim nothing gives is the rank count, :data:`pypto_lsp.exec.ranks.DEFAULT_RANKS` (the case's
    ``ranks`` key sets the world's size when the dump runs)."""
    from ..exec.ranks import DEFAULT_RANKS

    if (fn.level or "").upper() != "HOST":
        return generate
    extra: dict[str, Any] = {}
    for p in fn.params:
        t = p.type
        if isinstance(t, TensorType | TileType) and t.shape and isinstance(t.shape[0], Name) and t.shape[0].id not in generate:
            extra[t.shape[0].id] = DEFAULT_RANKS
    return {**generate, **extra} if extra else generate


def synthesize(
    program: Program, entry: str, generate: Mapping[str, Any] | None = None, seed: int = DEFAULT_SEED, where: str = "[cases.generate]"
) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Inputs for every parameter of ``entry`` (by source name) and the names taken from ``generate``.

    Raises :class:`GenerateError` naming every parameter that needs values, in one message.
    """
    generate = generate or {}
    fn = program.function(entry)
    assert fn is not None
    generate = _rank_dims(fn, generate)
    out: dict[str, torch.Tensor] = {}
    used: list[str] = []
    inferred: list[str] = []  # integer inputs drawn from the range their uses allow (analysis.int_inputs)
    missing: list[str] = []
    indices = input_ranges(program, entry)  # integer inputs the program's gathers/scatters say the range of
    ranges = integer_ranges(program, entry)  # the others: offsets, element indices, loop bounds, data
    for p in fn.params:
        key = SSA_SUFFIX.sub("", p.name)
        t = p.type
        spec = _lookup(generate, p.name)
        shape: list[int] = []
        if isinstance(t, ScalarType):
            dtype = DTYPES.get(t.dtype.rsplit(".", 1)[-1].upper(), torch.float32)
        elif isinstance(t, TensorType | TileType):
            dtype = DTYPES.get(t.dtype.rsplit(".", 1)[-1].upper(), torch.float32)
            dims = _shape(t, generate, p.name, missing)
            if dims is None:
                continue
            shape = dims
        else:
            missing.append(f"'{p.name}' ({type(t).__name__ if t is not None else 'no type'}: nothing to synthesize from)")
            continue
        gen = _param_seed(seed, key)
        if spec is not None:
            out[key] = _from_spec(spec[1], spec[0], shape, dtype, gen, where)
            used.append(key)
        elif p.direction == "out" and not isinstance(t, ScalarType):
            out[key] = torch.zeros(shape, dtype=dtype)
        elif dtype.is_floating_point:
            drawn = torch.randn(shape, generator=gen, dtype=torch.float32) * _std(shape)
            out[key] = representable(t.dtype.rsplit(".", 1)[-1].upper(), drawn).to(dtype)  # FP8/FP4/E8M0: values they hold
        elif p.name in indices and not isinstance(t, ScalarType):
            out[key] = from_range(indices[p.name], shape, dtype, gen)
        elif isinstance(ranges.get(p.name), IntRange):
            r = ranges[p.name]
            assert isinstance(r, IntRange)
            out[key] = torch.randint(r.low, r.high + 1, shape, generator=gen, dtype=torch.int64).to(dtype)
            inferred.append(f"{key} in [{r.low}, {r.high}] ({'; '.join(r.why[:3])})")
        else:
            kind = "scalar" if isinstance(t, ScalarType) else f"tensor {shape}"
            dt = t.dtype.rsplit(".", 1)[-1]
            why = ranges.get(p.name)
            reason = why if isinstance(why, str) else "integer values cannot be guessed"
            missing.append(f"'{p.name}' ({dt} {kind}: {reason}; add to {where}: {key} = {{low = 0, high = 4}})")
    if missing:
        raise GenerateError(
            f"cannot synthesize inputs for '{entry}' without goldens: {'; '.join(missing)}. "
            f"Give them in the case's {where} table "
            '(name = {low = 0, high = 4} | [values] | "file.pt" | number), or give golden tensors'
            + (
                ""
                if where != "[cases.generate]"
                else '; e.g. a pypto-lsp.toml beside passes_dump/: [[cases]] dumps = "passes_dump", then [cases.generate]'
            )
        )
    return out, used + inferred


def from_range(r: IndexRange, shape: list[int], dtype: torch.dtype, gen: torch.Generator) -> torch.Tensor:
    """Values in ``[r.low, r.high)``, without repeats where ``r.distinct`` asks and the range allows."""
    span = r.high - r.low
    n = 1
    for d in shape:
        n *= d
    if r.distinct == "all" and n <= span:
        return (torch.randperm(span, generator=gen)[:n] + r.low).reshape(shape).to(dtype)
    if r.distinct == "rows" and shape and shape[-1] <= span:
        rows = [torch.randperm(span, generator=gen)[: shape[-1]] for _ in range(n // max(shape[-1], 1))]
        return (torch.stack(rows).reshape(shape) + r.low).to(dtype) if rows else torch.zeros(shape, dtype=dtype)
    return torch.randint(r.low, r.high, shape, generator=gen, dtype=torch.int64).to(dtype)


# ---------------------------------------------------------------------- the reference


def _cache_path(key: str) -> Path:
    return cache_dir() / "reference" / f"{key}.pt"


def _key(text: str, entry: str | None, seed: int, generate: Mapping[str, Any], exact: bool = False) -> str:
    files = []
    for v in generate.values():
        if isinstance(v, str):
            try:
                st = Path(v).stat()
                files.append(f"{v}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                files.append(v)
    h = hashlib.blake2b(digest_size=20)
    for part in (
        "reference",
        ENGINE_VERSION,
        torch.__version__,
        entry or "",
        str(seed),
        json.dumps(generate, sort_keys=True, default=str),
        "|".join(files),
        normalise(text),
        *(("exact",) if exact else ()),  # batched loops round differently (keys without it stay as they were)
    ):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def frontend_outputs(
    frontend: Path,
    inputs: Mapping[str, torch.Tensor],
    *,
    entry: str | None = None,
    timeout: float | None = None,
    text: str | None = None,
    exact: bool = False,
    max_alloc: int | None = None,
) -> dict[str, torch.Tensor]:
    """Run ``frontend`` on ``inputs``: the entry's ``pl.Out``/``pl.InOut`` parameters and any
    parameter the run changed, after it (the expected values of every later pass)."""
    if text is None:
        text = read_dump(frontend).decode("utf-8-sig", errors="replace")
    comp = compile_text(text, str(frontend), entry, exact=exact)
    if comp.error is not None or comp.program is None or comp.generated is None or comp.generated.entry is None:
        err = comp.error
        at = f" (line {err.line})" if err is not None and err.line else ""
        raise DifferentialError(f"{frontend.name} cannot be the reference{at}: {err.message if err is not None else 'no entry function'}")
    after: dict[str, torch.Tensor] = {}
    fr = run_text(text, inputs, {}, filename=str(frontend), entry=entry, timeout=timeout, keep=after, exact=exact, max_alloc=max_alloc)
    if fr.error is not None:
        at = f" (line {fr.error.line})" if fr.error.line else ""
        raise DifferentialError(f"{frontend.name} cannot be the reference: it does not run{at}: {fr.error.message}")
    fn = comp.program.function(comp.generated.entry)
    assert fn is not None
    outs = {SSA_SUFFIX.sub("", p.name) for p in fn.params if p.direction in ("out", "inout")}
    expected: dict[str, torch.Tensor] = {}
    for k, before in inputs.items():
        now = after.get(k)
        if now is None:
            continue
        if k in outs or now.shape != before.shape or not torch.equal(now, before):
            expected[k] = now.detach().clone()
    for k, now in after.items():
        if is_return_key(k) and k not in inputs:  # an entry that returns its result (validate.returned)
            expected[k] = now.detach().clone()
    return expected


def reference(
    files: list[Path],
    *,
    entry: str | None = None,
    generate: Mapping[str, Any] | None = None,
    seed: int | None = None,
    timeout: float | None = None,
    use_cache: bool = True,
    where: str = "[cases.generate]",
    exact: bool = False,
    max_alloc: int | None = None,
) -> Reference:
    """Synthesize inputs for the earliest dump of ``files`` and run it once: its outputs are expected."""
    t0 = time.perf_counter()
    generate = dict(generate or {})
    seed = DEFAULT_SEED if seed is None else seed
    frontend = earliest_dump(files)
    text = read_dump(frontend).decode("utf-8-sig", errors="replace")
    key = _key(text, entry, seed, generate, exact)
    path = _cache_path(key)
    if use_cache and path.is_file():
        try:
            data = torch.load(str(path), map_location="cpu", weights_only=True)
            return Reference(
                data["inputs"], data["expected"], frontend, seed, list(data.get("generated", [])), True, time.perf_counter() - t0
            )
        except Exception:  # a torn or foreign file: compute again
            pass
    comp = compile_text(text, str(frontend), entry, exact=exact)
    if comp.error is not None or comp.program is None or comp.generated is None or comp.generated.entry is None:
        err = comp.error
        at = f" (line {err.line})" if err is not None and err.line else ""
        msg = err.message if err is not None else "no entry function"
        raise DifferentialError(f"{frontend.name} cannot be the reference without goldens{at}: {msg}")
    inputs, used = synthesize(comp.program, comp.generated.entry, generate, seed, where)
    expected = frontend_outputs(frontend, inputs, entry=entry, timeout=timeout, text=text, exact=exact, max_alloc=max_alloc)
    ref = Reference(inputs, expected, frontend, seed, used, False, 0.0)
    if use_cache:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{id(ref)}.tmp")
            torch.save({"inputs": inputs, "expected": expected, "generated": used}, str(tmp))
            tmp.replace(path)
        except OSError:
            pass
    ref.seconds = time.perf_counter() - t0
    return ref


def on_inputs(
    files: list[Path],
    inputs: dict[str, torch.Tensor],
    given: str,
    *,
    entry: str | None = None,
    timeout: float | None = None,
    exact: bool = False,
    max_alloc: int | None = None,
) -> Reference:
    """The earliest dump of ``files`` run on golden ``inputs`` (from ``given``): the reference when the
    expected bundle beside them holds no tensors (a program that returns its result, say)."""
    t0 = time.perf_counter()
    frontend = earliest_dump(files)
    expected = frontend_outputs(frontend, inputs, entry=entry, timeout=timeout, exact=exact, max_alloc=max_alloc)
    return Reference(dict(inputs), expected, frontend, DEFAULT_SEED, seconds=time.perf_counter() - t0, given=given)


def for_case(
    files: list[Path],
    case: Any,
    *,
    entry: str | None,
    timeout: float | None,
    use_cache: bool = True,
    seed: int | None = None,
    exact: bool = False,
    max_alloc: int | None = None,
) -> Reference:
    """The reference for a :class:`.config.Case` (its ``generate`` table and ``seed``, unless ``seed`` is given)."""
    where = f"{case.source} [cases.generate]" if str(case.source).endswith(".toml") else "[cases.generate]"
    return reference(
        files,
        entry=entry,
        generate=getattr(case, "generate", None),
        seed=seed if seed is not None else getattr(case, "seed", None),
        timeout=timeout,
        use_cache=use_cache,
        where=where,
        exact=exact,
        max_alloc=max_alloc,
    )
