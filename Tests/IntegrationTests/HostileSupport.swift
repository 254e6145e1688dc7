import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// ISO BMFF (MP4/MOV) boxes, found by walking the container boxes trackd's demuxer reads.
enum MP4Boxes {
    struct Box {
        var offset: Int
        var size: Int
        var type: String
    }

    /// Video sample entries (VisualSampleEntry: u16 width at 32, height at 34, children from 86).
    static let visualEntries: Set<String> = ["avc1", "avc3", "hvc1", "hev1", "mp4v", "apco", "apcs", "apcn", "apch", "ap4h", "vp09", "av01"]

    /// Where the children of a box start (from the box's first byte); nil: not a container.
    static func childOffset(_ type: String) -> Int? {
        switch type {
        case "moov", "trak", "mdia", "minf", "stbl", "edts", "dinf", "udta", "mvex", "moof", "traf": 8
        case "stsd": 16  // version/flags, entry count
        case "mp4a": 36  // AudioSampleEntry
        case _ where visualEntries.contains(type): 86
        default: nil
        }
    }

    /// Every box of `data` (depth first), 32-bit sizes only; stops at the first size that does not fit.
    static func all(_ data: [UInt8]) -> [Box] {
        var boxes: [Box] = []
        func walk(_ start: Int, _ end: Int) {
            var at = start
            while at + 8 <= end {
                let size = Int(be32(data, at))
                guard size >= 8, at + size <= end else { return }
                let type = String(decoding: data[at + 4..<at + 8], as: UTF8.self)
                boxes.append(Box(offset: at, size: size, type: type))
                if let child = childOffset(type), child < size { walk(at + child, at + size) }
                at += size
            }
        }
        walk(0, data.count)
        return boxes
    }

    static func first(_ type: String, in data: [UInt8]) -> Box? { all(data).first { $0.type == type } }

    static func be32(_ d: [UInt8], _ at: Int) -> UInt32 {
        UInt32(d[at]) << 24 | UInt32(d[at + 1]) << 16 | UInt32(d[at + 2]) << 8 | UInt32(d[at + 3])
    }

    static func put32(_ d: inout [UInt8], _ at: Int, _ v: UInt32) {
        for i in 0..<4 { d[at + i] = UInt8(truncatingIfNeeded: v >> (24 - 8 * i)) }
    }

    static func put16(_ d: inout [UInt8], _ at: Int, _ v: UInt16) {
        d[at] = UInt8(v >> 8)
        d[at + 1] = UInt8(v & 0xff)
    }

    /// Declares every video track `width`×`height`: the video sample entry's u16 width/height (offsets 32/34)
    /// and tkhd's 16.16 width/height (offsets 84/88, version 0; 96/100, version 1).
    static func declaringSize(_ input: [UInt8], width: UInt16, height: UInt16) -> [UInt8] {
        var d = input
        for box in all(input) {
            switch box.type {
            case _ where visualEntries.contains(box.type):
                put16(&d, box.offset + 32, width)
                put16(&d, box.offset + 34, height)
            case "tkhd":
                let base = d[box.offset + 8] == 1 ? 96 : 84
                guard box.size >= base + 8, be32(d, box.offset + base) != 0 else { continue }  // audio: 0×0
                put32(&d, box.offset + base, UInt32(width) << 16)
                put32(&d, box.offset + base + 4, UInt32(height) << 16)
            default:
                continue
            }
        }
        return d
    }
}

/// What reading a (possibly damaged) file through a real daemon gave.
struct ReadReport: Sendable {
    var tracks = 0
    var samples = 0
    /// The errors of the open, of each track's reader and of the image request, in order.
    var errors: [TrackError] = []
    /// Nothing came back within the harness's timeout (the daemon's workers were then killed).
    var hung = false

    /// The connection was lost: the worker died (or was killed).
    var lostWorker: Bool { errors.contains { $0.code == AVErrorCode.mediaServicesWereReset.rawValue } }
}

enum HostileRead {
    /// Opens `path` through the daemon and reads every track to its end — video decoded to 420v, audio to linear
    /// PCM, other tracks in passthrough — then asks for an image of the first video track. Bounded by `timeout`
    /// seconds: past it the daemon's workers are killed (SIGKILL) and the report says `hung`.
    static func readAll(_ path: String, daemon: Daemon, timeout: Double) -> ReadReport {
        readAll(path, socketPath: daemon.socketPath, daemonPID: daemon.pid, timeout: timeout)
    }

    static func readAll(_ path: String, socketPath: String, daemonPID: pid_t, timeout: Double) -> ReadReport {
        let result = Mutex<ReadReport?>(nil)
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            let report = read(path, socketPath: socketPath)
            result.withLock { $0 = report }
            done.signal()
        }
        thread.start()
        if done.wait(timeout: .now() + timeout) == .success { return result.withLock { $0! } }
        killWorkers(of: daemonPID)
        // Killed workers close their connections: the reading thread ends with -11819 errors.
        _ = done.wait(timeout: .now() + 30)
        var report = result.withLock { $0 } ?? ReadReport()
        report.hung = true
        return report
    }

    private static func read(_ path: String, socketPath: String) -> ReadReport {
        var report = ReadReport()
        let asset: Asset
        do {
            asset = try Asset(path: path, socketPath: socketPath)
        } catch {
            report.errors.append(error)
            return report
        }
        report.tracks = asset.tracks.count
        for track in asset.tracks {
            let settings: [String: SettingValue]? = switch track.mediaType {
            case .video: ["PixelFormatType": .string("420v")]
            case .audio: ["AVFormatIDKey": .string("lpcm")]
            default: nil
            }
            do {
                let output = try AssetReaderTrackOutput(track: track, outputSettings: settings)
                let reader = AssetReader(asset: asset)
                try reader.add(output)
                if try reader.startReading() {
                    while let _ = try output.copyNextSampleBuffer() { report.samples += 1 }
                }
                if reader.status == .failed { report.errors.append(reader.error ?? TrackError(.unknown, "failed without an error")) }
            } catch let error as TrackError {
                report.errors.append(error)
            } catch {
                report.errors.append(TrackError(.unknown, "\(error)"))
            }
        }
        if let video = asset.tracks(withMediaType: .video).first {
            do {
                _ = try asset.generateImage(track: video, at: MediaTime(value: 1, timescale: 10))
            } catch {
                report.errors.append(error)
            }
        }
        return report
    }

    /// SIGKILLs the daemon's children (its workers: every child of trackd is one).
    static func killWorkers(of daemon: pid_t) {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(daemon)/task")) ?? []
        for task in tasks {
            let children = (try? String(contentsOfFile: "/proc/\(daemon)/task/\(task)/children", encoding: .utf8)) ?? ""
            for pid in children.split(separator: " ").compactMap({ pid_t($0) }) { kill(pid, SIGKILL) }
        }
    }

    /// The supervisor's worker-crash counter (a GetStatus through a fresh connection).
    static func workerCrashes(_ daemon: Daemon) throws -> UInt64 {
        try daemon.status().workerCrashes
    }

    /// A clean error: a code trackd documents, other than a lost connection or a protocol violation, and a message.
    static func isClean(_ error: TrackError) -> Bool {
        guard let code = error.knownCode else { return false }
        return ![.mediaServicesWereReset, .protocolViolation, .daemonUnreachable].contains(code) && !error.message.isEmpty
    }
}
