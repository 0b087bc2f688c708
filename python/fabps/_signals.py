"""Loading fabps._core without losing Python's signal handlers.

The extension links libfabric, which links provider libraries; one of them
(libinfinipath, under libfabric's psm provider) installs, from a library
constructor, handlers for SIGINT, SIGTERM, SIGSEGV, SIGBUS, SIGILL and
SIGABRT that exit the process with status 1. Ctrl-C would then end the
interpreter instead of raising KeyboardInterrupt. import_core() loads the
extension and puts back the handlers Python had (and faulthandler's).
"""

import faulthandler
import importlib
import signal
import threading

_SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGSEGV, signal.SIGBUS,
            signal.SIGILL, signal.SIGABRT]


def import_core(package):
    saved = {s: signal.getsignal(s) for s in _SIGNALS}
    core = importlib.import_module(package + "._core")
    if threading.current_thread() is not threading.main_thread():
        return core  # signal.signal works only there; nothing to restore
    for s, handler in saved.items():
        if handler is not None:  # None: set outside Python, unknown
            signal.signal(s, handler)
    if faulthandler.is_enabled():
        faulthandler.disable()
        faulthandler.enable()
    return core
