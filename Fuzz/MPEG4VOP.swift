// libFuzzer target `mpeg4vop`: MPEG4VOPTimes, which the worker runs on the first 4 KiB of every sample of a raw
// MPEG-4 Part 2 stream (FrameIndexBuild.untimed) and on a track's codec configuration (ConverterInput): VOL, GOV and
// VOP headers, bit by bit, to presentation times and a frame rate. Input: samples, each after a two-byte
// little-endian length (at most 4096 bytes each, as the worker reads them), fed to one reader in order.
// Invariants, beyond "never traps":
//  - a sample is read (true) exactly when it adds one time, and only after a VOL has set a resolution;
//  - every time is ≥ 0; the resolution is 1 … 65535, a fixed increment below it in bits;
//  - a frame is > 0 ticks, and its nanoseconds, when they fit, are ⌊10⁹ × ticks / resolution⌋ (checked full width).
import MediaIndex

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // A VOL (resolution 30, fixed_vop_rate off; then 30000 with a fixed increment of 1001) and VOPs, as
        // MPEG4VOPTimesTests builds them; scripts/fuzz.sh adds ffmpeg's `-f m4v` streams cut into samples.
        func bits(_ s: String) -> [UInt8] {
            let padded = Array((s + String(repeating: "1", count: (8 - s.count % 8) % 8)).utf8)
            return stride(from: 0, to: padded.count, by: 8).map { i in
                padded[i..<i + 8].reduce(UInt8(0)) { $0 << 1 | ($1 == UInt8(ascii: "1") ? 1 : 0) }
            }
        }
        func bin(_ v: Int, _ width: Int) -> String {
            let d = String(v, radix: 2)
            return String(repeating: "0", count: width - d.count) + d
        }
        func vol(_ resolution: Int, fixed: String) -> [UInt8] {
            [0, 0, 1, 0x20] + bits("0" + bin(1, 8) + "0" + "0001" + "0" + "00" + "1" + bin(resolution, 16) + "1" + fixed + "1")
        }
        func vop(_ type: Int, _ seconds: Int, _ increment: Int, _ width: Int) -> [UInt8] {
            [0, 0, 1, 0xB6] + bits(bin(type, 2) + String(repeating: "1", count: seconds) + "0" + "1" + bin(increment, width) + "1")
        }
        func framed(_ samples: [[UInt8]]) -> [UInt8] { samples.flatMap { [UInt8($0.count & 0xFF), UInt8($0.count >> 8)] + $0 } }
        let gov: [UInt8] = [0, 0, 1, 0xB3] + bits(bin(1, 5) + bin(2, 6) + "1" + bin(3, 6))
        return [framed([vol(30, fixed: "0") + gov + vop(0, 0, 0, 5), vop(1, 0, 3, 5), vop(2, 0, 1, 5), vop(1, 1, 0, 5)]),
                framed([vol(30000, fixed: "1" + bin(1001, 15)) + vop(0, 0, 0, 15), vop(1, 0, 1001, 15)])]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzMPEG4VOP(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var r = FuzzBytes(fuzzInput(data, size))
    var times = MPEG4VOPTimes()
    while !r.isAtEnd {
        let sample = r.take(min(4096, Int(r.u16())))
        let before = times.times.count
        let read = times.see(sample)
        check(times.times.count == before + (read ? 1 : 0), "read \(read): \(before) → \(times.times.count) times")
        check(!read || times.resolution != nil, "a VOP read before a VOL")
    }
    check(times.times.allSatisfy { $0 >= 0 }, "times \(times.times)")
    guard let resolution = times.resolution else {
        check(times.times.isEmpty && times.frameTicks == nil, "times without a VOL")
        return 0
    }
    check(resolution > 0 && resolution <= 65535, "resolution \(resolution)")
    if let fixed = times.fixedIncrement { check(fixed < 1 << UInt32.bitWidth - (resolution - 1).leadingZeroBitCount || fixed <= 1, "fixed \(fixed)") }
    guard let ticks = times.frameTicks else { return 0 }
    check(ticks > 0, "a frame of \(ticks) ticks")
    let (high, low) = ticks.multipliedFullWidth(by: 1_000_000_000)
    let fits = high == 0 && low <= UInt64(Int64.max)
    check(times.frameNanoseconds == (fits ? Int64(low / UInt64(resolution)) : nil),
          "\(ticks) ticks at \(resolution): \(String(describing: times.frameNanoseconds)) ns")
    return 0
}
