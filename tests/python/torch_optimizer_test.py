"""fabps.torch.DistributedOptimizer against real pservers.

Each test starts two fabps-pserver processes (pserver_procs.py: free
loopback ports, a temporary directory, ended by PID) and trains a small
two-layer model through the optimizer: one step of the pservers' sgd must give what plain
torch computes (w - lr * g), the gradient hooks must push layer by layer
while backward still runs, the overlapped pull must land before a layer's
forward, a second trainer must receive the first one's values, and a dead
pserver must cost a step, not the trainer.

  FABPS_BUILD_DIR=<build> PYTHONPATH=<build>/python \
      /usr/bin/python3 -m pytest torch_optimizer_test.py
"""

import gc
import os
import time
import weakref

import pytest
import torch

import fabps
import fabps.torch
from pserver_procs import running

os.environ.setdefault("FABPS_JOB_TOKEN", "torch-optimizer-test")
torch.set_num_threads(1)


@pytest.fixture
def pservers(tmp_path):
    with running("tcp;ofi_rxm", 2, tmp_path) as procs:
        yield procs


class TwoLayers(torch.nn.Module):
    """8 -> 6 -> 3 with ReLU; parameters l1.weight, l1.bias, l2.*"""

    def __init__(self, seed):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.l1 = torch.nn.Linear(8, 6)
        self.l2 = torch.nn.Linear(6, 3)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g))

    def forward(self, x):
        return self.l2(torch.relu(self.l1(x)))


def batch(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(16, 8, generator=g), torch.randint(0, 3, (16,),
                                                          generator=g)


def client(pservers, lr=0.1, **kw):
    return fabps.PServerClient(
        addresses=pservers.addresses, provider="tcp;ofi_rxm",
        interface="127.0.0.1", rule=fabps.Rule(kind="sgd", lr=lr),
        rpc_timeout_ms=5000, init_wait_ms=30000, block_elements=16, **kw)


def loss_of(model, x, y):
    return torch.nn.functional.cross_entropy(model(x), y)


def trainer(pservers, seed):
    """(model, client, optimizer): a TwoLayers(seed) trained through the
    optimizer with per-layer overlapped pulls, 20 s per transfer."""
    model = TwoLayers(seed=seed)
    c = client(pservers)
    opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, step_timeout=20)
    return model, c, opt


def test_one_sgd_step_is_w_minus_lr_g(pservers):
    reference = TwoLayers(seed=1)
    x, y = batch(2)
    loss_of(reference, x, y).backward()
    expected = {n: (p - 0.1 * p.grad).detach()
                for n, p in reference.named_parameters()}
    model, c, opt = trainer(pservers, seed=1)
    assert opt.init_params() is True
    opt.zero_grad()
    loss_of(model, x, y).backward()
    assert opt.step() is True
    opt.synchronize()  # the overlapped pull, as a forward would wait
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), expected[n], rtol=1e-6,
                                   atol=1e-6, msg=n)
    opt.close()
    c.close()


def test_hooks_push_each_layer_while_backward_runs(pservers):
    model, c, opt = trainer(pservers, seed=3)
    opt.init_params()
    pushes = []  # (names, was l1's gradient still empty then)
    opt.on_push = lambda names: pushes.append(
        (sorted(names), bool(model.l1.weight.grad.abs().sum() == 0)))
    for step in range(3):
        pushes.clear()
        opt.zero_grad()
        loss_of(model, *batch(10 + step)).backward()
        # Both layers were pushed by the hooks, before step() was called,
        # the output layer first, while l1's gradient did not exist yet.
        assert pushes == [(["l2.bias", "l2.weight"], True),
                          (["l1.bias", "l1.weight"], False)]
        assert opt.step() is True
    assert opt.lost_steps == 0
    opt.close()
    c.close()


def test_overlapped_pull_lands_before_each_layer_runs(pservers):
    model, c, opt = trainer(pservers, seed=4)
    opt.init_params()
    opt.zero_grad()
    loss_of(model, *batch(5)).backward()
    opt.step()
    seen = {}
    model.l2.register_forward_pre_hook(
        lambda m, _in: seen.update(l2=m.weight.detach().clone()))
    x, _ = batch(6)
    model(x)  # l1's and l2's forward wait for their own pulls
    job = {n: torch.empty_like(p) for n, p in model.named_parameters()}
    c.pull(job, timeout=20)
    torch.testing.assert_close(seen["l2"], job["l2.weight"])
    for n, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), job[n], msg=n)
    opt.close()
    c.close()


def test_second_trainer_receives_the_initial_values(pservers):
    first, second = TwoLayers(seed=7), TwoLayers(seed=8)
    c1, c2 = client(pservers), client(pservers)
    o1 = fabps.torch.DistributedOptimizer(c1, first.named_parameters())
    o2 = fabps.torch.DistributedOptimizer(c2, second.named_parameters())
    assert o1.init_params() is True
    assert o2.init_params() is False
    for (n, a), (_, b) in zip(first.named_parameters(),
                              second.named_parameters()):
        torch.testing.assert_close(a.detach(), b.detach(), msg=n)
    # Without a model: one group per parameter, pulled in step().
    o2.zero_grad()
    loss_of(second, *batch(9)).backward()
    assert o2.step() is True
    for o, c in ((o1, c1), (o2, c2)):
        o.close()
        c.close()


def test_a_dead_pserver_loses_steps_then_raises(pservers):
    model = TwoLayers(seed=11)
    c = client(pservers)
    opt = fabps.torch.DistributedOptimizer(
        c, model.named_parameters(), model=model, step_timeout=1,
        max_lost_steps=1, retry_delay=0)
    opt.init_params()
    pservers.kill(1)
    x, y = batch(12)
    lost = 0
    with pytest.raises(fabps.Error):
        for _ in range(5):
            opt.zero_grad()
            loss_of(model, x, y).backward()  # the hooks never raise
            assert opt.step() is False
            lost += 1
    assert lost == 1 and opt.lost_steps == 2
    c.close()


def test_a_step_waits_one_timeout_for_all_its_layers(pservers):
    """Every layer's push lands in a frozen pserver and none is credited:
    the waits for a step's pushes share one deadline, so they give up after
    about one timeout (waited layer by layer, they took one timeout per
    layer: up to four here)."""
    timeout = 2.0
    torch.manual_seed(17)
    model = torch.nn.Sequential(*[torch.nn.Linear(8, 8) for _ in range(4)])
    c = client(pservers)
    opt = fabps.torch.DistributedOptimizer(
        c, model.named_parameters(), model=model, step_timeout=timeout,
        max_lost_steps=5, retry_delay=0)
    opt.init_params()
    opt.pull()  # registered with both pservers
    assert len(opt._layers) == 4  # each has blocks on both pservers
    pservers.freeze(1)
    opt.zero_grad()
    model(torch.randn(16, 8)).sum().backward()  # pushes every layer
    start = time.monotonic()
    error = opt._wait_pushes()
    elapsed = time.monotonic() - start
    assert isinstance(error, fabps.TimedOut)
    assert timeout * 0.9 < elapsed < 2.5 * timeout
    c.close()


def test_buckets_merge_layers_into_one_push(pservers):
    model = TwoLayers(seed=13)
    reference = TwoLayers(seed=13)
    x, y = batch(14)
    loss_of(reference, x, y).backward()
    c = client(pservers)
    opt = fabps.torch.DistributedOptimizer(
        c, model.named_parameters(), model=model, step_timeout=20,
        bucket_bytes=1 << 20)
    opt.init_params()
    pushes = []
    opt.on_push = lambda names: pushes.append(sorted(names))
    opt.zero_grad()
    loss_of(model, x, y).backward()
    assert pushes == [["l1.bias", "l1.weight", "l2.bias", "l2.weight"]]
    assert opt.step() is True
    opt.synchronize()
    for n, p in reference.named_parameters():
        torch.testing.assert_close(
            dict(model.named_parameters())[n].detach(),
            (p - 0.1 * p.grad).detach(), rtol=1e-6, atol=1e-6, msg=n)
    opt.close()
    c.close()


def test_parameters_and_gradients_stay_registered(pservers):
    # The client watches the tensors it is given (the Parameters and their
    # gradient buffers), not the per-call tensors numpy views hang on: after
    # the first step every transfer finds its registration.
    model, c, opt = trainer(pservers, seed=12)
    opt.init_params()

    def train(step):
        opt.zero_grad()
        loss_of(model, *batch(40 + step)).backward()
        assert opt.step() is True

    train(0)
    opt.synchronize()
    first = c.registration_stats()
    for step in range(1, 6):
        train(step)
    opt.synchronize()
    later = c.registration_stats()
    assert later["misses"] == first["misses"], (first, later)
    assert later["entries"] == first["entries"], (first, later)
    # 4 gradients pushed and 4 parameters pulled per step.
    assert later["hits"] >= first["hits"] + 5 * 8, (first, later)
    opt.close()
    c.close()


# ---- gradient accumulation ----------------------------------------------


def accumulated_reference(seed, batches):
    """{name: w - g} where g is the sum of the gradients of `batches`,
    accumulated in param.grad by plain torch (sgd with lr 1: exact in
    float32, as on the pservers)."""
    reference = TwoLayers(seed=seed)
    for x, y in batches:
        loss_of(reference, x, y).backward()
    return {n: (p - p.grad).detach() for n, p in reference.named_parameters()}


def assert_params_equal(model, expected):
    for n, p in model.named_parameters():
        assert torch.equal(p.detach(), expected[n]), n


def test_accumulation_inside_no_sync_is_one_step_of_the_summed_gradient(
        pservers):
    batches = [batch(60 + k) for k in range(4)]
    expected = accumulated_reference(21, batches)
    model = TwoLayers(seed=21)
    c = client(pservers, lr=1.0)
    opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, step_timeout=20)
    assert opt.init_params() is True
    pushes = []
    opt.on_push = lambda names: pushes.append(sorted(names))
    opt.zero_grad()
    with opt.no_sync():
        for x, y in batches[:-1]:
            loss_of(model, x, y).backward()
    assert pushes == []
    loss_of(model, *batches[-1]).backward()  # pushes the sum, per layer
    assert pushes == [["l2.bias", "l2.weight"], ["l1.bias", "l1.weight"]]
    assert opt.step() is True
    opt.synchronize()
    assert_params_equal(model, expected)
    opt.close()
    c.close()


def test_accumulation_without_overlap_push_pushes_in_step(pservers):
    # overlap_push=False: the optimizer needs no word of the accumulation.
    batches = [batch(70 + k) for k in range(4)]
    expected = accumulated_reference(22, batches)
    model = TwoLayers(seed=22)
    c = client(pservers, lr=1.0)
    opt = fabps.torch.DistributedOptimizer(
        c, model.named_parameters(), model=model, step_timeout=20,
        overlap_push=False)
    assert opt.init_params() is True
    pushes = []
    opt.on_push = lambda names: pushes.append(sorted(names))
    opt.zero_grad()
    for x, y in batches:
        loss_of(model, x, y).backward()
    assert pushes == []
    assert opt.step() is True
    assert len(pushes) == 2
    opt.synchronize()
    assert_params_equal(model, expected)
    opt.close()
    c.close()


def test_a_second_backward_after_the_push_is_refused(pservers):
    first = batch(80)
    expected = accumulated_reference(23, [first])
    model = TwoLayers(seed=23)
    c = client(pservers, lr=1.0)
    opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, step_timeout=20)
    assert opt.init_params() is True
    opt.zero_grad()
    loss_of(model, *first).backward()  # pushed by the hooks
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    with pytest.raises(RuntimeError, match="no_sync"):
        loss_of(model, *batch(81)).backward()
    for n, p in model.named_parameters():  # the pushed buffers untouched
        assert torch.equal(p.grad, grads[n]), n
    assert opt.step() is True  # the first backward's update, once
    opt.synchronize()
    assert_params_equal(model, expected)
    opt.close()
    c.close()


# ---- one optimizer per parameter ----------------------------------------


def test_a_second_optimizer_on_the_same_parameters_is_refused(pservers):
    model = TwoLayers(seed=24)
    c = client(pservers)
    first = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                             model=model)
    with pytest.raises(RuntimeError) as e:
        fabps.torch.DistributedOptimizer(c, model.named_parameters())
    assert repr(first) in str(e.value)
    assert "torch_optimizer_test.py" in repr(first)  # where it was made
    first.close()
    again = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                             model=model)
    again.close()
    c.close()


def test_a_deleted_optimizer_stops_pushing(pservers):
    x, y = batch(90)
    expected = accumulated_reference(25, [(x, y)])
    model = TwoLayers(seed=25)
    c = client(pservers, lr=1.0)
    old = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, step_timeout=20)
    assert old.init_params() is True
    gone = weakref.ref(old)
    del old  # without close()
    gc.collect()
    assert gone() is None  # its hooks did not keep it alive
    pushed = []
    push = c.push
    c.push = lambda named, **kw: (pushed.append(sorted(n for n, _ in named)),
                                  push(named, **kw))[1]
    opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, step_timeout=20)
    opt.zero_grad()
    loss_of(model, x, y).backward()
    assert opt.step() is True
    assert pushed == [["l2.bias", "l2.weight"], ["l1.bias", "l1.weight"]]
    opt.synchronize()
    assert_params_equal(model, expected)  # w - g, not w - 2 g
    opt.close()
    c.close()


# ---- dtypes ---------------------------------------------------------------


def test_float64_parameters_train(pservers):
    x, y = batch(100)
    reference = TwoLayers(seed=26).double()
    loss_of(reference, x.double(), y).backward()
    expected = {n: (p - p.grad).detach()
                for n, p in reference.named_parameters()}
    model = TwoLayers(seed=26).double()
    c = client(pservers, lr=1.0)
    opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, step_timeout=20)
    assert opt.init_params() is True
    opt.zero_grad()
    loss_of(model, x.double(), y).backward()
    assert opt.step() is True
    opt.synchronize()
    assert_params_equal(model, expected)
    opt.close()
    c.close()


# The refusals below come before the optimizer uses its client: None.


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_other_dtypes_are_refused_naming_the_parameter(dtype):
    model = TwoLayers(seed=27).to(dtype)
    with pytest.raises(TypeError) as e:
        fabps.torch.DistributedOptimizer(None, model.named_parameters(),
                                         model=model)
    text = str(e.value)
    assert "l1.weight" in text and str(dtype) in text, text
    assert "torch.float32" in text and "torch.float64" in text, text


class WithEmbedding(torch.nn.Module):
    def __init__(self, bag):
        super().__init__()
        kind = torch.nn.EmbeddingBag if bag else torch.nn.Embedding
        self.emb = kind(10, 4, sparse=True)
        self.out = torch.nn.Linear(4, 2)


@pytest.mark.parametrize("bag", [False, True], ids=["Embedding", "Bag"])
def test_a_sparse_embedding_is_refused(bag):
    model = WithEmbedding(bag)
    with pytest.raises(TypeError, match="fabps.torch.Embedding") as e:
        fabps.torch.DistributedOptimizer(None, model.named_parameters(),
                                         model=model)
    assert "emb.weight" in str(e.value)


def test_a_sparse_gradient_is_refused_without_a_model():
    emb = torch.nn.Embedding(10, 4, sparse=True)
    opt = fabps.torch.DistributedOptimizer(None, emb.named_parameters())
    with pytest.raises(TypeError, match="fabps.torch.EmbeddingBag"):
        emb(torch.tensor([1, 2])).sum().backward()
    assert not emb.weight.grad.any()  # refused before it was added
    opt.close()
    # A sparse gradient already there is refused at once.
    emb.weight.grad = None  # the optimizer's dense buffer
    emb(torch.tensor([1, 2])).sum().backward()
    assert emb.weight.grad.is_sparse
    with pytest.raises(TypeError, match="weight"):
        fabps.torch.DistributedOptimizer(None, emb.named_parameters())


# ---- a lost step costs seconds --------------------------------------------


def test_a_killed_pserver_loses_a_step_then_its_restart_recovers(pservers):
    model = TwoLayers(seed=28)
    c = client(pservers)
    # The default step_timeout: a lost step costs seconds.
    opt = fabps.torch.DistributedOptimizer(c, model.named_parameters(),
                                           model=model, retry_delay=0)
    opt.init_params()
    opt.zero_grad()
    loss_of(model, *batch(110)).backward()
    assert opt.step() is True
    opt.synchronize()
    pservers.kill(1)
    start = time.monotonic()
    opt.zero_grad()
    loss_of(model, *batch(111)).backward()
    assert opt.step() is False
    assert time.monotonic() - start < 30  # a hang guard, not a speed test
    pservers.start(1)  # same port, back from the checkpoint of the init
    results = []
    for step in range(5):
        opt.zero_grad()
        loss_of(model, *batch(112 + step)).backward()
        results.append(opt.step())
        if results[-1]:
            break
    assert results[-1] is True, results
    opt.synchronize()
    opt.close()
    c.close()
