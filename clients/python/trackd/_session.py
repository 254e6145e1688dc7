"""Sessions: one connection to trackd (one worker) on which many assets are opened."""

import os

from . import _asset
from ._conn import Connection, default_socket_path
from ._source import MAX_SOURCE_BYTES


class Session:
    """One connection to trackd — one worker — that several assets share: session.open(source) opens each
    on it (OpenAsset), asset.close() closes just that asset (CloseAsset), session.close() ends the connection
    and with it every asset opened on it. trackd.open() gives each asset a connection of its own; a session
    saves a worker start (and its memory) per file when one process reads many files, as a DataLoader worker
    or a Ray read task does. A context manager.

    Threads: as for an Asset (each read is its own output on the shared connection). Fork: in a child process
    the session connects again on first use, and each of its assets is opened again on the new connection
    when it is next used (the parent's connection is never touched)."""

    def __init__(self, socket=None, client_name='trackd-python', timeout=None):
        self._options = (socket, client_name, timeout)
        self._conn = Connection(*self._options)

    @property
    def _c(self):
        """The connection, made again in a child process after a fork."""
        if self._conn.pid != os.getpid():
            with _asset._reconnect_lock:
                if self._conn.pid != os.getpid():
                    self._conn.close()  # only this process's copy of the socket: nothing is sent
                    self._conn = Connection(*self._options)
        return self._conn

    @property
    def closed(self):
        return self._conn.pid == os.getpid() and self._conn.closed

    @property
    def worker_pid(self):
        return self._c.hello['worker_pid']

    def open(self, source, *, name=None, max_bytes=MAX_SOURCE_BYTES):
        """Opens source (anything trackd.open() takes) on this session's connection; returns an Asset."""
        return _asset.Asset(source, name=name, max_bytes=max_bytes, session=self)

    def close(self):
        """Ends the connection: trackd closes every asset of the session and cancels their outputs."""
        self._conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return '<trackd.Session %s%s>' % (self._options[0] or default_socket_path(), ', closed' if self.closed else '')

