"""Errors of pairwise learners (Lin-Lei-Zhang-Zhou, Section 2; docs/algorithms.md,
section 6.7)."""


import numpy as np

from okl.losses import is_margin, loss_value


def _pair_value_blocks(scores_or_estimator, X, n, block_values=1 << 21):
    """Yield (rows, F) with F[a, j] = f(x_rows[a], x_j): every ordered pair, in row blocks.

    A 1-D array holds scores s (f = s_i - s_j), a 2-D (n, n) array the values
    f(x_i, x_j) themselves; an estimator gives g(x) through score_samples when
    it has it, else f through decision_function(X1, X2) on the pairs.
    """
    source = scores_or_estimator
    if hasattr(source, "decision_function"):
        if hasattr(source, "score_samples"):
            source = source.score_samples(X)
        else:
            X = np.asarray(X, dtype=np.float64)
            step = max(1, block_values // max(1, n * X.shape[1]))
            for lo in range(0, n, step):
                rows = np.arange(lo, min(n, lo + step))
                X1 = np.repeat(X[rows], n, axis=0)
                X2 = np.tile(X, (len(rows), 1))
                yield rows, source.decision_function(X1, X2).reshape(len(rows), n)
            return
    values = np.asarray(source, dtype=np.float64)
    if values.shape not in ((n,), (n, n)):
        raise ValueError(f"Expected {n} scores or an ({n}, {n}) matrix of pair values, "
                         f"got shape {values.shape}.")
    step = max(1, block_values // n)
    for lo in range(0, n, step):
        rows = np.arange(lo, min(n, lo + step))
        yield rows, (values[rows, None] - values[None, :] if values.ndim == 1 else values[rows])


def ranking_error(scores_or_estimator, X, y):
    """Mean over the pairs i != j of ``1{sign(y_i - y_j) f(x_i, x_j) < 0}``.

    The ranking error L(f) of Lin et al. (Section 2) under the empirical
    distribution, as a U-statistic: the n(n-1) ordered pairs of distinct
    samples (pairs with y_i == y_j count as correct).

    Parameters
    ----------
    scores_or_estimator : fitted pairwise estimator, or array
        An estimator with ``decision_function(X1, X2)`` (and ``score_samples``
        when f(x, x') = g(x) - g(x')); or n ranking scores s with
        f(x_i, x_j) = s_i - s_j; or the (n, n) matrix of f(x_i, x_j).
    X : array of shape (n, n_features), or None
        The samples (unused when scores are given).
    y : array of shape (n,)

    Returns
    -------
    float in [0, 1]
    """
    y = np.asarray(y, dtype=np.float64).ravel()
    n = len(y)
    if n < 2:
        raise ValueError("ranking_error needs at least two samples.")
    wrong = 0
    for rows, F in _pair_value_blocks(scores_or_estimator, X, n):
        wrong += np.count_nonzero(np.sign(y[rows, None] - y[None, :]) * F < 0)
    return wrong / (n * (n - 1))


def pairwise_generalization_error(scores_or_estimator, X, y, *, loss=None, reducer=None, p=None):
    """Mean over the pairs i != j of ``V(r(y_i, y_j), f(x_i, x_j))``: the empirical E(f).

    The generalization error of Lin et al. under the empirical distribution, as
    a U-statistic over the n(n-1) ordered pairs of distinct samples.  The loss,
    reducer and p default to the estimator's; with scores or a matrix of pair
    values (see `ranking_error`) pass them.

    Returns
    -------
    float
    """
    est = scores_or_estimator
    loss = loss if loss is not None else getattr(est, "loss", None)
    reducer = reducer if reducer is not None else getattr(est, "reducer", None)
    p = p if p is not None else getattr(est, "p", 2.0)
    if loss is None or reducer not in ("sign", "difference", "dissimilar"):
        raise ValueError("Pass loss= and reducer= (one of 'sign', 'difference', 'dissimilar') "
                         "with scores; an estimator gives its own.")
    y = np.asarray(y)
    n = len(y)
    if n < 2:
        raise ValueError("pairwise_generalization_error needs at least two samples.")
    numeric = reducer != "dissimilar"
    yf = y.astype(np.float64) if numeric else y
    total = 0.0
    for rows, F in _pair_value_blocks(est, X, n):
        if reducer == "sign":
            r = np.sign(yf[rows, None] - yf[None, :])
        elif reducer == "difference":
            r = yf[rows, None] - yf[None, :]
        else:
            r = np.where(yf[rows, None] != yf[None, :], 1.0, -1.0)
        z = r * F if is_margin(loss) else F - r
        V = loss_value(loss, z, p=p).reshape(z.shape)
        V[np.arange(len(rows)), rows] = 0.0      # the pairs i == j are not pairs
        total += V.sum()
    return total / (n * (n - 1))
