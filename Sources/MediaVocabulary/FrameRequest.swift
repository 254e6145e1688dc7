/// One frame asked for by ReadFrames: the frame shown at a time, or the frame with an index (0-based, in
/// presentation order, counting every frame of the track).
public enum FrameRequest: Sendable, Equatable, Hashable {
    case time(MediaTime)
    case index(UInt64)
}
