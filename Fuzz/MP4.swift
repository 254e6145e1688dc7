// libFuzzer target `mp4`: ContainerIndex, the MP4/MOV sample-table reader the worker runs on untrusted files.
// Input: a moov box's body (scripts/fuzz.sh seeds it with the moov of ffmpeg-made MP4 and MOV files; the target's
// own seeds are MediaIndexTests' synthetic movies). Invariants, beyond "never traps":
//  - frames that come back are a valid index: 1 … maxSamples frames, presentation times non-negative and in
//    order, durations ≥ 0, decode positions a permutation of 0 ..< n;
//  - FrameIndex and the planner handle them: the first, middle and last frames plan and each time names its frame.
import MediaIndex
import TrackdProtocol

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
    return 0
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
