"""fabps.torch.Embedding and fabps.torch.EmbeddingBag against real pservers.

Each test starts two fabps-pserver processes (pserver_procs.py), over
"tcp;ofi_rxm" and over "shm", with blocks of 16 rows, so the table spans 7
blocks on both pservers. The tables hold multiples of 1/4 and the rule is
sgd with a power-of-two learning rate, so the pservers' update w - lr * g
rounds as torch's SGD does and the tables compare exactly: forward must
give torch.nn.Embedding's and torch.nn.EmbeddingBag's values, one backward
the table of one local torch SGD step, a prefetched forward a fresh
forward's values; bad input is refused; and a small model trains beside
fabps.torch.DistributedOptimizer as it does in plain torch.

  FABPS_BUILD_DIR=<build> PYTHONPATH=<build>/python \
      /usr/bin/python3 -m pytest torch_embedding_test.py
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import fabps
import fabps.torch
from pserver_procs import PServerProcs

torch.set_num_threads(1)

PROVIDERS = ["tcp;ofi_rxm", "shm"]
DIM = 4
BLOCK = 64            # elements per block: 16 rows
ROWS = 100            # 7 blocks over both pservers
LR = 0.5


@pytest.fixture(params=PROVIDERS)
def ps(request, tmp_path):
    procs = PServerProcs(request.param, 2, tmp_path).start_all()
    yield procs
    procs.close()


def client(ps, lr=LR, rules=None):
    return fabps.PServerClient(addresses=ps.addresses, provider=ps.provider,
                               rule=fabps.Rule("sgd", lr=lr), rules=rules,
                               block_elements=BLOCK, rpc_timeout_ms=20000)


def table(seed=0):
    """[ROWS, DIM] float32 multiples of 1/4 in [-4.5, 4.5]."""
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-18, 19, (ROWS, DIM), generator=g).float() / 4


def job_table(c, name="emb"):
    whole = torch.empty(ROWS, DIM)
    c.pull({name: whole})
    return whole


class Spy:
    """A client that records the module's row reads and pushes."""

    def __init__(self, c):
        self.c = c
        self.pulls = []   # ids of each get_rows_async
        self.pushes = []  # (ids, gradient) of each send_rows

    def get_rows_async(self, name, ids, out, timeout=None):
        self.pulls.append(np.array(ids))
        return self.c.get_rows_async(name, ids, out, timeout=timeout)

    def send_rows(self, name, ids, values, timeout=None):
        self.pushes.append((np.array(ids), values.clone()))
        return self.c.send_rows(name, ids, values, timeout=timeout)


def exact(actual, expected, msg=None):
    torch.testing.assert_close(actual, expected, rtol=0, atol=0, msg=msg)


def bag_cases():
    """(what, mode, kwargs of the module, forward args) of EmbeddingBag:
    repeated ids within and across bags, ids on every block, empty bags.
    Bags hold 4 ids (or none), so means are exact."""
    ids = torch.tensor([99, 3, 3, 16, 50, 0, 3, 77, 99, 31, 64, 99])
    offsets = torch.tensor([0, 4, 4, 8, 12])  # bags 1 and 4 are empty
    weights = (torch.arange(12, dtype=torch.float32) - 4) / 2
    grid = torch.tensor([[5, 99, 5, 7], [0, 48, 17, 48], [33, 33, 33, 1]])
    cases = []
    for mode in ("sum", "mean", "max"):
        cases += [
            (f"{mode} offsets", mode, {}, (ids, offsets)),
            (f"{mode} 2-D", mode, {}, (grid,)),
            (f"{mode} int32 offsets, last offset", mode,
             {"include_last_offset": True},
             (ids.int(), torch.tensor([0, 4, 4, 8, 12, 12]).int())),
        ]
    cases.append(("sum per_sample_weights", "sum", {},
                  (ids, offsets, weights)))
    cases.append(("sum 2-D per_sample_weights", "sum", {},
                  (grid, None, torch.full((3, 4), -0.75))))
    return cases


def test_forward_equals_torch(ps):
    init = table()
    with client(ps) as c:
        c.init_params({"emb": init})
        spy = Spy(c)
        reference = torch.nn.Embedding.from_pretrained(init)
        emb = fabps.torch.Embedding(spy, "emb", DIM)
        assert list(emb.parameters()) == [] and emb.state_dict() == {}
        for ids in (torch.tensor([[99, 3, 3], [16, 50, 0]]),
                    torch.tensor(64),
                    torch.tensor([[[1, 2], [2, 1]], [[80, 80], [15, 16]]],
                                 dtype=torch.int32),
                    torch.zeros((2, 0), dtype=torch.long)):
            with torch.no_grad():
                out = emb(ids)
            assert out.shape == ids.shape + (DIM,) and not out.requires_grad
            exact(out, reference(ids), msg=str(ids))
        # One read per forward, of the unique ids (none for no ids).
        assert [p.tolist() for p in spy.pulls] == [
            [0, 3, 16, 50, 99], [64], [1, 2, 15, 16, 80]]
        # numpy ids, uint64 too (torch has none).
        for dtype in (np.int64, np.uint64, np.int32):
            ids = np.array([[7, 99], [7, 0]], dtype)
            exact(emb(ids), reference(torch.from_numpy(ids.astype(np.int64))))

        for what, mode, kwargs, args in bag_cases():
            bag = fabps.torch.EmbeddingBag(c, "emb", DIM, mode=mode, **kwargs)
            ref = torch.nn.EmbeddingBag.from_pretrained(init, mode=mode,
                                                        **kwargs)
            out = bag(*args)
            assert out.requires_grad  # grad mode: a graph to push from
            exact(out.detach(), ref(*args), msg=what)
        # The job's table is untouched by forwards.
        exact(job_table(c), init)


@pytest.mark.parametrize("sparse", [False, True])
def test_one_backward_is_one_torch_sgd_step(ps, sparse):
    """After backward and wait(), the job's table is what one torch SGD step
    on torch.nn.Embedding(Bag) with the same batch and loss gives (a sparse
    or a dense reference gradient)."""
    expected = table()
    with client(ps) as c:
        c.init_params({"emb": expected})
        spy = Spy(c)
        cases = [("embedding", None, {},
                  (torch.tensor([[99, 3, 3], [16, 50, 3]]),))]
        cases += bag_cases()
        for what, mode, kwargs, args in cases:
            if mode is None:
                module = fabps.torch.Embedding(spy, "emb", DIM)
                ref = torch.nn.Embedding.from_pretrained(
                    expected.clone(), freeze=False, sparse=sparse)
            else:
                module = fabps.torch.EmbeddingBag(spy, "emb", DIM, mode=mode,
                                                  **kwargs)
                ref = torch.nn.EmbeddingBag.from_pretrained(
                    expected.clone(), freeze=False, mode=mode,
                    sparse=sparse and mode != "max",  # torch has no sparse max
                    **kwargs)
            ref_args, args = list(args), list(args)
            if len(args) == 3:  # per_sample_weights, with their gradient
                args[2] = args[2].clone().requires_grad_()
                ref_args[2] = ref_args[2].clone().requires_grad_()
            out = module(*args)
            ref_out = ref(*ref_args)
            weights = (torch.arange(out.numel()).reshape(out.shape) % 7 - 3)
            (out * weights / 4).sum().backward()
            (ref_out * weights / 4).sum().backward()
            torch.optim.SGD(ref.parameters(), lr=LR).step()
            expected = ref.weight.detach()
            module.wait()
            exact(job_table(c), expected, msg=what)
            if len(args) == 3:
                exact(args[2].grad, ref_args[2].grad, msg=what)
            # One push per backward, of the unique ids' summed gradient.
            push_ids, push_grad = spy.pushes[-1]
            assert len(spy.pushes) == len(spy.pulls), what
            np.testing.assert_array_equal(push_ids, spy.pulls[-1])
            assert push_ids.tolist() == sorted(set(args[0].view(-1).tolist()))
            assert push_grad.shape == (push_ids.size, DIM)

        # Each backward pushes: a graph backpropagated twice is two updates.
        ids = torch.tensor([5, 6, 5])
        module = fabps.torch.Embedding(c, "emb", DIM)
        loss = module(ids).sum()
        loss.backward(retain_graph=True)
        loss.backward()
        module.wait()
        expected[5] -= 2 * LR * 2
        expected[6] -= 2 * LR
        exact(job_table(c), expected)


def test_prefetch_gives_the_values_of_a_fresh_read(ps):
    init = table()
    g = torch.Generator().manual_seed(3)
    batches = []
    for _ in range(5):
        ids = torch.randint(0, ROWS, (12,), generator=g)
        ids[3] = ids[7]  # a repeat
        batches.append((ids, torch.tensor([0, 2, 2, 9])))
    with client(ps) as c:
        c.init_params({"a": init, "b": init})
        spy = Spy(c)
        fresh = fabps.torch.EmbeddingBag(c, "a", DIM, mode="mean")
        pre = fabps.torch.EmbeddingBag(spy, "b", DIM, mode="mean")
        for i, (ids, offsets) in enumerate(batches):
            reads = len(spy.pulls)
            out_pre = pre(ids, offsets)
            # The prefetch of step i - 1 was used: no read in forward.
            assert len(spy.pulls) == reads + (i == 0)
            out_fresh = fresh(ids, offsets)
            exact(out_pre, out_fresh, msg=f"step {i}")
            (out_pre.sum() * 2).backward()
            (out_fresh.sum() * 2).backward()
            pre.wait()  # the prefetch then includes this step's push
            if i + 1 < len(batches):
                pre.prefetch(batches[i + 1][0].clone())
        fresh.wait()
        exact(job_table(c, "a"), job_table(c, "b"))

        # A forward with other ids reads afresh (the prefetch is dropped).
        ids, offsets = batches[0]
        pre.prefetch(ids)
        reads = len(spy.pulls)
        other = ids.flip(0)
        with torch.no_grad():
            exact(pre(other, offsets), fresh(other, offsets))
        assert len(spy.pulls) == reads + 1

        # Prefetched before this batch's push: the rows are read as they
        # were, one update stale (the prefetch's read is waited for here so
        # the push cannot overtake it).
        before = pre(ids, offsets)
        pre.prefetch(ids)
        pre._prefetch.handle.wait()
        before.sum().backward()
        pre.wait()
        with torch.no_grad():
            exact(pre(ids, offsets), before.detach())  # the stale rows
            assert not torch.equal(pre(ids, offsets), before)  # updated


def test_bad_input_is_refused(ps):
    init = table()
    with client(ps) as c:
        c.init_params({"emb": init})
        spy = Spy(c)
        emb = fabps.torch.Embedding(spy, "emb", DIM)
        bag = fabps.torch.EmbeddingBag(spy, "emb", DIM, mode="mean")
        bag_sum = fabps.torch.EmbeddingBag(spy, "emb", DIM, mode="sum")
        ids = torch.tensor([1, 2, 3])
        offsets = torch.tensor([0, 1])
        meta = torch.empty(3, dtype=torch.long, device="meta")
        refused = [
            (TypeError, "torch.int64", emb, (ids.float(),)),
            (TypeError, "torch.int64", emb, (ids.bool(),)),
            (TypeError, "list", emb, ([1, 2],)),
            (TypeError, "float64", emb, (np.array([1.0, 2.0]),)),
            (ValueError, "meta", emb, (meta,)),
            (TypeError, "torch.int64", bag, (ids.double(), offsets)),
            (ValueError, "meta", bag, (meta, offsets)),
            (ValueError, "offsets has to be None", bag,
             (ids.view(1, 3), offsets)),
            (ValueError, "offsets has to be a 1-D", bag, (ids,)),
            (ValueError, "1-D or 2-D", bag, (ids.view(1, 1, 3),)),
            (TypeError, "offsets", bag, (ids, offsets.float())),
            (ValueError, "only supported for mode='sum'", bag,
             (ids, offsets, torch.ones(3))),
            (ValueError, "shape of input", bag_sum,
             (ids, offsets, torch.ones(2))),
            (TypeError, "float64", bag_sum,
             (ids, offsets, torch.ones(3, dtype=torch.float64))),
            # The client refuses ids the table does not hold.
            (fabps.InvalidArgument, "emb", emb, (torch.tensor([1, ROWS]),)),
            (fabps.InvalidArgument, "emb", bag, (torch.tensor([-1, 2]),
                                                 offsets)),
        ]
        for error, match, module, args in refused:
            with pytest.raises(error, match=match):
                module(*args)
        with pytest.raises(TypeError, match="torch.int64"):
            emb.prefetch(ids.float())
        with pytest.raises(ValueError, match="mode must be"):
            fabps.torch.EmbeddingBag(c, "emb", DIM, mode="median")
        with pytest.raises(fabps.InvalidArgument, match="emb"):
            fabps.torch.Embedding(c, "emb", DIM + 1)(ids)
        with pytest.raises(fabps.NotFound, match="nope"):
            fabps.torch.Embedding(c, "nope", DIM)(ids)
        assert spy.pushes == []
        exact(job_table(c), init)
        # The modules still work.
        emb(ids).sum().backward()
        emb.wait()
        expected = init.clone()
        expected[1:4] -= LR
        exact(job_table(c), expected)


class Model(torch.nn.Module):
    """Mean bags of 4-wide rows, then a Linear to one output."""

    def __init__(self, emb):
        super().__init__()
        self.emb = emb
        self.top = torch.nn.Linear(DIM, 1)
        g = torch.Generator().manual_seed(8)
        with torch.no_grad():
            self.top.weight.copy_(torch.randn(1, DIM, generator=g) / 2)
            self.top.bias.zero_()

    def forward(self, ids, offsets):
        return self.top(self.emb(ids, offsets)).squeeze(1)


def regression_batches():
    """4 batches of 16 bags of 1-4 ids; the target of a bag is the mean of
    a planted value per id."""
    g = torch.Generator().manual_seed(5)
    planted = torch.randn(ROWS, 1, generator=g)
    batches = []
    for _ in range(4):
        lens = torch.randint(1, 5, (16,), generator=g)
        ids = torch.randint(0, ROWS, (int(lens.sum()),), generator=g)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long),
                             lens.cumsum(0)[:-1]])
        y = F.embedding_bag(ids, planted, offsets, mode="mean").squeeze(1)
        batches.append((ids, offsets, y))
    return batches


def test_trains_beside_the_distributed_optimizer(ps):
    """The table (sgd lr 4) through EmbeddingBag, the Linear on top (sgd
    lr 0.5) through DistributedOptimizer: 20 steps lower the loss over the
    data to under a fifth, along the path plain torch takes."""
    emb_lr, dense_lr, steps = 4.0, 0.5, 20
    batches = regression_batches()
    init = torch.randn(ROWS, DIM, generator=torch.Generator().manual_seed(6))
    init /= 2

    def mean_loss(model):
        with torch.no_grad():
            return sum(float(F.mse_loss(model(ids, offsets), y))
                       for ids, offsets, y in batches) / len(batches)

    # Plain torch.
    ref = Model(torch.nn.EmbeddingBag.from_pretrained(
        init.clone(), freeze=False, mode="mean"))
    opt = torch.optim.SGD([
        {"params": ref.emb.parameters(), "lr": emb_lr},
        {"params": ref.top.parameters(), "lr": dense_lr}])
    ref_losses = []
    for step in range(steps):
        ref_losses.append(mean_loss(ref))
        ids, offsets, y = batches[step % len(batches)]
        opt.zero_grad()
        F.mse_loss(ref(ids, offsets), y).backward()
        opt.step()
    ref_losses.append(mean_loss(ref))

    with client(ps, lr=dense_lr,
                rules={"emb": fabps.Rule("sgd", lr=emb_lr)}) as c:
        model = Model(fabps.torch.EmbeddingBag(c, "emb", DIM, mode="mean"))
        assert [n for n, _ in model.named_parameters()] == [
            "top.weight", "top.bias"]
        # One initialization for the table and the dense parameters.
        assert c.init_params([("emb", init)] + list(model.named_parameters()))
        opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                               model=model, timeout=20)
        losses = []
        for step in range(steps):
            losses.append(mean_loss(model))
            ids, offsets, y = batches[step % len(batches)]
            opt.zero_grad()
            F.mse_loss(model(ids, offsets), y).backward()
            assert opt.step() is True
        losses.append(mean_loss(model))
        model.emb.wait()
        opt.close()
    assert opt.lost_steps == 0
    assert losses[-1] < losses[0] / 5, losses
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-4)


def test_embedding_bag_on_a_hashed_table_equals_torch(ps):
    """A hashed table (fabps.HashedTable) behind EmbeddingBag: feature ids
    anywhere in 2^64 (numpy uint64), rows created by the first push; the
    forward equals torch.nn.EmbeddingBag over the rows the ids read, and the
    rows after one backward equal one local torch SGD step."""
    with client(ps) as c:
        c.init_params({"emb": fabps.HashedTable(dim=DIM, init="uniform",
                                                init_scale=0.5, seed=11)})
        bag = fabps.torch.EmbeddingBag(c, "emb", DIM, mode="sum")
        ids = np.array([2**63 + 7, 5, 2**40 + 3, 5, 18446744073709551615,
                        2**40 + 3], np.uint64)
        offsets = torch.tensor([0, 2, 4])
        unique, inverse = np.unique(ids, return_inverse=True)
        start = torch.empty(unique.size, DIM)
        c.get_rows("emb", unique, start.numpy())
        ref = torch.nn.EmbeddingBag(unique.size, DIM, mode="sum")
        with torch.no_grad():
            ref.weight.copy_(start)
        local = torch.from_numpy(inverse.astype(np.int64))
        weights = torch.arange(1.0, 7.0)
        out = bag(ids, offsets, per_sample_weights=weights)
        want = ref(local, offsets, per_sample_weights=weights)
        exact(out, want)
        target = torch.linspace(-1, 1, 3 * DIM).reshape(3, DIM)
        ((out - target) ** 2).sum().backward()
        bag.wait()
        ((want - target) ** 2).sum().backward()
        with torch.no_grad():
            ref.weight -= LR * ref.weight.grad
        after = torch.empty(unique.size, DIM)
        c.get_rows("emb", unique, after.numpy())
        torch.testing.assert_close(after, ref.weight.detach(), rtol=1e-6,
                                   atol=1e-6)
        assert sum(t["rows"] for t in c.table_stats()) == unique.size


def test_prefetch_over_many_buckets_leaves_slots_to_pushes(ps):
    """A prefetch in flight whose ids span more buckets than a pserver has
    landing slots must not starve the step's pushes (a read holds at most
    half of a pserver's slots): prefetch before backward, as the README's
    loop does, for a few steps; every push lands."""
    with client(ps) as c:
        c.init_params({"emb": fabps.HashedTable(dim=DIM, buckets=64)})
        bag = fabps.torch.EmbeddingBag(c, "emb", DIM, mode="sum")
        g = torch.Generator().manual_seed(3)
        def ids():
            return torch.randint(0, 2**62, (256,), generator=g)
        offsets = torch.arange(0, 256, 8)
        x = ids()
        for _ in range(5):
            nxt = ids()
            out = bag(x, offsets)
            bag.prefetch(nxt)  # 256 ids over 64 buckets: 32 per pserver
            out.sum().backward()
            x = nxt
        bag.wait()
        held = sum(t["rows"] for t in c.table_stats())
        assert held == 5 * 256  # every push applied (distinct random ids)
