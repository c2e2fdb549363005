"""Validate a folder's files on an existing Dask distributed cluster (``validate --cluster``).

The cluster is the team's own (``dask scheduler`` + ``dask worker`` on other machines, or
dask-jobqueue on Slurm/PBS, or a Kubernetes deployment): pypto-lsp starts nothing, it connects
as a client. The goldens are scattered once, broadcast to every worker; each distinct dump text
is one task that returns the same ``FileResult.to_json()`` a local run makes, plus the address
of the worker that ran it. A worker that dies mid-task has its tasks rescheduled by the
scheduler (``distributed.scheduler.allowed-failures``); a task the scheduler gives up on
(``KilledWorker``) is a ``worker-lost`` result, as a lost process of the local pool is.

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


class DaskExecutor:
    """A connected client, and how a folder's distinct files run through it."""

    def __init__(self, address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
        try:
            from distributed import Client
        except ImportError as exc:
            raise ClusterError(f"--cluster needs Dask: {INSTALL_HINT}") from exc
        try:
            self.client = Client(address, timeout=f"{timeout_s}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError, TypeError) as exc:
            raise ClusterError(f"cannot reach the Dask scheduler at {address} within {timeout_s:g} s: {exc}") from exc
        self.address = address
        self.name = f"dask:{address}"
        self.cache_dir: str | None = None  # the shared result cache the workers read and write

    def workers(self) -> list[str]:
        return sorted(self.client.scheduler_info().get("workers", {}))

    def close(self) -> None:
        import contextlib

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

        from distributed import as_completed

        from ..ir.alloc_budget import budget

        client = self.client
        # torch.save bytes, not tensors: Dask's own tensor serializer needs numpy, which torch does not
        token, blob = goldens_blob(inputs, expected)
        scattered = client.scatter({"goldens": blob}, broadcast=True, hash=False)
        g = scattered if isinstance(scattered, dict) else dict(scattered)
        # the budget this machine resolves (its default when the run sets none), not each worker's
        settings = settings.override(max_alloc=budget(settings.max_alloc))
        options = {"cache_dir": cache_dir}
        futures = {}
        for key, (text, filename) in todo.items():
            fut = client.submit(
                run_on_worker,
                key,
                text,
                filename,
                token,
                g["goldens"],
                settings,
                options,
                key=f"pypto-lsp-{key}-{os.getpid()}",
                pure=False,
            )
            futures[fut] = key
        try:
            for fut in as_completed(list(futures), loop=client.loop):
                key = futures[fut]
                filename = todo[key][1]
                worker: str | None
                try:
                    value, worker = fut.result()
                except (Exception, CancelledError) as exc:  # KilledWorker (lost twice), a lost scheduler, a worker without us
                    kind = "worker-lost" if type(exc).__name__ == "KilledWorker" else "internal"
                    msg = (
                        f"worker lost: the Dask workers running this file died ({exc}); the other files went on"
                        if kind == "worker-lost"
                        else f"the cluster could not run this file: {type(exc).__name__}: {exc}"
                    )
                    value = FileResult(filename, ERROR, error=ErrorInfo(kind, msg), rtol=settings.rtol, atol=settings.atol).to_json()
                    worker = None  # no worker ran it
                if worker:
                    workers_of[key] = worker
                yield key, value
        finally:
            for fut in futures:
                fut.release()
            for fut in g.values():
                fut.release()


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

        from .process_setup import configure_process

        configure_process()
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
