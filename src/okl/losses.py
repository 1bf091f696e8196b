"""Losses by name: the Python face of the Cython `Loss` enum.

Residual losses take ``u = f(x) - y``; margin losses take ``m = y f(x)`` with
y in {-1, +1}.  Derivatives are left derivatives (at a kink, the slope on the
left), the convention of every paper okl implements.

=====================  =====================================================
residual               V(u)
=====================  =====================================================
squared                u^2 / 2 (Smale-Yao's gradient (f(x) - y) K_x)
absolute               |u|
epsilon_insensitive    (|u| - epsilon)_+
pinball                Yang's V^tau_eps: (1-tau)(u-eps) if u > eps,
                       -tau (u+eps) if u <= -eps, else 0
huber                  u^2/2 if |u| <= delta, else delta (|u| - delta/2)
power                  |u|^p, p >= 1
=====================  =====================================================

=====================  =====================================================
margin                 phi(m)
=====================  =====================================================
hinge                  (1 - m)_+
squared_hinge          (1 - m)_+^2
logistic               log(1 + e^-m), stable for |m| up to 1e300
least_squares          (1 - m)^2
exponential            e^-m
=====================  =====================================================
"""
import numpy as np

from okl._core._losses import Loss, loss_values, loss_derivatives

RESIDUAL_LOSSES = {
    "squared": Loss.SQUARED,
    "absolute": Loss.ABSOLUTE,
    "epsilon_insensitive": Loss.EPSILON_INSENSITIVE,
    "pinball": Loss.PINBALL,
    "huber": Loss.HUBER,
    "power": Loss.POWER,
}
MARGIN_LOSSES = {
    "hinge": Loss.HINGE,
    "squared_hinge": Loss.SQUARED_HINGE,
    "logistic": Loss.LOGISTIC,
    "least_squares": Loss.LEAST_SQUARES,
    "exponential": Loss.EXPONENTIAL,
}
LOSSES = {**RESIDUAL_LOSSES, **MARGIN_LOSSES}


def loss_spec(name, tau=0.5, eps=0.0, delta=1.0, p=2.0):
    """(code, tau, eps, delta, p): the arguments every Cython loop takes for a loss."""
    try:
        code = LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; choose one of {sorted(LOSSES)}.") from None
    return int(code), float(tau), float(eps), float(delta), float(p)


def is_margin(name):
    """True for margin (classification) losses, which take m = y f(x)."""
    return name in MARGIN_LOSSES


def loss_value(name, z, **params):
    """Loss at every z (u = f - y, or m = y f for a margin loss)."""
    z = np.ascontiguousarray(z, dtype=np.float64).ravel()
    return loss_values(z, *loss_spec(name, **params))


def loss_derivative(name, z, **params):
    """Left derivative at every z."""
    z = np.ascontiguousarray(z, dtype=np.float64).ravel()
    return loss_derivatives(z, *loss_spec(name, **params))


# -- Tian-Sheng / Ying-Zhou constants of the margin losses (ALGORITHMS 4) ------------------
# The step condition eta_t (M ||k_t||^2 + lam) <= 1 of Tian-Sheng's Theorem 3 (and of
# Ying-Zhou's RKHS version, with K(x, x) for ||k_t||^2) keeps ||a_t|| <= |phi'_-(0)| kappa / lam.

def slope_at_origin(name):
    """phi'_-(0), the left derivative of a margin loss at m = 0 (negative)."""
    if not is_margin(name):
        raise ValueError(f"{name!r} is not a margin loss; choose one of {sorted(MARGIN_LOSSES)}.")
    return float(loss_derivative(name, 0.0)[0])


def lipschitz_at_origin(name, radius=np.inf):
    """M = sup{|phi'_-(v) - phi'_-(0)| / |v| : 0 < |v| <= radius}, Tian-Sheng's (2.1).

    The paper takes ``radius = kappa^2 |phi'_-(0)| / lam``; the default (the
    whole line) is an upper bound for every radius, so a step built on it is
    admissible whatever kappa the stream turns out to have.

    ==============  =========================  ==============================
    loss            phi'_-(v) - phi'_-(0)      M on |v| <= R
    ==============  =========================  ==============================
    hinge           1 for v > 1, else 0        1 if R > 1, else 0
    squared_hinge   2 min(v, 1)                2
    logistic        tanh(v / 2) / 2            1/4 (phi''(0); tanh(u)/u falls)
    least_squares   2 v                        2
    exponential     1 - e^-v                   (e^R - 1) / R: inf on the line
    ==============  =========================  ==============================
    """
    slope_at_origin(name)       # rejects residual losses
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}.")
    if name == "hinge":
        return 1.0 if radius > 1.0 else 0.0
    if name == "logistic":
        return 0.25
    if name == "exponential":
        with np.errstate(over="ignore"):
            return float(np.expm1(radius) / radius) if np.isfinite(radius) else np.inf
    return 2.0      # squared_hinge, least_squares
# -- end of the Tian-Sheng / Ying-Zhou block ----------------------------------------------


# ---- Online pairwise learning: growth constants (Lin-Lei-Zhang-Zhou, Assumption 2.1) ----------
# A pairwise loss V(r, a) is a margin loss phi(r a) or a residual loss psi(a - r) of the value
# a = f(x, x') and the reduced target r = r(y, y'), |r| <= r_max.  Theorem 2.3 needs
#     |V'_-(r, a)| <= c_q (1 + |a|^q)   and   |V|_0 = sup_r V(r, 0) < inf.
# The constants are those of okl's own losses: squared is (a - r)^2 / 2, half of the paper's
# (r - a)^2, so c_q and |V|_0 are half of Corollary 2.7's (ALGORITHMS.md, "one convention").

PAIRWISE_LOSSES = ("hinge", "logistic", "squared_hinge", "squared", "absolute", "power")


def pairwise_growth(loss, r_max, p=2.0):
    """(q, c_q, |V|_0) of a pairwise loss for reduced targets |r| <= r_max.

    ==============  =====  ==========================================  =============
    loss            q      c_q                                         |V|_0
    ==============  =====  ==========================================  =============
    hinge           0      R                                           1
    logistic        0      R                                           log 2
    squared_hinge   1      2 R max(1, R)                               1
    squared         1      max(1, R)                                   R^2 / 2
    absolute        0      1                                           R
    power (|u|^p)   p - 1  p max(1, 2^(p-2)) max(1, R^(p-1))           R^p
    ==============  =====  ==========================================  =============

    R = r_max.  Hinge: |r phi'| <= R (the paper's c_q = M of Corollary 2.6).
    Squared hinge: |2 r (1 - r a)_+| <= 2R (1 + R|a|).  Squared: |a - r| <= |a| + R.
    Power: p |a - r|^(p-1) <= p (|a| + R)^q, and (|a| + R)^q <= max(1, 2^(q-1)) (|a|^q + R^q).
    """
    R = float(r_max)
    if loss == "hinge":
        return 0.0, R, 1.0
    if loss == "logistic":
        return 0.0, R, float(np.log(2.0))
    if loss == "squared_hinge":
        return 1.0, 2.0 * R * max(1.0, R), 1.0
    if loss == "squared":
        return 1.0, max(1.0, R), 0.5 * R * R
    if loss == "absolute":
        return 0.0, 1.0, R
    if loss == "power":
        q = p - 1.0
        return q, p * max(1.0, 2.0 ** (p - 2.0)) * max(1.0, R ** q), R ** p
    raise ValueError(f"No pairwise growth constants for loss {loss!r}; "
                     f"choose one of {PAIRWISE_LOSSES}.")
# ---- end of the pairwise block -----------------------------------------------------------------
