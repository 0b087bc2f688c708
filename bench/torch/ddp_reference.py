#!/usr/bin/python3
"""The PyTorch DistributedDataParallel reference of bench/torch/torch_vs_ddp.sh.

Trains the torch example's model (examples/fashion_mnist_torch/model.py, the
same MLP, initialization and loss as the fabps job) with DDP over gloo:
--procs processes on localhost, each with --batch examples per step (its
share of a per-pass permutation of the 60000 training images), Adam with the
learning rate going linearly from --lr to --lr-final over the run, as
fabps-launch sets it up on the pservers. Rank 0 evaluates on the 10000 test
images after every pass.

Reads the Debian package's IDX files (dataset-fashion-mnist) directly.
Prints JSON lines like the fabps trainers' ("pass" per pass, then "summary"):
  {"event":"pass","pass":0,"samples":60000,"loss":0.52,"test_accuracy":0.84,
   "seconds":4.1,"elapsed_seconds":4.1}
  {"event":"summary","procs":2,"samples_per_sec":14800,
   "seconds_to_target":8.2,"target":0.85,"final_accuracy":0.87}
Times start when every process is ready to train (data loaded, process group
formed): `samples_per_sec` is passes x 60000 over the time to the end of the
last pass (evaluation included, as in the fabps job).
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples",
                                "fashion_mnist_torch"))
import data  # noqa: E402
import model as mlp  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--passes", type=int, default=3)
    p.add_argument("--batch", type=int, default=64, help="per process")
    p.add_argument("--lr", type=float, default=0.001)
    p.add_argument("--lr-final", type=float, default=0.00005)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1,
                   help="torch.set_num_threads per process")
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--port", type=int, default=0,
                   help="rendezvous port (0: a free one)")
    p.add_argument("--data-dir", default=data.IDX_DIR)
    a = p.parse_args(argv)
    if a.procs < 1 or a.passes < 1 or a.batch < 1 or a.threads < 1:
        p.error("--procs, --passes, --batch and --threads must be >= 1")
    return a


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def emit(obj):
    print(json.dumps(obj), flush=True)


def run(rank, args, port):
    torch.set_num_threads(args.threads)
    x, y = data.load_idx_split("train", args.data_dir)
    if rank == 0:
        test_x, test_y = data.load_idx_split("t10k", args.data_dir)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}",
                            rank=rank, world_size=args.procs)
    net = mlp.Mlp(seed=args.seed)
    ddp = torch.nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.Adam(ddp.parameters(), lr=args.lr)
    n = x.shape[0]
    per_rank = n // args.procs
    steps_per_pass = (per_rank + args.batch - 1) // args.batch
    total_steps = steps_per_pass * args.passes
    final = args.lr_final / args.lr
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: 1.0 + (final - 1.0) * min(s, total_steps) / total_steps)
    dist.barrier()
    start = time.monotonic()
    reached = None
    acc = float("nan")
    for p in range(args.passes):
        pass_start = time.monotonic()
        g = torch.Generator().manual_seed(args.seed * 1000 + p)
        perm = torch.randperm(n, generator=g)[rank * per_rank:
                                              (rank + 1) * per_rank]
        loss_sum = 0.0
        for s in range(steps_per_pass):
            idx = perm[s * args.batch:(s + 1) * args.batch]
            opt.zero_grad()
            loss = mlp.loss_fn(ddp(x[idx]), y[idx])
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * idx.shape[0]
        line = {"event": "pass", "pass": p, "samples": per_rank * args.procs,
                "loss": loss_sum / per_rank}
        if rank == 0:
            acc, test_loss = mlp.evaluate(net, test_x, test_y)
            line.update(test_accuracy=acc, test_loss=test_loss)
        dist.barrier()
        now = time.monotonic()
        line.update(seconds=now - pass_start, elapsed_seconds=now - start)
        if rank == 0:
            emit(line)
            if reached is None and acc >= args.target:
                reached = now - start
    if rank == 0:
        elapsed = time.monotonic() - start
        emit({"event": "summary", "procs": args.procs, "batch": args.batch,
              "samples_per_sec": args.passes * per_rank * args.procs / elapsed,
              "seconds_to_target": reached, "target": args.target,
              "final_accuracy": acc, "seconds": elapsed})
    dist.destroy_process_group()


def main(argv):
    args = parse_args(argv)
    port = args.port or free_port()
    mp.spawn(run, args=(args, port), nprocs=args.procs, join=True)


if __name__ == "__main__":
    main(sys.argv[1:])
