"""Which kernel width wins: the Hedge weights of okl.MultiKernelClassifier over a stream.
======================================================================================

scikit-learn's 8x8 digits, 0-4 against 5-9, shuffled once and scaled online
(okl.preprocessing.OnlineStandardScaler), learned one event at a time by
``okl.MultiKernelClassifier()`` with no parameters: 8 Gaussian widths
(2^-4 ... 2^3 over tr(Cov(x))) and a linear kernel, each with two step scales
and a learner that forgets, 27 NORMA learners combined by Hedge with a fixed
share (docs/multikernel.md).  After every event the weights of the learners are
recorded; the figure shows their sum per kernel (top) and per step (bottom)
along the stream, and its title the progressive accuracy of the combination.

Run:  python examples/multikernel_weights.py [--out multikernel_weights.png] [--quick]
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits

from okl import MultiKernelClassifier
from okl.preprocessing import OnlineStandardScaler


def main():
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--out", default="multikernel_weights.png")
    parser.add_argument("--quick", action="store_true", help="the first 600 events only")
    args = parser.parse_args()

    X, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], (y[order] >= 5).astype(int)
    if args.quick:
        X, y = X[:600], y[:600]
    scaler = OnlineStandardScaler()
    clf = MultiKernelClassifier(classes=[0, 1])
    weights, hits = [], []
    for x, label in zip(X, y):
        scaler.learn_one(x)
        z = scaler.transform(x[None, :])[0]
        hits.append(clf.predict_one(z) == label)
        clf.learn_one(z, label)
        weights.append(clf.weights_)
    weights = np.array(weights)
    # the learners by kernel (gamma * n_features, or linear) and by step (a scale, or forgets)
    kernels = [f"{g:.2g}" if g == g else "linear" for g in clf.gammas_ * X.shape[1]]
    steps = [f"x{s:g}" if f != f else "forgets" for s, f in zip(clf.eta_scales_,
                                                                 clf.forgetting_)]
    widths, scales = list(dict.fromkeys(kernels)), list(dict.fromkeys(steps))
    per_width = np.column_stack([weights[:, [k == w for k in kernels]].sum(axis=1)
                                 for w in widths])
    per_scale = np.column_stack([weights[:, [s == c for s in steps]].sum(axis=1)
                                 for c in scales])
    print(f"progressive accuracy {np.mean(hits):.4f} over {len(X)} events, "
          f"{clf.n_support_} shared centres")
    print("final weight per kernel (gamma * n_features):",
          ", ".join(f"{w}: {p:.3f}" for w, p in zip(widths, per_width[-1])))
    print("final weight per step:",
          ", ".join(f"{s}: {p:.3f}" for s, p in zip(scales, per_scale[-1])))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot (pip install 'okl[plot]').")
        return
    events = np.arange(1, len(X) + 1)
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    top.stackplot(events, per_width.T, labels=widths)
    top.set_ylabel("Hedge weight per kernel")
    top.legend(title="gamma * d", fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    bottom.stackplot(events, per_scale.T, labels=scales)
    bottom.set_ylabel("Hedge weight per step")
    bottom.set_xlabel("events")
    bottom.legend(title="step", fontsize=7, loc="upper left", bbox_to_anchor=(1, 1))
    top.set_title(f"MultiKernelClassifier() on digits 0-4 vs 5-9: progressive accuracy "
                  f"{np.mean(hits):.3f}", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"figure written to {args.out}")


if __name__ == "__main__":
    main()
