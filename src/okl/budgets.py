"""Budget policies by name: which centre leaves when a new one would exceed `budget`.

One row per policy; the choice itself is made in `KernelExpansion.cvictim`
(and its NumPy twin); "merge" in `KernelExpansion.cmerge` (docs/budget.md).
"auto", the learners' default, is "merge" for the Gaussian kernel and
"oldest" otherwise.  See docs/algorithms.md, section 3.  The default
``budget="auto"`` keeps `DEFAULT_BUDGET` centres (docs/defaults.md, section 3);
``budget=None`` gives the papers' exact, growing expansion.
"""
from okl._core._expansion import BudgetPolicy

BUDGET_POLICIES = {
    "oldest": BudgetPolicy.OLDEST,       # the centre that entered first (NORMA truncation)
    "smallest": BudgetPolicy.SMALLEST,   # the smallest |coefficient|, the newcomer included
    "merge": BudgetPolicy.MERGE,         # BSGD: merge the smallest into its best partner
}


def budget_code(name):
    """The `BudgetPolicy` enum member of a policy name."""
    try:
        return BUDGET_POLICIES[name]
    except KeyError:
        raise ValueError(f"Unknown budget policy {name!r}; "
                         f"choose one of {sorted(BUDGET_POLICIES)}.") from None


MERGE_KERNELS = ("gaussian",)

# centres an expansion keeps under budget="auto" (docs/defaults.md, section 3)
DEFAULT_BUDGET = 500


def resolve_budget(budget, expansion=True):
    """The centres a learner keeps: budget="auto" is `DEFAULT_BUDGET` for a kernel
    expansion (`expansion`) and None for a fixed-size model; any other value as given."""
    if isinstance(budget, str):
        return DEFAULT_BUDGET if expansion else None
    return budget


def default_budget_policy(kernel):
    """'merge' when a budget is set on a kernel that merges, else 'oldest'."""
    return "merge" if kernel in MERGE_KERNELS else "oldest"


def resolve_budget_policy(policy, kernel, owner):
    """The policy name a learner uses: "auto" -> `default_budget_policy`; "merge" checked."""
    if policy == "auto":
        return default_budget_policy(kernel)
    check_budget_policy(policy, kernel, owner)
    return policy


def check_budget_policy(policy, kernel, owner):
    """Refuse 'merge' on a kernel that cannot merge, naming those that can."""
    if policy == "merge" and kernel not in MERGE_KERNELS:
        raise ValueError(
            f"budget_policy='merge' of {owner} needs the 'gaussian' kernel (the kernels that "
            f"merge: {', '.join(repr(k) for k in MERGE_KERNELS)}); got kernel={kernel!r}. Use "
            "budget_policy='oldest' or 'smallest' with this kernel.")
