"""fabps.PServerClient: push gradients to and pull parameters from the
pservers of a job, zero copy, from numpy arrays or torch CPU tensors.

The C++ trainer::PServerClient (trainer/pserver_client.h) does the work;
this layer turns the caller's objects into numpy views of their memory and
tells the C++ client when registered memory goes away.
"""

import time
import weakref

import numpy as np

from . import _core
from .errors import InvalidArgument
from .hashed_table import HashedTable

# Seconds a data call (push, pull, wait) waits when given timeout=None.
DEFAULT_TIMEOUT = 60.0
# Seconds save_model waits when given timeout=None.
DEFAULT_SAVE_TIMEOUT = 600.0


def _pairs(named):
    """(name, buffer) pairs of a dict or a sequence of pairs, in order."""
    items = named.items() if hasattr(named, "items") else named
    out = []
    for item in items:
        try:
            name, obj = item
        except (TypeError, ValueError):
            raise InvalidArgument(
                "expected a dict name -> buffer or (name, buffer) pairs, got "
                f"{item!r}") from None
        if not isinstance(name, str):
            raise InvalidArgument(f"parameter name {name!r} is not a str")
        out.append((name, obj))
    return out


def _is_torch_tensor(obj):
    return type(obj).__module__.startswith("torch") and hasattr(obj, "detach")


def _as_array(name, obj):
    """A numpy array sharing `obj`'s memory (never a copy)."""
    if isinstance(obj, np.ndarray):
        return obj
    if _is_torch_tensor(obj):
        if obj.device.type != "cpu":
            raise InvalidArgument(
                f"parameter '{name}': the tensor is on {obj.device}; fabps "
                "moves CPU memory (use a CPU tensor)")
        try:
            return obj.detach().numpy()  # shares the tensor's memory
        except (TypeError, RuntimeError) as e:
            raise InvalidArgument(f"parameter '{name}': {e}") from None
    if hasattr(obj, "__array_interface__"):
        return np.asarray(obj)
    try:
        view = memoryview(obj)
    except TypeError:
        raise InvalidArgument(
            f"parameter '{name}': a {type(obj).__name__} is not a buffer "
            "(pass a numpy array, a torch CPU tensor or an object with the "
            "buffer protocol)") from None
    return np.asarray(view)


def _owner(arr, given=None):
    """The object whose death frees `arr`'s memory, as far as we can tell.

    `given`: what the caller passed, when `arr` was made from it. A torch
    tensor's numpy view has for base a tensor made by detach() for that one
    call, which dies with the call: its death would forget the registration
    at once and every transfer would register its memory anew. The tensor
    the caller passed (a Parameter, a gradient buffer) holds the storage as
    long as it lives, so it is the one to watch."""
    o = given if given is not None and _is_torch_tensor(given) else arr
    while True:
        if isinstance(o, np.ndarray) and o.base is not None:
            o = o.base
        elif isinstance(o, memoryview) and o.obj is not None:
            o = o.obj
        elif _is_torch_tensor(o) and getattr(o, "_base", None) is not None:
            o = o._base
        else:
            return o


class _Registrations:
    """The memory ranges the C++ client may hold registered, by owner.

    The C++ client caches the registration of every buffer by address
    (transport/registration_cache.h); memory freed and handed out again at
    the same address must not find the old registration. Each owner of
    transferred memory is watched with a weak reference: when it dies its
    ranges are queued for ForgetBuffer, which the C++ side applies before its
    next call. Owners that cannot be watched (bytearray, bytes) give
    transient ranges, forgotten when their transfer is over.
    """

    def __init__(self, core):
        self._core = weakref.ref(core)
        self._owners = {}  # id(owner) -> (weakref, set of (ptr, bytes))

    def track(self, arr, given=None):
        """(ptr, bytes) of `arr` (made from `given`, see _owner); None when
        its owner is watched now."""
        ptr = arr.__array_interface__["data"][0]
        rng = (ptr, arr.nbytes)
        owner = _owner(arr, given)
        entry = self._owners.get(id(owner))
        if entry is not None and entry[0]() is owner:
            entry[1].add(rng)
            return None
        key = id(owner)
        try:
            ref = weakref.ref(owner, lambda _r, key=key: self._gone(key))
        except TypeError:
            return rng
        self._owners[key] = (ref, {rng})
        return None

    def _gone(self, key):
        entry = self._owners.pop(key, None)
        core = self._core()
        if entry is None or core is None:
            return
        for ptr, n in entry[1]:
            core.forget(ptr, n)


class Handle:
    """A push or pull in flight. It holds the buffers until it is over."""

    __slots__ = ("_h",)

    def __init__(self, h):
        self._h = h

    def wait(self, timeout=None):
        """Waits until every block is applied (push) or read (pull).

        Raises the transfer's error (fabps.TimedOut after `timeout` seconds,
        default DEFAULT_TIMEOUT; fabps.Unavailable for a dead pserver), or
        KeyboardInterrupt on Ctrl-C (the transfer goes on; its buffers stay
        held until it is over). Waiting again returns the same result.
        """
        self._h.wait(DEFAULT_TIMEOUT if timeout is None else float(timeout))

    def done(self):
        """True when wait() would return at once (never blocks)."""
        return self._h.done()


class PServerClient:
    """A trainer's client of the pservers of a job.

    Finds the pservers by `addresses` (["host:port", ...] or "h:p,h:p", in
    pserver index order) or, when None, through the coordination store
    `store` ("local:/dir" or "etcd:http://h:p") of `job`. `provider` is the
    fabric provider ("auto", "tcp;ofi_rxm", "shm", "verbs;ofi_rxm"), the
    same as the pservers'. `rule` is the fabps.Rule of every parameter,
    `rules` a dict name -> fabps.Rule of exceptions; both, like
    `block_elements`, count only when this trainer initializes the job.
    `trainer_id` 0 picks a random id. `rpc_timeout_ms` bounds each control
    RPC, `init_wait_ms` the init election and finding the pservers.

    Buffers are numpy arrays, torch CPU tensors or buffer-protocol objects,
    used in place (never copied): C-contiguous, of the parameter's dtype
    (float32 for a float32 parameter) and element count, else
    fabps.InvalidArgument (a ValueError) naming the parameter; an unknown
    name is fabps.NotFound. `named` arguments are a dict name -> buffer or a
    list of (name, buffer) pairs.

    Timeouts are seconds; None means DEFAULT_TIMEOUT (60 s) for data calls
    and waits, init_wait_ms for init_params and DEFAULT_SAVE_TIMEOUT
    (600 s) for save_model. Every wait releases the GIL and wakes for
    Ctrl-C (KeyboardInterrupt) within a fraction of a second. A pserver
    that is dead, restarting or frozen raises a fabps.PeerError; after
    it the next call reconnects.
    """

    def __init__(self, store=None, job="default", addresses=None,
                 provider="auto", interface="", trainer_id=0, rule=None,
                 rules=None, rpc_timeout_ms=10000, init_wait_ms=120000,
                 block_elements=None):
        if isinstance(addresses, str):
            addresses = [a.strip() for a in addresses.split(",") if a.strip()]
        self._init_wait_s = init_wait_ms / 1000.0
        self._rule = rule if rule is not None else _core.Rule()
        self._rules = dict(rules or {})
        self._c = _core.PServerClient(
            store, job, list(addresses or []), provider, interface,
            int(trainer_id), rule, dict(rules or {}), int(rpc_timeout_ms),
            int(init_wait_ms), block_elements)
        self._regs = _Registrations(self._c)

    # --- initialization ----------------------------------------------------

    def init_params(self, named, timeout=None):
        """Initializes the job's parameters or learns them.

        The init election decides: the winner sends `named` (their order is
        the layout's order) and gets True; every other trainer gets False
        after the current values were pulled into its buffers. `timeout`
        None: init_wait_ms.
        """
        pairs = _pairs(named)
        tables = [(n, o) for n, o in pairs if isinstance(o, HashedTable)]
        dense = [(n, o) for n, o in pairs if not isinstance(o, HashedTable)]
        if self._c.begin_init(timeout):
            for name, obj in pairs:
                if isinstance(obj, HashedTable):
                    obj._send(self._c, name)
                else:
                    self._c.init_param(name, _as_array(name, obj))
            self._c.finish_init(timeout)
            return True
        if dense:
            self.pull(dense, self._init_wait_s if timeout is None else timeout)
        elif tables:
            self.table_stats(self._init_wait_s if timeout is None else timeout)
        return False

    def table_stats(self, timeout=None):
        """Every pserver's hashed tables: a list of dicts (name, pserver,
        rows, bytes, bytes_per_row, admitted, evicted_ttl, evicted_budget,
        not_admitted), one per table per pserver. Waits for
        initialization."""
        return self._c.table_stats(
            self._init_wait_s if timeout is None else float(timeout))

    # --- data path ---------------------------------------------------------

    def _items(self, named, transient):
        """(pairs, items): the (name, buffer) pairs of `named` and the
        arrays that view them; registered ranges go to `transient`."""
        pairs = _pairs(named)
        items = []
        for name, obj in pairs:
            arr = _as_array(name, obj)
            items.append((name, arr))
            rng = self._regs.track(arr, obj)
            if rng is not None:
                transient.append(rng)
        return pairs, items

    def _start(self, named, timeout, pull, step=None):
        transient = []
        pairs, items = self._items(named, transient)
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        return Handle(self._c.start(items, (pairs, items), transient, timeout,
                                    pull, step))

    def push_pull(self, named_grads, named_params, timeout=None):
        """Pushes gradients and reads parameters back in one transfer:
        each block of a parameter named in both is read as soon as its push
        is applied, while later blocks are still pushed. Returns a Handle;
        when wait() returns every push is applied and every buffer of
        `named_params` holds values that include it. Async pservers only.
        Neither set of buffers may change until wait() returns."""
        transient = []
        grads = self._items(named_grads, transient)
        params = self._items(named_params, transient)
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        return Handle(self._c.start_push_pull(grads[1], params[1],
                                              (grads, params), transient,
                                              timeout))

    def push(self, named_grads, timeout=None, step=None):
        """Starts pushing gradients; returns a Handle (wait() = applied).

        With pservers in sync mode (fabps-pserver --mode sync, docs/sync.md)
        `step` is required: the pservers sum the gradients of all trainers
        for that step and apply the sum once; wait() returns when the step is
        applied, so a pull after it sees exactly that update."""
        return self._start(named_grads, timeout, False, step)

    def sync_step(self, timeout=None):
        """Sync mode: the step to push next when (re)joining a job (the
        largest step of any block on any pserver)."""
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        return self._c.sync_step(timeout)

    def pull_async(self, named, timeout=None):
        """Starts reading the parameters into the buffers; returns a Handle
        (the buffers hold the values when wait() returns)."""
        return self._start(named, timeout, True)

    def pull(self, named, timeout=None):
        """Reads the current values into the buffers (in place)."""
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        start = time.monotonic()
        h = self.pull_async(named, timeout)
        h.wait(max(0.0, timeout - (time.monotonic() - start)))

    # --- rows of a table (a parameter of rank >= 2) -------------------------

    def _rows(self, name, ids, values, timeout, pull, step=None):
        if not isinstance(name, str):
            raise InvalidArgument(f"parameter name {name!r} is not a str")
        if isinstance(ids, (list, tuple, range)):
            ids = np.asarray(ids, dtype=np.int64)
        id_arr = _as_array(name, ids)
        val_arr = _as_array(name, values)
        transient = []
        if pull:  # read by RMA into val_arr: registered, so tracked
            rng = self._regs.track(val_arr, values)
            if rng is not None:
                transient.append(rng)
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        return Handle(self._c.start_rows(
            name, id_arr, val_arr, (ids, values, id_arr, val_arr), transient,
            timeout, pull, step))

    def send_rows(self, name, ids, values, timeout=None, step=None):
        """Starts pushing row gradients of table `name` (a parameter of
        shape [rows, d1, ...]); returns a Handle (wait() = applied).

        `ids`: int64 or uint64 row ids (any order, repeats summed; a list is
        converted); `values`: the parameter's dtype, len(ids) * d1 * ...
        elements (e.g. shape [len(ids), d1]), row k's for ids[k]. Each row
        is updated by the parameter's rule as if the sum were its gradient,
        no other row is touched. `values` is copied before this returns.
        Bad dtypes or sizes: fabps.InvalidArgument naming the parameter; an
        id outside [0, rows): fabps.InvalidArgument, nothing sent.

        Sync mode (pservers started with --mode sync, docs/sync.md): `step`
        is required, as for push(): the pservers sum the rows of all
        trainers for that step and apply them once; every block of the
        table gets this trainer's share (an empty one where no id falls, so
        `ids` may be empty); wait() returns when the step is applied.
        """
        return self._rows(name, ids, values, timeout, False, step)

    def get_rows_async(self, name, ids, out, timeout=None):
        """Starts reading rows `ids` of table `name` into `out` (in place,
        checked like send_rows' values, writable); returns a Handle (`out`
        holds row ids[k] at position k when wait() returns)."""
        return self._rows(name, ids, out, timeout, True)

    def get_rows(self, name, ids, out, timeout=None):
        """Reads rows `ids` of table `name` into `out` (see get_rows_async)."""
        timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        start = time.monotonic()
        h = self.get_rows_async(name, ids, out, timeout)
        h.wait(max(0.0, timeout - (time.monotonic() - start)))

    def save_model(self, path, timeout=None):
        """Every pserver checkpoints its shard into directory `path` (on the
        pservers' machines)."""
        self._c.save_model(
            str(path), DEFAULT_SAVE_TIMEOUT if timeout is None else timeout)

    def set_learning_rates(self, rates, timeout=None):
        """Sets the learning rate of each named parameter (a dict name ->
        rate) on every pserver, for every later update of it; a pserver
        restarted from its checkpoints keeps it. fabps.InvalidArgument for a
        rate that is not finite and >= 0, fabps.NotFound for an unknown name
        (nothing sent), fabps.FailedPrecondition for a parameter whose rule
        has the linear_decay schedule; each names the parameter. Sending
        the same rates again after a failure is harmless."""
        self._c.set_learning_rates(
            {str(n): float(lr) for n, lr in dict(rates).items()},
            DEFAULT_TIMEOUT if timeout is None else timeout)

    def rule_for(self, name):
        """The fabps.Rule this client initializes parameter `name` with
        (`rules[name]`, else `rule`); the pservers apply it if this client
        or one configured alike initialized the job (see rules())."""
        return self._rules.get(name, self._rule)

    def rules(self, timeout=None):
        """Every parameter's fabps.Rule (a dict by name) as the pservers
        apply it now, rates set by set_learning_rates included. Waits for
        the parameters to exist."""
        return self._c.rules(DEFAULT_TIMEOUT if timeout is None else timeout)

    # --- the rest ----------------------------------------------------------

    @property
    def trainer_id(self):
        return self._c.trainer_id

    @property
    def provider(self):
        """The fabric provider in use (what "auto" chose)."""
        return self._c.provider

    def registration_stats(self):
        """The C++ registration cache: hits, misses, entries, bytes."""
        return self._c.registration_stats()

    def close(self):
        """Closes the client; transfers not waited for end (their buffers
        are let go). Calls after close raise fabps.FailedPrecondition.

        Returns at once if a call interrupted by Ctrl-C is still running:
        it finishes in the background within its timeout and the client is
        destroyed after it (its transfers' buffers are then kept forever)."""
        self._c.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self._c.closed else self.provider
        return f"<fabps.PServerClient trainer {self.trainer_id} {state}>"
