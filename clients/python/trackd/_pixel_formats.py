"""The pixel-format names pixel_format= takes, as trackctl takes them (Sources/Protocol/PixelFormats.swift,
PixelFormatNames.swift): CoreVideo's four-char codes and constant names, trackd's names, and GStreamer's and
ffmpeg's names of the same layouts, in any case, each naming one format. test_pixel_formats holds these tables
equal to `trackctl read --pixel-format list --json`."""

# Each format: code (trackd's name of it: the four-char code, or 24RGB / 32ARGB for the two CoreVideo codes that
# are numbers), OSType, CoreVideo's (or trackd's) constant name, the other names.
FORMATS = (
    ('420v', 0x34323076, 'kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange', ('nv12',)),
    ('420f', 0x34323066, 'kCVPixelFormatType_420YpCbCr8BiPlanarFullRange', ()),
    ('y420', 0x79343230, 'kCVPixelFormatType_420YpCbCr8Planar', ('i420', 'iyuv', 'yuv420p')),
    ('2vuy', 0x32767579, 'kCVPixelFormatType_422YpCbCr8', ('uyvy', 'uyvy422')),
    ('yuvs', 0x79757673, 'kCVPixelFormatType_422YpCbCr8_yuvs', ('yuy2', 'yuyv', 'yuyv422')),
    ('BGRA', 0x42475241, 'kCVPixelFormatType_32BGRA', ()),
    ('32ARGB', 0x00000020, 'kCVPixelFormatType_32ARGB', ('argb',)),
    ('RGBA', 0x52474241, 'kCVPixelFormatType_32RGBA', ()),
    ('24RGB', 0x00000018, 'kCVPixelFormatType_24RGB', ('rgb24', 'rgb')),
    ('24BG', 0x32344247, 'kCVPixelFormatType_24BGR', ('bgr24', 'bgr')),
    ('_RGP', 0x5F524750, 'kTrackdPixelFormatType_24RGBPlanar', ('rgbp',)),
    ('_GBP', 0x5F474250, 'kTrackdPixelFormatType_24GBRPlanar', ('gbrp', 'gbr')),
    ('y408', 0x79343038, 'kCVPixelFormatType_4444AYpCbCr8', ('ayuv',)),
    ('422v', 0x34323276, 'kCVPixelFormatType_422YpCbCr8BiPlanarVideoRange', ('nv16',)),
    ('444v', 0x34343476, 'kCVPixelFormatType_444YpCbCr8BiPlanarVideoRange', ('nv24',)),
    ('L008', 0x4C303038, 'kCVPixelFormatType_OneComponent8', ('gray', 'gray8')),
    ('L016', 0x4C303136, 'kCVPixelFormatType_OneComponent16', ('gray16le', 'gray16_le')),
    ('x420', 0x78343230, 'kCVPixelFormatType_420YpCbCr10BiPlanarVideoRange', ('p010le', 'p010', 'p010_10le')),
    ('xf20', 0x78663230, 'kCVPixelFormatType_420YpCbCr10BiPlanarFullRange', ()),
    ('v210', 0x76323130, 'kCVPixelFormatType_422YpCbCr10', ()),
    ('v216', 0x76323136, 'kCVPixelFormatType_422YpCbCr16', ()),
    ('y416', 0x79343136, 'kCVPixelFormatType_4444AYpCbCr16', ('ayuv64', 'ayuv64le')),
    ('b64a', 0x62363461, 'kCVPixelFormatType_64ARGB', ('argb64_be', 'argb64be')),
    ('l64r', 0x6C363472, 'kCVPixelFormatType_64RGBALE', ('rgba64le', 'rgba64_le')),
)

# CoreVideo formats GStreamer 1.22 cannot produce: code, constant name. Their codes go to trackd as they are, which
# answers why (Error -11861, "v308 (kCVPixelFormatType_444YpCbCr8) is not supported: ...").
UNSUPPORTED = (
    ('v308', 'kCVPixelFormatType_444YpCbCr8'),
    ('v408', 'kCVPixelFormatType_4444YpCbCrA8'),
    ('r408', 'kCVPixelFormatType_4444YpCbCrA8R'),
    ('v410', 'kCVPixelFormatType_444YpCbCr10'),
    ('x422', 'kCVPixelFormatType_422YpCbCr10BiPlanarVideoRange'),
    ('x444', 'kCVPixelFormatType_444YpCbCr10BiPlanarVideoRange'),
)

# Other libraries' names of layouts no trackd format has: names, why, the codes to use instead.
REFUSED = (
    (('gbrp10le', 'gbr_10le', 'gbrp12le', 'gbr_12le', 'gbrp16le', 'gbr_16le'),
     'no CoreVideo layout for planar RGB deeper than 8 bits', ('l64r', 'b64a')),
    (('rgb48le', 'rgb48be', 'bgr48le', 'bgr48be'),
     'no CoreVideo layout for packed 16-bit RGB without alpha', ('l64r', 'b64a')),
    (('nv21',), 'Cr before Cb in the chroma plane', ('420v',)),
    (('yv12',), 'the Cr plane before the Cb plane', ('y420',)),
    (('gray10le', 'gray12le', 'gray14le'), 'luma in the low bits of 16-bit words; L016 uses all 16', ('L016',)),
    (('yuv422p', 'y42b'), 'no CoreVideo layout for planar 8-bit 4:2:2', ('422v', '2vuy', 'yuvs')),
    (('yuv444p', 'y444'), 'no CoreVideo layout for planar 8-bit 4:4:4', ('444v', 'y408')),
    (('yuv420p10le', 'i420_10le'), 'no CoreVideo layout for planar 10-bit 4:2:0', ('x420',)),
    (('yuv422p10le', 'i422_10le'), "no CoreVideo layout for planar 10-bit 4:2:2 (ProRes 422's decoder output)",
     ('v210', 'v216')),
)

_LIST_HINT = '`trackctl read --pixel-format list` shows them all'


def _spellings(f):
    return (f[0], f[2]) + tuple(n for n in f[3] if n != f[0])


def _with_aliases(code):
    f = next(f for f in FORMATS if f[0] == code)
    return '%s (%s)' % (code, ', '.join(f[3])) if f[3] else code


def _parse(text):
    """As Swift's PixelFormat.parse: exact codes and constant names, 0x-hex or decimal OSTypes."""
    number = _number(text)
    return next((f for f in FORMATS if text in (f[0], f[2]) or f[1] == number), None)


def _number(text):
    """A decimal or 0x-hex OSType as typed, else None."""
    hexadecimal = text.startswith('0x')
    digits = text[2:] if hexadecimal else text
    allowed = '0123456789abcdefABCDEF' if hexadecimal else '0123456789'
    return int(digits, 16 if hexadecimal else 10) if digits and all(c in allowed for c in digits) else None


def lookup(text):
    """The OSType to send for a pixel-format name: a format's code, or an unsupported CoreVideo code (trackd
    answers why). ValueError for another library's layout no format has (with what to use instead) and for an
    unknown name (with the names close to it)."""
    f = _parse(text)
    if f is not None:
        return f[1]
    key = text.lower()
    for f in FORMATS:
        if any(s.lower() == key for s in _spellings(f)):
            return f[1]
    for code, constant in UNSUPPORTED:
        value = int.from_bytes(code.encode('ascii'), 'big')
        if key in (code.lower(), constant.lower()) or _number(text) == value:
            return value
    for names, reason, instead in REFUSED:
        if key in names:
            raise ValueError('%s is not a trackd pixel format (%s); use %s'
                             % (text, reason, ' or '.join(_with_aliases(c) for c in instead)))
    close = close_to(key)
    shown = '; close: ' + ', '.join(close) if close else ''
    raise ValueError('unknown pixel format %s%s; %s' % (text, shown, _LIST_HINT))


def name_of(text):
    """A format's code (trackd's name, as FORMATS has it) for a name lookup() takes; None for the unsupported."""
    value = lookup(text)
    return next((f[0] for f in FORMATS if f[1] == value), None)


def close_to(key):
    """At most six spellings near `key` (lower case), nearest first, as Swift's PixelFormat.close(to:): an edit
    distance of at most 1 (keys of up to three characters) or 2, or a spelling that starts with the key (three
    characters or more); "spelling (code)" when the spelling is not the code."""
    limit = 1 if len(key) <= 3 else 2
    found = []

    def consider(spellings, shown):
        nearest = min(((_distance(key, s.lower()), s) for s in spellings), key=lambda t: t[0])
        prefixed = next((s for s in spellings if len(key) >= 3 and s.lower().startswith(key)), None)
        if nearest[0] <= limit:
            found.append((nearest[0], len(found), shown(nearest[1])))
        elif prefixed is not None:
            found.append((limit + 1, len(found), shown(prefixed)))

    for f in FORMATS:
        consider(_spellings(f), lambda s, f=f: s if s == f[0] else '%s (%s)' % (s, f[0]))
    for names, _, _ in REFUSED:
        consider(names, lambda s: s)
    return [text for _, _, text in sorted(found)[:6]]


def _distance(a, b):
    """Levenshtein distance over characters."""
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        previous, row[0] = row[0], i
        for j in range(1, len(b) + 1):
            substitution = previous + (a[i - 1] != b[j - 1])
            previous = row[j]
            row[j] = min(substitution, row[j] + 1, row[j - 1] + 1)
    return row[len(b)]
