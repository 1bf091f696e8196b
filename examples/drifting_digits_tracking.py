"""Tracking Shen and Dietterich's drifting digits without tuning.
=================================================================

The four-phase stream of Shen and Dietterich (Section 4; `okl.synth.drifting_phases`) on
scikit-learn's 8x8 digits: the positive class drifts from 3 to 7 and the negative from 8
to 9, so what separated 3 from 8 must be unlearned for 7 against 9 in phases 3-4.  The
paper tunes each regularized passive-aggressive rule on phases 1-2 and reports the
online error over phases 3-4; its best setting here is the best of the objective-, L2- and
L1-regularized `okl.RegularizedPAClassifier` grids of examples/shen_dietterich_drift.py,
chosen per trial on phases 1-2 (the paper's protocol, a tuning the stream grants in
hindsight).

Against it, untuned learners whose change detector (`drift_detector`, docs/drift.md)
watches their own mistakes: `okl.OnlineKernelClassifier()` (the default detects changes),
the same without detection (``drift_detector=None``, the papers' iterates), and
`okl.RegularizedPAClassifier(kernel="gaussian", drift_detector="page_hinkley")`.  Every
method predicts each sample before learning it; the table gives the error over phases
3-4 (mean and 95 % interval over the trials), the figure the cumulative error there.

Run:  python examples/drifting_digits_tracking.py [--trials 20] [--out tracking.png] [--quick]
"""
import argparse
import time
import warnings

import numpy as np
from sklearn.datasets import load_digits

from okl import OnlineKernelClassifier, RegularizedPAClassifier
from okl.evaluation import progressive_validation
from okl.passive_aggressive import InfeasibleUpdateWarning
from okl.synth import drifting_phases

ROLES = (3, 7, 8, 9)          # P1, P2, N1, N2: the paper's USPS digits
CLASSES = np.array([-1, 1])
PAPER_GRID = ([dict(regularization="objective", alpha=a)
               for a in (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1)]
              + [dict(regularization="l2", beta=b) for b in (1.0, 1.5, 2.0, 3.0, 5.0, 8.0)]
              + [dict(regularization="l1", beta=b) for b in (2.0, 3.0, 5.0, 8.0, 12.0, 20.0, 30.0)])
UNTUNED = {
    "OnlineKernelClassifier()": lambda: OnlineKernelClassifier(),
    "OnlineKernelClassifier(drift_detector=None)":
        lambda: OnlineKernelClassifier(drift_detector=None),
    "RegularizedPAClassifier(kernel='gaussian', drift_detector='page_hinkley')":
        lambda: RegularizedPAClassifier(kernel="gaussian", drift_detector="page_hinkley"),
}


def mistakes(est, X, y):
    return progressive_validation(est, X, y, classes=CLASSES).predictions != y


def trial(seed, X, y, n):
    """{method: its mistakes over the stream}; the paper's best PA tuned on phases 1-2."""
    Xs, ys = drifting_phases(X, y, ROLES, n, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleUpdateWarning)
        runs = [mistakes(RegularizedPAClassifier(**params), Xs, ys) for params in PAPER_GRID]
    best = int(np.argmin([m[:2 * n].mean() for m in runs]))
    out = {"paper's best RegularizedPAClassifier (tuned on phases 1-2)": runs[best]}
    out.update({name: mistakes(make(), Xs, ys) for name, make in UNTUNED.items()})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 trials (a few seconds)")
    parser.add_argument("--trials", type=int, default=None, help="default 20 (3 with --quick)")
    parser.add_argument("--n-per-phase", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="drifting_digits_tracking.png")
    args = parser.parse_args(argv)
    args.trials = args.trials or (3 if args.quick else 20)
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    n = args.n_per_phase
    start = time.perf_counter()
    trials = [trial(args.seed + k, X, y, n) for k in range(args.trials)]
    print(f"Drifting digits {ROLES} (P1, P2, N1, N2), {args.trials} trials of 4 x {n} samples "
          f"({time.perf_counter() - start:.0f} s); error over phases 3-4, mean +- 95% CI")
    curves = {}
    for method in trials[0]:
        wrong = np.array([t[method] for t in trials], dtype=float)
        late = wrong[:, 2 * n:].mean(axis=1)
        ci = 1.96 * late.std(ddof=1) / np.sqrt(len(late)) if len(late) > 1 else 0.0
        curves[method] = (np.cumsum(wrong[:, 2 * n:], axis=1)
                          / np.arange(1, wrong.shape[1] - 2 * n + 1)).mean(axis=0)
        print(f"{late.mean():.4f} +- {ci:.4f}  {method}")
    plot(curves, n, args.trials, args.out)


def plot(curves, n, n_trials, out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib).")
        return
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    for method, curve in curves.items():
        ax.plot(np.arange(1, len(curve) + 1), curve, label=method)
    ax.set(xlabel="instances of phases 3-4", ylabel="cumulative error rate", xscale="log",
           title=f"Drifting digits 3,7 vs 8,9: {n_trials} trials, untuned vs the paper's best")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"plot written to {out}")


if __name__ == "__main__":
    main()
