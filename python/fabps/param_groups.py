"""The param_groups of fabps.torch.DistributedOptimizer: what they hold, how
they are built from the pservers' update rules, and which of their learning
rates the pservers have not been sent yet.

A group is a dict as torch.optim's: "params" (the tensors), "param_names"
(their names on the pservers), "lr", and the other hyper-parameters of the
group's fabps.Rule that apply to its kind, under torch.optim's names where
torch has one:

    every rule      rule (the kind), lr, weight_decay, clip_value, clip_norm
    momentum        momentum (nesterov: the same, and nesterov=True)
    adam            betas (beta1, beta2), eps
    adagrad         eps, initial_accumulator_value
    linear_decay    schedule="linear_decay", final_lr, decay_steps

Only "lr" may change while the optimizer lives (the pservers' rule keeps
the others; a change of one raises ValueError at the next step); keys the
rule does not have (a scheduler's "initial_lr") are the caller's.
"""

import math

# Keys of a group that describe the pservers' rule and stay as they are.
_FIXED = ("rule", "weight_decay", "clip_value", "clip_norm", "momentum",
          "nesterov", "betas", "eps", "initial_accumulator_value", "schedule",
          "final_lr", "decay_steps")


def hyperparameters(rule):
    """The group keys of fabps.Rule `rule` (see the module's table)."""
    h = {"rule": rule.kind, "lr": rule.lr, "weight_decay": rule.weight_decay,
         "clip_value": rule.clip_value, "clip_norm": rule.clip_norm}
    if rule.kind in ("momentum", "nesterov"):
        h["momentum"] = rule.momentum
        h["nesterov"] = rule.kind == "nesterov"
    elif rule.kind == "adam":
        h["betas"] = (rule.beta1, rule.beta2)
        h["eps"] = rule.epsilon
    elif rule.kind == "adagrad":
        h["eps"] = rule.epsilon
        h["initial_accumulator_value"] = rule.adagrad_initial
    if rule.schedule == "linear_decay":
        h["schedule"] = rule.schedule
        h["final_lr"] = rule.final_lr
        h["decay_steps"] = rule.decay_steps
    return h


def fixed_part(h):
    """The keys of group (or hyperparameters()) `h` that stay as they are."""
    return {k: v for k, v in h.items() if k in _FIXED}


def _trained(named):
    """The (name, tensor) pairs of `named` that require a gradient."""
    return [(n, p) for n, p in named if p.requires_grad]


def build(items, rule_for):
    """The groups of `items`: (name, tensor) pairs, or dicts with "params"
    (such pairs) and optionally "lr". Pairs make one group per distinct rule
    (in the order the rules first appear), each with its rule's lr. A dict
    is one group; its parameters must share one rule apart from lr, and
    without "lr" one lr too. Returns (groups, given): the group dicts (with
    "params" and "param_names") and, per group, whether its lr was given
    (the pservers may not have it yet). ValueError names the parameters
    that disagree, or a key a group may not set."""
    items = list(items)
    if not items or not isinstance(items[0], dict):
        by_rule = {}
        for n, p in _trained(items):
            h = hyperparameters(rule_for(n))
            key = repr(sorted(h.items()))
            if key not in by_rule:
                by_rule[key] = dict(h, params=[], param_names=[])
            by_rule[key]["params"].append(p)
            by_rule[key]["param_names"].append(n)
        groups = list(by_rule.values())
        return groups, [False] * len(groups)
    groups, given = [], []
    for i, spec in enumerate(items):
        extra = set(spec) - {"params", "lr"}
        if extra:
            raise ValueError(
                f"DistributedOptimizer: param_groups[{i}] sets "
                f"{', '.join(sorted(extra))}; a group sets only params and "
                "lr (the other hyper-parameters are the pservers' rule: "
                "fabps.PServerClient(rule=..., rules=...))")
        named = _trained(spec["params"])
        if not named:
            raise ValueError(f"DistributedOptimizer: param_groups[{i}] has "
                             "no trainable parameters")
        first = hyperparameters(rule_for(named[0][0]))
        for n, _ in named[1:]:
            h = hyperparameters(rule_for(n))
            if fixed_part(h) != fixed_part(first) or (
                    "lr" not in spec and h["lr"] != first["lr"]):
                raise ValueError(
                    f"DistributedOptimizer: param_groups[{i}]: {n} and "
                    f"{named[0][0]} have different rules ({h} and {first}); "
                    "a group's parameters share one")
        g = dict(first, params=[p for _, p in named],
                 param_names=[n for n, _ in named])
        if "lr" in spec:
            g["lr"] = spec["lr"]
        groups.append(g)
        given.append("lr" in spec)
    return groups, given


def check_fixed(groups, rules):
    """ValueError naming the group and key when a group's rule key differs
    from `rules` (the fixed parts recorded at construction)."""
    for i, (g, fixed) in enumerate(zip(groups, rules)):
        for k, v in fixed.items():
            if g.get(k) != v:
                raise ValueError(
                    f"DistributedOptimizer: param_groups[{i}][{k!r}] is "
                    f"{g.get(k)!r}, the pservers' rule has {v!r}: only lr "
                    "changes while the job runs")


class LearningRates:
    """Which groups' lr the pservers have: the last one sent per group
    (None: to be sent)."""

    def __init__(self, groups, given):
        self._sent = [None if gv else g["lr"] for g, gv in zip(groups, given)]

    def pending(self, groups):
        """(rates, lrs): name -> rate for every parameter of a group whose
        lr differs from the one sent, and the groups' lrs now. A lr that is
        not a finite number >= 0 raises ValueError naming the group."""
        rates, lrs = {}, []
        for i, g in enumerate(groups):
            lr = g["lr"]
            try:
                value = float(lr)  # a float, an int or a 0-d tensor
            except (TypeError, ValueError):
                value = math.nan
            if isinstance(lr, bool) or not math.isfinite(value) or value < 0:
                raise ValueError(
                    f"DistributedOptimizer: param_groups[{i}]['lr'] = {lr!r} "
                    f"(parameters {', '.join(g['param_names'])}): a learning "
                    "rate is a finite number >= 0")
            lrs.append(value)
            if self._sent[i] != value:
                rates.update((n, value) for n in g["param_names"])
        return rates, lrs

    def mark_sent(self, lrs):
        self._sent = list(lrs)

    def resend(self):
        self._sent = [None] * len(self._sent)
