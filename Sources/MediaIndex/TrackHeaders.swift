import MediaVocabulary
import SystemCalls

/// What an MP4/QuickTime track header (tkhd, ISO 14496-12 8.3.2) states beyond the clock, read with pread from the
/// client's descriptor (no GStreamer): each track's display matrix (AVAssetTrack.preferredTransform).
public enum TrackHeaders {
    /// Each trak's tkhd matrix by track_ID; empty for a file that is not MP4/QuickTime (or a damaged header).
    public static func displayMatrices(file: borrowing FileDescriptor) -> [UInt32: DisplayMatrix] {
        guard let size = try? file.regularFileSize(), size > 12,
              let head = try? [UInt8](preading: file, count: 8, at: 0),
              ["ftyp", "moov", "mdat", "free", "skip", "wide", "pnot"].contains(fourCC(head, 4)),
              let movie = ContainerIndex.readMovie(file, fileSize: size) else { return [:] }
        return displayMatrices(movie: movie)
    }

    /// `displayMatrices(file:)` of a descriptor the caller keeps open.
    public static func displayMatrices(fd: Int32) -> [UInt32: DisplayMatrix] {
        let file = FileDescriptor(taking: fd)
        let matrices = displayMatrices(file: file)
        _ = file.take()  // the caller's descriptor: not closed here
        return matrices
    }

    /// Each trak's tkhd matrix by track_ID, from the moov box's body.
    static func displayMatrices(movie: ArraySlice<UInt8>) -> [UInt32: DisplayMatrix] {
        var matrices: [UInt32: DisplayMatrix] = [:]
        var reader = BoxReader(bytes: movie)
        while let trak = reader.next() {
            guard trak.type == "trak" else { continue }
            var boxes = BoxReader(bytes: trak.body)
            while let box = boxes.next() {
                guard box.type == "tkhd", let id = ContainerIndex.fieldAfterTimes(box.body),
                      let matrix = matrix(tkhd: box.body) else { continue }
                matrices[id] = matrix
            }
        }
        return matrices
    }

    /// The nine big-endian i32 of the matrix: after version/flags (4), the times, track_ID, reserved and duration
    /// (20 bytes in version 0, 32 in version 1), reserved (8), layer, alternate_group, volume, reserved (2 each).
    static func matrix(tkhd body: ArraySlice<UInt8>) -> DisplayMatrix? {
        guard let version = body.first else { return nil }
        let at = 4 + (version == 1 ? 32 : 20) + 16
        guard body.count >= at + 36 else { return nil }
        return DisplayMatrix(values: (0..<9).map { Int32(bitPattern: be32(body, at + 4 * $0)) })
    }
}
