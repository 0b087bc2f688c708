# Types of fabps._core, the pybind11 extension (python/src/*.cc). Written by
# hand from the bindings' signatures; tests/python/wheel_install_test.py runs
# mypy's stubtest against the built module, so a binding added, removed or
# renamed without this file fails there. Users call the package's classes
# (fabps.PServerClient, fabps.MasterReader); of this module fabps exports
# Rule and read_records as they are.
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy

class Rule:
    """An update rule the pservers apply to a parameter
    (protocol/rule_config.h); validated when built (fabps.InvalidArgument)."""

    KINDS: Tuple[str, ...]
    def __init__(
        self,
        kind: str = "sgd",
        lr: float = 0.01,
        schedule: str = "constant",
        final_lr: float = 0.0,
        decay_steps: int = 0,
        momentum: float = 0.9,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-08,
        adagrad_initial: float = 0.0,
        weight_decay: float = 0.0,
        clip_value: float = 0.0,
        clip_norm: float = 0.0,
    ) -> None: ...
    @property
    def kind(self) -> str: ...
    @property
    def schedule(self) -> str: ...
    @property
    def lr(self) -> float: ...
    @property
    def final_lr(self) -> float: ...
    @property
    def decay_steps(self) -> int: ...
    @property
    def momentum(self) -> float: ...
    @property
    def beta1(self) -> float: ...
    @property
    def beta2(self) -> float: ...
    @property
    def epsilon(self) -> float: ...
    @property
    def adagrad_initial(self) -> float: ...
    @property
    def weight_decay(self) -> float: ...
    @property
    def clip_value(self) -> float: ...
    @property
    def clip_norm(self) -> float: ...

class Handle:
    """A transfer in flight (fabps.Handle wraps it)."""

    def wait(self, timeout: float) -> None: ...
    def done(self) -> bool: ...

# (name, array) pairs as fabps.client builds them; the arrays are C-contiguous
# views of the caller's buffers.
_Items = Sequence[Tuple[str, numpy.ndarray]]
# (address, bytes) ranges to forget when the transfer is over.
_Transient = List[Tuple[int, int]]

class PServerClient:
    """The C++ trainer::PServerClient behind fabps.PServerClient; every
    argument is explicit here (the package supplies the defaults)."""

    def __init__(
        self,
        store: Optional[str],
        job: str,
        addresses: List[str],
        provider: str,
        interface: str,
        trainer_id: int,
        rule: Optional[Rule],
        rules: Dict[str, Rule],
        rpc_timeout_ms: int,
        init_wait_ms: int,
        block_elements: Optional[int],
    ) -> None: ...
    def begin_init(self, timeout: Optional[float]) -> bool: ...
    def init_param(self, name: str, array: numpy.ndarray) -> None: ...
    def init_table(
        self,
        name: str,
        dtype: str,
        row_shape: List[int],
        buckets: int,
        init: str,
        init_scale: float,
        seed: int,
        admit_after: int,
        admit_probability: float,
        ttl_seconds: int,
        budget_bytes: int,
        rows: bytes = ...,
    ) -> None: ...
    def table_stats(self, timeout: float) -> List[Dict[str, Any]]: ...
    def finish_init(self, timeout: Optional[float]) -> None: ...
    def start(
        self,
        items: _Items,
        keep: object,
        transient: _Transient,
        timeout: float,
        pull: bool,
        step: Optional[int] = None,
    ) -> Handle: ...
    def start_push_pull(
        self,
        grads: _Items,
        params: _Items,
        keep: object,
        transient: _Transient,
        timeout: float,
    ) -> Handle: ...
    def sync_step(self, timeout: float) -> int: ...
    def start_rows(
        self,
        name: str,
        ids: numpy.ndarray,
        values: numpy.ndarray,
        keep: object,
        transient: _Transient,
        timeout: float,
        pull: bool,
        step: Optional[int] = None,
    ) -> Handle: ...
    def save_model(self, dir: str, timeout: float) -> None: ...
    def set_learning_rates(
        self, rates: Dict[str, float], timeout: float
    ) -> None: ...
    def rules(self, timeout: float) -> Dict[str, Rule]: ...
    def forget(self, ptr: int, bytes: int) -> None: ...
    def registration_stats(self) -> Dict[str, int]: ...
    def in_flight(self) -> int: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def trainer_id(self) -> int: ...
    @property
    def provider(self) -> str: ...

class MasterReader:
    """The C++ trainer::MasterClient behind fabps.MasterReader."""

    def __init__(
        self,
        address: str,
        store: str,
        job: str,
        trainer_id: int,
        rpc_timeout_ms: int,
        rpc_retry_ms: int,
        wait_for_task_ms: int,
    ) -> None: ...
    def set_dataset(self, globs: List[str]) -> None: ...
    def start_pass(self, pass_: int) -> None: ...
    def next_batch(self, max_records: int) -> List[bytes]: ...
    def request_save_model(self, block_ms: int) -> bool: ...
    def status(self) -> Dict[str, Any]: ...
    @property
    def trainer_id(self) -> int: ...
    @property
    def tasks_reported_failed(self) -> int: ...

def read_records(path: str) -> List[bytes]: ...
def set_log_role(role: str, index: int = -1) -> None: ...
