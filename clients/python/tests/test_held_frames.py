"""Holding frames never hangs (issue #24, PROTOCOL.md §12.3): a client that keeps every zero-copy frame of an output
and asks for the next gets a clear error at once (trackd's OutputStalled), and the output goes on after a release."""

import time
import unittest

import trackd
from trackd.errors import LIMIT_EXCEEDED

from support import TIMEOUT, Daemon, make_clip

HELD = 'all 8 frames of this output are held: copy them (copy=True) or release them'


class HeldFramesTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.clip = make_clip(cls.daemon.path('clip.mp4'), audio=False)

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def open(self):
        # TIMEOUT fails a stalled read in a minute instead of trackd's 900 s idle timeout (not a timed assertion).
        return trackd.open(self.clip, socket=self.daemon.socket, timeout=TIMEOUT)

    def test_a_list_of_frames_as_a_torchcodec_user_keeps_them(self):
        """`list(asset.frames_at(indices=range(10)))` without copy=True: the ninth frame cannot come while the
        eight before it are held; the error says so at once, not the idle timeout after 900 s. The session goes on:
        with copy=True the same list is the ten frames."""
        with self.open() as asset:
            started = time.monotonic()
            with self.assertRaises(trackd.TrackdError) as raised:
                list(asset.frames_at(indices=range(10)))
            elapsed = time.monotonic() - started
            self.assertEqual((raised.exception.code, raised.exception.message), (LIMIT_EXCEEDED, HELD))
            print('\nheld frames: the error came %.3f s after the read started' % elapsed)
            frames = list(asset.frames_at(indices=range(10), copy=True))
            self.assertEqual([f.index for f in frames], list(range(10)))
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_releasing_a_frame_reads_on(self):
        """The output stays usable: after the error, releasing one frame lets the next one come, and so on to the
        end; every slot is given back."""
        with self.open() as asset:
            output = asset.read(pixel_format='y420')
            held = [next(output) for _ in range(8)]
            with self.assertRaises(trackd.TrackdError) as raised:
                next(output)
            self.assertEqual(raised.exception.message, HELD)
            with self.assertRaises(trackd.TrackdError):  # asked again before a release: the same answer
                next(output)
            held.pop(0).release()
            held.append(next(output))
            self.assertEqual(round(held[-1].pts * 30), 8)
            pts = [round(f.pts * 30) for f in held]
            held.clear()
            rest = [round(f.pts * 30) for f in output]  # each frame dropped at once: no stall
            self.assertEqual(pts + rest, list(range(1, 60)))
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_copied_frames_never_stall(self):
        with self.open() as asset:
            kept = list(asset.read(pixel_format='y420', copy=True))
            self.assertEqual(len(kept), 60)


if __name__ == '__main__':
    unittest.main()
