"""okl.synth's drifting generators: documented drift positions, the concepts they switch."""
import numpy as np
import pytest

from okl.synth import (
    concept_switch, drift_positions, drifting_friedman, friedman, moving_clusters,
    rotating_hyperplane,
)

GENERATORS = (moving_clusters, concept_switch, rotating_hyperplane, drifting_friedman)


@pytest.mark.parametrize("make", GENERATORS)
def test_shapes_positions_and_seeds(make):
    X, y, drifts = make(1000, n_features=6, random_state=3)
    assert X.shape == (1000, 6) and y.shape == (1000,) and X.dtype == np.float64
    np.testing.assert_array_equal(drifts, [200, 400, 600, 800])
    assert drifts.dtype == np.int64
    X2, y2, _ = make(1000, n_features=6, random_state=3)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(y, y2)
    X3, _, _ = make(1000, n_features=6, random_state=4)
    assert not np.array_equal(X, X3)
    _, _, given = make(1000, n_features=6, drifts=[10, 500], random_state=3)
    np.testing.assert_array_equal(given, [10, 500])
    _, _, none = make(100, drifts=0, random_state=0)
    assert none.size == 0


@pytest.mark.parametrize("make", GENERATORS)
def test_docstrings_carry_the_shared_returns(make):
    doc = make.__doc__
    assert "{stream}" not in doc
    parameters, returns = doc.split("    Returns\n    -------\n")
    assert parameters.rstrip().endswith(
        "random_state : int, numpy.random.Generator or None, default=None")
    assert returns.startswith("    X : ndarray of shape (n_samples, n_features)\n"
                              "    y : ndarray of shape (n_samples,)\n")
    assert "    drifts : ndarray of int64\n        The " in returns
    assert "    References\n    ----------\n    See docs/drift.md, section 1" in returns


def test_drift_positions():
    np.testing.assert_array_equal(drift_positions(10, 1), [5])
    np.testing.assert_array_equal(drift_positions(9, 2), [3, 6])
    np.testing.assert_array_equal(drift_positions(100, np.array([1, 99])), [1, 99])
    for bad in ([5, 5], [0, 10], [10, 100], [2.5], -1, 100, "3", True):
        with pytest.raises(ValueError, match="drifts"):
            drift_positions(100, bad)


def test_width_longer_than_a_stretch_is_refused():
    with pytest.raises(ValueError, match="width=300 is longer"):
        rotating_hyperplane(1000, width=300)
    with pytest.raises(ValueError, match="width=300 is longer"):
        moving_clusters(1000, width=300)


def test_moving_clusters_stand_still_then_glide_in_straight_lines():
    """Without noise, one cluster's events lie at its centre before the first drift, then on
    straight lines: the centre moves by the same step every event of a move."""
    X, y, _ = moving_clusters(600, n_features=3, n_clusters=2, drifts=[200, 400], width=100,
                              cluster_std=0.0, random_state=0)
    for c in (0, 1):
        rows = np.flatnonzero(y == c)          # one cluster per class here
        before = rows[rows < 200]
        assert np.ptp(X[before], axis=0).max() == 0.0
        for start, stop in ((200, 300), (400, 500)):
            moving = rows[(rows >= start) & (rows < stop)]
            steps = np.diff(X[moving], axis=0) / np.diff(moving)[:, None]
            np.testing.assert_allclose(steps, np.broadcast_to(steps[0], steps.shape),
                                       atol=1e-12)
            assert np.abs(steps[0]).max() > 0
        still = rows[(rows >= 300) & (rows < 400)]
        assert np.ptp(X[still], axis=0).max() == 0.0
    _, _, drifts = moving_clusters(600, drifts=2, random_state=0)
    np.testing.assert_array_equal(drifts, [200, 400])


def test_concept_switch_relabels_and_moves_clusters():
    """move=0: the same places, new classes (balanced) at each switch; move=1: new places."""
    X, y, drifts = concept_switch(4000, n_clusters=10, drifts=1, move=0.0, cluster_std=0.0,
                                  random_state=1)
    before, after = slice(0, 2000), slice(2000, 4000)
    places = {tuple(r) for r in X[before]}
    assert len(places) == 10 and {tuple(r) for r in X[after]} == places
    labels = [dict(zip(map(tuple, X[part]), y[part])) for part in (before, after)]
    assert any(labels[0][p] != labels[1][p] for p in places)
    for label in labels:        # every class on as many clusters as it can be
        assert sorted(np.bincount([label[p] for p in places])) == [5, 5]
    X, _, _ = concept_switch(4000, n_clusters=10, drifts=1, move=1.0, cluster_std=0.0,
                             random_state=1)
    assert not {tuple(r) for r in X[after]} & {tuple(r) for r in X[before]}
    with pytest.raises(ValueError, match="move"):
        concept_switch(100, move=1.5)


def test_rotating_hyperplane_noise_flips_that_fraction():
    """The same seed with and without noise: the labels differ on a `noise` fraction (5 sigma)."""
    n = 20000
    X, clean, _ = rotating_hyperplane(n, noise=0.0, random_state=2)
    X2, noisy, _ = rotating_hyperplane(n, noise=0.2, random_state=2)
    np.testing.assert_array_equal(X, X2)
    assert abs(np.mean(clean != noisy) - 0.2) < 5 * np.sqrt(0.2 * 0.8 / n)


def test_rotating_hyperplane_is_linear_between_drifts():
    """Without noise each stretch is linearly separable, and a turn changes labels."""
    from sklearn.svm import LinearSVC
    X, y, drifts = rotating_hyperplane(3000, n_features=4, drifts=2, noise=0.0, random_state=0)
    edges = [0, *drifts, 3000]
    for lo, hi in zip(edges[:-1], edges[1:]):
        clf = LinearSVC(C=1e4, max_iter=100000).fit(X[lo:hi], y[lo:hi])
        assert clf.score(X[lo:hi], y[lo:hi]) >= 0.99
    whole = LinearSVC(C=1e4, max_iter=100000).fit(X, y)
    assert whole.score(X, y) < 0.9


def test_friedman_target_moves_linearly_over_width():
    """noise=0: over a change of `width` events y mixes the old and the new target."""
    n, p, w = 2000, 1000, 50
    X, old, _ = drifting_friedman(n, drifts=[n - 1], width=1, noise=0.0, random_state=5)
    _, new, _ = drifting_friedman(n, drifts=[p], width=1, noise=0.0, random_state=5)
    _, mixed, _ = drifting_friedman(n, drifts=[p], width=w, noise=0.0, random_state=5)
    np.testing.assert_array_equal(mixed[:p], old[:p])
    np.testing.assert_array_equal(mixed[p + w:], new[p + w:])
    u = (np.arange(w) + 1) / w
    np.testing.assert_allclose(mixed[p:p + w], u * new[p:p + w] + (1 - u) * old[p:p + w])
    assert not np.allclose(old[p:], new[p:])
    np.testing.assert_allclose(friedman(np.full((1, 5), 0.5), range(5)),
                               10 * np.sin(np.pi / 4) + 7.5)
    with pytest.raises(ValueError, match="n_features must be >= 5"):
        drifting_friedman(100, n_features=4)
