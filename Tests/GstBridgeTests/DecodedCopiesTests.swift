import CGStreamer
import CGstShim
import Foundation
@testable import GstBridge
import TestSupport
import Testing

/// The allocator trackdswscale offers the decoder (CGstShim/DecodedCopies.c): a whole copy of a memory mapped for
/// writing is a read-only view of its bytes, and writing the memory again first gives it bytes of its own.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct DecodedCopiesTests {
    init() throws { try Gst.initialize() }

    static let size = 4096

    /// A memory of the allocator, every byte `value`.
    func memory(filled value: UInt8) throws -> UnsafeMutablePointer<GstMemory> {
        let allocator = swift_gst_decoded_allocator()
        defer { gst_object_unref(allocator) }
        let memory = try #require(gst_allocator_alloc(allocator, gsize(Self.size), nil))
        try fill(memory, value)
        return memory
    }

    func fill(_ memory: UnsafeMutablePointer<GstMemory>, _ value: UInt8) throws {
        var info = GstMapInfo()
        try #require(gst_memory_map(memory, &info, GST_MAP_WRITE) != 0)
        info.data.initialize(repeating: value, count: Int(info.size))
        gst_memory_unmap(memory, &info)
    }

    /// The memory's bytes (nil: it cannot be mapped for reading) and where they are.
    func bytes(_ memory: UnsafeMutablePointer<GstMemory>) -> (Set<UInt8>, UnsafeMutablePointer<guint8>)? {
        var info = GstMapInfo()
        guard gst_memory_map(memory, &info, GST_MAP_READ) != 0 else { return nil }
        defer { gst_memory_unmap(memory, &info) }
        return (Set(UnsafeBufferPointer(start: info.data, count: Int(info.size))), info.data)
    }

    func writable(_ memory: UnsafeMutablePointer<GstMemory>) -> Bool {
        var info = GstMapInfo()
        guard gst_memory_map(memory, &info, GST_MAP_WRITE) != 0 else { return false }
        gst_memory_unmap(memory, &info)
        return true
    }

    /// The decoder's case: a buffer held by the picture's mapping for writing (gst-libav keeps libav's pictures so)
    /// made writable by GstVideoDecoder: the buffer it pushes has a view of the same bytes, not a copy of them.
    @Test func aBufferMadeWritableWhileMappedSharesTheBytes() throws {
        let memory = try memory(filled: 7)
        let buffer = try #require(gst_buffer_new())
        gst_buffer_append_memory(buffer, memory)
        var held = GstMapInfo()
        try #require(gst_buffer_map(buffer, &held, GstMapFlags(rawValue: GST_MAP_READ.rawValue | GST_MAP_WRITE.rawValue)) != 0)
        let views = swift_gst_decoded_views()
        gst_buffer_ref(buffer)
        let made = gst_mini_object_make_writable(UnsafeMutablePointer<GstMiniObject>(OpaquePointer(buffer)))
        let pushed = try #require(UnsafeMutablePointer<GstBuffer>(OpaquePointer(made)))
        #expect(pushed != buffer)
        let view = try #require(gst_buffer_peek_memory(pushed, 0))
        let seen = try #require(bytes(view))
        #expect(seen.0 == [7] && seen.1 == held.data, "the pushed buffer's bytes are the decoded ones")
        #expect(swift_gst_decoded_views() > views)
        #expect(!writable(view), "a view is read-only")
        gst_buffer_unmap(buffer, &held)
        gst_buffer_unref(buffer)
        gst_buffer_unref(pushed)
    }

    /// Copy on write: once the view is made, writing the memory gives it new bytes; the view keeps the old ones. A
    /// copy of the view is a real copy, writable.
    @Test func writingAfterAViewLeavesTheViewAsItWas() throws {
        let memory = try memory(filled: 1)
        defer { gst_memory_unref(memory) }
        let view = try #require(gst_memory_copy(memory, 0, -1))
        defer { gst_memory_unref(view) }
        #expect(bytes(view)?.1 == bytes(memory)?.1, "a whole copy is a view of the same bytes")
        try fill(memory, 2)
        #expect(bytes(memory)?.0 == [2])
        #expect(bytes(view)?.0 == [1], "the view is not written through")
        #expect(bytes(view)?.1 != bytes(memory)?.1)
        let copy = try #require(gst_memory_copy(view, 0, -1))
        defer { gst_memory_unref(copy) }
        #expect(bytes(copy)?.0 == [1] && bytes(copy)?.1 != bytes(view)?.1 && writable(copy))
        let part = try #require(gst_memory_copy(memory, 16, 32))
        defer { gst_memory_unref(part) }
        #expect(part.pointee.size == 32 && bytes(part)?.0 == [2] && writable(part), "part of a memory: a real copy")
    }

    /// In a decode chain (avdec_h264 rendering directly into trackdswscale's pool): the pictures reach trackdswscale
    /// as views, and the conversion's bytes are those of the same chain without direct rendering (copies).
    @Test func decodedPicturesReachTheConverterAsViews() throws {
        let out = { (name: String) in Fixtures.directory.appendingPathComponent("decoded-copies-\(name).raw").path }
        let chain = { (direct: Bool, name: String) in
            "filesrc location=\(Media.clip) ! qtdemux ! h264parse ! avdec_h264 max-threads=2 direct-rendering=\(direct) "
                + "! queue ! trackdswscale caps=\"video/x-raw,format=BGR\" ! video/x-raw,format=BGR ! filesink location=\(out(name))"
        }
        let views = swift_gst_decoded_views()
        try SwscaleElementTests().launch(chain(true, "direct"))
        let made = swift_gst_decoded_views() - views
        try SwscaleElementTests().launch(chain(false, "copied"))
        let direct = try Data(contentsOf: URL(fileURLWithPath: out("direct")))
        let copied = try Data(contentsOf: URL(fileURLWithPath: out("copied")))
        let frames = 60, frameBytes = 320 * 240 * 3
        #expect(direct.count == frames * frameBytes && direct == copied)
        // The first pictures come before the decoder chose its pool (gst-libav copies those); views made by other
        // tests running at once only add.
        #expect(made >= UInt64(frames - 10), "\(made) views for \(frames) pictures")
    }
}
