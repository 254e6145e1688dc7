import MediaIndex
import TrackdProtocol

extension MediaSource {
    /// The container's clock of each track (`TrackTimescale`, read with pread from this source's descriptor; no
    /// GStreamer): what the worker puts every time of the track on (docs/PROTOCOL.md §7.1).
    public func trackClocks() -> [TrackTimescale.Clock] {
        TrackTimescale.read(file: descriptor)
    }

    /// The kind of container this source is, by its first bytes (`TrackTimescale.container`; no GStreamer).
    public var container: TrackTimescale.Container {
        TrackTimescale.container(fd: fd)
    }
}

extension MediaSource {
    /// Each MP4/QuickTime track's tkhd display matrix by track id (`TrackHeaders`, pread; no GStreamer); empty for
    /// other containers.
    public func displayMatrices() -> [UInt32: DisplayMatrix] {
        TrackHeaders.displayMatrices(file: descriptor)
    }
}
