"""Fashion-MNIST data for the torch example.

Records as written by fabps-convert-fashion-mnist (examples/fashion_mnist/
fashion_data.h): 1 label byte (0..9) then 784 pixel bytes, row-major 28x28.
Pixels are scaled to [0, 1] as the C++ ParseRecord does. A record of the
wrong length or with a label above 9 is counted and skipped, never trusted.

Also reads the Debian package's IDX files directly (for the DDP reference of
bench/, which has no master to hand out records).
"""

import gzip
import struct

import numpy as np
import torch

from model import CLASSES, PIXELS

RECORD_BYTES = 1 + PIXELS
IDX_DIR = "/usr/share/datasets/fashion-mnist"


class BatchBuilder:
    """Collects well-formed records into one [batch, 784] float tensor.

    add() returns True when the batch is full; take() returns (x, labels) of
    the records collected so far (x and labels reused between batches: use
    them before the next add) and starts a new batch.
    """

    def __init__(self, batch):
        self.batch = batch
        self._raw = np.empty((batch, RECORD_BYTES), dtype=np.uint8)
        self._x = torch.empty(batch, PIXELS)
        self._labels = torch.empty(batch, dtype=torch.int64)
        self.rows = 0
        self.bad_records = 0

    def add(self, record):
        """Appends `record` (bytes) if well formed; counts it otherwise."""
        if len(record) != RECORD_BYTES or record[0] >= CLASSES:
            self.bad_records += 1
            return False
        self._raw[self.rows] = np.frombuffer(record, dtype=np.uint8)
        self.rows += 1
        return self.rows == self.batch

    def take(self):
        n = self.rows
        raw = torch.from_numpy(self._raw[:n])
        x = self._x[:n]
        torch.mul(raw[:, 1:], 1.0 / 255.0, out=x)
        labels = self._labels[:n]
        labels.copy_(raw[:, 0])
        self.rows = 0
        return x, labels


def records_to_tensors(records):
    """(x [n, 784] float32, labels [n] int64, bad_records) of a list of
    records."""
    good = [r for r in records if len(r) == RECORD_BYTES and r[0] < CLASSES]
    raw = np.frombuffer(b"".join(good), dtype=np.uint8)
    raw = raw.reshape(-1, RECORD_BYTES)
    x = torch.from_numpy(raw[:, 1:].astype(np.float32) / 255.0)
    labels = torch.from_numpy(raw[:, 0].astype(np.int64))
    return x, labels, len(records) - len(good)


def _read_idx(path, magic):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 8 or struct.unpack(">I", data[:4])[0] != magic:
        raise ValueError(f"{path}: not an IDX file of magic {magic:#x}")
    dims = (magic & 0xFF)
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims)
    if body.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {body.size} bytes for shape {shape}")
    return body.reshape(shape)


def load_idx_split(split, directory=IDX_DIR):
    """(x [n, 784] float32 in [0, 1], labels [n] int64) of the Debian
    package's 'train' or 't10k' files."""
    images = _read_idx(f"{directory}/{split}-images-idx3-ubyte.gz", 0x803)
    labels = _read_idx(f"{directory}/{split}-labels-idx1-ubyte.gz", 0x801)
    if images.shape[0] != labels.shape[0] or labels.max() >= CLASSES:
        raise ValueError(f"{directory}/{split}: images and labels disagree")
    x = torch.from_numpy(images.reshape(-1, PIXELS).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))
