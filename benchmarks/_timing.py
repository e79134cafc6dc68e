"""Timing shared by the benchmark scripts."""

from __future__ import annotations

import time


def best_seconds(run, repeats: int) -> float:
    """The fastest of ``repeats`` wall-clock runs of ``run()``."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def best_seconds_interleaved(runs: dict[str, object], repeats: int) -> dict[str, float]:
    """The fastest of ``repeats`` runs of each of ``runs``, taken in turn (a, b, c, then
    the next round in another order): on a shared machine whose speed drifts, each sees
    the same conditions, so their ratios hold better than those of runs measured one
    after the other.  The first round keeps the given order, later ones a shuffled order
    (fixed seeds): a run that always followed the same one would inherit its after-effects
    (a thread pool still spinning, memory still held) in every round."""
    import random

    best = dict.fromkeys(runs, float("inf"))
    for round_ in range(repeats):
        names = list(runs)
        if round_:
            random.Random(round_).shuffle(names)
        for name in names:
            run = runs[name]
            started = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def machine() -> str:
    """The machine a benchmark ran on, printed above its ratios: the CPU model and cores,
    the instruction sets our kernels and NumPy's sort care about (AES-NI and VAES for the
    keyed PRF; AVX-512 as NumPy uses it, which ``NPY_DISABLE_CPU_FEATURES`` turns off),
    memory and load."""
    import os
    import platform

    import numpy as np

    model, flags = "", set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # NumPy 1.x
        from numpy.core import _multiarray_umath as umath
    sets = ", ".join(
        f"{name} {'yes' if flag in flags else 'no'}"
        for name, flag in [("AES-NI", "aes"), ("VAES", "vaes"), ("CPU AVX-512", "avx512f")]
    )
    targets = getattr(umath, "__cpu_targets_info__", None)  # NumPy >= 2.4: what each kernel dispatches to
    if targets:
        current = {v["current"] for kernels in targets.values() for v in kernels.values()}
        used = any("V4" in c or "AVX512" in c for c in current)
    else:
        used = bool(umath.__cpu_features__.get("AVX512_SKX"))
    avx512 = "NumPy AVX-512 " + ("yes" if used else "no")
    disabled = os.environ.get("NPY_DISABLE_CPU_FEATURES")
    avx512 += f" (NPY_DISABLE_CPU_FEATURES={disabled})" if disabled else ""
    memory = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as info:
            fields = dict(line.split(":", 1) for line in info)
        memory = (
            f", {int(fields['MemTotal'].split()[0]) / 2**20:.0f} GiB RAM "
            f"({int(fields['MemAvailable'].split()[0]) / 2**20:.1f} available)"
        )
    except (OSError, KeyError, ValueError):
        pass
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    model = model or platform.processor() or "unknown CPU"
    return f"machine: {model}, {os.cpu_count()} logical cores ({sets}, {avx512}){memory}{load}; NumPy {np.__version__}"
