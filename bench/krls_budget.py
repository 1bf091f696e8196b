"""KernelRLSRegressor's default budget against its cost: each stream of bench/krls_defaults.py
learned untuned (scaled online as there) with budget B, its figure (RMSE of the last 20%, dB for
the series) and CPU time per event, every B in one run so that the ratios of time hold under load.

    python bench/krls_budget.py                       # budgets 100 200 300 500
    python bench/krls_budget.py --budgets 200 500 --streams friedman1 diabetes
"""
import argparse
import sys
import time
import warnings

from okl import KernelRLSRegressor

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from krls_defaults import figure, okl_learner, okl_scores, streams  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budgets", nargs="*", type=int, default=[100, 200, 300, 500])
    parser.add_argument("--streams", nargs="*", default=None)
    args = parser.parse_args(argv)
    data = streams()
    names = args.streams or list(data)
    warnings.simplefilter("ignore")
    print("| budget | " + " | ".join(names) + " |")
    print("|---|" + "---|" * len(names))
    for budget in args.budgets:
        cells = []
        for name in names:
            X, y, kind = data[name]
            start = time.process_time()
            pred = okl_scores(okl_learner(KernelRLSRegressor(budget=budget), kind), X, y)
            cost = (time.process_time() - start) / len(y) * 1e6
            cells.append(f"{figure(pred, y, kind):.3f} ({cost:.0f} us)")
        print(f"| {budget} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
