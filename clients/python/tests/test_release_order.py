"""Slot releases against a fake worker that records what the client sends (PROTOCOL.md §12.3): every delivered
slot comes back exactly once, in the order the client gave them back, also when a frame is dropped in the middle of
another send (a __del__ that runs inside a send: its ReleaseSlots follows that send, never inside it)."""

import array
import fcntl
import os
import socket
import struct
import tempfile
import unittest

import trackd
from trackd import _wire as w

from test_violations import TIMEOUT, FakeWorker, create_output

SLOTS, SLOT_SIZE = 4, 4096
SAMPLE = struct.Struct('<IIIQqiIqiIqiIIIII' 'IBBBBB' 'IQIII' 'I')  # §9 Sample: one plane, revision 0's records


def sample(slot, number):
    """An L008 64x48 frame in `slot`: pts number/30, one plane of 64-byte rows."""
    return SAMPLE.pack(1, 1, slot, 64 * 48, number, 30, w.TIME_VALID, 0, 0, 0, 1, 30, w.TIME_VALID, w.SAMPLE_SYNC,
                       w.str_to_fourcc('L008'), 64, 48, 4, 1, 1, 1, 1, 1, 20, 0, 64, 64, 48, 0)


class ReleaseOrderTests(unittest.TestCase):
    def setUp(self):
        self.media = tempfile.NamedTemporaryFile(suffix='.mp4')
        self.addCleanup(self.media.close)

    def serve(self, frames):
        """A fake worker that delivers `frames` samples in slots 0, 1, ... and records every later request as
        (type, payload) in self.got until the client closes."""
        self.got = []

        def script(conn, read):
            rid = create_output(conn, read)
            fd = os.memfd_create('pool', os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, SLOTS * SLOT_SIZE)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            conn.sendmsg([w.frame(w.POOL_ADDED, struct.pack('<IIIQ', 1, 1, SLOTS, SLOT_SIZE), rid, 1)],
                         [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])
            os.close(fd)
            for slot in range(frames):
                conn.sendall(w.frame(w.SAMPLE, sample(slot, slot), rid))
            while True:
                type_, _, payload = read()
                if type_ is None:
                    return
                self.got.append((type_, payload))

        fake = FakeWorker(script)
        self.addCleanup(fake.close)
        self.fake = fake
        return trackd.open(self.media.name, socket=fake.path, timeout=TIMEOUT)

    def released(self):
        """The slots named by the ReleaseSlots received, in order."""
        slots = []
        for type_, payload in self.got:
            if type_ == w.RELEASE_SLOTS:
                output_id, count = struct.unpack_from('<IH', payload)
                self.assertEqual(output_id, 1)
                slots += [struct.unpack_from('<II', payload, 6 + 8 * i) for i in range(count)]
        return slots

    def test_a_frame_dropped_inside_a_send_is_released_after_it(self):
        asset = self.serve(3)
        output = asset.read(pixel_format='L008')
        held = [next(output) for _ in range(3)]
        self.assertEqual([f.array.shape for f in held], [(48, 64)] * 3)
        conn = asset._c
        real = conn._sock

        class DropsAFrameInTheFirstSend:
            """The connection's socket, which drops the first held frame (its __del__ posts a ReleaseSlots) as the
            first send begins: a ReleaseSlots sent at once would come before that send's frame."""
            dropped = False

            def sendall(self, data):
                if not self.dropped:
                    self.dropped = True
                    held.pop(0)
                real.sendall(data)

            def __getattr__(self, name):
                return getattr(real, name)

        conn._sock = DropsAFrameInTheFirstSend()
        try:
            conn.send(w.FINISH_OUTPUT, w.finish_output(output.id), request_id=0)
        finally:
            conn._sock = real
        self.assertEqual(len(held), 2)
        held.pop(0).release()
        del held[:]
        asset.close()
        self.fake.close()
        self.assertEqual([t for t, _ in self.got[:4]], [w.FINISH_OUTPUT] + [w.RELEASE_SLOTS] * 3)
        self.assertEqual(self.released(), [(1, 0), (1, 1), (1, 2)])

    def test_every_slot_of_a_read_loop_comes_back_once(self):
        asset = self.serve(SLOTS)
        output = asset.read(pixel_format='L008')
        self.assertEqual(sum(frame.array.size for frame in (next(output) for _ in range(SLOTS))), SLOTS * 64 * 48)
        asset.close()
        self.fake.close()
        self.assertEqual(sorted(self.released()), [(1, slot) for slot in range(SLOTS)])


if __name__ == '__main__':
    unittest.main()
