// AVChannelLayoutKey applied: Core Audio speakers → GStreamer channel positions, audioconvert mixes to them, and
// the output is reordered from GStreamer's canonical order to the layout's.
import CGStreamer
import CGstShim
import TrackdProtocol
import Synchronization

/// The output channel order of an audio output with a channel layout. Raw audio caps can only say which positions
/// are present (`channel-mask`), never their order — the order is always GStreamer's canonical one — so audioconvert
/// is asked for the layout's positions (it mixes or passes through to them) and each sample is then reordered with
/// gst_audio_reorder_channels (interleaved) or by permuting the planes (non-interleaved).
///
/// Which positions: fixed per speaker, except Core Audio's surround pair Ls/Rs, which means the source's surround
/// pair: GStreamer's REAR_LEFT/RIGHT (WAV's back, the Core Audio bitmap's kAudioChannelBit_LeftSurround), or
/// SIDE_LEFT/RIGHT when the source has side and no rear channels (ffmpeg's and WAVE 5.1 "side") — asking audioconvert
/// for the other pair would remix (it spreads side channels over rear and front). In a layout that also has the rear
/// pair Rls/Rrs (7.1), Ls/Rs are the side pair.
final class ChannelOrder: @unchecked Sendable {
    // @unchecked: `layout`, `baseCaps` and `filter` are set once; `resolved` lives in the Mutex.
    private let layout: ChannelLayout
    private let baseCaps: GstRef<GstCapsObject>
    private let filter: GstRef<GstElementObject>  // the capsfilter in front of appsink
    /// The layout's positions in its order, once the decoder's caps are known.
    private let resolved = Mutex<[GstAudioChannelPosition]?>(nil)

    init(layout: ChannelLayout, baseCaps: GstRef<GstCapsObject>, filter: GstRef<GstElementObject>) {
        self.layout = layout
        self.baseCaps = baseCaps
        self.filter = filter
    }

    static func position(_ speaker: ChannelLayout.Speaker, surroundIsSide: Bool) -> GstAudioChannelPosition {
        switch speaker {
        case .left: GST_AUDIO_CHANNEL_POSITION_FRONT_LEFT
        case .right: GST_AUDIO_CHANNEL_POSITION_FRONT_RIGHT
        case .center: GST_AUDIO_CHANNEL_POSITION_FRONT_CENTER
        case .lfe: GST_AUDIO_CHANNEL_POSITION_LFE1
        case .leftSurround: surroundIsSide ? GST_AUDIO_CHANNEL_POSITION_SIDE_LEFT : GST_AUDIO_CHANNEL_POSITION_REAR_LEFT
        case .rightSurround: surroundIsSide ? GST_AUDIO_CHANNEL_POSITION_SIDE_RIGHT : GST_AUDIO_CHANNEL_POSITION_REAR_RIGHT
        case .leftCenter: GST_AUDIO_CHANNEL_POSITION_FRONT_LEFT_OF_CENTER
        case .rightCenter: GST_AUDIO_CHANNEL_POSITION_FRONT_RIGHT_OF_CENTER
        case .centerSurround: GST_AUDIO_CHANNEL_POSITION_REAR_CENTER
        case .leftSurroundDirect: GST_AUDIO_CHANNEL_POSITION_SIDE_LEFT
        case .rightSurroundDirect: GST_AUDIO_CHANNEL_POSITION_SIDE_RIGHT
        case .topCenterSurround: GST_AUDIO_CHANNEL_POSITION_TOP_CENTER
        case .verticalHeightLeft: GST_AUDIO_CHANNEL_POSITION_TOP_FRONT_LEFT
        case .verticalHeightCenter: GST_AUDIO_CHANNEL_POSITION_TOP_FRONT_CENTER
        case .verticalHeightRight: GST_AUDIO_CHANNEL_POSITION_TOP_FRONT_RIGHT
        case .topBackLeft: GST_AUDIO_CHANNEL_POSITION_TOP_REAR_LEFT
        case .topBackCenter: GST_AUDIO_CHANNEL_POSITION_TOP_REAR_CENTER
        case .topBackRight: GST_AUDIO_CHANNEL_POSITION_TOP_REAR_RIGHT
        case .rearSurroundLeft: GST_AUDIO_CHANNEL_POSITION_REAR_LEFT
        case .rearSurroundRight: GST_AUDIO_CHANNEL_POSITION_REAR_RIGHT
        case .leftWide: GST_AUDIO_CHANNEL_POSITION_WIDE_LEFT
        case .rightWide: GST_AUDIO_CHANNEL_POSITION_WIDE_RIGHT
        case .lfe2: GST_AUDIO_CHANNEL_POSITION_LFE2
        case .mono: GST_AUDIO_CHANNEL_POSITION_MONO
        }
    }

    /// The layout's positions for a source with `source` positions (see the type's comment on Ls/Rs).
    static func positions(_ layout: ChannelLayout, source: [GstAudioChannelPosition]) -> [GstAudioChannelPosition] {
        let speakers = Set(layout.speakers)
        let hasRear = source.contains(GST_AUDIO_CHANNEL_POSITION_REAR_LEFT) || source.contains(GST_AUDIO_CHANNEL_POSITION_REAR_RIGHT)
        let hasSide = source.contains(GST_AUDIO_CHANNEL_POSITION_SIDE_LEFT) || source.contains(GST_AUDIO_CHANNEL_POSITION_SIDE_RIGHT)
        let surroundIsSide = speakers.contains(.rearSurroundLeft) || speakers.contains(.rearSurroundRight)
            || (hasSide && !hasRear)
        return layout.speakers.map { position($0, surroundIsSide: surroundIsSide) }
    }

    /// Positions of raw audio caps, in caps order ([] when not raw audio).
    static func positions(of caps: GstRef<GstCapsObject>?) -> (positions: [GstAudioChannelPosition], format: GstAudioFormat) {
        caps?.audioPositions ?? ([], GST_AUDIO_FORMAT_UNKNOWN)
    }

    /// Called with the decoder's caps just before its pad is linked: resolves the positions and asks the capsfilter
    /// for them (audioconvert then converts to exactly those channels).
    func decoderCapsKnown(_ caps: GstRef<GstCapsObject>?) {
        let source = Self.positions(of: caps).positions
        let wanted = Self.positions(layout, source: source)
        resolved.withLock { $0 = wanted }
        guard wanted.count > 1 else { return }  // one channel: mono, no mask
        guard let mask = channelMask(wanted) else { return }
        filter.set("caps", caps: baseCaps.withChannelMask(mask))
    }

    /// For a sample whose caps are `caps`: nil when no reordering is needed; otherwise the output's channel c is
    /// the sample's channel `order[c]`, and the positions for gst_audio_reorder_channels.
    func reordering(for caps: GstRef<GstCapsObject>?) -> (order: [Int], from: [GstAudioChannelPosition],
                                                            to: [GstAudioChannelPosition], format: GstAudioFormat)? {
        guard let wanted = resolved.withLock({ $0 }), wanted.count > 1 else { return nil }
        let (actual, format) = Self.positions(of: caps)
        guard actual.count == wanted.count, actual != wanted else { return nil }
        var order: [Int] = []
        for position in wanted {
            guard let i = actual.firstIndex(of: position) else { return nil }
            order.append(i)
        }
        return (order, actual, wanted, format)
    }
}
