"""Parameter descriptions the estimators share, written once.

A line ``{name}`` alone in an estimator's Parameters section (indented as the
section) stands for the block `PARAMS[name]`; the `shared_params` class
decorator puts it in.  Blocks that differ between estimators stay in their
own docstrings.
"""
import re
import textwrap

from okl.kernels import KERNELS

# the kernels by name, from the registry: the width kernels first
_KERNEL_NAMES = ", ".join(f'"{name}"' for name in sorted(
    KERNELS, key=lambda name: (not KERNELS[name].width, list(KERNELS).index(name))))
_SAMPLED = ", ".join(name for name, row in KERNELS.items() if row.fourier is not None)

PARAMS = {
    "kernel": f"""\
kernel : {{{_KERNEL_NAMES}}}, default="gaussian"
    See `okl.kernels`.""",
    "gamma": """\
gamma : float or "scale", default="scale"
    Kernel width (gaussian, laplacian) or scale of <x, u> (polynomial).
    "scale" is scikit-learn's SVC rule ``1 / (n_features X.var())`` over the
    events learned so far, from the first one: the width follows the data
    for the first 100 events, then stays (docs/defaults.md, section 2); kept
    in `gamma_`.  With a number,
    a `KernelScaleWarning` names the cure when the first samples' kernel
    values are all ~0 or all ~1.""",
    "gamma_plain": """\
gamma : float or "scale", default="scale"
    Kernel width (gaussian, laplacian) or scale of <x, u> (polynomial).
    "scale" is ``4 / (n_features X.var())`` over the events learned so far,
    from the first one: four times scikit-learn's SVC rule, the width that
    learns best with few centres per region.  It follows the data for the
    first 100 events, then stays (docs/defaults.md, section 2); kept in
    `gamma_`.""",
    "degree": """\
degree : int, default=3
    Polynomial degree.""",
    "coef0": """\
coef0 : float, default=0.0
    Constant added to <x, u> (linear, polynomial).""",
    "nu": """\
nu : {0.5, 1.5, 2.5}, default=1.5
    Smoothness of the Matern kernel (its RKHS is the Sobolev space of order
    nu + n_features / 2): 0.5 is exp(-sqrt(2 gamma) ||x - u||), 2.5 is
    close to the Gaussian; other kernels ignore it (`okl.kernels`).""",
    "kernel_params": """\
kernel_params : dict or None, default=None
    The kernel's own parameters that no other parameter of the estimator
    names, by name (scikit-learn's KernelRidge convention); each takes its
    default when not given.  The kernel's row in `okl.kernels` lists the
    parameters it reads and checks their values (today every one is named
    above, so only None or {} is accepted; docs/architecture.md).""",
    "budget": """\
budget : int, "auto" or None, default="auto"
    Maximum number of centres.  "auto" keeps 500 (with `approximation`, the
    fixed-size model needs none), so that a step costs the same however
    long the stream (docs/defaults.md, section 3); None is the papers'
    exact, unbounded expansion.""",
    "budget_policy": """\
budget_policy : {"auto", "merge", "oldest", "smallest"}, default="auto"
    What happens when a new centre would exceed the budget.  "merge"
    (BSGD, Wang-Crammer-Vucetic 2012): the centre of smallest |coefficient|
    is merged with the partner that loses the least RKHS weight, at the
    best point of the segment between them (Gaussian kernel only;
    docs/algorithms.md, section 7.3).  "oldest" drops the oldest centre
    (NORMA truncation), "smallest" the one of smallest |coefficient|.
    "auto" is "merge" for the Gaussian kernel and "oldest" otherwise.""",
    "approximation": f"""\
approximation : {{None, "fourier", "nystroem"}}, default=None
    A fixed-size model instead of the growing kernel expansion, with the
    same steps and loss: "fourier" learns on `n_components` random Fourier
    features (FOGD; the kernels with a frequency sampler: {_SAMPLED}),
    "nystroem" runs the exact rule until it holds `n_components` centres,
    then continues on Nystroem features of those centres from the same
    function (NOGD).
    Per step O(n_components d), whatever the length of the stream
    (docs/budget.md).  Exclusive with `budget`.""",
    "n_components": """\
n_components : int, default=100
    Features of the approximation.""",
    "random_state": """\
random_state : int or None, default=None
    Seed of the random Fourier features.""",
    "fit_intercept": """\
fit_intercept : bool, default=True
    Learn an offset b, ``f(x) = b + sum_i a_i K(x_i, x)``: b is the running
    mean of the targets, ``b_{t+1} = b_t + min(1, w_t / t) (y_t - b_t)``,
    and the kernel part steps on the residual ``y_t - b_{t+1}``
    (docs/defaults.md, section 1).  ``fit_intercept=False`` gives exactly
    the papers' iterates.""",
    "fit_intercept_margin": """\
fit_intercept : "prior" or bool, default="prior"
    The offset b of ``f(x) = b + sum_i a_i K(x_i, x)``.  "prior" follows a
    shift of the label prior that the kernel part has not followed yet:
    ``u_t = r_t - ybar_t``, the recent labels' mean (forgetting at rate 0.01)
    less their mean, soft-thresholded at three standard deviations of a
    stationary stream's and capped by the kernel part's lag ``r_t - s_t`` (s_t
    the recent mean of its signs), in units of the mean ``|h_s(x_s)|`` of the
    kernel part; the kernel part steps without b,
    so on a stationary stream (b = 0) the model is the papers' (binary; with
    three classes or more b stays as the binary model left it).  True is
    NORMA's step ``b_{t+1} = b_t - eta_t w_t g_t`` (docs/algorithms.md,
    section 7.1), which cost up to 0.38 accuracy on standardised real
    streams.  ``fit_intercept=False`` gives exactly the papers' iterates
    (docs/defaults.md, section 1).""",
    "forgetting": """\
forgetting : float in (0, 1], default=1.0
    Each step scales the model by this factor and runs the schedule on the
    forgetting count ``tau <- forgetting tau + 1`` instead of t, so that old
    events fade with a memory of about ``1 / (1 - forgetting)`` events and the
    steps stop decaying there: for streams that keep moving.  1 forgets
    nothing: the papers' iterates (docs/drift.md, section 3).""",
    "drift_detector": """\
drift_detector : None, "page_hinkley", okl.drift.PageHinkley or a detector, default="page_hinkley"
    A change detector on the learner's own loss (its mistakes; a regressor's
    absolute error over the targets' mean absolute deviation).  At a change
    the schedule restarts (tau = 1) and the model is scaled by
    `okl.drift.KEEP`, so that the new concept outweighs the old one.
    "page_hinkley" (`okl.drift.PageHinkley()`, measured in docs/drift.md:
    no change seen and no cost on scikit-learn's stationary data sets) and
    `okl.drift.PageHinkley` run inside the compiled step; any object with
    ``update(x)`` and ``drift_detected`` (such as ``river.drift.ADWIN()``)
    runs on the Python path, on a copy (`drift_detector_`), and its change
    is taken at the next step.  None detects nothing: the papers' iterates
    (docs/drift.md).""",
    "verbose": """\
verbose : bool or None, default=False
    Show a progress bar (with an ETA) while learning chunks of more than
    1000 rows: True always, None only when stderr is a terminal.""",
    "engine": """\
engine : {"cython", "numpy"}, default="cython"
    "numpy" runs the pure-NumPy reference loop (same iterates, slower).""",
    "classes": """\
classes : array of labels or None, default=None
    Fixes `classes_` (sorted) at the start of a stream: a label outside it
    then raises.  Without it, `fit` takes the labels of y, and
    `partial_fit` / `learn_one` add a label seen for the first time as a
    new class (river's rule); while one class is known the model predicts
    it and learns nothing (docs/multiclass.md).""",
}

_SLOT = re.compile(r"^( *)\{(\w+)\}$", re.MULTILINE)


def shared_params(cls):
    """Class decorator: fill the ``{name}`` lines of the docstring from `PARAMS`."""
    cls.__doc__ = _SLOT.sub(lambda m: textwrap.indent(PARAMS[m.group(2)], m.group(1)),
                            cls.__doc__)
    return cls
