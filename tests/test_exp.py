"""The compiled exponential of the Gaussian rows, okl_exp_nonpos (docs/algorithms.md, section 0.4).

Its relative error is below 2^-52 on [-708, 0]; math.exp adds at most half an ulp of its own, so
the two agree within 3 * 2^-53 relative.  Below -708 it gives 0, a NaN stays NaN.
"""
import math

import numpy as np
import pytest

from okl._core._kernels import exp_nonpos

U = 2.0 ** -53
PATHS = {"call": False, "loop": True}       # one call per value / the SIMD loop of the rows


def points(n=1_000_000):
    """Where the rows evaluate exp: all of [-708, 0], densely near 0, and its two edges."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708.0, 0.0, n // 2), -rng.exponential(0.5, n // 2 - 8),
                        [0.0, -0.0, -708.0, -707.9999999999999, -5e-324, -1e-300,
                         -math.log(2.0) / 2, -math.log(2.0)]])
    return x


@pytest.mark.parametrize("path", PATHS)
def test_exp_is_within_3_units_of_math_exp_on_a_million_points(path):
    x = points()
    got = exp_nonpos(x, loop=PATHS[path])
    ref = np.array([math.exp(v) for v in x])
    assert np.all(ref > 0.0)
    rel = np.abs(got - ref) / ref
    assert rel.max() <= 3 * U, x[np.argmax(rel)]


@pytest.mark.parametrize("path", PATHS)
def test_exp_edges(path):
    x = np.array([0.0, -0.0, -708.0, -708.0000000000001, -709.0, -745.2, -1e308, -np.inf,
                  np.nan])
    got = exp_nonpos(x, loop=PATHS[path])
    assert got[0] == 1.0 and got[1] == 1.0
    assert abs(got[2] - math.exp(-708.0)) <= 3 * U * math.exp(-708.0)
    assert np.all(got[3:8] == 0.0)              # exp < 3.3e-308 there: an absolute error below it
    assert np.isnan(got[8])


@pytest.mark.parametrize("path", PATHS)
def test_scaled_exp_of_distances(path):
    """exp(-gamma D) of the Gaussian rows: K = 1 at D = 0, a NaN distance stays NaN."""
    rng = np.random.default_rng(1)
    D = np.concatenate([rng.exponential(3.0, 1000), [0.0, np.inf, np.nan]])
    got = exp_nonpos(D, 0.37, loop=PATHS[path])
    with np.errstate(invalid="ignore"):
        ref = np.array([math.exp(-0.37 * v) for v in D[:-1]])
    assert np.all(np.abs(got[:-1] - ref) <= 3 * U * ref + 1e-300)
    assert got[1000] == 1.0 and got[1001] == 0.0 and np.isnan(got[1002])
