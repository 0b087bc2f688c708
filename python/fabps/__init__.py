"""fabps: the trainer side of the fabps parameter server, from Python.

    import numpy as np, fabps
    w = np.zeros(1000, np.float32)
    with fabps.PServerClient(addresses=["127.0.0.1:7000"],
                             rule=fabps.Rule("sgd", lr=0.1)) as c:
        c.init_params({"w": w})          # True for the trainer that won
        c.push({"w": np.ones_like(w)}).wait()
        c.pull({"w": w})                 # w == -0.1 everywhere

Submodules:
  fabps.torch     PyTorch (import fabps.torch; needs torch):
                  fabps.torch.DistributedOptimizer trains a torch.nn.Module's
                  parameters through the pservers (backward pushes the
                  gradients, step() pulls the values the pservers' update
                  rule computed); fabps.torch.Embedding and
                  fabps.torch.EmbeddingBag are torch.nn modules whose table
                  lives on the pservers (defined in fabps.embedding).
  fabps.client    PServerClient and Handle (fabps.PServerClient).
  fabps.reader    MasterReader: this trainer's share of the dataset.
  fabps.hashed_table  HashedTable: a table keyed by any 64-bit id.
  fabps.errors    the exception classes.
  fabps.log       log lines in the format of the C++ processes.
  fabps._core     the compiled extension (typed in fabps/_core.pyi).

Installed from the wheel the build makes (pip install
<build>/python/dist/fabps-*.whl) or imported from <build>/python; see the
package's README (python/README.md). Errors are the classes of fabps.errors: fabps.Error
and one subclass per Status code; fabps.PeerError is the base of those of
a peer that is gone or late (Unavailable, TimedOut, Cancelled, IOError).
fabps.IOError is not exported by `from fabps import *` (it would shadow
the built-in IOError).
"""

from .errors import *  # noqa: F401,F403 - the exception classes
from .errors import IOError  # noqa: F401,A004 - fabps.IOError, not in __all__
from .errors import __all__ as _error_names
from ._signals import import_core as _import_core

_import_core(__name__)  # loads fabps._core, keeping Python's signal handlers
from . import _core  # noqa: E402 - loaded: binds it, typed by _core.pyi
Rule = _core.Rule  # first: client.py and reader.py use it
read_records = _core.read_records
from .client import DEFAULT_SAVE_TIMEOUT, DEFAULT_TIMEOUT, Handle, PServerClient
from .reader import MasterReader
from .hashed_table import HashedTable

from ._version import version as __version__  # CMake's project version

__all__ = ["PServerClient", "Handle", "MasterReader", "Rule", "read_records",
           "HashedTable",
           "DEFAULT_TIMEOUT", "DEFAULT_SAVE_TIMEOUT"] + list(_error_names)
