"""Runs the python examples of clients/python/README.md against a test trackd, in a directory holding the media
they name (clip.mp4, song.flac). Examples using trackd.ray run in test_ray (one Ray start per module), those
using torch in torch_tests (make test-torch)."""

import contextlib
import io
import os
import re
import shutil
import sys
import tempfile
import types
import unittest

from support import Daemon, make_clip, make_song

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'README.md')


def blocks():
    """(line number, code) of every ```python block."""
    with open(README, encoding='utf-8') as f:
        text = f.read()
    return [(text[:m.start()].count('\n') + 2, m.group(1)) for m in re.finditer(r'```python\n(.*?)```', text, re.S)]


def uses(code, module):
    return re.search(r'^\s*(import|from)\s+%s\b' % re.escape(module), code, re.M) is not None


def run_blocks(case, daemon, select):
    """Runs the selected README blocks (at least one) each as a module of its own, in a temp dir with the
    media, trackd's socket in $TRACKD_SOCKET; their output is checked to be there, not shown."""
    chosen = [(line, code) for line, code in blocks() if select(code)]
    case.assertTrue(chosen, 'no README example selected')
    work = tempfile.mkdtemp(prefix='trackd-readme-')
    old_cwd, old_socket = os.getcwd(), os.environ.get('TRACKD_SOCKET')
    try:
        make_clip(os.path.join(work, 'clip.mp4'))
        make_song(os.path.join(work, 'song.flac'))
        os.chdir(work)
        os.environ['TRACKD_SOCKET'] = daemon.socket
        for line, code in chosen:
            with case.subTest(readme_line=line):
                name = 'readme_line_%d' % line
                module = types.ModuleType(name)  # a real module: functions in it pickle (multiprocessing)
                sys.modules[name] = module
                out = io.StringIO()
                try:
                    with contextlib.redirect_stdout(out):
                        exec(compile(code, '%s:%d' % (README, line), 'exec'), module.__dict__)
                finally:
                    del sys.modules[name]
                if 'print(' in code:
                    case.assertTrue(out.getvalue(), 'README line %d printed nothing' % line)
    finally:
        os.chdir(old_cwd)
        if old_socket is None:
            os.environ.pop('TRACKD_SOCKET', None)
        else:
            os.environ['TRACKD_SOCKET'] = old_socket
        shutil.rmtree(work, ignore_errors=True)
    return len(chosen)


class ReadmeTests(unittest.TestCase):
    def test_examples(self):
        daemon = Daemon()
        try:
            n = run_blocks(self, daemon, lambda code: not uses(code, 'trackd.ray') and not uses(code, 'torch'))
        finally:
            daemon.stop()
        self.assertGreaterEqual(n, 9)

    def test_every_block_is_run_somewhere(self):
        for line, code in blocks():
            self.assertTrue(uses(code, 'trackd'), 'README line %d: an example that does not use trackd' % line)
        self.assertTrue(any(uses(code, 'trackd.ray') for _, code in blocks()))
        self.assertTrue(any(uses(code, 'torch') for _, code in blocks()))


if __name__ == '__main__':
    unittest.main()
