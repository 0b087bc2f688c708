"""Reads whole recordio files (the format of recordio/format.h) in Python,
for the torch example's test set: the fabps package reads training records
through the master only, and its extension has no file reader.

A file is a sequence of chunks: a 32-byte header (magic "FRIO", version 1,
compression 0 none / 1 zstd, record count, stored and raw payload sizes,
CRC32C of the stored payload, CRC32C of header bytes 0..27), then the
payload of (uint32 little-endian length, bytes) records. Every header and
payload is checked (magic, version, both CRCs, size bounds, record framing)
before use; a check that fails raises RecordioError naming the file and the
offset, as the C++ reader's Corruption does. zstd payloads are decompressed
by the system's libzstd (ctypes).
"""

import ctypes
import ctypes.util
import struct

import numpy as np

_MAGIC = b"FRIO"
_VERSION = 1
_HEADER = struct.Struct("<4sBBHIIIIII")  # 32 bytes
_MAX_BYTES = 256 << 20


class RecordioError(Exception):
    """A file that is not valid recordio."""


def _crc32c_table():
    table = np.zeros(256, dtype=np.uint32)
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table[i] = c
    return [int(x) for x in table]


_TABLE = _crc32c_table()


def crc32c(data):
    """CRC32C (Castagnoli) of `data`, as base/crc32c.h's Value."""
    crc = 0xFFFFFFFF
    table = _TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


_zstd = None


def _decompress(stored, raw_size, where):
    global _zstd
    if _zstd is None:
        name = ctypes.util.find_library("zstd") or "libzstd.so.1"
        _zstd = ctypes.CDLL(name)
        _zstd.ZSTD_decompress.restype = ctypes.c_size_t
        _zstd.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                                          ctypes.c_char_p, ctypes.c_size_t]
        _zstd.ZSTD_isError.restype = ctypes.c_uint
        _zstd.ZSTD_isError.argtypes = [ctypes.c_size_t]
    out = ctypes.create_string_buffer(max(raw_size, 1))
    n = _zstd.ZSTD_decompress(out, raw_size, stored, len(stored))
    if _zstd.ZSTD_isError(n) or n != raw_size:
        raise RecordioError(f"{where}: zstd payload does not decompress to "
                            f"the header's {raw_size} bytes")
    return out.raw[:raw_size]


def read_records(path):
    """Every record of the recordio file `path`, as a list of bytes."""
    with open(path, "rb") as f:
        data = f.read()
    records = []
    at = 0
    while at < len(data):
        where = f"{path} at offset {at}"
        if len(data) - at < _HEADER.size:
            raise RecordioError(f"{where}: truncated chunk header")
        head = data[at:at + _HEADER.size]
        (magic, version, comp, _r0, count, stored_size, raw_size, payload_crc,
         _r1, head_crc) = _HEADER.unpack(head)
        if magic != _MAGIC:
            raise RecordioError(f"{where}: bad magic")
        if crc32c(head[:28]) != head_crc:
            raise RecordioError(f"{where}: header CRC32C mismatch")
        if version != _VERSION or comp > 1:
            raise RecordioError(
                f"{where}: version {version}, compression {comp}")
        if stored_size > _MAX_BYTES or raw_size > _MAX_BYTES or \
                count * 4 > raw_size or \
                (comp == 0 and stored_size != raw_size):
            raise RecordioError(f"{where}: chunk sizes out of bounds")
        at += _HEADER.size
        stored = data[at:at + stored_size]
        if len(stored) != stored_size:
            raise RecordioError(f"{where}: truncated payload")
        if crc32c(stored) != payload_crc:
            raise RecordioError(f"{where}: payload CRC32C mismatch")
        at += stored_size
        payload = _decompress(stored, raw_size, where) if comp else stored
        pos = 0
        for _ in range(count):
            if raw_size - pos < 4:
                raise RecordioError(f"{where}: record framing overruns")
            (n,) = struct.unpack_from("<I", payload, pos)
            pos += 4
            if n > raw_size - pos:
                raise RecordioError(f"{where}: record framing overruns")
            records.append(payload[pos:pos + n])
            pos += n
        if pos != raw_size:
            raise RecordioError(f"{where}: {raw_size - pos} bytes after "
                                "the last record")
    return records
