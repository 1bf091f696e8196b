"""Streams scaled as a StreamPipeline scales them, for the bench scripts (defaults.py, drift.py).

Each event is standardised by okl's OnlineStandardScaler with the moments of the events up to
and including it, so that no event is scaled with knowledge of later ones.
"""
import numpy as np

from okl.preprocessing import OnlineStandardScaler


def online_scaled(X, y, shuffle=True, seed=0):
    """Shuffled (a permutation drawn from `seed`; none with shuffle=False), each event scaled
    by the moments of the events up to it: (Z, y)."""
    order = np.random.default_rng(seed).permutation(len(X)) if shuffle else np.arange(len(X))
    X, y = X[order], np.asarray(y)[order]
    scaler = OnlineStandardScaler()
    Z = np.empty_like(X, dtype=np.float64)
    for i, x in enumerate(X):
        scaler.learn_one(x)
        Z[i] = scaler.transform_one(x)
    return Z, y
