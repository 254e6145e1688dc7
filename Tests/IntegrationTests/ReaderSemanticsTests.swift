import Foundation
import TestSupport
import Testing
import TrackClient

/// AVAssetReader's usage rules, through a real trackd: its exceptions become thrown AssetReaderUsageError with
/// Apple's messages.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ReaderSemanticsTests {
    @Test func misuseThrowsApplesMessages() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let track = try #require(asset.tracks(withMediaType: .video).first)
        let output = try AssetReaderTrackOutput(track: track, outputSettings: [:])
        let reader = AssetReader(asset: asset)

        usage(.internalInconsistency, "-[AVAssetReaderTrackOutput copyNextSampleBuffer] cannot copy next sample buffer before adding this output to an instance of AVAssetReader (using -addOutput:) and calling -startReading on that asset reader") {
            _ = try output.copyNextSampleBuffer()
        }
        try reader.add(output)
        usage(.internalInconsistency, "-[AVAssetReaderTrackOutput copyNextSampleBuffer] cannot copy next sample buffer before adding this output to an instance of AVAssetReader (using -addOutput:) and calling -startReading on that asset reader") {
            _ = try output.copyNextSampleBuffer()
        }
        usage(.internalInconsistency, "-[AVAssetReader addOutput:] cannot add an output that has already been added to the receiver") {
            try reader.add(output)
        }
        let other = AssetReader(asset: asset)
        #expect(!other.canAdd(output))
        usage(.internalInconsistency, "-[AVAssetReader addOutput:] cannot add an output that has already been added to another AVAssetReader") {
            try other.add(output)
        }
        #expect(other.outputs.isEmpty)
        // Before start the setters work.
        try reader.setTimeRange(MediaTimeRange(start: MediaTime(seconds: 0.5), duration: MediaTime(seconds: 0.2)))
        try output.setAlwaysCopiesSampleData(false)
        try output.setSupportsRandomAccess(false)
        #expect(!output.alwaysCopiesSampleData && !output.supportsRandomAccess)

        #expect(try reader.startReading())
        usage(.internalInconsistency, "-[AVAssetReader startReading] cannot be called again after reading has already started") {
            _ = try reader.startReading()
        }
        let late = try AssetReaderTrackOutput(track: track, outputSettings: [:])
        usage(.internalInconsistency, "-[AVAssetReader addOutput:] cannot add an output after reading has started") {
            try reader.add(late)
        }
        usage(.internalInconsistency, "-[AVAssetReader setTimeRange:] cannot be called after reading has started") {
            try reader.setTimeRange(.everything)
        }
        usage(.internalInconsistency, "-[AVAssetReaderOutput setAlwaysCopiesSampleData:] cannot be called after reading has started") {
            try output.setAlwaysCopiesSampleData(true)
        }
        usage(.internalInconsistency, "-[AVAssetReaderOutput setSupportsRandomAccess:] cannot be called after reading has started") {
            try output.setSupportsRandomAccess(true)
        }
        #expect(reader.timeRange.start.seconds == 0.5, "a refused setter changes nothing")
        var count = 0
        while try output.copyNextSampleBuffer() != nil { count += 1 }
        #expect(count >= 6 && count <= 7)
        #expect(reader.status == .completed)
        #expect(try output.copyNextSampleBuffer() == nil, "after completion: nil, no exception")
    }
}
