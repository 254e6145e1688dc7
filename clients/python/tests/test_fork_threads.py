"""An asset opened before fork is never used by the child (it reconnects: DataLoader-style worker processes with
plain multiprocessing), and one asset serves several threads at once."""

import multiprocessing
import os
import threading
import time
import unittest
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import trackd
from trackd.errors import LIMIT_EXCEEDED, MEDIA_SERVICES_WERE_RESET
from support import TIMEOUT, Daemon, ffmpeg_md5, make_clip, md5

daemon = clip = reference = None


def setUpModule():
    global daemon, clip, reference
    daemon = Daemon()
    clip = make_clip(daemon.path('clip.mp4'))
    reference = ffmpeg_md5(clip, 'yuv420p')


def tearDownModule():
    daemon.stop()


def open_clip():
    return trackd.open(clip, socket=daemon.socket, timeout=TIMEOUT)


_shared = {}  # what forked children inherit


def child_read(indices):
    """In a forked worker process: read with the parent's asset (it reconnects here)."""
    asset = _shared['asset']
    batch = asset.get_frames(indices=indices, pixel_format='y420')
    return os.getpid(), asset.worker_pid, batch.indices.tolist(), [md5(row.tobytes()) for row in batch.frames]


def child_uses_parent_output():
    """In a forked child: the parent's output cannot go on here; the asset itself can."""
    try:
        next(_shared['output'])
        result = 'no error'
    except trackd.TrackdError as e:
        result = (e.code, 'before a fork' in e.message)
    _shared['frame'].release()  # a no-op here: the slot is the parent's to give back
    return result, _shared['asset'].frame_count()


class ForkTests(unittest.TestCase):
    def test_worker_processes_reconnect(self):
        context = multiprocessing.get_context('fork')
        with open_clip() as asset:
            parent_worker = asset.worker_pid
            self.assertEqual(asset.frame_count(), 60)
            output = asset.frames_at(indices=[0, 1, 2], pixel_format='y420')
            frame = next(output)  # the parent holds a frame and a running output across the fork
            _shared.update(asset=asset, output=output, frame=frame)
            try:
                with context.Pool(2) as pool:
                    results = pool.map(child_read, [[i, i + 20, i + 40] for i in range(6)], chunksize=1)
                    misuse = pool.apply(child_uses_parent_output)
            finally:
                _shared.clear()
            for pid, worker, indices, digests in results:
                self.assertNotEqual(pid, os.getpid())
                self.assertNotEqual(worker, parent_worker)  # the child's own connection and worker
                self.assertEqual(digests, [reference[i] for i in indices])
            self.assertEqual(len({(pid, worker) for pid, worker, _, _ in results}) <= 2, True)
            self.assertEqual(misuse, ((MEDIA_SERVICES_WERE_RESET, True), 60))
            # The parent's session is untouched: same worker, its output and frame go on.
            self.assertEqual(asset.worker_pid, parent_worker)
            self.assertEqual(md5(frame.tobytes()), reference[0])
            del frame
            self.assertEqual([md5(f.tobytes()) for f in output], reference[1:3])
            self.assertEqual(asset.status()['active_outputs'], 0)
            self.assertEqual(md5(asset.get_frames(indices=[59], pixel_format='y420').frames[0].tobytes()),
                             reference[59])

    def test_child_that_never_reads_leaves_the_session_alone(self):
        with open_clip() as asset:
            pid = os.fork()
            if pid == 0:  # the child only drops its copy
                asset.close()
                os._exit(0)
            self.assertEqual(os.waitpid(pid, 0)[1], 0)
            self.assertEqual(asset.frame_count(), 60)
            self.assertEqual(md5(asset.get_frames(indices=[3], pixel_format='y420').frames[0].tobytes()),
                             reference[3])


def clip_item(i):
    """A DataLoader worker's job, without torch: one item of the inherited dataset."""
    item = _shared['clips'][i]
    return item['source'], item['indices'].tolist(), [md5(np.ascontiguousarray(f).tobytes()) for f in item['video']]


class DatasetForkTests(unittest.TestCase):
    def test_video_clips_in_worker_processes(self):
        from trackd.torch import VideoClips  # torch itself is not needed for output="numpy"
        dataset = VideoClips([clip, clip], clip_length=5, frames_between_clips=20, pixel_format='L008',
                             layout='THWC', output='numpy', socket=daemon.socket)
        self.assertEqual(len(dataset), 6)
        first = dataset[0]  # the parent reads too (its own connection, before the fork)
        _shared['clips'] = dataset
        try:
            with multiprocessing.get_context('fork').Pool(2) as pool:
                items = pool.map(clip_item, range(len(dataset)), chunksize=1)
        finally:
            _shared.clear()
        self.assertEqual([(s, i) for s, i, _ in items],
                         [(f, list(range(s, s + 5))) for f in (0, 1) for s in (0, 20, 40)])
        with trackd.open(clip, socket=daemon.socket, timeout=TIMEOUT) as asset:
            reference = [md5(f.tobytes()) for f in asset.read(pixel_format='L008')]
        for _, indices, digests in items:
            self.assertEqual(digests, [reference[i] for i in indices])
        self.assertEqual(first['indices'].tolist(), [0, 1, 2, 3, 4])
        self.assertEqual(dataset[1]['indices'].tolist(), [20, 21, 22, 23, 24])
        # A batch (DataLoader's __getitems__): one read per file, the same items as one by one, in order.
        order = [4, 0, 2, 5, 1]
        for got, i in zip(dataset.__getitems__(order), order):
            want = dataset[i]
            self.assertEqual((got['source'], got['indices'].tolist()), (want['source'], want['indices'].tolist()))
            np.testing.assert_array_equal(got['video'], want['video'])
        dataset.close()


def child_session_read(which):
    """In a forked child: read with an asset of the parent's session (the session connects again here)."""
    asset = _shared['assets'][which]
    batch = asset.get_frames(indices=[which, 30 + which], pixel_format='y420')
    return os.getpid(), asset.worker_pid, _shared['session'].worker_pid, [md5(r.tobytes()) for r in batch.frames]


class SessionTests(unittest.TestCase):
    def test_assets_share_one_connection(self):
        other = make_clip(daemon.path('session-b.mp4'), size='160x120', seconds=1)
        with trackd.Session(daemon.socket, timeout=TIMEOUT) as session:
            a, b = session.open(clip), session.open(other)
            self.assertEqual(a.worker_pid, b.worker_pid)
            self.assertEqual(session.worker_pid, a.worker_pid)
            self.assertNotEqual(a.id, b.id)
            self.assertEqual((a.frame_count(), b.frame_count()), (60, 30))
            self.assertEqual([md5(r.tobytes()) for r in a.get_frames(indices=[5, 50], pixel_format='y420').frames],
                             [reference[5], reference[50]])
            self.assertEqual(a.status()['open_assets'], 2)
            b.close()  # CloseAsset: the worker forgets b, a goes on
            self.assertEqual(a.status()['open_assets'], 1)
            # CloseAsset's Ack was drained and its handler dropped (outputs' drains stay, §12.6).
            self.assertTrue(all(isinstance(getattr(h, '__self__', None), trackd.Output)
                                for h in a._conn._drains.values()), a._conn._drains)
            self.assertEqual(md5(a.get_frames(indices=[7], pixel_format='y420').frames[0].tobytes()), reference[7])
            with self.assertRaisesRegex(trackd.TrackdError, 'no open asset with id %d' % b.id):
                b.get_frames(indices=[0])
        self.assertTrue(session.closed)
        with self.assertRaises(trackd.TrackdError):
            a.status()

    def test_session_assets_in_forked_children(self):
        with trackd.Session(daemon.socket, timeout=TIMEOUT) as session:
            assets = [session.open(clip), session.open(clip)]
            parent_worker = session.worker_pid
            _shared.update(session=session, assets=assets)
            try:
                with multiprocessing.get_context('fork').Pool(1) as pool:  # one child: both assets there
                    results = pool.map(child_session_read, [0, 1], chunksize=1)
            finally:
                _shared.clear()
            (pid0, worker0, session0, digests0), (pid1, worker1, session1, digests1) = results
            self.assertEqual(pid0, pid1)
            self.assertNotEqual(worker0, parent_worker)
            self.assertEqual({worker0, worker1, session0, session1}, {worker0})  # one new connection in the child
            self.assertEqual(digests0, [reference[0], reference[30]])
            self.assertEqual(digests1, [reference[1], reference[31]])
            self.assertEqual(session.worker_pid, parent_worker)  # the parent's session is untouched
            self.assertEqual(assets[0].status()['open_assets'], 2)


class ThreadTests(unittest.TestCase):
    def test_threads_share_one_asset(self):
        with open_clip() as asset:
            worker = asset.worker_pid

            def batch(i):
                indices = [(i * 13 + k * 7) % 60 for k in range(10)]
                got = asset.get_frames(indices=indices, pixel_format='y420')
                return [md5(row.tobytes()) for row in got.frames] == [reference[j] for j in indices]

            def stream(_):
                return [md5(f.tobytes()) for f in asset.read(pixel_format='y420')] == reference

            def frames(i):
                return [md5(f.tobytes()) for f in asset.frames_at(indices=[i, 59 - i], pixel_format='y420')] \
                    == [reference[i], reference[59 - i]]

            stop = threading.Event()
            statuses = []

            def poll():
                while not stop.is_set():
                    statuses.append(asset.status()['worker_pid'])

            poller = threading.Thread(target=poll)
            poller.start()
            try:
                with ThreadPoolExecutor(4) as pool:
                    jobs = [pool.submit(batch, i) for i in range(6)] + [pool.submit(stream, 0)] \
                        + [pool.submit(frames, i) for i in range(4)]
                    results = [job.result(timeout=TIMEOUT * 2) for job in jobs]
            finally:
                stop.set()
                poller.join()
            self.assertEqual(results, [True] * len(results))
            self.assertTrue(statuses)
            self.assertEqual(set(statuses), {worker})
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_a_reply_is_not_stuck_behind_a_held_output(self):
        with open_clip() as asset:
            output = asset.read(pixel_format='y420')
            held = [next(output) for _ in range(8)]  # every slot trackd lends an output: the worker stalls
            errors = []

            def read_next():
                try:
                    next(output)
                except trackd.TrackdError as e:
                    errors.append(e)

            reader = threading.Thread(target=read_next)
            reader.start()  # waits in recv until OutputStalled says every frame is held, then fails
            self.assertEqual(asset.status()['active_outputs'], 1)  # answered whichever thread reads
            reader.join(TIMEOUT)
            self.assertFalse(reader.is_alive())
            self.assertEqual([e.code for e in errors], [LIMIT_EXCEEDED])
            first = [md5(f.tobytes()) for f in held]
            del held  # releases the slots: the output goes on where it stopped
            rest = [md5(f.tobytes()) for f in output]
            self.assertEqual(first + rest, reference)

    def test_threads_with_their_own_assets(self):
        def read(i):
            with open_clip() as asset:
                return md5(asset.get_frames(indices=[i], pixel_format='y420').frames[0].tobytes())

        with ThreadPoolExecutor(3) as pool:
            self.assertEqual(list(pool.map(read, range(0, 60, 10))), reference[0:60:10])


if __name__ == '__main__':
    unittest.main()
