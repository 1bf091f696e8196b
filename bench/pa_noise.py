"""RegularizedPAClassifier's defaults on noisy labels (docs/defaults.md, section 5).

Each stream is shuffled (5 seeds), standardised online (each event by the moments of
the events up to and including it, as a StreamPipeline does) and given 0, 10 or 20%
label noise (a noisy event's label is replaced by one of the other classes, uniformly);
one progressive pass then predicts every event before learning it.  The table is the
progressive accuracy against the labels the stream shows (noisy ones included; with
noise q the best a learner can do is about 1 - q), averaged over the seeds, for:

- the PA rules untuned: PA (the paper's and Crammer et al.'s hard margin), PA-I and
  PA-II over a grid of C, the objective-regularized rule (alpha) and the L2-constrained
  one (beta), all on the linear kernel (the default);
- river's LogisticRegression (SoftmaxRegression for k >= 3) and PAClassifier (one-vs-rest
  for k >= 3), and
  okl's OnlineKernelClassifier(), untuned on the same events.

Streams: scikit-learn's digits (0-4 vs 5-9, and 10 classes), breast cancer, wine and iris,
and two generated ones (scikit-learn's make_classification: a linear and a two-cluster
stream).  river is a bench-only dependency; its data sets are never used.

    python bench/pa_noise.py                 # the full grid
    python bench/pa_noise.py --quick         # 2 seeds, fewer rules
    python bench/pa_noise.py --kernel gaussian    # the kernel PA (K(x, x) = 1)
"""
import argparse
import os
import warnings

import numpy as np
from sklearn.datasets import (
    load_breast_cancer, load_digits, load_iris, load_wine, make_classification,
)

from okl import OnlineKernelClassifier, RegularizedPAClassifier
from okl.evaluation import progressive_validation
from okl.preprocessing import OnlineStandardScaler

NOISE = (0.0, 0.1, 0.2)


def datasets():
    """{name: (X, y)}."""
    digits = load_digits(return_X_y=True)
    X1, y1 = make_classification(3000, 20, n_informative=10, flip_y=0.0, class_sep=1.0,
                                 random_state=0)
    X2, y2 = make_classification(3000, 10, n_informative=5, n_clusters_per_class=2,
                                 flip_y=0.0, random_state=1)
    return {
        "digits 0-4/5-9": (digits[0], (digits[1] >= 5).astype(int)),
        "digits (10)": digits,
        "breast cancer": load_breast_cancer(return_X_y=True),
        "wine (3)": load_wine(return_X_y=True),
        "iris (3)": load_iris(return_X_y=True),
        "linear (generated)": (X1, y1),
        "two clusters (generated)": (X2, y2),
    }


def stream(X, y, seed, noise):
    """Shuffled, scaled online, with a fraction `noise` of the labels replaced."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(X))
    X, y = np.asarray(X, dtype=np.float64)[order], np.asarray(y)[order]
    scaler = OnlineStandardScaler()
    Z = np.empty_like(X)
    for i, x in enumerate(X):
        scaler.learn_one(x)
        Z[i] = scaler.transform_one(x)
    classes = np.unique(y)
    flip = rng.random(len(y)) < noise
    shift = rng.integers(1, len(classes), len(y))          # another class, uniformly
    index = np.searchsorted(classes, y)
    noisy = np.where(flip, classes[(index + shift) % len(classes)], y)
    return Z, noisy


def rules(quick):
    """{label: parameters of RegularizedPAClassifier}."""
    out = {"PA": dict(variant="PA")}
    for C in ((0.01, 0.1, 1.0) if quick else (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0)):
        out[f"PA-I C={C:g}"] = dict(variant="PA-I", C=C)
        out[f"PA-II C={C:g}"] = dict(variant="PA-II", C=C)
    for alpha in ((0.1,) if quick else (0.01, 0.1)):
        out[f"objective alpha={alpha:g}"] = dict(regularization="objective", alpha=alpha)
    for beta in ((3.0,) if quick else (1.0, 3.0, 10.0)):
        out[f"l2 beta={beta:g}"] = dict(regularization="l2", beta=beta)
    return out


def okl_accuracy(est, Z, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = progressive_validation(est, Z, y, chunk_size=1000)
    return 1.0 - float(result.error[-1])


def river_accuracy(make, Z, y):
    labels = np.unique(y)
    model, hits = make(len(labels)), 0
    for x, label in zip(Z, y.tolist()):
        event = dict(enumerate(x.tolist()))
        hits += model.predict_one(event) == label
        model.learn_one(event, label)
    return hits / len(y)


def river_models():
    from river import linear_model, multiclass, optim
    return {
        "river LogisticRegression": lambda k: (
            linear_model.LogisticRegression() if k == 2
            else linear_model.SoftmaxRegression(optimizer=optim.SGD(0.01))),
        "river PAClassifier": lambda k: (linear_model.PAClassifier() if k == 2 else
                                         multiclass.OneVsRestClassifier(
                                             linear_model.PAClassifier())),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kernel", default="linear", help="the PA rules' kernel")
    args = parser.parse_args()
    seeds = range(2 if args.quick else 5)
    learners = {label: (lambda kw=kw: RegularizedPAClassifier(kernel=args.kernel, **kw))
                for label, kw in rules(args.quick).items()}
    learners["OnlineKernelClassifier()"] = OnlineKernelClassifier
    try:
        peers = river_models()
    except ImportError:
        peers = {}
    table = {}
    for name, (X, y) in datasets().items():
        for noise in NOISE:
            runs = [stream(X, y, seed, noise) for seed in seeds]
            for label, make in learners.items():
                table[label, name, noise] = np.mean([okl_accuracy(make(), Z, z) for Z, z in runs])
            for label, make in peers.items():
                table[label, name, noise] = np.mean([river_accuracy(make, Z, z) for Z, z in runs])
    names = list(datasets())
    print(f"load average {os.getloadavg()[0]:.2f}; progressive accuracy, mean of "
          f"{len(seeds)} shuffles; columns: stream / label noise")
    header = [f"{name} {int(100 * q)}%" for name in names for q in NOISE]
    print("| learner | " + " | ".join(header) + " | mean 0% | mean 10% | mean 20% |")
    print("|---" * (len(header) + 4) + "|")
    for label in list(learners) + list(peers):
        row = [table[label, name, q] for name in names for q in NOISE]
        means = [np.mean([table[label, name, q] for name in names]) for q in NOISE]
        print(f"| {label} | " + " | ".join(f"{v:.4f}" for v in row + means) + " |")


if __name__ == "__main__":
    main()
