"""okl.synth.drifting_phases: the four-phase stream of Shen and Dietterich, Section 4."""
import numpy as np
import pytest
import scipy.sparse as sp

from okl.synth import PHASES, drifting_phases, phase_probabilities


def labelled_pool(n_per_class=50, d=3):
    """Class c's rows all equal c, so a stream row tells which class was drawn."""
    y = np.repeat([3, 7, 8, 9, 1], n_per_class)
    return np.repeat(y[:, None], d, axis=1).astype(float), y


def test_probabilities_follow_section_4():
    probs = phase_probabilities(5)
    assert probs.shape == (20, 4)
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    for phase, (start, end) in enumerate(PHASES):
        np.testing.assert_allclose(probs[5 * phase], start)
        np.testing.assert_allclose(probs[5 * phase + 4], end)
        np.testing.assert_allclose(probs[5 * phase + 2], (start + end) / 2)
    # phase 2 ends with P1 .3, P2 .2, N1 .5; phase 3 starts with P2 .5, N1 .2, N2 .3
    np.testing.assert_allclose(probs[9], [0.3, 0.2, 0.5, 0.0])
    np.testing.assert_allclose(probs[10], [0.0, 0.5, 0.2, 0.3])


def test_class_frequencies_match_the_probabilities():
    """Per phase, the drawn frequencies match the mean probabilities (5 sigma, 40000 steps)."""
    X, y = labelled_pool()
    n = 10000
    Xs, ys = drifting_phases(X, y, classes=(3, 7, 8, 9), n_per_phase=n, random_state=0)
    drawn = Xs[:, 0]
    assert set(np.unique(drawn)) <= {3, 7, 8, 9}
    np.testing.assert_array_equal(ys, np.where(np.isin(drawn, (3, 7)), 1, -1))
    for phase, (start, end) in enumerate(PHASES):
        block = drawn[phase * n:(phase + 1) * n]
        freq = np.array([np.mean(block == c) for c in (3, 7, 8, 9)])
        p = (start + end) / 2
        assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)
        # and the drift inside the phase: first vs last tenth
        first = np.array([np.mean(block[: n // 10] == c) for c in (3, 7, 8, 9)])
        last = np.array([np.mean(block[-n // 10:] == c) for c in (3, 7, 8, 9)])
        np.testing.assert_allclose(first, start + 0.05 * (end - start), atol=0.05)
        np.testing.assert_allclose(last, start + 0.95 * (end - start), atol=0.05)


def test_reproducible_sparse_and_without_replacement():
    X, y = labelled_pool(n_per_class=200)
    a = drifting_phases(X, y, (3, 7, 8, 9), n_per_phase=40, random_state=5)
    b = drifting_phases(sp.csr_matrix(X), y, (3, 7, 8, 9), n_per_phase=40, random_state=5)
    np.testing.assert_array_equal(a[0], b[0].toarray())
    np.testing.assert_array_equal(a[1], b[1])
    idx = np.arange(len(y), dtype=float)[:, None]          # rows identify samples
    Xs, _ = drifting_phases(idx, y, (3, 7, 8, 9), n_per_phase=40, random_state=1,
                            replace=False)
    assert len(np.unique(Xs)) == len(Xs) == 160


def test_errors_name_the_problem():
    X, y = labelled_pool(n_per_class=5)
    with pytest.raises(ValueError, match="4 distinct labels"):
        drifting_phases(X, y, (3, 7, 8), n_per_phase=10)
    with pytest.raises(ValueError, match="no sample"):
        drifting_phases(X, y, (3, 7, 8, 4), n_per_phase=10)
    with pytest.raises(ValueError, match="n_per_phase"):
        drifting_phases(X, y, (3, 7, 8, 9), n_per_phase=0)
    with pytest.raises(ValueError, match="replace=True"):
        drifting_phases(X, y, (3, 7, 8, 9), n_per_phase=100, replace=False)


def test_okl_synth_is_the_one_name_of_the_synthetic_streams():
    import okl
    assert not hasattr(okl, "streams") and "streams" not in okl.__all__
    with pytest.raises(ImportError):
        import okl.streams  # noqa: F401
    assert okl.synth.drifting_phases is drifting_phases
