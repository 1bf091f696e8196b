"""Exact Euclidean projections onto norm balls and halfspace intersections.

These are the updates of Shen and Dietterich's regularized passive-aggressive
learners (docs/algorithms.md, section 5): the L2-constrained step (their eq. 3.9) is the
projection of w_t onto ``{w : y x.w >= 1, ||w||_2 <= beta}``, the L1-constrained
step (eq. 3.10) the projection onto ``{w : y x.w >= 1, ||w||_1 <= beta}``, and
feature truncation (their Section 3.3) is `truncate_smallest`.  Each function
validates its inputs, returns a new float64 array, and raises ValueError when
the constraint set is empty.  The work is done in Cython (okl._core._projections),
the same code the learners call.

Inputs are first rescaled by powers of two (exact) so that the largest is
about 1: no square or sum overflows or underflows, and the results are exact
at every scale from 1e-308 to 1e308.  The L1 threshold mu is kept as
``max|v| - delta`` and the soft threshold computed as ``delta - (max|v| - |v_j|)``,
so a result far below the entries it is cut from keeps its digits
(``project_l1_ball([1e308, 1e308], 1)`` is ``[0.5, 0.5]``).

References
----------
See docs/algorithms.md, sections 5.1 (L2 and L1 projections), 5.2 (empty
sets) and 5.3 (truncation).

.. [1] J. Shen and T. G. Dietterich, "A family of large margin linear
   classifiers and its application in dynamic environments",
   Statistical Analysis and Data Mining, 2(5-6), 2009.
"""
import math

import numpy as np

from okl._core import _projections


def _vector(v, name):
    v = np.ascontiguousarray(v, dtype=np.float64)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array; got shape {v.shape}.")
    if not np.all(np.isfinite(v)):
        raise ValueError(f"{name} contains NaN or infinity; pass finite values.")
    return v


def _scalar(value, name, lower=None):
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name} must be a finite number; got {value!r}.") from None
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite; got {value}.")
    if lower is not None and value < lower:
        raise ValueError(f"{name} must be >= {lower}; got {value}: the ball of radius "
                         f"{name} < 0 is empty.")
    return value


def _exponent(*values):
    """e with 2**e > every |value| >= 2**(e-1) for the largest (0 if all are zero)."""
    top = max(float(np.max(np.abs(v))) if np.ndim(v) else abs(float(v)) for v in values)
    return math.frexp(top)[1] if top > 0.0 else 0


def _ldexp(x, n):
    """x * 2**n, infinite where it overflows."""
    try:
        return math.ldexp(x, n)
    except OverflowError:
        return math.copysign(math.inf, x)


def _norm(a, ord):
    """||a|| without overflow or underflow."""
    e = _exponent(a)
    return _ldexp(float(np.linalg.norm(np.ldexp(a, -e), ord=ord)), e)


def _halfspace(core, norm, dual, v, a, b, beta):
    """Validate, project with `core`, and name the bound when the set is empty.

    The set {a.w >= b} is that of {a.w / 2^k >= b / 2^k}, and projecting
    (v, b, beta) / 2^e gives the projection / 2^e: both rescalings are exact.
    """
    v, a = _vector(v, "v"), _vector(a, "a")
    if a.shape != v.shape:
        raise ValueError(f"a and v must have the same shape; got {a.shape} and {v.shape}.")
    b, beta = _scalar(b, "b"), _scalar(beta, "beta", 0.0)
    k = _exponent(a)
    b_k = _ldexp(b, -k)                 # inf when b / ||a|| exceeds the float range
    e = _exponent(v, min(abs(b_k), 1e308), beta)
    w = core(np.ldexp(v, -e), np.ldexp(a, -k), _ldexp(b_k, -e), math.ldexp(beta, -e))
    if w is not None:
        w = np.ldexp(w, e)
    if w is None:
        raise ValueError(
            f"No w has a.w >= b and ||w||_{norm} <= beta: b = {b:g} exceeds beta ||a||_{dual} = "
            f"{beta * _norm(a, np.inf if dual == 'inf' else 2):g}, the largest a.w "
            "in the ball. Raise beta or lower b.")
    return w


def project_l2_ball(v, beta):
    """Closest point to v in the ball ``||w||_2 <= beta``: ``v min(1, beta / ||v||_2)``.

    Parameters
    ----------
    v : array-like of shape (d,)
    beta : float >= 0

    Returns
    -------
    w : ndarray of shape (d,)
    """
    v, beta = _vector(v, "v"), _scalar(beta, "beta", 0.0)
    e = _exponent(v, beta)
    return np.ldexp(_projections.l2_ball(np.ldexp(v, -e), math.ldexp(beta, -e)), e)


def project_l1_ball(v, beta):
    """Closest point to v in the ball ``||w||_1 <= beta``.

    Exact: the soft threshold ``sign(v) max(|v| - mu, 0)`` whose mu is found by
    one sort of the nonzero magnitudes, O(d log d) (Duchi et al., ICML 2008).

    Parameters
    ----------
    v : array-like of shape (d,)
    beta : float >= 0

    Returns
    -------
    w : ndarray of shape (d,)
    """
    v, beta = _vector(v, "v"), _scalar(beta, "beta", 0.0)
    e = _exponent(v, beta)
    return np.ldexp(_projections.l1_ball(np.ldexp(v, -e), math.ldexp(beta, -e)), e)


def project_halfspace_l2_ball(v, a, b, beta):
    """Closest point to v with ``a.w >= b`` and ``||w||_2 <= beta``.

    Closed form, O(d): ``w = (v + tau a) / Z`` with ``tau >= 0, Z >= 1`` from the
    KKT conditions, Shen-Dietterich Lemma 3.2 generalised to any a, b and any v
    (their lemma is ``a = y x, b = 1``).  The set is empty when
    ``b > beta ||a||_2``; at equality it is the single point ``b a / ||a||^2``.

    Parameters
    ----------
    v, a : array-like of shape (d,)
    b : float
    beta : float >= 0

    Returns
    -------
    w : ndarray of shape (d,)

    Raises
    ------
    ValueError
        If the constraint set is empty.
    """
    return _halfspace(_projections.halfspace_l2_ball, "2", "2", v, a, b, beta)


def project_halfspace_l1_ball(v, a, b, beta):
    """Closest point to v with ``a.w >= b`` and ``||w||_1 <= beta``.

    Exact, without a QP solver: ``w = S_mu(v + tau a)`` (soft threshold) where,
    for each tau, mu is the L1-ball threshold, and tau >= 0 is the root of the
    nondecreasing piecewise-linear ``a.w(tau) - b``, found by Newton steps on
    its linear pieces safeguarded by bisection (each step O(d log d)).  The set
    is empty when ``b > beta ||a||_inf``; at equality it is a face of the ball,
    onto which v is projected directly.

    Parameters
    ----------
    v, a : array-like of shape (d,)
    b : float
    beta : float >= 0

    Returns
    -------
    w : ndarray of shape (d,)

    Raises
    ------
    ValueError
        If the constraint set is empty.
    """
    return _halfspace(_projections.halfspace_l1_ball, "1", "inf", v, a, b, beta)


def truncate_smallest(w, sigma):
    """w with its smallest weights zeroed, as in Shen-Dietterich Section 3.3.

    Sort ``|w_i|`` ascending (ties by index) and zero the longest prefix whose
    squares sum to less than sigma; Theorem 3.4 bounds the extra mistakes this
    costs by a ``2 sqrt(sigma) ||u||`` term.

    Parameters
    ----------
    w : array-like of shape (d,)
    sigma : float >= 0
        0 keeps every weight.

    Returns
    -------
    ndarray of shape (d,)
    """
    w = _vector(w, "w")
    sigma = float(sigma)
    if not (np.isfinite(sigma) and sigma >= 0):
        raise ValueError(f"sigma must be a finite float >= 0; got {sigma}.")
    e = _exponent(w)                    # sum w_j^2 < sigma  <=>  sum (w_j/2^e)^2 < sigma/4^e
    scaled = _ldexp(sigma, -2 * e)
    return np.ldexp(_projections.truncate_smallest(np.ldexp(w, -e), scaled), e)
