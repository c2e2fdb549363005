"""Validate a folder's files on an existing Dask distributed cluster (``validate --cluster``).

The cluster is the team's own (``dask scheduler`` + ``dask worker`` on other machines, or
dask-jobqueue on Slurm/PBS, or a Kubernetes deployment): pypto-lsp starts nothing, it connects
as a client. The goldens are scattered once, broadcast to every worker; each distinct dump text
is one task that returns the same ``FileResult.to_json()`` a local run makes, plus the address
of the worker that ran it. A worker that dies mid-task has its tasks rescheduled by the
scheduler (``distributed.scheduler.allowed-failures``); a task the scheduler gives up on
(``KilledWorker``) is a ``worker-lost`` result, as a lost process of the local pool is. Scattered
data is the one thing Dask cannot recover: when every worker holding the goldens dies (one killed
while the broadcast was still copying them to the others), the scheduler cancels every task that
needs them, so the goldens are scattered again and those files run again.

Dask is an optional extra (``pip install pypto-lsp[cluster]``): this module imports it only
when a run asks for a cluster, so the local default never loads it.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

from .config import RunSettings
from .report import ERROR, ErrorInfo, FileResult

INSTALL_HINT = "pip install 'pypto-lsp[cluster]'  (dask and distributed)"
CONNECT_TIMEOUT_S = 5.0  # a scheduler that cannot be reached: say so within seconds, never hang
ENV_CLUSTER = "PYPTO_LSP_CLUSTER"


class ClusterError(Exception):
    """The cluster cannot be used (Dask missing, scheduler unreachable); the CLI exits 2."""


def cluster_address(flag: str | None, case_value: str | None) -> str | None:
    """``--cluster``, else the case's ``cluster`` key, else ``PYPTO_LSP_CLUSTER``; None: local."""
    for v in (flag, case_value, os.environ.get(ENV_CLUSTER)):
        if v:
            return v
    return None


def _probe(address: str, timeout_s: float) -> None:
    """Connect to ``address`` once with Dask's own transport layer (and the security settings of
    the Dask config, as ``Client`` would), and hang up. A ``Client`` whose constructor fails keeps
    a half-started event loop that its finaliser then waits 10 s on, with a traceback at exit: an
    address that is malformed, of a transport not installed, or that nobody answers fails here."""
    import asyncio

    from distributed.comm import connect
    from distributed.security import Security

    async def once() -> None:
        comm = await connect(address, timeout=timeout_s, **Security().get_connection_args("client"))
        await comm.close()

    asyncio.run(once())


class DaskExecutor:
    """A connected client, and how a folder's distinct files run through it."""

    def __init__(self, address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise ClusterError(f"--cluster needs Dask: {INSTALL_HINT}") from exc
        try:
            _probe(address, timeout_s)
            self.client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
        except Exception as exc:  # a malformed address, a transport Dask lacks, nobody listening
            shown = address if len(address) <= 200 else address[:200] + "..."
            why = str(exc) if len(str(exc)) <= 300 else str(exc)[:300] + "..."
            if isinstance(exc, OSError | TimeoutError):
                raise ClusterError(f"cannot reach the Dask scheduler at {shown} within {timeout_s:g} s: {why}") from exc
            raise ClusterError(f"cannot use {shown!r} as a Dask scheduler address: {type(exc).__name__}: {why}") from exc
        self.address = address
        self.name = f"dask:{address}"
        self.cache_dir: str | None = None  # the shared result cache the workers read and write
        self.only: list[str] | None = None  # the workers files may go to (None: any)
        self.warnings: list[str] = []
        self._check_workers()

    def _check_workers(self) -> None:
        """Every worker must import the same pypto-lsp as this client: a worker without it dies
        unpickling its first task (taking the goldens with it), one of another version may give
        other verdicts. So may another torch, and its results would go into the shared cache under
        this client's torch (the cache key names it). Files go only to the workers that have both;
        none: :class:`ClusterError`. A cluster without workers yet (one that scales up on demand)
        is not checked."""
        import pkgutil
        from importlib import metadata

        from .. import __version__ as ours

        # the worker imports pypto_lsp as a task would (a stdlib function: nothing of ours to unpickle)
        found = self.client.run(pkgutil.resolve_name, "pypto_lsp:__version__", on_error="return")
        # torch as installed (its metadata: read without importing torch, here and there)
        try:
            our_torch: str | None = metadata.version("torch")
        except metadata.PackageNotFoundError:  # a torch built in place: nothing to compare with
            our_torch = None
        torches = self.client.run(metadata.version, "torch", on_error="return") if our_torch else {}
        unfit = {}
        for worker, theirs in sorted(found.items()):
            their_torch = torches.get(worker, our_torch)
            if isinstance(theirs, BaseException):
                unfit[worker] = f"it cannot import pypto_lsp ({type(theirs).__name__})"
            elif theirs != ours:
                unfit[worker] = f"it has pypto-lsp {theirs}"
            elif isinstance(their_torch, BaseException):
                unfit[worker] = "it has no torch"
            elif their_torch != our_torch:
                unfit[worker] = f"it has torch {their_torch}"
        if not unfit:
            return
        fit = sorted(set(found) - set(unfit))
        said = "; ".join(f"{w}: {why}" for w, why in list(unfit.items())[:5]) + (f"; and {len(unfit) - 5} more" if len(unfit) > 5 else "")
        need = f"every worker needs pypto-lsp {ours} (pip install 'pypto-lsp[cluster]=={ours}')" + (
            f" and torch {our_torch}, as this client has" if our_torch else ""
        )
        if not fit:
            self.close()
            raise ClusterError(f"no worker of the Dask cluster at {self.address} can run pypto-lsp {ours}: {said}; {need}")
        self.only = fit
        self.warnings.append(f"{len(unfit)} of {len(found)} Dask workers get no file ({said}); {need}")

    def workers(self) -> list[str]:
        return sorted(self.client.scheduler_info().get("workers", {}))

    def close(self) -> None:
        import contextlib
        import logging

        if self.client.status != "running":
            # the scheduler went away: closing cancels the client's reconnection attempts, which
            # Dask logs as a traceback; the run's report already says what happened
            logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
        with contextlib.suppress(Exception):
            self.client.close(timeout=5)

    def run(
        self,
        todo: dict[str, tuple[str, str]],
        inputs: Mapping[str, Any],
        expected: Mapping[str, Any],
        settings: RunSettings,
        cache_dir: str | None,
        workers_of: dict[str, str],
    ) -> Generator[tuple[str, dict[str, Any]], None, None]:
        """(key, result) pairs as tasks finish, one per key of ``todo``; ``workers_of[key]`` is
        the address that ran it. The goldens go to every worker once (scatter, broadcast)."""
        from asyncio import CancelledError
        from concurrent.futures import CancelledError as FutureCancelled

        from distributed import as_completed

        from ..ir.alloc_budget import budget

        client = self.client
        # torch.save bytes, not tensors: Dask's own tensor serializer needs numpy, which torch does not
        token, blob = goldens_blob(inputs, expected)
        # the budget this machine resolves (its default when the run sets none), not each worker's
        settings = settings.override(max_alloc=budget(settings.max_alloc))
        options = {"cache_dir": cache_dir}
        pid = os.getpid()
        goldens: list[Any] = []  # every scatter of the goldens (the last one is current)
        rescatters = [0]

        def scatter() -> None:
            name = "goldens" if not goldens else f"goldens-{len(goldens) + 1}"
            scattered = client.scatter({name: blob}, broadcast=True, hash=False, workers=self.only)
            goldens.append((scattered if isinstance(scattered, dict) else dict(scattered))[name])

        scatter()
        futures: dict[Any, tuple[str, int]] = {}  # future -> (key, how many scatters there were when it was sent)

        def submit(key: str) -> Any:
            text, filename = todo[key]
            again = f"-{len(goldens)}" if len(goldens) > 1 else ""
            fut = client.submit(
                run_on_worker,
                key,
                text,
                filename,
                token,
                goldens[-1],
                settings,
                options,
                key=f"pypto-lsp-{key}-{pid}{again}",
                pure=False,
                workers=self.only,
                allow_other_workers=False,
            )
            futures[fut] = (key, len(goldens))
            return fut

        for key in todo:
            submit(key)
        try:
            pending = as_completed(list(futures), loop=client.loop)
            for fut in pending:
                key, used = futures[fut]
                filename = todo[key][1]
                worker: str | None
                try:
                    value, worker = fut.result()
                except (Exception, CancelledError) as exc:  # KilledWorker (lost twice), a lost scheduler, a worker without us
                    cancelled = isinstance(exc, (CancelledError, FutureCancelled))  # distributed's: concurrent.futures'
                    lost = cancelled and client.status == "running" and (used < len(goldens) or _lost(client, goldens[-1]))
                    if lost and (used < len(goldens) or rescatters[0] < MAX_RESCATTERS):
                        # the workers that held the goldens died (killed while the broadcast was still
                        # copying them, say): Dask cannot recover scattered data, so they go out again
                        # (once per loss, not once per file) and the file runs again
                        try:
                            if used == len(goldens):
                                rescatters[0] += 1
                                scatter()
                            pending.add(submit(key))
                            continue
                        except (Exception, CancelledError) as again_exc:  # no worker left to take them
                            exc = again_exc
                    kind, msg = _failure(exc, self.address, scheduler_gone=client.status != "running", goldens_lost=lost)
                    value = FileResult(filename, ERROR, error=ErrorInfo(kind, msg), rtol=settings.rtol, atol=settings.atol).to_json()
                    worker = None  # no worker ran it
                if worker:
                    workers_of[key] = worker
                yield key, value
        finally:
            for fut in futures:
                fut.release()
            for fut in goldens:
                fut.release()


MAX_RESCATTERS = 3  # the goldens sent again after their holders died, at most this often in a run


def _failure(exc: BaseException, address: str, scheduler_gone: bool, goldens_lost: bool) -> tuple[str, str]:
    """The error kind and message of a file the cluster did not run."""
    what = f"{type(exc).__name__}: {exc}"
    if scheduler_gone:  # the client gave up reconnecting
        return (
            "scheduler-lost",
            f"scheduler lost: the connection to the Dask scheduler at {address} was lost and this file was not run ({what})",
        )
    if goldens_lost:
        return "worker-lost", f"worker lost: the Dask workers holding the goldens died and no worker took them again ({what})"
    if type(exc).__name__ in ("KilledWorker", "TimeoutError"):  # lost more often than allowed-failures
        return "worker-lost", f"worker lost: the Dask workers running this file died ({exc}); the other files went on"
    return "internal", f"the cluster could not run this file: {what}"


def _lost(client: Any, data: Any) -> bool:
    """Whether no worker holds the scattered ``data`` any more. The scheduler then cancels every
    task that needs it ("lost dependencies", or "already forgotten" when it dropped the key first)."""
    if data.status != "finished":
        return True
    try:
        holders = client.who_has(data).get(data.key, ())
    except Exception:  # the scheduler gone too: nothing to send the goldens to
        return False
    return not holders


def goldens_blob(inputs: Mapping[str, Any], expected: Mapping[str, Any]) -> tuple[str, bytes]:
    """The goldens as one ``torch.save`` blob, and a token naming its content."""
    import hashlib
    import io

    import torch

    buf = io.BytesIO()
    torch.save({"inputs": dict(inputs), "expected": dict(expected)}, buf)
    blob = buf.getvalue()
    return hashlib.blake2b(blob, digest_size=16).hexdigest(), blob


# on a worker: the goldens of the run it serves, loaded once per worker (not once per file)
_LOADED: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def _goldens(token: str, blob: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    hit = _LOADED.get(token)
    if hit is None:
        import io

        import torch

        from ..exec.side_threads import set_helper_threads
        from .process_setup import configure_process

        configure_process()
        set_helper_threads(1)  # workers run one per core (docs/cluster.md): as the local pool's processes
        d = torch.load(io.BytesIO(blob), weights_only=True)
        _LOADED.clear()  # one run's goldens at a time: a long-lived worker does not keep them all
        hit = _LOADED[token] = (d["inputs"], d["expected"])
    return hit


def run_on_worker(
    key: str,
    text: str,
    filename: str,
    token: str,
    blob: bytes,
    settings: RunSettings,
    options: Mapping[str, Any],
) -> tuple[dict[str, Any], str]:
    """One file on a Dask worker: the shared cache first (when the run has one), else the
    engine, as a local run does; returns the result and this worker's address."""
    from distributed import get_worker

    from .engine import run_text
    from .folders import ResultCache, cacheable

    inputs, expected = _goldens(token, blob)
    cache_dir = options.get("cache_dir")
    cache = ResultCache(Path(cache_dir), enabled=True) if cache_dir else None
    address = str(get_worker().address)
    if cache is not None:
        hit = cache.get(key)
        if hit is not None:
            return {**hit, "file": filename}, address
    # exact and the allocation budget travel in the settings, like everything else the run needs
    value = run_text(text, inputs, expected, filename=filename, **settings.engine_kwargs()).to_json()
    if cache is not None and cacheable(value):
        cache.put(key, value)
    return value, address


def open_cluster(flag: str | None, case: Any) -> DaskExecutor | None:
    """The executor a run asks for (``--cluster``, the case's ``cluster``, ``PYPTO_LSP_CLUSTER``),
    connected; None for a local run (Dask is not imported then). The workers share the result
    cache when the run names one (the case's ``cache_dir`` or ``PYPTO_LSP_CACHE_DIR``): a folder
    every machine sees."""
    address = cluster_address(flag, getattr(case, "cluster", None))
    if address is None:
        return None
    executor = DaskExecutor(address)
    shared = getattr(case, "cache_dir", None) or os.environ.get("PYPTO_LSP_CACHE_DIR")
    executor.cache_dir = str(shared) if shared else None
    return executor
