// libFuzzer target `wire`: the wire decoder (FrameDecoder → Codec.decodePayload), every message type.
// Input: a byte stream as a peer would send it. Invariants, beyond "never traps":
//  - a failure is a `.protocolViolation` TrackError;
//  - every decoded message re-encodes (Codec.frame) to bytes that decode to the same message, which re-encode
//    to the same bytes (messages holding a NaN compare by bytes only);
//  - feeding the same stream in small pieces yields the same frames and the same failure.
import TrackdProtocol

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // Every fixture message as one frame, and all of them as one stream.
        let frames = Fixtures.messages.enumerated().map { Codec.frame($1, requestID: UInt32($0)) }
        return frames + [frames.flatMap { $0 }]
    }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzWire(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = fuzzInput(data, size)
    // The first byte picks the piece size of the second pass (1 … 8 bytes); the stream is the whole input.
    let whole = decodeAll([input[...]])
    let piece = Int(input.first ?? 0) % 8 + 1
    let pieces = stride(from: 0, to: input.count, by: piece).map { input[$0..<min($0 + piece, input.count)] }
    let split = decodeAll(pieces)
    check(whole.frames.count == split.frames.count, "\(whole.frames.count) frames whole, \(split.frames.count) in pieces of \(piece)")
    for (a, b) in zip(whole.frames, split.frames) {
        check(Codec.frame(a.message, requestID: a.header.requestID) == Codec.frame(b.message, requestID: b.header.requestID),
              "a frame decodes differently in pieces of \(piece)")
    }
    check(whole.error == split.error, "whole: \(String(describing: whole.error)), pieces: \(String(describing: split.error))")
    // A message holding a NaN is not equal to its own copy: the round trip compares those by their bytes only.
    // (Compared with the copy decoded in pieces, never with itself: == on one array's storage skips the elements.)
    for (a, b) in zip(whole.frames, split.frames) { checkRoundTrip(a.message, a.header, comparable: a.message == b.message) }
    return 0
}

/// Feeds `pieces` in order, taking every complete frame out after each; stops at the first error.
func decodeAll(_ pieces: [ArraySlice<UInt8>]) -> (frames: [(header: FrameHeader, message: Message)], error: TrackError?) {
    var decoder = FrameDecoder(maxMessageSize: Wire.maxMessageSizeCeiling)
    var frames: [(header: FrameHeader, message: Message)] = []
    for piece in pieces {
        decoder.feed(piece)
        do {
            while let frame = try decoder.next() { frames.append(frame) }
        } catch {
            check(error.knownCode == .protocolViolation, "decoder threw \(error), not a protocol violation")
            return (frames, error)
        }
    }
    return (frames, nil)
}

/// decode → encode → decode → encode: the same message and the same bytes.
func checkRoundTrip(_ message: Message, _ header: FrameHeader, comparable: Bool) {
    check(message.type.rawValue == header.type, "decoded \(message.type) from a frame of type \(header.type)")
    let bytes = Codec.frame(message, requestID: header.requestID)
    var decoder = FrameDecoder(maxMessageSize: Wire.maxMessageSizeCeiling)
    decoder.feed(bytes)
    let again: (header: FrameHeader, message: Message)?
    do {
        again = try decoder.next()
    } catch {
        check(false, "re-encoded \(message.type) does not decode: \(error)")
        return
    }
    guard let again else { return check(false, "re-encoded \(message.type) is an incomplete frame") }
    check(decoder.pendingBytes == 0, "re-encoded \(message.type) leaves \(decoder.pendingBytes) bytes")
    check(again.header.requestID == header.requestID && again.header.type == header.type, "header changed")
    check(Codec.frame(again.message, requestID: header.requestID) == bytes, "\(message.type) re-encodes differently")
    if comparable { check(again.message == message, "\(message.type) round-trips to a different message") }
}
