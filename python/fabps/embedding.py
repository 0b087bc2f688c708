"""fabps.torch.Embedding and fabps.torch.EmbeddingBag: torch.nn modules
whose table lives on the pservers.

    import fabps, fabps.torch
    emb = fabps.torch.EmbeddingBag(client, "emb", 16, mode="sum")
    for ids, offsets, y in batches:
        loss_fn(top(emb(ids, offsets)), y).backward()  # pushes emb's rows

The table is a parameter of shape [rows, embedding_dim] that the job
declares and initializes elsewhere, e.g. in the client.init_params call that
also initializes the dense parameters. The module holds no copy of the table
and no torch Parameter: model.parameters() does not list it, so neither a
torch optimizer nor fabps.torch.DistributedOptimizer sees it. The pservers
apply the table's update rule to the gradients the module pushes. The
module hands the ids to the client's get_rows and send_rows as they are:
the client decides which ids the table holds.

What happens when:
  * forward(ids): waits for the pushes of this module's earlier backwards,
    takes the batch's unique ids (sorted, with the inverse map), reads
    their rows with one get_rows call into a new leaf tensor (requires_grad
    when grad mode is on) and computes the output from it with torch's
    embedding ops on the remapped indices. Ids are not checked here: the
    client refuses ids the table does not hold (fabps.InvalidArgument, a
    ValueError naming the table), and nothing is read.
  * backward: a hook on the leaf receives the unique rows' gradient (the
    sum over every occurrence of an id in the batch) and starts one
    send_rows call with it (asynchronous; the gradient is copied before
    the call returns). The push overlaps the rest of backward; the next
    forward of the module (and wait()) waits for it.
  * Every backward pushes. Gradients are not accumulated in the module:
    k backwards before one optimizer step are k updates of the table (each
    applied by the pservers' rule), not one update of the summed gradient.
    A graph backpropagated twice (retain_graph=True) pushes twice. A module
    called k times in one forward pulls k times and pushes k gradients.
  * prefetch(next_ids): starts reading the rows of the next batch's unique
    ids now (get_rows_async); forward(ids) with the same ids (same values,
    compared element by element; the shape may differ) uses them instead of
    reading, otherwise it reads afresh and drops the prefetch. The prefetch
    does not wait for this module's pushes: it sees the pushes waited for
    before it was called, maybe some still in flight, and none issued after
    it. Called after backward and wait() it reads exactly what forward would;
    called earlier (after forward, to overlap backward and the optimizer
    step) the rows the current batch updates are one update stale, the
    staleness of asynchronous parameter-server training.

Errors of a transfer (fabps.Unavailable, fabps.TimedOut, ...) raise from
the call that waits for it: forward (its pull and the pushes it waits for),
wait(), or backward when a push cannot start.

Ids are a CPU torch.Tensor of torch.int64 or torch.int32, or a numpy array
of int64, int32 or uint64 (torch has no uint64); they go to the client as
int64 (uint64 from a uint64 array). The output is a CPU tensor of the
module's dtype: move it to a device after the module.

Memory: each forward reads into a new tensor of [unique ids, embedding_dim];
the client registers it for the transfer and forgets the registration when
the tensor dies (with the autograd graph).

Threads: one thread (the training loop's) calls forward, prefetch and wait
and runs backward (CPU autograd runs the hooks on the thread that calls
backward). The client may be shared with a DistributedOptimizer used on the
same thread.
"""

import numpy as np
import torch
import torch.nn.functional as F

_TORCH_ID_TYPES = (torch.int64, torch.int32)
_NUMPY_ID_TYPES = (np.dtype(np.int64), np.dtype(np.int32),
                   np.dtype(np.uint64))
_MODES = ("sum", "mean", "max")


def _flat_ids(who, ids, what="ids"):
    """(flat numpy int64 or uint64 ids, shape) of a tensor or array of ids;
    TypeError for a wrong type, ValueError for a non-CPU tensor."""
    if isinstance(ids, torch.Tensor):
        if ids.device.type != "cpu":
            raise ValueError(
                f"{who}: {what} are on {ids.device}; the table's rows come "
                f"to CPU memory, so pass CPU {what} ({what}.cpu())")
        if ids.dtype not in _TORCH_ID_TYPES:
            raise TypeError(
                f"{who}: expected {what} of type torch.int64 or torch.int32 "
                f"(Long, Int), got {ids.dtype}")
        flat = ids.detach().reshape(-1).numpy()
    elif isinstance(ids, np.ndarray):
        if ids.dtype not in _NUMPY_ID_TYPES:
            raise TypeError(
                f"{who}: expected {what} of dtype int64, int32 or uint64, "
                f"got a numpy array of {ids.dtype}")
        flat = ids.reshape(-1)
    else:
        raise TypeError(
            f"{who}: expected {what} as a torch.Tensor (int64 or int32) or a "
            f"numpy array (int64, int32 or uint64), got "
            f"{type(ids).__name__}")
    if flat.dtype == np.int32:
        flat = flat.astype(np.int64)
    return flat, tuple(ids.shape)


class _Prefetch:
    """A pull started by prefetch(): the ids it is for and its result."""

    __slots__ = ("ids", "unique", "inverse", "rows", "handle")

    def __init__(self, ids, unique, inverse, rows, handle):
        self.ids = ids
        self.unique = unique
        self.inverse = inverse
        self.rows = rows
        self.handle = handle

    def matches(self, ids):
        return (self.ids.dtype == ids.dtype and self.ids.shape == ids.shape
                and np.array_equal(self.ids, ids))


class _PServerTable(torch.nn.Module):
    """What Embedding and EmbeddingBag share: the pull of a batch's unique
    rows, the push of their gradient, prefetch and wait."""

    def __init__(self, client, name, embedding_dim, dtype, timeout):
        super().__init__()
        if not isinstance(name, str) or not name:
            raise TypeError(f"{type(self).__name__}: the table's name must "
                            f"be a non-empty str, got {name!r}")
        if int(embedding_dim) != embedding_dim or embedding_dim <= 0:
            raise ValueError(f"{type(self).__name__}: embedding_dim must be "
                             f"a positive int, got {embedding_dim!r}")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"{type(self).__name__}: dtype must be a "
                            f"floating-point torch.dtype, got {dtype!r}")
        self.client = client
        self.name = name
        self.embedding_dim = int(embedding_dim)
        self.dtype = dtype
        self.timeout = timeout
        self._pushes = []  # handles of the pushes not waited for yet
        self._prefetch = None

    # ---- public --------------------------------------------------------

    def prefetch(self, ids):
        """Starts reading the rows of `ids` (the next forward's ids; for
        EmbeddingBag its input) so that the read overlaps this step's
        compute. A forward with the same ids uses these rows; see the
        module's notes for what they include. A second prefetch replaces
        the first."""
        flat, _shape = _flat_ids(f"{type(self).__name__}.prefetch", ids)
        self._prefetch = None
        unique, inverse, rows, handle = self._start_pull(flat)
        self._prefetch = _Prefetch(flat.copy(), unique, inverse, rows,
                                   handle)

    def wait(self):
        """Waits until every push of this module's backwards is applied on
        the pservers (a pull after it sees them). Raises the first push's
        error; every push is waited for either way."""
        pushes, self._pushes = self._pushes, []
        error = None
        for handle in pushes:
            try:
                handle.wait(self.timeout)
            except Exception as e:  # the first error, after waiting all
                error = error or e
        if error is not None:
            raise error

    # ---- internals -------------------------------------------------------

    def _start_pull(self, flat):
        """(unique ids, inverse as an int64 tensor, rows, handle or None):
        starts the read of the unique ids' rows into a new tensor."""
        unique, inverse = np.unique(flat, return_inverse=True)
        inverse = torch.from_numpy(inverse.astype(np.int64, copy=False))
        rows = torch.empty((unique.size, self.embedding_dim),
                           dtype=self.dtype)
        handle = None
        if unique.size:
            handle = self.client.get_rows_async(self.name, unique, rows,
                                                timeout=self.timeout)
        return unique, inverse, rows, handle

    def _rows(self, flat):
        """(rows, inverse) for the flat ids of a forward: rows [unique ids,
        dim] read from the pservers (or the matching prefetch), a leaf whose
        gradient is pushed in backward when grad mode is on; inverse maps
        each id to its row."""
        self.wait()
        prefetched, self._prefetch = self._prefetch, None
        if prefetched is not None and prefetched.matches(flat):
            unique, inverse, rows, handle = (
                prefetched.unique, prefetched.inverse, prefetched.rows,
                prefetched.handle)
        else:
            unique, inverse, rows, handle = self._start_pull(flat)
        if handle is not None:
            handle.wait(self.timeout)
        if torch.is_grad_enabled():
            rows.requires_grad_()
            rows.register_hook(lambda grad: self._push(unique, grad))
        return rows, inverse

    def _push(self, unique, grad):
        if unique.size == 0:
            return
        self._pushes.append(self.client.send_rows(
            self.name, unique, grad.detach().contiguous(),
            timeout=self.timeout))


class Embedding(_PServerTable):
    """torch.nn.Embedding over a table on the pservers.

    Args:
      client: the fabps.PServerClient of the job (used from one thread).
      name: the table's parameter name on the pservers ([rows,
        embedding_dim], initialized by the job).
      embedding_dim: the row width.
      dtype: the table's element type (float32 for a float32 table).
      timeout: seconds for each pull and push (None: the client's
        DEFAULT_TIMEOUT).

    forward(ids): ids of any shape (a CPU int64/int32 tensor or an
    int64/int32/uint64 numpy array) -> a tensor of shape ids.shape +
    (embedding_dim,), row ids[i] of the table at position i. backward
    pushes the gradient of the rows used (see the module's notes).
    """

    def __init__(self, client, name, embedding_dim, dtype=torch.float32,
                 timeout=None):
        super().__init__(client, name, embedding_dim, dtype, timeout)

    def forward(self, ids):
        flat, shape = _flat_ids("Embedding", ids)
        rows, inverse = self._rows(flat)
        return F.embedding(inverse, rows).view(*shape, self.embedding_dim)

    def extra_repr(self):
        return f"{self.name!r}, {self.embedding_dim}, dtype={self.dtype}"


class EmbeddingBag(_PServerTable):
    """torch.nn.EmbeddingBag over a table on the pservers: sums, means or
    maxima of bags of rows, without the per-id output.

    Args:
      client, name, embedding_dim, dtype, timeout: as for Embedding.
      mode: "sum", "mean" or "max" (per bag).
      include_last_offset: offsets has one more entry, the end of the last
        bag (the CSR convention), as in torch.nn.EmbeddingBag.

    forward(input, offsets=None, per_sample_weights=None):
      * input 2-D [B, N]: B bags of N ids each; offsets must be None.
      * input 1-D: the bags' ids one after the other; offsets (1-D int64 or
        int32) the start of each bag (offsets[0] == 0); a bag with no ids
        gives zeros.
      * per_sample_weights (mode "sum" only): one weight per id, the shape
        of input, the table's dtype; each row is scaled by its weight.
    Returns [B, embedding_dim]. backward pushes the gradient of the rows
    used (see the module's notes).
    """

    def __init__(self, client, name, embedding_dim, mode="mean",
                 dtype=torch.float32, include_last_offset=False,
                 timeout=None):
        super().__init__(client, name, embedding_dim, dtype, timeout)
        if mode not in _MODES:
            raise ValueError(f"EmbeddingBag: mode must be one of {_MODES}, "
                             f"got {mode!r}")
        self.mode = mode
        self.include_last_offset = bool(include_last_offset)

    def forward(self, input, offsets=None, per_sample_weights=None):
        flat, shape = _flat_ids("EmbeddingBag", input, "input")
        if len(shape) == 2:
            if offsets is not None:
                raise ValueError(
                    "EmbeddingBag: offsets has to be None if input is 2-D "
                    "(each row of input is one bag)")
        elif len(shape) == 1:
            if offsets is None:
                raise ValueError(
                    "EmbeddingBag: offsets has to be a 1-D tensor when "
                    "input is 1-D, got None")
            offsets = self._offsets(offsets)
        else:
            raise ValueError(f"EmbeddingBag: input has to be 1-D or 2-D, "
                             f"got a {len(shape)}-D input")
        if per_sample_weights is not None:
            self._check_weights(per_sample_weights, shape)
        rows, inverse = self._rows(flat)
        return F.embedding_bag(
            inverse.view(shape), rows, offsets, mode=self.mode,
            per_sample_weights=per_sample_weights,
            include_last_offset=self.include_last_offset)

    @staticmethod
    def _offsets(offsets):
        if isinstance(offsets, np.ndarray):
            offsets = torch.from_numpy(offsets)
        if not isinstance(offsets, torch.Tensor):
            raise TypeError(f"EmbeddingBag: offsets must be a tensor, got "
                            f"{type(offsets).__name__}")
        if offsets.device.type != "cpu":
            raise ValueError(f"EmbeddingBag: offsets are on "
                             f"{offsets.device}; pass CPU offsets")
        if offsets.dtype not in _TORCH_ID_TYPES:
            raise TypeError(f"EmbeddingBag: expected offsets of type "
                            f"torch.int64 or torch.int32, got {offsets.dtype}")
        if offsets.dim() != 1:
            raise ValueError(f"EmbeddingBag: offsets has to be a 1-D tensor, "
                             f"got {offsets.dim()}-D")
        return offsets.to(torch.int64)

    def _check_weights(self, weights, shape):
        if self.mode != "sum":
            raise ValueError(
                f"EmbeddingBag: per_sample_weights is only supported for "
                f"mode='sum' (got mode={self.mode!r})")
        if not isinstance(weights, torch.Tensor):
            raise TypeError(f"EmbeddingBag: per_sample_weights must be a "
                            f"tensor, got {type(weights).__name__}")
        if weights.device.type != "cpu":
            raise ValueError(f"EmbeddingBag: per_sample_weights are on "
                             f"{weights.device}; pass CPU weights")
        if tuple(weights.shape) != shape:
            raise ValueError(
                f"EmbeddingBag: per_sample_weights must have the shape of "
                f"input {list(shape)}, got {list(weights.shape)}")
        if weights.dtype != self.dtype:
            raise TypeError(f"EmbeddingBag: per_sample_weights must be "
                            f"{self.dtype} (the table's dtype), got "
                            f"{weights.dtype}")

    def extra_repr(self):
        return (f"{self.name!r}, {self.embedding_dim}, mode={self.mode!r}, "
                f"dtype={self.dtype}"
                + (", include_last_offset=True"
                   if self.include_last_offset else ""))
