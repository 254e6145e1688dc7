"""Arguments as trackd takes them: times (PROTOCOL.md §7.1), pixel formats and audio output settings."""

from . import _pixel_formats
from . import _wire as w
from .errors import INVALID_ARGUMENT, TrackdError


def time(value, what):
    """A time argument (seconds: int, float, Fraction, or a Time) as the Time to send; None stays None."""
    if value is None:
        return None
    if isinstance(value, w.Time):
        return value
    if value < 0:
        raise TrackdError(INVALID_ARGUMENT, '%s must not be negative (%r)' % (what, value))
    return w.Time.from_seconds(value)


def pixel_format(value):
    """A pixel_format argument as PixelFormatType: a name as trackctl takes it (any case: CoreVideo's codes and
    constant names, trackd's names — 'RGB' is 24RGB (0x18), 'BGR' 24BG — and GStreamer's and ffmpeg's: 'nv12',
    'yuv420p', 'rgb24', 'gbrp', ...) as its OSType, ValueError naming the close ones for any other; an int as it
    is; lists element by element."""
    if isinstance(value, str):
        return _pixel_formats.lookup(value)
    if isinstance(value, (list, tuple)):
        return [pixel_format(v) for v in value]
    return value


# untagged_matrix= values: TrackdUntaggedYCbCrMatrix's strings (docs/SETTINGS.md "Untagged video").
_MATRICES = {'601': 'ITU_R_601_4', 'bt601': 'ITU_R_601_4', 'ITU_R_601_4': 'ITU_R_601_4',
             '709': 'ITU_R_709_2', 'bt709': 'ITU_R_709_2', 'ITU_R_709_2': 'ITU_R_709_2'}


def untagged_matrix(value):
    """An untagged_matrix argument (601, 709, 'bt601', 'ITU_R_601_4', ...) as TrackdUntaggedYCbCrMatrix's string."""
    matrix = _MATRICES.get(str(value))
    if matrix is None:
        raise TrackdError(INVALID_ARGUMENT, 'untagged_matrix must be 601 or 709, not %r' % (value,))
    return matrix


def video_settings(pixel_format_, width, height, untagged_matrix_=None):
    """A video output's settings from the pixel_format/width/height/untagged_matrix arguments (None: the
    daemon's default; untagged_matrix: the YCbCr matrix of video that names none, docs/SETTINGS.md)."""
    body = {}
    if untagged_matrix_ is not None:
        body['TrackdUntaggedYCbCrMatrix'] = untagged_matrix(untagged_matrix_)
    if pixel_format_ is not None:
        body['PixelFormatType'] = pixel_format(pixel_format_)
    if width:
        body['Width'] = width
    if height:
        body['Height'] = height
    return body


def audio_settings(track, o):
    """An audio output's settings from read()'s audio options (dict o), and what its samples will be like."""
    body = {}
    if o['sample_rate'] is not None:
        body['AVSampleRateKey'] = o['sample_rate']
    if o['channels'] is not None:
        body['AVNumberOfChannelsKey'] = o['channels']
    if o['bit_depth'] is not None or o['is_float'] is not None:  # the worker wants both or neither
        body['AVLinearPCMIsFloatKey'] = bool(o['is_float'])
        body['AVLinearPCMBitDepthKey'] = o['bit_depth'] or (32 if o['is_float'] else 16)
    if o['big_endian'] is not None:
        body['AVLinearPCMIsBigEndianKey'] = bool(o['big_endian'])
    if o['non_interleaved'] is not None:
        body['AVLinearPCMIsNonInterleaved'] = bool(o['non_interleaved'])
    if o['audio_time_pitch_algorithm'] is not None:  # checked by the daemon (-11861, naming the four)
        body['TrackdAudioTimePitchAlgorithm'] = o['audio_time_pitch_algorithm']
    return body, audio_from_settings(body, track)


def audio_from_settings(body, track):
    """What an audio output's samples are like (bits, float, big_endian, non_interleaved, channels) given its
    settings."""
    return dict(bits=int(body.get('AVLinearPCMBitDepthKey', 16)),
                float=bool(body.get('AVLinearPCMIsFloatKey', False)),
                big_endian=bool(body.get('AVLinearPCMIsBigEndianKey', False)),
                non_interleaved=bool(body.get('AVLinearPCMIsNonInterleaved', False)),
                channels=int(body.get('AVNumberOfChannelsKey', track.channels or 0)))
