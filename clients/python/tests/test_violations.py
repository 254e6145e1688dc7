"""The client against a fake worker that breaks the protocol (PROTOCOL.md §3, §12.2, §13): every violation
is an exception and closes the connection; nothing hangs."""

import array
import os
import shutil
import socket
import struct
import tempfile
import threading
import unittest

import trackd
from trackd import _wire as w
from trackd.errors import MEDIA_SERVICES_WERE_RESET, PROTOCOL_VIOLATION

TIMEOUT = 30


def track_record():
    # §7.2, a record: its size, the fixed part, then language, profile and level (empty strings), the pixel aspect
    # ratio, the colorimetry record, bitRate, channelLayout, naturalTimeScale and minFrameDuration, then no segments
    # and no metadata (§7.6, §7.5).
    body = (struct.pack('<IBIIIdqiIqiIIIIBBBi', 1, 1, w.str_to_fourcc('avc1'), 64, 48, 30.0, 1, 1, 1, 0, 1, 1,
                        0, 0, 24, 0, 8, 1, 0) + b'\x00\x00' * 3
            + struct.pack('<IIIBBBBI', 1, 1, 4, 1, 1, 1, 1, 0) + b'\x00\x00' + struct.pack('<iqiI', 30, 1, 30, 1)
            + b'\x00\x00' * 2)
    return struct.pack('<I', len(body)) + body


ASSET_OPENED = struct.pack('<IqiIH', 1, 1, 1, 1, 1) + track_record() + b'\x00\x00'  # no asset metadata
OUTPUT_CREATED = struct.pack('<IBIIII', 1, 1, w.str_to_fourcc('L008'), 64, 48, 0)


def create_output(conn, read):
    """A fake worker's script up to an output: AssetOpened for the OpenAsset, OutputCreated (L008 64x48) for the
    CreateOutput; returns the CreateOutput's request id."""
    _, rid, _ = read()
    conn.sendall(w.frame(w.ASSET_OPENED, ASSET_OPENED, rid))
    type_, rid, _ = read()
    assert type_ == w.CREATE_OUTPUT
    conn.sendall(w.frame(w.OUTPUT_CREATED, OUTPUT_CREATED, rid))
    return rid


class FakeWorker:
    """Listens on a socket path, answers Hello (with hello(request_id)'s bytes when given), then runs
    script(conn, read_request) in a thread."""

    def __init__(self, script, hello=None):
        self.dir = tempfile.mkdtemp(prefix='trackd-fake-')
        self.path = os.path.join(self.dir, 'sock')
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.listener.settimeout(TIMEOUT)
        self.script = script
        self.hello = hello
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def read_request(self, conn):
        head = b''
        while len(head) < 16:
            data, anc, _, _ = conn.recvmsg(16 - len(head), socket.CMSG_SPACE(16))
            for _, _, cdata in anc:
                for fd in array.array('i', cdata[:len(cdata) - len(cdata) % 4]):
                    os.close(fd)
            if not data:
                return None, None, None
            head += data
        length, type_, _, rid, _ = w.HEADER.unpack(head)
        payload = b''
        while len(payload) < length:
            payload += conn.recv(length - len(payload))
        return type_, rid, payload

    def run(self):
        conn, _ = self.listener.accept()
        conn.settimeout(TIMEOUT)
        with conn:
            _, rid, _ = self.read_request(conn)
            reply = (struct.pack('<IHIHI', w.MAGIC, 2, w.DEFAULT_MAX_MESSAGE, 4, os.getpid()) + b'\x04\x00fake'
                     + struct.pack('<Q', 0))
            conn.sendall(self.hello(rid) if self.hello else w.frame(w.HELLO_REPLY, reply, rid))
            self.script(conn, lambda: self.read_request(conn))

    def close(self):  # idempotent
        self.thread.join(TIMEOUT)
        self.listener.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class ViolationTests(unittest.TestCase):
    def setUp(self):
        self.media = tempfile.NamedTemporaryFile(suffix='.mp4')
        self.media.write(b'\x00' * 64)
        self.media.flush()
        self.fds_before = set(os.listdir('/proc/self/fd'))

    def tearDown(self):
        self.media.close()

    def run_fake(self, script, hello=None):
        fake = self.fake = FakeWorker(script, hello)
        self.addCleanup(fake.close)
        return trackd.open(self.media.name, socket=fake.path, timeout=TIMEOUT)

    def test_hello_reply_over_the_limit(self):
        """§5: until HelloReply the receive limit is 262,144 bytes; a HelloReply announcing more is refused from its
        header (the fake never sends the payload)."""
        def hello(rid):
            return w.HEADER.pack(w.DEFAULT_MAX_MESSAGE + 1, w.HELLO_REPLY, 0, rid, 0)
        with self.assertRaises(trackd.ProtocolViolation) as cm:
            self.run_fake(lambda conn, read: read(), hello)
        self.assertEqual(cm.exception.message, 'a 262145-byte payload is larger than the limit of 262144')

    def assert_no_fd_leak(self):
        self.fake.close()  # the fake worker's own sockets live in this process too
        self.assertLessEqual(set(os.listdir('/proc/self/fd')) - self.fds_before, set())

    def test_too_many_descriptors_is_ctrunc(self):
        def script(conn, read):
            _, rid, _ = read()
            fds = [os.memfd_create('x') for _ in range(6)]  # more than the client's control buffer holds
            conn.sendmsg([w.frame(w.ASSET_OPENED, ASSET_OPENED, rid)],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', fds))])
            for fd in fds:
                os.close(fd)
        with self.assertRaises(trackd.ProtocolViolation) as cm:
            self.run_fake(script)
        self.assertEqual(cm.exception.code, PROTOCOL_VIOLATION)
        self.assertIn('MSG_CTRUNC', cm.exception.message)
        self.assert_no_fd_leak()

    def test_reserved_header_field(self):
        def script(conn, read):
            _, rid, _ = read()
            conn.sendall(w.HEADER.pack(len(ASSET_OPENED), w.ASSET_OPENED, 0, rid, 1) + ASSET_OPENED)
        with self.assertRaises(trackd.ProtocolViolation) as cm:
            self.run_fake(script)
        self.assertIn('reserved', cm.exception.message)

    def test_appended_bytes_are_ignored(self):
        """§2.1: bytes after the fields the client knows — of a payload, and of a record — are a later revision's."""
        record = track_record()
        # This revision's appended fields (§7.2: the identity display matrix, an empty codec configuration), then
        # three bytes of a later revision.
        current = struct.pack('<9iI', 0x10000, 0, 0, 0, 0x10000, 0, 0, 0, 0x40000000, 0)
        grown = struct.pack('<I', len(record) - 4 + len(current) + 3) + record[4:] + current + b'\x01\x02\x03'
        opened = struct.pack('<IqiIH', 1, 1, 1, 1, 1) + grown + b'\x00\x00' + b'\xff' * 9

        def script(conn, read):
            _, rid, _ = read()
            conn.sendall(w.frame(w.ASSET_OPENED, opened, rid))
            read()  # until the client closes
        asset = self.run_fake(script)
        self.assertEqual([(t.id, t.codec, t.natural_time_scale) for t in asset.tracks], [(1, 'avc1', 30)])
        asset.close()

    def test_record_size_that_lies(self):
        record = track_record()
        lying = struct.pack('<I', len(record) - 5) + record[4:]  # one byte short of its fields

        def script(conn, read):
            _, rid, _ = read()
            conn.sendall(w.frame(w.ASSET_OPENED, struct.pack('<IqiIH', 1, 1, 1, 1, 1) + lying + b'\x00\x00', rid))
        with self.assertRaises(trackd.ProtocolViolation) as cm:
            self.run_fake(script)
        self.assertIn('ends inside its fields', cm.exception.message)

    def test_end_of_file_mid_frame(self):
        def script(conn, read):
            _, rid, _ = read()
            conn.sendall(w.frame(w.ASSET_OPENED, ASSET_OPENED, rid)[:20])
        with self.assertRaises(trackd.TrackdError) as cm:
            self.run_fake(script)
        self.assertEqual(cm.exception.code, MEDIA_SERVICES_WERE_RESET)
        self.assertIn('middle of a message', cm.exception.message)

    def test_unsealed_pool_is_refused(self):
        def script(conn, read):
            rid = create_output(conn, read)
            fd = os.memfd_create('pool', os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, 4096)  # the right size, but not sealed against shrinking
            conn.sendmsg([w.frame(w.POOL_ADDED, struct.pack('<IIIQ', 1, 1, 1, 4096), rid, 1)],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])
            os.close(fd)
            read()  # until the client closes
        asset = self.run_fake(script)
        output = asset.read(pixel_format='L008')
        with self.assertRaises(trackd.TrackdError) as cm:
            next(output)
        self.assertEqual(cm.exception.code, PROTOCOL_VIOLATION)
        self.assertIn('not sealed', cm.exception.message)
        asset.close()
        self.assert_no_fd_leak()

    def test_connection_error_then_requests_fail(self):
        def script(conn, read):
            _, rid, _ = read()
            conn.sendall(w.frame(w.ASSET_OPENED, ASSET_OPENED, rid))
            read()
            error = struct.pack('<i', -11900) + struct.pack('<H', 4) + b'bye!'
            conn.sendall(w.frame(w.ERROR, error, 0))
        asset = self.run_fake(script)
        with self.assertRaises(trackd.TrackdError) as cm:
            asset.read()
        self.assertEqual((cm.exception.code, cm.exception.message), (-11900, 'bye!'))
        with self.assertRaises(trackd.TrackdError) as cm:
            asset.status()
        self.assertEqual(cm.exception.code, MEDIA_SERVICES_WERE_RESET)


if __name__ == '__main__':
    unittest.main()
