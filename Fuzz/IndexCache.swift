// libFuzzer target `indexcache`: the frame-index cache's wire (IndexCacheWire): frame-index blobs, file
// description blobs, and the worker's GET/PUT requests — what the supervisor reads from a possibly compromised
// worker. Invariants, beyond "never traps":
//  - a blob that decodes re-encodes to exactly its bytes (the format is canonical), decodes the same from a
//    slice that does not start at index 0, and makes a FrameIndex the planner handles;
//  - the same for description blobs, file keys and requests; isValidBlob agrees with the decoders.
import IndexCache
import MediaIndex

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        typealias F = FrameIndex.Frame
        let ipbb: [F] = [F(presentationTime: 0, duration: 40, isSync: true, decodePosition: 0),
                         F(presentationTime: 40, duration: 40, isSync: false, decodePosition: 2),
                         F(presentationTime: 80, duration: 40, isSync: false, decodePosition: 3),
                         F(presentationTime: 120, duration: 40, isSync: false, decodePosition: 1)]
        let one = [F(presentationTime: -5, duration: 0, isSync: false, decodePosition: 0)]
        let key = IndexCacheWire.FileKey(device: 2049, inode: 1234, size: 1 << 20, mtimeSeconds: 1_700_000_000,
                                         mtimeNanoseconds: 999_999_999, trackID: 1)
        return [IndexCacheWire.encode(ipbb)!, IndexCacheWire.encode(one)!,
                IndexCacheWire.encodeDescription(Array("GStreamer 1.22.0\u{0}payload".utf8))!,
                IndexCacheWire.request(.get, key), IndexCacheWire.request(.put, key), key.encoded,
                IndexCacheWire.StoreKey(uid: 1000, file: key).encoded]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIndexCache(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzInput(data, size)
    let shifted = ([0x55] + input)[1...]  // the same bytes, at indices 1 …
    let frames = checkFrameBlob(input, shifted)
    let description = IndexCacheWire.decodeDescription(input)
    if let description {
        check(IndexCacheWire.encodeDescription(description) == input, "a description re-encodes differently")
    }
    check(IndexCacheWire.isValidBlob(input) == (frames != nil || description != nil), "isValidBlob disagrees with the decoders")
    for bytes in [input[...], shifted] {
        if let key = IndexCacheWire.FileKey(decoding: bytes) { check(key.encoded[...] == bytes, "a file key re-encodes differently") }
        if let key = IndexCacheWire.StoreKey(decoding: bytes) {
            check(key.encoded[...] == bytes, "a store key re-encodes differently")
            check(key.hashName.utf8.count == 16, "hash name \(key.hashName)")
        }
        if let (op, key) = IndexCacheWire.parseRequest(bytes) {
            check(IndexCacheWire.request(op, key)[...] == bytes, "a request re-encodes differently")
        }
    }
    return 0
}

/// The frames `input` decodes to (nil: refused), checked against the same bytes at a shifted index.
func checkFrameBlob(_ input: [UInt8], _ shifted: ArraySlice<UInt8>) -> [FrameIndex.Frame]? {
    let result = Result { () throws(IndexCacheWire.DecodeError) in try IndexCacheWire.decode(input) }
    let fromSlice = Result { () throws(IndexCacheWire.DecodeError) in try IndexCacheWire.decode(shifted) }
    check(result == fromSlice, "decoding from a slice differs")
    guard case .success(let frames) = result else { return nil }
    check(IndexCacheWire.encode(frames) == input, "a frame-index blob re-encodes differently")
    // What the cache accepts, the worker plans with: the planner must handle it (and its first and last frames).
    let index = FrameIndex(frames: frames)
    let wanted: Set<Int> = [0, frames.count - 1, frames.count / 2]
    let plan = index.plan(wanted)
    check(!plan.isEmpty && plan.count <= wanted.count, "\(plan.count) ranges for \(wanted.count) frames")
    return frames
}
