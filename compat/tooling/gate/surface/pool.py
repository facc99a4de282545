# SPDX-License-Identifier: Apache-2.0
"""Independent scans of many files in worker processes, their results in the order asked: a caller that merges
them in that order gets what one process gives. Only where it pays (enough source to scan, more than one CPU) and
where forked processes can be had safely (no other thread); otherwise None, and the caller scans the files itself.

``MCORE_COMPAT_WORKERS``: at most this many processes (1: none); by default one per CPU this process may run on.
"""
from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

MIN_BYTES = 1 << 20  # less source than this: one process (starting workers costs more than they save)
CHUNK = 4  # jobs handed to a worker at a time


def worker_count() -> int:
    """The processes to use: the CPUs this process may run on, at most os.cpu_count(), capped by
    ``MCORE_COMPAT_WORKERS``."""
    cpus = os.cpu_count() or 1
    try:
        cpus = min(cpus, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        pass
    try:
        cap = int(os.environ.get("MCORE_COMPAT_WORKERS", "") or cpus)
    except ValueError:
        cap = cpus
    return max(1, min(cpus, cap))


def map_in_workers(function: Callable, jobs: list, sizes: list[int]) -> list | None:
    """``[function(*job) for job in jobs]``, computed by worker processes (``function`` a module-level function,
    jobs and results picklable; ``sizes``: each job's bytes, the largest are handed out first). None where it does
    not pay or no worker process can be started or one dies: then nothing was computed that the caller keeps."""
    workers = min(worker_count(), len(jobs))
    if workers < 2 or sum(sizes) < MIN_BYTES or not only_thread():
        return None
    try:
        context = multiprocessing.get_context("fork")  # the workers inherit the loaded modules: nothing to import
    except ValueError:
        return None
    order = sorted(range(len(jobs)), key=lambda index: -sizes[index])
    results: list = [None] * len(jobs)
    try:
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as executor:
            for index, result in zip(order, executor.map(_call, [(function, jobs[i]) for i in order],
                                                         chunksize=CHUNK)):
                results[index] = result
    except (BrokenProcessPool, OSError):
        return None
    return results


def only_thread() -> bool:
    """No other thread runs in this process: a forked child gets no lock another thread holds (the command line
    runs none; a program that calls the scan from a thread of its own gets one process)."""
    return threading.active_count() == 1


def _call(task: tuple):
    function, job = task
    return function(*job)
