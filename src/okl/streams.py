"""Non-stationary streams built from a labelled data set."""
from numbers import Integral

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


def phase_probabilities(n_per_phase):
    """The class probabilities (P1, P2, N1, N2) of every step, shape (4 n_per_phase, 4).

    Inside each phase they move linearly from the phase's start values (first
    step) to its end values (last step).
    """
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
    if not isinstance(n_per_phase, Integral) or n_per_phase < 1:
        raise ValueError(f"n_per_phase must be an int >= 1; got {n_per_phase!r}.")
    if len(classes) != 4 or len(set(classes)) != 4:
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
