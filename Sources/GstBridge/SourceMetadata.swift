import MediaIndex

extension MediaSource {
    /// The asset's and each track's metadata and edit list as the container states them (`ContainerMetadata`, read
    /// with pread from this source's descriptor; no GStreamer): docs/PROTOCOL.md §7.5, §7.6.
    public func containerMetadata() -> ContainerMetadata {
        ContainerMetadata.read(file: descriptor)
    }
}
