"""Step-size and regularization schedules, one array per chunk.

Steps are numbered from t = 1 (the first sample of the stream).  Both engines
take the per-step values as arrays computed here, so a schedule is written
once and the loops stay free of Python.

Defaults and the papers behind them
-----------------------------------
``lam_t = lam * t**-lam_decay``
    ``lam_decay = 0`` is a fixed regularization (Smale-Yao; Yang's "partially
    online" scheme).  Yang's fully online presets (Theorem 2.1) are in
    `yang_exponents`: ``lam_decay = 1/5`` with ``eta_decay = 3/5`` for r = 1.
``eta_t = eta * t**-eta_decay`` (a number)
    NORMA's polynomially decaying step.
``eta = "auto"``
    ``eta_t = 1 / ((lam_t + C_K^2) t**eta_decay)``, with C_K^2 the running
    maximum of K(x_s, x_s) over s <= t.  For the squared loss, fixed lam and
    a kernel with constant C_K (Gaussian, Laplacian) this is exactly
    Smale-Yao's step of Theorem A (theta = eta_decay in (1/2, 1)); it keeps
    ``0 < 1 - lam_t eta_t < 1`` for every loss.  For the pinball loss with the
    Gaussian kernel (C_K = 1) it gives ``eta_1 = 1 / (1 + lam_1) < 1`` and
    ``lam_1 eta_1 < 1``; with lam_decay > 0 the step is
    ``t**-alpha / (1 + lam_1 t**-gamma)``, within a factor 1 / (1 + lam_1)
    of Yang's ``eta_1 t**-alpha`` (docs/algorithms.md, section 2).
``eta_decay = 0.6``
    The default 3/5 is both inside Smale-Yao's range theta in (1/2, 1) and
    Yang's exponent alpha for r = 1.
``eta`` callable
    ``eta(t)`` gets the int64 array of step numbers of a chunk and returns the
    step sizes (positive, finite, same shape).

References
----------
See docs/algorithms.md, sections 1 and 2 (the regressor's steps and
Yang's exponents), 3.1, 4.2 and 6.4 (the automatic steps).

.. [1] S. Smale and Y. Yao, "Online learning algorithms", Foundations of
   Computational Mathematics, 6(2):145-170, 2006.
.. [2] P. Yang, "Quantile regression with samples drawn from
   non-identical distributions", Journal of Mathematics (Shuxue
   Zazhi), 39(5):713-720, 2019. In Chinese, with an English
   abstract.
.. [3] J. Kivinen, A. J. Smola and R. C. Williamson, "Online learning
   with kernels", IEEE Transactions on Signal Processing,
   52(8):2165-2176, 2004.
.. [4] M. Tian (Ningbo University) and B. Sheng (Shaoxing University),
   "Convergence analysis of coefficient regularized classification
   online algorithms". In Chinese, with an English abstract; the
   journal and year are not given on its first page.
.. [5] J. Lin, Y. Lei, B. Zhang and D.-X. Zhou, "Online pairwise
   learning algorithms with convex loss functions", Information
   Sciences, 406-407, 2017.
"""
import numpy as np


def step_numbers(t_done, n):
    """The step numbers t_done + 1, ..., t_done + n as float64."""
    return np.arange(t_done + 1, t_done + n + 1, dtype=np.float64)


def regularization(lam, lam_decay, t):
    """lam_t = lam * t**-lam_decay."""
    return lam * t ** -lam_decay


def running_sup(values, previous=0.0):
    """Running maximum of `values`, starting from `previous`: C_K^2 on the stream."""
    return np.maximum.accumulate(np.maximum(values, previous))


def step_sizes(eta, eta_decay, t, lam_t=None, ck2=None):
    """eta_t for the steps t.

    `eta` is a positive number (``eta * t**-eta_decay``), "auto"
    (``1 / ((lam_t + C_K^2) t**eta_decay)``, which needs `lam_t` and the running
    C_K^2 `ck2`), or a callable of the step numbers.
    """
    if callable(eta):
        values = np.asarray(eta(t.astype(np.int64)), dtype=np.float64)
        if values.shape != t.shape or not np.all(np.isfinite(values)) or np.any(values <= 0):
            raise ValueError(
                "A callable eta must map the int array of step numbers to positive, "
                f"finite step sizes of the same shape; got {values!r} for t = {t[:5]}...")
        return values
    decay = t ** -eta_decay
    if isinstance(eta, str):    # "auto"
        denom = lam_t + ck2
        # only while every K(x_s, x_s) seen is 0 and lam = 0: K_x = 0 makes the step moot
        return np.where(denom > 0, decay / np.where(denom > 0, denom, 1.0), decay)
    return eta * decay


def yang_exponents(r=1.0):
    """(lam_decay, eta_decay) of Yang's Theorem 2.1 for the regularity index r.

    1/2 < r <= 1: lam_t ~ t^-1/(3r+2), eta_t ~ t^-(2r+1)/(3r+2);
    1 < r <= 3/2: lam_t ~ t^-2/(6r+1), eta_t ~ t^-4r/(6r+1).
    """
    if 0.5 < r <= 1.0:
        return 1.0 / (3 * r + 2), (2 * r + 1) / (3 * r + 2)
    if 1.0 < r <= 1.5:
        return 2.0 / (6 * r + 1), 4 * r / (6 * r + 1)
    raise ValueError(f"Yang's Theorem 2.1 needs 1/2 < r <= 3/2, got r = {r}.")
