// The shared helpers (Daemon, Child, Env, Media, Oracle, waitUntil, SplitMix64, md5Hex) live in TestSupport; this
// re-export keeps them visible to a test file of this target that does not import TestSupport itself.
@_exported import TestSupport
import Foundation
import TestSupport
import Testing
import TrackClient

/// Expects `body` to throw an AssetReaderUsageError (AVFoundation's exception) with exactly this name and message.
func usage(_ name: AssetReaderUsageError.Name, _ message: String, _ body: () throws -> Void,
           sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        try body()
        Issue.record("expected \(message)", sourceLocation: sourceLocation)
    } catch let error as AssetReaderUsageError {
        #expect(error.name == name, sourceLocation: sourceLocation)
        #expect(error.message == message, sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected an AssetReaderUsageError, got \(error)", sourceLocation: sourceLocation)
    }
}
