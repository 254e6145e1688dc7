import Foundation
import TrackdProtocol
import TestSupport
import Testing

/// The golden bytes of each protocol version, as docs/PROTOCOL.md §14 prints them (clients/python/tests/test_wire.py
/// reads the same dumps): every message type of version 2, encoded here, must give exactly the printed bytes, and
/// the printed bytes must decode to the message. Any change of the layout fails here until §14 announces it.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct GoldenTests {
    /// Each example of §14.2 by its bold name, with its request id.
    static let version2: [(name: String, requestID: UInt32, message: Message)] = {
        let t = { (v: Int64, ts: Int32) in MediaTime(value: v, timescale: ts) }
        return [
            ("Hello", 1, .hello(Hello(clientName: "example", capabilities: .outputStalled))),
            ("HelloReply", 1, .helloReply(HelloReply(version: 2, maxMessageSize: 262_144, maxFds: 4, workerPID: 4242,
                                                     serverVersion: "trackd 0.1", capabilities: .outputStalled))),
            ("OpenAsset", 2, .openAsset(name: "clip.mov")),
            ("AssetOpened", 2, .assetOpened(MetadataWireTests.example)),
            ("CreateOutput", 3, .createOutput(CreateOutput(assetID: 1, trackID: 1, timeRange: .everything,
                                                           settings: ["PixelFormatType": .int(0x3432_3076)]))),
            ("OutputCreated", 3, .outputCreated(OutputCreated(outputID: 1, mediaType: .video, format: "420v", width: 1920,
                                                              height: 1080, codecConfig: []))),
            ("PoolAdded", 3, .poolAdded(PoolAdded(outputID: 1, poolID: 1, slotCount: 8, slotSize: 3_112_960))),
            ("Sample", 3, .sample(Self.sample)),
            ("Sample with trims", 3, .sample(Self.trimmedSample)),
            ("OutputStalled", 3, .outputStalled(outputID: 1, held: 8)),
            ("ReleaseSlots", 0, .releaseSlots(outputID: 1, slots: [SlotRef(poolID: 1, slot: 0)])),
            ("PoolRemoved", 3, .poolRemoved(outputID: 1, poolID: 1)),
            ("OutputFinished", 3, .outputFinished(OutputFinished(outputID: 1, status: .completed, samplesLost: 12))),
            ("CancelOutput", 0, .cancelOutput(outputID: 1)),
            ("ResetOutput", 0, .resetOutput(outputID: 1, ranges: [
                MediaTimeRange(start: t(1, 2), duration: t(1, 4)),
                MediaTimeRange(start: t(1, 1), duration: .positiveInfinity),
            ])),
            ("FinishOutput", 0, .finishOutput(outputID: 1)),
            ("RangeEnded", 3, .rangeEnded(outputID: 1)),
            ("CloseAsset", 4, .closeAsset(assetID: 1)),
            ("Ack", 4, .ack),
            ("GetStatus", 5, .getStatus),
            ("Status", 5, .status(Self.status)),
            ("CountFrames", 6, .countFrames(assetID: 1, trackID: 1)),
            ("FrameCount", 6, .frameCount(trackID: 1, count: 300)),
            ("GenerateImage", 7, .generateImage(GenerateImage(assetID: 1, trackID: 1, time: t(1, 2)))),
            ("Image", 7, .image(ImageReady(actualTime: t(7680, 15360), width: 64, height: 48, length: 1234))),
            ("ReadFrames", 8, .readFrames(ReadFrames(assetID: 1, trackID: 1, frames: [.index(59), .time(t(1, 2))],
                                                     settings: [:]))),
            ("FramesResolved", 8, .framesResolved(outputID: 2, frames: [
                ResolvedFrame(index: 59, presentationTime: t(30208, 15360)),
                ResolvedFrame(index: 15, presentationTime: t(7680, 15360)),
            ])),
            ("Error", 4, .error(TrackError(.invalidArgument, "no open asset with id 7"))),
        ]
    }()

    /// output 1, pool 1 slot 0, 3,110,400 bytes of 420v 1920×1080, pts 0/1, duration 1001/30000, BT.709 video range.
    static let sample = Sample(
        outputID: 1, slot: SlotRef(poolID: 1, slot: 0), length: 3_110_400, presentationTime: .zero, decodeTime: .invalid,
        duration: MediaTime(value: 1001, timescale: 30000), flags: Sample.flagSync, format: "420v", width: 1920,
        height: 1080, colorimetry: Colorimetry(range: 1, matrix: 1, primaries: 1, transfer: 1),
        planes: [PlaneLayout(offset: 0, bytesPerRow: 1920, rowBytes: 1920, height: 1080),
                 PlaneLayout(offset: 2_073_600, bytesPerRow: 1920, rowBytes: 1920, height: 540)])

    /// A passthrough AAC priming packet: pts and dts −1024/44100, TrimDurationAtStart its whole 1024 frames.
    static let trimmedSample: Sample = {
        let t = { (v: Int64) in MediaTime(value: v, timescale: 44100) }
        return Sample(outputID: 1, slot: SlotRef(poolID: 1, slot: 0), length: 358, presentationTime: t(-1024),
                      decodeTime: t(-1024), duration: t(1024), flags: Sample.flagSync | Sample.flagHasDecodeTime,
                      format: "mp4a", width: 0, height: 0, colorimetry: Colorimetry(range: 0, matrix: 0, primaries: 0, transfer: 0),
                      planes: [PlaneLayout(offset: 0, bytesPerRow: 358, rowBytes: 358, height: 1)], trims: (t(1024), t(0)))
    }()

    static let status = StatusReport(
        workerPID: 4242, supervisorPID: 1, supervisorUptimeMs: 1000, connectionsAccepted: 2, activeConnections: 1,
        workerCrashes: 0, openAssets: 1, activeOutputs: 0, samplesSent: 10, bytesCopied: 0, daemonSamplesSent: 10,
        daemonBytesCopied: 0, daemonBytesShared: 20_736_000, gstreamerVersion: "GStreamer 1.22.0", framesDecoded: 12,
        framesConverted: 10, watchdogKills: 1, connectionsRefused: 3, connectionsRateLimited: 2, samplesLost: 12)

    @Test func everyMessageTypeHasAGoldenExample() {
        #expect(Set(Self.version2.map(\.message.type)) == Set(MessageType.allCases))
    }

    @Test func version2() throws {
        let printed = try ProtocolDocument.examples(in: "14.2")
        #expect(Set(printed.keys) == Set(Self.version2.map(\.name)), "§14.2's examples and this table name the same messages")
        for (name, requestID, message) in Self.version2 {
            let bytes = Codec.frame(message, requestID: requestID)
            guard let golden = printed[name] else { continue }
            #expect(bytes == golden, "\(name): encodes as\n\(ProtocolDocument.dump(bytes))")
            let decoded = try decodeAll(golden)
            #expect(decoded.count == 1 && decoded.first?.message == message && decoded.first?.header.requestID == requestID,
                    "\(name): the printed bytes decode to another message")
        }
    }

    /// §14.3: a version-1 client's Hello (version 1's layout: no capabilities) decodes, and the Error that refuses
    /// it is exactly the printed bytes, in the layout version 1 reads (code and message, nothing after).
    @Test func version1ClientIsRefused() throws {
        let printed = try ProtocolDocument.examples(in: "14.3")
        let helloBytes = try #require(printed["Hello"])
        let decoded = try decodeAll(helloBytes)
        guard case .hello(let hello)? = decoded.first?.message else { Issue.record("not a Hello"); return }
        #expect(hello == Hello(minVersion: 1, maxVersion: 1, clientName: "example"))
        #expect(!hello.offersWireVersion)
        #expect(hello.versionRefusal.message == "trackd speaks protocol version 2; this client offers 1…1")
        let error = Codec.frame(.error(hello.versionRefusal), requestID: decoded[0].header.requestID)
        #expect(error == printed["Error"], "encodes as\n\(ProtocolDocument.dump(error))")
        let message = Array(hello.versionRefusal.message.utf8)
        #expect(error.count == Wire.headerSize + 4 + 2 + message.count)
    }
}

/// docs/PROTOCOL.md, read by the tests that check its byte dumps.
enum ProtocolDocument {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../docs/PROTOCOL.md").path

    /// The byte dumps of section `number` (e.g. "14.2") by the bold name that opens the paragraph before each:
    /// "**Hello**, request id 1, …" then a fenced block of lines "OFFS  xx xx …   comment".
    static func examples(in number: String) throws -> [String: [UInt8]] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("### \(number) ") }) else { return [:] }
        var examples: [String: [UInt8]] = [:]
        var name: String?
        var block: [UInt8]?
        for line in lines[(start + 1)...] {
            if line.hasPrefix("## ") || line.hasPrefix("### ") { break }
            if line.hasPrefix("```") {
                if let bytes = block, let n = name { examples[n] = bytes }
                block = block == nil ? [] : nil
            } else if block != nil {
                block! += hexPairs(line)
            } else if line.hasPrefix("**"), let end = line.dropFirst(2).range(of: "**") {
                name = String(line.dropFirst(2)[..<end.lowerBound])
            }
        }
        return examples
    }

    /// The bytes of one dump line: after the 4-digit offset and two spaces, up to the comment (three spaces).
    static func hexPairs(_ line: String) -> [UInt8] {
        let data = line.dropFirst(6).components(separatedBy: "   ")[0]
        return data.split(separator: " ").compactMap { UInt8($0, radix: 16) }
    }

    /// `bytes` as §14 prints them: 16 a line, after the offset.
    static func dump(_ bytes: [UInt8]) -> String {
        stride(from: 0, to: bytes.count, by: 16).map { at in
            String(format: "%04x  ", at) + bytes[at..<min(at + 16, bytes.count)].map { String(format: "%02x", $0) }.joined(separator: " ")
        }.joined(separator: "\n")
    }
}
