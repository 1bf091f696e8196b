"""Budget policies by name: which centre leaves when a new one would exceed `budget`.

One row per policy; the choice itself is made in `KernelExpansion.cvictim`
(and its NumPy twin).  See docs/algorithms.md, section 3.
"""
from okl._core._expansion import BudgetPolicy

BUDGET_POLICIES = {
    "oldest": BudgetPolicy.OLDEST,       # the centre that entered first (NORMA truncation)
    "smallest": BudgetPolicy.SMALLEST,   # the smallest |coefficient|, the newcomer included
}


def budget_code(name):
    """The `BudgetPolicy` enum member of a policy name."""
    try:
        return BUDGET_POLICIES[name]
    except KeyError:
        raise ValueError(f"Unknown budget policy {name!r}; "
                         f"choose one of {sorted(BUDGET_POLICIES)}.") from None
