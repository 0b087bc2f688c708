"""The Fashion-MNIST example model as a torch.nn.Module.

The same multilayer perceptron as the C++ example (examples/fashion_mnist/
mlp.h): 784-256-128-10, ReLU after the two hidden layers, softmax
cross-entropy on the 10 logits averaged over the batch.

Its parameters have the names, shapes and row-major layout the pservers hold
for the C++ trainer, so the two trainers can share one job:
  fc1.w [784, 256]  fc1.b [256]
  fc2.w [256, 128]  fc2.b [128]
  fc3.w [128, 10]   fc3.b [10]
A layer computes out = in @ w + b (w is [in, out], not torch.nn.Linear's
[out, in]).

`init_mlp_params(seed)` gives the values InitMlpParams(seed) gives in C++ (the
same splitmix64 sequence, Box-Muller normals), so a job started by either
trainer begins from the same point.
"""

import math

import numpy as np
import torch

PIXELS = 784
HIDDEN1 = 256
HIDDEN2 = 128
CLASSES = 10

# (name, rows, cols) in pserver order; cols 0: a vector of `rows` elements.
TENSOR_SHAPES = (
    ("fc1.w", PIXELS, HIDDEN1),
    ("fc1.b", HIDDEN1, 0),
    ("fc2.w", HIDDEN1, HIDDEN2),
    ("fc2.b", HIDDEN2, 0),
    ("fc3.w", HIDDEN2, CLASSES),
    ("fc3.b", CLASSES, 0),
)

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


class _SplitMix64:
    """splitmix64 as in examples/fashion_mnist/mlp.cc, n outputs at a time.

    Output k of a generator seeded s is mix(s + (k + 1) * gamma), so a block
    of outputs is computed at once with wrapping uint64 arithmetic.
    """

    def __init__(self, seed):
        self._state = seed & _MASK

    def next_block(self, n):
        k = np.arange(1, n + 1, dtype=np.uint64)
        with np.errstate(over="ignore"):
            z = np.uint64(self._state) + k * np.uint64(_GAMMA)
            z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
            z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
            z = z ^ (z >> np.uint64(31))
        self._state = (self._state + n * _GAMMA) & _MASK
        return z

    def uniform(self, n):
        """n values in (0, 1): 53 random bits, never exactly 0."""
        bits = self.next_block(n) >> np.uint64(11)
        return (bits.astype(np.float64) + 0.5) * 2.0**-53


def init_mlp_params(seed):
    """{name: float32 numpy array of its shape}: He-normal weights for the two
    ReLU layers, Glorot-uniform for the output layer, zero biases."""
    rng = _SplitMix64(seed)
    out = {}
    for i, (name, rows, cols) in enumerate(TENSOR_SHAPES):
        if cols == 0:
            out[name] = np.zeros(rows, dtype=np.float32)
            continue
        n = rows * cols
        if i == len(TENSOR_SHAPES) - 2:  # the output layer
            limit = math.sqrt(6.0 / (rows + cols))
            v = (2.0 * rng.uniform(n) - 1.0) * limit
        else:
            # Normal() draws u1 then u2 for each value: pairs in order.
            u = rng.uniform(2 * n)
            u1, u2 = u[0::2], u[1::2]
            v = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)
            v *= math.sqrt(2.0 / rows)
        out[name] = v.astype(np.float32).reshape(rows, cols)
    return out


class Dense(torch.nn.Module):
    """out = in @ w + b with w [in, out]: the pservers' layout."""

    def __init__(self, fan_in, fan_out):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(fan_in, fan_out))
        self.b = torch.nn.Parameter(torch.zeros(fan_out))

    def forward(self, x):
        return torch.addmm(self.b, x, self.w)


def load_values(module, values):
    """Copies {name: array} into `module`'s parameters of those names."""
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, v in values.items():
            params[name].copy_(torch.from_numpy(np.asarray(v)))


class Mlp(torch.nn.Module):
    """784-256-128-10 with ReLU; forward returns the logits."""

    def __init__(self, seed=None):
        super().__init__()
        self.fc1 = Dense(PIXELS, HIDDEN1)
        self.fc2 = Dense(HIDDEN1, HIDDEN2)
        self.fc3 = Dense(HIDDEN2, CLASSES)
        if seed is not None:
            self.load_values(init_mlp_params(seed))

    def load_values(self, values):
        """Copies {name: array} into the parameters (names as above)."""
        load_values(self, values)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = torch.relu(self.fc2(h))
        return self.fc3(h)


def loss_fn(logits, labels):
    """Mean softmax cross-entropy, as the C++ model's LossAndGradients."""
    return torch.nn.functional.cross_entropy(logits, labels)


@torch.no_grad()
def evaluate(model, x, labels, batch=1000):
    """(accuracy, mean cross-entropy) of `model` on all of x [n, 784]."""
    n = x.shape[0]
    correct = 0
    loss = 0.0
    for start in range(0, n, batch):
        logits = model(x[start:start + batch])
        y = labels[start:start + batch]
        loss += torch.nn.functional.cross_entropy(
            logits, y, reduction="sum").item()
        correct += (logits.argmax(dim=1) == y).sum().item()
    return correct / n, loss / n
