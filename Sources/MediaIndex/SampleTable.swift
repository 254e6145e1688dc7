/// One trak's tables, as ContainerIndex reads them.
struct SampleTable {
    var id: UInt32 = 0
    var timescale: UInt64 = 0
    var isVideo = false
    var edits: [(duration: UInt64, mediaTime: Int64, rate: UInt32)]?
    var deltas: [(count: UInt32, delta: UInt32)] = []       // stts
    var offsets: [(count: UInt32, offset: Int64)]?          // ctts
    var syncs: [UInt32]?                                    // stss (1-based), nil: every sample is sync
    var sampleCount: UInt32?                                // stsz
    var sampleSize: UInt32 = 0                              // stsz: all samples this size, 0: `sizes`
    var sizes: ArraySlice<UInt8> = []                       // stsz entries (u32 each)
    var chunkRuns: [(firstChunk: UInt32, samples: UInt32)] = []  // stsc
    var chunkOffsets: [UInt64] = []                         // stco / co64

    init?(_ trak: ArraySlice<UInt8>) {
        var reader = BoxReader(bytes: trak)
        var mdia: ArraySlice<UInt8>?
        while let box = reader.next() {
            switch box.type {
            case "tkhd":
                guard let trackID = ContainerIndex.fieldAfterTimes(box.body) else { return nil }
                id = trackID
            case "edts":
                var inner = BoxReader(bytes: box.body)
                while let elst = inner.next() {
                    if elst.type == "elst" { edits = ContainerIndex.editList(elst.body) }
                }
                if edits == nil { return nil }
            case "mdia": mdia = box.body
            default: break
            }
        }
        guard reader.isValid, let mdia, parseMedia(mdia) else { return nil }
    }

    /// mdhd's timescale, hdlr's handler, then minf/stbl's tables.
    private mutating func parseMedia(_ mdia: ArraySlice<UInt8>) -> Bool {
        var reader = BoxReader(bytes: mdia)
        var stbl: ArraySlice<UInt8>?
        while let box = reader.next() {
            switch box.type {
            case "mdhd":
                guard let mediaTimescale = ContainerIndex.fieldAfterTimes(box.body) else { return false }
                timescale = UInt64(mediaTimescale)
            case "hdlr":
                guard box.body.count >= 12 else { return false }
                isVideo = fourCC(box.body, 8) == "vide"
            case "minf":
                var inner = BoxReader(bytes: box.body)
                while let b = inner.next() {
                    if b.type == "stbl" { stbl = b.body }
                }
            default: break
            }
        }
        guard reader.isValid, let stbl else { return false }
        return parseTables(stbl)
    }

    /// stbl's boxes; false when one of the tables does not fit in its box.
    private mutating func parseTables(_ stbl: ArraySlice<UInt8>) -> Bool {
        var tables = BoxReader(bytes: stbl)
        while let box = tables.next() {
            let b = box.body
            switch box.type {
            case "stts":
                guard let entries = ContainerIndex.entries(b, width: 8) else { return false }
                deltas = entries.map { (be32(b, $0), be32(b, $0 + 4)) }
            case "ctts":
                guard let version = b.first, let entries = ContainerIndex.entries(b, width: 8) else { return false }
                offsets = entries.map { at in
                    let raw = be32(b, at + 4)
                    return (be32(b, at), version == 1 ? Int64(Int32(bitPattern: raw)) : Int64(raw))
                }
            case "stss":
                guard let entries = ContainerIndex.entries(b, width: 4) else { return false }
                syncs = entries.map { be32(b, $0) }
            case "stsz":
                guard b.count >= 12 else { return false }
                sampleSize = be32(b, 4)
                sampleCount = be32(b, 8)
                if sampleSize == 0 {
                    let n = Int(sampleCount!)
                    guard n <= (b.count - 12) / 4 else { return false }
                    sizes = b.dropFirst(12).prefix(4 * n)
                }
            case "stsc":
                guard let entries = ContainerIndex.entries(b, width: 12) else { return false }
                chunkRuns = entries.map { (be32(b, $0), be32(b, $0 + 4)) }
            case "stco":
                guard let entries = ContainerIndex.entries(b, width: 4) else { return false }
                chunkOffsets = entries.map { UInt64(be32(b, $0)) }
            case "co64":
                guard let entries = ContainerIndex.entries(b, width: 8) else { return false }
                chunkOffsets = entries.map { be64(b, $0) }
            default: break
            }
        }
        return tables.isValid
    }

    /// Where the track's last byte of sample data ends in the file (stsc, stsz, stco/co64), or nil when the
    /// tables do not account for every sample.
    func dataEnd() -> UInt64? {
        guard let sampleCount, sampleCount <= ContainerIndex.maxSamples, !chunkRuns.isEmpty, !chunkOffsets.isEmpty,
              chunkRuns[0].firstChunk == 1 else { return nil }
        var end: UInt64 = 0
        var sample = 0
        for (i, run) in chunkRuns.enumerated() {
            let last = i + 1 < chunkRuns.count ? Int(chunkRuns[i + 1].firstChunk) - 1 : chunkOffsets.count
            guard run.firstChunk >= 1, last >= Int(run.firstChunk) - 1, last <= chunkOffsets.count else { return nil }
            for chunk in Int(run.firstChunk)...max(Int(run.firstChunk), last) where chunk <= last {
                var bytes: UInt64 = 0
                for _ in 0..<run.samples {
                    guard sample < Int(sampleCount) else { break }
                    bytes += UInt64(sampleSize != 0 ? sampleSize : be32(sizes, 4 * sample))
                    sample += 1
                }
                let (chunkEnd, overflow) = chunkOffsets[chunk - 1].addingReportingOverflow(bytes)
                guard !overflow else { return nil }
                end = max(end, chunkEnd)
            }
        }
        return sample == Int(sampleCount) ? end : nil
    }

    /// The frames in presentation order, or nil when the tables are not what this reader reproduces exactly.
    func frames(movieTimescale: UInt64) -> [FrameIndex.Frame]? {
        guard isVideo, timescale > 0, let sampleCount, sampleCount > 0, Int(sampleCount) <= ContainerIndex.maxSamples
        else { return nil }
        let count = Int(sampleCount)
        var mediaTime: Int64 = 0
        var editEnd: UInt64?  // movie timescale
        if let edits {
            guard edits.count == 1, let edit = edits.first, edit.mediaTime >= 0, edit.rate == 0x0001_0000 else { return nil }
            mediaTime = edit.mediaTime
            editEnd = edit.duration > 0 ? edit.duration : nil
        }
        // stts and ctts must cover exactly the samples; ctts offsets must not be negative.
        guard deltas.reduce(0, { $0 + Int($1.count) }) == count else { return nil }
        if let offsets {
            guard offsets.reduce(0, { $0 + Int($1.count) }) == count, offsets.allSatisfy({ $0.offset >= 0 }) else { return nil }
        }
        let shift = ContainerIndex.scale(UInt64(mediaTime), timescale)
        guard shift < Int64.max / 2, let stored = storedSamples(count: count, shift: shift) else { return nil }
        // qtdemux plays only the edit: samples that start at or after its end never come out.
        if let editEnd {
            let end = ContainerIndex.scale(editEnd, movieTimescale)
            guard stored.allSatisfy({ $0.presentationTime < end }) else { return nil }
        }
        guard stored.allSatisfy({ $0.presentationTime >= 0 }) else { return nil }  // before the edit: qtdemux clips them
        return FrameIndex.presentationOrder(stored)
    }

    /// The samples in decode order with qtdemux's times (PTS shifted back by the edit's start, `shift` ns), or nil
    /// when a time overflows or ctts runs out.
    private func storedSamples(count: Int, shift: Int64) -> [FrameIndex.StoredSample]? {
        let timescale = timescale
        let ns: (Int64) -> Int64 = { ContainerIndex.scale(UInt64($0), timescale) }
        var syncSet: Set<UInt32>? = syncs.map(Set.init)
        if let s = syncSet, s.isEmpty { syncSet = nil }  // an empty stss: treated as absent, as qtdemux does
        var offsetRun = 0, offsetLeft = offsets?.first.map { Int($0.count) } ?? 0
        var dts: UInt64 = 0
        var stored: [FrameIndex.StoredSample] = []
        stored.reserveCapacity(count)
        for run in deltas {
            for _ in 0..<run.count {
                var composition: Int64 = 0
                if let offsets {
                    while offsetLeft == 0 {
                        offsetRun += 1
                        guard offsetRun < offsets.count else { return nil }
                        offsetLeft = Int(offsets[offsetRun].count)
                    }
                    composition = offsets[offsetRun].offset
                    offsetLeft -= 1
                }
                let (pts, overflow) = dts.addingReportingOverflow(UInt64(composition))
                guard !overflow, pts <= UInt64(Int64.max) / 1_000_000_000 else { return nil }
                let start = ns(Int64(pts)) - shift
                let end = ns(Int64(dts) + Int64(run.delta)), begin = ns(Int64(dts))
                guard end < Int64.max / 2 else { return nil }
                stored.append(FrameIndex.StoredSample(presentationTime: start, duration: end - begin,
                                                      isSync: syncSet?.contains(UInt32(stored.count + 1)) ?? true))
                dts += UInt64(run.delta)
            }
        }
        return stored
    }
}
