"""The CTR example model in PyTorch: what examples/ctr/ctr_model.h computes,
written as a torch.nn.Module.

Each impression has F fields, each a 64-bit feature id; each id picks a
16-float row of the embedding table "emb"; the F rows, concatenated in
field order, go through
    x [B, F*16] -> fc1 (ReLU) [B, H] -> fc2 [B, 1] -> logit
and the loss is the mean logistic loss against the click labels.

The table is whatever embedding module is passed in: on the pservers,
fabps.torch.EmbeddingBag(client, "emb", 16, mode="sum"), one bag per
(example, field) (so the bags are the rows themselves, concatenated by a
view); in the tests, torch.nn.EmbeddingBag(rows, 16, mode="sum") as the
reference. The MLP's parameters have the names, shapes and row-major layout
the pservers hold for the C++ trainer:
    fc1.w [F*16, H]  fc1.b [H]  fc2.w [H, 1]  fc2.b [1]
(out = in @ w + b, w is [in, out]), so the two trainers can share a job.

Initial values, the same as the C++ trainer's for a seed:
  * init_ctr_mlp(seed, fields, hidden): InitCtrMlp (std::mt19937_64 and
    libstdc++'s std::normal_distribution<float>, reproduced bit for bit):
    fc1.w ~ N(0, 2 / (F*16)), fc2.w ~ N(0, 1 / H), zero biases.
  * init_embedding(seed, scale, rows, dim): InitEmbedding, the fixed
    table's values (splitmix64, uniform in [-scale, scale]).

Also the record format (docs/formats/ctr_record.md) and the test AUC
(examples/ctr/auc.cc).
"""

import ctypes
import ctypes.util
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

# The dense layer (w [in, out], the pservers' layout) and the copy of values
# into parameters are the Fashion-MNIST torch example's (beside this folder
# in the source tree and in the build).
sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                             "fashion_mnist_torch"))
from model import Dense, load_values  # noqa: E402

EMBEDDING_DIM = 16
EMBEDDING_NAME = "emb"
MAX_FIELDS = 64
# The C++ trainer's kEmbeddingInitScale: the fixed table's initial scale.
EMBEDDING_INIT_SCALE = 0.01

_M64 = (1 << 64) - 1


# ---- initial values ---------------------------------------------------------

class _Mt19937_64:
    """std::mt19937_64."""

    def __init__(self, seed):
        self.mt = [0] * 312
        self.mt[0] = seed & _M64
        for i in range(1, 312):
            prev = self.mt[i - 1]
            self.mt[i] = (6364136223846793005 * (prev ^ (prev >> 62)) + i) \
                & _M64
        self.i = 312

    def _twist(self):
        mt = self.mt
        for i in range(312):
            x = (mt[i] & 0xFFFFFFFF80000000) | (mt[(i + 1) % 312] & 0x7FFFFFFF)
            xa = x >> 1
            if x & 1:
                xa ^= 0xB5026F5AA96619E9
            mt[i] = mt[(i + 156) % 312] ^ xa
        self.i = 0

    def __call__(self):
        if self.i >= 312:
            self._twist()
        y = self.mt[self.i]
        self.i += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        return y & _M64


_libm = ctypes.CDLL(ctypes.util.find_library("m") or "libm.so.6")
_libm.logf.restype = ctypes.c_float
_libm.logf.argtypes = [ctypes.c_float]
_f32 = np.float32


def _to_float(x):
    """The float nearest the integer x < 2^64 (ties to even), as the
    conversion of a uint64_t to float rounds."""
    shift = x.bit_length() - 24
    if shift > 0:
        q, rem, half = x >> shift, x & ((1 << shift) - 1), 1 << (shift - 1)
        if rem > half or (rem == half and q & 1):
            q += 1
        x = q << shift
    return _f32(float(x))  # exact now


def _canonical_float(rng):
    """std::generate_canonical<float, 24>(mt19937_64) as libstdc++ 12 has
    it: one draw, converted to float, divided by 2^64; 1 becomes the float
    below 1."""
    r = _to_float(rng()) / _f32(2.0**64)
    return r if r < _f32(1) else np.nextafter(_f32(1), _f32(0))


class _NormalFloat:
    """libstdc++'s std::normal_distribution<float>: the Marsaglia polar
    method in float, the second value of each pair saved for the next
    call."""

    def __init__(self, mean, stddev):
        self.mean = _f32(mean)
        self.stddev = _f32(stddev)
        self.saved = None

    def __call__(self, rng):
        if self.saved is not None:
            ret, self.saved = self.saved, None
        else:
            while True:
                # float(2) * u in float, minus the double 1.0 in double,
                # stored as float.
                x = _f32(float(_f32(2) * _canonical_float(rng)) - 1.0)
                y = _f32(float(_f32(2) * _canonical_float(rng)) - 1.0)
                r2 = _f32(x * x + y * y)
                if not (r2 > 1 or r2 == 0):
                    break
            log_r2 = _f32(_libm.logf(float(r2)))
            mult = _f32(np.sqrt(_f32(_f32(_f32(-2) * log_r2) / r2)))
            self.saved = _f32(x * mult)
            ret = _f32(y * mult)
        return _f32(ret * self.stddev + self.mean)


MLP_NAMES = ("fc1.w", "fc1.b", "fc2.w", "fc2.b")


def mlp_shapes(fields, hidden):
    """{name: shape} of the MLP's tensors, in the pservers' order."""
    inputs = fields * EMBEDDING_DIM
    return {"fc1.w": (inputs, hidden), "fc1.b": (hidden,),
            "fc2.w": (hidden, 1), "fc2.b": (1,)}


def init_ctr_mlp(seed, fields, hidden):
    """{name: float32 array}: InitCtrMlp(seed) of the C++ example, bit for
    bit (fc1.w then fc2.w from one mt19937_64, each with its own
    normal_distribution<float>; zero biases)."""
    shapes = mlp_shapes(fields, hidden)
    inputs = fields * EMBEDDING_DIM
    rng = _Mt19937_64(seed)
    out = {}
    for name, std in (("fc1.w", np.sqrt(_f32(2) / _f32(inputs))),
                      ("fc2.w", np.sqrt(_f32(1) / _f32(hidden)))):
        dist = _NormalFloat(0, std)
        n = int(np.prod(shapes[name]))
        out[name] = np.array([dist(rng) for _ in range(n)],
                             np.float32).reshape(shapes[name])
    out["fc1.b"] = np.zeros(shapes["fc1.b"], np.float32)
    out["fc2.b"] = np.zeros(shapes["fc2.b"], np.float32)
    return {name: out[name] for name in MLP_NAMES}


def init_embedding(seed, scale, rows, dim=EMBEDDING_DIM, chunk=1 << 22):
    """[rows, dim] float32: InitEmbedding(seed, scale) of the C++ example
    (value k: splitmix64 output k + 1 of `seed`, 53 bits into [0, 1),
    (2u - 1) * scale in double, rounded to float)."""
    n = rows * dim
    out = np.empty(n, np.float32)
    gamma = np.uint64(0x9E3779B97F4A7C15)
    scale = float(np.float32(scale))  # a float constant in C++
    with np.errstate(over="ignore"):
        for start in range(0, n, chunk):
            k = np.arange(start + 1, min(n, start + chunk) + 1,
                          dtype=np.uint64)
            z = np.uint64(seed & _M64) + k * gamma
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z ^= z >> np.uint64(31)
            u = (z >> np.uint64(11)).astype(np.float64) * 2.0**-53
            out[start:start + k.size] = (2 * u - 1) * scale
    return out.reshape(rows, dim)


# ---- the module -------------------------------------------------------------

class CtrModel(torch.nn.Module):
    """The CTR model over an embedding-bag module `emb` (mode "sum", 16
    columns): forward(ids [B, F]) -> logits [B].

    `ids`: what `emb` takes as ids (for fabps.torch.EmbeddingBag a numpy
    uint64 array of raw feature ids, or int64 rows of a fixed table). Each
    (example, field) is one bag of one id, so the bags' sums are the rows,
    and [B*F, 16] viewed as [B, F*16] is the F rows concatenated."""

    def __init__(self, emb, fields, hidden):
        super().__init__()
        self.emb = emb
        self.fields = fields
        self.fc1 = Dense(fields * EMBEDDING_DIM, hidden)
        self.fc2 = Dense(hidden, 1)
        self._offsets = torch.zeros(0, dtype=torch.int64)

    def load_values(self, values):
        """Copies {name: array} (MLP_NAMES) into the parameters."""
        load_values(self, values)

    def offsets(self, bags):
        if self._offsets.numel() < bags:
            self._offsets = torch.arange(bags, dtype=torch.int64)
        return self._offsets[:bags]

    def prefetch(self, ids):
        """Starts reading the rows of the next forward's `ids`."""
        self.emb.prefetch(ids.reshape(-1))

    def forward(self, ids):
        b = ids.shape[0]
        flat = ids.reshape(-1)
        x = self.emb(flat, self.offsets(flat.shape[0]))
        x = x.view(b, self.fields * EMBEDDING_DIM)
        h = torch.relu(self.fc1(x))
        return self.fc2(h).view(b)


def loss_fn(logits, labels):
    """The mean logistic loss (labels 0/1 as float)."""
    return F.binary_cross_entropy_with_logits(logits, labels)


# ---- records and AUC ---------------------------------------------------------

def record_bytes(fields):
    return 2 + 8 * fields


def valid_record(record, fields):
    """ParseCtrRecord's checks: the length, a label of 0 or 1, F."""
    return (len(record) == 2 + 8 * fields and record[0] <= 1
            and record[1] == fields)


def parse_records(records, fields):
    """(ids uint64 [n, F], labels float32 [n]) of valid records (check them
    with valid_record first)."""
    n = len(records)
    raw = np.frombuffer(b"".join(records), np.uint8).reshape(
        n, record_bytes(fields))
    labels = raw[:, 0].astype(np.float32)
    ids = np.ascontiguousarray(raw[:, 2:]).view(np.dtype("<u8"))
    return ids.astype(np.uint64, copy=False).reshape(n, fields), labels


def auc(scores, labels):
    """The AUC of `scores` against 0/1 `labels` (Mann-Whitney, ties
    averaged), as examples/ctr/auc.cc; NaN without both classes."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels) != 0
    n = scores.size
    order = np.argsort(scores, kind="stable")
    s = scores[order]
    # Each run of equal scores gets the mean of its 1-based ranks.
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    ends = np.r_[starts[1:], n]
    mean_rank = (starts + 1 + ends) / 2.0
    ranks = np.repeat(mean_rank, ends - starts)
    pos = labels[order]
    p = int(pos.sum())
    q = n - p
    if p == 0 or q == 0:
        return math.nan
    return (ranks[pos].sum() - p * (p + 1) / 2) / (p * q)


def logistic_loss(logits, labels):
    """Mean of log(1 + exp(z)) - y z, in float64 (LogisticLoss)."""
    z = np.asarray(logits, np.float64)
    y = np.asarray(labels, np.float64)
    return float(np.mean(np.logaddexp(0.0, z) - y * z))
