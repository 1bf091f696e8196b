"""Loss values and left derivatives in NumPy (twins of _core/_losses.pxd).

Residual losses take u = f - y, margin losses m = y f.  Values beyond the
double range are inf, without a warning.  A loss is the dict of the `LossSpec`
fields (`okl.losses.loss_spec`), read by name.
"""
from enum import IntEnum

import numpy as np


class Loss(IntEnum):
    SQUARED = 0               # residual losses V(u), u = f(x) - y
    ABSOLUTE = 1
    EPSILON_INSENSITIVE = 2
    PINBALL = 3
    HUBER = 4
    POWER = 5
    HINGE = 10                # margin losses phi(m), m = y f(x)
    SQUARED_HINGE = 11
    LOGISTIC = 12
    LEAST_SQUARES = 13
    EXPONENTIAL = 14


def _fields(spec):
    return spec["kind"], spec["tau"], spec["eps"], spec["delta"], spec["p"]


def value(spec, z):
    kind, tau, eps, delta, p = _fields(spec)
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(over="ignore"):
        if kind == Loss.SQUARED:
            return 0.5 * z * z
        if kind == Loss.ABSOLUTE:
            return np.abs(z)
        if kind == Loss.EPSILON_INSENSITIVE:
            return np.maximum(np.abs(z) - eps, 0.0)
        if kind == Loss.PINBALL:
            return np.where(z > eps, (1 - tau) * (z - eps),
                            np.where(z <= -eps, -tau * (z + eps), 0.0))
        if kind == Loss.HUBER:
            a = np.abs(z)
            return np.where(a <= delta, 0.5 * z * z, delta * (a - 0.5 * delta))
        if kind == Loss.POWER:
            return np.abs(z) ** p
        if kind == Loss.HINGE:
            return np.maximum(1.0 - z, 0.0)
        if kind == Loss.SQUARED_HINGE:
            return np.maximum(1.0 - z, 0.0) ** 2
        if kind == Loss.LOGISTIC:
            # log(1 + e^-m) = max(-m, 0) + log1p(e^-|m|)
            return np.maximum(-z, 0.0) + np.log1p(np.exp(-np.abs(z)))
        if kind == Loss.LEAST_SQUARES:
            return (1.0 - z) ** 2
        if kind == Loss.EXPONENTIAL:
            return np.exp(-z)
    raise ValueError(f"unknown loss code {kind}")


def derivative(spec, z):
    kind, tau, eps, delta, p = _fields(spec)
    z = np.asarray(z, dtype=np.float64)
    with np.errstate(over="ignore"):
        if kind == Loss.SQUARED:
            return z
        if kind == Loss.ABSOLUTE:
            return np.where(z > 0, 1.0, -1.0)
        if kind == Loss.EPSILON_INSENSITIVE:
            return np.where(z > eps, 1.0, np.where(z <= -eps, -1.0, 0.0))
        if kind == Loss.PINBALL:
            return np.where(z > eps, 1.0 - tau, np.where(z <= -eps, -tau, 0.0))
        if kind == Loss.HUBER:
            return np.clip(z, -delta, delta)
        if kind == Loss.POWER:
            if p == 1.0:
                return np.where(z > 0, 1.0, -1.0)
            return p * np.sign(z) * np.abs(z) ** (p - 1.0)
        if kind == Loss.HINGE:
            return np.where(z <= 1.0, -1.0, 0.0)
        if kind == Loss.SQUARED_HINGE:
            return -2.0 * np.maximum(1.0 - z, 0.0)
        if kind == Loss.LOGISTIC:
            e = np.exp(-np.abs(z))      # <= 1: no overflow
            return np.where(z > 0, -e / (1.0 + e), -1.0 / (1.0 + e))
        if kind == Loss.LEAST_SQUARES:
            return -2.0 * (1.0 - z)
        if kind == Loss.EXPONENTIAL:
            return -np.exp(-z)
    raise ValueError(f"unknown loss code {kind}")


def derivative_right(spec, z):
    """Right derivative: the left one except at a kink (twin of cdloss_right)."""
    kind, tau, eps, delta, p = _fields(spec)
    z = np.asarray(z, dtype=np.float64)
    g = derivative(spec, z)
    if kind == Loss.HINGE:
        return np.where(z == 1.0, 0.0, g)
    if kind == Loss.ABSOLUTE or (kind == Loss.POWER and p == 1.0):
        return np.where(z == 0.0, 1.0, g)
    if kind in (Loss.EPSILON_INSENSITIVE, Loss.PINBALL):
        up = 1.0 if kind == Loss.EPSILON_INSENSITIVE else 1.0 - tau
        return np.where(z == eps, up, np.where(z == -eps, 0.0, g))
    return g


def gradient(spec, y, f):
    """dV/df of one prediction f of target y (twin of cgradient): V'_-(f - y), or
    y phi'_-(y f) for a margin loss; `spec` holds the `LossSpec` fields by name."""
    if spec["kind"] >= Loss.HINGE:
        return float(y * derivative(spec, y * f))
    return float(derivative(spec, f - y))
