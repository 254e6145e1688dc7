"""trackd errors: AVError numbers (PROTOCOL.md §13) carried by TrackdError."""

UNKNOWN = -11800
MEDIA_SERVICES_WERE_RESET = -11819      # client side: the worker died or the connection was lost
DECODE_FAILED = -11821
INVALID_SOURCE_MEDIA = -11822
FILE_FORMAT_NOT_RECOGNIZED = -11828
FILE_FAILED_TO_PARSE = -11829
DECODER_NOT_FOUND = -11833
OPERATION_NOT_SUPPORTED_FOR_ASSET = -11838
OPERATION_INTERRUPTED = -11847
FAILED_TO_LOAD_MEDIA_DATA = -11849
UNDECODABLE_MEDIA_DATA = -11855
UNSUPPORTED_OUTPUT_SETTINGS = -11861
FORMAT_UNSUPPORTED = -11864
PROTOCOL_VIOLATION = -11900
INVALID_ARGUMENT = -11901
LIMIT_EXCEEDED = -11902
DAEMON_UNREACHABLE = -11903             # client side only: cannot connect to the socket
DAEMON_STOPPING = -11904                # trackd is stopping (SIGTERM): new requests, unfinished reads, the session
CONNECTION_RATE_EXCEEDED = -11905       # the uid opened connections faster than --connection-rate-per-uid allows

NAMES = {value: name for name, value in globals().items() if name.isupper() and isinstance(value, int)}


class TrackdError(Exception):
    """An error from trackd (or from this client about its connection to trackd).

    code: the AVError-style number (trackd.errors constants; codes not listed there are possible too);
    message: what went wrong, meant for people."""

    def __init__(self, code, message):
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self):
        name = NAMES.get(self.code)
        return '%s (%d%s)' % (self.message, self.code, ', ' + name if name else '')


class ProtocolViolation(TrackdError):
    """The worker broke the protocol, or this client would have: the connection is closed."""

    def __init__(self, message):
        super().__init__(PROTOCOL_VIOLATION, message)
