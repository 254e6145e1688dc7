import CVorbisBlocks

/// A Vorbis stream's block sizes as libvorbis reads them from its three headers (CVorbisBlocks): what each audio
/// packet's duration is made of (Vorbis I §1.3.2: a packet decodes to a quarter of the block before it plus a quarter
/// of its own). Owns libvorbis's state; one caller at a time.
public struct VorbisBlocks: ~Copyable {
    private let reader: OpaquePointer
    /// The short and long block sizes, in frames (64 … 8192).
    public let short: Int, long: Int

    /// From the identification, comment and setup headers (the caps' `streamheader`, in order); nil when libvorbis
    /// rejects them.
    public init?(headers: [[UInt8]]) {
        guard headers.count >= 3 else { return nil }
        let made: OpaquePointer? = unsafe headers[0].withUnsafeBufferPointer { id in
            unsafe headers[1].withUnsafeBufferPointer { comment in
                unsafe headers[2].withUnsafeBufferPointer { setup in
                    let pointers = unsafe [id.baseAddress, comment.baseAddress, setup.baseAddress]
                    let sizes = [id.count, comment.count, setup.count]
                    return unsafe trackd_vorbis_blocks_new(pointers, sizes)
                }
            }
        }
        guard let made else { return nil }
        reader = made
        short = Int(unsafe trackd_vorbis_blocks_size(made, 0))
        long = Int(unsafe trackd_vorbis_blocks_size(made, 1))
    }

    deinit { unsafe trackd_vorbis_blocks_free(reader) }

    /// An audio packet's block size and, for a long block, the size of the block before it that the packet states
    /// (its previous-window flag); nil for a header or a packet naming a mode the setup header has not.
    public func packet(_ bytes: [UInt8]) -> (block: Int, previous: Int?)? {
        var block: Int32 = 0, previous: Int32 = 0
        let read = unsafe bytes.withUnsafeBufferPointer {
            unsafe trackd_vorbis_blocks_packet(reader, $0.baseAddress, $0.count, &block, &previous)
        }
        guard read == 0 else { return nil }
        return (block == 1 ? long : short, previous < 0 ? nil : previous == 1 ? long : short)
    }
}

/// ffmpeg's Vorbis packet durations (libavcodec's Vorbis parser, which its Ogg demuxer and, for Matroska, its
/// generic demuxer use): a packet lasts (the previous block + its block) / 4 frames. The previous block is the last
/// packet's; a long block states it itself (its previous-window flag); the first packet after the start or a seek,
/// when short, takes the short block size as the previous one (Ogg: `av_vorbis_parse_reset`) or mode 0's block size
/// (Matroska: the parser is made afresh, `previous_blocksize = blocksize[mode_blocksize[0]]`).
public struct VorbisDurations: ~Copyable {
    public enum Container: Sendable { case ogg, matroska }
    private let blocks: VorbisBlocks
    /// The block size a packet after the start or a seek follows.
    private let initial: Int
    /// The last packet's block size; nil after the start or a seek.
    private var previous: Int?

    public init?(headers: [[UInt8]], container: Container) {
        guard let blocks = VorbisBlocks(headers: headers) else { return nil }
        // Mode 0's block: that of an audio packet whose mode bits are 0 (two bytes: a long block's flags follow).
        initial = container == .ogg ? blocks.short : blocks.packet([0, 0])?.block ?? blocks.short
        self.blocks = blocks
    }

    /// The stream restarts (a seek): the next packet follows `initial`.
    public mutating func reset() { previous = nil }

    /// The duration of the next audio packet (its first bytes: a header byte and the flags after it suffice), in
    /// frames; nil for a packet libvorbis does not accept as audio (the state is kept).
    public mutating func next(_ packet: [UInt8]) -> Int? {
        guard let (block, stated) = blocks.packet(packet) else { return nil }
        defer { previous = block }
        return ((stated ?? previous ?? initial) + block) / 4
    }
}
