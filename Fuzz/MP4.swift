// libFuzzer target `mp4`: ContainerIndex, the MP4/MOV sample-table reader the worker runs on untrusted files, and
// ContainerMetadata's MP4/MOV (moov) and Matroska (file head) metadata and edit-list readers.
// Input: a moov box's body (scripts/fuzz.sh seeds it with the moov of ffmpeg-made MP4 and MOV files; the target's
// own seeds are MediaIndexTests' synthetic movies). Invariants, beyond "never traps":
//  - frames that come back are a valid index: 1 … maxSamples frames, presentation times non-negative and in
//    order, durations ≥ 0, decode positions a permutation of 0 ..< n;
//  - FrameIndex and the planner handle them: the first, middle and last frames plan and each time names its frame;
//  - metadata (the input as a moov body, and as a Matroska file's head) stays within the wire's limits: at most 64
//    items per list and 64 segments per track, values of at most 1024 bytes, segments with numeric targets.
import MediaIndex
import MediaVocabulary

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        var bFrames = SyntheticTrack()
        bFrames.deltas = [(8, 512)]
        bFrames.offsets = [(1, 1024), (1, 2560), (1, 0), (1, 512), (4, 1024)]
        bFrames.syncs = [1, 5]
        var edited = bFrames
        edited.edits = [(duration: 4000, mediaTime: 1024, rate: 0x1_0000)]
        edited.elstVersion = 1
        edited.boxVersion = 1
        edited.co64 = true
        var audio = SyntheticTrack()
        audio.id = 2
        audio.handler = "soun"
        var signed = bFrames
        signed.cttsVersion = 1
        let movies = [SyntheticMovie(), SyntheticMovie(tracks: [bFrames, audio]), SyntheticMovie(tracks: [edited]),
                      SyntheticMovie(tracks: [signed]), SyntheticMovie(tracks: [audio, edited], largeMoov: true)]
        return movies.map { $0.moovBody(dataStart: 48) }
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMP4(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let movie = fuzzInput(data, size)[...]
    for trackID: UInt32 in [1, 2] {
        guard let frames = ContainerIndex.frames(movie: movie, fileSize: .max, trackID: trackID) else { continue }
        checkFrames(frames)
    }
    checkMetadata(ContainerMetadata.mp4(movie: movie))
    checkMetadata(ContainerMetadata.matroska([0x1A, 0x45, 0xDF, 0xA3] + Array(movie)))
    return 0
}

func checkMetadata(_ found: ContainerMetadata) {
    for items in [found.items] + found.tracks.map(\.items) {
        check(items.count <= DescriptionBounds.metadataItems, "\(items.count) items")
        for item in items { check(item.value.utf8.count <= 3 * DescriptionBounds.metadataValueBytes && !item.value.isEmpty, "value \(item)") }
    }
    for track in found.tracks {
        let segments = track.segments ?? []
        check(segments.count <= DescriptionBounds.segments, "\(segments.count) segments")
        for s in segments { check(s.target.start.isNumeric && s.target.duration.isNumeric && s.source.duration.isNumeric, "\(s)") }
    }
}

func checkFrames(_ frames: [FrameIndex.Frame]) {
    check(!frames.isEmpty && frames.count <= ContainerIndex.maxSamples, "\(frames.count) frames")
    var seen = [Bool](repeating: false, count: frames.count)
    for (i, f) in frames.enumerated() {
        check(f.presentationTime >= 0 && f.duration >= 0, "frame \(i): time \(f.presentationTime), duration \(f.duration)")
        check(i == 0 || frames[i - 1].presentationTime <= f.presentationTime, "frame \(i) is out of order")
        check(f.decodePosition >= 0 && f.decodePosition < frames.count && !seen[f.decodePosition], "decode positions")
        seen[f.decodePosition] = true
    }
    let index = FrameIndex(frames: frames)
    let wanted: Set<Int> = [0, frames.count / 2, frames.count - 1]
    let plan = index.plan(wanted)
    check(!plan.isEmpty && plan.count <= wanted.count, "\(plan.count) ranges for \(wanted.count) frames")
    for i in wanted {
        let shown = index.frameDisplayed(at: frames[i].presentationTime)
        check(shown.map { frames[$0].presentationTime == frames[i].presentationTime } ?? false, "frame \(i)'s time names no frame")
    }
}
