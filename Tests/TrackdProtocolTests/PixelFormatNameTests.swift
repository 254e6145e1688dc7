import TrackdProtocol
import TestSupport
import Testing

/// The names people type for pixel formats (`PixelFormat.lookup`): CoreVideo's codes and constants, trackd's and
/// GStreamer's and ffmpeg's names, in any case, each naming one format; other libraries' layouts refused with what to
/// use instead; anything else unknown with the names close to it. Output settings keep Apple's exact spellings.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct PixelFormatNameTests {
    func code(_ name: String) -> String? {
        if case .format(let f) = PixelFormat.lookup(name) { return f.name }
        return nil
    }

    @Test func namesUsersTypeNameOneFormatEach() {
        let expected: [String: String] = [
            "nv12": "420v", "NV12": "420v", "yuv420p": "y420", "I420": "y420", "iyuv": "y420", "rgb24": "24RGB", "RGB": "24RGB",
            "rgb": "24RGB", "24RGB": "24RGB", "24": "24RGB", "0x18": "24RGB", "bgr24": "24BG", "BGR": "24BG", "bgra": "BGRA",
            "BGRA": "BGRA", "rgba": "RGBA", "argb": "32ARGB", "32ARGB": "32ARGB", "32": "32ARGB", "rgbp": "_RGP", "_rgp": "_RGP",
            "gbrp": "_GBP", "GBRP": "_GBP", "GBR": "_GBP", "_gbp": "_GBP", "kTrackdPixelFormatType_24GBRPlanar": "_GBP",
            "p010le": "x420", "P010_10LE": "x420", "nv16": "422v", "NV24": "444v", "uyvy422": "2vuy", "UYVY": "2vuy",
            "yuyv422": "yuvs", "YUY2": "yuvs", "gray": "L008", "GRAY8": "L008", "gray16le": "L016", "GRAY16_LE": "L016",
            "ayuv": "y408", "ayuv64le": "y416", "AYUV64": "y416", "rgba64le": "l64r", "ARGB64_BE": "b64a", "v210": "v210",
            "V216": "v216", "420V": "420v", "420f": "420f", "kcvpixelformattype_32bgra": "BGRA",
            "kCVPixelFormatType_420YpCbCr8Planar": "y420",
        ]
        for (name, code) in expected { #expect(self.code(name) == code, "\(name) names \(self.code(name) ?? "nothing"), not \(code)") }
    }

    /// No spelling, compared without case, belongs to two entries of the tables.
    @Test func everySpellingIsUnique() {
        var owner: [String: String] = [:]
        func claim(_ spelling: String, _ entry: String) {
            let key = spelling.lowercased()
            #expect(owner[key] == nil || owner[key] == entry, "\(spelling) names both \(owner[key] ?? "") and \(entry)")
            owner[key] = entry
        }
        for f in PixelFormat.all { for s in f.spellings { claim(s, f.name) } }
        for f in UnsupportedPixelFormat.all { claim(f.code.description, f.constantName); claim(f.constantName, f.constantName) }
        for r in RefusedPixelFormatName.all {
            for n in r.names { claim(n, r.reason) }
            #expect(r.instead.allSatisfy { name in PixelFormat.all.contains { $0.name == name } }, "\(r.instead)")
        }
        #expect(owner.count > 80)
    }

    @Test func otherLayoutsAreRefusedWithWhatToUse() {
        #expect(PixelFormat.lookup("gbrp10le").problem
                == "gbrp10le is not a trackd pixel format (no CoreVideo layout for planar RGB deeper than 8 bits); use l64r (rgba64le, rgba64_le) or b64a (argb64_be, argb64be)")
        #expect(PixelFormat.lookup("RGB48LE").problem
                == "RGB48LE is not a trackd pixel format (no CoreVideo layout for packed 16-bit RGB without alpha); use l64r (rgba64le, rgba64_le) or b64a (argb64_be, argb64be)")
        #expect(PixelFormat.lookup("yuv444p").problem
                == "yuv444p is not a trackd pixel format (no CoreVideo layout for planar 8-bit 4:4:4); use 444v (nv24) or y408 (ayuv)")
        #expect(PixelFormat.lookup("yuv422p").problem
                == "yuv422p is not a trackd pixel format (no CoreVideo layout for planar 8-bit 4:2:2); use 422v (nv16) or 2vuy (uyvy, uyvy422) or yuvs (yuy2, yuyv, yuyv422)")
        #expect(PixelFormat.lookup("YUV422P10LE").problem
                == "YUV422P10LE is not a trackd pixel format (no CoreVideo layout for planar 10-bit 4:2:2 (ProRes 422's decoder output)); use v210 or v216")
        #expect(PixelFormat.lookup("nv21").problem?.contains("use 420v (nv12)") == true)
        #expect(PixelFormat.lookup("YV12").problem
                == "YV12 is not a trackd pixel format (the Cr plane before the Cb plane); use y420 (i420, iyuv, yuv420p)")
        #expect(PixelFormat.lookup("gray10le").problem
                == "gray10le is not a trackd pixel format (luma in the low bits of 16-bit words; L016 uses all 16); use L016 (gray16le, gray16_le)")
        // CoreVideo formats GStreamer cannot produce keep their reason, in any case.
        #expect(PixelFormat.lookup("V308") == .unsupported(UnsupportedPixelFormat.named("v308")!))
    }

    @Test func unknownNamesListTheCloseOnes() {
        #expect(PixelFormat.lookup("yuv420").problem
                == "unknown pixel format yuv420; close: yuv420p (y420), yuyv422 (yuvs), yuv422p, yuv420p10le; `trackctl read --pixel-format list` shows them all")
        guard case .unknown(_, let close) = PixelFormat.lookup("nv20") else { Issue.record("nv20 is known"); return }
        #expect(close.starts(with: ["nv24 (444v)", "nv21"]) && close.contains("nv12 (420v)") && close.count <= 6, "\(close)")
        #expect(PixelFormat.lookup("bogus").problem == "unknown pixel format bogus; `trackctl read --pixel-format list` shows them all")
    }

    /// The wire keeps Apple's spellings: a name is turned into its code by the client, never sent as a string.
    @Test func outputSettingsTakeOnlyApplesSpellings() {
        #expect(PixelFormat.parse("nv12") == nil && PixelFormat.parse("bgra") == nil && PixelFormat.parse("24RGB") != nil)
        #expect(throws: TrackError.self) { try OutputSettings.validateVideo([SettingsKey.pixelFormatType: .string("nv12")]) }
    }

    @Test func editDistance() {
        #expect(PixelFormat.lookup("rgb32").problem?.contains("rgb24 (24RGB)") == true)
        #expect(PixelFormat.lookup("").problem == "unknown pixel format ; `trackctl read --pixel-format list` shows them all")
    }
}
