"""Loss values and left derivatives: tables, numerical derivatives, twins, overflow."""
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from okl import losses
from okl._numpy import losses as np_losses

PARAMS = dict(tau=0.3, eps=0.5, delta=1.5, p=3.0)

# (loss, z, value, left derivative), computed by hand with PARAMS
TABLE = [
    ("squared", 2.0, 2.0, 2.0),
    ("squared", -3.0, 4.5, -3.0),
    ("absolute", -2.0, 2.0, -1.0),
    ("absolute", 0.0, 0.0, -1.0),            # kink: slope on the left
    ("absolute", 0.5, 0.5, 1.0),
    ("epsilon_insensitive", 2.0, 1.5, 1.0),
    ("epsilon_insensitive", 0.5, 0.0, 0.0),  # right edge of the tube: left slope 0
    ("epsilon_insensitive", -0.5, 0.0, -1.0),  # left edge: left slope -1
    ("epsilon_insensitive", -2.0, 1.5, -1.0),
    ("pinball", 2.0, 1.05, 0.7),             # (1 - tau)(u - eps)
    ("pinball", 0.5, 0.0, 0.0),
    ("pinball", 0.2, 0.0, 0.0),
    ("pinball", -0.5, 0.0, -0.3),            # u <= -eps
    ("pinball", -2.0, 0.45, -0.3),           # -tau (u + eps)
    ("huber", 1.0, 0.5, 1.0),
    ("huber", 3.0, 3.375, 1.5),              # delta (|u| - delta/2)
    ("huber", -3.0, 3.375, -1.5),
    ("power", 2.0, 8.0, 12.0),
    ("power", -2.0, 8.0, -12.0),
    ("hinge", 0.5, 0.5, -1.0),
    ("hinge", 1.0, 0.0, -1.0),               # kink at m = 1: slope on the left
    ("hinge", 2.0, 0.0, 0.0),
    ("squared_hinge", -1.0, 4.0, -4.0),
    ("squared_hinge", 3.0, 0.0, 0.0),
    ("logistic", 0.0, np.log(2.0), -0.5),
    ("logistic", 2.0, np.log1p(np.exp(-2.0)), -1.0 / (1.0 + np.exp(2.0))),
    ("logistic", -2.0, np.log1p(np.exp(2.0)), -1.0 / (1.0 + np.exp(-2.0))),
    ("least_squares", 3.0, 4.0, 4.0),
    ("least_squares", -1.0, 4.0, -4.0),
    ("exponential", 0.0, 1.0, -1.0),
    ("exponential", 1.0, np.exp(-1.0), -np.exp(-1.0)),
]


@pytest.mark.parametrize("name, z, value, slope", TABLE)
def test_table(name, z, value, slope):
    assert losses.loss_value(name, [z], **PARAMS)[0] == pytest.approx(value, rel=1e-15, abs=1e-15)
    assert losses.loss_derivative(name, [z], **PARAMS)[0] == pytest.approx(slope, rel=1e-15)


@pytest.mark.parametrize("name", sorted(losses.LOSSES))
def test_left_derivative_is_the_left_difference_quotient(name):
    rng = np.random.default_rng(0)
    z = np.concatenate([rng.uniform(-4, 4, 200), [-0.5, 0.0, 0.5, 1.0]])  # kinks included
    h = 1e-6
    value = losses.loss_value(name, z, **PARAMS)
    left = (value - losses.loss_value(name, z - h, **PARAMS)) / h
    slope = losses.loss_derivative(name, z, **PARAMS)
    scale = np.maximum(1.0, np.abs(slope))
    np.testing.assert_allclose(left / scale, slope / scale, atol=1e-4)


@pytest.mark.parametrize("name", sorted(losses.LOSSES))
def test_numpy_twin(name):
    z = np.random.default_rng(1).uniform(-50, 50, 1000)
    spec = losses.loss_spec(name, **PARAMS)
    np.testing.assert_allclose(np_losses.value(spec, z),
                               losses.loss_value(name, z, **PARAMS), rtol=1e-14, atol=1e-300)
    np.testing.assert_allclose(np_losses.derivative(spec, z),
                               losses.loss_derivative(name, z, **PARAMS), rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("name", sorted(losses.LOSSES))
def test_no_overflow_warning_up_to_1e300(name):
    z = np.array([-1e300, -1e10, -800.0, 800.0, 1e10, 1e300])
    spec = losses.loss_spec(name, **PARAMS)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for values in (losses.loss_value(name, z, **PARAMS), losses.loss_derivative(name, z, **PARAMS),
                       np_losses.value(spec, z), np_losses.derivative(spec, z)):
            assert not np.any(np.isnan(values))


def test_logistic_is_exact_at_huge_margins():
    z = np.array([1e300, -1e300, 800.0, -800.0])
    np.testing.assert_array_equal(losses.loss_value("logistic", z), [0.0, 1e300, 0.0, 800.0])
    np.testing.assert_array_equal(losses.loss_derivative("logistic", z), [-0.0, -1.0, -0.0, -1.0])


@settings(max_examples=200, deadline=None)
@given(a=st.floats(-1e3, 1e3), b=st.floats(-1e3, 1e3),
       name=st.sampled_from(sorted(losses.LOSSES)))
def test_losses_are_convex_with_monotone_left_derivative(a, b, name):
    lo, hi = min(a, b), max(a, b)
    d_lo, d_hi = losses.loss_derivative(name, [lo, hi], **PARAMS)
    assert d_lo <= d_hi
    v_lo, v_hi = losses.loss_value(name, [lo, hi], **PARAMS)
    if np.isfinite(v_lo) and np.isfinite(v_hi):
        # a convex function lies above its tangent: V(hi) >= V(lo) + V'(lo)(hi - lo)
        assert v_hi >= v_lo + d_lo * (hi - lo) - 1e-9 * max(1.0, abs(v_hi))


def test_unknown_loss():
    with pytest.raises(ValueError, match="Unknown loss 'cubic'"):
        losses.loss_value("cubic", [0.0])


@pytest.mark.parametrize("name", ["hinge", "absolute", "pinball", "epsilon_insensitive",
                                  "logistic", "squared_hinge", "huber", "power"])
def test_right_derivative_is_the_forward_difference_at_kinks(name):
    """The kink rule lives with the loss: cdloss_right (and its twin) at every kink."""
    from okl._core._losses import loss_right_derivatives, loss_values
    from okl._numpy.losses import derivative_right
    spec = losses.loss_spec(name, tau=0.3, eps=0.25, delta=1.0, p=1.0)
    z = np.array([-2.0, -0.25, 0.0, 0.25, 1.0, 1.5])
    h = 1e-7
    values = loss_values(z, spec)
    forward = (loss_values(z + h, spec) - values) / h
    right = loss_right_derivatives(z, spec)
    np.testing.assert_allclose(right, forward, atol=1e-5)
    np.testing.assert_array_equal(derivative_right(spec, z), right)
