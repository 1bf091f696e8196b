"""CI: the engine twins, the chunk and one-event paths and the feature blocks at every SIMD level
okl compiles and under every OpenBLAS kernel set that changes results, on this machine.

    python .ci/variants.py [--deadline UNIX-TIME] [more pytest arguments]

okl must be installed in the running Python.  The main suite ran the machine's own configuration
(OPENBLAS_CORETYPE as the environment has it, the best SIMD level the CPU runs); each leg here
changes one of the two, in child processes:

- a SIMD level (docs/architecture.md, "SIMD levels") runs where `OKL_SIMD=level` gives that
  level, that is where the CPU supports it; a level it does not is reported as not run;
- an OpenBLAS core type runs where numpy's and scipy's OpenBLAS take it (threadpoolctl names the
  kernels they then run: OpenBLAS maps a core type its build lacks to another one), multiply small
  integers exactly (a kernel set this CPU cannot run crashes or fails this: not run), and round a
  set of float products of assorted shapes differently from the machine's own kernels (the same
  bits: the same results as the main suite's, not run again).

Legs run two at a time (2 cores).  A leg that would start after --deadline is reported as not run.
Prints what each probe and leg found; exits 1 if a leg failed.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# engine twins, blocks of rows and features, chunks against events, SIMD levels
TESTS = """
    test_engines test_expansion test_distances test_kernels test_exp test_matern test_merge
    test_linear test_kernel_params test_approximation test_features test_pa_approximation
    test_multiclass test_multiclass_features test_multiclass_pa test_multikernel
    test_multikernel_multiclass test_one_event test_one_event_budget test_feature_one_event
    test_pa_one_event test_pairwise_one_event test_ready_event test_row_types
    test_streaming_params test_simd test_krls test_conformal
""".split()
SIMD_LEVELS = ["baseline", "x86-64-v3", "x86-64-v4"]
# OpenBLAS's x86-64 core types, oldest first (a DYNAMIC_ARCH build maps the ones it lacks)
CORE_TYPES = ["Prescott", "Core2", "Nehalem", "Barcelona", "Sandybridge", "Bulldozer", "Haswell",
              "Zen", "SkylakeX", "Cooperlake", "SapphireRapids"]

SIMD_PROBE = "from okl._core._kernels import simd_level; print(simd_level())"
BLAS_PROBE = r"""
import hashlib, json
import numpy as np
import scipy.linalg.blas as blas
from threadpoolctl import threadpool_info

kernels = sorted({i["architecture"] for i in threadpool_info() if i["internal_api"] == "openblas"})
rng = np.random.default_rng(0)
A, B = rng.integers(-9, 10, (67, 45)), rng.integers(-9, 10, (45, 33))
exact = all(np.array_equal(P, A @ B) for P in (A.astype(float) @ B.astype(float),
                                                blas.dgemm(1.0, A.astype(float), B.astype(float))))
X, C = rng.normal(size=(700, 30)), rng.normal(size=(30, 30))
bits = hashlib.sha256()
for rows in (1, 2, 3, 5, 8, 37, 100, 512, 700):   # matrix products a block of rows at a time
    for lo in range(0, 700, rows):
        bits.update((X[lo:lo + rows] @ C).tobytes())
    bits.update(blas.dgemm(1.0, X[:rows], C).tobytes())
for d in (3, 30):                                  # matrix-vector and dot products
    bits.update((X[:, :d] @ X[0, :d]).tobytes() + blas.dgemv(1.0, X[:, :d], X[1, :d]).tobytes())
    bits.update(np.float64(X[2, :d] @ X[3, :d]).tobytes())
print(json.dumps({"kernels": kernels, "exact": exact, "bits": bits.hexdigest()}))
"""


def child_env(**changes):
    env = dict(os.environ)
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def run_python(code, **changes):
    return subprocess.run([sys.executable, "-c", code], env=child_env(**changes),
                          capture_output=True, text=True, timeout=600)


def simd_legs():
    """({level: what the probe found}, the machine's best level, the levels to run)."""
    best = run_python(SIMD_PROBE, OKL_SIMD=None).stdout.strip()
    found, legs = {}, []
    for level in SIMD_LEVELS:
        got = run_python(SIMD_PROBE, OKL_SIMD=level).stdout.strip()
        if got != level:
            found[level] = f"not supported by this CPU (OKL_SIMD={level} runs {got}): not run"
        elif level == best:
            found[level] = "the CPU's best: the main suite ran it"
        else:
            found[level] = "runs here"
            legs.append(level)
    return found, best, legs


def blas_legs():
    """({core type: what the probe found}, the machine's own kernels, the core types to run)."""
    own_done = run_python(BLAS_PROBE)
    if own_done.returncode:
        raise SystemExit(f"the BLAS probe failed on the machine's own kernels:\n{own_done.stderr}")
    own = json.loads(own_done.stdout)
    found, legs, seen = {}, [], {}
    for name in CORE_TYPES:
        done = run_python(BLAS_PROBE, OPENBLAS_CORETYPE=name)
        if done.returncode:
            found[name] = f"crashes here (exit status {done.returncode}): not run"
            continue
        got = json.loads(done.stdout)
        kernels = "+".join(got["kernels"])
        if not got["exact"]:
            found[name] = f"runs {kernels}, which multiplies integers wrongly here: not run"
        elif got["kernels"] == own["kernels"]:
            found[name] = f"runs {kernels}, the machine's own kernels: the main suite ran them"
        elif tuple(got["kernels"]) in seen:
            found[name] = f"runs {kernels}, as {seen[tuple(got['kernels'])]} does"
        elif got["bits"] == own["bits"]:
            found[name] = f"runs {kernels}, with the same products as the machine's own: not run"
        else:
            found[name] = f"runs {kernels}, whose products differ from the machine's own: runs"
            legs.append(name)
        seen.setdefault(tuple(got["kernels"]), name)
    return found, "+".join(own["kernels"]), legs


def run_leg(name, changes, extra, log_dir):
    """(name, exit status, summary line, seconds, failures) of the selected tests under changes."""
    log = Path(log_dir) / (name.replace(" ", "_").replace("=", "-") + ".log")
    start = time.monotonic()
    with open(log, "w") as out:
        status = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             *[f"tests/{test}.py" for test in TESTS], *extra],
            cwd=ROOT, env=child_env(**changes), stdout=out, stderr=subprocess.STDOUT).returncode
    lines = log.read_text().splitlines()
    summary = next((line.strip("= ") for line in reversed(lines)
                    if " passed" in line or " failed" in line or " error" in line), "")
    counts = {kind: int(number) for number, kind in
              re.findall(r"(\d+) (passed|failed|errors?|skipped)", summary)}
    failures = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    if status and not failures:
        failures = lines[-20:]
    return name, status, counts, time.monotonic() - start, failures


def main(argv):
    deadline = None
    if argv[:1] == ["--deadline"]:
        deadline, argv = float(argv[1]), argv[2:]
    simd_found, best, simd_run = simd_legs()
    blas_found, own, blas_run = blas_legs()
    print(f"SIMD levels (the CPU's best: {best}):")
    for level, text in simd_found.items():
        print(f"  {level:<16} {text}")
    own_type = os.environ.get("OPENBLAS_CORETYPE")
    print(f"OpenBLAS core types (the machine's own kernels: {own}"
          f"{f', OPENBLAS_CORETYPE={own_type} in the environment' if own_type else ''}):")
    for name, text in blas_found.items():
        print(f"  {name:<16} {text}")
    legs = ([(f"OKL_SIMD={level}", {"OKL_SIMD": level}) for level in simd_run]
            + [(f"OPENBLAS_CORETYPE={name}", {"OPENBLAS_CORETYPE": name}) for name in blas_run])
    print(f"{len(legs)} legs of {len(TESTS)} test files, two at a time", flush=True)
    skipped, seconds = [], []          # a leg's seconds: 300 until one has run

    def leg(item):
        name, changes = item
        if deadline is not None and time.time() + max(seconds, default=300.0) > deadline:
            skipped.append(name)
            return None
        result = run_leg(name, changes, argv, log_dir)
        seconds.append(result[3])
        said = ", ".join(f"{number} {kind}" for kind, number in result[2].items())
        print(f"  {name:<32} {'ok' if result[1] == 0 else 'FAILED'}: {said or 'no tests'} "
              f"({result[3]:.0f} s)", flush=True)
        return result

    with tempfile.TemporaryDirectory() as log_dir, ThreadPoolExecutor(2) as pool:
        results = [r for r in pool.map(leg, legs) if r is not None]
    failed = [r for r in results if r[1] != 0]
    for name, _, _, _, failures in failed:
        print(f"{name} failed:\n  " + "\n  ".join(failures))
    for name in skipped:
        print(f"{name}: not run, CI's time limit was near")
    print(f"{len(results) - len(failed)} of {len(legs)} legs passed, {len(failed)} failed, "
          f"{len(skipped)} not run for time; their tests:")
    total = {kind: sum(r[2].get(kind, 0) for r in results) for kind in ("passed", "failed")}
    print(f"variants: {total['passed']} passed, {total['failed']} failed")
    return 1 if failed or (legs and not results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
