"""Losses by name: one row per loss, the Python face of the Cython `Loss` enum.

Residual losses take ``u = f(x) - y``; margin losses take ``m = y f(x)`` with
y in {-1, +1}.  Derivatives are left derivatives (at a kink, the slope on the
left), the convention of every paper okl implements.  M is the Lipschitz
constant of the derivative at the origin (Tian-Sheng's (2.1)), the growth
(q, c_q, |V|_0) that of Lin et al.'s Assumption 2.1 for targets |r| <= R.
See docs/algorithms.md, sections 0.3 and 6.4.

References
----------
See docs/algorithms.md, section 0.3 (values, left derivatives, M) and
section 6.4 (pairwise growth constants).

.. [1] P. Yang, "Quantile regression with samples drawn from
   non-identical distributions", Journal of Mathematics (Shuxue
   Zazhi), 39(5):713-720, 2019. In Chinese, with an English
   abstract.
.. [2] M. Tian (Ningbo University) and B. Sheng (Shaoxing University),
   "Convergence analysis of coefficient regularized classification
   online algorithms". In Chinese, with an English abstract; the
   journal and year are not given on its first page.
.. [3] J. Lin, Y. Lei, B. Zhang and D.-X. Zhou, "Online pairwise
   learning algorithms with convex loss functions", Information
   Sciences, 406-407, 2017.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from okl._core._losses import Loss, loss_derivatives, loss_values


def _no_growth(R, p):
    return None


@dataclass(frozen=True)
class LossRow:
    """Everything okl knows about one loss."""

    name: str
    code: Loss
    kind: str                   # "residual" (u = f - y) or "margin" (m = y f)
    formula: str
    params: tuple = ()          # estimator parameters the loss reads
    lipschitz: Callable = None  # radius R -> M on |v| <= R (margin losses)
    growth: Callable = _no_growth   # (R, p) -> (q, c_q, |V|_0), or None: not pairwise


LOSSES = {row.name: row for row in (
    LossRow("squared", Loss.SQUARED, "residual", "u^2 / 2",
            growth=lambda R, p: (1.0, max(1.0, R), 0.5 * R * R)),
    LossRow("absolute", Loss.ABSOLUTE, "residual", "|u|",
            growth=lambda R, p: (0.0, 1.0, R)),
    LossRow("epsilon_insensitive", Loss.EPSILON_INSENSITIVE, "residual", "(|u| - epsilon)_+",
            params=("epsilon",)),
    LossRow("pinball", Loss.PINBALL, "residual",
            "Yang's V^tau_eps: (1-tau)(u-eps) if u > eps, -tau (u+eps) if u <= -eps, else 0",
            params=("quantile", "epsilon")),
    LossRow("huber", Loss.HUBER, "residual", "u^2/2 if |u| <= delta, else delta (|u| - delta/2)",
            params=("epsilon",)),
    LossRow("power", Loss.POWER, "residual", "|u|^p, p >= 1", params=("p",),
            growth=lambda R, p: (p - 1.0, p * max(1.0, 2.0 ** (p - 2.0)) * max(1.0, R ** (p - 1.0)),
                                 R ** p)),
    LossRow("hinge", Loss.HINGE, "margin", "(1 - m)_+",
            lipschitz=lambda R: 1.0 if R > 1.0 else 0.0,
            growth=lambda R, p: (0.0, R, 1.0)),
    LossRow("squared_hinge", Loss.SQUARED_HINGE, "margin", "(1 - m)_+^2",
            lipschitz=lambda R: 2.0,
            growth=lambda R, p: (1.0, 2.0 * R * max(1.0, R), 1.0)),
    LossRow("logistic", Loss.LOGISTIC, "margin", "log(1 + e^-m), stable for |m| up to 1e300",
            lipschitz=lambda R: 0.25,
            growth=lambda R, p: (0.0, R, float(np.log(2.0)))),
    LossRow("least_squares", Loss.LEAST_SQUARES, "margin", "(1 - m)^2",
            lipschitz=lambda R: 2.0),
    LossRow("exponential", Loss.EXPONENTIAL, "margin", "e^-m",
            lipschitz=lambda R: float(np.expm1(R) / R) if np.isfinite(R) else np.inf),
)}
RESIDUAL_LOSSES = {name: row.code for name, row in LOSSES.items() if row.kind == "residual"}
MARGIN_LOSSES = {name: row.code for name, row in LOSSES.items() if row.kind == "margin"}
PAIRWISE_LOSSES = tuple(name for name, row in LOSSES.items() if row.growth(1.0, 2.0) is not None)


def _table(kind):
    rows = [(name, row.formula) for name, row in LOSSES.items() if row.kind == kind]
    width = max(len(name) for name, _ in rows + [(kind, "")])
    rule = "=" * width + "  " + "=" * 52
    head = f"{kind:<{width}}  {'V(u)' if kind == 'residual' else 'phi(m)'}"
    return "\n".join([rule, head, rule, *(f"{n:<{width}}  {f}" for n, f in rows), rule])


__doc__ = __doc__.replace("\nReferences\n", "\n" + _table("residual") + "\n\n" + _table("margin")
                          + "\n\nReferences\n", 1)


def loss_row(name):
    """The `LossRow` of a loss name."""
    try:
        return LOSSES[name]
    except KeyError:
        raise ValueError(f"Unknown loss {name!r}; choose one of {sorted(LOSSES)}.") from None


def loss_spec(name, tau=0.5, eps=0.0, delta=1.0, p=2.0):
    """The loss as every loop takes it: a dict of the `LossSpec` fields, by name.

    Cython converts it to its `LossSpec` struct (_core/_losses.pxd); the NumPy
    twins read it by name.  A loss with a parameter of its own adds a field
    there, a keyword here and its formula in both engines.
    """
    return dict(kind=int(loss_row(name).code), tau=float(tau), eps=float(eps),
                delta=float(delta), p=float(p))


def is_margin(name):
    """True for margin (classification) losses, which take m = y f(x)."""
    return loss_row(name).kind == "margin"


def loss_value(name, z, **params):
    """Loss at every z (u = f - y, or m = y f for a margin loss)."""
    z = np.ascontiguousarray(z, dtype=np.float64).ravel()
    return loss_values(z, loss_spec(name, **params))


def loss_derivative(name, z, **params):
    """Left derivative at every z."""
    z = np.ascontiguousarray(z, dtype=np.float64).ravel()
    return loss_derivatives(z, loss_spec(name, **params))


def _margin_row(name):
    row = loss_row(name)
    if row.kind != "margin":
        raise ValueError(f"{name!r} is not a margin loss; choose one of {sorted(MARGIN_LOSSES)}.")
    return row


def slope_at_origin(name):
    """phi'_-(0), the left derivative of a margin loss at m = 0 (negative)."""
    _margin_row(name)
    return float(loss_derivative(name, 0.0)[0])


def lipschitz_at_origin(name, radius=np.inf):
    """M = sup{|phi'_-(v) - phi'_-(0)| / |v| : 0 < |v| <= radius}, Tian-Sheng's (2.1).

    The paper takes ``radius = kappa^2 |phi'_-(0)| / lam``; the default (the
    whole line) bounds every radius, so a step built on it is admissible
    whatever kappa the stream has.  Values per loss: docs/algorithms.md,
    section 0.3 (1 hinge, 2 squared_hinge and least_squares, 1/4 logistic,
    (e^R - 1)/R exponential: infinite on the line).
    """
    row = _margin_row(name)
    if not radius > 0:
        raise ValueError(f"radius must be > 0, got {radius}.")
    with np.errstate(over="ignore"):
        return float(row.lipschitz(radius))


def pairwise_growth(loss, r_max, p=2.0):
    """(q, c_q, |V|_0) of a pairwise loss for reduced targets |r| <= r_max.

    ``|V'_-(r, a)| <= c_q (1 + |a|^q)`` and ``|V|_0 = sup_r V(r, 0)``, the
    constants of Lin et al.'s Theorem 2.3 for okl's own losses (squared is
    (a - r)^2 / 2, half of the paper's).  Derivations: docs/algorithms.md,
    section 6.4.
    """
    growth = LOSSES[loss].growth(float(r_max), p) if loss in LOSSES else None
    if growth is None:
        raise ValueError(f"No pairwise growth constants for loss {loss!r}; "
                         f"choose one of {PAIRWISE_LOSSES}.")
    return growth
