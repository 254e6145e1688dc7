"""Shared by the test modules that need their own trackd: a daemon from $TRACKD_BUILD_DIR (default .build/debug)
on a private socket, and media made by ffmpeg at test time."""

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import time

import trackd

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
BUILD = os.environ.get('TRACKD_BUILD_DIR') or os.path.join(REPO, '.build', 'debug')
TIMEOUT = 60  # a stalled read fails the test instead of hanging it (not a timed assertion)


def md5(data):
    return hashlib.md5(data).hexdigest()


def make_clip(path, size='320x240', rate=30, seconds=2, audio=True, gop=15, pix_fmt='yuv420p'):
    """H.264 with B-frames (as the Swift tests' Media.clip), AAC stereo 48 kHz when audio."""
    args = ['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y',
            '-f', 'lavfi', '-i', 'testsrc2=size=%s:rate=%d:duration=%g' % (size, rate, seconds)]
    if audio:
        args += ['-f', 'lavfi', '-i', 'sine=frequency=440:sample_rate=48000:duration=%g' % seconds]
    args += ['-c:v', 'libx264', '-preset', 'veryfast', '-bf', '2', '-g', str(gop), '-pix_fmt', pix_fmt]
    args += ['-c:a', 'aac', '-ac', '2'] if audio else []
    subprocess.run(args + [path], check=True)
    return path


def make_song(path, seconds=1):
    subprocess.run(['ffmpeg', '-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i',
                    'sine=frequency=440:sample_rate=44100:duration=%g' % seconds, '-ac', '2', path], check=True)
    return path


def ffprobe_frame_count(path):
    out = subprocess.run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-count_frames', '-show_entries',
                          'stream=nb_read_frames', '-of', 'csv=p=0', path], check=True, capture_output=True,
                         text=True).stdout
    return int(out.strip())


@functools.lru_cache(maxsize=None)
def ffmpeg_md5(path, pix_fmt, scale=None):
    """ffmpeg -f framemd5 of the first video track decoded to pix_fmt: one md5 per frame (a list each caller
    must not change: it is cached per path, format and scale)."""
    args = ['ffmpeg', '-hide_banner', '-loglevel', 'error', '-i', path, '-map', '0:v:0']
    if scale:
        args += ['-vf', 'scale=%d:%d' % scale]
    out = subprocess.run(args + ['-pix_fmt', pix_fmt, '-f', 'framemd5', '-'], check=True, capture_output=True,
                         text=True).stdout
    return [line.split(',')[5].strip() for line in out.splitlines() if not line.startswith('#')]


def _event(line):
    """The fields of an event record line (`<7>trackd-worker[PID]: event=NAME key=value ...`) with its `pid`, or
    None for any other line."""
    head, sep, rest = line.rstrip('\n').partition(']: event=')
    if not sep or '[' not in head:
        return None
    record = dict(pair.split('=', 1) for pair in ('event=' + rest).split(' ') if '=' in pair)
    record['pid'] = int(head.rsplit('[', 1)[1])
    return record


class Daemon:
    """trackd on a socket in a temp dir (also the dir for the test's media), writing event records into its log
    (TRACKD_EVENTS=1; docs/ARCHITECTURE.md "Event records")."""

    def __init__(self, prefix='trackd-python-'):
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.socket = os.path.join(self.dir, 'trackd.sock')
        self.log = os.path.join(self.dir, 'trackd.log')
        self._md5s = {}
        with open(self.log, 'wb') as log:
            self.process = subprocess.Popen([os.path.join(BUILD, 'trackd'), '--socket', self.socket], stderr=log,
                                            env=dict(os.environ, TRACKD_EVENTS='1'))
        for _ in range(400):
            if os.path.exists(self.socket):
                return
            if self.process.poll() is not None:
                with open(self.log) as f:
                    raise RuntimeError('trackd exited: ' + f.read())
            time.sleep(0.05)
        self.stop()
        raise RuntimeError('trackd did not create its socket')

    def path(self, name):
        return os.path.join(self.dir, name)

    def events(self, name, count=1, pid=None, timeout=10):
        """The records `event=name` (of process `pid`, if given) in the log, each a dict of its fields, once there
        are `count` of them or `timeout` seconds have passed (fewer then, which the caller's assertion reports)."""
        deadline = time.monotonic() + timeout
        while True:
            with open(self.log) as f:
                found = [record for record in map(_event, f) if record and record['event'] == name
                         and (pid is None or record['pid'] == pid)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def trackctl_md5(self, *args):
        """trackctl read --md5: one (pts, size, md5) per sample (cached per arguments)."""
        if args not in self._md5s:
            out = subprocess.run([os.path.join(BUILD, 'trackctl'), '--socket', self.socket] + list(args) + ['--md5'],
                                 check=True, capture_output=True, text=True).stdout
            self._md5s[args] = [(line.split()[1], int(line.split()[3]), line.split()[4]) for line in out.splitlines()]
        return self._md5s[args]

    def stop(self):
        """Stops trackd (SIGTERM; SIGKILL when it has not exited within TIMEOUT) and removes its directory."""
        self.process.terminate()
        try:
            self.process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class ClipSuite:
    """A test module's trackd and clip (make_clip's defaults): `suite = ClipSuite()`, then
    `setUpModule, tearDownModule = suite.start, suite.stop`."""

    daemon = clip = None

    def start(self):
        self.daemon = Daemon()
        self.clip = make_clip(self.daemon.path('clip.mp4'))

    def stop(self):
        self.daemon.stop()

    def open(self, source=None, **kwargs):
        """trackd.open(source, default the clip) on this suite's trackd, every wait bounded by TIMEOUT."""
        return trackd.open(source if source is not None else self.clip, socket=self.daemon.socket, timeout=TIMEOUT,
                           **kwargs)
