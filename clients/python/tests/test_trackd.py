"""The Python client against a real trackd (support.Daemon, from $TRACKD_BUILD_DIR, default .build/debug) on media
made at test time by ffmpeg: tracks, video and audio reads, zero-copy views, times and images; decoded bytes are
checked against trackctl --md5 and ffmpeg's framemd5."""

import json
import subprocess
import unittest
from fractions import Fraction

import numpy as np

import trackd
from trackd.errors import INVALID_ARGUMENT
from support import ClipSuite, ffmpeg_md5, md5

suite = ClipSuite()
setUpModule, tearDownModule = suite.start, suite.stop


def summary(frame, digest):
    return ('%.6f' % frame.pts, len(frame.tobytes()), digest)


def probe_packets(path):
    """ffprobe's audio packets of `path` (pts and discard_padding) and the stream's time base."""
    probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'a:0', '-show_entries',
                                       'stream=time_base:packet=pts:packet_side_data=discard_padding',
                                       '-of', 'json', path], check=True, capture_output=True).stdout)
    return probe['packets'], Fraction(probe['streams'][0]['time_base'])


def passthrough_trims(path):
    """(presentation_time, trim_at_start, trim_at_end) of every passthrough sample of the first audio track."""
    with suite.open(path) as asset:
        audio = [t for t in asset.tracks if t.media_type == 'audio'][0]
        return [(f.presentation_time, f.trim_at_start, f.trim_at_end) for f in asset.read(audio.id, passthrough=True)]


class TracksTests(unittest.TestCase):
    def test_tracks(self):
        with suite.open() as asset:
            video, audio = asset.tracks
            self.assertEqual((video.media_type, video.codec, video.width, video.height), ('video', 'avc1', 320, 240))
            self.assertEqual((video.bits_per_component, video.chroma_subsampling), (8, 1))
            self.assertAlmostEqual(video.nominal_frame_rate, 30.0)
            self.assertEqual((audio.media_type, audio.codec, audio.sample_rate, audio.channels),
                             ('audio', 'mp4a', 48000, 2))
            # The §7.2 details, against ffprobe's names for the same streams.
            probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=profile,channel_layout',
                                               '-of', 'json', suite.clip], check=True, capture_output=True).stdout)['streams']
            self.assertEqual(video.profile.lower(), probe[0]['profile'].lower())
            self.assertEqual(audio.channel_layout, probe[1]['channel_layout'])
            self.assertGreater(audio.bit_rate, 0)
            self.assertAlmostEqual(asset.duration, 2.0, places=1)
            self.assertGreater(asset.worker_pid, 0)
            self.assertTrue(asset.server_version.startswith('trackd'))

    def test_status_has_every_counter(self):
        with suite.open() as asset:
            status = asset.status()
        # The supervisor's interventions (PROTOCOL.md Status, after gstreamer_version): none in this suite's daemon.
        self.assertEqual((status['watchdog_kills'], status['connections_refused'], status['connections_rate_limited']),
                         (0, 0, 0))
        self.assertTrue(status['gstreamer_version'].startswith('GStreamer '))
        self.assertGreaterEqual(status['connections_accepted'], 1)

    def test_tracks_in_track_id_order(self):
        # Video then two AAC tracks (ids 1, 2, 3): parsebin adds the audio pads in whichever order their parsers are
        # ready, and was listed as 1, 3, 2 on some opens; AVAsset's order is the track id's.
        path = suite.daemon.path('three-tracks.mov')
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
            with suite.open(path) as asset:
                self.assertEqual([(t.id, t.sample_rate) for t in asset.tracks], expected)


class VideoTests(unittest.TestCase):
    def test_y420_equals_trackctl_and_ffmpeg(self):
        with suite.open() as asset:
            got = []
            for frame in asset.read(pixel_format='y420'):
                self.assertEqual([p.shape for p in frame.planes], [(240, 320), (120, 160), (120, 160)])
                got.append(summary(frame, md5(b''.join(np.ascontiguousarray(p).tobytes() for p in frame.planes))))
        self.assertEqual(len(got), 60)
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--pixel-format', 'y420'))
        self.assertEqual([g[2] for g in got], ffmpeg_md5(suite.clip, 'yuv420p'))

    def test_bgra_array_equals_trackctl(self):
        with suite.open() as asset:
            got = []
            for frame in asset.read(pixel_format='BGRA'):
                a = frame.array
                self.assertEqual((a.shape, a.dtype), ((240, 320, 4), np.uint8))
                got.append(summary(frame, md5(np.ascontiguousarray(a).tobytes())))
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--pixel-format', 'BGRA'))

    def test_420v_planes_equal_ffmpeg_nv12(self):
        with suite.open() as asset:
            got = []
            for frame in asset.read():  # default 420v
                self.assertEqual(frame.format, '420v')
                y, cbcr = frame.planes
                self.assertEqual((y.shape, cbcr.shape), ((240, 320), (120, 320)))
                got.append(md5(y.tobytes() + cbcr.tobytes()))
                self.assertEqual(got[-1], md5(frame.tobytes()))
        self.assertEqual(got, ffmpeg_md5(suite.clip, 'nv12'))
        self.assertEqual(got, [m for _, _, m in suite.daemon.trackctl_md5('read', suite.clip, '--pixel-format', '420v')])

    def test_scaled_gray(self):
        with suite.open() as asset:
            got = []
            for f in asset.read(pixel_format='L008', width=160, height=120):
                self.assertEqual(f.array.shape, (120, 160))
                got.append(summary(f, md5(np.ascontiguousarray(f.array).tobytes())))
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--pixel-format', 'L008', '--width', '160', '--height', '120'))

    def test_passthrough_equals_trackctl(self):
        with suite.open() as asset:
            output = asset.read(passthrough=True)
            self.assertEqual((output.format, output.codec_config[:1]), ('avc1', b'\x01'))  # an avcC record
            got = [summary(f, md5(f.array.tobytes())) for f in output]
            self.assertEqual(sum(f.sync for f in asset.read(passthrough=True)), 4)  # GOP 15: frames 0, 15, 30, 45
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--passthrough'))

    def test_aac_passthrough_trims(self):
        # The clip's AAC track (ffmpeg: an edit list skipping 1024 frames of priming, the last packet cut short):
        # every stored packet, as ffprobe counts them; the priming packet first, at PTS -1024/48000, with
        # trim_at_start 1024/48000; the last with trim_at_end the rest of its 1024 frames; no other trims.
        probe = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'a:0', '-show_entries',
                                'packet=pts,duration', '-of', 'csv=p=0', suite.clip], capture_output=True, text=True,
                               check=True).stdout.split()
        first_pts, last_duration = int(probe[0].split(',')[0]), int(probe[-1].split(',')[1])
        with suite.open() as asset:
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

    def test_opus_passthrough_trims(self):
        # Opus in Ogg and WebM (ffmpeg, libopus): the first packet trims the 312-frame pre-skip (OpusHead / CodecDelay),
        # the last one its padding (granule position / DiscardPadding), as ffprobe's skip_samples and discard_padding;
        # the first packet's PTS is ffprobe's (-312/48000 in Ogg, -7/1000 in WebM).
        for ext in ('opus', 'webm'):
            path = suite.daemon.path('trims.' + ext)
            subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                            'sine=frequency=440:sample_rate=48000:duration=1', '-c:a', 'libopus', path], check=True)
            packets, base = probe_packets(path)
            samples = passthrough_trims(path)
            self.assertEqual(len(samples), len(packets))
            (pts, start, end), last = samples[0], samples[-1]
            self.assertEqual(Fraction(pts.value, pts.timescale), packets[0]['pts'] * base)
            self.assertEqual(Fraction(start.value, start.timescale), Fraction(312, 48000))
            self.assertIsNone(end)
            padding = packets[-1]['side_data_list'][0]['discard_padding']
            self.assertEqual(Fraction(last[2].value, last[2].timescale), Fraction(padding, 48000))
            self.assertTrue(all(s[1] is None and s[2] is None for s in samples[1:-1]))
        # Opus in MP4 (ffmpeg): the edit is the trims, the pre-skip on the first packet and, on the last, what lies
        # after the edit's end (960 frames less ffprobe's duration for it).
        path = suite.daemon.path('trims.mp4')
        subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                        'sine=frequency=440:sample_rate=48000:duration=1', '-c:a', 'libopus', '-f', 'mp4', path], check=True)
        probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'a:0', '-show_entries',
                                           'packet=duration', '-of', 'json', path], check=True, capture_output=True).stdout)
        with suite.open(path) as asset:
            audio = [t for t in asset.tracks if t.media_type == 'audio'][0]
            samples = [(f.trim_at_start, f.trim_at_end) for f in asset.read(audio.id, passthrough=True)]
        self.assertEqual(len(samples), len(probe['packets']))
        self.assertEqual([Fraction(samples[0][0].value, samples[0][0].timescale), samples[-1][0]], [Fraction(312, 48000), None])
        end = samples[-1][1]
        self.assertEqual(Fraction(end.value, end.timescale), Fraction(960 - probe['packets'][-1]['duration'], 48000))

    def test_vorbis_passthrough_trims(self):
        # Vorbis in Ogg (GStreamer's vorbisenc, 1 s, and ffmpeg's libvorbis, 2 s: not PROTOCOL.md's deliberate
        # difference, a first audio page that is also the last): every packet at ffprobe's PTS (the first at -128/44100 on
        # GStreamer's file, 0 on ffmpeg's), the last one's end padding (what the last page's granule position leaves
        # out) its trim at the end, as ffprobe's discard_padding; no other trims.
        gst, ff = suite.daemon.path('trims-gst.ogg'), suite.daemon.path('trims-ff.ogg')
        subprocess.run(['gst-launch-1.0', '-q', 'audiotestsrc', 'num-buffers=25', 'samplesperbuffer=1764', '!',
                        'audio/x-raw,rate=44100,channels=1', '!', 'vorbisenc', '!', 'oggmux', '!', 'filesink',
                        'location=' + gst], check=True)
        subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                        'sine=frequency=440:sample_rate=44100:duration=2', '-c:a', 'libvorbis', ff], check=True)
        for path in (gst, ff):
            packets, base = probe_packets(path)
            samples = passthrough_trims(path)
            self.assertEqual([Fraction(t.value, t.timescale) for t, _, _ in samples], [p['pts'] * base for p in packets])
            padding = [d['discard_padding'] for d in packets[-1]['side_data_list'] if 'discard_padding' in d][0]
            end = samples[-1][2]
            self.assertEqual(Fraction(end.value, end.timescale), Fraction(padding, 44100))
            self.assertTrue(all(s[1] is None for s in samples) and all(s[2] is None for s in samples[:-1]))

    def test_time_range(self):
        with suite.open() as asset:
            frames = [(f.pts, md5(f.tobytes())) for f in asset.read(pixel_format='y420', start=0.5, duration=0.5)]
        self.assertEqual([round(p * 30) for p, _ in frames], list(range(15, 30)))
        self.assertEqual([m for _, m in frames], ffmpeg_md5(suite.clip, 'yuv420p')[15:30])


    def test_ranges_in_any_order_equal_trackctl(self):
        with suite.open() as asset:
            got = [summary(f, md5(f.tobytes())) for f in asset.read(pixel_format='y420',
                                                                    ranges=[(1.2, 0.3), (0, 0.5), (1.8, None)])]
            self.assertEqual(asset.status()['active_outputs'], 0)  # finished (FinishOutput) and all released
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--pixel-format', 'y420', '--ranges', '1.2-1.5,0-0.5,1.8-'))
        self.assertEqual(len(got), 9 + 15 + 6)


class ZeroCopyTests(unittest.TestCase):
    def check_views(self, pixel_format):
        with suite.open() as asset:
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
        with suite.open() as asset:
            frame = next(iter(asset.read(channels=2)))
            a = frame.array
            self.assertTrue(np.shares_memory(a, np.frombuffer(frame._pool.mmap, dtype=np.uint8)))
            self.assertFalse(a.flags.owndata)


class AudioTests(unittest.TestCase):
    def test_interleaved_s16_equals_trackctl(self):
        with suite.open() as asset:
            got = []
            for f in asset.read(channels=2):
                a = f.array
                self.assertEqual((a.dtype, a.shape), (np.dtype('<i2'), (f.frame_count, 2)))
                got.append(summary(f, md5(a.tobytes())))
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--channels', '2'))
        self.assertGreater(sum(s for _, s, _ in got), 2 * 48000 * 4 * 0.9)

    def test_time_range_equals_trackctl(self):
        with suite.open() as asset:
            got = [summary(f, md5(f.array.tobytes())) for f in asset.read(channels=1, start=0.5, duration=0.25)]
            self.assertEqual(sum(f.frame_count for f in asset.read(channels=1, start=0.5, duration=0.25)), 12000)
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--channels', '1', '--start', '0.5', '--duration', '0.25'))

    def test_float_non_interleaved_equals_trackctl(self):
        with suite.open() as asset:
            got = []
            for f in asset.read(is_float=True, non_interleaved=True, sample_rate=22050):
                a = f.array
                self.assertEqual((a.dtype, a.shape), (np.dtype('<f4'), (2, f.frame_count)))
                self.assertEqual(a[1].tobytes(), f.planes[1].tobytes())
                got.append(summary(f, md5(a[0].tobytes() + a[1].tobytes())))
        self.assertEqual(got, suite.daemon.trackctl_md5('read', suite.clip, '--float', '--non-interleaved', '--sample-rate', '22050'))


class TimescaleTests(unittest.TestCase):
    """Times in the track's own timescale (PROTOCOL.md §7.1), against ffprobe's integer pts in the time_base, and
    Fraction times resolved on the same grid."""

    def probe(self):
        out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                              'stream=time_base:frame=pts', '-of', 'json', suite.clip], check=True, capture_output=True).stdout
        probe = json.loads(out)
        num, den = (int(x) for x in probe['streams'][0]['time_base'].split('/'))
        return num, den, [int(f['pts']) for f in probe['frames']]

    def test_track_and_sample_times_are_ffprobes(self):
        num, den, pts = self.probe()
        with suite.open() as asset:
            video = asset.track(media_type='video')
            self.assertEqual(video.natural_time_scale, den)
            self.assertEqual(video.min_frame_duration, Fraction(1, 30))
            self.assertEqual(video.time_range_start, trackd.Time(0, den, 1))
            got = [(f.presentation_time.value, f.presentation_time.timescale) for f in asset.read(pixel_format='y420')]
        self.assertEqual(got, [(p * num, den) for p in pts])

    def test_fraction_times_name_their_frame(self):
        num, den, pts = self.probe()
        reference = ffmpeg_md5(suite.clip, 'nv12')
        wanted = [1, 2, 3, 31, 59, 0]
        with suite.open() as asset:
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


    def test_a_time_between_frames_of_an_avi_names_the_frame_shown(self):
        # An AVI at 30 fps: timescale 30, one tick a frame. 0.52 s (a float, sent as nanoseconds) is inside frame 15
        # (from 0.5 s, frame 16 from 0.5333 s): frames_at, image and a range from there give frame 15 (§7.1), as
        # TorchCodec's get_frames_played_at, decord and PyAV do; 16/30 s as a float still names frame 16.
        path = suite.daemon.path('clip-mpeg4.avi')
        subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                        'testsrc2=size=160x90:rate=30:duration=1', '-c:v', 'mpeg4', '-g', '12', path], check=True)
        reference = ffmpeg_md5(path, 'nv12')
        with suite.open(path) as asset:
            self.assertEqual(asset.track(media_type='video').natural_time_scale, 30)
            frames = asset.frames_at([0.52, 0.51, 16 / 30, 0.55])
            self.assertEqual([(f.index, f.presentation_time.fraction, md5(f.tobytes())) for f in frames],
                             [(k, Fraction(k, 30), reference[k]) for k in (15, 15, 16, 16)])
            self.assertEqual(asset.image(0.52).time, 0.5)
            got = [f.presentation_time.fraction for f in asset.read(start=0.52, duration=0.05)]
            self.assertEqual(got, [Fraction(15, 30), Fraction(16, 30), Fraction(17, 30)])

class ImageTests(unittest.TestCase):
    def test_png_of_the_frame_shown(self):
        with suite.open() as asset:
            image = asset.image(1.01)
        self.assertEqual((image.width, image.height), (320, 240))
        self.assertEqual(round(image.time * 30), 30)  # the frame shown at 1.01 s starts at 1.0 s
        self.assertEqual(image.png[:8], b'\x89PNG\r\n\x1a\n')
        path = suite.daemon.path('frame.png')
        with open(path, 'wb') as f:
            f.write(image.png)
        probe = subprocess.run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name,width,height',
                                '-of', 'csv=p=0', path], check=True, capture_output=True, text=True).stdout
        self.assertEqual(probe.strip(), 'png,320,240')

    def test_negative_time_is_refused(self):
        with suite.open() as asset:
            with self.assertRaises(trackd.TrackdError) as cm:
                asset.image(-1)
            self.assertEqual(cm.exception.code, INVALID_ARGUMENT)


class LostSamplesTests(unittest.TestCase):
    """PROTOCOL.md §12.5: a read that cannot deliver every stored sample says so, in the output and in Status."""

    def test_a_cut_file_counts_what_it_lacks(self):
        whole = suite.daemon.path('lost-whole.mp4')
        subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                        'testsrc2=size=160x120:rate=30:duration=2', '-c:v', 'libx264', '-preset', 'veryfast',
                        '-g', '15', '-movflags', '+faststart', whole], check=True)
        listed = len(json.loads(subprocess.run(['ffprobe', '-v', 'error', '-show_packets', '-of', 'json', whole],
                                               check=True, capture_output=True).stdout)['packets'])
        cut = suite.daemon.path('lost-cut.mp4')
        with open(whole, 'rb') as f:
            data = f.read()
        with open(cut, 'wb') as f:
            f.write(data[:len(data) // 2])
        with suite.open(cut) as asset:
            output = asset.read(passthrough=True, copy=True)
            delivered = sum(1 for _ in output)
            self.assertEqual(output.status, 2)  # completed, and says what it lost
            self.assertGreater(output.samples_lost, 0)
            self.assertEqual(delivered + output.samples_lost, listed)
            self.assertEqual(asset.status()['samples_lost'], output.samples_lost)
        with suite.open(whole) as asset:
            output = asset.read(passthrough=True, copy=True)
            self.assertEqual((sum(1 for _ in output), output.samples_lost), (listed, 0))


if __name__ == '__main__':
    unittest.main()
