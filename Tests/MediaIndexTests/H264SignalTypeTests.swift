import MediaIndex
import MediaVocabulary
import TestSupport
import Testing

/// VideoSignalType: the VUI's video signal type of the first SPS of an avcC (the SPSs of H264PicturesTests, written
/// bit by bit: video_format 5, video range, BT.709 colour description), and how it is put over a container's
/// colorimetry. The integration tests (ColourDescriptionTests) compare x264's against ffprobe.
@Suite(.timeLimit(.minutes(TestLimits.minutes))) struct H264SignalTypeTests {
    @Test func readsTheSignalTypeThroughEveryBranch() {
        let bt709 = VideoSignalType.Description(primaries: 1, transfer: 1, matrix: 1)
        for high in [false, true] {
            let sps = H264PicturesTests.sps(high: high, vui: true, restriction: high)
            #expect(VideoSignalType(avcC: H264PicturesTests.avcC(sps: sps)) == VideoSignalType(fullRange: false, description: bt709))
            #expect(VideoSignalType(avcC: H264PicturesTests.avcC(sps: H264PicturesTests.sps(high: high, vui: false, restriction: false))) == nil)
        }
    }

    /// Every prefix of an SPS is read without a fault, and none that is cut short claims a signal type other than
    /// the SPS's own.
    @Test func aTruncatedSPSStatesNothingElse() {
        let sps = H264PicturesTests.sps(high: true, vui: true, restriction: true)
        let whole = VideoSignalType(avcC: H264PicturesTests.avcC(sps: sps))
        #expect(whole != nil)
        for length in 1..<sps.count {
            let read = VideoSignalType(avcC: H264PicturesTests.avcC(sps: Array(sps.prefix(length))))
            #expect(read == nil || read == whole, "\(length) bytes")
        }
        #expect(VideoSignalType(avcC: []) == nil)
        #expect(VideoSignalType(avcC: [1, 100, 0, 40, 0xFF, 0xE0]) == nil)  // no SPS
    }

    /// libavcodec's rule: the signal type sets the range; a colour description, when there is one, the other three.
    @Test func theStreamsColourGoesOverTheContainers() {
        let container = Colorimetry(range: 1, matrix: 5, primaries: 5, transfer: 6)
        #expect(VideoSignalType(fullRange: true).applied(to: container) == Colorimetry(range: 2, matrix: 5, primaries: 5, transfer: 6))
        let described = VideoSignalType(fullRange: false, description: .init(primaries: 9, transfer: 16, matrix: 9))
        #expect(described.applied(to: container) == Colorimetry(range: 1, matrix: 9, primaries: 9, transfer: 16))
        #expect(VideoSignalType(fullRange: true).applied(to: Colorimetry()) == Colorimetry(range: 2))
    }

    /// Code points that state no colour are unspecified (2), every one ffmpeg 5.1 names is kept: reserved (0, 3;
    /// matrix 3) and unassigned (primaries 13–21 and 23 up, transfer 19 up, matrix 15 up) — libavcodec's reading of
    /// a VUI, so ffprobe's `unknown`/`reserved`. A range that is neither video nor full is unknown (0).
    @Test func codePointsThatStateNoColourAreUnspecified() {
        let primaries = (0...255).filter { Colorimetry(primaries: UInt8($0)).normalized.primaries != 2 }
        #expect(primaries == [1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 22])
        let transfers = (0...255).filter { Colorimetry(transfer: UInt8($0)).normalized.transfer != 2 }
        #expect(transfers == [1] + Array(4...18))
        let matrices = (0...255).filter { Colorimetry(matrix: UInt8($0)).normalized.matrix != 2 }
        #expect(matrices == [0, 1] + Array(4...14))
        #expect((0...255).map { Colorimetry(range: UInt8($0)).normalized.range } == [0, 1, 2] + Array(repeating: 0, count: 253))
        let reserved = VideoSignalType(fullRange: true, description: .init(primaries: 13, transfer: 3, matrix: 15))
        let container = Colorimetry(range: 1, matrix: 1, primaries: 1, transfer: 1)
        #expect(reserved.applied(to: container).normalized == Colorimetry(range: 2))
        let odd = Colorimetry(range: 9, matrix: 3, primaries: 0, transfer: 19)
        #expect(VideoSignalType.colour(of: "vp09", configuration: [], over: odd) == Colorimetry())
        #expect(Colorimetry(range: 2, matrix: 2, primaries: 9, transfer: 2).statedPrimaries == 9)
        let unspecified = Colorimetry()
        #expect(unspecified.statedRange == nil && unspecified.statedMatrix == nil && unspecified.statedPrimaries == nil
                && unspecified.statedTransfer == nil)
    }
}
