"""A video track's colour (PROTOCOL.md §7.3, "Unspecified is absent"): every field the stream states is ffprobe's
color_range / color_space / color_primaries / color_transfer, and each one ffprobe prints as `unknown` or
`reserved` is None in Colorimetry's stated_* fields (2, or range 0, on the wire) — as trackctl prints null and
TrackClient gives nil. x264 streams in MP4: BT.709; BT.601 full range; no signal type; a colour description of 2s;
reserved and unassigned code points written into the SPS by h264_metadata."""

import json
import subprocess
import unittest

import trackd
from support import TIMEOUT, Daemon

VARIANTS = {
    'bt709': ['-color_primaries', 'bt709', '-color_trc', 'bt709', '-colorspace', 'bt709'],
    'bt601full': ['-color_range', 'pc', '-colorspace', 'smpte170m', '-color_primaries', 'smpte170m',
                  '-color_trc', 'smpte170m', '-x264-params', 'fullrange=on'],
    'none': [],
    'vui2': ['-bsf:v', 'h264_metadata=colour_primaries=2:transfer_characteristics=2:matrix_coefficients=2'],
    'unassigned': ['-bsf:v', 'h264_metadata=colour_primaries=13:transfer_characteristics=3:matrix_coefficients=15'],
    'reserved': ['-bsf:v', 'h264_metadata=colour_primaries=0:transfer_characteristics=0:matrix_coefficients=3'],
}

# ffmpeg's names as H.273 code points; unknown and reserved state nothing.
CODES = {'bt709': 1, 'bt470bg': 5, 'smpte170m': 6, 'unknown': None, 'reserved': None}
RANGES = {'tv': 1, 'pc': 2, 'unknown': None}


def setUpModule():
    global daemon
    daemon = Daemon()


def tearDownModule():
    daemon.stop()


def make(variant):
    path = daemon.path('colour-%s.mp4' % variant)
    subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                    'testsrc2=size=160x90:rate=25:duration=0.2', '-c:v', 'libx264', '-preset', 'veryfast',
                    '-pix_fmt', 'yuv420p'] + VARIANTS[variant] + [path], check=True)
    return path


def ffprobe_colour(path):
    out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_entries',
                          'stream=color_range,color_space,color_primaries,color_transfer', '-of', 'json', path],
                         check=True, capture_output=True, text=True).stdout
    s = json.loads(out)['streams'][0]
    return (RANGES[s.get('color_range', 'unknown')], CODES[s.get('color_space', 'unknown')],
            CODES[s.get('color_primaries', 'unknown')], CODES[s.get('color_transfer', 'unknown')])


class ColourTests(unittest.TestCase):
    def test_stated_fields_are_ffprobes_and_unspecified_is_none(self):
        for variant in VARIANTS:
            with self.subTest(variant=variant):
                path = make(variant)
                expected = ffprobe_colour(path)
                with trackd.open(path, socket=daemon.socket, timeout=TIMEOUT) as asset:
                    c = [t for t in asset.tracks if t.media_type == 'video'][0].colorimetry
                stated = (c.stated_range, c.stated_matrix, c.stated_primaries, c.stated_transfer)
                self.assertEqual(stated, expected, '%s: ffprobe %s, trackd %s' % (variant, expected, c))
                if variant in ('bt709', 'bt601full'):
                    self.assertNotIn(None, stated, '%s states every field' % variant)
                else:
                    self.assertEqual(stated[1:], (None, None, None), variant)
                    self.assertEqual((c.matrix, c.primaries, c.transfer), (2, 2, 2), '%s on the wire' % variant)


if __name__ == '__main__':
    unittest.main()
