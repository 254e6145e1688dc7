import CGStreamer
import Foundation
@testable import GstBridge
import TestSupport
import Testing

/// trackdswscale as an element alone, fed raw frames ffmpeg made (rawvideoparse) and written by filesink, which
/// offers no buffer pool: what it converts is ffmpeg's conversion byte for byte, what it does not convert passes
/// through untouched, and its output caps say what videoconvert's would.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct SwscaleElementTests {
    init() throws { try Gst.initialize() }

    static let (w, h, frames) = (322, 242, 3)

    /// Runs a gst-launch description to its end; fails the test with the first error.
    func launch(_ description: String) throws {
        var error: UnsafeMutablePointer<GError>?
        guard let pipeline = gst_parse_launch(description, &error) else {
            throw FixtureError(message: "gst_parse_launch: \(error.map { String(cString: $0.pointee.message) } ?? "?")")
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        let bus = gst_element_get_bus(pipeline)
        defer { gst_object_unref(bus) }
        gst_element_set_state(pipeline, GST_STATE_PLAYING)
        let kinds = GstMessageType(rawValue: GST_MESSAGE_EOS.rawValue | GST_MESSAGE_ERROR.rawValue)
        guard let message = gst_bus_timed_pop_filtered(bus, 20_000_000_000, kinds) else {
            throw FixtureError(message: "no EOS within 20 s: \(description)")
        }
        defer { gst_message_unref(message) }
        if message.pointee.type == GST_MESSAGE_ERROR {
            var e: UnsafeMutablePointer<GError>?
            gst_message_parse_error(message, &e, nil)
            defer { g_clear_error(&e) }
            throw FixtureError(message: "\(e.map { String(cString: $0.pointee.message) } ?? "error"): \(description)")
        }
    }

    /// ffmpeg's `frames` frames of testsrc2 in `pixFmt`, tightly packed, in a file of the test case's own (`name`: cases
    /// run at once, and one must not rewrite a file another reads); and the rawvideoparse that reads them (format,
    /// plane strides and offsets of the tight layout, BT.601 video range).
    func rawInput(_ pixFmt: String, _ gstFormat: String, planes: [(stride: Int, height: Int)],
                  name: String) throws -> (String, String) {
        let path = Fixtures.directory.appendingPathComponent("element-in-\(name)-\(Self.w)x\(Self.h).raw").path
        try Fixtures.run("ffmpeg", ["-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=\(Self.w)x\(Self.h)",
                                    "-frames:v", "\(Self.frames)", "-pix_fmt", pixFmt, "-f", "rawvideo", path])
        var offsets: [Int] = [], offset = 0
        for p in planes {
            offsets.append(offset)
            offset += p.stride * p.height
        }
        let parse = "filesrc location=\(path) ! rawvideoparse format=\(gstFormat.lowercased()) width=\(Self.w) height=\(Self.h) "
            + "framerate=30/1 colorimetry=bt601 frame-size=\(offset) "
            + "plane-strides=\"<\(planes.map { String($0.stride) }.joined(separator: ","))>\" "
            + "plane-offsets=\"<\(offsets.map(String.init).joined(separator: ","))>\""
        return (path, parse)
    }

    /// The rows of a file of `frames` frames whose rows hold `rowBytes` visible bytes each (the stride: the file's
    /// size over its rows).
    func tightRows(_ path: String, rowBytes: Int) throws -> [UInt8] {
        let data = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        let stride = data.count / (Self.frames * Self.h)
        #expect(stride >= rowBytes && data.count == stride * Self.frames * Self.h, "\(data.count) bytes")
        return (0..<(Self.frames * Self.h)).flatMap { data[$0 * stride..<$0 * stride + rowBytes] }
    }

    /// 322 pixels: rows with no room for libswscale's last 8-pixel group unless padded (or converted aside).
    @Test(arguments: [("BGR", "bgr24", 3), ("BGRA", "bgra", 4)] as [(String, String, Int)])
    func i420IsFFmpegsConversion(_ format: String, _ pixFmt: String, _ bytes: Int) throws {
        let (input, parse) = try rawInput("yuv420p", "I420", planes: [(Self.w, Self.h), (Self.w / 2, Self.h / 2),
                                                                      (Self.w / 2, Self.h / 2)],
                                          name: format)
        let out = Fixtures.directory.appendingPathComponent("element-out-\(format).raw").path
        try launch("\(parse) ! trackdswscale caps=\"video/x-raw,format=\(format)\" ! filesink location=\(out)")
        let theirs = try Fixtures.run("ffmpeg", ["-nostdin", "-v", "error", "-f", "rawvideo", "-pix_fmt", "yuv420p",
                                                 "-s", "\(Self.w)x\(Self.h)", "-i", input, "-vf",
                                                 "scale=in_color_matrix=bt601:in_range=tv", "-pix_fmt", pixFmt,
                                                 "-f", "rawvideo", "-"])
        #expect(try tightRows(out, rowBytes: Self.w * bytes) == [UInt8](theirs))
    }

    /// NV12 and 4:4:4 (which libswscale converts on its slower generic path) pass through as they came.
    @Test(arguments: [("nv12", "NV12"), ("yuv444p", "Y444")] as [(String, String)])
    func otherInputsPassThrough(_ pixFmt: String, _ format: String) throws {
        let planes = format == "NV12" ? [(Self.w, Self.h), (Self.w, Self.h / 2)] : [(Self.w, Self.h), (Self.w, Self.h), (Self.w, Self.h)]
        let (input, parse) = try rawInput(pixFmt, format, planes: planes, name: format)
        let out = Fixtures.directory.appendingPathComponent("element-out-\(format).raw").path
        try launch("\(parse) ! trackdswscale caps=\"video/x-raw,format=BGRA\" ! filesink location=\(out)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == (try Data(contentsOf: URL(fileURLWithPath: input))))
    }

    /// An odd width at the same size passes through (libswscale's C path leaves an odd row's last pixel unwritten);
    /// an even one, and an odd one scaled to another size, are converted. Told apart by size: an I420 frame of these is
    /// under half a BGRA one (their bytes are not compared: the rows' padding is not written).
    @Test(arguments: [(171, "", true), (172, "", false), (171, ",width=170,height=96", false)] as [(Int, String, Bool)])
    func oddWidthsPassThroughUnscaled(_ width: Int, _ size: String, _ passes: Bool) throws {
        let source = "videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=\(width),height=96"
        let (plain, ours) = (Fixtures.directory.appendingPathComponent("element-odd-\(width)\(size.isEmpty)-in.raw").path,
                             Fixtures.directory.appendingPathComponent("element-odd-\(width)\(size.isEmpty)-out.raw").path)
        try launch("\(source) ! filesink location=\(plain)")
        try launch("\(source) ! trackdswscale caps=\"video/x-raw,format=BGRA\(size)\" ! filesink location=\(ours)")
        let (a, b) = (try Data(contentsOf: URL(fileURLWithPath: plain)), try Data(contentsOf: URL(fileURLWithPath: ours)))
        #expect((a.count == b.count) == passes, "\(width)\(size): \(a.count) and \(b.count) bytes")
    }

    /// The caps that reach the sink when `converter` (a gst-launch fragment) makes BGRA of `input` caps: read from
    /// the sink's pad once the pipeline has prerolled.
    func outputCaps(_ input: String, _ converter: String) throws -> String {
        guard let pipeline = gst_parse_launch("videotestsrc num-buffers=1 ! \(input) ! \(converter) ! "
                                              + "video/x-raw,format=BGRA ! fakesink name=sink", nil) else {
            throw FixtureError(message: "gst_parse_launch failed")
        }
        defer {
            gst_element_set_state(pipeline, GST_STATE_NULL)
            gst_object_unref(pipeline)
        }
        gst_element_set_state(pipeline, GST_STATE_PAUSED)
        gst_element_get_state(pipeline, nil, nil, 10_000_000_000)
        let bin = UnsafeMutablePointer<GstBin>(OpaquePointer(pipeline))
        let sink = try #require(gst_bin_get_by_name(bin, "sink"))
        defer { gst_object_unref(sink) }
        let pad = try #require(gst_element_get_static_pad(sink, "sink"))
        defer { gst_object_unref(pad) }
        let caps = try #require(gst_pad_get_current_caps(pad))
        defer { gst_caps_unref(caps) }
        let text = gst_caps_to_string(caps)!
        defer { g_free(text) }
        return String(cString: text)
    }

    /// YCbCr → RGB keeps the input's primaries and transfer function with RGB's range and matrix, and states no
    /// colorimetry when the input states none, as videoconvert does (the Sample then reports sRGB).
    @Test(arguments: ["", ",colorimetry=bt709", ",colorimetry=bt601", ",colorimetry=bt2020", ",colorimetry=1:4:0:0"])
    func outputCapsAreVideoconverts(_ colorimetry: String) throws {
        let input = "video/x-raw,format=I420,width=64,height=48\(colorimetry)"
        let ours = try outputCaps(input, "trackdswscale caps=\"video/x-raw,format=BGRA\" ! videoconvert")
        #expect(ours == (try outputCaps(input, "videoconvert")), "\(input)")
    }
}
