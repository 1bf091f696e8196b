"""Synthetic streams: drifting concepts, a drifting labelled data set, non-identical sampling.

The drifting generators (`moving_clusters`, `concept_switch`, `rotating_hyperplane`,
`drifting_friedman`) return ``(X, y, drifts)``: the stream and the positions of its
changes, so that `okl.evaluation.recovery` measures how a learner recovers from each.

References
----------
See docs/algorithms.md, section 5.5, and docs/drift.md.

.. [1] J. Shen and T. G. Dietterich, "A family of large margin linear
   classifiers and its application in dynamic environments",
   Statistical Analysis and Data Mining, 2(5-6), 2009.
"""
import re
import textwrap
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp

# Shen-Dietterich Section 4: class probabilities (P1, P2, N1, N2) at the start
# and at the end of each phase; they move linearly in between.
PHASES = np.array([
    [[0.7, 0.0, 0.3, 0.0], [0.5, 0.0, 0.5, 0.0]],
    [[0.5, 0.0, 0.5, 0.0], [0.3, 0.2, 0.5, 0.0]],
    [[0.0, 0.5, 0.2, 0.3], [0.0, 0.5, 0.0, 0.5]],
    [[0.0, 0.5, 0.0, 0.5], [0.0, 0.3, 0.0, 0.7]],
])

__all__ = ["concept_switch", "conditional_quantile", "drift_positions", "drifting_friedman",
           "drifting_phases", "friedman", "lorenz", "mackey_glass", "mixture_weight",
           "moving_clusters", "nonidentical", "phase_probabilities", "rotating_hyperplane",
           "target"]


def _count(value, name):
    """value as an int >= 1; a bool is not a count."""
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be an int >= 1; got {value!r}.")
    return int(value)


def _number(value, name):
    """value as a float; a bool is not a number."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ValueError(f"{name} must be a number; got {value!r}.")
    return float(value)


def phase_probabilities(n_per_phase):
    """The class probabilities (P1, P2, N1, N2) of every step, shape (4 n_per_phase, 4).

    Inside each phase they move linearly from the phase's start values (first
    step) to its end values (last step).
    """
    n_per_phase = _count(n_per_phase, "n_per_phase")
    u = np.linspace(0.0, 1.0, n_per_phase)[:, None]
    return np.vstack([start + u * (end - start) for start, end in PHASES])


def drifting_phases(X, y, classes, n_per_phase=500, random_state=None, replace=True):
    """The four-phase drifting stream of Shen and Dietterich (Section 4).

    Four classes play the roles P1, P2 (positive) and N1, N2 (negative).  At
    each step a class is drawn with the probabilities of `phase_probabilities`
    (phase 1: P1 .7 -> .5, N1 .3 -> .5; phase 2: P1 .5 -> .3, P2 0 -> .2,
    N1 .5; phase 3: P2 .5, N1 .2 -> 0, N2 .3 -> .5; phase 4: P2 .5 -> .3,
    N2 .5 -> .7), then a sample of that class.  The positive concept drifts
    from P1 to P2 and the negative from N1 to N2: features that separated P1
    from N1 lose their meaning in phases 3-4.

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    classes : sequence of 4 labels
        The labels playing (P1, P2, N1, N2); the paper's USPS roles are the
        digits (3, 7, 8, 9).
    n_per_phase : int, default=500
        Steps per phase (the paper: 500 for USPS); the stream has 4 times as many.
    random_state : int, numpy.random.Generator or None, default=None
    replace : bool, default=True
        Draw samples of a class with replacement.  Without replacement each
        class must hold as many samples as the stream draws from it.

    Returns
    -------
    X_stream : array or sparse matrix of shape (4 n_per_phase, n_features)
    y_stream : ndarray of shape (4 n_per_phase,)
        +1 for P1 and P2, -1 for N1 and N2.
    """
    X = X.tocsr() if sp.issparse(X) else np.asarray(X)
    y = np.asarray(y)
    n_per_phase = _count(n_per_phase, "n_per_phase")
    if not isinstance(replace, (bool, np.bool_)):
        raise ValueError(f"replace must be True or False; got {replace!r}.")
    try:
        classes = list(classes)
        distinct = len(set(classes))
    except TypeError:
        raise ValueError("classes must be 4 distinct labels (P1, P2, N1, N2), e.g. (3, 7, 8, 9); "
                         f"got {classes!r}.") from None
    if len(classes) != 4 or distinct != 4:
        raise ValueError(f"classes must be 4 distinct labels (P1, P2, N1, N2); got {classes!r}.")
    if X.shape[0] != len(y):
        raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} labels.")
    pools = [np.flatnonzero(y == label) for label in classes]
    for label, pool in zip(classes, pools):
        if pool.size == 0:
            raise ValueError(f"Class {label!r} has no sample in y; labels present: "
                             f"{np.unique(y).tolist()}.")
    rng = np.random.default_rng(random_state)
    probs = phase_probabilities(n_per_phase)
    # the class of each step: inverse CDF of its probabilities
    roles = (rng.random(len(probs))[:, None] > np.cumsum(probs, axis=1)[:, :3]).sum(axis=1)
    rows = np.empty(len(probs), dtype=np.intp)
    for role, pool in enumerate(pools):
        steps = np.flatnonzero(roles == role)
        if not replace and steps.size > pool.size:
            raise ValueError(
                f"The stream draws {steps.size} samples of class {classes[role]!r}, which has "
                f"{pool.size}; use replace=True or a smaller n_per_phase.")
        rows[steps] = rng.choice(pool, size=steps.size, replace=replace)
    return X[rows], np.where(roles < 2, 1, -1)


# ---------------------------------------------------------------------------
# Yang's non-identical sampling: marginals converging to rho_X at rate t^-b


def target(X):
    """The default regression function f(x) = sin(2 pi mean(x)) of `nonidentical`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    X = np.asarray(X, dtype=np.float64)
    return np.sin(2 * np.pi * X.mean(axis=1))


def mixture_weight(t, b, c=1.0):
    """The weight ``w_t = min(1, c t**-b)`` of nu in the marginal of x_t.

    Parameters
    ----------
    t : int or array-like of int
        Step numbers, from 1.
    b : float > 0 or inf
        The rate of eq. (1.1); ``b = inf`` (w_t = 0) is the i.i.d. case.
    c : float >= 0, default=1.0

    Returns
    -------
    float or ndarray

    References
    ----------
    See `nonidentical` and docs/nonidentical.md.
    """
    b, c = _number(b, "b"), _number(c, "c")
    t = np.asarray(t, dtype=np.float64)
    if np.isinf(b):
        return np.zeros_like(t)[()]
    return np.minimum(1.0, c * t ** -float(b))[()]


def conditional_quantile(X, quantile, f=None):
    """The tau-quantile of y | x in `nonidentical`: ``f(x) - 1 + 2 tau``.

    y | x is uniform on [f(x) - 1, f(x) + 1] (Yang's test setting), so this is
    the target of quantile regression, whatever the marginal of x.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    quantile : float in [0, 1]
        tau.
    f : callable or None, default=None
        The centre of y | x, mapping (n_samples, n_features) arrays to
        (n_samples,); None is `target`.

    Returns
    -------
    ndarray of shape (n_samples,)

    References
    ----------
    Yang Pengwei, Quantile regression with samples drawn from non-identical
    distributions, Journal of Mathematics (Shuxue Zazhi) 39(5):713-720, 2019,
    Theorem 2.1, assumption 5.  See docs/nonidentical.md.
    """
    if isinstance(quantile, bool) or not isinstance(quantile, Real) or not 0.0 <= quantile <= 1.0:
        raise ValueError(f"quantile must be a float in [0, 1]; got {quantile!r}.")
    f = target if f is None else f
    return np.asarray(f(np.asarray(X, dtype=np.float64)), dtype=np.float64) - 1.0 + 2.0 * quantile


def nonidentical(n, b, *, c=1.0, nu=(0.0, 0.2), n_features=1, f=None, chunk_size=None,
                 random_state=None):
    """A stream whose marginals converge to rho_X at rate t^-b (Yang, eq. (1.1)).

    At step t = 1, ..., n the marginal of x_t is the mixture
    ``rho_X^(t) = (1 - w_t) rho_X + w_t nu``, ``w_t = min(1, c t**-b)``, with
    rho_X uniform on [0, 1]^d and nu uniform on the box [lo, hi]^d; y | x is
    uniform on [f(x) - 1, f(x) + 1] at every step, so the tau-quantile of
    y | x is ``f(x) - 1 + 2 tau`` (`conditional_quantile`).  Since
    rho_X^(t) - rho_X = w_t (nu - rho_X), for every s in (0, 1]

        ||rho_X^(t) - rho_X||_(C^s)* = w_t ||nu - rho_X||_(C^s)* <= 2 c t^-b,

    (the dual norm is at most the total variation, 2, and at most the
    Wasserstein distance W_s; for the default nu, d = 1 and s = 1: 0.4).

    Each step uses 2 d + 2 uniforms of one generator, drawn in order, and
    transforms them (nu and rho_X draws are both made; u < w_t picks nu), so
    the samples do not depend on `chunk_size`, and streams with the same seed
    and different b or c share their rho_X draws, nu draws and noise (smaller
    b only moves more steps to nu).

    Parameters
    ----------
    n : int >= 1
        Length of the stream.
    b : float > 0 or inf
        The rate of eq. (1.1); inf is the i.i.d. stream.
    c : float >= 0, default=1.0
        The constant of the mixture weight.
    nu : (float, float), default=(0.0, 0.2)
        (lo, hi) with lo < hi: nu is uniform on [lo, hi]^d.
    n_features : int >= 1, default=1
        d.
    f : callable or None, default=None
        Maps an (m, d) array to the (m,) centres of y | x; None is `target`,
        sin(2 pi mean(x)).
    chunk_size : int >= 1 or None, default=None
        None yields events ``(x, y)``, x of shape (d,) and y a float; an int
        yields chunks ``(X, y)`` of that many rows (the last one shorter).
    random_state : int, numpy.random.Generator or None, default=None

    Returns
    -------
    generator
        Of events or chunks, n samples in all.

    References
    ----------
    Yang Pengwei, Quantile regression with samples drawn from non-identical
    distributions, Journal of Mathematics (Shuxue Zazhi) 39(5):713-720, 2019.
    The construction and its bound: docs/nonidentical.md.

    Examples
    --------
    >>> from okl.synth import nonidentical
    >>> X, y = next(nonidentical(1000, b=0.5, chunk_size=1000, random_state=0))
    >>> X.shape, y.shape
    ((1000, 1), (1000,))
    """
    n = _count(n, "n")
    if isinstance(b, bool) or not isinstance(b, Real) or not b > 0:
        raise ValueError(f"b must be a float > 0 (inf for i.i.d. sampling); got {b!r}.")
    if isinstance(c, bool) or not isinstance(c, Real) or not 0 <= c < np.inf:
        raise ValueError(f"c must be a finite float >= 0; got {c!r}.")
    n_features = _count(n_features, "n_features")
    if chunk_size is not None:
        chunk_size = _count(chunk_size, "chunk_size (or None)")
    try:
        lo, hi = (float(v) for v in nu)
    except (TypeError, ValueError):
        raise ValueError(f"nu must be (lo, hi) with finite lo < hi; got {nu!r}.") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ValueError(f"nu must be (lo, hi) with finite lo < hi; got {nu!r}.")
    f = target if f is None else f
    rng = np.random.default_rng(random_state)
    d = int(n_features)

    def draw(t_done, m):
        """Steps t_done + 1 ... t_done + m, in one block of uniforms."""
        u = rng.random((m, 2 * d + 2))
        w = mixture_weight(np.arange(t_done + 1, t_done + m + 1), b, c)
        X = np.where((u[:, 0] < w)[:, None], lo + (hi - lo) * u[:, 1 + d:1 + 2 * d],
                     u[:, 1:1 + d])
        centre = np.asarray(f(X), dtype=np.float64)
        if centre.shape != (m,):
            raise ValueError(f"f must map an ({m}, {d}) array to shape ({m},); "
                             f"got shape {centre.shape}.")
        return X, centre + 2.0 * u[:, -1] - 1.0

    def chunks(size):
        for t_done in range(0, n, size):
            yield draw(t_done, min(size, n - t_done))

    def events():
        for X, y in chunks(1024):
            yield from zip(X, y.tolist())

    return events() if chunk_size is None else chunks(int(chunk_size))


def _embed(series, embedding, horizon):
    """Rows of `embedding` consecutive values and the value `horizon` steps after each row."""
    n = len(series) - embedding - horizon + 1
    X = np.lib.stride_tricks.sliding_window_view(series, embedding)[:n]
    return np.ascontiguousarray(X), series[embedding + horizon - 1:embedding + horizon - 1 + n].copy()


def lorenz(n_samples=10000, embedding=6, *, component="z", dt=0.01, horizon=1, noise=0.0,
           sigma=10.0, rho=28.0, beta=8.0 / 3.0, burn_in=1000, random_state=None):
    """A time series of the Lorenz attractor, embedded for one-step prediction.

    The system ``x' = sigma (y - x)``, ``y' = x (rho - z) - y``, ``z' = x y - beta z`` is
    integrated by the classical Runge-Kutta method with step `dt` from a start drawn near
    (1, 1, 1) by `random_state`; after `burn_in` steps (onto the attractor) the coordinate
    `component` is sampled every step.  Row t of X holds `embedding` consecutive values,
    y[t] the value `horizon` steps after the last of them: the benchmark of kernel adaptive
    filtering (Lorenz, embedding 6, one-step prediction; docs/krls.md, section 6).
    `noise` adds Gaussian noise of that standard deviation to the series.

    Returns
    -------
    X : ndarray of shape (n_samples, embedding)
    y : ndarray of shape (n_samples,)
    """
    n_samples, embedding = _count(n_samples, "n_samples"), _count(embedding, "embedding")
    horizon = _count(horizon, "horizon")
    burn_in = int(_number(burn_in, "burn_in"))
    if component not in ("x", "y", "z"):
        raise ValueError(f"component must be 'x', 'y' or 'z'; got {component!r}.")
    dt, noise = _number(dt, "dt"), _number(noise, "noise")
    if not dt > 0 or noise < 0 or burn_in < 0:
        raise ValueError("dt must be > 0, noise and burn_in >= 0.")
    sigma, rho, beta = (_number(v, name) for v, name in ((sigma, "sigma"), (rho, "rho"),
                                                          (beta, "beta")))
    rng = np.random.default_rng(random_state)

    def velocity(p):
        x, y, z = p
        return np.array([sigma * (y - x), x * (rho - z) - y, x * y - beta * z])

    p = np.ones(3) + 0.01 * rng.standard_normal(3)
    length = n_samples + embedding + horizon - 1
    series = np.empty(length)
    index = "xyz".index(component)
    for step in range(burn_in + length):
        k1 = velocity(p)
        k2 = velocity(p + 0.5 * dt * k1)
        k3 = velocity(p + 0.5 * dt * k2)
        k4 = velocity(p + dt * k3)
        p = p + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        if step >= burn_in:
            series[step - burn_in] = p[index]
    if noise:
        series += noise * rng.standard_normal(length)
    return _embed(series, embedding, horizon)


def mackey_glass(n_samples=10000, embedding=7, *, tau=30.0, horizon=1, noise=0.0, a=0.2, b=0.1,
                 power=10, dt=0.1, sample_every=1.0, burn_in=1000, random_state=None):
    """A time series of the Mackey-Glass delay equation, embedded for one-step prediction.

    ``x'(t) = a x(t - tau) / (1 + x(t - tau)^power) - b x(t)`` is integrated by the
    classical Runge-Kutta method with step `dt` (the delayed value at a half step is the
    mean of its neighbours), from a constant history drawn near 1.2 by `random_state`, and
    sampled every `sample_every` time units after `burn_in` samples.  tau = 17 and 30 give
    the usual chaotic series (KAFBOX's "mg30" is tau = 30).  X, y as `lorenz`.

    Returns
    -------
    X : ndarray of shape (n_samples, embedding)
    y : ndarray of shape (n_samples,)
    """
    n_samples, embedding = _count(n_samples, "n_samples"), _count(embedding, "embedding")
    horizon, power = _count(horizon, "horizon"), _count(power, "power")
    tau, dt, every = _number(tau, "tau"), _number(dt, "dt"), _number(sample_every, "sample_every")
    noise, burn_in = _number(noise, "noise"), int(_number(burn_in, "burn_in"))
    a, b = _number(a, "a"), _number(b, "b")
    lag, stride = int(round(tau / dt)), int(round(every / dt))
    if not (dt > 0 and lag >= 1 and stride >= 1 and abs(lag * dt - tau) < 1e-9 * max(tau, 1)
            and abs(stride * dt - every) < 1e-9 * max(every, 1)):
        raise ValueError("tau and sample_every must be positive multiples of dt.")
    if noise < 0 or burn_in < 0:
        raise ValueError("noise and burn_in must be >= 0.")
    rng = np.random.default_rng(random_state)
    length = n_samples + embedding + horizon - 1
    steps = (burn_in + length) * stride
    x = np.empty(lag + steps + 1)
    x[:lag + 1] = 1.2 + 0.1 * rng.uniform(-1.0, 1.0)

    def slope(value, delayed):
        return a * delayed / (1.0 + delayed ** power) - b * value

    for i in range(lag, lag + steps):
        now, delayed, then = x[i], x[i - lag], x[i - lag + 1]
        half = 0.5 * (delayed + then)
        k1 = slope(now, delayed)
        k2 = slope(now + 0.5 * dt * k1, half)
        k3 = slope(now + 0.5 * dt * k2, half)
        k4 = slope(now + dt * k3, then)
        x[i + 1] = now + dt / 6.0 * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    series = x[lag + stride::stride][burn_in:burn_in + length].copy()
    if noise:
        series += noise * rng.standard_normal(length)
    return _embed(series, embedding, horizon)
# ---------------------------------------------------------------------------
# Drifting concepts with known change positions (docs/drift.md)


def drift_positions(n_samples, drifts):
    """The first events of the new concepts of a stream of `n_samples` events.

    Parameters
    ----------
    n_samples : int >= 1
    drifts : int >= 0 or sequence of int
        A count: that many evenly spaced positions, ``round(k n_samples / (drifts + 1))``
        for k = 1, ..., drifts.  A sequence: these positions, increasing, in
        [1, n_samples - 1].

    Returns
    -------
    ndarray of int64
        The positions (0-based event indices), increasing.

    References
    ----------
    See docs/drift.md, section 1.
    """
    n_samples = _count(n_samples, "n_samples")
    if isinstance(drifts, Integral) and not isinstance(drifts, bool):
        if drifts < 0 or drifts >= n_samples:
            raise ValueError(f"drifts must be a count in [0, n_samples - 1] or a sequence of "
                             f"positions; got {drifts!r} for n_samples={n_samples}.")
        k = np.arange(1, int(drifts) + 1)
        return np.round(k * n_samples / (int(drifts) + 1)).astype(np.int64)
    try:
        positions = np.asarray(drifts)
    except (TypeError, ValueError):
        positions = None
    if (positions is None or positions.ndim != 1 or positions.dtype.kind not in "iu"
            or np.any(np.diff(positions) <= 0) or positions.size and (
                positions[0] < 1 or positions[-1] > n_samples - 1)):
        raise ValueError("drifts must be a count or increasing integer positions in "
                         f"[1, n_samples - 1] = [1, {n_samples - 1}]; got {drifts!r}.")
    return positions.astype(np.int64)


def _width(width, positions, n_samples, default=1):
    """The events each change takes (one per drift): `width` checked against the gaps."""
    gaps = np.diff(np.append(positions, n_samples))
    if width is None:
        return gaps if default is None else np.full(len(positions), default, dtype=np.int64)
    width = _count(width, "width (or None)")
    if gaps.size and width > gaps.min():
        raise ValueError(f"width={width} is longer than the shortest stretch between two drift "
                         f"positions ({gaps.min()} events); use a smaller width or fewer drifts.")
    return np.full(len(positions), width, dtype=np.int64)


def _changes(n_samples, drifts, width=None, default=1):
    """(positions, k, u): the drift positions (`drift_positions`) and, for every event, its
    concept k and the progress u in [0, 1] of the change into it: concept 0 before the first
    position, concept k from position k - 1 on, u rising linearly from 1 / width at the
    position to 1 after `width` events (`_width`: None takes `default`, None then meaning
    until the next position)."""
    positions = drift_positions(n_samples, drifts)
    widths = _width(width, positions, n_samples, default)
    t = np.arange(n_samples)
    k = np.searchsorted(positions, t, side="right")
    start = np.concatenate([[0], positions])[k]
    width = np.concatenate([[1], widths])[k]
    return positions, k, np.minimum((t - start + 1) / width, 1.0)


_STREAM = """\
random_state : int, numpy.random.Generator or None, default=None

Returns
-------
X : ndarray of shape (n_samples, n_features)
y : ndarray of shape (n_samples,){y}
drifts : ndarray of int64
    {drifts}"""


def _stream_doc(drifts, y=None):
    """Decorator of a drifting generator: the line ``{stream}`` of its docstring becomes the
    last parameter and the Returns section they share, `y` saying what the labels are and
    `drifts` what starts at the positions."""
    text = _STREAM.format(y="" if y is None else "\n    " + y, drifts=drifts)

    def fill(generator):
        if generator.__doc__:                   # None under python -OO
            generator.__doc__ = re.sub(r"^( *)\{stream\}$",
                                       lambda m: textwrap.indent(text, m.group(1)),
                                       generator.__doc__, count=1, flags=re.MULTILINE)
        return generator
    return fill


def _cluster_labels(rng, n_clusters, n_classes):
    """A class for each cluster, every class as often as it can be (shuffled)."""
    return rng.permutation(np.arange(n_clusters) % n_classes)


def _check_clusters(n_features, n_clusters, n_classes, cluster_std):
    n_features = _count(n_features, "n_features")
    n_clusters = _count(n_clusters, "n_clusters")
    n_classes = _count(n_classes, "n_classes")
    if not 2 <= n_classes <= n_clusters:
        raise ValueError(f"n_classes must be in [2, n_clusters = {n_clusters}]; got {n_classes}.")
    cluster_std = _number(cluster_std, "cluster_std")
    if not 0 <= cluster_std < np.inf:
        raise ValueError(f"cluster_std must be a finite float >= 0; got {cluster_std!r}.")
    return n_features, n_clusters, n_classes, cluster_std


@_stream_doc("The events at which the moves start.", y="Classes 0, ..., n_classes - 1.")
def moving_clusters(n_samples=10000, *, n_features=10, n_clusters=20, n_classes=2, drifts=4,
                    width=None, cluster_std=0.1, random_state=None):
    """Gaussian clusters whose centres move: a gradual, continuing drift.

    Each cluster has a centre in [0, 1]^n_features and a class (every class as
    often as it can be); an event draws a cluster uniformly, then x around its
    centre with standard deviation `cluster_std` in each feature, y the
    cluster's class.  The centres stand still until the first drift position;
    from each drift position on, every centre glides in a straight line to a
    new point drawn uniformly in the cube, arriving `width` events later.  By
    default (width=None) it arrives at the next drift position (the end of the
    stream for the last one): the centres then never stop once they start.

    Parameters
    ----------
    n_samples : int, default=10000
    n_features : int, default=10
    n_clusters : int, default=20
    n_classes : int, default=2
    drifts : int or sequence of int, default=4
        Where the centres start to move: a count of evenly spaced positions or
        the positions (`drift_positions`).
    width : int or None, default=None
        Events a move takes (at most the shortest stretch between two
        positions); None: until the next position.
    cluster_std : float, default=0.1
    {stream}

    References
    ----------
    See docs/drift.md, section 1.

    Examples
    --------
    >>> from okl.synth import moving_clusters
    >>> X, y, drifts = moving_clusters(1000, random_state=0)
    >>> X.shape, drifts.tolist()
    ((1000, 10), [200, 400, 600, 800])
    """
    n_samples = _count(n_samples, "n_samples")
    d, m, n_classes, std = _check_clusters(n_features, n_clusters, n_classes, cluster_std)
    positions, k, u = _changes(n_samples, drifts, width, default=None)
    rng = np.random.default_rng(random_state)
    labels = _cluster_labels(rng, m, n_classes)
    stops = rng.random((len(positions) + 1, m, d))      # where each move ends (0: the start)
    c = rng.integers(0, m, n_samples)
    start = stops[np.maximum(k - 1, 0), c]
    X = start + u[:, None] * (stops[k, c] - start) * (k > 0)[:, None]
    X += std * rng.standard_normal((n_samples, d))
    return X, labels[c], positions


@_stream_doc("The first event of each new concept.", y="Classes 0, ..., n_classes - 1.")
def concept_switch(n_samples=10000, *, n_features=10, n_clusters=20, n_classes=2, drifts=4,
                   move=0.5, cluster_std=0.1, random_state=None):
    """Gaussian clusters whose concept switches abruptly at each drift position.

    The clusters are those of `moving_clusters` (a centre in [0, 1]^n_features
    and a class each; x around the centre of a cluster drawn uniformly).  At
    each drift position every cluster takes a new class (a fresh shuffle, every
    class as often as it can be, so that with two classes about half of them
    change) and, with probability `move`, a new centre drawn uniformly in the
    cube: the same x can now mean another class, and part of the stream comes
    from new places.

    Parameters
    ----------
    n_samples : int, default=10000
    n_features : int, default=10
    n_clusters : int, default=20
    n_classes : int, default=2
    drifts : int or sequence of int, default=4
        A count of evenly spaced positions, or the positions (`drift_positions`).
    move : float in [0, 1], default=0.5
        The probability that a cluster moves at a switch (0: only the classes
        change; 1: a new concept in new places).
    cluster_std : float, default=0.1
    {stream}

    References
    ----------
    See docs/drift.md, section 1.
    """
    n_samples = _count(n_samples, "n_samples")
    d, m, n_classes, std = _check_clusters(n_features, n_clusters, n_classes, cluster_std)
    move = _number(move, "move")
    if not 0.0 <= move <= 1.0:
        raise ValueError(f"move must be a probability in [0, 1]; got {move!r}.")
    positions, k, _ = _changes(n_samples, drifts)
    rng = np.random.default_rng(random_state)
    centres = np.empty((len(positions) + 1, m, d))
    labels = np.empty((len(positions) + 1, m), dtype=np.int64)
    centres[0], labels[0] = rng.random((m, d)), _cluster_labels(rng, m, n_classes)
    for j in range(1, len(positions) + 1):
        labels[j] = _cluster_labels(rng, m, n_classes)
        moved = rng.random(m) < move
        centres[j] = np.where(moved[:, None], rng.random((m, d)), centres[j - 1])
    c = rng.integers(0, m, n_samples)
    X = centres[k, c] + std * rng.standard_normal((n_samples, d))
    return X, labels[k, c], positions


@_stream_doc("The events at which the turns start.", y="Classes 0 and 1.")
def rotating_hyperplane(n_samples=10000, *, n_features=10, drifts=4, angle=np.pi / 2, width=1,
                        noise=0.1, random_state=None):
    """A linear concept that rotates at each drift position, with label noise.

    x is uniform in [0, 1]^n_features and y = 1 when ``<w, x - 1/2> > 0``, else 0;
    a fraction `noise` of the labels is flipped.  At each drift position the
    unit normal w turns by `angle` (radians) in a random plane through it,
    linearly over `width` events (1: at once).  A turn by angle a changes the
    label of a fraction a / pi of the cube (half of it for the default pi/2).

    Parameters
    ----------
    n_samples : int, default=10000
    n_features : int >= 2, default=10
    drifts : int or sequence of int, default=4
        A count of evenly spaced positions, or the positions (`drift_positions`).
    angle : float, default=pi/2
    width : int, default=1
        Events a turn takes (at most the shortest stretch between two positions).
    noise : float in [0, 1/2], default=0.1
        The probability that a label is flipped.
    {stream}

    References
    ----------
    See docs/drift.md, section 1; the rotating hyperplane of G. Hulten, L. Spencer
    and P. Domingos, "Mining time-changing data streams", KDD 2001, turned at
    known positions.
    """
    n_samples = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    if d < 2:
        raise ValueError(f"n_features must be >= 2 for a hyperplane to turn; got {d}.")
    angle = _number(angle, "angle")
    noise = _number(noise, "noise")
    if not 0.0 <= noise <= 0.5:
        raise ValueError(f"noise must be a probability in [0, 0.5]; got {noise!r}.")
    positions, k, u = _changes(n_samples, drifts, width)
    rng = np.random.default_rng(random_state)
    normals = np.empty((len(positions) + 1, d))     # w at each drift position
    planes = np.zeros((len(positions) + 1, d))      # the unit direction w turns towards
    w = rng.standard_normal(d)
    normals[0] = w / np.linalg.norm(w)
    for j in range(1, len(positions) + 1):
        v = rng.standard_normal(d)
        v -= (v @ normals[j - 1]) * normals[j - 1]
        planes[j] = v / np.linalg.norm(v)
        normals[j] = np.cos(angle) * normals[j - 1] + np.sin(angle) * planes[j]
    X = rng.random((n_samples, d))
    start = normals[np.maximum(k - 1, 0)]
    a = np.where(k > 0, u * angle, 0.0)[:, None]
    w_t = np.where(k[:, None] > 0, np.cos(a) * start + np.sin(a) * planes[k], normals[0])
    y = (np.einsum("ij,ij->i", X - 0.5, w_t) > 0).astype(np.int64)
    flip = rng.random(n_samples) < noise
    return X, np.where(flip, 1 - y, y), positions


def friedman(X, features):
    """Friedman's first regression function on the columns `features` (a, b, c, d, e) of X:
    ``10 sin(pi x_a x_b) + 20 (x_c - 1/2)^2 + 10 x_d + 5 x_e``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    features : sequence of 5 column indices

    Returns
    -------
    ndarray of shape (n_samples,)
    """
    a, b, c, d, e = (X[:, j] for j in features)
    return 10 * np.sin(np.pi * a * b) + 20 * (c - 0.5) ** 2 + 10 * d + 5 * e


@_stream_doc("The events at which the changes start.")
def drifting_friedman(n_samples=10000, *, n_features=10, drifts=4, width=1, noise=1.0,
                      random_state=None):
    """Friedman's first regression target on features that change at each drift position.

    x is uniform in [0, 1]^n_features and y = `friedman` (x on five relevant
    features, in roles a..e) plus Gaussian noise of standard deviation
    `noise` (J. H. Friedman, "Multivariate adaptive regression splines", 1991,
    with 10 features: 5 relevant, 5 not).  At each drift position five new
    features, drawn at random, take the roles: the target moves to other
    features, linearly over `width` events (y mixes the two targets).

    Parameters
    ----------
    n_samples : int, default=10000
    n_features : int >= 5, default=10
    drifts : int or sequence of int, default=4
        A count of evenly spaced positions, or the positions (`drift_positions`).
    width : int, default=1
        Events a change takes (at most the shortest stretch between two positions).
    noise : float >= 0, default=1.0
    {stream}

    References
    ----------
    See docs/drift.md, section 1.
    """
    n_samples = _count(n_samples, "n_samples")
    d = _count(n_features, "n_features")
    if d < 5:
        raise ValueError(f"n_features must be >= 5 (the target reads five); got {d}.")
    noise = _number(noise, "noise")
    if not 0 <= noise < np.inf:
        raise ValueError(f"noise must be a finite float >= 0; got {noise!r}.")
    positions, k, u = _changes(n_samples, drifts, width)
    rng = np.random.default_rng(random_state)
    roles = np.array([rng.permutation(d)[:5] for _ in range(len(positions) + 1)])
    X = rng.random((n_samples, d))
    y = np.empty(n_samples)
    for j in range(len(roles)):
        rows = k == j
        now = friedman(X[rows], roles[j])
        y[rows] = now if j == 0 else u[rows] * now + (1 - u[rows]) * friedman(X[rows],
                                                                                roles[j - 1])
    return X, y + noise * rng.standard_normal(n_samples), positions
