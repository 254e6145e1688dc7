"""Frame lifetime (release, copies, held slots), exact frames by index and time (ReadFrames), errors and a stopping
trackd, against a real trackd (support.Daemon) on media made by ffmpeg."""

import gc
import os
import socket
import subprocess
import unittest

import numpy as np

import trackd
from trackd import _conn, _frame
from trackd.errors import (DAEMON_STOPPING, DAEMON_UNREACHABLE, FILE_FAILED_TO_PARSE, FILE_FORMAT_NOT_RECOGNIZED,
                           INVALID_ARGUMENT, UNSUPPORTED_OUTPUT_SETTINGS)
from support import BUILD, TIMEOUT, ClipSuite, Daemon, ffmpeg_md5, md5

suite = ClipSuite()
setUpModule, tearDownModule = suite.start, suite.stop


class ReleaseTests(unittest.TestCase):
    def test_dropping_frames_releases_slots(self):
        # More frames than the worker sends unreleased (8): only works if each dropped frame is released.
        with suite.open() as asset:
            n = sum(1 for _ in asset.read(pixel_format='BGRA'))
            self.assertEqual(n, 60)
            self.assertEqual(asset.status()['active_outputs'], 0)  # every slot given back exactly once

    def test_release_and_context_manager(self):
        with suite.open() as asset:
            kept = []
            for frame in asset.read(pixel_format='y420'):
                kept.append(frame)  # kept, so only release() can give the slot back
                if len(kept) % 2:
                    frame.release()
                else:
                    with frame:
                        frame.planes[0].sum()
                self.assertTrue(frame.released)
            self.assertEqual(len(kept), 60)
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_array_keeps_slot_until_gone(self):
        with suite.open() as asset:
            arrays = []
            for frame in asset.read(pixel_format='BGRA'):
                if not arrays:
                    arrays.append(frame.array)
            del frame
            gc.collect()
            self.assertEqual(asset.status()['active_outputs'], 1)  # the output waits for the held slot
            self.assertEqual(arrays[0].shape, (240, 320, 4))
            arrays.clear()
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_breaking_out_cancels_and_the_session_goes_on(self):
        with suite.open() as asset:
            for i, frame in enumerate(asset.read(pixel_format='y420')):
                if i == 3:
                    break
            first = frame.tobytes()
            del frame
            self.assertEqual(md5(first), ffmpeg_md5(suite.clip, 'yuv420p')[3])
            count = sum(1 for _ in asset.read(pixel_format='y420', start=1.5))
            self.assertEqual(count, 15)
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_copy_frames_can_be_kept(self):
        with suite.open() as asset:
            frames = list(asset.read(pixel_format='y420', copy=True))  # 60 > 8: would stall without copies
            self.assertEqual(asset.status()['active_outputs'], 0)
        self.assertEqual(len(frames), 60)
        for f in frames:
            self.assertTrue(f.is_copy and f.released)
            self.assertFalse(np.shares_memory(f.planes[0], np.frombuffer(f._pool.mmap, dtype=np.uint8)))
        self.assertEqual([md5(f.tobytes()) for f in frames], ffmpeg_md5(suite.clip, 'yuv420p'))
        self.assertEqual(md5(b''.join(p.tobytes() for p in frames[7].planes)), ffmpeg_md5(suite.clip, 'yuv420p')[7])

    def test_without_numpy(self):
        saved, _frame._np = _frame._np, None
        try:
            with suite.open() as asset:
                got = []
                for f in asset.read(pixel_format='y420'):
                    self.assertIsInstance(f.planes[0], memoryview)
                    self.assertEqual(len(f.data), f.length)
                    got.append(md5(f.tobytes()))
                    with self.assertRaises(RuntimeError):
                        f.array
        finally:
            _frame._np = saved
        self.assertEqual(got, ffmpeg_md5(suite.clip, 'yuv420p'))


class FramesAtTests(unittest.TestCase):
    def test_times(self):
        reference = ffmpeg_md5(suite.clip, 'nv12')
        with suite.open() as asset:
            got = [(f.index, round(f.pts * 30), md5(f.tobytes())) for f in asset.frames_at([0.5, 0.0, 1.99, 1.0])]
        self.assertEqual(got, [(i, i, reference[i]) for i in (15, 0, 59, 30)])

    def test_indices_with_repeats_beyond_eight(self):
        indices = [59, 0, 30, 30, 1, 2, 3, 44, 45, 14, 15, 16]
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        with suite.open() as asset:
            got = [(f.index, md5(f.tobytes())) for f in asset.frames_at(indices=indices, pixel_format='y420')]
        self.assertEqual(got, [(i, reference[i]) for i in indices])

    def test_frames_held_across_reads_on_the_kept_pipeline(self):
        """Each ReadFrames after the first runs on the pipeline the one before left (Session+KeptPipeline.swift):
        zero-copy frames the client still holds from the earlier ones are never written over."""
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        picks = [[3], [4], [40], [2], [41, 5]]
        with suite.open() as asset:
            held = [f for indices in picks for f in asset.frames_at(indices=indices, pixel_format='y420')]
            self.assertEqual([md5(f.tobytes()) for f in held], [reference[i] for i in sum(picks, [])])
            pid = asset.worker_pid
        self.assertEqual(reuses(pid, len(picks)), [False] + [True] * (len(picks) - 1))

    def test_each_open_asset_keeps_its_pipeline(self):
        """A session's worker keeps the last ReadFrames' pipeline of each open asset, up to 4 (the least recently
        kept stopped first), as a loader that reads frames of several files in turn needs: reading three files in
        turn builds three pipelines, and every later ReadFrames seeks its asset's own. Frames are ffmpeg's."""
        reference = ffmpeg_md5(suite.clip, 'yuv420p')
        with trackd.Session(suite.daemon.socket, timeout=TIMEOUT) as session:
            assets = [session.open(suite.clip) for _ in range(5)]
            pid = assets[0].worker_pid
            turns = [(a, [i * 7 % 60, (i * 7 + 1) % 60]) for i in range(3) for a in (0, 1, 2)]
            # Two more assets: the fifth's pipeline stops the first's (kept longest ago), and it is built again.
            turns += [(3, [50]), (4, [49]), (0, [12]), (4, [13])]
            for a, indices in turns:
                got = [md5(f.tobytes()) for f in assets[a].get_frames(indices=indices, pixel_format='y420').frames]
                self.assertEqual(got, [reference[i] for i in indices], (a, indices))
        self.assertEqual(reuses(pid, len(turns)), [False] * 3 + [True] * 6 + [False, False, False, True])


def reuses(pid, count):
    """For each of worker `pid`'s first `count` ReadFrames, in order: whether it ran on a kept pipeline (its
    `read-frames` records, written before each ReadFrames is answered)."""
    return [record['pipeline'] == 'kept' for record in suite.daemon.events('read-frames', count, pid=pid)]


class ErrorTests(unittest.TestCase):
    def test_not_media(self):
        path = suite.daemon.path('text.mp4')
        with open(path, 'w') as f:
            f.write('not a movie\n' * 100)
        with self.assertRaises(trackd.TrackdError) as cm:
            suite.open(path)
        self.assertIn(cm.exception.code, (FILE_FORMAT_NOT_RECOGNIZED, FILE_FAILED_TO_PARSE))
        self.assertTrue(cm.exception.message)

    def test_missing_file_is_an_os_error(self):
        with self.assertRaises(FileNotFoundError):
            suite.open(suite.daemon.path('missing.mp4'))

    def test_unreachable_says_how_to_start_trackd_as_trackctl_does(self):
        # No socket file, and a socket nobody listens on (what a stopped trackd leaves): trackctl's message, word
        # for word, but for how a socket is named (socket= here, --socket there).
        refused = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        refused.bind(suite.daemon.path('refused.sock'))
        try:
            for name, reason in (('nobody.sock', 'No such file or directory'), ('refused.sock', 'Connection refused')):
                path = suite.daemon.path(name)
                with self.assertRaises(trackd.TrackdError) as cm:
                    trackd.open(suite.clip, socket=path)
                self.assertEqual(cm.exception.code, DAEMON_UNREACHABLE)
                cli = subprocess.run([os.path.join(BUILD, 'trackctl'), '--socket', path, 'status'],
                                     capture_output=True, text=True)
                self.assertEqual(cli.returncode, 3)
                prefix = 'trackctl: error -11903 (TrackdErrorDaemonUnreachable): '
                self.assertTrue(cli.stderr.startswith(prefix), cli.stderr)
                self.assertEqual(cm.exception.message,
                                 cli.stderr[len(prefix):].strip().replace('--socket PATH', 'socket=PATH'))
                self.assertEqual(cm.exception.message, 'cannot reach trackd at %s: %s. Is trackd running? Start it with '
                                 '`make serve` or `systemctl start trackd.socket`, or pass socket=PATH / set '
                                 'TRACKD_SOCKET.' % (path, reason))
        finally:
            refused.close()

    def test_a_socket_that_never_answers_is_not_waited_for_without_end(self):
        # A listening socket that accepts (the kernel's backlog) and never speaks: a stopped trackd, a
        # trackd.service failing behind trackd.socket. The handshake is bounded without a timeout too.
        silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        silent.bind(suite.daemon.path('silent.sock'))
        silent.listen(4)
        saved, _conn.HANDSHAKE_TIMEOUT = _conn.HANDSHAKE_TIMEOUT, 0.2
        try:
            for timeout in (None, 0.3):
                with self.assertRaises(trackd.TrackdError) as cm:
                    trackd.open(suite.clip, socket=silent.getsockname(), timeout=timeout)
                self.assertEqual(cm.exception.code, DAEMON_UNREACHABLE)
                self.assertIn('connected, but no answer to Hello within %g s' % (timeout or 0.2), cm.exception.message)
        finally:
            _conn.HANDSHAKE_TIMEOUT = saved
            silent.close()
        self.assertEqual(_conn.HANDSHAKE_TIMEOUT, 30)
        with trackd.open(suite.clip, socket=suite.daemon.socket) as asset:  # later waits: the timeout given, none
            self.assertIsNone(asset._conn.timeout)
            self.assertIsNone(asset._conn._sock.gettimeout())

    def test_bad_pixel_format_then_the_session_goes_on(self):
        with suite.open() as asset:
            with self.assertRaisesRegex(ValueError, '^unknown pixel format zzzz; '):
                asset.read(pixel_format='zzzz')  # refused here, as trackctl refuses it; an integer goes to trackd
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.read(pixel_format=int.from_bytes(b'zzzz', 'big'))
            self.assertEqual(cm.exception.code, UNSUPPORTED_OUTPUT_SETTINGS)
            self.assertIn('Unsupported pixel format zzzz', cm.exception.message)
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.read(pixel_format='v308')
            self.assertIn('v308 (kCVPixelFormatType_444YpCbCr8) is not supported', cm.exception.message)
            self.assertEqual(sum(1 for _ in asset.read(start=1.8)), 6)

    def test_frame_out_of_range(self):
        with suite.open() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.frames_at(indices=[0, 60])
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)
            self.assertTrue(cm.exception.message.startswith('ReadFrames request 1:'), cm.exception.message)
            self.assertIn('-11901', str(cm.exception))

    def test_unknown_track(self):
        with suite.open() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.read(track=99)
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)


class StopTests(unittest.TestCase):
    def test_sigterm_tells_an_open_session_trackd_is_stopping(self):
        # Its own trackd: this one is stopped. An idle session gets Error -11904 (request id 0) and then its
        # connection ends: every later call raises that error, not -11819; trackd exits 0.
        own = Daemon('trackd-python-stop-')
        try:
            with trackd.open(suite.clip, socket=own.socket, timeout=TIMEOUT) as asset:
                own.process.terminate()
                self.assertEqual(own.process.wait(timeout=TIMEOUT), 0)
                with self.assertRaises(trackd.TrackdError) as cm:
                    asset.status()
                self.assertEqual(cm.exception.code, DAEMON_STOPPING)
                self.assertEqual(cm.exception.message, 'trackd is stopping')
        finally:
            own.stop()


if __name__ == '__main__':
    unittest.main()
