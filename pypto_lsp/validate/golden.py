"""Golden tensor bundles: ``torch.save`` dicts (loaded with ``weights_only=True``) or ``.safetensors``."""

from __future__ import annotations

import io
import os
import secrets
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from .lend import keep_source


class GoldenError(Exception):
    """A missing, corrupt or ill-typed golden bundle; the message says which file and why."""


# keyed by a hash of the file's bytes, never by path/size/mtime: a golden rewritten with other
# values of the same size and its mtime restored must not be served from here
_CACHE: dict[str, dict[str, torch.Tensor]] = {}


def read_regular(p: Path) -> bytes:
    """The bytes of a regular file; a FIFO, device or folder is refused without opening it for
    a blocking read (a FIFO would hang the run)."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise GoldenError(f"golden bundle not found: {p}") from exc
        raise GoldenError(f"cannot open golden bundle {p}: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise GoldenError(f"golden bundle {p} is not a regular file ({_kind(st.st_mode)})")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError as exc:
        raise GoldenError(f"cannot read golden bundle {p}: {exc.strerror or exc}") from exc
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"


def tensor_problem(t: torch.Tensor) -> str | None:
    """Why ``t`` cannot be a golden (what it is), or None for a dense CPU-loadable tensor with data."""
    if getattr(t, "is_nested", False):
        return "a nested tensor"
    if t.layout != torch.strided:
        return f"a sparse tensor ({str(t.layout).replace('torch.', '')})"
    if t.is_meta or t.device.type == "meta":
        return "a meta tensor (a shape without values)"
    if t.is_quantized:
        return "a quantized tensor"
    if t.device.type != "cpu":
        return f"a tensor on {t.device.type}"
    return None


def _decode(raw: bytes, suffix: str) -> object:
    if suffix == ".safetensors":
        from safetensors.torch import load as load_safetensors

        return load_safetensors(raw)
    return torch.load(io.BytesIO(raw), map_location="cpu", weights_only=True)


def _remaker(raw: bytes, suffix: str, key: str) -> Callable[[], torch.Tensor]:
    def remake() -> torch.Tensor:
        data = _decode(raw, suffix)
        assert isinstance(data, Mapping)
        return data[key]

    return remake


def load_bundle(path: str | Path) -> dict[str, torch.Tensor]:
    """Load a ``dict[str, Tensor]``; never unpickles code. Regular files only; cached per file version."""
    p = Path(path)
    # the process cache is keyed by the file's identity and change times: a rewrite changes the
    # ctime, which no tool can set back (hashing the content cost ~0.4 s a run at hidden 4096)
    try:
        st = p.stat()
        key = f"{p.resolve()}:{st.st_dev}:{st.st_ino}:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    except OSError:
        key = None
    hit = _CACHE.get(key) if key is not None else None
    if hit is not None:
        return hit
    raw = read_regular(p)
    try:
        data = _decode(raw, p.suffix)
    except Exception as exc:  # corrupt file, pickle with code, wrong format ...
        raise GoldenError(f"cannot read golden bundle {p}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc
    if not isinstance(data, Mapping):
        raise GoldenError(f"golden bundle {p} holds a {type(data).__name__}, expected a dict of tensors")
    out: dict[str, torch.Tensor] = {}
    for k, v in data.items():
        if not isinstance(k, str):
            raise GoldenError(f"golden bundle {p}: key {k!r} is not a string")
        if not isinstance(v, torch.Tensor):
            raise GoldenError(f"golden bundle {p}: '{k}' is a {type(v).__name__}, expected a tensor")
        problem = tensor_problem(v)
        if problem is not None:
            raise GoldenError(f"golden bundle {p}: '{k}' is {problem}; a golden is a dense tensor with its values")
        out[k] = v
        # a run that writes into an input is undone from these bytes (validate.lend), not from a copy
        keep_source(v, _remaker(raw, p.suffix, k))
    if len(_CACHE) > 16:
        _CACHE.clear()
    if key is not None:
        _CACHE[key] = out
    return out


def _save_replacing(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """``torch.save`` into a new file beside ``path``, then renamed onto it: a symlinked (or
    dangling) ``expected.pt`` is replaced by a file, never written through to where it points,
    and a failed save leaves the old bundle whole."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save(tensors, fh)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def save_golden(
    directory: str | Path,
    inputs: Mapping[str, torch.Tensor],
    expected: Mapping[str, torch.Tensor],
    *,
    dumps: str | Path | None = None,
    entry: str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    config: str | Path | None = None,
    extra: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``inputs.pt`` and ``expected.pt`` into ``directory``.

    With ``dumps`` (a ``passes_dump/`` folder), also add a ``[[cases]]`` entry to
    ``config`` (default: ``pypto-lsp.toml`` in the parent of ``directory``; a ``pyproject.toml``
    gets it under ``[tool.pypto-lsp]``) with ``extra`` keys (``seed``, ``generate``), through
    the one case writer (:func:`pypto_lsp.validate.case_writer.write_case`). The entry is checked
    before anything is written: GoldenError, and no file written, when it cannot be added.
    Returns the directory.
    """
    from .case_writer import case_entry_text, write_case
    from .config import ConfigError

    d = Path(directory)
    for name, bundle in (("inputs", inputs), ("expected", expected)):
        for k, v in bundle.items():
            if not isinstance(k, str) or not isinstance(v, torch.Tensor):
                raise GoldenError(f"{name}: every entry must be str -> Tensor, got {k!r}: {type(v).__name__}")
    cfg: Path | None = None
    case: dict[str, Any] = {}
    if dumps is not None:
        cfg = Path(config) if config is not None else d.parent / "pypto-lsp.toml"
        base = cfg.parent.resolve()

        def rel(p: Path) -> str:
            try:
                return p.resolve().relative_to(base).as_posix()
            except ValueError:
                return p.resolve().as_posix()

        case = {
            "dumps": rel(Path(dumps)),
            "inputs": rel(d / "inputs.pt"),
            "expected": rel(d / "expected.pt"),
            "entry": entry or None,
            "rtol": float(rtol) if rtol is not None else None,
            "atol": float(atol) if atol is not None else None,
            **(extra or {}),
        }
        try:
            case_entry_text(cfg, case)  # refuse before writing the bundle
        except ConfigError as exc:
            raise GoldenError(str(exc)) from exc
    d.mkdir(parents=True, exist_ok=True)
    for name, bundle in (("inputs", inputs), ("expected", expected)):
        _save_replacing({k: v.detach().cpu().clone() for k, v in bundle.items()}, d / f"{name}.pt")
    if cfg is not None:
        try:
            write_case(cfg, case)
        except ConfigError as exc:
            raise GoldenError(str(exc)) from exc
    return d
