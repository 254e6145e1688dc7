import Foundation
import TestSupport
import Testing
import TrackClient

/// Several outputs on one reader, each read independently, in any interleaving.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct MultipleOutputsTests {
    enum Order: String, CaseIterable { case videoThenAudio, audioThenVideo, alternating }

    @Test(arguments: Order.allCases)
    func videoAndAudioOfOneFile(order: Order) throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let asset = try Asset(path: Media.clip, socketPath: daemon.socketPath)
        let videoTrack = try #require(asset.tracks(withMediaType: .video).first)
        let audioTrack = try #require(asset.tracks(withMediaType: .audio).first)

        // Audio alone: the reference count.
        let alone = try AssetReaderTrackOutput(track: audioTrack, outputSettings: [:])
        let aloneReader = AssetReader(asset: asset)
        try aloneReader.add(alone)
        #expect(try aloneReader.startReading())
        var aloneFrames = 0, aloneSamples = 0
        while let s = try alone.copyNextSampleBuffer() { aloneFrames += s.numberOfSamples; aloneSamples += 1 }
        #expect(aloneReader.status == .completed)
        #expect(aloneFrames > 90_000)

        let video = try AssetReaderTrackOutput(track: videoTrack, outputSettings: ["PixelFormatType": .string("y420")])
        let audio = try AssetReaderTrackOutput(track: audioTrack, outputSettings: [:])
        let reader = AssetReader(asset: asset)
        try reader.add(video)
        try reader.add(audio)
        #expect(try reader.startReading())
        var videoMD5: [String] = [], audioFrames = 0, audioSamples = 0
        var videoDone = false, audioDone = false
        func stepVideo() throws {
            guard !videoDone else { return }
            if let s = try video.copyNextSampleBuffer() { videoMD5.append(md5Hex(s.packedBytes())) } else { videoDone = true }
        }
        func stepAudio() throws {
            guard !audioDone else { return }
            if let s = try audio.copyNextSampleBuffer() { audioFrames += s.numberOfSamples; audioSamples += 1 } else { audioDone = true }
        }
        switch order {
        case .videoThenAudio:
            while !videoDone { try stepVideo() }
            #expect(reader.status == .reading, "one output still has samples")
            while !audioDone { try stepAudio() }
        case .audioThenVideo:
            while !audioDone { try stepAudio() }
            #expect(reader.status == .reading, "one output still has samples")
            while !videoDone { try stepVideo() }
        case .alternating:
            while !videoDone || !audioDone {
                try stepVideo()
                try stepAudio()
                if videoDone != audioDone { #expect(reader.status == .reading) }
            }
        }
        #expect(reader.status == .completed, "\(String(describing: reader.error))")
        #expect(audioFrames == aloneFrames && audioSamples == aloneSamples)
        let oracle = try Oracle.frameMD5(Media.clip, pixFmt: "yuv420p")
        #expect(videoMD5 == oracle.map(\.md5))
    }
}
