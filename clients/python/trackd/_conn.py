"""One connection to trackd (one session, served by one worker): framing, descriptor passing, request ids,
routing of replies and output events. Messages are read from the socket only when someone waits for one;
messages for other request ids are queued (or handed to a drain handler).

Threads: a connection may be used from several threads. Sends hold a send lock (short); one waiting thread at a
time reads from the socket (the reader), routes what it reads to the other waiters' queues and wakes them, so a
reply is never stuck behind another thread's wait. Lock order: the routing lock is never waited for while
the send lock is held (a failed send closes the connection after letting go of it), and drain handlers, which
send, run outside the routing lock. Fork: a connection belongs to the process that made it; in
a child it refuses every use (ForkedConnection) and drops no-reply messages, so the parent's session is never
touched from a child (trackd.Asset reconnects instead)."""

import array
import os
import socket
import threading
from collections import deque, namedtuple

from . import _wire as w
from .errors import DAEMON_UNREACHABLE, MEDIA_SERVICES_WERE_RESET, OPERATION_INTERRUPTED, PROTOCOL_VIOLATION, ProtocolViolation, TrackdError

Message = namedtuple('Message', 'type request_id value fds')

_CMSG_SPACE = socket.CMSG_SPACE(w.MAX_FDS * 4)
_RECV_SIZE = 1 << 16  # bytes per read; a longer message takes several
# Plain ints: socket's constants are enum members, whose operators run Python code on every message.
_MSG_CTRUNC = int(socket.MSG_CTRUNC)
_MSG_CMSG_CLOEXEC = int(socket.MSG_CMSG_CLOEXEC)
_SOL_SOCKET = int(socket.SOL_SOCKET)
_SCM_RIGHTS = int(socket.SCM_RIGHTS)
_HEADER_SIZE = w.HEADER_SIZE
_unpack_header = w.HEADER.unpack_from
_WORKER_TYPES = w.WORKER_TYPES
_decode = w.decode
_new_tuple = tuple.__new__  # a Message made without the Python-level __new__ of its namedtuple class
# Drained replies after which nothing comes for their request id (a CloseAsset not waited for). An output's
# drain stays: a PoolRemoved may follow its OutputFinished (§12.6).
_LAST_MESSAGES = frozenset({w.ACK, w.ERROR})


# This process's id, kept up to date in a child by an at-fork hook: os.getpid() is a system call, and the fork
# checks run several times a frame.
_pid = os.getpid()


def _after_fork_in_child():
    global _pid
    _pid = os.getpid()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _SendFailed(Exception):
    """A send failed: raised out of the send lock, then the connection is closed (lock order: never the routing
    lock while holding the send lock)."""


class ForkedConnection(TrackdError):
    """A connection made in another process (before a fork) was used: trackd.Asset catches this and reconnects;
    an Output or Frame from before the fork cannot be continued in the child."""

    def __init__(self, pid):
        super().__init__(MEDIA_SERVICES_WERE_RESET, 'this trackd connection was made by process %d before a fork; '
                         'process %d cannot use it (open the asset again in this process; trackd.Asset does that '
                         'by itself, but outputs and frames from before the fork stay with the parent)'
                         % (pid, os.getpid()))


# What trackctl says too when trackd cannot be reached (TrackClient's Connection.unreachable).
START_HINT = ('Is trackd running? Start it with `make serve` or `systemctl start trackd.socket`, '
              'or pass socket=PATH / set TRACKD_SOCKET.')


# Seconds for trackd to answer Hello when no timeout is given (a worker starts in a few hundred ms).
HANDSHAKE_TIMEOUT = 30


def default_socket_path():
    """PROTOCOL.md §1: $TRACKD_SOCKET, else $XDG_RUNTIME_DIR/trackd.sock, else /run/trackd/trackd.sock."""
    if os.environ.get('TRACKD_SOCKET'):
        return os.environ['TRACKD_SOCKET']
    if os.environ.get('XDG_RUNTIME_DIR'):
        return os.path.join(os.environ['XDG_RUNTIME_DIR'], 'trackd.sock')
    return '/run/trackd/trackd.sock'


class Connection:
    def __init__(self, path=None, client_name='trackd-python', timeout=None):
        self.path = path or default_socket_path()
        # The handshake is bounded even without a timeout: a stopped or stuck trackd (or a trackd.service failing
        # to start behind trackd.socket, or another program on the socket) accepts connections and never answers.
        self.timeout = HANDSHAKE_TIMEOUT if timeout is None else timeout
        self.pid = os.getpid()
        self._send_lock = threading.RLock()   # whole frames on the socket; post() from a __del__ re-enters
        self._lock = threading.RLock()       # the routing lock: queues, drains, the reader role
        self._cond = threading.Condition(self._lock)  # (`with self._lock` where nothing waits: no Python frame)
        self._reading = False                 # some thread is reading from the socket (the reader)
        self._waiting = 0                     # threads waiting on _cond in next_message
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        self._sock.settimeout(self.timeout)
        try:
            self._sock.connect(self.path)
        except OSError as e:
            self._sock.close()
            raise TrackdError(DAEMON_UNREACHABLE, 'cannot reach trackd at %s: %s. %s'
                              % (self.path, e.strerror or e, START_HINT)) from None
        self._buf = bytearray()
        self._recv_view = memoryview(bytearray(_RECV_SIZE))  # recvmsg_into's, reused: no allocation per read
        self._recv_into = [self._recv_view]
        self._fds = deque()          # received descriptors not yet claimed by a frame (§3)
        self._queues = {}            # request id -> deque of Messages nobody has asked for yet
        self._drains = {}            # request id -> callable(Message) for outputs nobody reads any more
        self._posted = deque()       # (type, payload) sends deferred while a send is in progress
        self._sending = False
        self._next_id = 1
        self._error = None           # why the connection is closed
        self._recv_limit = w.DEFAULT_MAX_MESSAGE  # until HelloReply (§5), then the agreed size
        self.send_limit = w.DEFAULT_MAX_MESSAGE
        try:
            reply = self.request(w.HELLO, w.hello(client_name), w.HELLO_REPLY)
        except TrackdError as e:
            if e.code != OPERATION_INTERRUPTED or self._error is not e:  # not this client's timeout: trackd's answer
                raise
            raise TrackdError(DAEMON_UNREACHABLE, 'cannot reach trackd at %s: connected, but no answer to Hello '
                              'within %g s (a stopped or stuck trackd, a trackd.service that fails to start behind '
                              'trackd.socket, or another program on the socket: see `systemctl status trackd` or '
                              "trackd's log)" % (self.path, self.timeout)) from None
        self.timeout = timeout
        self._sock.settimeout(timeout)
        if reply['version'] != w.VERSION:
            self._violation('HelloReply picked version %d, not %d' % (reply['version'], w.VERSION))
        if not w.MIN_CLIENT_MAX_MESSAGE <= reply['max_message_size'] <= w.DEFAULT_MAX_MESSAGE:
            self._violation('HelloReply agreed on %d bytes per message' % reply['max_message_size'])
        self._recv_limit = self.send_limit = reply['max_message_size']
        self.hello = reply

    # -- state

    @property
    def closed(self):
        return self._error is not None

    @property
    def forked(self):
        """True in a child process of the one that made the connection."""
        return self.pid != os.getpid()

    def close(self, reason=None):
        """Closes the socket (in a child after a fork: only this process's copy of it; nothing is sent)."""
        if self.pid != os.getpid():  # a child's copy: no locks (a parent thread may have held them at the fork)
            if self._error is None:
                self._error = ForkedConnection(self.pid)
                self._sock.close()
            return
        with self._cond:
            if self._error is not None:
                return
            self._error = reason or TrackdError(MEDIA_SERVICES_WERE_RESET, 'the connection to trackd was closed')
            try:  # ends the session even while a forked child still holds a copy of the socket
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            self._sock.close()
            while self._fds:
                os.close(self._fds.popleft())
            for q in self._queues.values():
                for m in q:
                    for fd in m.fds:
                        os.close(fd)
            self._queues.clear()
            self._drains.clear()
            self._posted.clear()
            self._cond.notify_all()

    def _check_open(self):
        if self.pid != _pid:
            raise ForkedConnection(self.pid)
        if self._error is not None:
            raise TrackdError(MEDIA_SERVICES_WERE_RESET if self._error.code == PROTOCOL_VIOLATION else
                              self._error.code, self._error.message)

    def _violation(self, message):
        err = ProtocolViolation(message)
        self.close(err)
        raise err

    def _lost(self, message):
        err = TrackdError(MEDIA_SERVICES_WERE_RESET, message)
        self.close(err)
        raise err

    # -- sending

    def send(self, type_, payload, request_id=None, fd=None):
        """Sends one frame (with fd attached to its first byte when given). Requests that get a reply get a
        fresh non-zero request id (returned); others are sent with 0."""
        if self.pid != _pid:
            raise ForkedConnection(self.pid)
        try:
            with self._send_lock:
                return self._send(type_, payload, request_id, fd)
        except _SendFailed as e:  # closed outside the send lock: close() takes the routing lock
            reason = self._closing_reason()
            if reason is not None:
                self.close(reason)
                raise reason from None
            self._lost(str(e))

    def _closing_reason(self):
        """After a failed send: the Error with request id 0 that trackd sent before it closed the connection
        ("trackd is stopping", its watchdog), if it is waiting unread; else None. Only reads what is already
        there (the peer has closed its end, so no read blocks); other messages are dropped with the connection."""
        with self._cond:
            if self._reading or self._error is not None:
                return None
            self._reading = True
        self._posted.clear()  # nothing more can be sent
        try:
            while True:
                m = self._read_message()
                for fd in m.fds:
                    os.close(fd)
                if m.type == w.ERROR and m.request_id == 0:
                    return TrackdError(*m.value)
        except (TrackdError, OSError):
            return None
        finally:
            with self._cond:
                self._reading = False
                self._cond.notify_all()

    def _send(self, type_, payload, request_id, fd):
        self._check_open()
        if request_id is None:
            request_id = self._next_id
            self._next_id = self._next_id % 0xFFFFFFFF + 1
        if len(payload) > self.send_limit:
            raise ValueError('a %d-byte message is larger than the agreed %d bytes' % (len(payload), self.send_limit))
        self._send_frame(w.frame(type_, payload, request_id, 0 if fd is None else 1), fd)
        return request_id

    def _send_frame(self, data, fd=None, flush=True):
        """Sends one whole frame, then (unless flush is False) what was posted meanwhile. Holds the send lock."""
        self._sending = True
        try:
            if fd is None:
                self._sock.sendall(data)
            else:
                sent = self._sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [fd]))])
                if sent < len(data):
                    self._sock.sendall(data[sent:])
        except OSError as e:
            self._sending = False
            raise _SendFailed('sending to trackd failed: %s' % (e.strerror or e)) from None
        self._sending = False
        if flush and self._posted:
            self._flush_posted()

    def post(self, data):
        """A whole no-reply frame (w.frame(type, payload) with request id 0: ReleaseSlots, CancelOutput) that may
        come from a __del__: sent now unless a send is in progress in this thread (then after it, in the order
        posted); dropped when the connection is closed or was made by another process (a child after a fork must
        not release the parent's slots)."""
        if self._error is not None or self.pid != _pid:
            return
        try:
            with self._send_lock:  # another thread's send finishes first; this thread's own (a __del__) defers
                if self._sending or self._posted:
                    self._posted.append(data)
                    if not self._sending:
                        self._flush_posted()
                elif self._error is None:  # (closed by another thread meanwhile: dropped)
                    self._send_frame(data)
        except _SendFailed as e:
            self._lost(str(e))

    def _flush_posted(self):
        with self._send_lock:
            while self._posted and self._error is None and not self._sending:
                self._send_frame(self._posted.popleft(), flush=False)  # this loop sends the rest

    def _flush(self):
        try:
            self._flush_posted()
        except _SendFailed as e:
            self._lost(str(e))

    # -- receiving

    def _read_message(self):
        buf = self._buf
        while True:
            if len(buf) >= _HEADER_SIZE:
                length, type_, fd_count, rid, reserved = _unpack_header(buf)
                if reserved != 0:
                    self._violation('frame header reserved field is %d, not 0' % reserved)
                if length > self._recv_limit:
                    self._violation('a %d-byte payload is larger than the limit of %d' % (length, self._recv_limit))
                expected_fds = _WORKER_TYPES.get(type_)
                if expected_fds is None:
                    self._violation('unknown or client-only message type 0x%04x' % type_)
                if fd_count != expected_fds:
                    self._violation('message type 0x%04x declares %d descriptors, not %d'
                                    % (type_, fd_count, expected_fds))
                end = _HEADER_SIZE + length
                if len(buf) >= end:
                    payload = buf[_HEADER_SIZE:end]  # a copy: decoded values never refer to the buffer
                    del buf[:end]
                    if fd_count:
                        if len(self._fds) < fd_count:
                            self._violation('message type 0x%04x arrived without its descriptor' % type_)
                        fds = tuple(self._fds.popleft() for _ in range(fd_count))
                    else:
                        fds = ()
                    try:
                        value = _decode(type_, payload)
                    except ProtocolViolation as e:
                        for fd in fds:
                            os.close(fd)
                        self._violation('message type 0x%04x: %s' % (type_, e.message))
                    return _new_tuple(Message, (type_, rid, value, fds))
            if self._posted:
                self._flush()
            try:
                n, ancdata, flags, _ = self._sock.recvmsg_into(self._recv_into, _CMSG_SPACE, _MSG_CMSG_CLOEXEC)
            except socket.timeout:  # TimeoutError from Python 3.10 on
                err = TrackdError(OPERATION_INTERRUPTED, 'no message from trackd within %g s (a client holding every '
                                  'slot of an output stalls it: release frames or read with copy=True)'
                                  % self.timeout)
                self.close(err)
                raise err from None
            except OSError as e:
                self._lost('reading from trackd failed: %s' % (e.strerror or e))
            for level, kind, cdata in ancdata:
                if level == _SOL_SOCKET and kind == _SCM_RIGHTS:
                    fds = array.array('i')
                    fds.frombytes(cdata[:len(cdata) - len(cdata) % fds.itemsize])
                    self._fds.extend(fds)
                    if len(fds) > w.MAX_FDS:
                        self._violation('%d descriptors in one message (at most %d)' % (len(fds), w.MAX_FDS))
            if flags & _MSG_CTRUNC:
                self._violation('descriptors were cut off (MSG_CTRUNC)')
            if not n:
                self._lost('trackd closed the connection' + (' in the middle of a message' if buf else ''))
            if len(self._fds) > 4 * w.MAX_FDS:
                self._violation('%d received descriptors that no message claims' % len(self._fds))
            buf += self._recv_view[:n]

    def has_queued(self, request_id):
        """Whether a message for `request_id` has been read and waits in its queue."""
        with self._lock:
            return bool(self._queues.get(request_id))

    def next_message(self, request_id):
        """The next message with this request id, reading (and routing) as many as needed. Several threads may
        wait at once: one reads, the others wait for it to route their messages to them."""
        if self.pid != _pid:
            raise ForkedConnection(self.pid)
        with self._lock:
            while True:
                q = self._queues.get(request_id)
                if q:
                    m = q.popleft()
                    if not q:
                        del self._queues[request_id]
                    return m
                if self._error is not None:
                    self._check_open()
                if not self._reading:
                    break
                self._waiting += 1
                try:
                    self._cond.wait()
                finally:
                    self._waiting -= 1
            self._reading = True
        try:
            while True:
                m = self._read_message()  # only the reader touches the buffer and the received descriptors
                if m.request_id == request_id:  # touches nothing shared: no routing lock
                    return m
                with self._lock:
                    if m.type == w.ERROR and m.request_id == 0:
                        err = TrackdError(*m.value)
                        self.close(err)
                        raise err
                    drain = self._drains.get(m.request_id)
                    if drain is not None and m.type in _LAST_MESSAGES:  # nothing follows for this request id
                        del self._drains[m.request_id]
                    if drain is None:
                        self._queues.setdefault(m.request_id, deque()).append(m)
                        if self._waiting:
                            self._cond.notify_all()
                if drain is not None:  # outside the routing lock: it sends (ReleaseSlots)
                    drain(m)
        finally:
            with self._lock:
                self._reading = False
                if self._waiting:  # (Condition.notify_all is Python code: not run per frame for nobody)
                    self._cond.notify_all()

    def reply(self, request_id, expected_type):
        """The reply to a request: its value, or TrackdError for an Error."""
        m = self.next_message(request_id)
        if m.type == w.ERROR:
            raise TrackdError(*m.value)
        if m.type != expected_type:
            for fd in m.fds:
                os.close(fd)
            self._violation('expected message type 0x%04x for request %d, got 0x%04x'
                            % (expected_type, request_id, m.type))
        return m.value

    def request(self, type_, payload, expected_type, fd=None):
        return self.reply(self.send(type_, payload, fd=fd), expected_type)

    def drain(self, request_id, handler):
        """From now on messages for request_id go to handler as they arrive (queued ones at once)."""
        if self.pid != os.getpid():
            return
        with self._cond:
            if self._error is not None:
                return
            queued = self._queues.pop(request_id, ())
            if not any(m.type in _LAST_MESSAGES for m in queued):  # else nothing more will come
                self._drains[request_id] = handler
        for m in queued:  # outside the routing lock: the handler sends (ReleaseSlots)
            handler(m)
