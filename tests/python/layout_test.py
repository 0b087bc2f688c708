"""The layout format and the control-plane IDL from another language.

Implements docs/formats/layout.md here in Python (CRC32C, FNV-1a, the
encoding, the block cut and the owner formula) without calling fabps code,
starts a real fabps-pserver with a job token, does the fabps.Auth handshake
of thrift/auth.thrift by hand over a framed binary Thrift connection, and
initializes the pserver with a Python-encoded layout through the classes
`thrift --gen py` made from the IDL at build time.

  /usr/bin/python3 layout_test.py --pserver BIN --gen-py DIR [unittest args]
"""

import argparse
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import types
import unittest

ARGS = None  # set in main(): --pserver, --gen-py

# --- docs/formats/layout.md, implemented from the text -----------------------


def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _CRC_TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


DTYPE_SIZE = {1: 4, 2: 8, 3: 4, 4: 8}  # float32, float64, int32, int64


def cut_blocks(params, block_elements, num_pservers):
    """[(param index, owner, value bytes)] in global block id order."""
    blocks = []
    for p, (name, dtype, shape) in enumerate(params):
        total = 1
        for d in shape:
            total *= d
        rows = shape[0] if shape else 1
        row_elements = total // rows
        rows_per_block = max(1, block_elements // row_elements)
        count = (rows + rows_per_block - 1) // rows_per_block
        base = fnv1a64(name.encode()) % num_pservers
        for b in range(count):
            first_row = b * rows_per_block
            num_rows = min(rows_per_block, rows - first_row)
            owner = (base + b % num_pservers) % num_pservers
            size = num_rows * row_elements * DTYPE_SIZE[dtype]
            blocks.append((p, owner, size))
    return blocks


def encode_layout(params, block_elements, num_pservers, num_blocks=None):
    """params: [(name, dtype, [dims])]. num_blocks overrides the true count."""
    if num_blocks is None:
        num_blocks = len(cut_blocks(params, block_elements, num_pservers))
    out = bytearray(b"FABPSLY1")
    out += struct.pack("<IIQI", 1, num_pservers, block_elements, len(params))
    for name, dtype, shape in params:
        raw = name.encode()
        out += struct.pack("<I", len(raw)) + raw
        out += struct.pack("<II", dtype, len(shape))
        out += b"".join(struct.pack("<Q", d) for d in shape)
    out += struct.pack("<Q", num_blocks)
    out += struct.pack("<I", crc32c(out))
    return bytes(out)


# --- a real pserver ----------------------------------------------------------

TOKEN = b"python-test-token"
NUM_PSERVERS = 2  # this test runs index 0: the owner formula decides
PARAMS = [("fc1.w", 1, [10, 4]), ("fc1.b", 1, [4]), ("emb", 2, [7, 3, 2]),
          ("scale", 2, [])]
BLOCK_ELEMENTS = 8


class PServerProcess:
    """fabps-pserver --index 0 on a free port (--port 0, --port-file), its
    state in a temporary directory; stop() ends only this process."""

    def __init__(self):
        self.dir = tempfile.TemporaryDirectory(prefix="fabps-pytest-")
        d = self.dir.name
        token_file = os.path.join(d, "token")
        with open(token_file, "wb") as f:
            f.write(TOKEN + b"\n")
        port_file = os.path.join(d, "port")
        self.log_path = os.path.join(d, "pserver.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [ARGS.pserver, "--provider", "tcp;ofi_rxm", "--host", "127.0.0.1",
             "--port", "0", "--port-file", port_file, "--index", "0",
             "--num-pservers", str(NUM_PSERVERS), "--checkpoint-dir",
             os.path.join(d, "ckpt"), "--save-period", "0",
             "--apply-threads", "1", "--token-file", token_file],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while True:
            try:
                with open(port_file) as f:
                    text = f.read()
                if text.endswith("\n"):
                    self.port = int(text)
                    return
            except FileNotFoundError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("fabps-pserver did not start:\n" +
                                   self.log_text())
            time.sleep(0.01)

    def log_text(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)
        self.log.close()
        self.dir.cleanup()


# The generated modules and python3-thrift's, imported once --gen-py is known.
T = types.SimpleNamespace()


def import_thrift_modules():
    sys.path.insert(0, ARGS.gen_py)
    from thrift.protocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport
    from fabps_thrift.auth import Auth, constants as auth_constants
    from fabps_thrift.pserver import PServer, ttypes
    T.__dict__.update(TBinaryProtocol=TBinaryProtocol, TSocket=TSocket,
                      TTransport=TTransport, Auth=Auth,
                      auth_constants=auth_constants, PServer=PServer,
                      ttypes=ttypes)


def connect(port):
    sock = T.TSocket.TSocket("127.0.0.1", port)
    sock.setTimeout(10000)
    transport = T.TTransport.TFramedTransport(sock)
    transport.open()
    return transport, T.TBinaryProtocol.TBinaryProtocol(transport)


def authenticate(protocol, token):
    """The handshake as thrift/auth.thrift describes it. Returns None when
    accepted, the TApplicationException when refused."""
    from thrift.Thrift import TApplicationException, TMessageType
    protocol.writeMessageBegin(T.auth_constants.AUTH_METHOD,
                               TMessageType.CALL, 1)
    T.Auth.Auth_args(token=token).write(protocol)
    protocol.writeMessageEnd()
    protocol.trans.flush()
    name, mtype, _ = protocol.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        x = TApplicationException()
        x.read(protocol)
        protocol.readMessageEnd()
        return x
    T.Auth.Auth_result().read(protocol)
    protocol.readMessageEnd()
    if mtype != TMessageType.REPLY or name != T.auth_constants.AUTH_METHOD:
        raise AssertionError("unexpected answer %r %r" % (name, mtype))
    return None


class LayoutFormatTest(unittest.TestCase):
    """The Python side alone, against the spec's own numbers."""

    def test_crc32c_check_value(self):
        self.assertEqual(crc32c(b"123456789"), 0xE3069283)

    def test_sizes_as_the_spec_counts_them(self):
        self.assertEqual(len(encode_layout([], 1, 1)), 40)
        self.assertEqual(len(encode_layout([("ab", 1, [3, 4])], 1, 1)),
                         40 + 12 + 2 + 16)


class PServerTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        import_thrift_modules()

    def setUp(self):
        self.pserver = PServerProcess()
        self.transports = []

    def tearDown(self):
        for t in self.transports:
            t.close()
        result = getattr(self._outcome, "result", None)
        if result is not None and any(
                t is self for t, _ in result.errors + result.failures):
            sys.stderr.write(self.pserver.log_text())
        self.pserver.stop()

    def client(self, token=TOKEN):
        transport, protocol = connect(self.pserver.port)
        self.transports.append(transport)
        if token is not None:
            refused = authenticate(protocol, token)
            self.assertIsNone(refused, str(refused))
        return T.PServer.Client(protocol), protocol

    def test_wrong_or_missing_token_is_refused(self):
        from thrift.Thrift import TApplicationException
        _, protocol = self.client(token=None)
        refused = authenticate(protocol, b"not-the-token")
        self.assertIsInstance(refused, TApplicationException)
        self.assertIn("token", refused.message)
        c, _ = self.client(token=None)
        with self.assertRaises(TApplicationException) as e:
            c.GetStatus()
        self.assertIn("job token required", e.exception.message)

    def init_config(self, layout, rules=None):
        return T.ttypes.InitConfig(layout=layout,
                                   default_rule=T.ttypes.UpdateRule(),
                                   rules=rules or {})

    def expect_refused(self, c, config, code, text):
        with self.assertRaises(T.ttypes.PsError) as e:
            c.InitParams(7, config)
        self.assertEqual(e.exception.code, code, e.exception.message)
        self.assertIn(text, e.exception.message)

    def test_python_layout_is_accepted_and_corrupt_ones_refused(self):
        c, _ = self.client()
        self.assertEqual(c.BeginInitParams(7),
                         T.ttypes.InitGrantKind.GRANTED)
        good = encode_layout(PARAMS, BLOCK_ELEMENTS, NUM_PSERVERS)

        damaged = bytearray(good)
        damaged[30] ^= 0x01  # a byte of the first name
        self.expect_refused(c, self.init_config(bytes(damaged)),
                            T.ttypes.PsErrorCode.CORRUPTION,
                            "CRC32C mismatch")
        blocks = cut_blocks(PARAMS, BLOCK_ELEMENTS, NUM_PSERVERS)
        self.expect_refused(
            c, self.init_config(encode_layout(PARAMS, BLOCK_ELEMENTS,
                                              NUM_PSERVERS, len(blocks) + 1)),
            T.ttypes.PsErrorCode.CORRUPTION, "block count")
        self.expect_refused(c, self.init_config(good[:-5] + good[-4:]),
                            T.ttypes.PsErrorCode.CORRUPTION, "layout bytes")
        self.expect_refused(
            c, self.init_config(encode_layout(PARAMS, BLOCK_ELEMENTS, 3)),
            T.ttypes.PsErrorCode.INVALID_ARGUMENT, "this job has 2")

        # A momentum rule that leaves `momentum` out: the pserver must read
        # the IDL's default, the C API's 0.9, not 0.
        momentum = T.ttypes.UpdateRule(kind=1)
        momentum.momentum = None  # not sent at all
        c.InitParams(7, self.init_config(good, {"fc1.w": momentum}))

        mine = [(i, size) for i, (_, owner, size) in enumerate(blocks)
                if owner == 0]
        theirs = [i for i, (_, owner, _) in enumerate(blocks) if owner != 0]
        self.assertTrue(mine and theirs)  # the formula splits this layout
        for block, size in mine:
            with self.assertRaises(T.ttypes.PsError):
                c.InitBlock(7, block, b"\0" * (size + 1))
            c.InitBlock(7, block, b"\0" * size)
        with self.assertRaises(T.ttypes.PsError) as e:
            c.InitBlock(7, theirs[0], b"\0" * blocks[theirs[0]][2])
        self.assertIn("belongs to pserver 1", e.exception.message)
        self.assertTrue(c.FinishInitParams(7))

        status = c.GetStatus()
        self.assertTrue(status.initialized)
        self.assertEqual(status.num_blocks, len(mine))
        stored = c.GetInitConfig()
        self.assertEqual(stored.layout, good)
        self.assertEqual(stored.rules["fc1.w"].kind, 1)
        self.assertEqual(stored.rules["fc1.w"].momentum, 0.9)
        self.assertEqual(stored.default_rule, T.ttypes.UpdateRule())


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--pserver", required=True)
    parser.add_argument("--gen-py", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)


if __name__ == "__main__":
    main()
