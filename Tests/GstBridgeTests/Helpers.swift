import Foundation
import GstBridge
import TrackdProtocol

/// Pulls every sample until the end (fails the test on .failed).
func pullAll(_ pipeline: TrackPipeline, limit: Int = 100_000) throws -> [PulledSample] {
    var samples: [PulledSample] = []
    var timeouts = 0
    while samples.count < limit {
        switch pipeline.pull(timeoutNs: 1_000_000_000) {
        case .sample(let s): samples.append(s)
        case .timeout:
            timeouts += 1
            if timeouts > 20 { throw FixtureError(message: "pull timed out 20 times") }
        case .endOfStream: return samples
        case .failed(let e): throw e
        }
    }
    return samples
}

extension PulledSample {
    var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { out, count in
            copyBytes(to: UnsafeMutableRawPointer(out.baseAddress!))
            count = size
        }
    }

    /// The planes without row padding, one after another (what ffmpeg's rawvideo/framemd5 hashes).
    var tightBytes: [UInt8] {
        let all = bytes
        var out: [UInt8] = []
        for p in planes {
            for row in 0..<Int(p.height) {
                let start = Int(p.offset) + row * Int(p.bytesPerRow)
                out.append(contentsOf: all[start..<start + Int(p.rowBytes)])
            }
        }
        return out
    }
}

/// `ffmpeg -f framemd5` of a file's first video stream in `pixFmt`: (pts in seconds, md5) per frame.
func ffmpegFrameMD5(_ path: String, pixFmt: String) throws -> [(pts: Double, md5: String)] {
    let text = String(decoding: try Fixtures.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path, "-map", "0:v:0",
                                                            "-f", "framemd5", "-pix_fmt", pixFmt, "-"]), as: UTF8.self)
    var timebase = 1.0
    var frames: [(Double, String)] = []
    for line in text.split(separator: "\n") {
        if line.hasPrefix("#tb 0:") {
            let parts = line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: "/")
            timebase = Double(parts[0])! / Double(parts[1])!
        } else if !line.hasPrefix("#") {
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            frames.append((Double(f[2])! * timebase, f[5]))
        }
    }
    return frames
}

/// Raw frames decoded by ffmpeg in `pixFmt` (whole stream).
func ffmpegRawFrames(_ path: String, pixFmt: String, extra: [String] = []) throws -> Data {
    try Fixtures.run("ffmpeg", ["-nostdin", "-v", "error", "-i", path] + extra + ["-map", "0:v:0", "-f", "rawvideo",
                                                                                  "-pix_fmt", pixFmt, "-"])
}
