"""audio_time_pitch_algorithm= (TrackdAudioTimePitchAlgorithm, AVAssetReaderTrackOutput.audioTimePitchAlgorithm,
docs/SETTINGS.md): trackd reads at rate 1, so each of Apple's four algorithms delivers the bytes of a read without
one; any other value fails with the daemon's -11861 naming the four, the same every time."""

import unittest

import trackd
from trackd.errors import UNSUPPORTED_OUTPUT_SETTINGS
from support import ClipSuite, md5

suite = ClipSuite()
setUpModule, tearDownModule = suite.start, suite.stop

NAMES = ['Spectral', 'TimeDomain', 'Varispeed', 'LowQualityZeroLatency']


class AudioTimePitchAlgorithmTests(unittest.TestCase):
    def samples(self, **options):
        with suite.open() as asset:
            return [(f.frame_count, md5(f.array.tobytes())) for f in asset.read(channels=2, **options)]

    def test_each_algorithm_reads_the_default_bytes(self):
        default = self.samples()
        self.assertGreater(sum(n for n, _ in default), 48000)
        for name in NAMES:
            self.assertEqual(self.samples(audio_time_pitch_algorithm=name), default, name)

    def test_other_values_fail_naming_the_four(self):
        for value, shown in (('spectral', '"spectral"'), ('Bogus', '"Bogus"'), (1, '1')):
            for _ in range(2):  # the same answer every time
                with self.assertRaises(trackd.TrackdError) as caught:
                    self.samples(audio_time_pitch_algorithm=value)
                self.assertEqual(caught.exception.code, UNSUPPORTED_OUTPUT_SETTINGS)
                self.assertEqual(caught.exception.message,
                                 'TrackdAudioTimePitchAlgorithm must be LowQualityZeroLatency, Spectral, TimeDomain '
                                 'or Varispeed, not %s' % shown)


if __name__ == '__main__':
    unittest.main()
