"""Command line: `okl demo` (or `python -m okl demo`)."""
import argparse


def main(argv=None):
    parser = argparse.ArgumentParser(prog="okl", description="okl: online kernel learning")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="learn an embedded stream and plot learning curves")
    demo.add_argument("--n", type=int, default=8000, help="stream length (default 8000)")
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--out", default="okl-demo.png", help="PNG path (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from okl._demo import run
        run(n=args.n, seed=args.seed, out=args.out)


if __name__ == "__main__":
    main()
