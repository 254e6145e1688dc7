"""Asset and track metadata (PROTOCOL.md §7.5), segments (§7.6) and ProRes's depth (§7.2) in the Python client:
files made by ffmpeg with -metadata, edit lists and alpha, compared with ffprobe's tags and with the elst and stsd
boxes read here."""

import json
import math
import struct
import subprocess
import unittest
from fractions import Fraction

import trackd
from support import Daemon, TIMEOUT

TAGGED = ['-f', 'lavfi', '-i', 'testsrc2=size=64x48:rate=30:duration=1',
          '-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=44100:duration=1',
          '-c:v', 'libx264', '-preset', 'veryfast', '-bf', '2', '-c:a', 'aac',
          '-metadata', 'title=My Title', '-metadata', 'comment=A comment', '-metadata', 'creation_time=2021-03-04T05:06:07Z',
          '-metadata:s:v:0', 'language=ger', '-metadata:s:a:0', 'handler_name=Sound Handler X']


def ffmpeg(args, path):
    subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y'] + args + [path], check=True)
    return path


def half_up(x):
    """The nearest integer, halves up (§7.6's rounding)."""
    return math.floor(x + Fraction(1, 2))


def ffprobe_tags(path):
    out = subprocess.run(['ffprobe', '-v', 'error', '-show_format', '-show_streams', '-of', 'json', path],
                         check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    return data['format'].get('tags', {}), [s.get('tags', {}) for s in data['streams']]


def boxes(data, start=0, end=None):
    end = len(data) if end is None else end
    while end - start >= 8:
        size, kind = struct.unpack_from('>I4s', data, start)
        if size < 8 or size > end - start:
            return
        yield kind.decode('latin-1'), start + 8, start + size
        start += size


def edit_lists(path):
    """mvhd's timescale; per tkhd track id: mdhd timescale and duration, elst (duration, media_time) entries."""
    with open(path, 'rb') as f:
        data = f.read()
    moov = next((s, e) for k, s, e in boxes(data) if k == 'moov')
    movie, tracks = 0, {}
    for kind, s, e in boxes(data, *moov):
        if kind == 'mvhd':
            movie = struct.unpack_from('>I', data, s + 12)[0]
        if kind != 'trak':
            continue
        track = {'edits': []}
        for inner, s2, e2 in boxes(data, s, e):
            if inner == 'tkhd':
                track['id'] = struct.unpack_from('>I', data, s2 + 12)[0]
            if inner == 'edts':
                for k3, s3, _ in boxes(data, s2, e2):
                    if k3 == 'elst':
                        (count,) = struct.unpack_from('>I', data, s3 + 4)
                        track['edits'] = [struct.unpack_from('>Ii', data, s3 + 8 + 12 * i) for i in range(count)]
            if inner == 'mdia':
                for k3, s3, _ in boxes(data, s2, e2):
                    if k3 == 'mdhd':
                        track['timescale'], track['duration'] = struct.unpack_from('>II', data, s3 + 12)
        tracks[track['id']] = track
    return movie, tracks


class MetadataTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.daemon = Daemon()
        cls.mp4 = ffmpeg(TAGGED, cls.daemon.path('meta.mp4'))
        cls.mkv = ffmpeg(TAGGED, cls.daemon.path('meta.mkv'))
        cls.delayed = ffmpeg(['-i', cls.mp4, '-itsoffset', '0.5', '-i', cls.mp4, '-map', '0:v', '-map', '1:a', '-c', 'copy'],
                             cls.daemon.path('delayed.mp4'))

    @classmethod
    def tearDownClass(cls):
        cls.daemon.stop()

    def open(self, path):
        return trackd.open(path, socket=self.daemon.socket, timeout=TIMEOUT)

    def test_mp4_tags_match_ffprobe(self):
        fmt, streams = ffprobe_tags(self.mp4)
        with self.open(self.mp4) as asset:
            items = {(i.key_space, i.key): i.value for i in asset.metadata}
            self.assertEqual(items[('itsk', '\u00a9nam')], fmt['title'])
            self.assertEqual(items[('itsk', '\u00a9cmt')], fmt['comment'])
            self.assertEqual(items[('itsk', '\u00a9too')], fmt['encoder'])
            self.assertEqual(items[('mvhd', 'creationTime')], fmt['creation_time'].replace('.000000Z', 'Z'))
            self.assertEqual([i.value for i in asset.metadata if i.common_key == 'title'], ['My Title'])
            for track, tags in zip(asset.tracks, streams):
                got = {(i.key_space, i.key): i.value for i in track.metadata}
                self.assertEqual(got[('mdhd', 'language')], tags['language'])
                self.assertEqual(got[('hdlr', 'name')], tags['handler_name'])
            self.assertEqual(streams[1]['handler_name'], 'Sound Handler X')

    def test_mkv_tags_match_ffprobe(self):
        fmt, streams = ffprobe_tags(self.mkv)
        with self.open(self.mkv) as asset:
            items = {(i.key_space, i.key): i.value for i in asset.metadata}
            self.assertEqual(items[('mkv', 'Title')], fmt['title'])
            self.assertEqual(items[('mkvtag', 'COMMENT')], fmt['COMMENT'])
            self.assertEqual(items[('mkvtag', 'ENCODER')], fmt['ENCODER'])
            audio = {(i.key_space, i.key): i.value for i in asset.tracks[1].metadata}
            self.assertEqual(audio[('mkvtag', 'HANDLER_NAME')], streams[1]['HANDLER_NAME'])
            video = [i for i in asset.tracks[0].metadata if i.common_key == 'language']
            self.assertEqual([i.value for i in video], [streams[0]['language']])
            # No edit list: each track's range onto itself, in Fractions.
            for t in asset.tracks:
                whole = (t.time_range_start.fraction, t.duration.fraction)
                self.assertEqual(t.segments, [trackd.Segment(trackd.TimeRange(*whole), trackd.TimeRange(*whole), False)])

    def test_segments_are_the_edit_lists(self):
        movie, raw = edit_lists(self.delayed)
        with self.open(self.delayed) as asset:
            for t in asset.tracks:
                r = raw[t.id]
                self.assertTrue(r['edits'])
                expected, cursor = [], Fraction(0)
                for duration, media_time in r['edits']:
                    if duration == 0 and media_time >= 0:  # to the media's end (§7.6)
                        source = Fraction(r['duration'] - media_time, r['timescale'])
                        target = Fraction(half_up(Fraction((r['duration'] - media_time) * movie, r['timescale'])), movie)
                    else:
                        source = Fraction(half_up(Fraction(duration * r['timescale'], movie)), r['timescale'])
                        target = Fraction(duration, movie)
                    start = None if media_time == -1 else Fraction(media_time, r['timescale'])
                    expected.append(trackd.Segment(trackd.TimeRange(start, source), trackd.TimeRange(cursor, target),
                                                   media_time == -1))
                    cursor += target
                self.assertEqual(t.segments, expected)
            audio = asset.tracks[1]
            self.assertTrue(audio.segments[0].empty)
            self.assertEqual(audio.segments[0].target, trackd.TimeRange(0, Fraction(476, 1000)))
            self.assertEqual(asset.tracks[0].segments[0].source.start, Fraction(1024, 15360))

    def test_prores_depth_is_the_sample_descriptions(self):
        """ProRes from prores_ks in MOV: the track's depth is its stsd entry's — 32 for 4444 with alpha, 24 for 4444
        without and for 422 — and has_alpha says whether it is 32."""
        for profile, pix_fmt in (('2', 'yuv422p10le'), ('4', 'yuv444p10le'), ('4', 'yuva444p10le')):
            path = ffmpeg(['-f', 'lavfi', '-i', 'testsrc2=size=64x48:rate=25:duration=0.2', '-c:v', 'prores_ks',
                           '-profile:v', profile, '-pix_fmt', pix_fmt], self.daemon.path('prores-%s.mov' % pix_fmt))
            with self.subTest(pix_fmt=pix_fmt), self.open(path) as asset:
                stored = sample_description_depth(path)
                self.assertEqual(stored, 32 if pix_fmt.startswith('yuva') else 24)
                self.assertEqual((asset.tracks[0].depth, asset.tracks[0].has_alpha), (stored, stored == 32))


def sample_description_depth(path):
    """The depth field of the first track's first sample entry (QuickTime's image description, 82 bytes in)."""
    with open(path, 'rb') as f:
        data = f.read()
    span = (0, len(data))
    for kind in ('moov', 'trak', 'mdia', 'minf', 'stbl', 'stsd'):
        span = next((s, e) for k, s, e in boxes(data, *span) if k == kind)
    return struct.unpack_from('>H', data, span[0] + 8 + 82)[0]


if __name__ == '__main__':
    unittest.main()
