"""The warm-ups' records (docs/defaults.md, sections 2 and 4): `Width` and `KernelMean` of
both engines give the rules' values, the compiled ones those of the rules as NumPy and the
compiled kernel matrix compute them, bit for bit."""
import numpy as np
import pytest

from okl._core._kernels import kernel_matrix as gram
from okl._core._warmup import WARMUP, KernelMean, Width
from okl._numpy import warmup as twin
from okl.kernels import kernel_params


# the rows after which the width follows the moments: each move ceil(r / 2) rows after the
# last (r), and the warm-up's end (docs/defaults.md, section 2)
SCHEDULE = (1, 2, 3, 5, 8, 12, 18, 27, 41, 62, 93, 100)


def test_the_warm_up_lasts_as_long_in_both_engines():
    assert WARMUP == twin.WARMUP == 100


@pytest.mark.parametrize("scale, shift", [(1.0, 0.0), (1e-3, 1e8), (300.0, -5.0)])
def test_the_width_is_the_twins_bit_for_bit(scale, shift):
    rng = np.random.default_rng(0)
    X = shift + scale * rng.normal(size=(130, 7))
    X[3] = X[3, 0]                                  # a row of equal entries
    weight = np.ones(len(X))
    weight[[5, 17, 40]] = 0.0
    ours, ref = Width(7, 4.0), twin.Width(7, 4.0)
    gamma, end = ours.sequence(X, weight)
    gamma_ref, end_ref = ref.sequence(X, weight)
    np.testing.assert_array_equal(gamma, gamma_ref)
    assert end == end_ref == 103 and ours.state() == ref.state()
    moments, width, moved = twin.WidthMoments(), 4.0 / 7, []
    for i in range(end):                            # the rule, row by row
        assert gamma[i] == width
        if weight[i]:
            moments.add(X[i])
            if moments.rows in SCHEDULE:
                width = moments.gamma(7, 4.0)
                moved.append(i + 1)
    assert gamma[-1] == width == moments.gamma(7, 4.0)
    assert moved == [1, 2, 3, 5, 9, 13, 20, 29, 44, 65, 96, 103]   # rows 5, 17, 40 skipped


def test_the_width_moves_on_its_schedule_only():
    assert [r for r in range(0, 130) if twin.moves(r)] == list(SCHEDULE)
    X = np.random.default_rng(2).normal(size=(120, 4))
    for ours in (Width(4, 1.0), twin.Width(4, 1.0)):
        moved = [i + 1 for i in range(len(X)) if ours.warming and ours.add(X[i])]
        assert moved == list(SCHEDULE)
        assert ours.gamma == pytest.approx(1.0 / (4 * X[:WARMUP].var()), rel=1e-12)


def test_a_width_continues_from_its_state():
    X = np.random.default_rng(1).normal(size=(60, 3))
    whole = Width(3, 1.0)
    gamma, _ = whole.sequence(X)
    first = Width(3, 1.0)
    head, _ = first.sequence(X[:25])
    rest = Width(3, 1.0, first.state(), first.gamma)
    tail, _ = rest.sequence(X[25:])
    np.testing.assert_array_equal(np.concatenate([head[:-1], tail]), gamma)


def rule(points, params):
    """kbar written out with the compiled kernel matrix: its pairs below the diagonal, row
    by row, summed as NumPy sums them."""
    m = len(points)
    if m < 2:
        return 1.0
    P = np.ascontiguousarray(points)
    K = gram(P, P, params)
    total = 0.0
    for j in range(1, m):                           # row by row, in order
        total += float(K[j, :j].sum())
    return float((total + 1.0) / (m * (m - 1) / 2.0 + 1.0))


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "matern"])
def test_kbar_over_centres_is_the_rule_as_they_change(kernel):
    """Centres appended, overwritten (a budget), dropped (a reset), at a new width each
    step: the compiled kbar is the rule's to the last bit, the twin's to 1e-12."""
    rng = np.random.default_rng(2)
    C = rng.normal(size=(40, 5))
    ours = KernelMean(1.0, kernel_params(kernel, gamma=0.3), 5)
    ref = twin.KernelMean(1.0, kernel_params(kernel, gamma=0.3), 5)
    for t in range(1, 60):
        gamma = 0.3 + 0.01 * t
        if t <= 30:
            centres = C[:t]                             # grows to the budget
        elif t < 45:
            centres = C[:30].copy()
            centres[t % 30] = rng.normal(size=5)        # a slot rewritten, budget 30
            C[:30] = centres
        else:
            centres = C[:t - 45]                        # emptied, then grows again
        params = kernel_params(kernel, gamma=gamma)
        expected = rule(centres, params)
        assert ours.lipschitz_of(centres, 30, gamma, float(t)) == expected
        assert ref.lipschitz_of(centres, 30, gamma, float(t)) == pytest.approx(expected,
                                                                             rel=1e-12)


@pytest.mark.parametrize("kernel", ["gaussian", "laplacian", "matern"])
def test_kbar_over_centres_at_a_width_that_stays_keeps_its_values_to_the_last_bit(kernel):
    """A fixed width (gamma given, or after the width's warm-up): the kept kernel values of
    the unchanged centres serve again, and an unchanged set keeps its sum; kbar is still
    the rule's to the last bit as centres come, are overwritten and go, and as the width
    moves back and forth."""
    rng = np.random.default_rng(6)
    C = rng.normal(size=(60, 5))
    ours = KernelMean(1.0, kernel_params(kernel, gamma=0.3), 5)
    centres = C[:0]
    for t in range(1, 140):
        gamma = (0.3, 0.45, 0.3)[(t // 25) % 3]        # stays for 25 steps, then moves
        if t < 50:
            centres = C[:t // 2 + 1]                    # a centre every other step
        elif t < 90 and t % 3 == 0:
            centres = centres.copy()
            centres[t % len(centres)] = rng.normal(size=5)   # a slot rewritten (budget 25)
        elif t == 90:
            centres = centres[:7]                       # fewer centres (a reset and regrowth)
        elif t > 90 and t % 4 == 0:
            centres = np.vstack([centres, rng.normal(size=(1, 5))])
        expected = rule(centres, kernel_params(kernel, gamma=gamma))
        assert ours.lipschitz_of(centres, 25, gamma, float(t % 90)) == expected
        assert ours.mean(gamma) == expected             # nothing changed: the kept sum


def test_kbar_over_rows_keeps_the_sum_of_a_width_and_adds_a_row_s_values():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 4))
    ours = KernelMean(2.0, kernel_params("gaussian", gamma=0.5), 4, rows=True, gamma=0.5)
    ref = twin.KernelMean(2.0, kernel_params("gaussian", gamma=0.5), 4, rows=True, gamma=0.5)
    for i, x in enumerate(X):
        gamma = 0.5 if i < 15 else 0.5 + 0.01 * i       # fixed, then moving
        for kbar in (ours, ref):
            kbar.append(x)
        expected = rule(X[:i + 1], kernel_params("gaussian", gamma=gamma))
        assert ours.mean(gamma) == pytest.approx(expected, rel=1e-13)
        assert ref.mean(gamma) == pytest.approx(expected, rel=1e-12)
    rows, total = ours.state()
    np.testing.assert_array_equal(rows, X)
    again = KernelMean(2.0, kernel_params("gaussian", gamma=0.5), 4, True, rows, total, gamma)
    assert again.mean(gamma) == ours.mean(gamma)


def test_kbar_is_fixed_at_the_warm_up_s_last_step():
    C = np.random.default_rng(4).normal(size=(10, 3))
    kbar = KernelMean(0.5, kernel_params("gaussian", gamma=1.0), 3)
    assert kbar.lipschitz_of(C, 0, 1.0, WARMUP - 1.0) == 0.5 * rule(
        C, kernel_params("gaussian", gamma=1.0))
    assert kbar.active
    fixed = kbar.lipschitz_of(C, 0, 2.0, float(WARMUP))
    assert not kbar.active and kbar.final == rule(C, kernel_params("gaussian", gamma=2.0))
    assert fixed == 0.5 * kbar.final
    assert kbar.lipschitz_of(C[:3], 0, 9.0, WARMUP + 5.0) == fixed        # it stays
