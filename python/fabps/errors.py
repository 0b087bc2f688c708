"""Exceptions of fabps: one class per Status code of base/status.h.

Every error the C++ library reports arrives as the class named after its
code, with the Status message as its text. All derive from fabps.Error, and
each also from the built-in exception a Python caller would expect:

    try:
        client.pull(params)
    except fabps.TimedOut:      # also a TimeoutError
        ...
    except fabps.Unavailable:   # also a ConnectionError
        ...

A bad buffer (not contiguous, wrong dtype or size, read-only for a pull) is
fabps.InvalidArgument, a ValueError; an unknown parameter name is
fabps.NotFound, a LookupError.

fabps.PeerError is the family of a peer that is gone or late: Unavailable,
TimedOut, Cancelled and IOError derive from it, so one clause catches every
error after which the next call may succeed (the client reconnects):

    except fabps.PeerError:     # the step is lost; go on
        ...

fabps.IOError keeps the Status code's name and is an OSError; it is not in
__all__, so `from fabps import *` leaves the built-in IOError (OSError)
alone.
"""

import builtins


class Error(Exception):
    """A fabps call failed; `code` is the Status code's name."""

    code = "Unknown"


class InvalidArgument(Error, ValueError):
    code = "InvalidArgument"


class NotFound(Error, LookupError):
    code = "NotFound"


class Corruption(Error):
    code = "Corruption"


class PeerError(Error):
    """A peer is gone or late (a pserver died, restarts or is frozen): the
    operation may succeed when tried again. The base of Unavailable,
    TimedOut, Cancelled and IOError; never raised itself."""


class IOError(PeerError, builtins.OSError):  # noqa: A001 - the code's name
    code = "IOError"


class TimedOut(PeerError, TimeoutError):
    code = "TimedOut"


class Unavailable(PeerError, ConnectionError):
    code = "Unavailable"


class AlreadyExists(Error):
    code = "AlreadyExists"


class FailedPrecondition(Error):
    code = "FailedPrecondition"


class Unimplemented(Error, NotImplementedError):
    code = "Unimplemented"


class Cancelled(PeerError):
    code = "Cancelled"


class ResourceExhausted(Error):
    code = "ResourceExhausted"


class PermissionDenied(Error, PermissionError):
    code = "PermissionDenied"


_BY_CODE = {
    c.code: c
    for c in (InvalidArgument, NotFound, Corruption, IOError, TimedOut,
              Unavailable, AlreadyExists, FailedPrecondition, Unimplemented,
              Cancelled, ResourceExhausted, PermissionDenied)
}


def error_class(code_name):
    """The class for Status::CodeName(code) (fabps.Error if unknown)."""
    return _BY_CODE.get(code_name, Error)


# The names `from fabps import *` exports: every class but IOError, which
# would shadow the built-in IOError (OSError) in the importing module.
__all__ = ["Error", "PeerError"] + sorted(n for n in _BY_CODE
                                          if not hasattr(builtins, n))
