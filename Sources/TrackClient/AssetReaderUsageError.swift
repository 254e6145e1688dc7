/// A programming error AVFoundation answers with an exception: the same message, thrown instead of trapping.
/// `name` is the Objective-C exception name (NSInvalidArgumentException or NSInternalInconsistencyException).
///
/// Thrown before anything is sent to trackd, so nothing changes: the reader and outputs are as they were.
/// Failures of reading itself are `TrackError`s reported through ``AssetReader/error``. A plain value, `Sendable`.
public struct AssetReaderUsageError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The Objective-C exception AVFoundation raises for the same misuse.
    public enum Name: String, Sendable, Hashable {
        /// An argument is wrong (for example time ranges out of order).
        case invalidArgument = "NSInvalidArgumentException"
        /// The call is not allowed in the current state (for example adding an output after reading started).
        case internalInconsistency = "NSInternalInconsistencyException"
    }

    /// Which exception AVFoundation would raise.
    public let name: Name
    /// AVFoundation's message, word for word, starting with the selector (`-[AVAssetReader addOutput:] …`); or
    /// trackd's own for a misuse AVFoundation does not detect (every slot held: "all 8 frames of this output are
    /// held: …").
    public let message: String

    /// Makes an error; TrackClient throws these, applications rarely need to.
    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    /// "NAME: message", as the exception would be logged.
    public var description: String { "\(name.rawValue): \(message)" }
}
