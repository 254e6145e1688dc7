// Ownership as a type: a GstRef holds exactly one reference on a GStreamer object and drops it in deinit. How the
// reference was obtained is named where the GstRef is made — GStreamer's "transfer" annotations:
//   GstRef(full: p)      the caller's reference is taken over (functions documented "transfer full")
//   GstRef(none: p)      a borrowed pointer ("transfer none"): a reference of its own is taken
//   GstRef(floating: p)  a new GstObject (elements, pads): its floating reference is sunk and taken over
import CGStreamer
import CGstShim

/// A GStreamer type whose instances are reference-counted. The conforming types are Swift-side names for the C
/// structs (`GstElementObject` for GstElement …): the C structs hold raw pointers, which makes them unsafe types
/// under strict memory safety, and `GstRef<GstElementObject>` keeps them out of every signature that uses a GstRef.
/// The conformances are @unsafe: `Pointer` is a raw pointer, touched only by GstRef and the wrappers
/// (GstObjects.swift, Probes.swift, Caps.swift's CapsView).
protocol GstRefCounted {
    associatedtype Pointer: Equatable
    static func ref(_ pointer: Pointer)
    static func unref(_ pointer: Pointer)
}

/// GstObject subclasses (elements, pads, buses, allocators). New instances are floating.
protocol GstObjectType: GstRefCounted where Pointer == UnsafeMutablePointer<Struct> {
    associatedtype Struct
}

extension GstObjectType {
    static func ref(_ pointer: Pointer) { _ = unsafe gst_object_ref(pointer) }
    static func unref(_ pointer: Pointer) { unsafe gst_object_unref(pointer) }
    static func refSink(_ pointer: Pointer) { _ = unsafe gst_object_ref_sink(pointer) }
}

enum GstElementObject: @unsafe GstObjectType { typealias Struct = GstElement }
enum GstPadObject: @unsafe GstObjectType { typealias Struct = GstPad }
enum GstBusObject: @unsafe GstObjectType { typealias Struct = GstBus }
enum GstAllocatorObject: @unsafe GstObjectType { typealias Struct = GstAllocator }
enum GstStreamCollectionObject: @unsafe GstObjectType { typealias Struct = GstStreamCollection }

/// GstMiniObject subclasses (caps, messages, events, buffers).
protocol GstMiniObjectType: GstRefCounted where Pointer == UnsafeMutablePointer<Struct> {
    associatedtype Struct
}

extension GstMiniObjectType {
    static func ref(_ pointer: Pointer) { _ = unsafe gst_mini_object_ref(UnsafeMutablePointer(OpaquePointer(pointer))) }
    static func unref(_ pointer: Pointer) { unsafe gst_mini_object_unref(UnsafeMutablePointer(OpaquePointer(pointer))) }
}

enum GstCapsObject: @unsafe GstMiniObjectType { typealias Struct = GstCaps }
enum GstMessageObject: @unsafe GstMiniObjectType { typealias Struct = GstMessage }
enum GstEventObject: @unsafe GstMiniObjectType { typealias Struct = GstEvent }
enum GstBufferObject: @unsafe GstMiniObjectType { typealias Struct = GstBuffer }

/// GstSample, which Swift imports as an opaque pointer.
enum GstSampleObject: @unsafe GstRefCounted {
    static func ref(_ pointer: OpaquePointer) { _ = unsafe gst_sample_ref(pointer) }
    static func unref(_ pointer: OpaquePointer) { unsafe gst_sample_unref(pointer) }
}

/// One reference on a GStreamer object, dropped in deinit.
final class GstRef<T: GstRefCounted>: @unchecked Sendable {
    // @unchecked: GStreamer's reference counts are atomic, and the objects kept this way are used as GStreamer allows
    // from any thread (elements and pads through their own locks; caps and samples read-only once shared).
    let pointer: T.Pointer

    /// Transfer full: takes over the caller's reference.
    init(full pointer: T.Pointer) { self.pointer = pointer }

    /// Transfer none: `pointer` is borrowed; takes a reference of its own.
    init(none pointer: T.Pointer) {
        T.ref(pointer)
        self.pointer = pointer
    }

    deinit { T.unref(pointer) }
}

extension GstRef where T: GstObjectType {
    /// A new GstObject: sinks its floating reference and takes it over (a reference of its own if it was sunk).
    convenience init(floating pointer: T.Pointer) {
        unsafe T.refSink(pointer)
        unsafe self.init(full: pointer)
    }
}
