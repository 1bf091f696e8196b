"""okl through river at okl's speed: `okl.river.to_river` beside okl's own one-event path.

For every learner, warm on 300 dict events (d = 10), then time 300 more, each "predict,
then learn" (the order of river's progressive validation), in the same run:

- "okl": the learner's own ``predict_one(x)`` + ``learn_one(x, y)`` (the reference);
- "river": ``to_river(learner)``'s ``predict_one`` + ``learn_one``;
- "river-proba": its ``predict_proba_one`` + ``learn_one`` (classifiers: the model's own
  probabilities with loss="logistic", else the online Platt scaling of the margin);
- "scaler | river": river's pipeline ``StandardScaler() | to_river(learner)``, against
  "scaler | okl", the learner's own path behind the same scaler calls the pipeline makes
  (transform before predicting; update, then transform, before learning): a pipeline
  should add river's own cost only.

Times are the thread's CPU time (on a loaded machine the wall clock also counts the
waits for a core).  It prints the median us per event over the rounds and the ratio to "okl" (target: at
most 1.3), and the ratio of the fastest rounds (the least disturbed by other processes on a loaded
machine), with the load average.  river is a bench-only dependency here; its data sets
are never used.

With ``--blocks B`` it times "okl", "river" and "river-proba" on three models warmed once,
taking the 300 events in turn, B blocks each (the same events again every block): a slowdown
of the machine then falls on every path alike, and the ratios hold within a few percent on a
loaded machine where the rounds' move by 0.1-0.4.

    python bench/river_speed.py               # every learner, 7 rounds
    python bench/river_speed.py --rounds 3 PA     # learners whose label holds a word
    python bench/river_speed.py --blocks 100 "RegularizedPAClassifier()" fourier
"""
import argparse
import os
import time

import numpy as np

import okl

D, WARM, N = 10, 300, 300


def learners():
    """{label: (constructor, task)}."""
    return {
        "OnlineKernelClassifier()": (lambda: okl.OnlineKernelClassifier(), "binary"),
        "OnlineKernelClassifier(loss='logistic')": (
            lambda: okl.OnlineKernelClassifier(loss="logistic"), "binary"),
        "OnlineKernelClassifier() 3 classes": (lambda: okl.OnlineKernelClassifier(), "three"),
        "OnlineKernelClassifier(fourier)": (
            lambda: okl.OnlineKernelClassifier(approximation="fourier", random_state=0),
            "binary"),
        "OnlineKernelRegressor()": (lambda: okl.OnlineKernelRegressor(), "regression"),
        "CoefficientRegularizedClassifier()": (
            lambda: okl.CoefficientRegularizedClassifier(), "binary"),
        "RegularizedPAClassifier()": (lambda: okl.RegularizedPAClassifier(), "binary"),
        "RegularizedPAClassifier(gaussian)": (
            lambda: okl.RegularizedPAClassifier(kernel="gaussian"), "binary"),
        "PairwiseLearner()": (lambda: okl.PairwiseLearner(), "regression"),
        "MultiKernelClassifier()": (lambda: okl.MultiKernelClassifier(budget=200), "binary"),
        "MultiKernelRegressor(learner='sgd')": (
            lambda: okl.MultiKernelRegressor(learner="sgd", budget=200), "regression"),
    }


def stream(task, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(WARM + N, D))
    if task == "regression":
        y = np.sin(X[:, 0]) + X[:, 1]
    elif task == "three":
        y = (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0).astype(int)
    else:
        y = (X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0).astype(int)
    rows = [{f"x{j}": v for j, v in enumerate(x)} for x in X.tolist()]
    return rows, y.tolist()


def per_event(model, rows, labels, proba=False, scaler=None):
    """Warm `model` on the first events, then the us per event of the others (behind
    `scaler`: the calls river's pipeline makes)."""
    predict = model.predict_proba_one if proba else model.predict_one
    for x, y in zip(rows[:WARM], labels[:WARM]):
        if scaler is not None:
            scaler.learn_one(x)
            x = scaler.transform_one(x)
        model.learn_one(x, y)
    start = time.thread_time()
    if scaler is None:
        for x, y in zip(rows[WARM:], labels[WARM:]):
            predict(x)
            model.learn_one(x, y)
    else:
        for x, y in zip(rows[WARM:], labels[WARM:]):
            predict(scaler.transform_one(x))
            scaler.learn_one(x)
            model.learn_one(scaler.transform_one(x), y)
    return (time.thread_time() - start) / N * 1e6


def paths(make, task):
    from river import compose, preprocessing

    from okl.river import to_river
    classifier = task != "regression"
    out = {"okl": lambda: per_event(make(), *stream(task)),
           "river": lambda: per_event(to_river(make()), *stream(task))}
    if classifier:
        out["river-proba"] = lambda: per_event(to_river(make()), *stream(task), proba=True)
    out["scaler | okl"] = lambda: per_event(make(), *stream(task),
                                            scaler=preprocessing.StandardScaler())
    out["scaler | river"] = lambda: per_event(
        compose.Pipeline(preprocessing.StandardScaler(), to_river(make())), *stream(task),
        proba=classifier)
    return out


def interleaved(make, task, blocks):
    """{path: us per event of each block}: okl's own path and the wrapper's, on models warmed
    once, taking the timed events in turn."""
    from okl.river import to_river
    rows, labels = stream(task)
    names = ("okl", "river") if task == "regression" else ("okl", "river", "river-proba")
    calls = {}
    for path in names:
        model = make() if path == "okl" else to_river(make())
        for x, y in zip(rows[:WARM], labels[:WARM]):
            model.learn_one(x, y)
        calls[path] = (model.predict_proba_one if path == "river-proba" else model.predict_one,
                       model.learn_one)
    times = {path: [] for path in names}
    events = list(zip(rows[WARM:], labels[WARM:]))
    for _ in range(blocks):
        for path, (predict, learn) in calls.items():
            start = time.thread_time()
            for x, y in events:
                predict(x)
                learn(x, y)
            times[path].append((time.thread_time() - start) / N * 1e6)
    return times


def row(label, path, value, base):
    """One line of the table: median and fastest us per event, and their ratios to base."""
    print(f"| {label} | {path} | {np.median(value):.1f} | "
          f"{np.median(value) / np.median(base):.2f} | {min(value):.1f} | "
          f"{min(value) / min(base):.2f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="learners whose label holds one of these")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--blocks", type=int, default=0,
                        help="time the paths in turn on warmed models, this many blocks")
    args = parser.parse_args()
    if args.blocks:
        print(f"load average {os.getloadavg()[0]:.2f}; {args.blocks} blocks in turn, us per event")
        print("| learner | path | median | / okl | fastest | / okl |\n|---|---|---|---|---|---|")
        for label, (make, task) in learners().items():
            if args.names and not any(name in label for name in args.names):
                continue
            times = interleaved(make, task, args.blocks)
            for path, value in times.items():
                row(label, path, value, times["okl"])
        return
    table = {label: paths(make, task) for label, (make, task) in learners().items()
             if not args.names or any(name in label for name in args.names)}
    times = {(label, path): [] for label, runs in table.items() for path in runs}
    for _ in range(args.rounds):
        for label, runs in table.items():
            for path, run in runs.items():
                times[label, path].append(run())
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rounds} rounds, us per event")
    print("| learner | path | median | / okl | fastest | / okl |\n|---|---|---|---|---|---|")
    for label, runs in table.items():
        for path in runs:
            base = times[label, "scaler | okl" if path.startswith("scaler") else "okl"]
            row(label, path, times[label, path], base)


if __name__ == "__main__":
    main()
