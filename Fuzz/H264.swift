// libFuzzer target `h264`: H264Pictures, which reads stored H.264 access units in the worker (DecodeStop) to leave
// out pictures no other refers to; and VideoSignalType, which reads the colour an H.264 or HEVC SPS states from a
// codec configuration (avcC, hvcC or Annex B) in the worker and the decoder branch. Input: one byte choosing the
// framing (bit 0: Annex B, else an avcC record of the length in the next byte), then the record — also read as
// an H.264 and as an HEVC configuration — then access units, each after a one-byte length.
// Invariants, beyond "never traps": nothing is disposable unless every SPS seen declared the reordering; a unit
// without a slice NAL unit is never disposable; a colour read from a configuration names range 1 or 2, and a
// track's colour is the container's or, for HEVC, the SPS's whole.
import MediaIndex
import MediaVocabulary

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // The SPS and PPS of an ffmpeg libx264 64x48 clip (High, VUI with timing and bitstream_restriction).
        let sps: [UInt8] = [0x67, 0x64, 0x00, 0x0A, 0xAC, 0xD9, 0x44, 0x7B, 0x01, 0x10, 0x00, 0x00, 0x03, 0x00, 0x10,
                            0x00, 0x00, 0x03, 0x03, 0xC0, 0xF1, 0x22, 0x59, 0x60]
        let pps: [UInt8] = [0x68, 0xEB, 0xE3, 0xCB, 0x22, 0xC0]
        let avcC: [UInt8] = [1, 0x64, 0, 0x0A, 0xFF, 0xE1, 0, UInt8(sps.count)] + sps + [1, 0, UInt8(pps.count)] + pps
        let b: [UInt8] = [0, 0, 0, 5, 0x01, 0x9E, 0x21, 0x42, 0x88]  // a non-reference slice, length-prefixed
        let p: [UInt8] = [0, 0, 0, 5, 0x41, 0x9A, 0x21, 0x42, 0x88]
        let annexB: [UInt8] = [0, 0, 0, 1] + sps + [0, 0, 1] + pps + [0, 0, 1, 0x65, 0x88, 0x84, 0x21]
        // The VPS, SPS (VUI: full range, BT.709) and PPS of an ffmpeg libx265 160x90 clip, as hvcC and Annex B.
        let vps: [UInt8] = [0x40, 0x01, 0x0C, 0x01, 0xFF, 0xFF, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x90, 0x00, 0x00,
                            0x03, 0x00, 0x00, 0x03, 0x00, 0x1E, 0x95, 0x98, 0x09]
        let hevcSPS: [UInt8] = [0x42, 0x01, 0x01, 0x01, 0x60, 0x00, 0x00, 0x03, 0x00, 0x90, 0x00, 0x00, 0x03, 0x00, 0x00,
                                0x03, 0x00, 0x1E, 0xA0, 0x14, 0x20, 0x61, 0xF2, 0x65, 0x95, 0x9A, 0x49, 0x32, 0xBC, 0x05,
                                0xB8, 0x08, 0x08, 0x08, 0x20, 0x00, 0x00, 0x03, 0x00, 0x20, 0x00, 0x00, 0x03, 0x03, 0x21]
        let hevcPPS: [UInt8] = [0x44, 0x01, 0xC1, 0x72, 0xB4, 0x62, 0x40]
        var hvcC: [UInt8] = [1, 0x01, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 0x1E, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 3]
        for nal in [vps, hevcSPS, hevcPPS] { hvcC += [0x80 | nal[0] >> 1, 0, 1, 0, UInt8(nal.count)] + nal }
        let hevcAnnexB = [0, 0, 0, 1] + vps + [0, 0, 1] + hevcSPS + [0, 0, 1] + hevcPPS
        return [[0, UInt8(avcC.count)] + avcC + [UInt8(b.count)] + b + [UInt8(p.count)] + p,
                [1, UInt8(annexB.count)] + annexB + [8, 0, 0, 1, 0x01, 0x9E, 0x21, 0x42, 0x88],
                [0, UInt8(hvcC.count)] + hvcC, [1, UInt8(hevcAnnexB.count)] + hevcAnnexB]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzH264(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var r = FuzzBytes(fuzzInput(data, size))
    let annexB = r.u8() & 1 == 1
    let head = r.take(Int(r.u8()))
    checkStatedColour(head)
    var pictures: H264Pictures
    if annexB {
        pictures = H264Pictures(framing: .annexB)
        _ = pictures.isDisposable(head)
    } else {
        guard let fromRecord = H264Pictures(avcC: head) else { return 0 }
        pictures = fromRecord
    }
    while !r.isAtEnd {
        let unit = r.take(Int(r.u8()))
        let disposable = pictures.isDisposable(unit)
        check(!disposable || pictures.reorderDeclared, "disposable without a declared reordering")
        var slices = 0
        _ = pictures.forEachNAL(in: unit) { nal in if let h = nal.first, (1...5).contains(h & 0x1F) { slices += 1 } }
        check(!disposable || slices > 0, "disposable without a slice")
    }
    return 0
}

/// VideoSignalType on `configuration` as an H.264 and as an HEVC configuration.
func checkStatedColour(_ configuration: [UInt8]) {
    let container = Colorimetry(range: 0, matrix: 5, primaries: 4, transfer: 7)
    for type in [VideoSignalType(avcC: configuration), VideoSignalType(hevcConfiguration: configuration)] {
        if let type { check((1...2).contains(type.applied(to: container).range), "a stated range that is neither") }
    }
    let hevc = VideoSignalType.colour(of: "hvc1", configuration: configuration, over: container)
    let stated = VideoSignalType(hevcConfiguration: configuration)
    check(hevc == (stated?.wholeColorimetry ?? container).normalized, "HEVC colour neither the SPS's nor the container's")
    check(hevc.normalized == hevc, "HEVC colour with a code point that states nothing")
}
