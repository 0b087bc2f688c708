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
    layer has fired, that layer's gradients are pushed (PServerClient.push,
    asynchronous). The output layer's gradients are ready first, so their
    push overlaps the backward of the layers below.
  * step(): waits for the pushes, then pulls every parameter the pservers
    updated straight into param.data (no copy). With `model` given and
    overlap_pull (the default) the pull is asynchronous, one per layer, and
    each layer's forward waits (a forward pre-hook) only for its own
    parameters: the pull of the last layers overlaps the forward of the
    first ones. No local optimizer steps: the pservers apply the rule.
  * zero_grad(): zeroes the gradients in place (see "Memory" below).

A lost step (a pserver died or restarts: fabps.Unavailable, TimedOut, ...,
in a push or a pull) is not fatal, as in the C++ example trainer: step()
returns False, logs one warning line, pauses `retry_delay` seconds, and the
next step goes on (the client reconnects on its next call; asynchronous SGD
loses that update). More than `max_lost_steps` lost steps in a row, or any
other error (bad names or sizes: fabps.InvalidArgument, ...), raise.

Memory: the client reads gradients and writes parameters in place, without
copies, so the optimizer keeps both where they are. It gives every
parameter a gradient buffer of its own once (param.grad), zeroes it in place
and never sets it to None; a gradient autograd put elsewhere (create_graph,
or a user's assignment) is copied back into the buffer before the push.
Parameters must be float32, CPU and contiguous; their tensors must not be
replaced (param.data = ...) while the optimizer lives.

Names: the pservers know parameters by the names given here (those of
named_parameters() by default), which must be the names the job was
initialized with.

Thread safety: one thread (the training loop's) calls the optimizer and runs
forward and backward.

Embedding tables on the pservers: fabps.torch.Embedding and
fabps.torch.EmbeddingBag (fabps/embedding.py) pull a batch's rows in forward
and push their gradient in backward; they have no torch Parameter, so the
optimizer does not see them.
"""

import logging
import time

import torch

import fabps
from fabps.embedding import Embedding, EmbeddingBag  # noqa: F401

_log = logging.getLogger("fabps.torch")


def _transient_errors():
    """The exception classes of a lost step: a peer that is gone or late."""
    names = ("Unavailable", "TimedOut", "Cancelled", "IOError")
    return tuple(getattr(fabps, n) for n in names if hasattr(fabps, n))


class _Layer:
    """The parameters of one module (or one parameter without a model):
    pushed together once all their gradients are ready, pulled together."""

    def __init__(self, names, params):
        self.names = names
        self.params = params
        self.ready = 0  # parameters whose gradient is in this step
        self.pull = None  # the pending pull_async handle


class DistributedOptimizer:
    """Pushes a model's gradients to the pservers and pulls the updated
    parameters back (see the module's documentation).

    Args:
      client: a fabps.PServerClient, used only from this thread.
      named_parameters: (name, torch.nn.Parameter) pairs, e.g.
        model.named_parameters(); only those with requires_grad are trained.
      model: the torch.nn.Module that uses them (optional): groups the
        parameters by the module that owns them (a layer per push and pull)
        and, with overlap_pull, lets each layer's forward wait for its own
        pull. Without it every parameter is its own group and step() pulls
        synchronously.
      overlap_pull: pull asynchronously after step(), overlapped with the
        next forward (needs `model`).
      timeout: seconds for each push and pull (None: the client's
        rpc_timeout_ms).
      max_lost_steps: lost steps in a row before step() raises.
      retry_delay: seconds step() pauses after a lost step.
      bucket_bytes: layers are merged into one push (and one pull), in
        backward order (output layer first), until a group holds at least
        this many bytes of parameters; 0: one group per layer. Every push
        and pull costs a fixed overhead (a round trip through the client's
        worker thread and the fabric), so on small models fewer, larger
        groups are faster (as DistributedDataParallel's bucket_cap_mb);
        on large ones, per-layer groups overlap more of the backward.
    """

    def __init__(self, client, named_parameters, model=None,
                 overlap_pull=True, timeout=None, max_lost_steps=30,
                 retry_delay=0.2, bucket_bytes=0):
        self._client = client
        self._timeout = timeout
        self._max_lost = max_lost_steps
        self._retry_delay = retry_delay
        self._transient = _transient_errors()
        named = [(n, p) for n, p in named_parameters if p.requires_grad]
        if not named:
            raise ValueError("DistributedOptimizer: no trainable parameters")
        self._named = named
        for n, p in named:
            if p.dtype != torch.float32 or p.device.type != "cpu" or \
                    not p.is_contiguous():
                raise ValueError(
                    f"DistributedOptimizer: parameter {n} must be a "
                    f"contiguous float32 CPU tensor (is {p.dtype} on "
                    f"{p.device}, contiguous={p.is_contiguous()})")
        self._grads = {}
        for n, p in named:
            if p.grad is None or p.grad.data_ptr() == 0 or \
                    not p.grad.is_contiguous():
                p.grad = torch.zeros_like(p)
            self._grads[n] = p.grad
        self._layers = self._merge(self._group(named, model), bucket_bytes)
        self._overlap = overlap_pull and model is not None
        # Autograd hooks: one per parameter, on its gradient accumulator.
        # The accumulators are kept alive here, so autograd reuses them.
        self._accumulators = []
        self._hook_handles = []
        for layer in self._layers:
            for n, p in zip(layer.names, layer.params):
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                self._accumulators.append(acc)
                self._hook_handles.append(
                    acc.register_hook(self._make_grad_hook(layer, n, p)))
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

    # ---- initialization -------------------------------------------------

    def init_params(self, timeout=None):
        """Broadcast-style initialization: if this trainer wins the init
        election, its current parameter values become the job's (with the
        client's rule); otherwise the job's current values are pulled into
        the parameters. True when this trainer initialized."""
        return self._client.init_params(self._named_data(), timeout=timeout)

    # ---- the training step ----------------------------------------------

    def zero_grad(self):
        """Zeroes every gradient buffer in place. Waits for pushes still in
        flight (a step() that was skipped) so none reads a half-zeroed
        buffer."""
        if self._pushes:
            self._wait_pushes()
        for layer in self._layers:
            layer.ready = 0
        for g in self._grads.values():
            g.zero_()

    def step(self):
        """Waits for this step's pushes (pushing any layer whose hooks did
        not all fire, e.g. parameters unused by the loss keep a zero
        gradient), then pulls the parameters. True when the update went
        through; False when the step was lost (see the module's notes): a
        push or the pull after it failed (a failure of an overlapped pull,
        seen by the next forward, counts for the next step)."""
        self.steps += 1
        for layer in self._layers:
            if 0 < layer.ready < len(layer.params):
                self._push(layer)
            layer.ready = 0
        error = self._wait_pushes()
        self._wait_layers(self._layers)  # pulls no forward has waited for
        if error is None and self._pull_error is not None:
            error = self._pull_error  # the previous step's pull was lost
        self._pull_error = None
        pulled = self._start_pull()
        error = error or pulled
        if error is None:
            self.lost_in_a_row = 0
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
        Errors propagate."""
        self.synchronize()
        self._client.pull(self._named_data(),
                          timeout=self._timeout if timeout is None else timeout)

    def close(self):
        """Waits for transfers in flight, then removes the hooks."""
        try:
            self._wait_pushes()
            self._wait_pulls()
        finally:
            for h in self._hook_handles:
                h.remove()
            self._hook_handles = []
            self._accumulators = []

    # ---- internals --------------------------------------------------------

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
        by_param = {}
        for layer in self._layers:
            for p in layer.params:
                by_param[id(p)] = layer
        for module in model.modules():
            layers = []
            for p in module.parameters(recurse=False):
                layer = by_param.get(id(p))
                if layer is not None and layer not in layers:
                    layers.append(layer)
            if layers:
                self._hook_handles.append(module.register_forward_pre_hook(
                    lambda _m, _in, ls=tuple(layers): self._wait_layers(ls)))

    def _make_grad_hook(self, layer, name, param):
        buf = self._grads[name]

        def hook(_grad_inputs, _grad_outputs):
            if param.grad is not buf:  # autograd put the gradient elsewhere
                buf.copy_(param.grad)
                param.grad = buf
            layer.ready += 1
            if layer.ready == len(layer.params):
                self._push(layer)

        return hook

    def _push(self, layer):
        if self._push_error is not None:
            return  # this step is lost already
        try:
            handle = self._client.push(
                [(n, self._grads[n]) for n in layer.names],
                timeout=self._timeout)
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
        """One deadline for a group of waits, `timeout` from now: the
        handles of a step that waits on a dead pserver time out together
        (waited one by one with a timeout each, a step of k layers would
        take k timeouts)."""
        if self._timeout is None:
            return lambda: None  # the client's own deadlines
        deadline = time.monotonic() + self._timeout
        return lambda: max(0.0, deadline - time.monotonic())

    def _start_pull(self):
        """Pulls every parameter (without overlap) or starts the pulls;
        returns the transient error that stopped it."""
        if not self._overlap:
            try:
                self._client.pull(self._named_data(), timeout=self._timeout)
            except self._transient as e:
                return e
            return None
        for layer in self._layers:
            try:
                layer.pull = self._client.pull_async(
                    list(zip(layer.names, layer.params)),
                    timeout=self._timeout)
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
