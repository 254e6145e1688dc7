"""Outputs: the iterator over one CreateOutput's or ReadFrames' events (pools, samples, the end), and the
return of their slots."""

import os
import threading

from . import _wire as w
from ._frame import Frame
from ._pool import Pool
from .errors import LIMIT_EXCEEDED, ProtocolViolation, TrackdError


class Output:
    """An iterator over the samples of one CreateOutput or ReadFrames. Close it (or leave the `with` block) to
    stop early: the output is cancelled and its remaining samples are given back as they arrive."""

    def __init__(self, asset, request_id, created, copy, audio=None, ranges=()):
        self._asset = asset
        self._conn = asset._conn
        self._rid = request_id
        self.id = created['output_id']
        self.media_type = created['media_type']
        self.format = w.fourcc_to_str(created['format'])
        self.width, self.height = created['width'], created['height']
        self.codec_config = created['codec_config']
        self._copy = copy
        self._ranges = list(ranges)  # random access: the ranges still to read, one ResetOutput each
        self._pools = {}
        self._resolved = None
        self._sample_number = 0
        # Samples delivered and not yet given back, and what the last OutputStalled said the client held: while the
        # two are equal (no release crossed it) the worker waits for a release (PROTOCOL.md §12.3).
        self._held = 0
        self._held_lock = threading.Lock()  # frames are released from any thread
        self._stalled_at = None
        self.finished = False
        self.status = None
        # Once finished: stored samples of the track this output could not deliver — ones the file lacks and ones
        # the decoder made nothing of (OutputFinished samples_lost, PROTOCOL.md §12.5).
        self.samples_lost = 0
        audio = audio or {}
        self.audio_channels = audio.get('channels')
        self.audio_non_interleaved = audio.get('non_interleaved', False)
        bits = audio.get('bits', 16)
        self.audio_bytes_per_sample = bits // 8
        order = '>' if audio.get('big_endian') else '<'
        self.audio_dtype = (order + 'f4' if audio.get('float') else
                            '|i1' if bits == 8 else '|u1' if bits == 24 else '%si%d' % (order, bits // 8))

    def __iter__(self):
        return self

    def __next__(self):
        while not self.finished:
            if self._stalled_at == self._held and not self._conn.has_queued(self._rid):
                raise TrackdError(LIMIT_EXCEEDED, 'all %d frames of this output are held: copy them (copy=True) or '
                                                  'release them' % self._held)
            m = self._conn.next_message(self._rid)
            if m.type == w.SAMPLE:
                s = m.value
                pool = self._pools.get(s['pool_id'])
                if s['output_id'] != self.id or pool is None or s['slot'] >= pool.slot_count:
                    self._conn._violation('Sample names pool %d slot %d that output %d has not announced'
                                          % (s['pool_id'], s['slot'], self.id))
                index = None
                if self._resolved is not None and self._sample_number < len(self._resolved):
                    index = self._resolved[self._sample_number][0]
                self._sample_number += 1
                with self._held_lock:
                    self._held += 1
                try:
                    return Frame(self, pool, s, index, self._copy)
                except ProtocolViolation as e:  # the worker's failure: the session cannot go on (§12.2)
                    self._conn.close(e)
                    raise
            try:
                self._event(m)
            except ProtocolViolation as e:
                self._conn.close(e)
                raise
        if self.status == w.FAILED:
            raise TrackdError(self.failure[0], self.failure[1])
        raise StopIteration

    def _event(self, m):
        if m.type == w.POOL_ADDED:
            _, pool_id, count, size = m.value
            self._pools[pool_id] = Pool(pool_id, count, size, m.fds[0])
        elif m.type == w.POOL_REMOVED:
            self._pools.pop(m.value[1], None)
        elif m.type == w.FRAMES_RESOLVED:
            self._resolved = m.value[1]
        elif m.type == w.OUTPUT_STALLED:
            self._stalled_at = m.value[1]
        elif m.type == w.OUTPUT_FINISHED:
            _, self.status, code, message, self.samples_lost = m.value
            self.failure = (code, message)
            self._finish()
        elif m.type == w.RANGE_ENDED:  # random access (read(ranges=...)): next range, or the end
            if self._ranges:
                self._conn.send(w.RESET_OUTPUT, w.reset_output(self.id, [self._ranges.pop(0)]), request_id=0)
            else:
                self._conn.send(w.FINISH_OUTPUT, w.finish_output(self.id), request_id=0)
        else:
            for fd in m.fds:
                os.close(fd)
            self._conn._violation('unexpected message type 0x%04x for output %d' % (m.type, self.id))

    def _finish(self):
        self.finished = True
        self._pools.clear()  # unmapped when the last frame using each pool is gone
        self._conn.drain(self._rid, self._drained)

    def _drained(self, m):
        """Events after the output was closed or finished: give every slot back, ignore the rest."""
        for fd in m.fds:
            os.close(fd)
        if m.type == w.SAMPLE:
            with self._held_lock:
                self._held += 1
            self._release(m.value['pool_id'], m.value['slot'])
        elif m.type == w.OUTPUT_FINISHED:
            self.finished = True
            if self.status is None:
                _, self.status, code, message, self.samples_lost = m.value
                self.failure = (code, message)

    def _release(self, pool_id, slot):
        with self._held_lock:
            self._held -= 1
        self._conn.post(w.release_slot_frame(self.id, pool_id, slot))

    def close(self):
        """Stops the output (CancelOutput) if it is still running; frames already handed out stay valid."""
        if self._conn.forked:  # the parent's output: nothing to cancel from here
            self.finished = True
            return
        if not self.finished and not self._conn.closed:
            self.finished = True
            self._pools.clear()
            self._conn.post(w.frame(w.CANCEL_OUTPUT, w.cancel_output(self.id)))
            self._conn.drain(self._rid, self._drained)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

