"""untagged_matrix= (TrackdUntaggedYCbCrMatrix, docs/SETTINGS.md "Untagged video"): the YCbCr matrix for video
that names none. Each choice's RGB is compared per pixel with ffmpeg's conversion given that matrix
(scale=in_color_matrix=...), within the Swift RGBFormatTests' bound: at most 6 code values, 2.0 on average
(GStreamer 1.22's videoconvert is 8-bit fixed point), while the other matrix is 20 or more away."""

import subprocess
import unittest

import numpy as np

import trackd
from support import TIMEOUT, Daemon

W, H = 1280, 720


def setUpModule():
    global daemon, clip
    daemon = Daemon()
    clip = daemon.path('untagged-hd-444.mp4')
    subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                    'testsrc2=size=%dx%d:rate=10:duration=0.2' % (W, H), '-c:v', 'libx264', '-preset', 'ultrafast',
                    '-pix_fmt', 'yuv444p', clip], check=True)


def tearDownModule():
    daemon.stop()


def ffmpeg_rgb(matrix):
    out = subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-i', clip, '-map', '0:v:0', '-vf',
                          'scale=in_color_matrix=%s:in_range=tv,format=rgb24' % matrix, '-f', 'rawvideo', '-'],
                         check=True, capture_output=True).stdout
    return np.frombuffer(out, dtype=np.uint8).reshape(-1, H, W, 3).astype(np.int16)


class UntaggedMatrixTests(unittest.TestCase):
    def frames(self, matrix):
        with trackd.open(clip, socket=daemon.socket, timeout=TIMEOUT) as asset:
            return asset.get_frames([0, 1], untagged_matrix=matrix).frames.astype(np.int16)

    def check(self, matrix, same, other):
        ours = self.frames(matrix)
        close, far = np.abs(ours - ffmpeg_rgb(same)), np.abs(ours - ffmpeg_rgb(other))
        self.assertLessEqual(int(close.max()), 6, '%s: up to %d from ffmpeg %s' % (matrix, close.max(), same))
        self.assertLessEqual(float(close.mean()), 2.0)
        self.assertGreaterEqual(int(far.max()), 20, 'the comparison cannot tell %s from %s' % (same, other))

    def test_601_matches_ffmpeg_bt601(self):
        self.check(601, 'bt601', 'bt709')

    def test_709_matches_ffmpeg_bt709(self):
        self.check('ITU_R_709_2', 'bt709', 'bt601')

    def test_other_values_are_refused(self):
        with self.assertRaises(trackd.TrackdError) as caught:
            self.frames('2020')
        self.assertIn('untagged_matrix must be 601 or 709', str(caught.exception))


if __name__ == '__main__':
    unittest.main()
