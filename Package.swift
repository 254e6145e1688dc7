// swift-tools-version:6.0
// trackd — AVAssetReader for Linux. See docs/ARCHITECTURE.md for the map of these targets.
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]
let package = Package(
    name: "trackd",
    products: [
        .executable(name: "trackd", targets: ["trackd"]),
        .executable(name: "trackctl", targets: ["trackctl"]),
        .library(name: "TrackClient", targets: ["TrackClient"]),
    ],
    targets: [
        // ── C: system libraries (Debian packages through pkg-config) ──────────────────────────
        // gstreamer-1.0 requires GLib's gmodule-no-export-2.0, whose -pthread SwiftPM drops with a warning on every
        // build: make runs SwiftPM with a copy of that .pc file without it (scripts/pkgconfig-without-pthread.sh).
        .systemLibrary(
            name: "CGStreamer", path: "Sources/CGStreamer",
            pkgConfig: "gstreamer-1.0 gstreamer-app-1.0 gstreamer-video-1.0 gstreamer-audio-1.0 gstreamer-pbutils-1.0 gstreamer-tag-1.0",
            providers: [.apt(["libgstreamer1.0-dev", "libgstreamer-plugins-base1.0-dev"])]),
        .systemLibrary(
            name: "CSystemd", path: "Sources/CSystemd", pkgConfig: "libsystemd",
            providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(
            name: "CMD5", path: "Sources/CMD5", pkgConfig: "libmd",
            providers: [.apt(["libmd-dev"])]),
        .systemLibrary(
            name: "CSeccomp", path: "Sources/CSeccomp", pkgConfig: "libseccomp",
            providers: [.apt(["libseccomp-dev"])]),
        .systemLibrary(
            name: "COrc", path: "Sources/COrc", pkgConfig: "orc-0.4",
            providers: [.apt(["liborc-0.4-dev"])]),
        .systemLibrary(
            name: "CSwscale", path: "Sources/CSwscale", pkgConfig: "libswscale libavutil",
            providers: [.apt(["libswscale-dev"])]),
        .systemLibrary(
            name: "CCairo", path: "Sources/CCairo", pkgConfig: "cairo",
            providers: [.apt(["libcairo2-dev"])]),
        .systemLibrary(
            name: "CVorbis", path: "Sources/CVorbis", pkgConfig: "vorbis",
            providers: [.apt(["libvorbis-dev"])]),
        .systemLibrary(
            name: "CJPEG", path: "Sources/CJPEG", pkgConfig: "libjpeg",
            providers: [.apt(["libjpeg62-turbo-dev"])]),
        // ── C: shims for what Swift cannot import (macros, varargs, cmsg) ──────────────────────
        .target(name: "CTrackSys", path: "Sources/CTrackSys"),
        .target(name: "CGstShim", dependencies: ["CGStreamer", "CTrackSys", "CSwscale"], path: "Sources/CGstShim"),
        .target(name: "CSandbox", dependencies: ["CSeccomp", "COrc"], path: "Sources/CSandbox"),
        .target(name: "CVorbisBlocks", dependencies: ["CVorbis"], path: "Sources/CVorbisBlocks"),
        // ── Swift: system calls — errno captured at the call, EINTR retried in one place, owned descriptors ──
        .target(name: "SystemCalls", dependencies: ["CTrackSys"], swiftSettings: strict),
        // ── Swift: the media vocabulary — times, time grids, four-character codes, track kinds, metadata, errors
        //    (pure: no system calls, no wire, no GStreamer) ──
        .target(name: "MediaVocabulary", swiftSettings: strict),
        // ── Swift: the wire, shared by both ends (no GStreamer); re-exports MediaVocabulary ───────────
        .target(
            name: "TrackdProtocol", dependencies: ["MediaVocabulary", "SystemCalls", "CTrackSys"], path: "Sources/Protocol",
            swiftSettings: strict),
        // ── Swift: frame indexes — MP4 sample tables, the frame a time names, decode planning (no GStreamer, no wire) ──
        .target(name: "MediaIndex", dependencies: ["MediaVocabulary", "SystemCalls", "CVorbisBlocks"], swiftSettings: strict),
        // ── Swift: the supervisor's frame-index cache and its worker channel (daemon-internal, no GStreamer) ──
        .target(name: "IndexCache", dependencies: ["SystemCalls", "MediaIndex"], swiftSettings: strict),
        // ── Swift: one output's pools, held slots and random-access state; the spare frame memories' policy (no GStreamer, no socket) ──
        .target(name: "SamplePools", dependencies: ["MediaIndex", "MediaVocabulary"], swiftSettings: strict),
        // ── Swift: the only module that touches GStreamer (worker side) ───────────────────────
        .target(name: "GstBridge", dependencies: ["TrackdProtocol", "MediaIndex", "SamplePools", "SystemCalls", "CGStreamer", "CGstShim"], swiftSettings: strict),
        // ── Swift: client library with an AVFoundation-shaped API ─────────────────────────────
        .target(name: "TrackClient", dependencies: ["TrackdProtocol", "SystemCalls"], swiftSettings: strict),
        // ── Processes ─────────────────────────────────────────────────────────────────────────
        .executableTarget(
            name: "trackd",
            dependencies: [
                "TrackdProtocol", "GstBridge", "IndexCache", "MediaIndex", "SamplePools", "SystemCalls", "CTrackSys", "CSystemd",
                "CSandbox",
            ],
            swiftSettings: strict),
        .executableTarget(name: "trackctl", dependencies: ["TrackClient", "TrackdProtocol", "SystemCalls", "CMD5", "CCairo", "CJPEG"], swiftSettings: strict),
        // ── Example: a typical AVAssetReader loop ported to TrackClient (run by ExampleTests) ────────
        .executableTarget(
            name: "trackd-example-reader", dependencies: ["TrackClient"],
            path: "Examples/trackd-example-reader", swiftSettings: strict),
        // ── Tests ─────────────────────────────────────────────────────────────────────────────
        // Shared by the test targets only: processes, the daemon (with its log check), media, oracles, waiting,
        // the seeded RNG and MD5.
        .target(name: "TestSupport", dependencies: ["TrackdProtocol", "SystemCalls", "CMD5"], path: "Tests/TestSupport", swiftSettings: strict),
        .testTarget(name: "SystemCallsTests", dependencies: ["SystemCalls", "TestSupport"], swiftSettings: strict),
        .testTarget(name: "TrackdProtocolTests", dependencies: ["TrackdProtocol", "SystemCalls", "CTrackSys", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "IndexCacheTests", dependencies: ["IndexCache", "MediaIndex", "CTrackSys", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "MediaIndexTests", dependencies: ["MediaIndex", "MediaVocabulary", "TestSupport"], swiftSettings: strict),
        // Test-only C: the worker's sandbox entered in a forked child that then tries one memory operation.
        .target(name: "CSandboxProbe", dependencies: ["CSandbox", "COrc"], path: "Tests/CSandboxProbe"),
        .testTarget(name: "SandboxFilterTests", dependencies: ["CSandboxProbe", "TestSupport"], swiftSettings: strict),
        .testTarget(
            name: "SamplePoolsTests", dependencies: ["SamplePools", "MediaIndex", "MediaVocabulary", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "GstBridgeTests", dependencies: ["GstBridge", "MediaIndex", "TrackdProtocol", "CGStreamer", "TestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "IntegrationTests", dependencies: ["TrackClient", "TrackdProtocol", "SystemCalls", "CTrackSys", "CMD5", "TestSupport"],
            swiftSettings: strict),
    ]
)
