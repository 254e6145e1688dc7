/// A programming error AVFoundation answers with an exception: the same message, thrown instead of trapping.
/// `name` is the Objective-C exception name (NSInvalidArgumentException or NSInternalInconsistencyException).
public struct AssetReaderUsageError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Name: String, Sendable, Hashable {
        case invalidArgument = "NSInvalidArgumentException"
        case internalInconsistency = "NSInternalInconsistencyException"
    }

    public let name: Name
    public let message: String

    public init(_ name: Name, _ message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name.rawValue): \(message)" }
}
