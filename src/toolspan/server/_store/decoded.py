"""Spans decoded from their stored form, kept for the next read (``DecodedSpans``).

A stored form decodes to the same span every time (``codec.decode`` is a function of the form alone), so a
read that meets a form it decoded before takes the span decoded then, and decodes only the forms it has not
met. What a live page or stream reads again at each commit is kept (``keep``): a live trace read again
decodes only its new and changed spans (a changed span is a new form), and its page's whole document none of
its first screen's spans. Any read takes what is kept, but other reads (a view, a lookup) keep nothing: a
trace read once, as most are, costs no memory after its read, and reading many traces (a client polling
each one while it ingests) does not push out a live trace's spans. Spans are immutable and the bridge never
changes the values they hold, so one span serves every reader.

Bounded by an estimate of the memory kept: ``COST`` times the size of each stored form (the form, kept as
the key, and its decoded span), at most ``max_bytes`` in all, the least recently read going first (0: none
kept). Thread-safe: reads run in the thread pool; a form is decoded outside the lock.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final, cast

from toolspan.bridge.model import Span
from toolspan.server._rows.codec import decode

__all__ = ["COST", "DECODED_BYTES", "DecodedSpans"]

# The memory a kept span is counted as, per byte of its stored form: the form (1) and the decoded span
# (about 3.8 times the form on the agent workload of ``benchmarks/gen_agent_spans.py``: its attribute dict,
# their texts and the span's own fields).
COST: Final = 5
# How much a store keeps by default: about 16,000 spans of that workload (a live 10,000-call run's page).
DECODED_BYTES: Final = 64 * 1024 * 1024


class DecodedSpans:
    """Decoded spans by stored form, at most ``max_bytes`` of estimated memory (``COST``). ``hits``,
    ``misses`` (of the forms looked up: none while nothing is kept and a read keeps nothing), ``size`` and
    how many are kept are what ``/healthz`` shows (``stats``)."""

    __slots__ = ("_kept", "_lock", "hits", "max_bytes", "misses", "size")

    def __init__(self, max_bytes: int = DECODED_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self.misses = 0
        self._kept: OrderedDict[str | bytes, Span] = OrderedDict()
        self._lock = threading.Lock()

    def decode(self, forms: Sequence[str | bytes], keep: bool = False) -> list[Span]:
        """The span of each stored form, in order: those kept taken as they are, the others decoded, and
        kept with ``keep``. A form that cannot be decoded raises as ``codec.decode`` does."""
        kept = self._kept
        if self.max_bytes <= 0 or not (keep or kept):
            # Nothing to take and nothing to keep (a read of a store no live page follows): no form is
            # hashed. (A read racing a first keep decodes what it could have taken: the same spans.)
            return [decode(form) for form in forms]
        out: list[Span | None] = [None] * len(forms)
        missing: list[int] = []
        with self._lock:
            get, touch = kept.get, kept.move_to_end
            for i, form in enumerate(forms):
                span = get(form)
                if span is None:
                    missing.append(i)
                else:
                    touch(form)
                    out[i] = span
            self.hits += len(forms) - len(missing)
            self.misses += len(missing)
        for i in missing:
            out[i] = decode(forms[i])
        if keep and missing:
            with self._lock:
                for i in missing:
                    form = forms[i]
                    if form not in kept:
                        kept[form] = cast(Span, out[i])
                        self.size += len(form) * COST
                while self.size > self.max_bytes and kept:
                    dropped, _ = kept.popitem(last=False)
                    self.size -= len(dropped) * COST
        return cast("list[Span]", out)  # every one filled in: kept, or decoded above

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"kept": len(self._kept), "bytes": self.size, "hits": self.hits, "misses": self.misses}
