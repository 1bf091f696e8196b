"""StreamPipeline one event at a time: the learner alone, the pipeline, river's pipeline.

For every learner, dict events of a scikit-learn data set (breast cancer, d = 30, for the
classifier; diabetes, d = 10, for the regressors), each "predict, then learn" (progressive
validation): 200 warm-up events, then the timed ones (369 and 242), in the same run:

- "alone": the learner's own ``predict_one`` + ``learn_one`` on the events the scaler gives
  (standardized beforehand, outside the timing): the model the pipeline's learner fits;
- "pipeline": ``StreamPipeline([("scale", OnlineStandardScaler()), ("learn", learner)])``;
- "river": river's ``StandardScaler() | to_river(learner)``, and river's own
  ``StandardScaler() | LogisticRegression()`` (``LinearRegression()`` for a regressor).

It prints the median us per event (the thread's CPU time) over the rounds, and the
pipeline's cost over the learner's alone, with the load average.  river is a bench-only
dependency here; its data sets are never used.

    python bench/pipeline_one_event.py             # 7 rounds
    python bench/pipeline_one_event.py --rounds 3
"""
import argparse
import os
import statistics
import time

from sklearn.datasets import load_breast_cancer, load_diabetes

import okl
from okl.pipeline import StreamPipeline
from okl.preprocessing import OnlineStandardScaler

WARM = 200


def events(load):
    X, y = load(return_X_y=True)
    names = [f"x{j}" for j in range(X.shape[1])]
    return [dict(zip(names, row)) for row in X.tolist()], y.tolist()


def scaled(rows):
    """The events as the pipeline's scaler hands them on: before learning each (for
    predict_one), and after (for learn_one)."""
    scaler, before, after = OnlineStandardScaler(), [], []
    for x in rows:
        before.append(scaler.transform_one(x))
        scaler.learn_one(x)
        after.append(scaler.transform_one(x))
    return before, after


def per_event(model, predict_rows, learn_rows, labels):
    """us per event of "predict, then learn" after the warm-up events."""
    for x, z, y in zip(predict_rows[:WARM], learn_rows[:WARM], labels[:WARM]):
        model.predict_one(x)
        model.learn_one(z, y)
    timed = list(zip(predict_rows[WARM:], learn_rows[WARM:], labels[WARM:]))
    start = time.process_time()
    for x, z, y in timed:
        model.predict_one(x)
        model.learn_one(z, y)
    return (time.process_time() - start) / len(timed) * 1e6


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    try:
        from river import linear_model, preprocessing

        from okl.river import to_river
    except ImportError:
        preprocessing = None
    cases = [("OnlineKernelClassifier()", okl.OnlineKernelClassifier, load_breast_cancer),
             ("OnlineKernelRegressor()", okl.OnlineKernelRegressor, load_diabetes),
             ("KernelRLSRegressor()", okl.KernelRLSRegressor, load_diabetes)]
    print(f"load average {os.getloadavg()[0]:.2f}; median us per event of {args.rounds} rounds")
    print(f"{'learner':26s} {'alone':>7s} {'pipeline':>9s} {'+':>6s} {'river|okl':>10s} "
          f"{'river|linear':>13s}")
    for label, make, load in cases:
        rows, labels = events(load)
        if make is okl.OnlineKernelClassifier:
            labels = [int(y) for y in labels]
        before, after = scaled(rows)
        paths = {
            "alone": lambda: per_event(make(), before, after, labels),
            "pipeline": lambda: per_event(StreamPipeline([
                ("scale", OnlineStandardScaler()), ("learn", make())]), rows, rows, labels),
        }
        if preprocessing is not None:
            linear = (linear_model.LogisticRegression if make is okl.OnlineKernelClassifier
                      else linear_model.LinearRegression)
            paths["river|okl"] = lambda: per_event(
                preprocessing.StandardScaler() | to_river(make()), rows, rows, labels)
            paths["river|linear"] = lambda: per_event(
                preprocessing.StandardScaler() | linear(), rows, rows, labels)
        times = {name: [] for name in paths}
        for _ in range(args.rounds):
            for name, run in paths.items():
                times[name].append(run())
        med = {name: statistics.median(t) for name, t in times.items()}
        print(f"{label:26s} {med['alone']:7.1f} {med['pipeline']:9.1f} "
              f"{med['pipeline'] - med['alone']:6.1f} {med.get('river|okl', float('nan')):10.1f} "
              f"{med.get('river|linear', float('nan')):13.1f}")


if __name__ == "__main__":
    main()
