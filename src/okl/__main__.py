"""The `okl` command line (also `python -m okl`): learn, predict, eval, demo.

A user error (a missing file, a malformed line, a missing column, an unknown
model or parameter) prints one line to stderr and exits with status 2.  The
estimators (and scikit-learn) are imported only by the commands that use them:
``okl --help`` answers at once.
"""
import argparse
import ast
import os
import shlex
import sys
from collections.abc import Sequence
from importlib.metadata import version
from itertools import chain
from typing import Any

MODELS = {   # --model name: (estimator class name, fixed parameters)
    "regressor": ("OnlineKernelRegressor", {}),
    "quantile": ("OnlineKernelRegressor", {"loss": "pinball"}),
    "krls": ("KernelRLSRegressor", {}),           # second order, with variance (docs/krls.md)
    "classifier": ("OnlineKernelClassifier", {}),
    "coefreg": ("CoefficientRegularizedClassifier", {}),
    "pa": ("RegularizedPAClassifier", {}),
    "auto": ("MultiKernelRegressor", {}),        # KRLS over widths, combined (docs/krls.md, 9)
    "auto-classifier": ("MultiKernelClassifier", {}),
}
CLASS_NAMES = sorted({cls for cls, _ in MODELS.values()})   # also accepted, with their defaults


class UsageError(Exception):
    """A mistake in the command line or its data: reported in one line, exit status 2."""


def _value(text: str) -> Any:
    """A --param value: a Python literal (1e-3, None, True, 'x') or else the bare string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def make_model(name: str, params: Sequence[str]) -> Any:
    """The estimator behind a --model name, with --param name=value settings, validated."""
    import okl

    if name in MODELS:
        cls, settings = getattr(okl, MODELS[name][0]), dict(MODELS[name][1])
    elif name in CLASS_NAMES:
        cls, settings = getattr(okl, name), {}
    else:
        raise UsageError(f"unknown model {name!r}; the models are {', '.join(MODELS)}, or the "
                         f"estimator classes {', '.join(CLASS_NAMES)}.")
    valid = sorted(cls().get_params())
    for param in params:
        key, equals, text = param.partition("=")
        if not equals or not key:
            raise UsageError(f"--param takes name=value, got {param!r}.")
        if key not in valid:
            raise UsageError(f"unknown parameter {key!r} for --model {name} ({cls.__name__}); "
                             f"the parameters are {', '.join(valid)}.")
        settings[key] = _value(text)
    model = cls(**settings)
    model._validate_params()
    return model


def _sparse(model: Any) -> bool:
    """Whether the model learns CSR rows directly (a linear passive-aggressive model)."""
    return type(model).__name__ == "RegularizedPAClassifier" and model.kernel == "linear"


def _format(args: argparse.Namespace) -> str:
    from okl.stream import guess_format

    return args.format or guess_format(args.data)


def _stream(args: argparse.Namespace, model: Any) -> Any:
    """The reader of args.data, set up from the command line's options."""
    from okl.stream import guess_format, iter_csv, iter_libsvm

    fmt = args.format or guess_format(args.data)
    common = dict(chunk_size=args.chunk_size, skip_malformed=args.skip_malformed)
    if fmt == "libsvm":
        fitted = getattr(model, "n_features_in_", None)
        return iter_libsvm(args.data, n_features=args.n_features or fitted,
                           zero_based={"auto": "auto", "true": True,
                                       "false": False}[args.zero_based],
                           sparse=_sparse(model), **common)
    target = args.target
    if target is not None and args.no_header:
        if not target.lstrip("-").isdigit():
            raise UsageError(f"without a header, --target is a column number, got {target!r}.")
        target = int(target)
    tsv = args.data.removesuffix(".gz").endswith(".tsv")
    delimiter = args.delimiter or ("\t" if tsv else ",")
    return iter_csv(args.data, target=target, delimiter=delimiter, header=not args.no_header,
                    fill_value=args.fill_value, **common)


def _labels_shown(values: Any) -> str:
    """Sorted labels as text: up to five, else the first three, ... and the last."""
    shown = [f"{v:g}" if isinstance(v, float) else str(v) for v in values]
    return ", ".join(shown if len(shown) <= 5 else [*shown[:3], "...", shown[-1]])


def _model_for_labels(y: Any, args: argparse.Namespace) -> str:
    """The --model of a learn without one, from the first chunk's labels: a classifier for
    text labels and for -1 / 0 / 1, a regressor for other numbers; integers of more kinds
    may be either: a UsageError names the two commands."""
    import numpy as np

    if y is None or not len(y):
        return "regressor"
    if np.asarray(y).dtype.kind not in "biuf":
        return "classifier"
    values = np.unique(np.asarray(y, dtype=np.float64))
    if not np.all(values == np.round(values)):
        return "regressor"
    if set(values.tolist()) <= {-1.0, 0.0, 1.0}:
        return "classifier"
    command = ["okl", *args.argv]
    raise UsageError(
        f"the labels of {args.data} are integers ({_labels_shown(values.astype(np.int64))} in "
        f"the first {len(y)} rows): classes or numbers? Choose the model: "
        f"{shlex.join([*command, '--model', 'classifier'])}  or  "
        f"{shlex.join([*command, '--model', 'regressor'])}")


def _loss_metric(model: Any) -> Any:
    """The model's training loss as a metric named for what it is ("hinge loss"), or None for
    a model whose stream loss is its error rate (MultiKernelClassifier: Hedge's mistakes)."""
    from okl.evaluation.metrics import TrainingLoss

    if type(model).__name__ == "MultiKernelClassifier":
        return None
    metric = TrainingLoss(model)
    metric.name = f"{getattr(model, 'loss', None) or 'hinge'} loss"     # PA's: the hinge
    return metric


def _default_metrics(model: Any) -> list[str]:
    from sklearn.base import is_classifier

    if is_classifier(model):
        return ["error_rate", "accuracy", "macro_f1"] + (
            ["log_loss"] if hasattr(model, "predict_proba") else [])
    if getattr(model, "loss", None) == "pinball":
        return ["pinball", "coverage", "mae"]
    return ["mse", "rmse", "mae"]


def _needs_target(args: argparse.Namespace) -> None:
    if _format(args) == "csv" and args.target is None:
        raise UsageError(f"{args.command} needs labels: name the target column with --target "
                         "(a libsvm file: --format libsvm).")


def _skipped(stream: Any) -> None:
    if stream.n_skipped:
        print(f"skipped {stream.n_skipped} malformed lines of {stream.name}")


def _read_with_progress(stream: Any, desc: str) -> Any:
    """The chunks of a stream under a progress bar: in bytes, with an ETA, for a plain file."""
    from okl._progress import progress

    in_bytes = stream.size is not None
    with progress(total=stream.size, desc=desc, unit="B" if in_bytes else "rows",
                  unit_scale=True) as bar:
        for X, y in stream:
            bar.update(stream.bytes_read() - bar.n if in_bytes else X.shape[0])
            yield X, y


def learn(args: argparse.Namespace) -> None:
    """okl learn: progressive validation of a new model on a file, then save it."""
    import okl
    from okl.evaluation import progressive_validation

    _needs_target(args)
    if args.interval is not None and not 0 < args.interval < 1:
        raise UsageError(f"--interval is a coverage in (0, 1), e.g. 0.9; got {args.interval}.")
    note = ""
    if args.model is None:            # chosen from the first chunk's labels
        stream = _stream(args, None)
        chunks = _read_with_progress(stream, "learn")
        first = next(chunks, None)
        name = _model_for_labels(None if first is None else first[1], args)
        model = make_model(name, args.param)
        chunks = chunks if first is None else chain([first], chunks)
        if name == "classifier":
            note = (f" (the labels {_labels_shown(sorted(set(first[1].tolist())))} are classes; "
                    "--model regressor learns them as numbers)")
    else:
        model = make_model(args.model, args.param)
        stream = _stream(args, model)
        chunks = _read_with_progress(stream, "learn")
    loss = _loss_metric(model)
    metrics = ([] if loss is None else [loss]) + _default_metrics(model)
    if args.interval is not None:       # calibrated intervals / sets (docs/conformal.md)
        from sklearn.base import is_classifier
        wrapper = okl.ConformalClassifier if is_classifier(model) else okl.ConformalRegressor
        metrics = [_default_metrics(model)[0], "coverage", "width", "window_coverage"]
        model = wrapper(model, alpha=round(1.0 - args.interval, 12))
    print(f"okl learn: {model!r} on {stream.name}{note}")
    result = progressive_validation(model, chunks, metrics=metrics,
                                    chunk_size=args.chunk_size, print_every=args.print_every,
                                    progress=False)
    print(f"finished: {len(result.predictions)} samples in {result.seconds:.2f} s; "
          + ", ".join(f"{name} {values[-1]:.6g}" for name, values in result.metrics.items()))
    if args.output:
        _write_predictions(args.output, result)
    if result.confusion is not None and len(result.classes) <= 20:
        print(_confusion_table(result.classes, result.confusion))
    _skipped(stream)
    if args.model_file:
        okl.save(model, args.model_file)
        print(f"model written to {args.model_file}")


def _write_predictions(path: str, result: Any) -> None:
    """The progressive predictions, one a line; with --interval the bounds beside them
    (prediction,lower,upper), or for a classifier the set's size."""
    with open(path, "w", encoding="utf-8") as out:
        if result.lower is not None:
            out.write("prediction,lower,upper\n")
            out.writelines(f"{p:.10g},{lo:.10g},{hi:.10g}\n" for p, lo, hi in zip(
                result.predictions.tolist(), result.lower.tolist(), result.upper.tolist()))
        elif result.width is not None:
            out.write("prediction,set_size\n")
            out.writelines(f"{p},{int(k)}\n" for p, k in zip(result.predictions.tolist(),
                                                                result.width.tolist()))
        else:
            out.writelines(f"{p:.10g}\n" if isinstance(p, float) else f"{p}\n"
                           for p in result.predictions.tolist())
    print(f"predictions written to {path}")


def _confusion_table(classes: Any, confusion: Any) -> str:
    """The progressive confusion matrix as text: a row per true label, a column per prediction."""
    names = [str(c)[:8] for c in classes.tolist()]
    width = max(8, *(len(n) for n in names), len(str(int(confusion.max()))))
    lines = ["confusion (rows: label, columns: prediction)",
             "| " + " " * width + "".join(f" {n:>{width}}" for n in names)]
    for name, row in zip(names, confusion):
        lines.append(f"| {name:>{width}}" + "".join(f" {int(v):>{width}d}" for v in row))
    return "\n".join(lines)


def _load(path: str) -> Any:
    import okl
    try:
        return okl.load(path)
    except (KeyError, EOFError, ValueError) as exc:
        raise UsageError(f"{path} is not a model written by okl learn -f or okl.save "
                         f"({exc}).") from None


def _check_width(args: argparse.Namespace, model: Any, X: Any) -> None:
    """Rows as wide as the model's: else name --target when a CSV may hold its label column."""
    width = getattr(model, "n_features_in_", None)
    if width is None or X.shape[1] == width:
        return
    hint = ""
    if args.target is None and X.shape[1] > width and _format(args) == "csv":
        hint = " If one of them is the label column, name it with --target: it is then dropped."
    raise UsageError(f"{args.data} has {X.shape[1]} feature columns but the model was fitted on "
                     f"{width}.{hint}")


def predict(args: argparse.Namespace) -> None:
    """okl predict: one prediction per line of DATA, to OUT or stdout."""
    model = _load(args.model_file)
    stream = _stream(args, model)
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for X, _ in _read_with_progress(stream, "predict"):
            _check_width(args, model, X)
            out.writelines(f"{p:.10g}\n" if isinstance(p, float) else f"{p}\n"
                           for p in model.predict(X).tolist())
    finally:
        if args.output:
            out.close()
    if args.output:
        _skipped(stream)


def evaluate(args: argparse.Namespace) -> None:
    """okl eval: metrics of a saved model's predictions on DATA, without learning."""
    from okl.evaluation import evaluate as evaluate_stream

    _needs_target(args)
    model = _load(args.model_file)
    stream = _stream(args, model)
    scores = evaluate_stream(model, _read_with_progress(stream, "eval"),
                             metrics=args.metric or _default_metrics(model),
                             chunk_size=args.chunk_size, progress=False)
    for name, value in scores.items():
        print(f"{name:<12} {value:.6g}")
    _skipped(stream)


def _data_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("data", metavar="DATA",
                        help="a CSV or libsvm file (.gz too), or - for standard input")
    parser.add_argument("--target", metavar="COL",
                        help="the label column of a CSV file (a number with --no-header)")
    parser.add_argument("--format", choices=("csv", "libsvm"),
                        help="default: from the extension (.csv .tsv .libsvm .svm .svmlight), "
                             "else from the first lines (label index:value ... is libsvm)")
    parser.add_argument("--delimiter", help="CSV field separator (default: , or a tab for .tsv)")
    parser.add_argument("--no-header", action="store_true", help="the CSV has no header line")
    parser.add_argument("--fill-value", type=float, metavar="X",
                        help="replaces missing CSV values (default: a row with one is malformed)")
    parser.add_argument("--n-features", type=_positive, metavar="D",
                        help="width of libsvm rows (default: a first pass over the file)")
    parser.add_argument("--zero-based", choices=("auto", "true", "false"), default="auto",
                        help="libsvm indices start at 0: true, false, or auto (default: 0-based "
                             "if some index is 0, as scikit-learn's load_svmlight_file)")
    parser.add_argument("--skip-malformed", action="store_true",
                        help="skip and count malformed lines instead of stopping")
    parser.add_argument("--chunk-size", type=_positive, default=1000, metavar="N",
                        help="rows per call into the model (default 1000)")


def _positive(text: str) -> int:
    """An argparse type: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"a positive integer is needed, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of the `okl` command."""
    parser = argparse.ArgumentParser(prog="okl", description="okl: online kernel learning")
    parser.add_argument("--version", action="version", version=f"okl {version('okl')}")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="learn an embedded stream and plot learning curves")
    demo.add_argument("--n", type=int, default=8000, help="stream length (default 8000)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", default="okl-demo.png", help="PNG path (needs matplotlib)")

    learn_ = sub.add_parser(
        "learn", help="learn a file, predicting each row before learning it",
        description="Progressive validation: each row is predicted, then learned. Lines are "
                    "printed after 1, 2, 4, 8, ... rows and every --print-every rows.")
    _data_options(learn_)
    learn_.add_argument("--model", help=f"one of {', '.join(MODELS)}, or a class name: "
                        f"{', '.join(CLASS_NAMES)}; default: classifier for text labels and "
                        "-1 / 0 / 1, regressor for other numbers (asked for other integers)")
    learn_.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="an estimator parameter, e.g. --param gamma=0.5 (repeatable)")
    learn_.add_argument("-f", "--model-file", metavar="MODEL",
                        help="save the model there (okl.save format)")
    learn_.add_argument("--print-every", type=int, default=0, metavar="N",
                        help="also print a line every N rows (default: doubling counts only)")
    learn_.add_argument("--interval", type=float, metavar="LEVEL",
                        help="calibrated intervals (prediction sets) of coverage LEVEL, e.g. "
                             "0.9: prints coverage and width (docs/conformal.md)")
    learn_.add_argument("-o", "--output", metavar="OUT",
                        help="write the progressive predictions there, one a line (with "
                             "--interval: prediction,lower,upper)")

    predict_ = sub.add_parser("predict", help="predict every row of a file with a saved model")
    predict_.add_argument("-m", "--model-file", metavar="MODEL", required=True)
    predict_.add_argument("-o", "--output", metavar="OUT",
                          help="write predictions there, one a line (default: stdout)")
    _data_options(predict_)

    eval_ = sub.add_parser("eval", help="metrics of a saved model on a labelled file")
    eval_.add_argument("-m", "--model-file", metavar="MODEL", required=True)
    eval_.add_argument("--metric", action="append", metavar="NAME",
                       help="mae, mse, rmse, accuracy, error_rate, log_loss, pinball, coverage "
                            "(repeatable; default: suited to the model)")
    _data_options(eval_)
    return parser


COMMANDS = {"learn": learn, "predict": predict, "eval": evaluate}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `okl` command line; return its exit status."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.command == "demo":
        from okl._demo import run
        run(n=args.n, seed=args.seed, out=args.out)
        return 0
    try:
        COMMANDS[args.command](args)
    except BrokenPipeError:         # e.g. `okl predict ... | head`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (UsageError, OSError, ValueError, FloatingPointError) as exc:
        print(f"okl {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
