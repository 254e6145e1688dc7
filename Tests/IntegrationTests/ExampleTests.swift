import Foundation
import TrackdProtocol
import TestSupport
import Testing

/// Examples/trackd-example-reader: a typical AVAssetReader loop ported to TrackClient, run against a real trackd.
@Suite(.serialized, .timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs)
struct ExampleTests {
    static var example: String { Env.buildDir + "/trackd-example-reader" }

    /// "key: value" lines of the example's output.
    func fields(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for line in text.split(separator: "\n") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            result[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return result
    }

    @Test func readerLoopPortCountsEveryFrameBothWays() throws {
        let daemon = try Daemon()
        defer { daemon.stop() }
        let pts = try Oracle.framePTS(Media.clip)
        // The example's checksum (every 4th byte: the B of each BGRA pixel) over trackctl's packed BGRA output.
        let bgra = try daemon.trackctl(["read", Media.clip, "--pixel-format", "BGRA", "--output", "-"])
        #expect(bgra.status == 0, "\(bgra.stderr)")
        let checksum = stride(from: 0, to: bgra.stdout.count, by: 4).reduce(UInt64(0)) { $0 &+ UInt64(bgra.stdout[$1]) }

        for variant in [[], ["--async"]] {
            let r = try run(Self.example, [Media.clip, "--socket", daemon.socketPath] + variant)
            #expect(r.status == 0, "\(variant): \(r.stderr)")
            let f = fields(r.text)
            #expect(f["frames"] == String(pts.count), "\(variant)")
            #expect(f["bytes"] == String(pts.count * 320 * 240 * 4), "\(variant)")
            #expect(abs((Double(f["first pts"] ?? "") ?? -1) - pts[0]) < 0.0005, "\(variant)")
            #expect(abs((Double(f["last pts"] ?? "") ?? -1) - pts[pts.count - 1]) < 0.0005, "\(variant)")
            #expect(f["checksum"] == String(checksum), "\(variant)")
            #expect(f["status"] == "completed", "\(variant)")
            #expect(f["time"]?.contains(variant.isEmpty ? "copyNextSampleBuffer" : "async") == true, "\(variant)")
        }
    }

    @Test func explainsItsErrors() throws {
        let usage = try run(Self.example, [])
        #expect(usage.status == 2 && usage.stderr.contains("usage: trackd-example-reader FILE"))
        let dir = Env.tempDir("example")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let unreachable = try run(Self.example, [Media.clip, "--socket", dir + "/nobody.sock"])
        #expect(unreachable.status == 1 && unreachable.stderr.contains("Is trackd running?"))
    }
}
