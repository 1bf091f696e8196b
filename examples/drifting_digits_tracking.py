"""Tracking Shen and Dietterich's drifting digits without tuning.
=================================================================

The four-phase stream of Shen and Dietterich (Section 4; `okl.synth.drifting_phases`) on
scikit-learn's 8x8 digits: the positive class drifts from 3 to 7 and the negative from 8
to 9, so what separated 3 from 8 must be unlearned for 7 against 9 in phases 3-4.  The
paper tunes each regularized passive-aggressive rule on phases 1-2 and reports the
online error over phases 3-4; its best setting here is the best of the objective-, L2- and
L1-regularized `okl.RegularizedPAClassifier` grids of examples/shen_dietterich_drift.py,
chosen per trial on phases 1-2 (the paper's protocol, a tuning the stream grants in
hindsight).  The stream, the grids, the error and the figure are that example's (imported
from it: keep the two files side by side).

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

from okl import OnlineKernelClassifier, RegularizedPAClassifier
from okl.passive_aggressive import InfeasibleUpdateWarning
from okl.synth import drifting_phases

from shen_dietterich_drift import (      # the example beside this one
    METHODS, ROLES, cumulative_figure, digits, late_errors, mistakes, pyplot,
)

PAPER_GRID = [(cls, {**fixed, **params})             # the paper's regularized PA grids
              for cls, fixed, grid in (METHODS[m] for m in ("objective", "L2", "L1"))
              for params in grid]
UNTUNED = {
    "OnlineKernelClassifier()": lambda: OnlineKernelClassifier(),
    "OnlineKernelClassifier(drift_detector=None)":
        lambda: OnlineKernelClassifier(drift_detector=None),
    "RegularizedPAClassifier(kernel='gaussian', drift_detector='page_hinkley')":
        lambda: RegularizedPAClassifier(kernel="gaussian", drift_detector="page_hinkley"),
}


def trial(seed, X, y, n):
    """{method: its mistakes over the stream}; the paper's best PA tuned on phases 1-2."""
    Xs, ys = drifting_phases(X, y, ROLES, n, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InfeasibleUpdateWarning)
        runs = [mistakes(cls(**params), Xs, ys) for cls, params in PAPER_GRID]
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
    X, y = digits()
    n = args.n_per_phase
    start = time.perf_counter()
    trials = [trial(args.seed + k, X, y, n) for k in range(args.trials)]
    print(f"Drifting digits {ROLES} (P1, P2, N1, N2), {args.trials} trials of 4 x {n} samples "
          f"({time.perf_counter() - start:.0f} s); error over phases 3-4, mean +- 95% CI")
    curves = {}
    for method in trials[0]:
        wrong = np.array([t[method] for t in trials], dtype=float)
        late, ci, curves[method] = late_errors(wrong, 2 * n)
        print(f"{late.mean():.4f} +- {ci:.4f}  {method}")
    plot(curves, args.trials, args.out)


def plot(curves, n_trials, out):
    plt = pyplot()
    if plt is None:
        return
    fig = cumulative_figure(
        plt, curves, f"Drifting digits 3,7 vs 8,9: {n_trials} trials, untuned vs the paper's best",
        figsize=(7.2, 4.6), fontsize=7)
    fig.savefig(out, dpi=120)
    print(f"plot written to {out}")


if __name__ == "__main__":
    main()
