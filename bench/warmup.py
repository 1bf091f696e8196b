"""The first events at compiled speed: events 1-100 (the warm-ups) against events 101-200.

gamma="scale" follows the first 100 events and eta="scaled" measures its kbar over the
first 100 steps (docs/defaults.md, sections 2 and 4).  For every kernel learner built
with its defaults (and the exact, budgeted and feature models of the pointwise ones),
a fresh model learns 200 events of a synthetic stream (d = 10):

- "events": ``predict_one(x)`` + ``learn_one(x, y)`` on dict events (a fresh model per
  round; the first label pair is given by `classes`);
- "chunk": ``partial_fit`` of the first row, of rows 2-100, then of rows 101-200.

The first event (or call) also builds and validates the model, as it does for every
learner, warm-up or not: it is timed apart ("first event", in us), and
"OnlineKernelClassifier (no warm-up)" (gamma=0.1, eta="auto": neither warm-up) shows that
cost.  The table gives the median over the rounds of the us per event of events 1-100
(the first included), 2-100 and 101-200, and the ratios of the first two to the last
(target: at most 2).  Times are the thread's CPU time (on a loaded machine the wall clock
also counts the waits for a core); the rounds alternate the learners, so a change of load
hits them alike; the load average is printed with the table.

    python bench/warmup.py                  # every learner, 7 rounds
    python bench/warmup.py --rounds 3 OnlineKernelClassifier     # names holding a word
    python bench/warmup.py --quality        # the untuned figures of the learners with a
                                            # warm-up on scikit-learn's data sets

``--quality`` gives each learner's progressive accuracy (RMSE for the regressors, the
second half's ranking error for the pairwise learner) on the streams of
bench/multikernel_defaults.py (the short ones included), the figures a change of the
warm-ups' rule is judged by (docs/defaults.md, section 2).
"""
import argparse
import os
import time

import numpy as np

import okl

D = 10
HALF = 100


def learners():
    """{label: (constructor, task)}: every kernel learner that has a warm-up, and the
    multi-kernel pools (whose widths follow running moments from the first event; the
    classifier's step over kbar sums the kernel rows of its first 100 steps; with
    learner="krls", MultiKernelRegressor's default, they take KernelRLSRegressor's
    warm-up)."""
    return {
        "OnlineKernelClassifier (no warm-up)": (
            lambda: okl.OnlineKernelClassifier(gamma=0.1, eta="auto"), "binary"),
        "OnlineKernelClassifier()": (lambda: okl.OnlineKernelClassifier(), "binary"),
        "OnlineKernelClassifier(gamma=0.1)": (lambda: okl.OnlineKernelClassifier(gamma=0.1),
                                              "binary"),
        "OnlineKernelClassifier(budget=50)": (lambda: okl.OnlineKernelClassifier(budget=50),
                                              "binary"),
        "OnlineKernelClassifier(fourier)": (
            lambda: okl.OnlineKernelClassifier(approximation="fourier", random_state=0),
            "binary"),
        "OnlineKernelClassifier(nystroem)": (
            lambda: okl.OnlineKernelClassifier(approximation="nystroem"), "binary"),
        "OnlineKernelClassifier() 3 classes": (lambda: okl.OnlineKernelClassifier(), "three"),
        "OnlineKernelRegressor()": (lambda: okl.OnlineKernelRegressor(), "regression"),
        "OnlineKernelRegressor(fourier)": (
            lambda: okl.OnlineKernelRegressor(approximation="fourier", random_state=0),
            "regression"),
        "CoefficientRegularizedClassifier()": (
            lambda: okl.CoefficientRegularizedClassifier(), "binary"),
        "RegularizedPAClassifier(gaussian)": (
            lambda: okl.RegularizedPAClassifier(kernel="gaussian"), "binary"),
        "RegularizedPAClassifier(gaussian, fourier)": (
            lambda: okl.RegularizedPAClassifier(kernel="gaussian", approximation="fourier",
                                                random_state=0), "binary"),
        "PairwiseLearner(difference)": (
            lambda: okl.PairwiseLearner(pair_kernel="difference", reducer="difference",
                                        loss="squared", buffer=100), "regression"),
        "MultiKernelClassifier()": (lambda: okl.MultiKernelClassifier(), "binary"),
        'MultiKernelRegressor(learner="sgd")': (
            lambda: okl.MultiKernelRegressor(learner="sgd"), "regression"),
        "KernelRLSRegressor()": (lambda: okl.KernelRLSRegressor(), "regression"),
        'MultiKernelRegressor(learner="krls")': (
            lambda: okl.MultiKernelRegressor(learner="krls"), "regression"),
    }


def stream(task, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(2 * HALF, D))
    if task == "regression":
        y = np.sin(X[:, 0]) + X[:, 1]
    elif task == "three":
        y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)
    else:
        y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int)
    return X, y


def halves(make, task, mode):
    """us of the first event, us per event of events 2-100 and 101-200, of a fresh model."""
    X, y = stream(task)
    est = make()
    kwargs = {} if task == "regression" else {"classes": np.unique(y)}
    if mode == "chunk":
        out = []
        for lo, hi in ((0, 1), (1, HALF), (HALF, 2 * HALF)):
            start = time.thread_time()
            est.partial_fit(X[lo:hi], y[lo:hi], **(kwargs if lo == 0 else {}))
            out.append((time.thread_time() - start) / (hi - lo) * 1e6)
        return out
    if kwargs:
        est.set_params(classes=kwargs["classes"])
    rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    labels = y.tolist()
    predict = getattr(est, "predict_one", None) if hasattr(est, "predict") else None
    out = []
    for lo, hi in ((0, 1), (1, HALF), (HALF, 2 * HALF)):
        start = time.thread_time()
        for i in range(lo, hi):
            if predict is not None:
                predict(rows[i])
            est.learn_one(rows[i], labels[i])
        out.append((time.thread_time() - start) / (hi - lo) * 1e6)
    return out


QUALITY = {
    "OnlineKernelClassifier()": (lambda: okl.OnlineKernelClassifier(), True),
    "OnlineKernelClassifier(fourier)": (
        lambda: okl.OnlineKernelClassifier(approximation="fourier", random_state=0), True),
    "OnlineKernelClassifier(nystroem)": (
        lambda: okl.OnlineKernelClassifier(approximation="nystroem"), True),
    "CoefficientRegularizedClassifier()": (lambda: okl.CoefficientRegularizedClassifier(), True),
    "RegularizedPAClassifier(gaussian)": (
        lambda: okl.RegularizedPAClassifier(kernel="gaussian"), True),
    "RegularizedPAClassifier(gaussian, fourier)": (
        lambda: okl.RegularizedPAClassifier(kernel="gaussian", approximation="fourier",
                                            random_state=0), True),
    "OnlineKernelRegressor()": (lambda: okl.OnlineKernelRegressor(), False),
    "OnlineKernelRegressor(fourier)": (
        lambda: okl.OnlineKernelRegressor(approximation="fourier", random_state=0), False),
    "PairwiseLearner(difference), ranking error": (
        lambda: okl.PairwiseLearner(pair_kernel="difference", reducer="difference",
                                    loss="squared", buffer=100, random_state=0), None),
}


def quality():
    """The untuned figures of the learners with a warm-up, stream by stream."""
    import warnings

    from multikernel_defaults import STREAMS, okl_quality, scaled_stream

    from okl.evaluation import ranking_error
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("| learner | stream | figure |\n|---|---|---|")
    for label, (make, classify) in QUALITY.items():
        for row, name, n, seeds in STREAMS:
            if classify is not None and classify != (name != "diabetes"):
                continue
            figures = []
            for seed in seeds:
                Z, y = scaled_stream(name, n, seed)
                if classify is not None:
                    figures.append(okl_quality(make(), Z, y))
                    continue
                half = len(Z) // 2
                est = make()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    est.partial_fit(Z[:half], y[:half])
                figures.append(ranking_error(est, Z[half:], y[half:]))
            print(f"| {label} | {row} | {np.mean(figures):.4f} |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="learners whose label holds one of these")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quality", action="store_true",
                        help="the untuned figures on scikit-learn's data sets, not the times")
    args = parser.parse_args()
    if args.quality:
        quality()
        return
    table = {label: item for label, item in learners().items()
             if not args.names or any(name in label for name in args.names)}
    times = {(label, mode): [] for label in table for mode in ("events", "chunk")}
    for _ in range(args.rounds):
        for label, (make, task) in table.items():
            for mode in ("events", "chunk"):
                times[label, mode].append(halves(make, task, mode))
    print(f"load average {os.getloadavg()[0]:.2f}; median of {args.rounds} rounds, us per event")
    print("| learner | path | first event (us) | events 1-100 | events 2-100 | events 101-200 "
          "| ratio 1-100 | ratio 2-100 |\n|---|---|---|---|---|---|---|---|")
    for (label, mode), runs in times.items():
        first, warm, nxt = np.median(np.array(runs), axis=0)
        whole = (first + (HALF - 1) * warm) / HALF
        print(f"| {label} | {mode} | {first:.0f} | {whole:.1f} | {warm:.1f} | {nxt:.1f} "
              f"| {whole / nxt:.2f} | {warm / nxt:.2f} |")


if __name__ == "__main__":
    main()
