"""trackd's wire protocol, version 2 (docs/PROTOCOL.md), in one namespace: the constants, Time and Reader
(_protocol), the client -> worker encoders (_encode) and the worker -> client decoders (_decode). The rest of the
client imports it as `from . import _wire as w`."""

from ._protocol import *  # noqa: F401,F403
from ._encode import *  # noqa: F401,F403
from ._decode import *  # noqa: F401,F403
