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


@contextlib.contextmanager
def media_dir(daemon):
    """A temp dir holding the media the README names, as the working directory, with daemon's socket in
    $TRACKD_SOCKET."""
    work = tempfile.mkdtemp(prefix='trackd-readme-')
    old_cwd, old_socket = os.getcwd(), os.environ.get('TRACKD_SOCKET')
    try:
        make_clip(os.path.join(work, 'clip.mp4'))
        make_song(os.path.join(work, 'song.flac'))
        os.chdir(work)
        os.environ['TRACKD_SOCKET'] = daemon.socket
        yield work
    finally:
        os.chdir(old_cwd)
        if old_socket is None:
            os.environ.pop('TRACKD_SOCKET', None)
        else:
            os.environ['TRACKD_SOCKET'] = old_socket
        shutil.rmtree(work, ignore_errors=True)


def run_blocks(case, daemon, select):
    """Runs the selected README blocks (at least one) each as a module of its own, in media_dir; their output is
    checked to be there, not shown."""
    chosen = [(line, code) for line, code in blocks() if select(code)]
    case.assertTrue(chosen, 'no README example selected')
    with media_dir(daemon):
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
    return len(chosen)


def table_cells():
    """(line number, code) of every `code` span in the trackd column (the second) of the README's mapping tables:
    the tables whose header names "trackd" second."""
    cells, in_table = [], False
    with open(README, encoding='utf-8') as f:
        for number, line in enumerate(f, 1):
            columns = [c.strip() for c in line.strip().strip('|').split('|')] if line.startswith('|') else None
            if columns is None:
                in_table = False
            elif len(columns) > 1 and columns[1] == 'trackd':
                in_table = True
            elif in_table and not set(columns[1]) <= set('-'):
                cells += [(number, code) for code in re.findall(r'`([^`]+)`', columns[1])]
    return cells


# What the README says every cell of the trackd column runs after.
TABLE_SETUP = ['import trackd', 'from trackd import VideoDecoder', 'asset = trackd.open("clip.mp4")',
               'decoder = VideoDecoder("clip.mp4")', 'frame = next(asset.read(copy=True))']


class ReadmeTests(unittest.TestCase):
    def test_examples(self):
        daemon = Daemon()
        try:
            n = run_blocks(self, daemon, lambda code: not uses(code, 'trackd.ray') and not uses(code, 'torch'))
        finally:
            daemon.stop()
        self.assertGreaterEqual(n, 9)

    def test_every_trackd_cell_of_the_mapping_tables(self):
        cells = table_cells()
        self.assertGreaterEqual(len(cells), 30)
        with open(README, encoding='utf-8') as f:
            text = ' '.join(f.read().split())
        for statement in TABLE_SETUP:
            self.assertIn('`%s`' % statement, text)
        daemon = Daemon()
        try:
            with media_dir(daemon):
                scope = {}  # one scope for all cells, as one session would be
                exec('\n'.join(TABLE_SETUP), scope)
                for line, code in cells:
                    with self.subTest(readme_line=line, code=code):
                        exec(compile(code, '%s:%d' % (README, line), 'exec'), scope)
                scope['asset'].close()
        finally:
            daemon.stop()

    def test_every_block_is_run_somewhere(self):
        for line, code in blocks():
            self.assertTrue(uses(code, 'trackd'), 'README line %d: an example that does not use trackd' % line)
        self.assertTrue(any(uses(code, 'trackd.ray') for _, code in blocks()))
        self.assertTrue(any(uses(code, 'torch') for _, code in blocks()))


if __name__ == '__main__':
    unittest.main()
