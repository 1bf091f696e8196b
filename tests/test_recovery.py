"""okl.evaluation.recovery: the level before and after each change, and the delay back."""
import numpy as np
import pytest

from okl.evaluation import Recovery, recovery


def test_accuracy_levels_and_delay_by_hand():
    y = np.zeros(3000, dtype=int)
    pred = y.copy()
    pred[900:1000:10] = 1       # 10 mistakes in the window before the change at 1000
    pred[1000:1150] = 1         # 150 mistakes right after it
    r = recovery(y, pred, [1000, 2000], window=200)
    assert isinstance(r, Recovery) and r.metric == "accuracy"
    np.testing.assert_allclose(r.before, [0.95, 1.0])
    np.testing.assert_allclose(r.after, [0.25, 1.0])
    # the window from 1000 + d holds 150 - d mistakes for d <= 150: within 0.01 of 0.95
    # when (150 - d) / 200 <= 0.06, d >= 138
    np.testing.assert_array_equal(r.delay, [138, 0])
    assert r.overall == pytest.approx(1 - 160 / 3000)
    assert (r.window, r.tolerance) == (200, 0.01)
    np.testing.assert_array_equal(r.drifts, [1000, 2000])


def test_never_recovered_is_nan_and_windows_stop_at_the_next_change():
    y = np.zeros(1000, dtype=int)
    pred = y.copy()
    pred[500:600] = 1           # wrong from the change at 500 up to the next one at 600
    r = recovery(y, pred, [500, 600], window=300)
    assert np.isnan(r.delay[0])
    assert r.after[0] == 0.0            # the window is cut at the next change
    assert r.before[1] == 0.0           # and starts at the previous one
    assert r.delay[1] == 0.0 and r.after[1] == 1.0


def test_rmse_is_relative():
    rng = np.random.default_rng(0)
    y = rng.normal(size=2000)
    pred = y + 1.0                      # an error of 1 everywhere
    pred[1000:1100] = y[1000:1100] + 3.0
    r = recovery(y, pred, [1000], window=100, tolerance=0.05)
    assert r.metric == "rmse"
    np.testing.assert_allclose([r.before[0], r.after[0]], [1.0, 3.0])
    # the window from 1000 + d: sqrt((9 (100 - d) + d) / 100) <= 1.05 first at d = 99
    assert r.delay[0] == 99
    assert recovery(y.astype(int), pred.astype(int), [1000]).metric == "accuracy"
    assert recovery(y, pred, [1000], metric="accuracy").metric == "accuracy"


def test_refuses_bad_input():
    y = np.zeros(10)
    for drifts in ([0], [10], [5, 3], [2.5]):
        with pytest.raises(ValueError, match="drifts"):
            recovery(y, y, drifts)
    with pytest.raises(ValueError, match="same length"):
        recovery(y, y[:5], [2])
    with pytest.raises(ValueError, match="window"):
        recovery(y, y, [2], window=0)
    with pytest.raises(ValueError, match="tolerance"):
        recovery(y, y, [2], tolerance=-1)
    with pytest.raises(ValueError, match="metric"):
        recovery(y, y, [2], metric="mae")
    with pytest.raises(ValueError, match="finite"):
        recovery(y, np.full(10, np.nan), [2])
