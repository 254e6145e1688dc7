"""The Python client against a real trackd (started here from $TRACKD_BUILD_DIR, default .build/debug) on media
made at test time by ffmpeg; decoded bytes are checked against trackctl --md5 and ffmpeg's framemd5."""

import gc
import json
from fractions import Fraction
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
import unittest
from fractions import Fraction

import numpy as np

import trackd
from trackd import _frame
from trackd.errors import (DAEMON_STOPPING, FILE_FAILED_TO_PARSE, FILE_FORMAT_NOT_RECOGNIZED, INVALID_ARGUMENT,
                           UNSUPPORTED_OUTPUT_SETTINGS, DAEMON_UNREACHABLE)

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
BUILD = os.environ.get('TRACKD_BUILD_DIR') or os.path.join(REPO, '.build', 'debug')
TIMEOUT = 60  # a stalled read fails the test instead of hanging it (not a timed assertion)

tmp = sock = daemon = clip = None


def setUpModule():
    global tmp, sock, daemon, clip
    tmp = tempfile.mkdtemp(prefix='trackd-python-')
    clip = os.path.join(tmp, 'clip.mp4')
    # As the Swift tests' Media.clip: 320x240, 30 fps, 2 s, B-frames, GOP 15, AAC stereo 48 kHz.
    subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y',
                    '-f', 'lavfi', '-i', 'testsrc2=size=320x240:rate=30:duration=2',
                    '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=2',
                    '-c:v', 'libx264', '-preset', 'veryfast', '-bf', '2', '-g', '15', '-pix_fmt', 'yuv420p',
                    '-c:a', 'aac', '-ac', '2', clip], check=True)
    sock = os.path.join(tmp, 'trackd.sock')
    with open(os.path.join(tmp, 'trackd.log'), 'wb') as log:
        daemon = subprocess.Popen([os.path.join(BUILD, 'trackd'), '--socket', sock], stderr=log)
    for _ in range(200):
        if os.path.exists(sock):
            break
        if daemon.poll() is not None:
            raise RuntimeError('trackd exited: ' + open(os.path.join(tmp, 'trackd.log')).read())
        time.sleep(0.05)
    else:
        raise RuntimeError('trackd did not create its socket')


def tearDownModule():
    daemon.terminate()
    daemon.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def open_clip(path=None):
    return trackd.open(path or clip, socket=sock, timeout=TIMEOUT)


_cache = {}


def trackctl_md5(*args):
    """trackctl read --md5: one (pts, size, md5) per sample."""
    if args not in _cache:
        out = subprocess.run([os.path.join(BUILD, 'trackctl'), '--socket', sock] + list(args) + ['--md5'],
                             check=True, capture_output=True, text=True).stdout
        _cache[args] = [(line.split()[1], int(line.split()[3]), line.split()[4]) for line in out.splitlines()]
    return _cache[args]


def ffmpeg_md5(pix_fmt):
    """ffmpeg -f framemd5 of the video decoded to pix_fmt: one md5 per frame."""
    key = ('ffmpeg', pix_fmt)
    if key not in _cache:
        out = subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-i', clip, '-map', '0:v:0',
                              '-pix_fmt', pix_fmt, '-f', 'framemd5', '-'], check=True, capture_output=True,
                             text=True).stdout
        _cache[key] = [line.split(',')[5].strip() for line in out.splitlines() if not line.startswith('#')]
    return _cache[key]


def md5(data):
    return hashlib.md5(data).hexdigest()


def summary(frame, digest):
    return ('%.6f' % frame.pts, len(frame.tobytes()), digest)


class TracksTests(unittest.TestCase):
    def test_tracks(self):
        with open_clip() as asset:
            video, audio = asset.tracks
            self.assertEqual((video.media_type, video.codec, video.width, video.height), ('video', 'avc1', 320, 240))
            self.assertEqual((video.bits_per_component, video.chroma_subsampling), (8, 1))
            self.assertAlmostEqual(video.nominal_frame_rate, 30.0)
            self.assertEqual((audio.media_type, audio.codec, audio.sample_rate, audio.channels),
                             ('audio', 'mp4a', 48000, 2))
            # The §7.2 details, against ffprobe's names for the same streams.
            probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=profile,channel_layout',
                                               '-of', 'json', clip], check=True, capture_output=True).stdout)['streams']
            self.assertEqual(video.profile.lower(), probe[0]['profile'].lower())
            self.assertEqual(audio.channel_layout, probe[1]['channel_layout'])
            self.assertGreater(audio.bit_rate, 0)
            self.assertAlmostEqual(asset.duration, 2.0, places=1)
            self.assertGreater(asset.worker_pid, 0)
            self.assertTrue(asset.server_version.startswith('trackd'))

    def test_status_has_every_counter(self):
        with open_clip() as asset:
            status = asset.status()
        # The supervisor's interventions (PROTOCOL.md Status, after gstreamer_version): none in this suite's daemon.
        self.assertEqual((status['watchdog_kills'], status['connections_refused'], status['connections_rate_limited']),
                         (0, 0, 0))
        self.assertTrue(status['gstreamer_version'].startswith('GStreamer '))
        self.assertGreaterEqual(status['connections_accepted'], 1)

    def test_tracks_in_track_id_order(self):
        # Video then two AAC tracks (ids 1, 2, 3): parsebin adds the audio pads in whichever order their parsers are
        # ready, and was listed as 1, 3, 2 on some opens; AVAsset's order is the track id's.
        path = os.path.join(tmp, 'three-tracks.mov')
        subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y',
                        '-f', 'lavfi', '-i', 'testsrc2=size=160x120:rate=25:duration=1',
                        '-f', 'lavfi', '-i', 'sine=frequency=440:duration=1',
                        '-f', 'lavfi', '-i', 'sine=frequency=880:sample_rate=22050:duration=1',
                        '-map', '0', '-map', '1', '-map', '2', '-c:v', 'libx264', '-preset', 'veryfast',
                        '-c:a', 'aac', path], check=True)
        probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=id,sample_rate',
                                           '-of', 'json', path], check=True, capture_output=True).stdout)['streams']
        expected = [(int(s['id'], 16), int(s.get('sample_rate', 0))) for s in probe]
        self.assertEqual([i for i, _ in expected], [1, 2, 3])
        for _ in range(4):
            with open_clip(path) as asset:
                self.assertEqual([(t.id, t.sample_rate) for t in asset.tracks], expected)


class VideoTests(unittest.TestCase):
    def test_y420_equals_trackctl_and_ffmpeg(self):
        with open_clip() as asset:
            got = []
            for frame in asset.read(pixel_format='y420'):
                self.assertEqual([p.shape for p in frame.planes], [(240, 320), (120, 160), (120, 160)])
                got.append(summary(frame, md5(b''.join(np.ascontiguousarray(p).tobytes() for p in frame.planes))))
        self.assertEqual(len(got), 60)
        self.assertEqual(got, trackctl_md5('read', clip, '--pixel-format', 'y420'))
        self.assertEqual([g[2] for g in got], ffmpeg_md5('yuv420p'))

    def test_bgra_array_equals_trackctl(self):
        with open_clip() as asset:
            got = []
            for frame in asset.read(pixel_format='BGRA'):
                a = frame.array
                self.assertEqual((a.shape, a.dtype), ((240, 320, 4), np.uint8))
                got.append(summary(frame, md5(np.ascontiguousarray(a).tobytes())))
        self.assertEqual(got, trackctl_md5('read', clip, '--pixel-format', 'BGRA'))

    def test_420v_planes_equal_ffmpeg_nv12(self):
        with open_clip() as asset:
            got = []
            for frame in asset.read():  # default 420v
                self.assertEqual(frame.format, '420v')
                y, cbcr = frame.planes
                self.assertEqual((y.shape, cbcr.shape), ((240, 320), (120, 320)))
                got.append(md5(y.tobytes() + cbcr.tobytes()))
                self.assertEqual(got[-1], md5(frame.tobytes()))
        self.assertEqual(got, ffmpeg_md5('nv12'))
        self.assertEqual(got, [m for _, _, m in trackctl_md5('read', clip, '--pixel-format', '420v')])

    def test_scaled_gray(self):
        with open_clip() as asset:
            got = []
            for f in asset.read(pixel_format='L008', width=160, height=120):
                self.assertEqual(f.array.shape, (120, 160))
                got.append(summary(f, md5(np.ascontiguousarray(f.array).tobytes())))
        self.assertEqual(got, trackctl_md5('read', clip, '--pixel-format', 'L008', '--width', '160', '--height', '120'))

    def test_passthrough_equals_trackctl(self):
        with open_clip() as asset:
            output = asset.read(passthrough=True)
            self.assertEqual((output.format, output.codec_config[:1]), ('avc1', b'\x01'))  # an avcC record
            got = [summary(f, md5(f.array.tobytes())) for f in output]
            self.assertEqual(sum(f.sync for f in asset.read(passthrough=True)), 4)  # GOP 15: frames 0, 15, 30, 45
        self.assertEqual(got, trackctl_md5('read', clip, '--passthrough'))

    def test_aac_passthrough_trims(self):
        # The clip's AAC track (ffmpeg: an edit list skipping 1024 frames of priming, the last packet cut short):
        # every stored packet, as ffprobe counts them; the priming packet first, at PTS -1024/48000, with
        # trim_at_start 1024/48000; the last with trim_at_end the rest of its 1024 frames; no other trims.
        probe = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'a:0', '-show_entries',
                                'packet=pts,duration', '-of', 'csv=p=0', clip], capture_output=True, text=True,
                               check=True).stdout.split()
        first_pts, last_duration = int(probe[0].split(',')[0]), int(probe[-1].split(',')[1])
        with open_clip() as asset:
            audio = [t for t in asset.tracks if t.media_type == 'audio'][0]
            samples = [(f.presentation_time, f.trim_at_start, f.trim_at_end)
                       for f in asset.read(audio.id, passthrough=True)]
        self.assertEqual(len(samples), len(probe))
        (pts, start, end), last = samples[0], samples[-1]
        self.assertEqual(first_pts, -1024)
        self.assertEqual(Fraction(pts.value, pts.timescale).limit_denominator(48000), Fraction(-1024, 48000))
        self.assertEqual(Fraction(start.value, start.timescale), Fraction(1024, 48000))
        self.assertIsNone(end)
        self.assertIsNone(last[1])
        self.assertEqual(Fraction(last[2].value, last[2].timescale), Fraction(1024 - last_duration, 48000))
        self.assertTrue(all(s[1] is None and s[2] is None for s in samples[1:-1]))

    def test_time_range(self):
        with open_clip() as asset:
            frames = [(f.pts, md5(f.tobytes())) for f in asset.read(pixel_format='y420', start=0.5, duration=0.5)]
        self.assertEqual([round(p * 30) for p, _ in frames], list(range(15, 30)))
        self.assertEqual([m for _, m in frames], ffmpeg_md5('yuv420p')[15:30])


    def test_ranges_in_any_order_equal_trackctl(self):
        with open_clip() as asset:
            got = [summary(f, md5(f.tobytes())) for f in asset.read(pixel_format='y420',
                                                                    ranges=[(1.2, 0.3), (0, 0.5), (1.8, None)])]
            self.assertEqual(asset.status()['active_outputs'], 0)  # finished (FinishOutput) and all released
        self.assertEqual(got, trackctl_md5('read', clip, '--pixel-format', 'y420', '--ranges', '1.2-1.5,0-0.5,1.8-'))
        self.assertEqual(len(got), 9 + 15 + 6)


class ZeroCopyTests(unittest.TestCase):
    def check_views(self, pixel_format):
        with open_clip() as asset:
            for frame in asset.read(pixel_format=pixel_format):
                pool = frame._pool
                whole = np.frombuffer(pool.mmap, dtype=np.uint8)  # the pool's mapping, not a copy
                arrays = [frame.array] + frame.planes
                for a in arrays:
                    start = a.__array_interface__['data'][0]
                    self.assertGreaterEqual(start, pool.address)
                    self.assertLess(start, pool.address + pool.size)
                    self.assertEqual(whole.__array_interface__['data'][0], pool.address)
                    self.assertTrue(np.shares_memory(a, whole))
                    self.assertFalse(a.flags.owndata)
                    self.assertFalse(a.flags.writeable)  # mapped PROT_READ
                    self.assertIs(a.base.frame, frame)  # the array keeps its frame (and slot) alive
                # The array reads the pool's bytes in place.
                p = frame.plane_layouts[0]
                base = frame._slot * pool.slot_size + p.offset
                self.assertEqual(frame.planes[0][0].tobytes(), pool.mmap[base:base + p.row_bytes])
                del whole, arrays, a
                return pool.slot_count

    def test_bgra_frame_pool_views(self):
        self.assertEqual(self.check_views('BGRA'), 1)  # a frame pool: the converter wrote into the memfd

    def test_420v_frame_pool_views(self):
        # A frame pool too: the worker makes NV12 in the decoder's memfd (the CbCr plane after the decoder's data).
        self.assertEqual(self.check_views('420v'), 1)

    def test_audio_views(self):
        with open_clip() as asset:
            frame = next(iter(asset.read(channels=2)))
            a = frame.array
            self.assertTrue(np.shares_memory(a, np.frombuffer(frame._pool.mmap, dtype=np.uint8)))
            self.assertFalse(a.flags.owndata)


class ReleaseTests(unittest.TestCase):
    def test_dropping_frames_releases_slots(self):
        # More frames than the worker sends unreleased (8): only works if each dropped frame is released.
        with open_clip() as asset:
            n = sum(1 for _ in asset.read(pixel_format='BGRA'))
            self.assertEqual(n, 60)
            self.assertEqual(asset.status()['active_outputs'], 0)  # every slot given back exactly once

    def test_release_and_context_manager(self):
        with open_clip() as asset:
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
        with open_clip() as asset:
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
        with open_clip() as asset:
            for i, frame in enumerate(asset.read(pixel_format='y420')):
                if i == 3:
                    break
            first = frame.tobytes()
            del frame
            self.assertEqual(md5(first), ffmpeg_md5('yuv420p')[3])
            count = sum(1 for _ in asset.read(pixel_format='y420', start=1.5))
            self.assertEqual(count, 15)
            self.assertEqual(asset.status()['active_outputs'], 0)

    def test_copy_frames_can_be_kept(self):
        with open_clip() as asset:
            frames = list(asset.read(pixel_format='y420', copy=True))  # 60 > 8: would stall without copies
            self.assertEqual(asset.status()['active_outputs'], 0)
        self.assertEqual(len(frames), 60)
        for f in frames:
            self.assertTrue(f.is_copy and f.released)
            self.assertFalse(np.shares_memory(f.planes[0], np.frombuffer(f._pool.mmap, dtype=np.uint8)))
        self.assertEqual([md5(f.tobytes()) for f in frames], ffmpeg_md5('yuv420p'))
        self.assertEqual(md5(b''.join(p.tobytes() for p in frames[7].planes)), ffmpeg_md5('yuv420p')[7])

    def test_without_numpy(self):
        saved, _frame._np = _frame._np, None
        try:
            with open_clip() as asset:
                got = []
                for f in asset.read(pixel_format='y420'):
                    self.assertIsInstance(f.planes[0], memoryview)
                    self.assertEqual(len(f.data), f.length)
                    got.append(md5(f.tobytes()))
                    with self.assertRaises(RuntimeError):
                        f.array
        finally:
            _frame._np = saved
        self.assertEqual(got, ffmpeg_md5('yuv420p'))


class AudioTests(unittest.TestCase):
    def test_interleaved_s16_equals_trackctl(self):
        with open_clip() as asset:
            got = []
            for f in asset.read(channels=2):
                a = f.array
                self.assertEqual((a.dtype, a.shape), (np.dtype('<i2'), (f.frame_count, 2)))
                got.append(summary(f, md5(a.tobytes())))
        self.assertEqual(got, trackctl_md5('read', clip, '--channels', '2'))
        self.assertGreater(sum(s for _, s, _ in got), 2 * 48000 * 4 * 0.9)

    def test_time_range_equals_trackctl(self):
        with open_clip() as asset:
            got = [summary(f, md5(f.array.tobytes())) for f in asset.read(channels=1, start=0.5, duration=0.25)]
            self.assertEqual(sum(f.frame_count for f in asset.read(channels=1, start=0.5, duration=0.25)), 12000)
        self.assertEqual(got, trackctl_md5('read', clip, '--channels', '1', '--start', '0.5', '--duration', '0.25'))

    def test_float_non_interleaved_equals_trackctl(self):
        with open_clip() as asset:
            got = []
            for f in asset.read(is_float=True, non_interleaved=True, sample_rate=22050):
                a = f.array
                self.assertEqual((a.dtype, a.shape), (np.dtype('<f4'), (2, f.frame_count)))
                self.assertEqual(a[1].tobytes(), f.planes[1].tobytes())
                got.append(summary(f, md5(a[0].tobytes() + a[1].tobytes())))
        self.assertEqual(got, trackctl_md5('read', clip, '--float', '--non-interleaved', '--sample-rate', '22050'))


class FramesAtTests(unittest.TestCase):
    def test_times(self):
        reference = ffmpeg_md5('nv12')
        with open_clip() as asset:
            got = [(f.index, round(f.pts * 30), md5(f.tobytes())) for f in asset.frames_at([0.5, 0.0, 1.99, 1.0])]
        self.assertEqual(got, [(i, i, reference[i]) for i in (15, 0, 59, 30)])

    def test_indices_with_repeats_beyond_eight(self):
        indices = [59, 0, 30, 30, 1, 2, 3, 44, 45, 14, 15, 16]
        reference = ffmpeg_md5('yuv420p')
        with open_clip() as asset:
            got = [(f.index, md5(f.tobytes())) for f in asset.frames_at(indices=indices, pixel_format='y420')]
        self.assertEqual(got, [(i, reference[i]) for i in indices])

    def test_frames_held_across_reads_on_the_kept_pipeline(self):
        """Each ReadFrames after the first runs on the pipeline the one before left (Session+KeptPipeline.swift):
        zero-copy frames the client still holds from the earlier ones are never written over."""
        reference = ffmpeg_md5('yuv420p')
        picks = [[3], [4], [40], [2], [41, 5]]
        with open_clip() as asset:
            held = [f for indices in picks for f in asset.frames_at(indices=indices, pixel_format='y420')]
            self.assertEqual([md5(f.tobytes()) for f in held], [reference[i] for i in sum(picks, [])])
            pid = asset.worker_pid
        self.assertEqual(reuses(pid, len(picks)), [False] + [True] * (len(picks) - 1))

    def test_each_open_asset_keeps_its_pipeline(self):
        """A session's worker keeps the last ReadFrames' pipeline of each open asset, up to 4 (the least recently
        kept stopped first), as a loader that reads frames of several files in turn needs: reading three files in
        turn builds three pipelines, and every later ReadFrames seeks its asset's own. Frames are ffmpeg's."""
        reference = ffmpeg_md5('yuv420p')
        with trackd.Session(sock, timeout=TIMEOUT) as session:
            assets = [session.open(clip) for _ in range(5)]
            pid = assets[0].worker_pid
            turns = [(a, [i * 7 % 60, (i * 7 + 1) % 60]) for i in range(3) for a in (0, 1, 2)]
            # Two more assets: the fifth's pipeline stops the first's (kept longest ago), and it is built again.
            turns += [(3, [50]), (4, [49]), (0, [12]), (4, [13])]
            for a, indices in turns:
                got = [md5(f.tobytes()) for f in assets[a].get_frames(indices=indices, pixel_format='y420').frames]
                self.assertEqual(got, [reference[i] for i in indices], (a, indices))
        self.assertEqual(reuses(pid, len(turns)), [False] * 3 + [True] * 6 + [False, False, False, True])


def reuses(pid, count):
    """For each of worker `pid`'s first `count` ReadFrames, in order: whether it ran on a kept pipeline. The worker
    logs each ReadFrames before answering it; the daemon relays the line a moment later."""
    marker = 'trackd-worker[%d]: ReadFrames on track' % pid
    deadline = time.monotonic() + TIMEOUT
    while True:
        with open(os.path.join(tmp, 'trackd.log')) as f:
            lines = [line for line in f if marker in line]
        if len(lines) >= count or time.monotonic() > deadline:
            return ['kept from the last ReadFrames' in line for line in lines]
        time.sleep(0.05)


class TimescaleTests(unittest.TestCase):
    """Times in the track's own timescale (PROTOCOL.md §7.1), against ffprobe's integer pts in the time_base, and
    Fraction times resolved on the same grid."""

    def probe(self):
        out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                              'stream=time_base:frame=pts', '-of', 'json', clip], check=True, capture_output=True).stdout
        probe = json.loads(out)
        num, den = (int(x) for x in probe['streams'][0]['time_base'].split('/'))
        return num, den, [int(f['pts']) for f in probe['frames']]

    def test_track_and_sample_times_are_ffprobes(self):
        num, den, pts = self.probe()
        with open_clip() as asset:
            video = asset.track(media_type='video')
            self.assertEqual(video.natural_time_scale, den)
            self.assertEqual(video.min_frame_duration, Fraction(1, 30))
            self.assertEqual(video.time_range_start, trackd.Time(0, den, 1))
            got = [(f.presentation_time.value, f.presentation_time.timescale) for f in asset.read(pixel_format='y420')]
        self.assertEqual(got, [(p * num, den) for p in pts])

    def test_fraction_times_name_their_frame(self):
        num, den, pts = self.probe()
        reference = ffmpeg_md5('nv12')
        wanted = [1, 2, 3, 31, 59, 0]
        with open_clip() as asset:
            frames = asset.frames_at([Fraction(pts[k] * num, den) for k in wanted])
            self.assertEqual([(f.index, f.presentation_time.fraction, md5(f.tobytes())) for f in frames],
                             [(k, Fraction(k, 30), reference[k]) for k in wanted])
            # The same times as floats (the nearest nanosecond) and as 1/30 fractions: the same frames.
            self.assertEqual([f.index for f in asset.frames_at([k / 30 for k in wanted])], wanted)
            self.assertEqual([f.index for f in asset.frames_at([Fraction(k, 30) for k in wanted])], wanted)
            # A range from frame 2's time starts at frame 2 (not 1), and one frame long delivers only it.
            got = [f.presentation_time.fraction for f in asset.read(start=Fraction(2, 30), duration=Fraction(1, 30))]
            self.assertEqual(got, [Fraction(2, 30)])
            self.assertEqual(asset.image(Fraction(2, 30)).time, 2 / 30)


class ImageTests(unittest.TestCase):
    def test_png_of_the_frame_shown(self):
        with open_clip() as asset:
            image = asset.image(1.01)
        self.assertEqual((image.width, image.height), (320, 240))
        self.assertEqual(round(image.time * 30), 30)  # the frame shown at 1.01 s starts at 1.0 s
        self.assertEqual(image.png[:8], b'\x89PNG\r\n\x1a\n')
        path = os.path.join(tmp, 'frame.png')
        with open(path, 'wb') as f:
            f.write(image.png)
        probe = subprocess.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name,width,height',
                                '-of', 'csv=p=0', path], check=True, capture_output=True, text=True).stdout
        self.assertEqual(probe.strip(), 'png,320,240')

    def test_negative_time_is_refused(self):
        with open_clip() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.image(-1)
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)


class ErrorTests(unittest.TestCase):
    def test_not_media(self):
        path = os.path.join(tmp, 'text.mp4')
        with open(path, 'w') as f:
            f.write('not a movie\n' * 100)
        with self.assertRaises(trackd.TrackdError) as cm:
            open_clip(path)
        self.assertIn(cm.exception.code, (FILE_FORMAT_NOT_RECOGNIZED, FILE_FAILED_TO_PARSE))
        self.assertTrue(cm.exception.message)

    def test_missing_file_is_an_os_error(self):
        with self.assertRaises(FileNotFoundError):
            open_clip(os.path.join(tmp, 'missing.mp4'))

    def test_unreachable(self):
        with self.assertRaises(trackd.TrackdError) as cm:
            trackd.open(clip, socket=os.path.join(tmp, 'nobody.sock'))
        self.assertEqual(cm.exception.code, DAEMON_UNREACHABLE)

    def test_bad_pixel_format_then_the_session_goes_on(self):
        with open_clip() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.read(pixel_format='zzzz')
            self.assertEqual(cm.exception.code, UNSUPPORTED_OUTPUT_SETTINGS)
            self.assertIn('Unsupported pixel format zzzz', cm.exception.message)
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.read(pixel_format='v308')
            self.assertIn('v308 (kCVPixelFormatType_444YpCbCr8) is not supported', cm.exception.message)
            self.assertEqual(sum(1 for _ in asset.read(start=1.8)), 6)

    def test_frame_out_of_range(self):
        with open_clip() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.frames_at(indices=[0, 60])
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)
            self.assertTrue(cm.exception.message.startswith('ReadFrames request 1:'), cm.exception.message)
            self.assertIn('-11901', str(cm.exception))

    def test_unknown_track(self):
        with open_clip() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.read(track=99)
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)


class StopTests(unittest.TestCase):
    def test_sigterm_tells_an_open_session_trackd_is_stopping(self):
        # Its own trackd: this one is stopped. An idle session gets Error -11904 (request id 0) and then its
        # connection ends: every later call raises that error, not -11819; trackd exits 0.
        tmp2 = tempfile.mkdtemp(prefix='trackd-python-stop-')
        sock2 = os.path.join(tmp2, 'trackd.sock')
        with open(os.path.join(tmp2, 'trackd.log'), 'wb') as log:
            own = subprocess.Popen([os.path.join(BUILD, 'trackd'), '--socket', sock2], stderr=log)
        try:
            for _ in range(200):
                if os.path.exists(sock2):
                    break
                time.sleep(0.05)
            with trackd.open(clip, socket=sock2, timeout=TIMEOUT) as asset:
                own.terminate()
                self.assertEqual(own.wait(timeout=60), 0)
                with self.assertRaises(trackd.TrackdError) as cm:
                    asset.status()
                self.assertEqual(cm.exception.code, DAEMON_STOPPING)
                self.assertEqual(cm.exception.message, 'trackd is stopping')
        finally:
            if own.poll() is None:
                own.kill()
                own.wait()
            shutil.rmtree(tmp2, ignore_errors=True)


if __name__ == '__main__':
    unittest.main()
