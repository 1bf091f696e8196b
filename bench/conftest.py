"""Print Cython-vs-reference ratios from the benchmarks of this run.

A benchmark sets ``benchmark.group`` (one comparison, e.g. "pointwise gaussian
d=100 m=1000"), ``benchmark.extra_info["label"]`` (the engine or peer:
"cython", "numpy", "limit", "sklearn", ...), optionally
``extra_info["ref"]`` (the reference label of the group, "cython" unless
set) and, when it times several steps in one call,
``benchmark.extra_info["steps"]``.  At the end of the session a table gives
each label's median per step and its ratio to the reference label of the
same group, all measured in the same run.

BLAS runs on one thread in every benchmark: a step's matrix-vector product is
too small to split, and on a shared 2-core machine threads waiting for a core
made timings swing tenfold.
"""
from collections import defaultdict

import pytest
from threadpoolctl import threadpool_limits


@pytest.fixture(autouse=True)
def one_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


def pytest_terminal_summary(terminalreporter, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups, refs = defaultdict(dict), {}
    for bench in session.benchmarks:
        refs[bench.group] = bench.extra_info.get("ref", "cython")
        label = bench.extra_info.get("label", bench.name)
        steps = bench.extra_info.get("steps", 1)
        groups[bench.group][label] = bench.stats.median / steps
    write = terminalreporter.write_line
    write("")
    write("okl benchmark ratios (median per step; ratio = label / reference label, same run)")
    write(f"{'group':<44} {'label':<10} {'median':>12} {'ratio':>8}")
    for group in sorted(groups, key=str):
        medians = groups[group]
        ref = medians.get(refs[group])
        for label, median in sorted(medians.items(), key=lambda kv: kv[1]):
            ratio = f"{median / ref:8.2f}" if ref else "       -"
            write(f"{group:<44} {label:<10} {_fmt(median):>12} {ratio}")


def _fmt(seconds):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"
