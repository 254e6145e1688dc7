// trackd-example-reader — a typical AVAssetReader loop, ported to TrackClient.
//
// The AVFoundation original (Swift, macOS/iOS):
//
//     let asset = AVURLAsset(url: url)
//     let track = try await asset.loadTracks(withMediaType: .video).first!
//     let reader = try AVAssetReader(asset: asset)
//     let output = AVAssetReaderTrackOutput(track: track, outputSettings:
//         [kCVPixelBufferPixelFormatTypeKey as String: kCVPixelFormatType_32BGRA])
//     output.alwaysCopiesSampleData = false
//     reader.add(output)
//     reader.startReading()
//     while let sample = output.copyNextSampleBuffer() {
//         let pixels = CMSampleBufferGetImageBuffer(sample)!   // use the BGRA pixels …
//         frames += 1
//     }
//     if reader.status == .failed { throw reader.error! }
//
// The same loop here differs in three places: the asset is opened by path (this process opens the file and hands
// trackd the descriptor), misuse throws instead of raising, and the bytes come from `withUnsafeBytes`.
//
// usage: trackd-example-reader FILE [--async] [--socket PATH]
//   --async   read with `for try await sample in output.samples` instead of copyNextSampleBuffer
//   --socket  trackd's socket (default: $TRACKD_SOCKET, $XDG_RUNTIME_DIR/trackd.sock, /run/trackd/trackd.sock)
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// What the loop found; printed the same way by both variants.
struct Tally {
    var frames = 0
    var bytes = 0
    var firstPTS = MediaTime.invalid
    var lastPTS = MediaTime.invalid
    /// A cheap checksum of the pixels (sum of every 4th byte), so both loops can be compared.
    var checksum: UInt64 = 0

    mutating func add(_ sample: SampleBuffer) {
        if frames == 0 { firstPTS = sample.presentationTimeStamp }
        lastPTS = sample.presentationTimeStamp
        frames += 1
        bytes += sample.dataLength
        sample.withUnsafeBytes { pixels in
            var i = 0
            while i < pixels.count {
                checksum &+= UInt64(pixels[i])
                i += 4
            }
        }
    }
}

func fail(_ message: String, status: Int32 = 1) -> Never {
    let text = "trackd-example-reader: \(message)\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(status)
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

var arguments = Array(CommandLine.arguments.dropFirst())
var socketPath: String?
if let i = arguments.firstIndex(of: "--socket") {
    guard i + 1 < arguments.count else { fail("--socket needs a path", status: 2) }
    socketPath = arguments[i + 1]
    arguments.removeSubrange(i...i + 1)
}
let useAsync = arguments.contains("--async")
arguments.removeAll { $0 == "--async" }
guard arguments.count == 1, !arguments[0].hasPrefix("-") else {
    fail("usage: trackd-example-reader FILE [--async] [--socket PATH]", status: 2)
}

/// The loop itself: what an AVAssetReader user writes.
func readVideo(path: String, socketPath: String?, useAsync: Bool) async throws {
    // AVURLAsset(url:) + loadTracks(withMediaType: .video)
    let asset = try Asset(path: path, socketPath: socketPath)
    guard let track = asset.tracks(withMediaType: .video).first else { fail("\(path) has no video track") }

    // AVAssetReader(asset:) + AVAssetReaderTrackOutput(track:outputSettings:) with 32BGRA
    let reader = AssetReader(asset: asset)
    let bgra: FourCC = "BGRA"
    let output = try AssetReaderTrackOutput(
        track: track, outputSettings: ["kCVPixelBufferPixelFormatTypeKey": .int(Int64(bgra.rawValue))])
    try output.setAlwaysCopiesSampleData(false)  // zero-copy: each sample holds its shared slot until released
    try reader.add(output)
    guard try reader.startReading() else { throw reader.error ?? TrackError(.unknown, "startReading failed") }

    let start = now()
    var tally = Tally()
    if useAsync {
        // AVFoundation 26's provider loop: `while let sample = try await provider.next()`.
        for try await sample in output.samples {
            tally.add(sample)
        }
    } else {
        while let sample = try output.copyNextSampleBuffer() {
            tally.add(sample)
        }
        if reader.status == .failed, let error = reader.error { throw error }
    }
    let elapsed = now() - start

    print("track \(track.trackID): \(track.naturalSize.width)x\(track.naturalSize.height) \(track.codec), decoded to BGRA")
    print("frames: \(tally.frames)")
    print("bytes: \(tally.bytes)")
    print("first pts: \(tally.firstPTS.seconds)")
    print("last pts: \(tally.lastPTS.seconds)")
    print("checksum: \(tally.checksum)")
    print("status: \(reader.status)")
    let fps = elapsed > 0 ? Double(tally.frames) / elapsed : 0
    print("time: \((elapsed * 1000).rounded() / 1000) s (\(fps.rounded()) frames/s, \(useAsync ? "async" : "copyNextSampleBuffer"))")
}

do {
    try await readVideo(path: arguments[0], socketPath: socketPath, useAsync: useAsync)
} catch let error as TrackError {
    fail("error \(error.code): \(error.message)")
} catch {
    fail("\(error)")
}
