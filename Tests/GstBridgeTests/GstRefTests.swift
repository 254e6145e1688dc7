import CGStreamer
@testable import GstBridge
import TestSupport
import Testing

/// GstRef holds exactly one reference, taken as its initializer says, and drops it in deinit.
@Suite(.timeLimit(.minutes(TestLimits.minutes)), .endsTheRunIfItHangs) struct GstRefTests {
    init() throws { try Gst.initialize() }

    static func refcount(_ caps: UnsafeMutablePointer<GstCaps>) -> Int32 { caps.pointee.mini_object.refcount }

    static func refcount(_ element: UnsafeMutablePointer<GstElement>) -> UInt32 {
        UnsafeMutablePointer<GObject>(OpaquePointer(element)).pointee.ref_count
    }

    @Test func fullTakesOverTheCallersReferenceAndNoneTakesItsOwn() {
        let owner = GstRef<GstCapsObject>(full: gst_caps_new_empty_simple("video/x-raw")!)
        #expect(Self.refcount(owner.pointer) == 1)
        do {
            let borrowed = GstRef<GstCapsObject>(none: owner.pointer)
            #expect(Self.refcount(owner.pointer) == 2)
            withExtendedLifetime(borrowed) {}
        }
        #expect(Self.refcount(owner.pointer) == 1, "the borrowed reference was dropped with its GstRef")
    }

    @Test func floatingSinksTheNewObjectsReference() throws {
        let element = try makeElement("queue")
        #expect(g_object_is_floating(element.pointer) == 0)
        #expect(Self.refcount(element.pointer) == 1)
    }

    @Test func aBinTakesAReferenceOfItsOwn() throws {
        let pipeline = try Pipeline()
        let element = try makeElement("queue")
        try pipeline.addChain([element])
        #expect(Self.refcount(element.pointer) == 2)
        withExtendedLifetime(pipeline) {}
    }
}
