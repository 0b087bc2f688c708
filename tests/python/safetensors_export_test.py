"""A model leaves fabps as a safetensors file that numpy and torch read.

Two real fabps-pserver processes (pserver_procs.py) hold a small model
trained a few Adam steps through the fabps package; fabps-export writes it
from the running pservers (--pservers) and offline from their checkpoints
(--checkpoints, with the optimizer state). A 20-line numpy reader written
here from the format's specification (docs/formats/safetensors.md) reads
both files; they must equal the pulled parameters bit for bit, and torch's
load_state_dict must take them (strict: every name and shape).

  FABPS_BUILD_DIR=<build> PYTHONPATH=<build>/python \\
      /usr/bin/python3 -m pytest safetensors_export_test.py
"""

import json
import os
import struct
import subprocess

import numpy as np
import pytest
import torch

import fabps
from pserver_procs import PServerProcs, built_binary

os.environ.setdefault("FABPS_JOB_TOKEN", "safetensors-export-test")
torch.set_num_threads(1)

DTYPES = {"F32": np.float32, "F64": np.float64, "I32": np.int32,
          "I64": np.int64}


def read_safetensors(path):
    """name -> numpy array, and the metadata, straight from the bytes."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    assert 2 <= n <= len(data) - 8
    header = json.loads(data[8:8 + n].decode("utf-8"))
    metadata = header.pop("__metadata__", {})
    body = data[8 + n:]
    tensors, end = {}, 0
    for name, t in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = t["data_offsets"]
        assert begin == end, f"{name}: hole or overlap"
        dtype = np.dtype(DTYPES[t["dtype"]]).newbyteorder("<")
        count = int(np.prod(t["shape"], dtype=np.int64))
        assert stop - begin == count * dtype.itemsize
        tensors[name] = np.frombuffer(body[begin:stop], dtype).reshape(t["shape"])
        end = stop
    assert end == len(body)
    return tensors, metadata


class TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = torch.nn.Linear(8, 6)
        self.l2 = torch.nn.Linear(6, 3)

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def export(*args):
    return subprocess.run([built_binary("cmd/export/fabps-export")] +
                          list(args), capture_output=True, text=True,
                          timeout=120)


@pytest.fixture
def trained(tmp_path):
    """Pservers holding a model trained three Adam steps, and its values."""
    procs = PServerProcs("tcp;ofi_rxm", 2, tmp_path)
    try:
        procs.start_all()
        torch.manual_seed(3)
        params = {n: p.detach().numpy().copy()
                  for n, p in TwoLayers().named_parameters()}
        with fabps.PServerClient(addresses=procs.addresses,
                                 provider="tcp;ofi_rxm",
                                 interface="127.0.0.1",
                                 rule=fabps.Rule("adam", lr=0.01),
                                 block_elements=16) as c:
            assert c.init_params(params)
            rng = np.random.default_rng(5)
            for _ in range(3):
                grads = {n: rng.standard_normal(v.shape).astype(np.float32)
                         for n, v in params.items()}
                c.push(grads).wait(30)
            c.pull(params, 30)
            c.save_model(str(tmp_path / "saved"), 60)
        yield procs, params, tmp_path
    finally:
        procs.close()


def check_model_file(path, params):
    tensors, metadata = read_safetensors(path)
    assert metadata["format"] == "pt"
    assert sorted(tensors) == sorted(params)
    for name, value in params.items():
        assert tensors[name].dtype == np.float32
        assert tensors[name].shape == value.shape
        assert tensors[name].tobytes() == value.tobytes(), name
    model = TwoLayers()
    model.load_state_dict({n: torch.from_numpy(v.copy())
                           for n, v in tensors.items()}, strict=True)
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), torch.from_numpy(params[name]))


def test_export_from_running_pservers(trained):
    procs, params, tmp = trained
    out = tmp / "live.safetensors"
    r = export("--pservers", ",".join(procs.addresses), "--provider",
               "tcp;ofi_rxm", "--interface", "127.0.0.1", "--timeout-ms",
               "60000", "-o", str(out))
    assert r.returncode == 0, r.stderr
    check_model_file(out, params)


def test_export_from_checkpoints_with_optimizer_state(trained):
    procs, params, tmp = trained
    out, state = tmp / "ckpt.safetensors", tmp / "state.safetensors"
    r = export("--checkpoints", str(tmp / "saved"), "-o", str(out),
               "--with-optimizer-state", str(state))
    assert r.returncode == 0, r.stderr
    check_model_file(out, params)
    tensors, _ = read_safetensors(state)
    want = sorted(f"{n}/adam.{s}" for n in params for s in ("m", "v"))
    assert sorted(tensors) == want
    for name, value in params.items():
        m, v = tensors[f"{name}/adam.m"], tensors[f"{name}/adam.v"]
        assert m.shape == value.shape and v.shape == value.shape
        assert np.all(v > 0), name  # three squared gradients went in
        assert np.any(m != 0), name


def test_export_refuses_missing_shards(trained):
    procs, params, tmp = trained
    # Only shard 0's file: shard 1 is missing, said by name.
    lone = tmp / "lone"
    lone.mkdir()
    for f in os.listdir(tmp / "saved"):
        if f.startswith("shard-0-"):
            os.link(tmp / "saved" / f, lone / f)
    r = export("--checkpoints", str(lone), "-o", str(tmp / "x.safetensors"))
    assert r.returncode == 1
    assert "no checkpoint of shard 1" in r.stderr
    assert not (tmp / "x.safetensors").exists()
