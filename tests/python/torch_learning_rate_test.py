"""fabps.torch.DistributedOptimizer's param_groups, torch LR schedulers and
state_dict against real pservers.

Each test starts two fabps-pserver processes (pserver_procs.py: free
loopback ports, a temporary directory, ended by PID) and trains parameters
of 10 elements (blocks of 4: three blocks over both pservers) with the
pservers' sgd, pushing known gradients: the drop of every element after a
step is exactly the learning rate the pservers applied times the gradient
(all values are sums of powers of two).

  FABPS_BUILD_DIR=<build> PYTHONPATH=<build>/python \
      /usr/bin/python3 -m pytest torch_learning_rate_test.py
"""

import math
import os

import pytest
import torch

import fabps
import fabps.torch
from pserver_procs import running

os.environ.setdefault("FABPS_JOB_TOKEN", "torch-learning-rate-test")
torch.set_num_threads(1)

N = 10


@pytest.fixture
def pservers(tmp_path):
    with running("tcp;ofi_rxm", 2, tmp_path) as procs:
        yield procs


def client(pservers, rule=None):
    return fabps.PServerClient(
        addresses=pservers.addresses, provider="tcp;ofi_rxm",
        interface="127.0.0.1", rule=rule or fabps.Rule(kind="sgd", lr=1.0),
        rpc_timeout_ms=5000, init_wait_ms=30000, block_elements=4)


def param(value=0.0):
    return torch.nn.Parameter(torch.full((N,), value))


def optimizer(c, groups, **kw):
    opt = fabps.torch.DistributedOptimizer(c, groups, step_timeout=20,
                                           timeout=20, **kw)
    opt.init_params()
    return opt


def drops(opt, grads):
    """One step with gradient grads[name] (a number, every element) for
    each parameter; returns name -> how much each element went down (one
    value: they all must agree)."""
    params = {n: p for g in opt.param_groups
              for n, p in zip(g["param_names"], g["params"])}
    before = {n: p.detach().clone() for n, p in params.items()}
    opt.zero_grad()
    loss = sum((params[n] * g).sum() for n, g in grads.items())
    loss.backward()
    assert opt.step()
    out = {}
    for n in grads:
        d = before[n] - params[n].detach()
        assert torch.equal(d, torch.full((N,), d[0].item())), (n, d)
        out[n] = d[0].item()
    return out


def test_step_lr_reaches_the_pservers(pservers):
    c = client(pservers)
    w = param()
    opt = optimizer(c, [("w", w)])
    assert isinstance(opt, torch.optim.Optimizer)
    assert len(opt.param_groups) == 1
    group = opt.param_groups[0]
    assert group["lr"] == 1.0 and group["rule"] == "sgd"
    assert group["param_names"] == ["w"] and group["params"][0] is w
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    seen = []
    for _ in range(4):
        seen.append(drops(opt, {"w": 2.0})["w"])
        sched.step()
    assert seen == [2.0, 1.0, 0.5, 0.25]
    # The rate of the last scheduler step is sent with the next push.
    assert c.rules()["w"].lr == 0.125
    assert opt.param_groups[0]["lr"] == 0.0625
    assert drops(opt, {"w": 2.0})["w"] == 0.125
    assert c.rules()["w"].lr == 0.0625
    opt.close()


def test_two_groups_with_their_own_rates(pservers):
    c = client(pservers)
    a, b, e = param(), param(), param()
    opt = optimizer(c, [{"params": [("a", a), ("e", e)], "lr": 0.5},
                        {"params": [("b", b)], "lr": 0.25}])
    assert [g["lr"] for g in opt.param_groups] == [0.5, 0.25]
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, [lambda epoch: 0.5 ** epoch, lambda epoch: 1.0])
    assert drops(opt, {"a": 4.0, "b": 4.0, "e": 8.0}) == \
        {"a": 2.0, "b": 1.0, "e": 4.0}
    sched.step()
    assert [g["lr"] for g in opt.param_groups] == [0.25, 0.25]
    assert drops(opt, {"a": 4.0, "b": 4.0, "e": 4.0}) == \
        {"a": 1.0, "b": 1.0, "e": 1.0}
    rules = c.rules()
    assert (rules["a"].lr, rules["e"].lr, rules["b"].lr) == (0.25, 0.25, 0.25)
    opt.close()


def test_parameters_with_different_rules_make_groups(pservers):
    c = fabps.PServerClient(
        addresses=pservers.addresses, provider="tcp;ofi_rxm",
        interface="127.0.0.1", rule=fabps.Rule(kind="sgd", lr=1.0),
        rules={"m": fabps.Rule(kind="momentum", lr=0.5, momentum=0.5)},
        rpc_timeout_ms=5000, init_wait_ms=30000, block_elements=4)
    w, m = param(), param()
    opt = optimizer(c, [("w", w), ("m", m)])
    groups = opt.param_groups
    assert [g["param_names"] for g in groups] == [["w"], ["m"]]
    assert groups[1]["rule"] == "momentum" and groups[1]["momentum"] == 0.5
    assert groups[1]["lr"] == 0.5 and not groups[1]["nesterov"]
    with pytest.raises(ValueError, match=r"param_groups\[0\]: m and w2"):
        fabps.torch.DistributedOptimizer(
            c, [{"params": [("w2", param()), ("m", param())], "lr": 1.0}])
    with pytest.raises(RuntimeError, match="fixed at construction"):
        opt.add_param_group({"params": [param()]})
    # Only lr changes: the rest is the pservers' rule.
    groups[1]["momentum"] = 0.9
    with pytest.raises(ValueError, match=r"\['momentum'\].*only lr"):
        opt.step()
    opt.close()


def test_state_dict_round_trip(pservers):
    c = client(pservers)
    w = param()
    opt = optimizer(c, [("w", w)])
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    for _ in range(2):
        drops(opt, {"w": 2.0})
        sched.step()
    drops(opt, {"w": 2.0})  # sends lr 0.25
    sd = opt.state_dict()
    assert sd["param_groups"][0]["lr"] == 0.25
    assert sd["param_groups"][0]["initial_lr"] == 1.0
    assert sd["param_groups"][0]["params"] == [0]
    assert sd["param_groups"][0]["param_names"] == ["w"]
    assert sd["state"] == {0: {"rule": "sgd", "lr": 0.25, "step": 3}}
    sched_sd = sched.state_dict()
    opt.close()
    c.close()

    # Another trainer sets another rate; the loaded state sets it back.
    c2 = client(pservers)
    c2.set_learning_rates({"w": 1.0})
    w2 = param()
    opt2 = optimizer(c2, [("w", w2)])
    assert torch.equal(w2.detach(), w.detach())
    sched2 = torch.optim.lr_scheduler.StepLR(opt2, step_size=1, gamma=0.5)
    opt2.load_state_dict(sd)
    sched2.load_state_dict(sched_sd)
    assert c2.rules()["w"].lr == 0.25
    assert opt2.steps == 3
    assert opt2.param_groups[0]["lr"] == 0.25
    sched2.step()
    assert drops(opt2, {"w": 2.0})["w"] == 0.25
    with pytest.raises(ValueError, match="2 parameter groups"):
        opt2.load_state_dict({"state": {}, "param_groups": [
            sd["param_groups"][0], sd["param_groups"][0]]})
    bad = dict(sd["param_groups"][0], rule="adam")
    with pytest.raises(ValueError, match="rule"):
        opt2.load_state_dict({"state": {}, "param_groups": [bad]})
    opt2.close()


def test_bad_rates_are_refused(pservers):
    c = client(pservers)
    w = param()
    opt = optimizer(c, [("w", w)])
    before = w.detach().clone()
    for bad in (math.nan, -0.5, math.inf, "fast"):
        opt.param_groups[0]["lr"] = bad
        opt.zero_grad()
        # The push in backward refuses it before anything is sent.
        with pytest.raises(ValueError, match=r"lr.*parameters w"):
            (w * 1.0).sum().backward()
    opt.param_groups[0]["lr"] = 1.0
    opt.zero_grad()
    opt.pull()
    assert torch.equal(w.detach(), before)
    with pytest.raises(fabps.InvalidArgument, match="'w'"):
        c.set_learning_rates({"w": -1.0})
    with pytest.raises(fabps.InvalidArgument, match="'w'"):
        c.set_learning_rates({"w": math.nan})
    with pytest.raises(fabps.NotFound, match="'nope'"):
        c.set_learning_rates({"nope": 0.5})
    assert c.rules()["w"].lr == 1.0
    opt.close()


def test_linear_decay_rule_keeps_its_schedule(pservers):
    c = client(pservers, fabps.Rule(kind="sgd", lr=1.0,
                                    schedule="linear_decay", final_lr=0.5,
                                    decay_steps=10))
    w = param()
    opt = optimizer(c, [("w", w)], overlap_push=False)
    assert opt.param_groups[0]["schedule"] == "linear_decay"
    opt.param_groups[0]["lr"] = 0.5
    opt.zero_grad()
    (w * 1.0).sum().backward()
    with pytest.raises(fabps.FailedPrecondition, match="'w'.*linear_decay"):
        opt.step()
    opt.close()


def test_restarted_pserver_keeps_the_latest_rate(pservers):
    c = client(pservers)
    w = param()
    opt = optimizer(c, [("w", w)])
    opt.param_groups[0]["lr"] = 0.25
    assert drops(opt, {"w": 2.0})["w"] == 0.5
    for i in range(2):
        pservers.kill(i)
        pservers.start(i)
    # The first call after the restart may meet the old connections.
    for _ in range(5):
        try:
            rules = c.rules(timeout=10)
            break
        except fabps.PeerError:
            continue
    assert rules["w"].lr == 0.25
    # The step that meets the restart may be lost; the next one is whole.
    opt.zero_grad()
    (w * 2.0).sum().backward()
    opt.step()
    opt.pull()
    assert drops(opt, {"w": 2.0})["w"] == 0.5
    opt.close()
