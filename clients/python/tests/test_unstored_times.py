"""frames_at and frame_count on a track whose stored samples carry no presentation times: ffmpeg's MPEG-4 Part 2
with two B-frames in AVI (PROTOCOL.md §7.2), where frame k is shown at the k-th stored decode time (k/30 s here).
The frames come in the order asked, with ffmpeg's bytes (framemd5) and ffprobe's packets' decode times."""

import json
import subprocess
import unittest
from fractions import Fraction

from support import ClipSuite, md5

suite = ClipSuite()
setUpModule, tearDownModule = suite.start, suite.stop


def make_avi(path):
    subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                    'testsrc2=size=160x120:rate=30:duration=2', '-pix_fmt', 'yuv420p', '-c:v', 'mpeg4', '-bf', '2',
                    '-g', '24', '-q:v', '4', '-f', 'avi', path], check=True)
    return path


def ffmpeg_frames(path):
    """ffmpeg's frames of `path` (framemd5, yuv420p, every frame as decoded) and ffprobe's packets' decode times in
    the stream's time base (its numerator and denominator)."""
    out = subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-i', path, '-map', '0:v:0', '-vsync',
                          'passthrough', '-pix_fmt', 'yuv420p', '-f', 'framemd5', '-'],
                         check=True, capture_output=True, text=True).stdout
    md5s = [line.split(',')[5].strip() for line in out.splitlines() if not line.startswith('#')]
    probe = json.loads(subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                                       'stream=time_base:packet=dts,pts', '-of', 'json', path],
                                      check=True, capture_output=True).stdout)
    base = Fraction(probe['streams'][0]['time_base'])
    packets = [(p.get('pts'), p['dts']) for p in probe['packets']]
    return md5s, base, packets


class UnstoredTimesTests(unittest.TestCase):
    def test_avi_with_b_frames(self):
        path = make_avi(suite.daemon.path('bframes.avi'))
        md5s, base, packets = ffmpeg_frames(path)
        self.assertEqual((len(md5s), len(packets), base), (60, 60, Fraction(1, 30)))
        self.assertIn(None, [pts for pts, _ in packets])  # the I- and P-pictures have no presentation time
        dts = sorted(d for _, d in packets)
        wanted = [59, 0, 2, 30, 2, 23, 22, 1]  # unsorted, repeated, first and last, B-pictures (1 and 2)
        with suite.open(path) as asset:
            self.assertEqual(asset.frame_count(), 60)
            got = [(f.index, f.presentation_time.fraction, md5(f.tobytes()))
                   for f in asset.frames_at(indices=wanted, pixel_format='y420', copy=True)]
            self.assertEqual(got, [(k, dts[k] * base, md5s[k]) for k in wanted])
            by_time = [f.index for f in asset.frames_at([Fraction(45, 30), 0.0, Fraction(1, 30) + 0.01])]
            self.assertEqual(by_time, [45, 0, 1])


if __name__ == '__main__':
    unittest.main()
