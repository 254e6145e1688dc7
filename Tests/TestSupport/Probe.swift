import Foundation
import Testing

/// ffprobe as an oracle in integers: a stream's time base, its packets (`-show_packets`) and decoded frames
/// (`-show_frames`) with their timestamps in that time base, as ffprobe's JSON gives them.
public enum Probe {
    public struct Packet: Sendable {
        public var pts: Int64?
        public var dts: Int64?
        public var duration: Int64?
        public var size: Int
        /// Where the packet's bytes start in the file (nil: not stated).
        public var position: Int64?
        public var keyframe: Bool
        /// "Skip Samples" side data: the frames a decoder drops at the start and at the end of this packet.
        public var skip: (start: Int64, end: Int64)?
    }

    public struct Frame: Sendable {
        public var pts: Int64?
        public var duration: Int64?
        /// Audio: the frames decoded from this packet (after ffmpeg's skipping).
        public var samples: Int?
        /// Video: whether libav marks the picture a key frame (`key_frame`), and its `pict_type` ("I", "P", "B").
        public var keyframe: Bool = false
        public var pictureType: String?
    }

    /// `stream` as ffprobe's -select_streams names it ("v:0", "a:0").
    public static func timeBase(_ file: String, _ stream: String) throws -> (num: Int64, den: Int64) {
        let json = try probe(file, ["-select_streams", stream, "-show_streams"])
        let streams = json["streams"] as? [[String: Any]] ?? []
        let text = streams.first?["time_base"] as? String ?? ""
        let parts = text.split(separator: "/").compactMap { Int64($0) }
        guard parts.count == 2 else { throw ProbeError.noStream(file, stream) }
        return (parts[0], parts[1])
    }

    public static func packets(_ file: String, _ stream: String) throws -> [Packet] {
        let json = try probe(file, ["-select_streams", stream, "-show_packets"])
        return (json["packets"] as? [[String: Any]] ?? []).map { p in
            var skip: (Int64, Int64)?
            for side in p["side_data_list"] as? [[String: Any]] ?? [] where side["side_data_type"] as? String == "Skip Samples" {
                skip = (int(side["skip_samples"]) ?? 0, int(side["discard_padding"]) ?? 0)
            }
            return Packet(pts: int(p["pts"]), dts: int(p["dts"]), duration: int(p["duration"]),
                          size: Int(int(p["size"]) ?? -1), position: int(p["pos"]), keyframe: (p["flags"] as? String)?.hasPrefix("K") == true,
                          skip: skip)
        }
    }

    public static func frames(_ file: String, _ stream: String) throws -> [Frame] {
        let json = try probe(file, ["-select_streams", stream, "-show_frames"])
        return (json["frames"] as? [[String: Any]] ?? []).map { f in
            Frame(pts: int(f["pts"]) ?? int(f["best_effort_timestamp"]), duration: int(f["duration"] ?? f["pkt_duration"]),
                  samples: int(f["nb_samples"]).map(Int.init), keyframe: int(f["key_frame"]) == 1,
                  pictureType: f["pict_type"] as? String)
        }
    }

    private static func probe(_ file: String, _ args: [String]) throws -> [String: Any] {
        let r = try run("ffprobe", ["-v", "error", "-of", "json"] + args + [file])
        #expect(r.status == 0, "ffprobe \(args) \(file): \(r.stderr)")
        return (try JSONSerialization.jsonObject(with: r.stdout) as? [String: Any]) ?? [:]
    }

    /// ffprobe writes integers as numbers, some as strings ("pts": 512; "size": "4555").
    private static func int(_ value: Any?) -> Int64? {
        if let n = value as? NSNumber { return n.int64Value }
        if let s = value as? String { return Int64(s) }
        return nil
    }
}

public enum ProbeError: Error { case noStream(String, String) }
