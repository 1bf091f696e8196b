"""The adversarial state machine of tests/test_reliability_adversarial.py, run longer.

    python bench/adversarial.py --attacks 20000 [--seed 1] [--only OnlineKernelRegressor]

Every public estimator (both engines) gets random sequences of attacks (bad chunks and
events, predictions, okl.save / pickle / deepcopy round trips that go on learning, odd
set_params, snapshots while another thread learns, Ctrl-C mid-call) from fresh seeds until
about `--attacks` attacks were made in all.  Each estimator runs in a forked child, so a
crash is reported, not fatal.  Prints the attacks per estimator and every distinct failure
(the rule of the house it broke and the estimator), without shrinking unless `--shrink`.
"""
import argparse
import importlib.util
import os
import sys
import time
import traceback
import types
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, os.pardir, "tests")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _attack(harness, kit, cls, engine, examples, steps, seed, shrink):
    """(attacks by name, [failure texts]) of one run of the machine (in a forked child)."""
    from hypothesis import Phase, settings
    from hypothesis.errors import Flaky

    log, failures = Counter(), []
    Attack = harness.machine(kit, cls, engine, log)
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink else [])
    config = settings(max_examples=examples, stateful_step_count=steps, deadline=None,
                      database=None, derandomize=False, phases=phases,
                      suppress_health_check=list(harness.HealthCheck))
    import random

    import numpy as np
    random.seed(seed)
    np.random.seed(seed)
    try:
        harness.run_state_machine_as_test(Attack, settings=config)
    except (Exception, Flaky) as exc:       # noqa: BLE001 - reported, not raised
        for sub in getattr(exc, "exceptions", [exc]):
            frames = traceback.extract_tb(sub.__traceback__)
            where = next((f"{os.path.basename(f.filename)}:{f.lineno} in {f.name}"
                          for f in reversed(frames) if "okl" in f.filename
                          and "adversarial" not in f.filename), "the harness")
            first = traceback.format_exception_only(type(sub), sub)[0].strip()
            steps = "\n      ".join(getattr(sub, "__notes__", [])[-14:])
            failures.append(f"{first[:300]}\n    raised at {where}; the attacks:\n      {steps}")
    return dict(log), failures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attacks", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=12, help="attacks per example")
    parser.add_argument("--only", default=None, help="estimator cases whose id contains this")
    parser.add_argument("--shrink", action="store_true", help="shrink each failure (slow)")
    args = parser.parse_args(argv)

    sys.path.insert(0, TESTS)
    conftest = _load("okl_test_conftest", os.path.join(TESTS, "conftest.py"))
    harness = _load("okl_adversarial", os.path.join(TESTS, "test_reliability_adversarial.py"))
    kit = types.SimpleNamespace(make=conftest.make, stream=conftest.stream,
                                learn=conftest.learn, fingerprint=conftest.fingerprint,
                                is_transformer=conftest.is_transformer)
    cases = [c for c in conftest.estimator_cases() if args.only is None or args.only in c[0]]
    per_case = max(1, args.attacks // len(cases))
    examples = max(1, per_case // (args.steps + 2))
    total, found, start = Counter(), {}, time.time()
    for i, (name, cls, engine) in enumerate(cases):
        began = time.time()
        try:
            log, failures = conftest._run_forked(_attack, harness, kit, cls, engine, examples,
                                                 args.steps, args.seed * 1000 + i, args.shrink,
                                                 timeout=3600)
        except BaseException as exc:    # noqa: BLE001 - a crash of the child
            log, failures = {}, [f"the child failed: {exc}"]
        total[name] = sum(log.values())
        for text in failures:
            found.setdefault(text, []).append(name)
        print(f"{name:45s} {total[name]:6d} attacks  {len(failures)} failures  "
              f"{time.time() - began:6.1f} s", flush=True)
        for text in failures:       # at once: a run stopped early still reports them
            print(f"    {text}", flush=True)
    print(f"\n{sum(total.values())} attacks on {len(cases)} estimator cases in "
          f"{time.time() - start:.0f} s (seed {args.seed}, {os.getloadavg()[0]:.1f} load)")
    print(f"{len(found)} distinct failures")
    for text, names in found.items():
        print(f"- {', '.join(names)}: {text}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
