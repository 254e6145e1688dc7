/// The presentation times an MPEG-4 Part 2 elementary stream (ffmpeg's `-f m4v`) states in its headers, in ticks of
/// the VOL's vop_time_increment_resolution, read as ffmpeg reads them (mpeg4videodec): a GOV header's time_code sets
/// the seconds; an I-, P- or S-VOP adds its modulo_time_base to them, a B-VOP adds its own to the seconds before the
/// I/P-VOP that precedes it; its vop_time_increment is the ticks within that second. The samples are given in decode
/// order (`see`); `frameTicks` is the stream's frame duration where that is the decoder's too.
public struct MPEG4VOPTimes: Sendable {
    /// vop_time_increment_resolution: ticks per second; nil before a VOL header.
    public private(set) var resolution: UInt32?
    /// fixed_vop_time_increment when the VOL's fixed_vop_rate is set.
    public private(set) var fixedIncrement: UInt32?
    /// Each VOP's presentation time in ticks, in decode order.
    public private(set) var times: [Int64] = []
    private var incrementBits = 1
    private var seconds: Int64 = 0
    private var secondsBefore: Int64 = 0

    public init() {}

    /// Reads the VOL, GOV and first VOP headers at the start of a sample (its first bytes); false when it holds no
    /// VOP or one before a VOL header, or a header that does not parse.
    public mutating func see(_ bytes: [UInt8]) -> Bool {
        var i = 0
        while i + 4 < bytes.count {
            guard bytes[i] == 0, bytes[i + 1] == 0, bytes[i + 2] == 1 else {
                i += 1
                continue
            }
            // MPEG-4 Part 2 has no emulation prevention. A reader copies its bytes: a VOL's fields read here are 162
            // bits at most and a GOV's 18, so those get 32 bytes, and only the VOP (the last header read) the rest —
            // the rest for every start code made a sample of start codes cost its length squared.
            let code = bytes[i + 3]
            let header = { (count: Int) in RBSPReader(unescaped: bytes[(i + 4)..<min(bytes.count, i + 4 + count)]) }
            switch code {
            case 0x20...0x2F:
                var reader = header(32)
                guard readVOL(&reader) else { return false }
            case 0xB3:
                var reader = header(32)
                guard readGOV(&reader) else { return false }
            case 0xB6:
                var reader = header(bytes.count)
                return readVOP(&reader)
            default: break
            }
            i += 4
        }
        return false
    }

    /// The duration of a frame in ticks: fixed_vop_time_increment when the VOL fixes the rate, else the one tick count
    /// every VOP is after the one shown before it (a constant rate: ffmpeg's encoder at 30 fps, resolution 30, one
    /// tick; at 30000/1001, resolution 30000, 1001 ticks). nil when they are not evenly spaced (a frame dropped) or
    /// before a VOP. The decoder times frames by this rate when the caps before it state it
    /// (ConverterInput.stateRawMPEG4Rate); by its own, resolution / 1 without fixed_vop_rate, they would not be these.
    public var frameTicks: Int64? {
        if let fixedIncrement, fixedIncrement > 0 { return Int64(fixedIncrement) }
        guard resolution != nil, !times.isEmpty else { return nil }
        let sorted = times.sorted()
        let steps = Set(zip(sorted.dropFirst(), sorted).map { $0 - $1 })
        if steps.isEmpty { return 1 }  // one VOP: one tick, the decoder's own rate
        guard steps.count == 1, let step = steps.first, step > 0 else { return nil }
        return step
    }

    /// The duration of a frame in nanoseconds, ⌊10⁹ × frameTicks / resolution⌋; nil without one, or when it does not
    /// fit in 64 bits (VOPs whose modulo_time_base puts them days apart).
    public var frameNanoseconds: Int64? {
        guard let ticks = frameTicks, let resolution, resolution > 0 else { return nil }
        let (product, overflow) = ticks.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? nil : product / Int64(resolution)
    }

    /// video_object_layer(), up to vop_time_increment_resolution and fixed_vop_rate (ISO/IEC 14496-2 6.2.3).
    private mutating func readVOL(_ r: inout RBSPReader) -> Bool {
        guard r.bits(1) != nil, r.bits(8) != nil, let identified = r.bits(1) else { return false }
        var verid: UInt32 = 1
        if identified == 1 {
            guard let v = r.bits(4), r.bits(3) != nil else { return false }
            verid = v
        }
        guard let aspect = r.bits(4) else { return false }
        if aspect == 15, r.bits(16) == nil { return false }  // par_width, par_height
        guard let control = r.bits(1) else { return false }
        if control == 1 {
            guard r.bits(3) != nil, let vbv = r.bits(1) else { return false }  // chroma_format, low_delay
            if vbv == 1, r.bits(32) == nil || r.bits(32) == nil || r.bits(15) == nil { return false }  // 79 bits
        }
        guard let shape = r.bits(2) else { return false }
        if shape == 3, verid != 1, r.bits(4) == nil { return false }
        guard r.bits(1) == 1, let res = r.bits(16), res > 0, r.bits(1) == 1, let fixed = r.bits(1) else { return false }
        resolution = res
        incrementBits = max(1, UInt32.bitWidth - (res - 1).leadingZeroBitCount)
        fixedIncrement = nil
        if fixed == 1 {
            guard let increment = r.bits(incrementBits) else { return false }
            fixedIncrement = increment
        }
        return true
    }

    /// group_of_vop(): its time_code's hours, minutes and seconds are the seconds the next VOPs count from.
    private mutating func readGOV(_ r: inout RBSPReader) -> Bool {
        guard let hours = r.bits(5), let minutes = r.bits(6), r.bits(1) == 1, let s = r.bits(6) else { return false }
        seconds = Int64(s) + 60 * (Int64(minutes) + 60 * Int64(hours))
        return true
    }

    /// video_object_plane(): vop_coding_type, modulo_time_base, vop_time_increment.
    private mutating func readVOP(_ r: inout RBSPReader) -> Bool {
        guard let resolution, let type = r.bits(2) else { return false }
        var modulo: Int64 = 0
        while true {
            guard let bit = r.bits(1) else { return false }
            if bit == 0 { break }
            modulo += 1
        }
        guard r.bits(1) == 1, let increment = r.bits(incrementBits) else { return false }
        let base: Int64
        if type == 2 {
            base = secondsBefore + modulo
        } else {
            secondsBefore = seconds
            seconds += modulo
            base = seconds
        }
        times.append(base * Int64(resolution) + Int64(increment))
        return true
    }
}
