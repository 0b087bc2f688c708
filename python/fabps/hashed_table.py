"""fabps.HashedTable: an embedding table keyed by 64-bit feature ids.

    table = fabps.HashedTable(dim=16, init="uniform", init_scale=0.01,
                              admit_after=2, ttl_seconds=3600)
    client.init_params({"emb": table, "fc.w": w})
    rows = np.zeros((ids.size, 16), np.float32)
    client.get_rows("emb", ids, rows)        # any uint64/int64 ids
    client.send_rows("emb", ids, grads).wait()

A hashed table has no row count: the pservers create a row when an id is
admitted (its `admit_after`-th push, then with `admit_probability`), drop
rows not updated for `ttl_seconds` and, past `budget_bytes` per pserver, the
least recently updated ones. A read of an id without a row returns its
initial row (zeros, or a draw from (seed, id) that every pserver computes
the same), and stores nothing. Ids are spread over `buckets` buckets, placed
on the pservers like blocks. The table's update rule is the client's rule
for its name (`rules`) or the default rule. Contracts:
protocol/hashed_table.h; counters: PServerClient.table_stats().
"""

__all__ = ["HashedTable"]

_INITS = ("zeros", "uniform", "normal")


class HashedTable:
    """The declaration of a hashed table, for PServerClient.init_params."""

    def __init__(self, dim, dtype="float32", buckets=64, init="zeros",
                 init_scale=0.01, seed=0, admit_after=1, admit_probability=1.0,
                 ttl_seconds=0, budget_bytes=0, ids=None, values=None):
        """`ids` and `values` (numpy arrays or torch CPU tensors): rows the
        table starts with, e.g. a model file's `<name>.ids` and
        `<name>.values`: distinct ids (any 64-bit integers) and their rows,
        `values.shape == (len(ids),) + row shape`; each is held (admitted)
        from the start. None: the table starts without rows."""
        shape = (dim,) if isinstance(dim, int) else tuple(dim)
        if not shape or any(not isinstance(d, int) or d < 1 for d in shape):
            raise ValueError(f"dim must be a positive int or a shape of them, "
                             f"not {dim!r}")
        dtype = getattr(dtype, "name", None) or str(dtype).replace(
            "torch.", "")
        if dtype not in ("float32", "float64"):
            raise TypeError(f"a hashed table is float32 or float64, not {dtype}")
        if init not in _INITS:
            raise ValueError(f"init must be one of {', '.join(_INITS)}, "
                             f"not {init!r}")
        self.row_shape = shape
        self.dtype = dtype
        self.buckets = int(buckets)
        self.init = init
        self.init_scale = float(init_scale)
        self.seed = int(seed)
        self.admit_after = int(admit_after)
        self.admit_probability = float(admit_probability)
        self.ttl_seconds = int(ttl_seconds)
        self.budget_bytes = int(budget_bytes)
        self._rows = self._starting_rows(ids, values)

    def _starting_rows(self, ids, values):
        """The rows' bytes as the pservers take them: the ids (uint64), then
        the values (protocol/id_rows.h)."""
        self._num_rows = 0
        if ids is None and values is None:
            return b""
        if ids is None or values is None:
            raise ValueError("ids and values go together")
        import numpy as np
        ids = np.asarray(ids.numpy() if hasattr(ids, "numpy") else ids)
        values = np.asarray(values.numpy() if hasattr(values, "numpy")
                            else values)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise TypeError(f"ids must be a 1-D array of integers, not "
                            f"{ids.dtype} of shape {ids.shape}")
        want = (ids.shape[0],) + self.row_shape
        if values.shape != want:
            raise ValueError(f"values must have shape {want} (len(ids) rows "
                             f"of the row shape), not {values.shape}")
        if values.dtype != np.dtype(self.dtype):
            raise TypeError(f"values must be {self.dtype}, not {values.dtype}")
        self._num_rows = ids.shape[0]  # distinct: checked by init_params
        return (ids.astype("<u8", copy=False).tobytes()
                + np.ascontiguousarray(values).tobytes())

    @property
    def rows(self):
        """Rows the table starts with."""
        return self._num_rows

    @property
    def dim(self):
        """Elements of one row."""
        n = 1
        for d in self.row_shape:
            n *= d
        return n

    def _send(self, core, name):
        core.init_table(name, self.dtype, list(self.row_shape), self.buckets,
                        self.init, self.init_scale, self.seed,
                        self.admit_after, self.admit_probability,
                        self.ttl_seconds, self.budget_bytes, self._rows)

    def __repr__(self):
        return (f"HashedTable(dim={self.row_shape}, dtype={self.dtype!r}, "
                f"buckets={self.buckets}, init={self.init!r}, "
                f"admit_after={self.admit_after}, "
                f"ttl_seconds={self.ttl_seconds}, "
                f"budget_bytes={self.budget_bytes}, rows={self.rows})")
