"""GPU timing: timestamp queries around compute passes and copies, wall clock where the device has none.

Timestamps are converted to nanoseconds with the queue's timestamp period
(``wgpuQueueGetTimestampPeriod``).  Each repetition is its own pass with its own
pair of queries, so the spread over repetitions is real.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np
import wgpu
from wgpu.backends.wgpu_native._ffi import lib
from wgpu.backends.wgpu_native.extras import write_timestamp

from conformance.gpu.device import Device


@dataclass(frozen=True)
class Timing:
    """Seconds per repetition, and how they were measured."""

    samples: tuple[float, ...]
    method: str  # "timestamp" or "wall"
    settled: bool | None = None  # timestamps: whether the speed had stopped changing (None: wall clock, unsettled)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        q = np.percentile(self.samples, [25, 75])
        return float((q[1] - q[0]) / self.median) if self.median else 0.0


def timestamp_period_ns(device: Device) -> float:
    try:
        return float(lib.wgpuQueueGetTimestampPeriod(device.device.queue._internal))
    except Exception:  # another backend of wgpu-py: WebGPU reports nanoseconds
        return 1.0


class Timer:
    """Times GPU work recorded by callbacks, ``reps`` times after untimed warm-up runs.

    Warm-up lasts at least ``warmup`` runs and ``warmup_seconds`` of sustained load: a GPU left idle
    between measurements (while the host prepares data) drops its clocks, and brings them back only
    after a while under load. The H200 (nvidia-smi every 100 ms) fell from 1980 to the idle 345 MHz
    within a second of idling and needed 1-3 s of load to climb back; at 345 MHz a copy shader moved
    1.66 TB/s instead of 4.27 and the kernel/copy ratio dropped from 1.00 to 0.92. Short bursts never
    raised it; one second of sustained warm-up did, hence the default. With timestamps the timer then
    *settles*: probe batches of ``probe_reps`` run back to back until two in a row agree within
    ``settle_tolerance`` (at most ``settle_seconds``), catching a ramp still under way. (A clock that
    stays low looks settled too: the sustained warm-up is what prevents that.) ``clock`` reads seconds (tests give
    one that advances by a fixed step, so what they check does not depend on the machine's speed);
    ``warmup_runs`` holds how many warm-up runs the last measurement made.
    """

    def __init__(
        self,
        device: Device,
        *,
        reps: int = 20,
        warmup: int = 3,
        warmup_seconds: float = 1.0,
        settle_seconds: float = 3.0,
        settle_tolerance: float = 0.03,
        probe_reps: int = 5,
        force_wall: bool = False,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.device, self.clock, self.warmup_runs = device, clock, 0
        self.reps, self.warmup, self.warmup_seconds = reps, warmup, warmup_seconds
        self.settle_seconds, self.settle_tolerance, self.probe_reps = settle_seconds, settle_tolerance, probe_reps
        features = device.profile.features
        self.passes_timed = "timestamp-query" in features and not force_wall
        self.copies_timed = self.passes_timed and "timestamp-query-inside-encoders" in features
        self.period = timestamp_period_ns(device) if self.passes_timed else 1.0

    def time_pass(self, record: Callable[[object], None]) -> Timing:
        """``record(compute_pass)`` sets the pipeline, bind groups and dispatches of one repetition."""
        return self.time_passes([record])[0]

    def time_passes(self, records: Sequence[Callable[[object], None]]) -> list[Timing]:
        """One Timing per record, the records' passes interleaved in every repetition and warm-up run.

        A GPU whose speed drifts during a measurement then slows every record at the same moments, which
        keeps their ratios closer (not equal: at idle clocks compute-heavy kernels slow down more than a
        copy). Without timestamps a repetition cannot be split, so each record is timed on its own.
        """
        if not self.passes_timed and len(records) > 1:
            return [self.time_pass(record) for record in records]

        def encode(encoder, query_set, i):
            for j, record in enumerate(records):
                writes = None
                if query_set is not None:
                    k = 2 * (i * len(records) + j)
                    writes = {
                        "query_set": query_set,
                        "beginning_of_pass_write_index": k,
                        "end_of_pass_write_index": k + 1,
                    }
                cpass = encoder.begin_compute_pass(timestamp_writes=writes)
                record(cpass)
                cpass.end()

        return self._time(encode, timed=self.passes_timed, per_rep=len(records))

    def time_encoder(self, record: Callable[[object], None], *, warm: bool = False) -> Timing:
        """``record(encoder)`` records encoder-level work (a buffer copy); ``warm``: the GPU was just busy,
        so only the ``warmup`` runs, not ``warmup_seconds``."""

        def encode(encoder, query_set, i):
            if query_set is not None:
                write_timestamp(encoder, query_set, 2 * i)
            record(encoder)
            if query_set is not None:
                write_timestamp(encoder, query_set, 2 * i + 1)

        return self._time(encode, timed=self.copies_timed, warm=warm)[0]

    def _wait(self) -> None:
        """Block until submitted work is done (a tiny read-back: wgpu 0.32's on_submitted_work_done is broken)."""
        if not hasattr(self, "_fence"):
            self._fence = self.device.device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
        self.device.device.queue.read_buffer(self._fence)

    def _time(self, encode, *, timed: bool, per_rep: int = 1, warm: bool = False) -> list[Timing]:
        """``per_rep`` Timings: ``encode`` writes that many timed spans per repetition."""
        dev = self.device.device
        start, runs = self.clock(), 0
        min_seconds = 0.0 if warm else self.warmup_seconds
        while runs < self.warmup or self.clock() - start < min_seconds:
            encoder = dev.create_command_encoder()
            encode(encoder, None, 0)
            dev.queue.submit([encoder.finish()])
            runs += 1
            if runs % self.warmup == 0:
                self._wait()  # keep the queue short: the warm-up is measured in wall time
        self.warmup_runs = runs
        self._wait()
        if not timed:
            samples = []
            for _ in range(self.reps):
                start = self.clock()
                encoder = dev.create_command_encoder()
                encode(encoder, None, 0)
                dev.queue.submit([encoder.finish()])
                self._wait()
                samples.append(self.clock() - start)
            return [Timing(tuple(samples), "wall")]
        settled = self._settle(encode, per_rep)
        return [replace(t, settled=settled) for t in self._timestamps(encode, self.reps, per_rep)]

    def _settle(self, encode, per_rep: int) -> bool:
        """Probe batches back to back until the GPU's speed stops changing (clocks up); False if it never did."""
        start, previous = self.clock(), None
        while True:
            current = sum(t.median for t in self._timestamps(encode, self.probe_reps, per_rep))
            if previous is not None and abs(current - previous) <= self.settle_tolerance * previous:
                return True
            if self.clock() - start >= self.settle_seconds:
                return False
            previous = current

    def _timestamps(self, encode, reps: int, per_rep: int) -> list[Timing]:
        """``reps`` repetitions in one submission, ``per_rep`` timed spans each."""
        dev = self.device.device
        count = 2 * reps * per_rep
        query_set = dev.create_query_set(type=wgpu.QueryType.timestamp, count=count)
        resolve = dev.create_buffer(size=8 * count, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        encoder = dev.create_command_encoder()
        for i in range(reps):
            encode(encoder, query_set, i)
        encoder.resolve_query_set(query_set, 0, count, resolve, 0)
        dev.queue.submit([encoder.finish()])
        ticks = np.frombuffer(dev.queue.read_buffer(resolve), dtype=np.uint64).astype(np.int64)
        resolve.destroy()
        query_set.destroy()
        elapsed = ((ticks[1::2] - ticks[0::2]) * self.period * 1e-9).reshape(reps, per_rep)
        return [Timing(tuple(float(s) for s in elapsed[:, j]), "timestamp") for j in range(per_rep)]
