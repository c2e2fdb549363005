"""Run pass dumps against golden tensors: one :class:`FileResult` per dump, never stopping early."""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch

from ..exec import codegen
from ..exec.codegen import CodegenError, GeneratedCode
from ..exec.observe import Observer
from ..exec.runtime import SAFE_BUILTINS
from ..exec.script_code import Block, compile_script, run_blocks
from ..exec.stored_dtypes import decode_stored_args, decode_stored_expected
from ..ir import diagnostics as D
from ..ir.alloc_budget import KIND as ALLOC_KIND
from ..ir.alloc_budget import Guard
from ..ir.alloc_budget import budget as alloc_budget
from ..ir.alloc_static import over_budget
from ..ir.check import check_program
from ..ir.memory import Hazard, MemoryPlan, findings_to_diagnostics, plan_program
from ..ir.model import Program, ScalarType, Span, TensorType, TileType, entry_function
from ..ir.parser import parse_text
from .config import DEFAULT_ATOL, DEFAULT_RTOL, time_limit
from .golden import GoldenError
from .lend import uint32_golden, uint32_keys
from .process_setup import one_intra_op_thread
from .report import ERROR, FAIL, FAILING_FINDINGS, PASS, RAN, ErrorInfo, FileResult, MemoryResult, TensorResult, hazards_of
from .returned import return_writes, returned_tensors
from .returned import settle as settle_returned
from .run_errors import error_info
from .run_thread import abandoned_runs
from .run_thread import run_with_timeout as _run_with_timeout

# results and references cached by an older engine are stale (2: the sanitizer, valid regions of
# tensor ops, returned values; 3: multi-rank programs run; 4: batched loops add in the loop's order;
# 5: a read above its assignment is a static error, and errors torch raises name the IR op; 6: its
# NotImplementedError and ZeroDivisionError too; 7: an operand of the wrong kind is a static error;
# 8: shapes the types rule out are static errors; 9: a 4-D scatter_update writes block rows, a
# repeated index's later row wins; more values are static errors (a reshape to another count, a
# dimension that is not positive, a call argument or a loop bound of another kind, ...))
ENGINE_VERSION = "10"


SSA_SUFFIX = re.compile(r"__ssa_v\d+$")


@dataclass(slots=True)
class Compiled:
    """A dump parsed, checked and compiled once; reused for every run of the same text."""

    program: Program | None
    diagnostics: list[D.Diagnostic]
    generated: GeneratedCode | None
    code: tuple[Block, ...] | None  # the script's blocks, run in order (exec.script_code.run_blocks)
    error: ErrorInfo | None
    memory: MemoryPlan | None = None  # where the IR places tiles (None: memory model off)
    sanitize: bool = False  # generated with the sanitizer's hooks (exec.sanitizer)
    traced: bool = False  # generated with the trace hooks (a run needs a tracer: exec.trace_hooks)
    static_findings: list[Hazard] = field(default_factory=list)  # the sanitizer's, from the IR alone
    task_sites: list[Any] = field(default_factory=list)  # the program's runtime tasks (ir.tasks), with sanitize
    # site -> (trips, with records): its middle tasks may run unwatched, its groups' idle lane 1 be left out (exec.task_watch)
    task_loops: dict[int, tuple[int, bool]] = field(default_factory=dict)


_COMPILED: dict[tuple[str, str | None, bool, bool, bool, str | None, bool, bool], Compiled] = {}
_COMPILED_LOCK = threading.Lock()


def _span_error(kind: str, message: str, span: Span | None, **detail: Any) -> ErrorInfo:
    return ErrorInfo.at(kind, message, span, **detail)


_COMMENT_LINE = re.compile(r"^[ \t]*#[^\n]*", re.M)


def _blank_comments(text: str) -> str:
    head, nl, rest = text.partition("\n")  # the '# pypto.program:' header names the program: keep it
    return head + nl + _COMMENT_LINE.sub("", rest)


def compile_text(
    text: str,
    filename: str | None = None,
    entry: str | None = None,
    check_shapes: bool = True,
    trace: bool = False,
    memory: bool = True,
    backend: str | None = None,
    exact: bool = False,
    sanitize: bool = False,
) -> Compiled:
    """Parse + static checks + codegen + ``compile``; cached by text hash.

    ``memory``: plan where the IR places tiles, check it statically (capacity of ``backend``,
    bounds, pipe slots) and run tiles in their bytes (see :mod:`pypto_lsp.exec.memory`).
    ``exact``: every loop tile by tile (:mod:`pypto_lsp.exec.batching`).
    ``sanitize``: task calls and global buffers go through the run's sanitizer (:mod:`pypto_lsp.exec.sanitizer`);
    uninitialised tiles are found from the IR (:mod:`pypto_lsp.ir.initcheck`)."""
    # comments cannot change the program: blank them (keeping every line where it is) before
    # hashing, so a comment-only edit re-uses the compiled script
    digest = hashlib.blake2b(_blank_comments(text).encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    exact = bool(exact)
    key = (digest, entry, check_shapes, trace, memory, backend, exact, sanitize)
    with _COMPILED_LOCK:
        hit = _COMPILED.get(key)
    if hit is not None:
        return hit
    res = parse_text(text, filename)
    diags = list(res.diagnostics)
    program = res.program
    comp: Compiled
    mplan: MemoryPlan | None = None
    if program is not None:
        diags.extend(check_program(program, entry=entry))
        if memory and not any(d.severity == D.ERROR for d in diags):
            mplan = plan_program(program, backend)
            diags.extend(findings_to_diagnostics(mplan.findings, program))
    errors = [d for d in diags if d.severity == D.ERROR]
    if program is None or errors:
        first = errors[0] if errors else D.error(None, "parse", "cannot parse")
        comp = Compiled(program, diags, None, None, ErrorInfo.from_diagnostic(first), mplan)
    else:
        try:
            gen = codegen.generate(
                program,
                check_shapes=check_shapes,
                entry=entry,
                filename=f"<pypto-lsp:{digest[:12]}>",
                trace=trace,
                memory=memory,
                memory_plan=mplan,
                exact=exact,
                sanitize=sanitize,
            )
            if gen.entry is None:
                n = len(program.functions)
                comp = Compiled(
                    program,
                    diags,
                    gen,
                    None,
                    ErrorInfo("no-entry", f"program '{program.name}' has {n} functions but no Orchestration entry"),
                    mplan,
                )
            else:
                # a function block not compiled before waits for its first call (exec.script_code), but
                # not in a traced script: the debugger and the localiser step through every frame
                code = compile_script(gen.executable or gen.source, gen.filename, gen.blocks, lazy=not trace)
                comp = Compiled(program, diags, gen, code, None, mplan, sanitize, trace)
                if sanitize:
                    from ..exec.task_watch import watched_loops
                    from ..ir.initcheck import uninitialised_tiles
                    from ..ir.tasks import task_sites

                    comp.static_findings = [u.to_json() for u in uninitialised_tiles(program)]
                    comp.task_sites = task_sites(program)
                    comp.task_loops = watched_loops(program, comp.task_sites)
        except CodegenError as exc:
            comp = Compiled(program, diags, None, None, _span_error("codegen", str(exc), exc.span))
        except (SyntaxError, RecursionError, MemoryError) as exc:
            comp = Compiled(program, diags, None, None, ErrorInfo("codegen", f"generated code does not compile: {exc}"))
    with _COMPILED_LOCK:
        if len(_COMPILED) > 256:
            _COMPILED.clear()
        _COMPILED[key] = comp
    return comp


# ---------------------------------------------------------------------- running


def resolve_args(program: Program, entry_name: str, tensors: Mapping[str, torch.Tensor]) -> list[Any]:
    """Entry arguments by parameter name.

    Like the reference, a trailing ``__ssa_vN`` is stripped when the exact name is
    missing; beyond it, the part before the first ``__`` is tried (``out__cg_ssa_v1``
    -> ``out``), which the reference does not do.
    """
    fn = program.function(entry_name)
    assert fn is not None
    args = []
    for p in fn.params:
        candidates = [p.name, SSA_SUFFIX.sub("", p.name), p.name.split("__")[0] if "__" in p.name.strip("_") else p.name]
        for c in candidates:
            if c in tensors:
                args.append(tensors[c])
                break
        else:
            if isinstance(p.type, ScalarType):
                raise KeyError(f"no value for scalar parameter '{p.name}'; available keys: {sorted(tensors)}")
            raise KeyError(f"cannot resolve tensor for parameter '{p.name}'; available keys: {sorted(tensors)}")
    return args


def _check_arg_types(program: Program, entry_name: str, args: list[Any]) -> None:
    from ..exec.values import DTYPES

    fn = program.function(entry_name)
    assert fn is not None
    for p, a in zip(fn.params, args, strict=True):
        if isinstance(p.type, TensorType | TileType) and isinstance(a, torch.Tensor):
            want = DTYPES.get(p.type.dtype)
            if want is not None and a.dtype != want:
                raise GoldenError(
                    f"golden tensor for '{p.name}' is {str(a.dtype).replace('torch.', '')}, the entry declares {p.type.dtype}"
                )
            static = [d.value for d in p.type.shape if hasattr(d, "value") and isinstance(getattr(d, "value", None), int)]
            if len(static) == len(p.type.shape) and list(a.shape) != static:
                raise GoldenError(f"golden tensor for '{p.name}' has shape {list(a.shape)}, the entry declares {static}")


def _dtype_name(d: torch.dtype) -> str:
    return str(d).replace("torch.", "")


def over_tolerance(diff: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> torch.Tensor:
    """**The tolerance test**, per element (``allclose``'s, ``equal_nan=False``): ``diff`` =
    |actual - expected| (0 where they are equal, so equal infinities pass) over
    ``atol + rtol * |expected|``; a NaN or infinite difference is always over. Validation,
    localisation and the error map all judge values by it."""
    return (diff > expected.abs() * rtol + atol) | torch.isnan(diff) | torch.isinf(diff)


def scalars_close(actual: float, expected: float, rtol: float, atol: float) -> bool:
    """:func:`over_tolerance` for two Python numbers (scalar values a trace records)."""
    return actual == expected or abs(actual - expected) <= atol + rtol * abs(expected)


def compare(actual: torch.Tensor, expected: torch.Tensor, rtol: float, atol: float) -> TensorResult:
    """allclose semantics (|a - e| <= atol + rtol * |e|), in float64, with max abs/rel diff."""
    if expected.dtype == torch.int32 and actual.dtype == torch.int64:
        # UINT32 outputs: the bundle holds int32 bit patterns (PyPTO's harness), the run int64 values
        actual = ((actual + 2**31) & 0xFFFFFFFF) - 2**31
    a = actual.detach().to(torch.float64)
    e = expected.detach().to(torch.float64)
    diff = (a - e).abs()
    diff = torch.where(a == e, torch.zeros((), dtype=diff.dtype), diff)  # equal infinities differ by 0, not NaN
    nan_count = int(torch.isnan(a).sum().item())
    if diff.numel() == 0:
        return TensorResult(0.0, 0.0, True, nan_count)
    max_abs = float(diff.max().item()) if not torch.isnan(diff).any() else float("nan")
    denom = e.abs()
    nz = denom > 0
    max_rel = float((diff[nz] / denom[nz]).max().item()) if bool(nz.any()) else (0.0 if max_abs == 0 else float("inf"))
    ok = not bool(over_tolerance(diff, e, rtol, atol).any())
    return TensorResult(max_abs, max_rel, ok, nan_count)


@dataclass(slots=True)
class Outcome:
    """How one run ended: the entry's tensors after it (outputs written into them, lent inputs
    restored), what the entry returned, and a located error (None: it finished)."""

    tensors: dict[str, torch.Tensor]
    value: Any = None
    error: ErrorInfo | None = None
    exception: BaseException | None = None
    lent: dict[str, torch.Tensor] = field(default_factory=dict)  # the tensors as the run got them (settle restores written inputs)


def run(
    comp: Compiled,
    inputs: Mapping[str, torch.Tensor],
    *,
    timeout: float | None = None,
    observers: Sequence[Observer] = (),
    clone_inputs: bool = False,
    max_alloc: int | None = None,
    ranks: int | None = None,
) -> Outcome:
    """The one way a dump runs: lend the inputs, execute the script in a fresh namespace, call
    the entry under the timeout with every observer watching, settle the inputs, and map an
    exception to its IR line. ``clone_inputs``: every input copied (else only those it writes).
    ``max_alloc``: the run's allocation budget (None: the default, :func:`pypto_lsp.ir.alloc_budget.budget`).
    ``ranks``: a multi-rank program's rank count (a case's ``ranks``; None: its stacked inputs say)."""
    from ..exec import context
    from ..exec.observe import RunInfo
    from .lend import lend  # inputs only read are not cloned

    assert comp.generated is not None and comp.code is not None and comp.program is not None
    gen = comp.generated
    assert gen.entry is not None
    context.reset()  # no pipe contents or SPMD/lane state carried over from a previous run
    run_tensors, loan = lend(comp.program, gen.entry, inputs, clone_all=clone_inputs or abandoned_runs() > 0)
    try:
        try:
            args = resolve_args(comp.program, gen.entry, run_tensors)
            decode_stored_args(comp.program, gen.entry, args, run_tensors)  # FP8/FP4/E8M0 storage dtypes
            _check_arg_types(comp.program, gen.entry, args)
        except (KeyError, GoldenError) as exc:
            msg = exc.args[0] if exc.args else str(exc)
            fn = comp.program.function(gen.entry)
            return Outcome(run_tensors, error=_span_error("golden", str(msg), fn.name_span if fn else None), exception=exc)
        info = RunInfo(gen, args, run_tensors)
        for o in observers:
            o.peers([p for p in observers if p is not o])
        ns: dict[str, Any] = {"__name__": "pypto_lsp_generated", "__builtins__": SAFE_BUILTINS}
        guard = Guard(alloc_budget(max_alloc))  # the run's budget: the script's guard and the kernels'
        ns.update(_modules(gen, guard))  # the objects the script needs, by the names it uses
        if gen.built:  # its memory plans, made here rather than compiled from their text
            from ..exec.memory import build

            for name, (kind, keywords) in gen.built.items():
                ns[name] = build(kind, keywords)
        for o in observers:
            o.namespace(ns, info)
        run_blocks(comp.code, ns)  # the script's blocks in order (exec.script_code): our own generated code, never dump text
        if "_pl_world_ranks" in ns:  # a multi-rank program (exec.codegen_ranks)
            ns["_pl_world_ranks"] = ranks
        info.ns = ns
        for o in observers:
            o.started(ns, info)
        for op, sym in gen.op_symbols.items():
            for o in observers:
                k = ns.get(sym)
                w = o.kernel(op, k, info) if callable(k) else None
                if w is not None:
                    ns[sym] = w
        fn_obj = ns[gen.functions[gen.entry]]

        watch = [o for o in observers if type(o).deadlock is not Observer.deadlock]

        def invoke() -> Any:
            one_intra_op_thread()  # this thread's MKL and OpenMP too (process_setup: why)
            context.set_alloc_guard(guard)  # the kernels' own allocations (kernels.base.check_alloc)
            # no op of a run needs autograd: inference mode skips its dispatch for every op (4-8 % of
            # a run, docs/speed.md, nineteenth pass). Tensors made here keep no version counter:
            # exec.values.version_of says so, and the caches that read versions pass them by
            with torch.inference_mode():
                return invoke_watched()

        def invoke_watched() -> Any:
            if not watch:
                return fn_obj(*args)
            from ..exec import crosscore  # deadlocks to the observers that listen (on the run's thread)

            def deadlock(group: Any, slot: int) -> None:
                for o in watch:
                    o.deadlock(group, slot, info)

            crosscore.set_observer(deadlock)
            try:
                return fn_obj(*args)
            finally:
                crosscore.set_observer(None)

        call: Callable[[], Any] = invoke
        for o in reversed(observers):  # the first observer's call is the outermost
            call = partial(o.call, call, info)
        out = Outcome(run_tensors, lent=dict(run_tensors))
        try:
            try:
                out.value = info.value = _run_with_timeout(call, timeout)
            finally:
                loan.settle(run_tensors)
        except Exception as exc:
            info.error = out.exception = exc
            out.error = error_info(exc, gen, comp.program)
        for o in observers:
            o.finished(info)
        return out
    finally:
        loan.release()  # every path: the inputs it lent may be lent again (settle releases too)


_MODULES: dict[str, Any] = {}


def _modules(gen: GeneratedCode, guard: Guard) -> dict[str, Any]:
    import importlib

    from ..ir import alloc_budget

    out: dict[str, Any] = {}
    for alias, name in gen.modules.items():
        mod = _MODULES.get(name)
        if mod is None:
            mod = _MODULES[name] = importlib.import_module(name)
        # the allocation guard with this run's budget (the module itself: the standalone script's default)
        out[alias] = guard if mod is alloc_budget else mod
    return out


def run_text(
    text: str,
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    filename: str = "<dump>",
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    entry: str | None = None,
    timeout: float | None = None,
    collect_stats: bool = False,
    stats_for: Collection[str] | None = None,
    trace: Callable[[Any, str, int], Any] | None = None,
    keep: dict[str, torch.Tensor] | None = None,
    memory: bool = True,
    backend: str | None = None,
    exact: bool = False,
    sanitize: bool | str | None = None,
    debugger: Observer | None = None,
    max_alloc: int | None = None,
    ranks: int | None = None,
) -> FileResult:
    """Validate one dump text; every failure becomes a status with a located error.

    ``collect_stats``: value stats of the tensors after the run (all of them, or only the
    keys in ``stats_for``: the language server skips big inputs the run cannot change).
    ``trace``: called with every assigned value, its IR name and line; returns the value
    (see :mod:`.localize`). ``keep``: filled with the entry's tensors after a run that
    finished (the differential reference, :mod:`.differential`).
    ``memory``: run tiles where the IR places them and report memory hazards (a file with an
    ``overwrite`` or ``pipe-slot`` finding fails; ``capacity``/``bounds`` are static errors).
    ``exact``: every loop tile by tile, no batched loops.
    ``sanitize``: the device's sanitizer (:mod:`pypto_lsp.exec.sanitizer`): races between tasks,
    uninitialised reads, windows out of bounds, full pipe rings; each finding fails the file and is
    listed with the memory findings (``memory.hazards``). None: on, except for traced runs
    (localisation compares values only; the debugger asks for it). ``"strict"``: on, and reads of
    undefined values that reach nothing are listed too, as information (``undefined-read``).
    ``debugger``: an observer that puts the trace hooks itself (:mod:`pypto_lsp.debug.session`).
    """
    t0 = time.perf_counter()
    traced = trace is not None or debugger is not None
    strict = sanitize == "strict"
    sanitize = not traced if sanitize is None else bool(sanitize)
    result = FileResult(file=filename, status=ERROR, rtol=rtol, atol=atol)
    try:
        comp = compile_text(text, filename, entry, trace=traced, memory=memory, backend=backend, exact=exact, sanitize=sanitize)
        result.memory = _memory_json(comp.memory)
        if comp.error is not None:
            result.error = comp.error
            return result
        assert comp.generated is not None and comp.code is not None and comp.program is not None
        gen = comp.generated
        assert gen.entry is not None
        result.writes = {k: [[s.line, s.end_line] for s in v] for k, v in gen.output_writes.items()}
        alloc_limit = alloc_budget(max_alloc)
        big = over_budget(comp.program, alloc_limit)  # before anything is allocated
        if big is not None:
            result.error = _span_error(ALLOC_KIND, big.message(alloc_limit), big.span, bytes=big.bytes, budget=alloc_limit)
            return result
        from ..exec.memory import MemoryObserver
        from ..exec.observe import CallCounter

        mem_obs, calls = MemoryObserver(), CallCounter()
        observers: list[Observer] = [mem_obs, calls]
        if trace is not None:
            from ..exec.trace_hooks import TraceObserver

            observers.append(TraceObserver(trace))
        if debugger is not None:
            observers.append(debugger)
        san = _sanitizer(comp, strict=strict) if comp.sanitize else None
        if san is not None:
            observers.append(san)
        ranks_obs = _rank_hazards(comp, filename) if san is not None else None
        if ranks_obs is not None:
            observers.append(ranks_obs)
        limit = time_limit(timeout)
        deadline = time.monotonic() + limit if limit is not None else None  # bounds every phase, analysis included
        out = run(comp, inputs, timeout=timeout, observers=observers, max_alloc=alloc_limit, ranks=ranks)
        result.call_counts = calls.counts
        if result.memory is not None:
            result.memory["hazards"].extend(mem_obs.findings)
            if san is not None:
                result.memory["hazards"].extend(comp.static_findings)
                result.memory["hazards"].extend(san.findings)
            if ranks_obs is not None:
                result.memory["hazards"].extend(ranks_obs.findings)
        if out.error is not None:
            result.error = out.error
            return result
        run_tensors = out.tensors
        returned, new = settle_returned(returned_tensors(out.value), out.lent, run_tensors)
        if san is not None and result.memory is not None:
            try:
                races = san.races(deadline)
            except TimeoutError as exc:
                result.error = error_info(exc, gen, comp.program)
                return result
            left = deadline - time.monotonic() if deadline is not None else timeout
            if races and (left is None or left > 0):
                _other_schedule(comp, races[0], inputs, run_tensors, expected, left, alloc_limit, ranks)
            result.memory["hazards"].extend(races)
            if san.tasks and any(t.site.directions is not None for t in san.tasks):
                result.tasks = san.graph(races)
        if keep is not None:
            keep.update(run_tensors)
            keep.update(new)  # a program that returns its result (not one of its parameters)
        if not expected:
            result.status = FAIL if _memory_fails(result) else RAN
            return result
        ok = True
        outputs = {**run_tensors, **returned} if returned else run_tensors
        if returned:
            result.writes.update(return_writes(comp.program, gen.entry, [k for k in returned if k in expected]))
        unsigned = uint32_keys(comp.program, gen.entry, expected)
        for key, exp in expected.items():
            if key not in outputs:
                result.error = ErrorInfo("golden", f"expected tensor '{key}' is not an entry input/output; keys: {sorted(outputs)}")
                return result
            act = outputs[key]
            exp = decode_stored_expected(comp.program, gen.entry, key, exp)
            if tuple(act.shape) != tuple(exp.shape):
                result.error = ErrorInfo("golden", f"'{key}': golden shape {list(exp.shape)} differs from the output's {list(act.shape)}")
                return result
            if act.dtype != exp.dtype and not (key in unsigned and uint32_golden(act, exp)):
                result.error = ErrorInfo(
                    "golden", f"'{key}': golden dtype {_dtype_name(exp.dtype)} differs from the output's {_dtype_name(act.dtype)}"
                )
                return result
            tr = compare(act, exp, rtol, atol)
            result.tensors[key] = tr
            ok = ok and tr.passed
        result.status = PASS if ok and not _memory_fails(result) else FAIL
        if collect_stats:
            result.stats = {k: tensor_stats(v) for k, v in run_tensors.items() if stats_for is None or k in stats_for}
        return result
    except (RecursionError, MemoryError) as exc:
        result.error = ErrorInfo(type(exc).__name__, f"{type(exc).__name__} while running the dump")
        return result
    finally:
        result.seconds = time.perf_counter() - t0


def _memory_json(plan: MemoryPlan | None) -> MemoryResult:
    if plan is None:
        return {"checked": False, "hazards": []}
    return {"checked": plan.placed, "hazards": [f.to_json() for f in plan.findings]}


def _memory_fails(result: FileResult) -> bool:
    """A memory or sanitizer finding fails the file even when the numbers agree."""
    return any(h["kind"] in FAILING_FINDINGS for h in hazards_of(result))


def _sanitizer(comp: Compiled, reorder: Any = None, strict: bool = False) -> Any:
    from ..exec.sanitizer import Sanitizer

    assert comp.program is not None and comp.generated is not None
    gen = comp.generated

    def ir_line(n: int) -> int | None:
        sp = gen.ir_span(n)
        return sp.line if sp is not None else None

    # (traced runs, the localisation's and the debugger's, step through every lane of every task)
    return Sanitizer(comp.task_sites, gen.filename, ir_line, reorder, strict=strict, loops=comp.task_loops, idle_lanes=not comp.traced)


def _keep(value: Any, *_rest: Any) -> Any:
    return value


def _rank_hazards(comp: Compiled, filename: str) -> Any:
    """A multi-rank program's cross-rank races and unfenced publishing writes (exec.rank_hazards);
    the fence check from InsertCommFence on (a program with a fence, or a dump named after it)."""
    from ..exec.codegen_ranks import is_multi_rank
    from ..exec.rank_hazards import RankHazards

    assert comp.program is not None
    if not is_multi_rank(comp.program):
        return None
    fenced = "system.fence" in (comp.generated.op_symbols if comp.generated else {}) or "InsertCommFence" in filename
    return RankHazards(fence_check=fenced)  # (Any: the engine reads its findings)


def _other_schedule(
    comp: Compiled,
    race: dict[str, Any],
    inputs: Mapping[str, torch.Tensor],
    outputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    timeout: float | None,
    max_alloc: int | None,
    ranks: int | None = None,
) -> None:
    """Run the two racing tasks the other way round (an order the runtime allows) and say in the
    finding how far the outputs move."""
    from ..exec.sanitizer import Reorder

    a, b = race["tasks"]
    if a == b:
        return
    san = _sanitizer(comp, Reorder(first=a, after=b))
    from ..exec.memory import MemoryObserver

    observers: list[Observer] = [MemoryObserver(), san]
    if comp.traced:  # traced code calls its hooks: a tracer that keeps every value
        from ..exec.trace_hooks import TraceObserver

        observers.append(TraceObserver(_keep))
    out = run(comp, inputs, timeout=timeout, observers=observers, clone_inputs=True, max_alloc=max_alloc, ranks=ranks)
    if isinstance(out.exception, TimeoutError):
        race["message"] += "; not run in the other order: the run's timeout left no time for it"
        return
    if out.error is not None:  # the other order may well fail outright: that is the answer too
        race["message"] += f"; run in the other order ('{race['calls'][1]}' first) it fails: {out.error.message[:200]}"
        race["other_order"] = {"error": out.error.message[:500]}
        return
    if san.reorder_blocked:
        race["message"] += f"; not run in the other order: {san.reorder_blocked}"
        return
    tensors = out.tensors
    keys = [k for k in (expected or outputs) if k in tensors and k in outputs]
    moved: dict[str, float] = {}
    for k in keys:
        x, y = tensors[k], outputs[k]
        if x.shape == y.shape:
            moved[k] = compare(x, y, 0.0, 0.0).max_abs_diff  # the comparison's own |Δ| (NaN where a NaN is)
    if moved:
        worst = max(moved, key=lambda k: moved[k] if moved[k] == moved[k] else float("inf"))
        race["message"] += (
            f"; run in the other order ('{race['calls'][1]}' first, as the runtime may), '{worst}' moves by max |Δ| {moved[worst]:.4g}"
        )
        race["other_order"] = {"max_abs_diff": moved}


def tensor_stats(t: torch.Tensor) -> dict[str, Any]:
    f = t.detach().to(torch.float64)
    finite = torch.isfinite(f)
    vals = f[finite]
    return {
        "shape": list(t.shape),
        "dtype": str(t.dtype).replace("torch.", ""),
        "min": float(vals.min()) if vals.numel() else None,
        "max": float(vals.max()) if vals.numel() else None,
        "mean": float(vals.mean()) if vals.numel() else None,
        "nan": int(torch.isnan(f).sum()),
        "inf": int(torch.isinf(f).sum()),
    }


def read_dump_text(f: Path) -> str | FileResult:
    """A dump's text, or its error result: unreadable (permissions, gone, a FIFO: kind ``io``),
    binary, not UTF-8, over the size limit (read no further than the limit)."""
    from ..ir.parser import MAX_BYTES, parse_bytes, read_dump

    try:
        data = read_dump(f)
    except OSError as exc:
        return FileResult(str(f), ERROR, error=ErrorInfo("io", f"cannot read: {exc.strerror or exc}"))
    if len(data) > MAX_BYTES or b"\x00" in data:
        return FileResult(str(f), ERROR, error=ErrorInfo.from_diagnostic(parse_bytes(data, str(f)).errors[0]))
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        res = parse_bytes(data, str(f))
        d = res.errors[0]
        return FileResult(str(f), ERROR, error=ErrorInfo.from_diagnostic(d))


def entry_of(program: Program) -> str | None:
    e = entry_function(program)
    return e.name if e else None
