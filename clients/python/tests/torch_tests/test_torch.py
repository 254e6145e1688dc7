"""PyTorch: trackd.torch.VideoClips in a DataLoader with worker processes, torch.from_dlpack of frames and batches,
and the README's torch examples. Run by `make test-torch` (TRACKD_REQUIRE_TORCH=1: torch missing is an error);
elsewhere, without torch, the module is reported as skipped — never as passed."""

import os
import unittest

import numpy as np

import trackd
from support import TIMEOUT, Daemon, make_clip, md5

try:
    import torch
    from torch.utils.data import DataLoader
except ImportError:
    if os.environ.get('TRACKD_REQUIRE_TORCH'):
        raise
    torch = None

from trackd.torch import VideoClips

daemon = clips = None


def setUpModule():
    global daemon, clips
    if torch is None:
        raise unittest.SkipTest('torch is not installed (make test-torch installs it)')
    daemon = Daemon()
    clips = [make_clip(daemon.path('a.mp4')), make_clip(daemon.path('b.mp4'), size='160x120', seconds=1)]


def tearDownModule():
    if daemon is not None:
        daemon.stop()


def direct(path, indices, **kwargs):
    with trackd.open(path, socket=daemon.socket, timeout=TIMEOUT) as asset:
        return asset.get_frames(indices=indices, **kwargs)


class VideoClipsTests(unittest.TestCase):
    def test_dataloader_with_workers(self):
        dataset = VideoClips(clips, clip_length=4, frames_between_clips=10, step=2, width=80, socket=daemon.socket)
        self.assertEqual(dataset.frame_counts, [60, 30])
        self.assertEqual(len(dataset), 6 + 3)  # starts 0..50 (first frame + 6 <= 59) and 0..20
        loader = DataLoader(dataset, batch_size=3, shuffle=False, num_workers=2)
        seen = []
        for batch in loader:
            self.assertEqual(batch['video'].dtype, torch.uint8)
            self.assertEqual(tuple(batch['video'].shape[1:]), (4, 3, 60, 80))
            for video, source, indices in zip(batch['video'], batch['source'], batch['indices']):
                want = direct(clips[int(source)], indices.tolist(), width=80, layout='NCHW')
                self.assertTrue(torch.equal(video, torch.from_numpy(want.frames)))
                seen.append((int(source), indices.tolist()))
        self.assertEqual(seen[0], (0, [0, 2, 4, 6]))
        self.assertEqual(seen[-1], (1, [20, 22, 24, 26]))
        self.assertEqual(len(seen), len(dataset))

    def test_thwc_and_numpy_output(self):
        dataset = VideoClips(clips[1], clip_length=3, layout='THWC', pixel_format='L008', socket=daemon.socket)
        item = dataset[-1]
        self.assertEqual(tuple(item['video'].shape), (3, 120, 160, 1))
        self.assertEqual(item['indices'].tolist(), [27, 28, 29])
        plain = VideoClips(clips[1], clip_length=3, output='numpy', socket=daemon.socket)[0]
        self.assertIsInstance(plain['video'], np.ndarray)
        with self.assertRaises(IndexError):
            dataset[len(dataset)]


class DLPackTests(unittest.TestCase):
    def test_from_dlpack(self):
        with trackd.open(clips[0], socket=daemon.socket, timeout=TIMEOUT) as asset:
            for frame in asset.frames_at(indices=[12], pixel_format='BGRA'):
                tensor = torch.from_dlpack(frame)
                self.assertEqual(tuple(tensor.shape), (240, 320, 4))
                self.assertEqual(tensor.data_ptr(), frame.array.__array_interface__['data'][0])  # no copy
                self.assertEqual(md5(tensor.clone().numpy().tobytes()), md5(frame.array.tobytes()))
                del tensor
            batch = asset.get_frames(indices=[1, 2], layout='NCHW')
            tensor = torch.from_dlpack(batch)
            self.assertEqual(tensor.data_ptr(), batch.frames.__array_interface__['data'][0])
            tensor[0, 0, 0, 0] = 7  # a batch is the tensor's own memory, writable
            self.assertEqual(batch.frames[0, 0, 0, 0], 7)

    def test_readme_examples(self):
        from test_readme import run_blocks, uses
        run_blocks(self, daemon, lambda code: uses(code, 'torch'))


if __name__ == '__main__':
    unittest.main()
