import Foundation
import TrackdProtocol
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// The points a client written from PROTOCOL.md alone had to guess (issue #25), as the text now states them, against
/// a real daemon.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ProtocolTextTests {
    /// §7.2: `language` is never "und": ffmpeg's MP4 stores "und" in mdhd, the track record says "" and the mdhd item
    /// carries "und" as stored; a track whose mdhd says "eng" says "eng".
    @Test func undeterminedLanguageIsEmpty() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let raw = try RawClient(socketPath: daemon.socketPath)
        let opened = try raw.openAsset(Media.clip)
        let video = try #require(opened.tracks.first { $0.mediaType == .video })
        let audio = try #require(opened.tracks.first { $0.mediaType == .audio })
        #expect(video.language == "" && video.metadata.filter { $0.identifier == "mdhd/language" }.map(\.value) == ["und"])
        #expect(audio.language == "eng" && audio.metadata.filter { $0.identifier == "mdhd/language" }.map(\.value) == ["eng"])
    }
}
