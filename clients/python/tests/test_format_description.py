"""A video track's format description through a real trackd (PROTOCOL.md §7.2, revision 1): preferred_transform is
ffprobe's display matrix and rotation its angle clockwise, on ffmpeg stream copies tagged `rotate=<degrees>` (the
tkhd matrix of MP4 and MOV); codec_configuration is the record the container stores where it stores one (MP4, MOV,
Matroska: ffprobe's extradata byte for byte) and the parser's avcC or hvcC where the stream is Annex B (MPEG-TS),
whose parameter sets are ffprobe's Annex B extradata's; in every container it is the passthrough output's
codec_config. Media made at test time by ffmpeg (libx264, libx265)."""

import json
import re
import subprocess
import unittest

import trackd
from support import TIMEOUT, Daemon

FFMPEG = ['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y']
ENCODERS = {
    'h264': ['-c:v', 'libx264', '-preset', 'veryfast', '-bf', '2', '-pix_fmt', 'yuv420p'],
    'hevc': ['-c:v', 'libx265', '-x265-params', 'log-level=error', '-pix_fmt', 'yuv420p', '-tag:v', 'hvc1'],
}


def setUpModule():
    global daemon, sources
    daemon = Daemon()
    sources = {}
    for codec, args in ENCODERS.items():
        sources[codec] = daemon.path('plain-%s.mp4' % codec)
        subprocess.run(FFMPEG + ['-f', 'lavfi', '-i', 'testsrc2=size=160x90:rate=25:duration=0.4'] + args
                       + [sources[codec]], check=True)


def tearDownModule():
    daemon.stop()


def remux(codec, name, extra=()):
    """The codec's source stream copied into `name` (its extension names the container) with `extra` options."""
    path = daemon.path(name)
    subprocess.run(FFMPEG + ['-i', sources[codec], '-map', '0:v', '-c', 'copy'] + list(extra) + [path], check=True)
    return path


def ffprobe_stream(path, data=False):
    args = ['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_streams'] + (['-show_data'] if data else [])
    out = subprocess.run(args + ['-of', 'json', path], check=True, capture_output=True, text=True).stdout
    return json.loads(out)['streams'][0]


def hex_dump_bytes(dump):
    """ffprobe's -show_data hex dump ("00000000: 0164 001e ...  .d..") as bytes."""
    lines = [line for line in dump.splitlines() if re.match(r'[0-9a-f]{8}: ', line)]
    return bytes.fromhex(''.join(re.sub(r'\s', '', line[10:50]) for line in lines))


def sized_units(c, at, count):
    """`count` NAL units from `at`, each after its u16 size: the units and where the next field starts."""
    units = []
    for _ in range(count):
        size = int.from_bytes(c[at:at + 2], 'big')
        units.append(c[at + 2:at + 2 + size])
        at += 2 + size
    return units, at


def avcc_units(c):
    """The SPS and PPS NAL units of an avcC (ISO 14496-15 5.3.3.1), in order."""
    sps, at = sized_units(c, 6, c[5] & 0x1F)
    pps, _ = sized_units(c, at + 1, c[at])
    return sps + pps


def hvcc_units(c):
    """The NAL units of an hvcC's arrays (ISO 14496-15 8.3.3.1: 22 header bytes, numOfArrays, then each array's
    type byte, u16 count and u16-sized units), in order."""
    units, at = [], 23
    for _ in range(c[22]):
        array, at = sized_units(c, at + 3, int.from_bytes(c[at + 1:at + 3], 'big'))
        units += array
    return units


def annex_b_units(b):
    """The NAL units of an Annex B byte stream (split at 00 00 01; zero bytes before a start code dropped)."""
    return [unit.rstrip(b'\x00') for unit in b.split(b'\x00\x00\x01')[1:]]


def video_track(asset):
    return [t for t in asset.tracks if t.media_type == 'video'][0]


class PreferredTransformTests(unittest.TestCase):
    def test_transform_is_ffprobes_display_matrix(self):
        for codec in ENCODERS:
            for container in ('mp4', 'mov'):
                for degrees in (90, 180, 270):
                    with self.subTest(codec=codec, container=container, degrees=degrees):
                        path = remux(codec, 'rotate-%s-%d.%s' % (codec, degrees, container),
                                     ['-metadata:s:v', 'rotate=%d' % degrees])
                        side = [s for s in ffprobe_stream(path).get('side_data_list', [])
                                if s.get('side_data_type') == 'Display Matrix']
                        self.assertEqual(len(side), 1, 'ffprobe states no display matrix')
                        m = [int(v) for v in re.findall(r'-?\d+', re.sub(r'^[0-9a-f]{8}:', '', side[0]['displaymatrix'],
                                                                       flags=re.M))]
                        self.assertEqual(len(m), 9, side[0]['displaymatrix'])
                        with trackd.open(path, socket=daemon.socket, timeout=TIMEOUT) as asset:
                            track = video_track(asset)
                        # a b c d tx ty: 16.16 as the tkhd stores them, exact in a float.
                        self.assertEqual(track.preferred_transform, tuple(m[i] / 65536 for i in (0, 1, 3, 4, 6, 7)))
                        self.assertNotEqual(track.preferred_transform, (1.0, 0.0, 0.0, 1.0, 0.0, 0.0))
                        # ffprobe's rotation is counter-clockwise; the track's clockwise.
                        self.assertEqual(track.rotation, -int(side[0]['rotation']) % 360)

    def test_an_untagged_track_is_the_identity(self):
        for codec in ENCODERS:
            with self.subTest(codec=codec):
                self.assertNotIn('side_data_list', ffprobe_stream(sources[codec]))
                with trackd.open(sources[codec], socket=daemon.socket, timeout=TIMEOUT) as asset:
                    track = video_track(asset)
                self.assertEqual((track.preferred_transform, track.rotation), ((1.0, 0.0, 0.0, 1.0, 0.0, 0.0), 0))


class CodecConfigurationTests(unittest.TestCase):
    def test_the_record_is_the_containers_else_the_parsers(self):
        for codec in ENCODERS:
            for container in ('mp4', 'mov', 'mkv', 'ts'):
                with self.subTest(codec=codec, container=container):
                    path = remux(codec, 'config-%s.%s' % (codec, container))
                    extradata = hex_dump_bytes(ffprobe_stream(path, data=True)['extradata'])
                    with trackd.open(path, socket=daemon.socket, timeout=TIMEOUT) as asset:
                        track = video_track(asset)
                        config = track.codec_configuration
                        output = asset.read(track.id, passthrough=True)
                        stored = output.codec_config
                        self.assertGreater(sum(1 for _ in output), 0)
                    self.assertEqual(config, stored, 'the passthrough output\'s codec_config')
                    if container != 'ts':
                        # The stored avcC or hvcC, with what ffmpeg's record carries beyond the parameter sets (the
                        # avcC's High-profile trailer, x265's SEI).
                        self.assertEqual(config, extradata)
                        continue
                    self.assertEqual(config[0], 1, 'configurationVersion 1')
                    ours = avcc_units(config) if codec == 'h264' else hvcc_units(config)
                    theirs = annex_b_units(extradata)
                    self.assertEqual(len(theirs), 2 if codec == 'h264' else 3, 'ffprobe: %s' % theirs)
                    self.assertEqual(ours, theirs)


if __name__ == '__main__':
    unittest.main()
