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
}
