/// Core Audio's AudioChannelLayout (the value of AVChannelLayoutKey) reduced to what trackd applies: the speaker of
/// each output channel, in order. Parsed from the settings value (see `OutputSettings.channelCount(ofLayout:)` for
/// the two encodings); the worker maps each speaker to a GStreamer channel position and reorders the output to
/// this order.
public struct ChannelLayout: Sendable, Hashable {
    /// A speaker, by Core Audio's AudioChannelLabel numbering.
    public enum Speaker: UInt32, Sendable, Hashable, CaseIterable {
        case left = 1, right = 2, center = 3, lfe = 4, leftSurround = 5, rightSurround = 6
        case leftCenter = 7, rightCenter = 8, centerSurround = 9
        case leftSurroundDirect = 10, rightSurroundDirect = 11, topCenterSurround = 12
        case verticalHeightLeft = 13, verticalHeightCenter = 14, verticalHeightRight = 15
        case topBackLeft = 16, topBackCenter = 17, topBackRight = 18
        case rearSurroundLeft = 33, rearSurroundRight = 34, leftWide = 35, rightWide = 36, lfe2 = 37
        case mono = 42

        /// Core Audio's abbreviation, for messages: "L", "R", "C", "LFE", "Ls" …
        public var abbreviation: String {
            switch self {
            case .left: "L"
            case .right: "R"
            case .center: "C"
            case .lfe: "LFE"
            case .leftSurround: "Ls"
            case .rightSurround: "Rs"
            case .leftCenter: "Lc"
            case .rightCenter: "Rc"
            case .centerSurround: "Cs"
            case .leftSurroundDirect: "Lsd"
            case .rightSurroundDirect: "Rsd"
            case .topCenterSurround: "Ts"
            case .verticalHeightLeft: "Vhl"
            case .verticalHeightCenter: "Vhc"
            case .verticalHeightRight: "Vhr"
            case .topBackLeft: "Ltr"
            case .topBackCenter: "Ctr"
            case .topBackRight: "Rtr"
            case .rearSurroundLeft: "Rls"
            case .rearSurroundRight: "Rrs"
            case .leftWide: "Lw"
            case .rightWide: "Rw"
            case .lfe2: "LFE2"
            case .mono: "M"
            }
        }
    }

    /// The speaker of each channel, in output order.
    public var speakers: [Speaker]
    /// Where the order came from, for messages: "kAudioChannelLayoutTag_MPEG_5_1_C", "a channel bitmap", …
    public var name: String

    public init(speakers: [Speaker], name: String) {
        self.speakers = speakers
        self.name = name
    }

    /// Human form: "L C R Ls Rs LFE".
    public var description: String { speakers.map(\.abbreviation).joined(separator: " ") }

    static let useChannelDescriptions: UInt32 = 0
    static let useChannelBitmap: UInt32 = 0x10000
    static let discreteInOrder: UInt32 = 147 << 16

    /// Layout tags trackd applies: (tag id (the high 16 bits), Core Audio's name, speakers in order).
    static let tags: [(id: UInt32, name: String, speakers: [Speaker])] = [
        (100, "Mono", [.mono]),
        (101, "Stereo", [.left, .right]),
        (102, "StereoHeadphones", [.left, .right]),
        (106, "Binaural", [.left, .right]),
        (108, "Quadraphonic", [.left, .right, .leftSurround, .rightSurround]),
        (109, "Pentagonal", [.left, .right, .leftSurround, .rightSurround, .center]),
        (110, "Hexagonal", [.left, .right, .leftSurround, .rightSurround, .center, .centerSurround]),
        (113, "MPEG_3_0_A", [.left, .right, .center]),
        (114, "MPEG_3_0_B", [.center, .left, .right]),
        (115, "MPEG_4_0_A", [.left, .right, .center, .centerSurround]),
        (116, "MPEG_4_0_B", [.center, .left, .right, .centerSurround]),
        (117, "MPEG_5_0_A", [.left, .right, .center, .leftSurround, .rightSurround]),
        (118, "MPEG_5_0_B", [.left, .right, .leftSurround, .rightSurround, .center]),
        (119, "MPEG_5_0_C", [.left, .center, .right, .leftSurround, .rightSurround]),
        (120, "MPEG_5_0_D", [.center, .left, .right, .leftSurround, .rightSurround]),
        (121, "MPEG_5_1_A", [.left, .right, .center, .lfe, .leftSurround, .rightSurround]),
        (122, "MPEG_5_1_B", [.left, .right, .leftSurround, .rightSurround, .center, .lfe]),
        (123, "MPEG_5_1_C", [.left, .center, .right, .leftSurround, .rightSurround, .lfe]),
        (124, "MPEG_5_1_D", [.center, .left, .right, .leftSurround, .rightSurround, .lfe]),
        (125, "MPEG_6_1_A", [.left, .right, .center, .lfe, .leftSurround, .rightSurround, .centerSurround]),
        (126, "MPEG_7_1_A", [.left, .right, .center, .lfe, .leftSurround, .rightSurround, .leftCenter, .rightCenter]),
        (127, "MPEG_7_1_B", [.center, .leftCenter, .rightCenter, .left, .right, .leftSurround, .rightSurround, .lfe]),
        (128, "MPEG_7_1_C", [.left, .right, .center, .lfe, .leftSurround, .rightSurround, .rearSurroundLeft, .rearSurroundRight]),
        (129, "Emagic_Default_7_1", [.left, .right, .leftSurround, .rightSurround, .center, .lfe, .leftCenter, .rightCenter]),
        (131, "ITU_2_1", [.left, .right, .centerSurround]),
        (132, "ITU_2_2", [.left, .right, .leftSurround, .rightSurround]),
        (133, "DVD_4", [.left, .right, .lfe]),
        (134, "DVD_5", [.left, .right, .lfe, .centerSurround]),
        (135, "DVD_6", [.left, .right, .lfe, .leftSurround, .rightSurround]),
        (136, "DVD_10", [.left, .right, .center, .lfe]),
        (137, "DVD_11", [.left, .right, .center, .lfe, .centerSurround]),
        (138, "DVD_18", [.left, .right, .leftSurround, .rightSurround, .lfe]),
        (139, "AudioUnit_6_0", [.left, .right, .leftSurround, .rightSurround, .center, .centerSurround]),
        (140, "AudioUnit_7_0", [.left, .right, .leftSurround, .rightSurround, .center, .rearSurroundLeft, .rearSurroundRight]),
        (141, "AAC_6_0", [.center, .left, .right, .leftSurround, .rightSurround, .centerSurround]),
        (142, "AAC_6_1", [.center, .left, .right, .leftSurround, .rightSurround, .centerSurround, .lfe]),
        (143, "AAC_7_0", [.center, .left, .right, .leftSurround, .rightSurround, .rearSurroundLeft, .rearSurroundRight]),
        (144, "AAC_Octagonal", [.center, .left, .right, .leftSurround, .rightSurround, .rearSurroundLeft, .rearSurroundRight, .centerSurround]),
        (148, "AudioUnit_7_0_Front", [.left, .right, .leftSurround, .rightSurround, .center, .leftCenter, .rightCenter]),
        (149, "AC3_1_0_1", [.center, .lfe]),
        (150, "AC3_3_0", [.left, .center, .right]),
        (151, "AC3_3_1", [.left, .center, .right, .centerSurround]),
        (152, "AC3_3_0_1", [.left, .center, .right, .lfe]),
        (153, "AC3_2_1_1", [.left, .right, .centerSurround, .lfe]),
        (154, "AC3_3_1_1", [.left, .center, .right, .centerSurround, .lfe]),
    ]

    /// Tags Core Audio defines that trackd recognises only to reject, with why.
    static let unsupportedTags: [(id: UInt32, name: String, reason: String)] = [
        (103, "MatrixStereo", "matrix-encoded Lt/Rt has no GStreamer channel positions"),
        (104, "MidSide", "mid/side needs matrixing, not a channel order"),
        (105, "XY", "an XY microphone pair needs matrixing, not a channel order"),
        (107, "Ambisonic_B_Format", "Ambisonic B-format has no GStreamer channel positions"),
        (111, "Octagonal", "Core Audio's description of its last pair (side or wide) is ambiguous"),
        (112, "Cube", "GStreamer has no bottom channel positions"),
        (130, "SMPTE_DTV", "matrix-encoded Lt/Rt has no GStreamer channel positions"),
    ]

    /// Core Audio's name of a tag, "kAudioChannelLayoutTag_…", or its number in hex.
    public static func tagName(_ tag: UInt32) -> String {
        let id = tag >> 16
        let known: String? = switch tag {
        case useChannelDescriptions: "UseChannelDescriptions"
        case useChannelBitmap: "UseChannelBitmap"
        default: id == discreteInOrder >> 16 ? "DiscreteInOrder"
            : tags.first { $0.id == id }?.name ?? unsupportedTags.first { $0.id == id }?.name
        }
        let hex = "0x" + String(tag, radix: 16, uppercase: true).leftPadded(to: 8)
        return known.map { "kAudioChannelLayoutTag_\($0) (\(hex))" } ?? "layout tag \(hex)"
    }

    /// A settings value's mChannelLayoutTag, mChannelBitmap and the mChannelLabel of each channel description.
    private static func fields(of value: SettingValue) throws(TrackError) -> (tag: UInt32, bitmap: UInt32, labels: [UInt32]) {
        var tag: UInt32 = 0, bitmap: UInt32 = 0
        var labels: [UInt32] = []
        switch value {
        case .array(let items):
            let bytes = items.map { item -> UInt8 in if case .int(let b) = item { UInt8(truncatingIfNeeded: b) } else { 0 } }
            func u32(_ i: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[i + $1]) << (8 * $1) } }
            tag = u32(0)
            bitmap = u32(4)
            labels = (0..<Int(u32(8))).map { u32(12 + 20 * $0) }
        case .dictionary(let d):
            tag = UInt32(truncatingIfNeeded: d["mChannelLayoutTag"]?.intValue ?? 0)
            bitmap = UInt32(truncatingIfNeeded: d["mChannelBitmap"]?.intValue ?? 0)
            if case .array(let list)? = d["mChannelDescriptions"] {
                for item in list {
                    switch item {
                    case .dictionary(let description):
                        guard let label = description["mChannelLabel"]?.intValue, label >= 0, label <= Int64(UInt32.max) else {
                            throw fail("a channel description without an mChannelLabel")
                        }
                        labels.append(UInt32(label))
                    case .int(let label) where label >= 0 && label <= Int64(UInt32.max):
                        labels.append(UInt32(label))
                    default:
                        throw fail("a channel description must be a dictionary with mChannelLabel, not \(item)")
                    }
                }
            }
        default:
            throw fail("not an AudioChannelLayout")
        }
        return (tag, bitmap, labels)
    }

    private static func fail(_ message: String) -> TrackError {
        TrackError(.unsupportedOutputSettings, "AVChannelLayoutKey: \(message)")
    }

    /// The layout a settings value describes, nil when the layout does not prescribe an order (DiscreteInOrder:
    /// the channels in the track's own order). Throws a message naming what cannot be applied. Call only with
    /// a value `OutputSettings.channelCount(ofLayout:)` accepts.
    static func parse(_ value: SettingValue) throws(TrackError) -> ChannelLayout? {
        let (tag, bitmap, labels) = try fields(of: value)
        let layout: ChannelLayout
        switch tag {
        case useChannelDescriptions:
            var speakers: [Speaker] = []
            for label in labels {
                guard let speaker = Speaker(rawValue: label) else {
                    throw fail("channel label \(label) is not supported (trackd applies the speaker labels 1–18 and 33–37, and 42 for mono)")
                }
                speakers.append(speaker)
            }
            layout = ChannelLayout(speakers: speakers, name: "the channel descriptions")
        case useChannelBitmap:
            guard bitmap & ~0x3FFFF == 0 else {
                throw fail("channel bitmap 0x\(String(bitmap, radix: 16, uppercase: true)) has bits trackd does not know (it applies bits 0–17)")
            }
            // kAudioChannelBit_Left = 1 << 0 … kAudioChannelBit_TopBackRight = 1 << 17: label = bit + 1, in bit order.
            let speakers = (0..<18).filter { bitmap & (1 << $0) != 0 }.compactMap { Speaker(rawValue: UInt32($0) + 1) }
            layout = ChannelLayout(speakers: speakers, name: "the channel bitmap")
        default:
            let id = tag >> 16
            if id == discreteInOrder >> 16 { return nil }
            if let entry = tags.first(where: { $0.id == id }) {
                guard Int(tag & 0xFFFF) == entry.speakers.count else {
                    throw fail("\(tagName(tag)) has \(entry.speakers.count) channels, not \(tag & 0xFFFF)")
                }
                return ChannelLayout(speakers: entry.speakers, name: "kAudioChannelLayoutTag_\(entry.name)")
            }
            if let entry = unsupportedTags.first(where: { $0.id == id }) {
                throw fail("\(tagName(tag)) is not supported: \(entry.reason)")
            }
            throw fail("\(tagName(tag)) is not supported")
        }
        if layout.speakers.contains(.mono) && layout.speakers.count > 1 {
            throw fail("the mono label (42) only makes sense for a single channel")
        }
        var seen: Set<Speaker> = []
        for speaker in layout.speakers where !seen.insert(speaker).inserted {
            throw fail("speaker \(speaker.abbreviation) (label \(speaker.rawValue)) appears twice in \(layout.name)")
        }
        return layout
    }
}

fileprivate extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
