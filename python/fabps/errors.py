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


class IOError(Error, builtins.OSError):  # noqa: A001 - the Status code's name
    code = "IOError"


class TimedOut(Error, TimeoutError):
    code = "TimedOut"


class Unavailable(Error, ConnectionError):
    code = "Unavailable"


class AlreadyExists(Error):
    code = "AlreadyExists"


class FailedPrecondition(Error):
    code = "FailedPrecondition"


class Unimplemented(Error, NotImplementedError):
    code = "Unimplemented"


class Cancelled(Error):
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


__all__ = ["Error"] + sorted(_BY_CODE)
