"""The previous pass's values: which names of this pass have a partner in the pass before (the
pairing localisation makes), and one run of that pass recording them. The run is started on a
thread of its own, bounded by the case's timeout: a slow previous pass never holds up the
adapter (Locals are shown without its values until it is done) nor the run being debugged."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..validate.engine import run_text
from ..validate.localize import partner_names, place
from .launch import Prepared
from .state import FrameInfo, Recorder, trip_key

__all__ = ["PreviousPass"]


class PreviousPass:
    def __init__(self, prep: Prepared, output: Callable[[str], None]) -> None:
        self.prep = prep
        self.output = output
        self.partner: dict[str, str] = {}  # this pass's name -> its partner's
        self.records: dict[tuple[Any, ...], tuple[int, Any]] = {}
        self.trips: dict[tuple[Any, ...], int] = {}  # the previous pass's loop runs (state.trip_key)
        self.enabled = True  # launch: recordPrevious
        self._started = False
        self._lock = threading.Lock()
        self.done = threading.Event()
        self.new_run()

    def new_run(self) -> None:
        """The debugged run starts (again): occurrences are counted afresh."""
        self.occ: dict[tuple[Any, ...], int] = {}
        # (name, *localize.place) -> (its latest partner's record key, the lanes then)
        self.last_prev: dict[tuple[Any, ...], tuple[tuple[Any, ...], int]] = {}
        self.trip_counts: dict[tuple[Any, ...], int] = {}

    def trips_before(self, key: str) -> int | None:
        """How often the partner of this run of loop ``key`` went round in the previous pass (None: not known)."""
        pn = self.partner.get(key)
        k = trip_key(key, self.trip_counts)
        if pn is None or not self.done.is_set():
            return None
        return self.trips.get((pn, *k[1:]))

    def values_of(self, bound: dict[str, Any], ctx: Any) -> dict[str, Any]:
        """The partners' values of what a statement of the debugged run just bound (in run
        context ``ctx``), as far as recorded; every occurrence is counted, recorded or not."""
        prev: dict[str, Any] = {}
        records = self.records if self.done.is_set() else {}
        for name in bound:
            pn = self.partner.get(name)
            if pn is None:
                continue
            at = place(ctx)  # localisation's pairing: rank r's value with rank r's
            where = (name, *at)
            n = self.occ.get(where, -1) + 1
            self.occ[where] = n
            key = (pn, *at, n)
            self.last_prev[where] = (key, ctx.lanes)
            rec = records.get(key)
            if rec is not None and rec[0] == ctx.lanes:
                prev[name] = rec[1]
        return prev

    def pair(self) -> None:
        """Each name of this pass with a partner in the previous one (its run comes later)."""
        p = self.prep
        if not self.enabled or p.previous is None or p.previous_text is None:
            self.done.set()
            return
        pairs = partner_names(p.previous_text, p.text, entry=p.settings.entry, previous_filename=str(p.previous), filename=str(p.path))
        if pairs:
            self.partner = pairs
        else:
            self.done.set()

    def start(self) -> None:
        """Run the previous pass once (on a thread of its own), recording its values."""
        with self._lock:
            if self._started or self.done.is_set():
                return
            self._started = True
        threading.Thread(target=self._record, name="pypto-debug-previous", daemon=True).start()

    def wait(self, seconds: float | None) -> bool:
        """Start the recording if need be and wait for it up to ``seconds`` (None: to its end)."""
        self.start()
        return self.done.wait(seconds)

    def _record(self) -> None:
        p = self.prep
        try:
            assert p.previous is not None and p.previous_text is not None
            rec = Recorder(set(self.partner.values()))
            fr = run_text(
                p.previous_text,
                p.inputs,
                {},
                filename=str(p.previous),
                entry=p.settings.entry,
                trace=rec,
                memory=p.settings.memory,
                backend=p.settings.backend,
                exact=p.settings.exact,
                timeout=p.settings.timeout_s or None,
            )
            if fr.error is not None:
                self.output(f"the previous pass {p.previous.name} did not run ({fr.error.message}): no previous values\n")
            else:
                self.records, self.trips = rec.records, rec.trips
        except Exception as exc:  # the previous pass only adds values: go on without them
            self.output(f"previous pass not recorded: {exc}\n")
        finally:
            self.done.set()

    def of(self, fi: FrameInfo, wait: float = 0.0) -> dict[str, Any]:
        """``fi``'s names -> the previous pass's values (what is known: the recording is started
        on first use and waited for at most ``wait`` seconds)."""
        if fi.previous_keys:
            if not self.wait(wait):
                return fi.previous  # not yet: the next stop shows them
            for name, (key, lanes) in fi.previous_keys.items():
                rec = self.records.get(key)
                if rec is not None and rec[0] == lanes:
                    fi.previous.setdefault(name, rec[1])
            fi.previous_keys = {}
        return fi.previous
