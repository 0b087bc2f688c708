"""A trainer process for fabps_package_test.py's Ctrl-C tests.

  fabps_child.py PROVIDER ADDRESS MODE

MODE wait: initializes one parameter, prints "ready", reads a line (the
parent freezes the pserver meanwhile), pushes and waits. MODE call: pulls
from an uninitialized job (the call itself blocks). Either way it prints
"blocked" just before blocking; on KeyboardInterrupt it prints
"interrupted". In mode wait it then reads a line (the parent thaws the
pserver), pushes again and pulls, and prints "recovered" with the number of
pushes the pserver applied (the interrupted one included: it went on).
Exits 0 unless something failed.
"""

import sys

import numpy as np

import fabps

provider, address, mode = sys.argv[1:4]
c = fabps.PServerClient(addresses=[address], provider=provider,
                        rpc_timeout_ms=2000)
w = np.zeros(1 << 16, np.float32)
try:
    if mode == "wait":
        c.init_params({"w": w})
        c.push({"w": w}).wait()  # registered with the pserver now
        print("ready", flush=True)
        sys.stdin.readline()
        h = c.push({"w": np.ones_like(w)}, timeout=60)
        print("blocked", flush=True)
        h.wait(timeout=60)
    else:
        print("blocked", flush=True)
        c.pull({"w": w}, timeout=60)
    print("returned", flush=True)
    sys.exit(1)
except KeyboardInterrupt:
    print("interrupted", flush=True)
if mode == "wait":
    sys.stdin.readline()
    c.push({"w": np.ones_like(w)}, timeout=30).wait(timeout=30)
    c.pull({"w": w}, timeout=30)
    print("recovered", round(float(-w[0]) / 0.01), flush=True)
c.close()
