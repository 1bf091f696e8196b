"""Evaluation on streams: progressive validation and distances to batch targets.

References
----------
See docs/algorithms.md, sections 1 (kernel ridge target, RKHS distance)
and 6.7 (ranking error).

.. [1] S. Smale and Y. Yao, "Online learning algorithms", Foundations of
   Computational Mathematics, 6(2):145-170, 2006.
.. [2] J. Lin, Y. Lei, B. Zhang and D.-X. Zhou, "Online pairwise
   learning algorithms with convex loss functions", Information
   Sciences, 406-407, 2017.
"""
import time
from dataclasses import dataclass

import numpy as np
from sklearn.base import is_classifier

from okl._base import OnlineLearner
from okl.kernels import kernel_matrix
from okl.losses import is_margin, loss_value


@dataclass
class ProgressiveResult:
    """Predict-then-learn record of a stream, one entry per sample.

    predictions : the prediction for x_t made before learning z_t (labels for
        classifiers).
    scores : f_t(x_t), the raw model output behind each prediction (None for
        estimators without okl's fused predict-then-learn loop).
    error : cumulative mean error after each step: misclassification rate for
        classifiers, squared error for regressors.
    loss : cumulative mean of the estimator's own training loss, or None.
    """

    predictions: np.ndarray
    scores: np.ndarray | None
    error: np.ndarray
    loss: np.ndarray | None


def _cumulative_mean(values):
    return np.cumsum(values) / np.arange(1, len(values) + 1)


def progressive_validation(estimator, X, y, *, classes=None, chunk_size=1000, verbose=False):
    """Predict each sample with the current model, then learn it (in place).

    The estimator continues from its current state (pass a fresh one, or
    ``sklearn.base.clone(est)``, for a clean run).  okl learners do the
    prediction inside their own loop, so this costs no more than partial_fit;
    any other estimator with predict/partial_fit works too, one sample at a time.

    Parameters
    ----------
    estimator : an estimator with partial_fit
    X : array of shape (n_samples, n_features)
    y : array of shape (n_samples,)
    classes : array, optional
        All labels, for a classifier's first partial_fit (default: np.unique(y)).
    chunk_size : int
        Samples per call into the estimator; progress is reported per chunk.
    verbose : bool
        Print one progress line per chunk.

    Returns
    -------
    ProgressiveResult
    """
    X = X.tocsr() if hasattr(X, "tocsr") else np.asarray(X)
    y = np.asarray(y)
    n = X.shape[0]
    classifier = is_classifier(estimator)
    if classifier and classes is None:
        classes = np.unique(y)
    fused = isinstance(estimator, OnlineLearner)
    step = chunk_size if fused else 1
    scores = np.empty(n, dtype=np.float64) if fused else None
    predictions = np.empty(n, dtype=y.dtype if classifier else np.float64)
    start = time.perf_counter()
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        fitted = hasattr(estimator, "n_features_in_")
        kwargs = {"classes": classes} if classifier and not fitted else {}
        if fused:
            scores[lo:hi] = estimator._progressive_scores(X[lo:hi], y[lo:hi], **kwargs)
            predictions[lo:hi] = estimator._predictions(scores[lo:hi])
        else:
            if fitted:
                predictions[lo:hi] = estimator.predict(X[lo:hi])
            else:    # nothing learned yet: predict the first class, or 0
                predictions[lo:hi] = classes[0] if classifier else 0.0
            estimator.partial_fit(X[lo:hi], y[lo:hi], **kwargs)
        if verbose and (hi % chunk_size == 0 or hi == n):
            err = (np.mean(predictions[:hi] != y[:hi]) if classifier
                   else np.mean((predictions[:hi] - y[:hi]) ** 2))
            print(f"  t={hi:>8d}  {'error' if classifier else 'mse'}={err:.4f}  "
                  f"centres={getattr(estimator, 'n_support_', '-')}  "
                  f"{time.perf_counter() - start:.1f}s", flush=True)
    if classifier:
        error = _cumulative_mean(predictions != y)
    else:
        error = _cumulative_mean((predictions - y) ** 2)
    loss = _cumulative_mean(estimator._stream_loss(scores, y)) if fused else None
    return ProgressiveResult(predictions, scores, error, loss)


def kernel_ridge_target(X, y, lam, kernel="gaussian", gamma=1.0, degree=3, coef0=0.0):
    """Coefficients a of f* = sum_i a_i K(x_i, .) with (K + n lam I) a = y.

    f* minimises mean_i (f(x_i) - y_i)^2 + lam ||f||_K^2, the target of
    Smale-Yao's algorithm when the samples are drawn uniformly from (X, y).
    """
    K = kernel_matrix(X, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    n = len(K)
    return np.linalg.solve(K + n * lam * np.eye(n), np.asarray(y, dtype=np.float64))


def rkhs_distance(centers_a, coef_a, centers_b, coef_b, kernel="gaussian", gamma=1.0,
                  degree=3, coef0=0.0):
    """||f_a - f_b||_K for two kernel expansions f = sum_i coef[i] K(centers[i], .).

    Repeated centres are merged first, so an online model whose centres are
    copies of a finite sample costs O(n^2) in the number of distinct points.
    """
    centers = np.vstack([np.atleast_2d(centers_a), np.atleast_2d(centers_b)])
    coef = np.concatenate([np.ravel(coef_a), -np.ravel(coef_b)])
    unique, inverse = np.unique(centers, axis=0, return_inverse=True)
    merged = np.bincount(inverse.ravel(), weights=coef, minlength=len(unique))
    K = kernel_matrix(unique, kernel=kernel, gamma=gamma, degree=degree, coef0=coef0)
    return float(np.sqrt(max(merged @ K @ merged, 0.0)))


# ---- Pairwise learners (Lin-Lei-Zhang-Zhou, Section 2) ------------------------------------------

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
