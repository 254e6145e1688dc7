"""pixel_format= takes the names trackctl takes (PixelFormats.swift): the tables are `trackctl read --pixel-format
list --json`'s, a name maps to the same format in any case, and a name no format has is refused with the same
words and the same close names as trackctl's."""

import json
import os
import subprocess
import unittest

from trackd import _options
from trackd import _pixel_formats as pf
from support import BUILD

TRACKCTL = os.path.join(BUILD, 'trackctl')


def trackctl(*args):
    return subprocess.run([TRACKCTL] + list(args), capture_output=True, text=True, timeout=60)


class TableTests(unittest.TestCase):
    def test_tables_equal_trackctls_listing(self):
        listing = json.loads(trackctl('read', '--pixel-format', 'list', '--json').stdout)
        self.assertEqual([(f[0], f[1], f[2], list(f[3])) for f in pf.FORMATS],
                         [(f['code'], f['osType'], f['constant'], f['names']) for f in listing['formats']])
        self.assertEqual([list(u) for u in pf.UNSUPPORTED],
                         [[u['code'], u['constant']] for u in listing['unsupported']])
        self.assertEqual([(list(n), r, list(i)) for n, r, i in pf.REFUSED],
                         [(r['names'], r['reason'], r['instead']) for r in listing['refused']])

    def test_refusals_are_trackctls_words(self):
        # trackctl reads nothing with a name it refuses: its usage error carries PixelFormat.lookup's problem.
        for name in ('yuv420', 'nv20', 'rgb32', 'bogus', 'gbrp10le', 'RGB48LE', 'yuv422p', 'YUV444P', 'nv21', 'ab',
                     'YV12', 'gray10le', 'gray12'):
            with self.subTest(name):
                with self.assertRaises(ValueError) as cm:
                    _options.pixel_format(name)
                out = trackctl('read', '/nonexistent.mp4', '--pixel-format', name)
                self.assertNotEqual(out.returncode, 0)
                self.assertIn(str(cm.exception), out.stderr)


class NameTests(unittest.TestCase):
    def test_names_users_type_name_one_format_each(self):
        expected = {
            'nv12': '420v', 'NV12': '420v', 'yuv420p': 'y420', 'I420': 'y420', 'rgb24': '24RGB', 'RGB': '24RGB',
            '24RGB': '24RGB', '24': '24RGB', '0x18': '24RGB', 'bgr24': '24BG', 'BGR': '24BG', 'bgra': 'BGRA',
            'rgba': 'RGBA', 'argb': '32ARGB', '32': '32ARGB', 'rgbp': '_RGP', 'gbrp': '_GBP', 'GBR': '_GBP',
            'p010le': 'x420', 'P010_10LE': 'x420', 'uyvy422': '2vuy', 'YUY2': 'yuvs', 'gray': 'L008',
            'gray16le': 'L016', 'GRAY16_LE': 'L016', 'ayuv64le': 'y416', 'rgba64le': 'l64r', 'v210': 'v210',
            'V216': 'v216', '420V': '420v', 'kcvpixelformattype_32bgra': 'BGRA', '0x42475241': 'BGRA',
        }
        codes = {f[0]: f[1] for f in pf.FORMATS}
        for name, code in expected.items():
            self.assertEqual(_options.pixel_format(name), codes[code], name)
        self.assertEqual(_options.pixel_format(['nv12', 'BGRA']), [codes['420v'], codes['BGRA']])
        self.assertEqual(_options.pixel_format(0x7a7a7a7a), 0x7a7a7a7a)  # integers go to trackd as they are

    def test_unknown_names_list_the_close_ones(self):
        with self.assertRaises(ValueError) as cm:
            _options.pixel_format('yuv420')
        self.assertEqual(str(cm.exception), 'unknown pixel format yuv420; close: yuv420p (y420), yuyv422 (yuvs), '
                         'yuv422p, yuv420p10le; `trackctl read --pixel-format list` shows them all')

    def test_unsupported_corevideo_codes_go_to_trackd(self):
        # trackd answers them with its reason (test_lifetime_errors: "v308 (...) is not supported").
        self.assertEqual(_options.pixel_format('V308'), int.from_bytes(b'v308', 'big'))


if __name__ == '__main__':
    unittest.main()
