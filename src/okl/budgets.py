"""Budget policies by name: which centre leaves when a new one would exceed `budget`.

One row per policy; the choice itself is made in `KernelExpansion.cvictim`
(and its NumPy twin); "merge" in `KernelExpansion.cmerge` (docs/budget.md).
"auto", the learners' default, is "merge" for the Gaussian kernel and
"oldest" otherwise.  See docs/algorithms.md, section 3.

Also here: the warning of an unbudgeted expansion grown large enough to hurt.
"""
import warnings

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


# (centres, what it costs): the first warning at 1e5 centres, then every factor of 10
WARN_CENTRES = 100_000


class ExpansionSizeWarning(UserWarning):
    """An unbudgeted kernel expansion became large enough to hurt time or memory."""


MERGE_KERNELS = ("gaussian",)


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


def check_expansion_size(n_before, n_after, n_features, owner, threshold=WARN_CENTRES):
    """Warn when n_after crosses threshold * 10^k (k >= 0) that n_before had not reached."""
    if n_after < threshold:
        return False
    level = threshold
    while level * 10 <= n_after:
        level *= 10
    if n_before >= level:
        return False
    mib = n_after * (n_features + 2) * 8 / 2**20
    warnings.warn(
        f"{owner} holds {n_after} kernel centres ({mib:.0f} MiB); every step now reads all "
        f"of them, so a step costs O({n_after} x {n_features}) and the stream as a whole grows "
        "quadratically. Bound it with budget=B (budget_policy='merge' keeps accuracy best, "
        "BSGD) or use a fixed-size model: approximation='fourier' or 'nystroem' with "
        "n_components=D.", ExpansionSizeWarning, stacklevel=3)
    return True
