"""fabps for PyTorch: a model trained by the pservers' update rule.

    import fabps, fabps.torch
    client = fabps.PServerClient(store=..., rule=fabps.Rule(kind="adam", lr=1e-3))
    opt = fabps.torch.DistributedOptimizer(client, model.named_parameters(),
                                           model=model)
    opt.init_params()                  # the election's winner sends its values
    for x, y in batches:
        opt.zero_grad()
        loss_fn(model(x), y).backward()  # each layer's gradient leaves as
        opt.step()                       # soon as autograd has it

What happens when:
  * backward(): an autograd hook on each parameter's gradient accumulator
    (AccumulateGrad: torch 1.13 has no register_post_accumulate_grad_hook)
    fires once the gradient is in param.grad; when every parameter of a
    layer has its gradient from this backward, that layer's gradients are
    pushed (PServerClient.push, asynchronous). The output layer's
    gradients are ready first, so their push overlaps the backward of the
    layers below.
  * step(): pushes what backward did not (layers some of whose parameters
    got no gradient, gradients accumulated inside no_sync() or with
    overlap_push=False), waits for the pushes, then pulls every parameter
    the pservers updated straight into param.data (no copy). With `model`
    given and overlap_pull (the default) the pull is asynchronous, one per
    layer, and each layer's forward waits (a forward pre-hook) only for its
    own parameters: the pull of the last layers overlaps the forward of the
    first ones. No local optimizer steps: the pservers apply the rule.
  * zero_grad(): zeroes the gradients in place (see "Memory" below).

Gradient accumulation (several backward() per step()): the pservers apply
every push as it arrives, so a layer's gradients must be pushed once per
step, and only when final. As with DistributedDataParallel, each backward
outside no_sync() is taken to be the last of the step, and pushes:

    with opt.no_sync():          # these backwards only accumulate
        for x, y in micro_batches[:-1]:
            loss_fn(model(x), y).backward()
    loss_fn(model(x_last), y_last).backward()   # pushes the sum
    opt.step()

A backward that would add to gradients already pushed in this step (a
second backward outside no_sync(), without step() or zero_grad() in
between) raises RuntimeError before it touches them: the pservers applied
the first gradient, and a push of the sum or of the difference would apply
a different update than one step with the summed gradient (with Adam or
momentum, two updates). With overlap_push=False nothing is pushed before
step(), which pushes param.grad as it is then: any number of backwards
accumulate, as with a torch.optim optimizer, and gradients may be changed
before step() (clipping), at the cost of the overlap. With overlap_push
(the default) a gradient changed after backward is pushed already: clip
with the rule's clip_norm or clip_value instead.

One optimizer per parameter: a second DistributedOptimizer over a
parameter that another live one holds would push every gradient twice; it
is refused (RuntimeError naming the first). close() lets the parameters go;
so does the optimizer's death (its hooks hold it weakly and are removed).

Types: float32 and float64 parameters, on the CPU, contiguous; others raise
TypeError (dtype) or ValueError (device, not contiguous) naming the
parameter. A
parameter with sparse gradients (torch.nn.Embedding or EmbeddingBag with
sparse=True) is refused with TypeError: fabps.torch.Embedding and
fabps.torch.EmbeddingBag move embedding tables by rows.

Timeouts: `step_timeout` (5 s by default) bounds everything a step waits
for: the start of each push and pull, and one deadline shared by the waits
for a step's pushes (and by those for its pulls), so a step that meets a
dead or frozen pserver is lost after about step_timeout. `timeout` bounds
init_params() and pull() (None: the client's init_wait_ms and
fabps.DEFAULT_TIMEOUT).

A lost step (a pserver died, restarts or is frozen: a fabps.PeerError,
i.e. Unavailable, TimedOut, Cancelled or fabps.IOError, in a push or a
pull) is not fatal, as in the C++ example trainer: step() returns False,
logs one warning line, pauses `retry_delay` seconds, and the next step goes
on (the client reconnects on its next call; asynchronous SGD loses that
update). More than `max_lost_steps` lost steps in a row, or any other error
(bad names or sizes: fabps.InvalidArgument, ...), raise.

Memory: the client reads gradients and writes parameters in place, without
copies, so the optimizer keeps both where they are. It gives every
parameter a gradient buffer of its own once (param.grad), zeroes it in place
and never sets it to None; a gradient autograd put elsewhere (create_graph,
or a user's assignment) is copied back into the buffer before the push.
Parameter tensors must not be replaced (param.data = ...) while the
optimizer lives.

Names: the pservers know parameters by the names given here (those of
named_parameters() by default), which must be the names the job was
initialized with.

Thread safety: one thread (the training loop's) calls the optimizer and runs
forward and backward.

Learning rates: the optimizer is a torch.optim.Optimizer whose
param_groups (fabps/param_groups.py) carry the pservers' rule: "lr" and
the rule's other hyper-parameters. A torch LR scheduler (StepLR, LambdaLR,
...) or the caller changes a group's "lr"; before the next push (in
backward or step()) the new rate of each of the group's parameters goes to
the pservers (PServerClient.set_learning_rates), so that push is applied
with it. A send lost to a dead pserver loses the step like a push and is
sent again with the next one. Only "lr" changes (ValueError for the others).
state_dict() holds the groups and what the pservers hold about each
parameter's rule; the optimizer state (momentum, Adam's slots) leaves with
the model file (fabps-export --with-optimizer-state).

Embedding tables on the pservers: fabps.torch.Embedding and
fabps.torch.EmbeddingBag (fabps/embedding.py) pull a batch's rows in forward
and push their gradient in backward; they have no torch Parameter, so the
optimizer does not see them.
"""

import contextlib
import logging
import sys
import time
import weakref

import torch

import fabps
from fabps import param_groups as _groups
from fabps.embedding import Embedding, EmbeddingBag  # noqa: F401

_log = logging.getLogger("fabps.torch")

# The parameter dtypes the pservers take (protocol/dtype.h).
DTYPES = (torch.float32, torch.float64)


def _transient_errors():
    """The exception classes of a lost step: a peer that is gone or late."""
    return (fabps.PeerError,)


# id(parameter) -> (weakref to it, weakref to the DistributedOptimizer that
# holds it). Weak both ways: a parameter's death drops its entry, an
# optimizer's death frees its parameters.
_owners = {}


def _owner_of(param):
    """The live DistributedOptimizer that holds `param`, or None."""
    entry = _owners.get(id(param))
    if entry is None or entry[0]() is not param:
        return None
    return entry[1]()


def _claim(param, opt):
    key = id(param)

    def gone(ref):
        entry = _owners.get(key)
        if entry is not None and entry[0] is ref:
            del _owners[key]

    _owners[key] = (weakref.ref(param, gone), weakref.ref(opt))


def _release(params, opt):
    for p in params:
        entry = _owners.get(id(p))
        if entry is not None and entry[0]() is p and entry[1]() in (opt,
                                                                    None):
            del _owners[id(p)]


def _sparse_weights(model):
    """id(weight) -> the module's description, for the Embedding and
    EmbeddingBag modules of `model` with sparse=True."""
    if model is None:
        return {}
    found = {}
    for name, m in model.named_modules():
        if isinstance(m, (torch.nn.Embedding, torch.nn.EmbeddingBag)) and \
                m.sparse:
            found[id(m.weight)] = \
                f"{type(m).__name__} {name or '(the model)'} with sparse=True"
    return found


def _sparse_error(name, what):
    return TypeError(
        f"DistributedOptimizer: parameter {name} has sparse gradients "
        f"({what}); the optimizer pushes dense gradients. Train embedding "
        "tables with fabps.torch.Embedding or fabps.torch.EmbeddingBag "
        "(they move only the rows a batch uses), or use sparse=False")


# The hooks hold the optimizer weakly (a forgotten optimizer must not live
# on in its hooks and push) and nothing that refers back to the tensor they
# are registered on.

def _before_accumulate_hook(ref, index, name):
    def hook(grad):
        opt = ref()
        if opt is not None:
            opt._before_accumulate(index, name, grad)

    return hook


def _after_accumulate_hook(ref, index, name):
    def hook(_grad_inputs, _grad_outputs):
        opt = ref()
        if opt is not None:
            opt._after_accumulate(index, name)

    return hook


def _end_of_backward_callback(ref):
    def callback():
        opt = ref()
        if opt is not None:
            opt._end_backward()

    return callback


def _forward_wait_hook(ref, indices):
    def hook(_module, _inputs):
        opt = ref()
        if opt is not None:
            opt._wait_layers([opt._layers[i] for i in indices])

    return hook


class _Layer:
    """The parameters of one module (or one parameter without a model):
    pushed together once all their gradients are ready, pulled together."""

    def __init__(self, names, params):
        self.names = names
        self.params = params
        self.ready = set()  # names with a gradient from this backward
        self.dirty = False  # a gradient accumulated since the last push
        self.pushed = False  # pushed in this step
        self.pull = None  # the pending pull_async handle


class DistributedOptimizer(torch.optim.Optimizer):
    """Pushes a model's gradients to the pservers and pulls the updated
    parameters back (see the module's documentation: accumulation, one
    optimizer per parameter, types, timeouts, lost steps, learning rates).

    Args:
      client: a fabps.PServerClient, used only from this thread.
      named_parameters: (name, torch.nn.Parameter) pairs, e.g.
        model.named_parameters(); only those with requires_grad are trained.
        float32 or float64, CPU, contiguous, dense gradients. Or parameter
        groups as torch.optim takes them: dicts with "params" (such pairs)
        and optionally "lr" (see param_groups below).
      model: the torch.nn.Module that uses them (optional): groups the
        parameters by the module that owns them (a layer per push and pull)
        and, with overlap_pull, lets each layer's forward wait for its own
        pull. Without it every parameter is its own group and step() pulls
        synchronously.
      overlap_pull: pull asynchronously after step(), overlapped with the
        next forward (needs `model`).
      overlap_push: push each layer's gradients during backward (outside
        no_sync()); False: step() pushes them all, after any number of
        backwards.
      step_timeout: seconds a step waits for its pushes and for its pulls
        (one deadline for all of each), and bounds the start of each push
        and pull; None: fabps.DEFAULT_TIMEOUT (60 s).
      timeout: seconds for init_params() and pull(); None: the client's
        init_wait_ms for init_params, fabps.DEFAULT_TIMEOUT for pull.
      max_lost_steps: lost steps in a row before step() raises.
      retry_delay: seconds step() pauses after a lost step.
      bucket_bytes: layers are merged into one push (and one pull), in
        backward order (output layer first), until a group holds at least
        this many bytes of parameters; 0: one group per layer. Every push
        and pull costs a fixed overhead (a round trip through the client's
        worker thread and the fabric), so on small models fewer, larger
        groups are faster (as DistributedDataParallel's bucket_cap_mb);
        on large ones, per-layer groups overlap more of the backward.

    param_groups (fabps/param_groups.py): a list of dicts as torch.optim's:
    "params", "param_names" (the names on the pservers), "lr" and the other
    hyper-parameters of the pservers' rule that apply ("rule", "momentum",
    "betas", "eps", "weight_decay", ...). Pairs make one group per distinct
    rule of client.rule_for(name), with its lr; a group dict's parameters
    share one rule (apart from lr). Only "lr" may change: a torch LR
    scheduler (torch.optim.lr_scheduler.StepLR, LambdaLR, ...) or the caller
    writes it, and the optimizer sends the new rate of every parameter of
    the group to the pservers (PServerClient.set_learning_rates) before the
    next push, so the next gradient is applied with it; a group given with
    "lr" sends it before its first push. A rule with the linear_decay
    schedule sets its own rates: changing that group's lr raises
    fabps.FailedPrecondition. Parameters are fixed at construction
    (add_param_group raises).

    Raises TypeError for a parameter of another dtype or with sparse
    gradients, ValueError for one not on the CPU or not contiguous, for
    parameters of one group with different rules or a group key other than
    params and lr, RuntimeError for one another live DistributedOptimizer
    holds.
    """

    def __init__(self, client, named_parameters, model=None, *,
                 overlap_pull=True, overlap_push=True, step_timeout=5.0,
                 timeout=None, max_lost_steps=30, retry_delay=0.2,
                 bucket_bytes=0):
        caller = sys._getframe(1)
        self._origin = f"{caller.f_code.co_filename}:{caller.f_lineno}"
        self._hook_handles = []
        self._accumulators = []
        self._named = []
        self._client = client
        self._step_timeout = step_timeout
        self._timeout = timeout
        self._max_lost = max_lost_steps
        self._retry_delay = retry_delay
        self._transient = _transient_errors()
        # A client without rules (a stand-in) gives the default rule.
        rule_for = getattr(client, "rule_for", lambda _name: fabps.Rule())
        groups, given = _groups.build(named_parameters, rule_for)
        named = [(n, p) for g in groups
                 for n, p in zip(g["param_names"], g["params"])]
        if not named:
            raise ValueError("DistributedOptimizer: no trainable parameters")
        self._check(named, model)
        self._constructed = False  # add_param_group works until True
        torch.optim.Optimizer.__init__(self, groups, {})
        self._constructed = True
        self._fixed = [_groups.fixed_part(g) for g in self.param_groups]
        self._lrs = _groups.LearningRates(self.param_groups, given)
        self._initialized = False  # init_params() or a step went through
        self._named = named
        for n, p in named:
            _claim(p, self)
        self._params = dict(named)
        self._grads = {}
        for n, p in named:
            if p.grad is None or p.grad.data_ptr() == 0 or \
                    not p.grad.is_contiguous():
                p.grad = torch.zeros_like(p)
            self._grads[n] = p.grad
        self._layers = self._merge(self._group(named, model), bucket_bytes)
        self._overlap = overlap_pull and model is not None
        self._overlap_push = overlap_push
        self._accumulating = False  # inside no_sync()
        self._in_backward = False  # a backward's end callback is queued
        # Autograd hooks: on each parameter (before its gradient is
        # accumulated) and on its gradient accumulator (after). The
        # accumulators are kept alive here, so autograd reuses them.
        ref = weakref.ref(self)
        for index, layer in enumerate(self._layers):
            for n, p in zip(layer.names, layer.params):
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                self._accumulators.append(acc)
                self._hook_handles.append(
                    p.register_hook(_before_accumulate_hook(ref, index, n)))
                self._hook_handles.append(
                    acc.register_hook(_after_accumulate_hook(ref, index, n)))
        if self._overlap:
            self._register_forward_waits(model)
        self._pushes = []  # (layer names, handle) of this step
        self._push_error = None  # the first error of this step's pushes
        self._pull_error = None  # an async pull's error, seen by a forward
        self.steps = 0
        self.lost_steps = 0
        self.lost_in_a_row = 0
        # Called with the names of each push as it is issued (tests, logs).
        self.on_push = None

    def _check(self, named, model):
        sparse = _sparse_weights(model)
        for n, p in named:
            if id(p) in sparse:
                raise _sparse_error(n, sparse[id(p)])
            if p.is_sparse or (p.grad is not None and p.grad.is_sparse):
                raise _sparse_error(n, "a sparse tensor")
            if p.dtype not in DTYPES:
                raise TypeError(
                    f"DistributedOptimizer: parameter {n} is {p.dtype}; the "
                    "pservers take torch.float32 and torch.float64 "
                    "parameters")
            if p.device.type != "cpu" or not p.is_contiguous():
                raise ValueError(
                    f"DistributedOptimizer: parameter {n} must be a "
                    f"contiguous CPU tensor (is on {p.device}, "
                    f"contiguous={p.is_contiguous()})")
        for n, p in named:
            owner = _owner_of(p)
            if owner is not None:
                raise RuntimeError(
                    f"DistributedOptimizer: parameter {n} is held by "
                    f"{owner!r}: two optimizers would push every gradient "
                    "twice; close() that one first")

    def __repr__(self):
        try:
            trainer = f" of trainer {self._client.trainer_id}"
        except Exception:  # a closed or broken client
            trainer = ""
        names = [n for n, _ in self._named]
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        return (f"<fabps.torch.DistributedOptimizer at {id(self):#x}"
                f"{trainer} over {len(names)} parameters ({shown}), "
                f"created at {self._origin}>")

    # ---- initialization -------------------------------------------------

    def init_params(self, timeout=None):
        """Broadcast-style initialization: if this trainer wins the init
        election, its current parameter values become the job's (with the
        client's rule); otherwise the job's current values are pulled into
        the parameters. True when this trainer initialized. `timeout` None:
        the optimizer's `timeout`."""
        mine = self._client.init_params(
            self._named_data(),
            timeout=self._timeout if timeout is None else timeout)
        self._initialized = True
        return mine

    # ---- the training step ----------------------------------------------

    @contextlib.contextmanager
    def no_sync(self):
        """A context in which backward only accumulates the gradients in
        param.grad; the next backward outside it (or step()) pushes the
        sum. As DistributedDataParallel.no_sync."""
        previous, self._accumulating = self._accumulating, True
        try:
            yield
        finally:
            self._accumulating = previous

    def zero_grad(self, set_to_none=False):
        """Zeroes every gradient buffer in place (with set_to_none too: the
        buffers stay, see "Memory"). Waits for pushes still in flight (a
        step() that was skipped) so none reads a half-zeroed buffer;
        gradients not pushed yet are dropped."""
        del set_to_none
        if self._pushes or self._push_error is not None:
            self._wait_pushes()
        self._end_backward()
        for layer in self._layers:
            layer.dirty = False
            layer.pushed = False
        for g in self._grads.values():
            g.zero_()

    def step(self):
        """Pushes the gradients backward did not push (layers some of whose
        parameters got no gradient keep zeros for those; layers without any
        gradient since the last push are not pushed), waits for this step's
        pushes, then pulls the parameters. True when the update went
        through; False when the step was lost (see the module's notes): a
        push failed (the pull is left to the next step), or the pull after
        it (a failure of an overlapped pull, seen by the next forward,
        counts for the next step)."""
        self.steps += 1
        self._end_backward()
        if self._push_error is None:
            # A learning rate changed after backward's pushes (or none were
            # made): the next push uses it.
            self._push_error = self._send_learning_rates()
        for layer in self._layers:
            if layer.dirty and not layer.pushed:
                self._push(layer)
        pushed = self._wait_pushes()
        for layer in self._layers:
            layer.pushed = False
        self._wait_layers(self._layers)  # pulls no forward has waited for
        # The previous step's pull may have been lost.
        error, self._pull_error = pushed or self._pull_error, None
        if pushed is None:
            # After a failed push the pull would spend another step_timeout
            # on the same pserver: the next step pulls.
            error = self._start_pull() or error
        if error is None:
            self.lost_in_a_row = 0
            self._initialized = True
            return True
        self._lose(error)
        return False

    def synchronize(self):
        """Waits for the pulls in flight: call before reading the
        parameters outside the model's forward (evaluation, saving).
        Raises the pull's error, if any."""
        error = self._wait_pulls()
        if error is not None:
            raise error

    def pull(self, timeout=None):
        """Synchronously pulls every parameter now (after synchronize()).
        `timeout` None: the optimizer's `timeout`. Errors propagate."""
        self.synchronize()
        self._client.pull(self._named_data(),
                          timeout=self._timeout if timeout is None else timeout)

    # ---- torch.optim.Optimizer's contracts ------------------------------

    def add_param_group(self, param_group):
        """Refused once constructed (RuntimeError): the parameters' hooks
        and layers are set up at construction; create another optimizer."""
        if self._constructed:
            raise RuntimeError(
                "DistributedOptimizer: parameters are fixed at construction; "
                "create another DistributedOptimizer for more")
        torch.optim.Optimizer.add_param_group(self, param_group)

    def state_dict(self):
        """{"state": {...}, "param_groups": [...]}, as torch.optim's:
        param_groups as the optimizer holds them ("params" as indices into
        the parameters in group order, "param_names", "lr" and the rule's
        hyper-parameters, a scheduler's keys); state[i] for parameter i
        what the pservers hold about its rule now: "rule" (the kind), "lr"
        (the rate they apply), and "step", this optimizer's step() count
        (the pservers count updates per block, which a trainer cannot
        read). Asks the pservers (timeout: the optimizer's `timeout`;
        fabps errors propagate).

        The optimizer state itself (momentum, Adam's and AdaGrad's slots)
        lives on the pservers beside the values and leaves with the model
        file: fabps-export --with-optimizer-state, or the pservers'
        checkpoints (docs/OPERATING.md, "The model file")."""
        rules = self._client.rules(timeout=self._timeout)
        state, groups, index = {}, [], 0
        for g in self.param_groups:
            packed = {k: v for k, v in g.items() if k != "params"}
            packed["param_names"] = list(g["param_names"])
            packed["params"] = list(range(index, index + len(g["params"])))
            for name in g["param_names"]:
                rule = rules[name]
                state[index] = {"rule": rule.kind, "lr": rule.lr,
                                "step": self.steps}
                index += 1
            groups.append(packed)
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict):
        """Takes the param_groups of `state_dict` (from state_dict()): the
        same number of groups with as many parameters each (and the same
        "param_names" when it has them) and the same rule, else ValueError;
        "lr" and a scheduler's keys are copied, "step" of its state becomes
        `steps`. The learning rates are sent to the pservers at once when
        the parameters are initialized (after init_params() or a step that
        went through; fabps errors propagate, a lost connection leaves them
        for the next push), else before the first push."""
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError(
                f"DistributedOptimizer.load_state_dict: {len(saved)} "
                f"parameter groups, this optimizer has "
                f"{len(self.param_groups)}")
        for i, (g, s) in enumerate(zip(self.param_groups, saved)):
            if len(s["params"]) != len(g["params"]) or (
                    "param_names" in s and
                    list(s["param_names"]) != list(g["param_names"])):
                raise ValueError(
                    f"DistributedOptimizer.load_state_dict: group {i} holds "
                    f"{list(s.get('param_names', s['params']))}, this "
                    f"optimizer's {g['param_names']}")
        _groups.check_fixed(saved, self._fixed)
        for g, s in zip(self.param_groups, saved):
            g.update((k, v) for k, v in s.items()
                     if k not in ("params", "param_names"))
        steps = [st["step"] for st in state_dict.get("state", {}).values()
                 if "step" in st]
        if steps:
            self.steps = max(steps)
        self._lrs.resend()
        if self._initialized:
            rates, lrs = self._lrs.pending(self.param_groups)
            try:
                self._client.set_learning_rates(rates, timeout=self._timeout)
            except self._transient:
                return
            self._lrs.mark_sent(lrs)

    def close(self):
        """Waits for transfers in flight, then removes the hooks and lets
        the parameters go (another optimizer may take them)."""
        try:
            self._wait_pushes()
            self._wait_pulls()
        finally:
            self._detach()

    def __del__(self):
        try:
            self._detach()
        except Exception:  # noqa: S110 - interpreter shutdown
            pass

    # ---- internals --------------------------------------------------------

    def _detach(self):
        """Removes every hook and releases the parameters (idempotent)."""
        for h in self._hook_handles:
            h.remove()
        self._hook_handles = []
        self._accumulators = []
        _release([p for _, p in self._named], self)

    def _named_data(self):
        # The Parameters themselves, not p.data (a new tensor at each
        # access): the client watches the tensor it is given to know when
        # the memory goes, and keeps its registration while it lives.
        return list(self._named)

    @staticmethod
    def _group(named, model):
        if model is None:
            return [_Layer([n], [p]) for n, p in named]
        by_id = {id(p): (n, p) for n, p in named}
        layers, seen = [], set()
        for module in model.modules():
            names, params = [], []
            for p in module.parameters(recurse=False):
                if id(p) in by_id and id(p) not in seen:
                    seen.add(id(p))
                    names.append(by_id[id(p)][0])
                    params.append(p)
            if params:
                layers.append(_Layer(names, params))
        layers += [_Layer([n], [p]) for n, p in named if id(p) not in seen]
        return layers

    @staticmethod
    def _merge(layers, bucket_bytes):
        """Consecutive layers, from the last, merged into groups of at
        least bucket_bytes (the first group formed may hold less)."""
        if bucket_bytes <= 0:
            return layers
        merged, names, params, size = [], [], [], 0
        for layer in reversed(layers):
            names += layer.names
            params += layer.params
            size += sum(p.numel() * p.element_size() for p in layer.params)
            if size >= bucket_bytes:
                merged.append(_Layer(names, params))
                names, params, size = [], [], 0
        if params:
            merged.append(_Layer(names, params))
        return merged[::-1]

    def _register_forward_waits(self, model):
        index_of = {}
        for index, layer in enumerate(self._layers):
            for p in layer.params:
                index_of[id(p)] = index
        ref = weakref.ref(self)
        for module in model.modules():
            indices = []
            for p in module.parameters(recurse=False):
                index = index_of.get(id(p))
                if index is not None and index not in indices:
                    indices.append(index)
            if indices:
                self._hook_handles.append(module.register_forward_pre_hook(
                    _forward_wait_hook(ref, tuple(indices))))

    def _before_accumulate(self, index, name, grad):
        """Before autograd adds `grad` to the buffer of parameter `name`:
        refuses what the buffer must not receive (the buffer is untouched
        when this raises)."""
        if grad.layout != torch.strided:
            raise _sparse_error(name, f"a {grad.layout} gradient")
        if self._layers[index].pushed:
            raise RuntimeError(
                f"DistributedOptimizer: backward() gives parameter {name} a "
                "gradient after its layer's gradients were pushed in this "
                "step (a second backward without step() or zero_grad() in "
                "between). To accumulate gradients over several backwards, "
                "run all but the last inside `with opt.no_sync():`, or "
                "create the optimizer with overlap_push=False")

    def _after_accumulate(self, index, name):
        """The gradient of parameter `name` is in param.grad: pushes its
        layer when this backward has given all of the layer's parameters
        their gradient."""
        param, buf = self._params[name], self._grads[name]
        if param.grad is not buf:  # autograd put the gradient elsewhere
            buf.copy_(param.grad)
            param.grad = buf
        layer = self._layers[index]
        layer.dirty = True
        if self._accumulating or not self._overlap_push:
            return
        if not self._in_backward:
            # Forgets the parameters counted in this backward when it ends:
            # a layer completed only by the next backward is not ready (its
            # first parameters' gradients would not be final).
            self._in_backward = True
            torch.autograd.Variable._execution_engine.queue_callback(
                _end_of_backward_callback(weakref.ref(self)))
        layer.ready.add(name)
        if len(layer.ready) == len(layer.params):
            self._push(layer)

    def _end_backward(self):
        self._in_backward = False
        for layer in self._layers:
            layer.ready.clear()

    def _send_learning_rates(self):
        """Sends the learning rates of the groups whose "lr" changed since
        they were last sent (checking that nothing else of the rule did);
        returns the transient error that stopped it (sent again later)."""
        _groups.check_fixed(self.param_groups, self._fixed)
        rates, lrs = self._lrs.pending(self.param_groups)
        if not rates:
            return None
        try:
            self._client.set_learning_rates(rates,
                                            timeout=self._step_timeout)
        except self._transient as e:
            return e
        self._lrs.mark_sent(lrs)
        return None

    def _push(self, layer):
        layer.pushed = True
        layer.dirty = False
        if self._push_error is not None:
            return  # this step is lost already
        # A push is applied with the rates the pservers have: a changed
        # one goes first. Raised inside backward: keep it, as a push's.
        self._push_error = self._send_learning_rates()
        if self._push_error is not None:
            return
        try:
            handle = self._client.push(
                [(n, self._grads[n]) for n in layer.names],
                timeout=self._step_timeout)
        except self._transient as e:  # raised inside backward: keep it
            self._push_error = e
            return
        self._pushes.append((layer.names, handle))
        if self.on_push is not None:
            self.on_push(list(layer.names))

    def _wait_pushes(self):
        """Waits for every push of the step; returns the first error (a
        transient one; others raise)."""
        error, self._push_error = self._push_error, None
        pushes, self._pushes = self._pushes, []
        left = self._time_left()
        for _names, handle in pushes:
            try:
                handle.wait(timeout=left())
            except self._transient as e:
                error = error or e
        return error

    def _time_left(self):
        """One deadline for a group of waits, step_timeout from now: the
        handles of a step that waits on a dead pserver time out together
        (waited one by one with a timeout each, a step of k layers would
        take k timeouts)."""
        if self._step_timeout is None:
            return lambda: None  # fabps.DEFAULT_TIMEOUT for each wait
        deadline = time.monotonic() + self._step_timeout
        return lambda: max(0.0, deadline - time.monotonic())

    def _start_pull(self):
        """Pulls every parameter (without overlap) or starts the pulls;
        returns the transient error that stopped it."""
        if not self._overlap:
            try:
                self._client.pull(self._named_data(),
                                  timeout=self._step_timeout)
            except self._transient as e:
                return e
            return None
        for layer in self._layers:
            try:
                layer.pull = self._client.pull_async(
                    list(zip(layer.names, layer.params)),
                    timeout=self._step_timeout)
            except self._transient as e:
                # A client that cannot reach a pserver spends its timeout
                # on each call: the other layers wait for the next step.
                layer.pull = None
                return e
        return None

    def _wait_layers(self, layers):
        left = self._time_left()
        for layer in layers:
            handle, layer.pull = layer.pull, None
            if handle is None:
                continue
            try:
                handle.wait(timeout=left())
            except self._transient as e:
                # The forward goes on with the values it has; the next
                # step() counts the step as lost.
                self._pull_error = self._pull_error or e

    def _wait_pulls(self):
        """Waits for the asynchronous pulls in flight; returns the first
        transient error."""
        self._wait_layers(self._layers)
        error, self._pull_error = self._pull_error, None
        return error

    def _lose(self, error):
        self.lost_steps += 1
        self.lost_in_a_row += 1
        if self.lost_in_a_row > self._max_lost:
            raise error
        _log.warning("step %d lost (%s: %s); going on", self.steps,
                     type(error).__name__, error)
        if self._retry_delay > 0:
            time.sleep(self._retry_delay)
