"""``validate --cluster`` against a real Dask cluster on this machine.

A ``dask scheduler`` and two ``dask worker`` processes are started on 127.0.0.1 (free ports, no
dashboard, no nanny: a killed worker stays dead), torn down whatever happens. Skipped with a
message when the ``[cluster]`` extra (dask, distributed) is not installed; ``make test`` installs it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.cluster
distributed = pytest.importorskip("distributed", reason="the [cluster] extra is not installed: pip install 'pypto-lsp[cluster]'")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
START_S = 90.0  # the scheduler and workers up, on a loaded machine
RUN_S = 240.0
VOLATILE = ("seconds", "worker", "cached")  # what may differ between two runs of the same files


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(tmp: Path, allowed_failures: int = 1) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        "PYPTO_LSP_CACHE_DIR": str(tmp / "cache"),
        # a file whose worker dies twice is given up on (KilledWorker): reported worker-lost
        "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": str(allowed_failures),
    }


class LocalCluster:
    """The processes of a real cluster, started as a team would (``dask scheduler``, ``dask worker``)."""

    def __init__(self, tmp: Path, workers: int = 2, allowed_failures: int = 1, nthreads: int = 1) -> None:
        self.tmp = tmp
        self.allowed_failures = allowed_failures
        self.nthreads = nthreads
        self.address = f"tcp://127.0.0.1:{_free_port()}"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.workers: dict[str, subprocess.Popen[bytes]] = {}  # address -> process
        port = self.address.rsplit(":", 1)[1]
        self._start(
            "scheduler", [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard"]
        )
        try:
            self.add_workers(workers)
        except BaseException:
            self.close()  # never a process left behind
            raise

    def start_unfit_worker(self, name: str, prelude: str) -> str:
        """Start one ``dask worker`` that runs ``prelude`` first (what makes it unfit) and return its
        address once the scheduler has it; the cluster must have no other worker yet."""
        start = f"{prelude}; from distributed.cli.dask_worker import main; main()"
        self._start(
            name, [sys.executable, "-c", start, self.address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"]
        )
        client = distributed.Client(self.address, timeout=f"{START_S}s")
        try:
            client.wait_for_workers(1, timeout=START_S)
            (address,) = client.scheduler_info(n_workers=-1)["workers"]
            return str(address)
        finally:
            client.close()

    def add_workers(self, n: int) -> None:
        """Start ``n`` more workers and wait until the scheduler has them all."""
        if n == 0:
            return
        client = distributed.Client(self.address, timeout=f"{START_S}s")
        try:
            before = set(client.scheduler_info(n_workers=-1)["workers"])  # ours, and any started otherwise
            for _ in range(n):
                self._start(
                    f"worker{len(self.procs) - 1}",
                    [
                        sys.executable,
                        "-m",
                        "distributed.cli.dask_worker",
                        self.address,
                        "--nthreads",
                        str(self.nthreads),
                        "--no-nanny",
                        "--no-dashboard",
                        "--host",
                        "127.0.0.1",
                    ],
                )
            client.wait_for_workers(len(before) + n, timeout=START_S)
            by_pid = {p.pid: p for p in self.procs}
            new = sorted(set(client.scheduler_info(n_workers=-1)["workers"]) - before)  # only those: one there may be stopped
            self.workers.update({addr: by_pid[pid] for addr, pid in client.run(os.getpid, workers=new).items()})
        finally:
            client.close()

    def _start(self, name: str, cmd: list[str]) -> None:
        log = open(self.tmp / f"{name}.log", "wb")  # the child keeps its own copy
        self.procs.append(
            subprocess.Popen(cmd, env=_env(self.tmp, self.allowed_failures), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        )
        log.close()

    def close(self) -> None:
        for p in reversed(self.procs):
            with contextlib.suppress(OSError):
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        c.close()


def _validate(tmp: Path, folder: Path, *extra: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pypto_lsp", "validate", str(folder), "--json", "--no-cache", *extra],
        cwd=ROOT,
        env=_env(tmp),
        capture_output=True,
        text=True,
        timeout=RUN_S,
    )
    doc = json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else {}
    return proc.returncode, doc, proc.stderr


def _verdicts(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every file's result, but for what two runs of the same files may differ in."""
    return [{k: v for k, v in f.items() if k not in VOLATILE} for f in doc["files"]]


@pytest.mark.parametrize("example", ["softmax", "broken_elementwise", "broken_race"])
def test_same_verdicts_as_local(cluster: LocalCluster, tmp_path: Path, example: str) -> None:
    folder = EXAMPLES / example / "passes_dump"
    code_local, local, _ = _validate(tmp_path, folder, "--jobs", "1")
    code, remote, err = _validate(tmp_path, folder, "--cluster", cluster.address)
    assert code == code_local, err
    assert _verdicts(remote) == _verdicts(local)  # bit for bit: every number, finding and line
    assert remote["first_divergent"] == local["first_divergent"]
    assert remote["summary"]["executor"] == f"dask:{cluster.address}"
    assert local["summary"]["executor"] == "in-process"
    assert all(f["worker"] in cluster.workers for f in remote["files"]), remote["files"]
    assert all("worker" not in f for f in local["files"])


def test_a_worker_makes_big_products_on_one_thread(cluster: LocalCluster, tmp_path: Path) -> None:
    """Workers run one per core (docs/cluster.md), as the local pool's processes do: once a worker
    has served a file, a big weight's products across tasks take no helper thread there (the cores
    are the other workers')."""
    from pypto_lsp.exec.side_threads import helper_threads

    code, _doc, err = _validate(tmp_path, EXAMPLES / "softmax" / "passes_dump", "--cluster", cluster.address)
    assert code == 0, err
    client = distributed.Client(cluster.address, timeout=f"{START_S}s")
    try:
        counts = client.run(helper_threads)  # (pickled by name: the workers import it)
    finally:
        client.close()
    assert set(counts) == set(cluster.workers) and set(counts.values()) == {1}, counts


def test_no_scheduler_exits_2_within_seconds(tmp_path: Path) -> None:
    t0 = time.monotonic()
    code, _, err = _validate(tmp_path, EXAMPLES / "softmax" / "passes_dump", "--cluster", f"tcp://127.0.0.1:{_free_port()}")
    assert code == 2
    assert "cannot reach the Dask scheduler" in err
    assert time.monotonic() - t0 < 60  # the connection gives up after seconds (a loaded machine adds start-up)


@pytest.mark.parametrize("address", ["garbage", "tcp://", "a://b://c", "tls://127.0.0.1:1", "x" * 5000])
def test_an_address_dask_cannot_use_exits_2_at_once_with_one_line(tmp_path: Path, address: str) -> None:
    """A malformed address, or one of a transport needing settings it lacks: one line saying so,
    exit 2, at once. (A ``distributed.Client`` whose constructor fails keeps a half-started loop its
    finaliser waited 10 s on at exit, printing a traceback.)"""
    t0 = time.monotonic()
    code, _, err = _validate(tmp_path, EXAMPLES / "softmax" / "passes_dump", "--cluster", address)
    took = time.monotonic() - t0
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Dask scheduler" in lines[0] and len(lines[0]) < 800, err[-2000:]
    assert took < 60, took  # no hang (the traceback above came with a 10 s wait at exit)


def test_config_key_and_environment_name_the_cluster(cluster: LocalCluster, tmp_path: Path) -> None:
    work = tmp_path / "softmax"
    shutil.copytree(EXAMPLES / "softmax", work)
    with (work / "pypto-lsp.toml").open("a", encoding="utf-8") as fh:
        fh.write(f'cluster = "{cluster.address}"\n')
    code, doc, err = _validate(tmp_path, work / "passes_dump")
    assert code == 0, err
    assert doc["summary"]["executor"] == f"dask:{cluster.address}"


def test_a_second_run_takes_every_file_from_the_shared_cache(cluster: LocalCluster, tmp_path: Path) -> None:
    """Two CI runs against one shared cache (``PYPTO_LSP_CACHE_DIR``): the first runs the files on
    the workers, the second finds every result there, with the same verdicts. It still names the
    cluster it was given; no file says a worker ran it."""
    folder = EXAMPLES / "broken_softmax" / "passes_dump"

    def run() -> tuple[int, dict[str, Any], str]:
        proc = subprocess.run(
            [sys.executable, "-m", "pypto_lsp", "validate", str(folder), "--json", "--cluster", cluster.address],
            cwd=ROOT,
            env=_env(tmp_path),
            capture_output=True,
            text=True,
            timeout=RUN_S,
        )
        return proc.returncode, json.loads(proc.stdout), proc.stderr

    code1, first, err1 = run()
    code2, second, err2 = run()
    assert code1 == code2 == 1, (err1, err2)  # the broken example fails, both times
    assert _verdicts(second) == _verdicts(first)
    # every file of the first run names its worker: also those whose entry a worker wrote to the
    # shared cache before the client took the result (the client once read such entries back
    # from the cache and lost the worker's name)
    assert all(f.get("worker") in cluster.workers for f in first["files"]), [(f["file"], f.get("worker")) for f in first["files"]]
    assert all(f["cached"] and "worker" not in f for f in second["files"]), second["files"]
    assert second["summary"]["executor"] == first["summary"]["executor"] == f"dask:{cluster.address}"


def test_a_worker_reads_and_writes_the_shared_cache(cluster: LocalCluster, tmp_path: Path) -> None:
    """What a worker does with the shared cache, on a real worker: a result some other machine
    left there is answered from it (the file does not run), and a file it runs leaves its result
    there for the next run, whatever the client then does."""
    import torch

    from pypto_lsp.validate.cluster import goldens_blob, run_on_worker
    from pypto_lsp.validate.config import RunSettings
    from pypto_lsp.validate.folders import ResultCache
    from pypto_lsp.validate.golden import load_bundle

    example = EXAMPLES / "softmax"
    inputs = {k: v for k, v in load_bundle(example / "golden" / "inputs.pt").items() if isinstance(v, torch.Tensor)}
    expected = load_bundle(example / "golden" / "expected.pt")
    token, blob = goldens_blob(inputs, expected)
    dump = sorted((example / "passes_dump").glob("*.py"))[-1]
    text = dump.read_text(encoding="utf-8")
    settings = RunSettings()
    shared = ResultCache(tmp_path / "shared", enabled=True)  # only the worker writes here, until the test plants an entry
    key = shared.key(text, token, settings)
    options = {"cache_dir": str(shared.dir)}
    client = distributed.Client(cluster.address, timeout="30s", set_as_default=False)
    try:
        ran, worker = client.submit(run_on_worker, key, text, str(dump), token, blob, settings, options, pure=False).result(RUN_S)
        assert worker in cluster.workers
        assert ran["status"] == "pass"
        kept = ResultCache(shared.dir, enabled=True).get(key)
        assert kept is not None and {k: v for k, v in kept.items() if k != "cache_key"} == ran  # written by the worker

        planted = {**ran, "seconds": 1234.5}  # a result only the cache can give
        ResultCache(shared.dir, enabled=True).put(key, planted)
        read, _ = client.submit(run_on_worker, key, text, str(dump), token, blob, settings, options, pure=False).result(RUN_S)
        assert read["seconds"] == 1234.5  # answered from the cache, not run
    finally:
        client.close()


def _variants(src: Path, dst: Path, n: int) -> Path:
    """``n`` distinct files of the same program (a different constant each: no two share a
    result), and the folder's goldens: enough tasks that a worker is killed while it holds some."""
    shutil.copytree(src.parent, dst)
    dumps = dst / "passes_dump"
    last = sorted(dumps.glob("*.py"))[-1]
    text = last.read_text(encoding="utf-8")
    assert "pl.tile.adds(x_chunk__tile, 1.0)" in text
    for i in range(n):
        (dumps / f"{40 + i:02d}_after_Variant{i}.py").write_text(
            text.replace("pl.tile.adds(x_chunk__tile, 1.0)", f"pl.tile.adds(x_chunk__tile, {1.0 + i * 1e-9!r})"), encoding="utf-8"
        )
    return dumps


def _run_until_held(c: LocalCluster, tmp_path: Path, folder: Path, worker: str) -> subprocess.Popen[str]:
    """Start ``validate folder --cluster`` on ``c`` and return once ``worker`` holds a file of the run."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pypto_lsp", "validate", str(folder), "--json", "--no-cache", "--exact", "--cluster", c.address],
        cwd=ROOT,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watcher = distributed.Client(c.address, timeout="30s")
    try:
        deadline = time.monotonic() + RUN_S
        while not watcher.processing().get(worker) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.005)
        assert proc.poll() is None, "the run ended before it could be interrupted"
    finally:
        watcher.close()
    return proc


def _kill_mid_run(c: LocalCluster, tmp_path: Path, folder: Path) -> tuple[dict[str, Any], str, int, str, str]:
    """Validate ``folder`` on ``c`` and kill -9 a worker while it holds a file of the run."""
    victim, survivor = sorted(c.workers)[0], sorted(c.workers)[-1]  # one worker: the victim itself
    proc = _run_until_held(c, tmp_path, folder, victim)
    os.kill(c.workers[victim].pid, signal.SIGKILL)  # mid-run: it holds a file of this run
    out, err = proc.communicate(timeout=RUN_S)
    return json.loads(out), err, proc.returncode, victim, survivor


def test_a_file_whose_worker_is_lost_too_often_is_worker_lost(tmp_path: Path) -> None:
    """The scheduler gives up on a file after ``allowed-failures`` deaths (0 here: the first):
    that file is a ``worker-lost`` error, the others are run and reported as usual."""
    folder = _variants(EXAMPLES / "elementwise" / "passes_dump", tmp_path / "elementwise", 40)
    _, local, _ = _validate(tmp_path, folder, "--jobs", "1", "--exact")
    c = LocalCluster(tmp_path, allowed_failures=0)
    try:
        doc, err, code, _, survivor = _kill_mid_run(c, tmp_path, folder)
    finally:
        c.close()
    assert code == 1, err
    assert len(doc["files"]) == len(local["files"])
    lost = [f for f in doc["files"] if (f["error"] or {}).get("kind") == "worker-lost"]
    assert lost, "the killed worker held a file"
    assert all("worker" not in f and f["status"] == "error" for f in lost)
    by_file = {f["file"]: f for f in _verdicts(local)}
    for f in _verdicts(doc):
        if f not in [{k: v for k, v in x.items() if k not in VOLATILE} for x in lost]:
            assert f == by_file[f["file"]]


def test_a_worker_killed_mid_run_loses_no_file(tmp_path: Path) -> None:
    """The scheduler reschedules the killed worker's files on the other (Dask's own retries)."""
    folder = _variants(EXAMPLES / "elementwise" / "passes_dump", tmp_path / "elementwise", 40)
    _, local, _ = _validate(tmp_path, folder, "--jobs", "1", "--exact")
    c = LocalCluster(tmp_path)
    try:
        doc, err, code, victim, survivor = _kill_mid_run(c, tmp_path, folder)
    finally:
        c.close()
    assert code == 0, err
    assert len(doc["files"]) == len(local["files"]), err
    assert _verdicts(doc) == _verdicts(local), err  # every file reported, the same verdicts
    assert {f["worker"] for f in doc["files"]} <= {victim, survivor}
    assert any(f["worker"] == survivor for f in doc["files"])


def test_goldens_lost_with_the_workers_holding_them_are_sent_again(tmp_path: Path) -> None:
    """Dask cannot recover scattered data: when every worker holding the goldens dies (in the wild,
    one killed while the broadcast was still copying them to the others), the scheduler cancels
    every task that needs them. They are sent again and the files run again: every file reported,
    with the local verdicts. Here the only worker holds them; it is frozen mid-run (so the run cannot
    end first), a second one joins, then the first is killed."""
    folder = _variants(EXAMPLES / "elementwise" / "passes_dump", tmp_path / "elementwise", 40)
    _, local, _ = _validate(tmp_path, folder, "--jobs", "1", "--exact")
    c = LocalCluster(tmp_path, workers=1)
    try:
        (holder,) = c.workers
        proc = _run_until_held(c, tmp_path, folder, holder)
        os.kill(c.workers[holder].pid, signal.SIGSTOP)  # mid-run, with the only copy of the goldens
        c.add_workers(1)
        (newcomer,) = set(c.workers) - {holder}
        os.kill(c.workers[holder].pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=RUN_S)
    finally:
        c.close()
    doc = json.loads(out)
    assert proc.returncode == 0, (err, [f["error"] for f in doc["files"] if f["error"]][:3])
    assert _verdicts(doc) == _verdicts(local), err  # every file reported, the same verdicts
    assert any(f["worker"] == newcomer for f in doc["files"])
    assert {f["worker"] for f in doc["files"]} <= {holder, newcomer}


def test_every_worker_lost_reports_every_file_worker_lost_without_hanging(tmp_path: Path) -> None:
    """The only worker killed mid-run and none to take its place: the goldens cannot be sent again
    (a scatter waits 5 s for a worker, at most 3 times), so every file not run is ``worker-lost``,
    reported, and the run ends (exit 1) instead of waiting for a worker that never comes."""
    folder = _variants(EXAMPLES / "elementwise" / "passes_dump", tmp_path / "elementwise", 40)
    c = LocalCluster(tmp_path, workers=1)
    try:
        doc, err, code, _, _ = _kill_mid_run(c, tmp_path, folder)
    finally:
        c.close()
    assert code == 1, err
    assert len(doc["files"]) == len(list(folder.glob("*.py")))
    lost = [f for f in doc["files"] if f["status"] == "error"]
    assert lost and all(f["error"]["kind"] == "worker-lost" and "worker" not in f for f in lost), [f["error"] for f in lost][:3]
    assert all(f["status"] == "pass" for f in doc["files"] if f not in lost)


def test_a_scheduler_lost_mid_run_reports_every_file_and_ends(tmp_path: Path) -> None:
    """The scheduler killed mid-run: every file not run is an error of kind ``scheduler-lost``
    (never cached), the run ends with exit 1 instead of waiting, and stderr carries no Dask
    traceback (closing the client cancels its reconnection attempts, which Dask logs)."""
    folder = _variants(EXAMPLES / "elementwise" / "passes_dump", tmp_path / "elementwise", 40)
    c = LocalCluster(tmp_path, workers=1)
    try:
        (worker,) = c.workers
        proc = _run_until_held(c, tmp_path, folder, worker)
        os.kill(c.procs[0].pid, signal.SIGKILL)  # the scheduler
        out, err = proc.communicate(timeout=RUN_S)
    finally:
        c.close()
    assert proc.returncode == 1, err
    doc = json.loads(out)
    assert len(doc["files"]) == len(list(folder.glob("*.py")))
    failed = [f for f in doc["files"] if f["status"] != "pass"]
    assert failed and all(f["error"]["kind"] == "scheduler-lost" for f in failed), [f["error"] for f in failed][:3]
    assert "Traceback" not in err, err[-3000:]


_ORCH = "@pl.function(type=pl.FunctionType.Orchestration, level=pl.Level.CHIP, role=pl.Role.Orchestrator)"


def _lend_race_folder(root: Path, readers: int) -> Path:
    """A dump that writes its input (a bug it reports: it fails) and then computes for a while, and
    ``readers`` dumps that only read that input (each passes): on a worker with two threads a reader
    runs while the writer's write is in the shared input."""
    import torch

    dumps = root / "passes_dump"
    dumps.mkdir(parents=True)

    def program(body: list[str]) -> str:
        head = [
            "# pypto.program: Lend",
            "import pypto.language as pl",
            "",
            "@pl.program",
            "class Lend:",
            f"    {_ORCH}",
            "    def main(self, x: pl.Tensor[[4, 8], pl.FP32], out: pl.Out[pl.Tensor[[4, 8], pl.FP32]]) -> pl.Tensor[[4, 8], pl.FP32]:",
        ]
        return "\n".join([*head, *("        " + b for b in body), "        return out", ""])

    t = "pl.Tensor[[4, 8], pl.FP32]"
    (dumps / "00_after_Writer.py").write_text(
        program(
            [
                f"x_c: {t} = pl.tensor.slice(x, [4, 8], [0, 0])",
                f"d: {t} = pl.tensor.adds(x_c, 100.0)",
                f"x: {t} = pl.tensor.assemble(x, d, [0, 0])",
                "for i, (acc,) in pl.range(4000, init_values=(d,)):",
                f"    acc2: {t} = pl.tensor.adds(acc, 0.0)",
                f"    acc_rv: {t} = pl.yield_(acc2)",
                f"out: {t} = pl.tensor.assemble(out, acc_rv, [0, 0])",
            ]
        ),
        encoding="utf-8",
    )
    for i in range(1, readers + 1):
        (dumps / f"{i:02d}_after_Reader{i}.py").write_text(
            program(
                [
                    f"x_c: {t} = pl.tensor.slice(x, [4, 8], [0, 0])",
                    f"d: {t} = pl.tensor.adds(x_c, {1.0 + i * 1e-9!r})",
                    f"out: {t} = pl.tensor.assemble(out, d, [0, 0])",
                ]
            ),
            encoding="utf-8",
        )
    x = torch.arange(32, dtype=torch.float32).reshape(4, 8)
    torch.save({"x": x, "out": torch.zeros(4, 8)}, root / "tensors.pt")
    torch.save({"out": x + 1}, root / "expected.pt")
    return dumps


def test_a_worker_with_two_threads_gives_the_local_verdicts_when_a_dump_writes_its_input(tmp_path: Path) -> None:
    """Dask's default worker runs a thread per core: two files at once in one process, sharing the
    goldens. A dump that writes its input (lent, not copied) used to leave the write in the input
    for every later file of that worker (39 of 39 readers failed, run after run): a run lent an
    input another run still holds now reads its own copy of the values as lent."""
    dumps = _lend_race_folder(tmp_path / "race", 39)
    goldens = ["--inputs", str(tmp_path / "race" / "tensors.pt"), "--expected", str(tmp_path / "race" / "expected.pt"), "--exact"]
    _, local, _ = _validate(tmp_path, dumps, "--jobs", "1", *goldens)
    assert sum(f["status"] == "pass" for f in local["files"]) == 39
    c = LocalCluster(tmp_path, workers=1, nthreads=2)
    try:
        for _ in range(2):  # and the worker's next run too
            code, remote, err = _validate(tmp_path, dumps, "--cluster", c.address, *goldens)
            assert code == 1, err  # the writer fails, as locally
            assert _verdicts(remote) == _verdicts(local), err
    finally:
        c.close()


def test_workers_that_cannot_import_pypto_lsp_get_no_file(tmp_path: Path) -> None:
    """A worker that cannot import pypto_lsp died unpickling its first task, taking the goldens
    with it: every file came back "worker lost", nothing said why. The workers are asked first:
    with no fit worker the run stops at once (exit 2, saying which and why); with some, the files
    go to those only, and a warning names the others."""
    c = LocalCluster(tmp_path, workers=0)
    try:
        unfit = c.start_unfit_worker("unfit", "import sys; sys.modules['pypto_lsp'] = None")
        watcher = distributed.Client(c.address, timeout=f"{START_S}s")
        try:
            folder = EXAMPLES / "softmax" / "passes_dump"
            code, _, err = _validate(tmp_path, folder, "--cluster", c.address)
            assert code == 2, err
            assert f"no worker of the Dask cluster at {c.address} can run pypto-lsp" in err and unfit in err, err
            c.add_workers(1)
            fit = set(c.workers) - {unfit}
            assert len(fit) == 1, c.workers
            _, local, _ = _validate(tmp_path, folder, "--jobs", "1")
            code, remote, err = _validate(tmp_path, folder, "--cluster", c.address)
            assert code == 0, err
            assert _verdicts(remote) == _verdicts(local)
            assert {f["worker"] for f in remote["files"]} == fit
            assert "warning: 1 of 2 Dask workers get no file" in err and unfit in err, err
            assert unfit in watcher.scheduler_info(n_workers=-1)["workers"]  # still there: it got nothing
        finally:
            watcher.close()
    finally:
        c.close()


def test_workers_with_another_torch_get_no_file(tmp_path: Path) -> None:
    """A worker whose torch is not the client's may compute other bits, and its results would go
    into the shared cache under the client's torch: it gets no file. Alone, the run stops (exit
    2, saying which worker and which torch); beside a fit worker, a warning names it."""
    other = tmp_path / "other-torch"  # what another install of torch leaves for importlib.metadata
    (other / "torch-0.0.1.dist-info").mkdir(parents=True)
    (other / "torch-0.0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 0.0.1\n", encoding="utf-8")
    c = LocalCluster(tmp_path, workers=0)
    try:
        unfit = c.start_unfit_worker("other-torch", f"import sys; sys.path.insert(0, {str(other)!r})")
        folder = EXAMPLES / "softmax" / "passes_dump"
        code, _, err = _validate(tmp_path, folder, "--cluster", c.address)
        assert code == 2, err
        assert f"{unfit}: it has torch 0.0.1" in err and "and torch " in err, err
        c.add_workers(1)
        code, remote, err = _validate(tmp_path, folder, "--cluster", c.address)
        assert code == 0, err
        assert {f["worker"] for f in remote["files"]} == set(c.workers) - {unfit}
        assert "warning: 1 of 2 Dask workers get no file" in err and "it has torch 0.0.1" in err, err
    finally:
        c.close()
