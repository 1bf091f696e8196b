"""The SIMD levels of the compiled loops: OKL_SIMD forces a lower one (docs/architecture.md,
"SIMD levels"), whose loops agree with the NumPy twin."""
import functools
import os
import subprocess
import sys

import pytest

from okl._core._kernels import SIMD_LEVELS, simd_level

# the level in force and how far the compiled distances and Gaussian values are from NumPy's
PROBE = """
import numpy as np
from okl._core._kernels import exp_nonpos, simd_level, sq_distances
rng = np.random.default_rng(0)
X, U = rng.normal(size=(5, 70)), rng.normal(size=(300, 70))
want = ((X[:, None, :] - U[None, :, :]) ** 2).sum(axis=2)
got = sq_distances(X, U, (U * U).sum(axis=1))
v = rng.uniform(0.0, 50.0, 1000)
print(simd_level(), np.max(np.abs(got - want) / want),
      np.max(np.abs(exp_nonpos(v, 1.0, loop=True) - np.exp(-v)) / np.exp(-v)))
"""


@functools.cache
def probe(level):
    """(level in force, distances' and exponentials' largest relative error, stderr) in a new
    process with OKL_SIMD=level (unset for None)."""
    env = {key: value for key, value in os.environ.items() if key != "OKL_SIMD"}
    if level is not None:
        env["OKL_SIMD"] = level
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                          text=True, check=True)
    name, distances, exponentials = done.stdout.split()
    return name, float(distances), float(exponentials), done.stderr


def test_the_level_is_the_cpus_best_unless_a_lower_one_is_asked_for():
    rank = {name: level for level, name in SIMD_LEVELS.items()}
    best = probe(None)[0]
    assert probe("x86-64-v4")[0] == best                 # the top level caps nothing
    assert probe("baseline")[0] == "baseline"
    assert probe("x86-64-v3")[0] == min(best, "x86-64-v3", key=rank.get)
    assert simd_level() in rank


@pytest.mark.parametrize("level", list(SIMD_LEVELS.values()))
def test_every_level_computes_what_numpy_does(level):
    _, distances, exponentials, _ = probe(level)
    assert distances < 1e-12 and exponentials < 1e-15


def test_an_unknown_level_is_ignored_with_a_warning():
    name, *_, stderr = probe("avx2")
    assert name == probe(None)[0]
    assert "OKL_SIMD='avx2' is not a SIMD level" in stderr and "x86-64-v3" in stderr
