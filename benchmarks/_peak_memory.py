"""Resident memory of this process, for the scale benchmarks: the fields of
``/proc/self/status`` and a sampler of their peaks.

``VmHWM`` is the kernel's resident high-water mark (what a memory limit
watches; it counts resident pages of mapped files); the sampler adds the
peaks of ``RssAnon`` (memory of the process itself) and ``RssFile`` (resident
pages of mapped files), which ``VmHWM`` does not separate.
"""

from __future__ import annotations

import threading


def status() -> dict[str, int]:
    """Memory fields of /proc/self/status in bytes."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
                out[key] = int(rest.split()[0]) * 1024
    return out


class PeakSampler:
    """Peaks of RssAnon / RssFile of this process, sampled in a thread every
    ``every`` seconds: ``start()`` ... ``stop()`` (which returns the peaks and
    ``VmHWM``), or a ``with`` block."""

    def __init__(self, every: float = 0.05):
        self.every = every
        self.peak = {"RssAnon": 0, "RssFile": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            st = status()
            for k in self.peak:
                self.peak[k] = max(self.peak[k], st.get(k, 0))
            self._stop.wait(self.every)

    def start(self) -> PeakSampler:
        self._thread.start()
        return self

    def stop(self) -> dict:
        self._stop.set()
        self._thread.join()
        return {**self.peak, "VmHWM": status()["VmHWM"]}

    def __enter__(self) -> PeakSampler:
        return self.start()

    def __exit__(self, *exc):
        self.stop()
