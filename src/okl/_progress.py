"""Progress bars for long work: shown on a terminal, silent in logs and pipes."""
import sys
from collections.abc import Iterable
from typing import Any

from tqdm import tqdm


def progress(iterable: Iterable | None = None, *, total: float | None = None,
             desc: str | None = None, unit: str = "it", unit_scale: bool = False,
             verbose: bool | None = None) -> tqdm:
    """A tqdm bar on stderr around `iterable` (or a counter to `update`).

    Parameters
    ----------
    iterable : iterable, optional
        Wrapped and yielded from; without it, call ``bar.update(n)``.
    total : number, optional
        Expected number of steps, for the ETA (default: ``len(iterable)``).
    desc, unit : str
        Label and unit shown on the bar.
    unit_scale : bool
        Show counts as 1.2k, 3.4M (for bytes, say).
    verbose : bool or None
        None (default) shows the bar only when stderr is a terminal, so CI
        logs and redirected output stay clean; True always, False never.
    """
    shown = sys.stderr.isatty() if verbose is None else verbose   # decided once: cheap when off
    return tqdm(iterable, total=total, desc=desc, unit=unit, unit_scale=unit_scale,
                file=sys.stderr, disable=not shown, dynamic_ncols=True, leave=False)


def write(line: Any) -> None:
    """Print a line to stdout without breaking an active progress bar."""
    tqdm.write(str(line), file=sys.stdout)
