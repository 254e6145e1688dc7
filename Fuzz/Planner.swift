// libFuzzer target `planner`: FrameIndex (the index a parse-only pass builds, the frame a time names, the frame
// a decoded sample is) and DecodePlan's `plan`. Input: a track's stored samples and the requests (layout below).
// Invariants, beyond "never traps":
//  - plan: every wanted frame lies in a range (and in its needed samples), ranges start at strictly later decode
//    positions, each at a sync sample (or the track's first), no more ranges than frames; on a clean index
//    (strictly increasing times, no frame lasting past the next) the ranges do not overlap;
//  - frameDisplayed(at:): the last frame at or before the time (the first before it), nil from `end` on;
//    resolve agrees with it; nearest(_:) is no farther than its neighbours, for any Int64 time.
import MediaIndex
import MediaVocabulary

@_cdecl("LLVMFuzzerInitialize")
public func fuzzInitialize(_ argc: UnsafeMutablePointer<Int32>?, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>?) -> Int32 {
    writeSeedsIfAsked {
        // maxSkip, count-1, samples (flags, offset, duration), probes; an I P B B GOP pattern and a few probes.
        let gop: [UInt8] = [0x03, 0, 40, 0x02, 3, 40, 0x02, 0xFF, 40, 0x02, 0xFE, 40]
        let probes: [UInt8] = [3, 0, 1, 0, 2, 1, 5, 2, 0x80, 0, 0, 0, 0, 0, 0, 0x80]
        return [[4, 3] + gop + probes + [0, 3], [0, 11] + gop + gop + gop + probes + [1, 2, 5, 9, 11],
                [120, 0, 0x01, 0, 0, 1, 0, 0],
                // FuzzRegressionTests.nearestOfAnExtremeTimeDoesNotOverflow: a probe at Int64.max, frames before 0.
                [0, 1, 5, 0x80, 0, 5, 0x80, 0, 1, 1, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F]]
    }
    return 0
}

/// Samples in decode order from the input: for each, flags (bit 0 sync, bit 1 duration known, bit 2 offsets in
/// whole frames), a signed offset from i × 40 ns, a duration.
func storedSamples(_ r: inout FuzzBytes) -> [FrameIndex.StoredSample] {
    let count = Int(r.u8()) + 1
    return (0..<count).map { i in
        let flags = r.u8()
        let offset = Int64(Int8(bitPattern: r.u8())) * (flags & 4 != 0 ? 40 : 1)
        let duration = Int64(r.u8())
        return FrameIndex.StoredSample(presentationTime: Int64(i) * 40 + offset, duration: flags & 2 != 0 ? duration : nil,
                                       isSync: flags & 1 != 0)
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPlanner(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    var r = FuzzBytes(fuzzInput(data, size))
    let maxSkip = Int(r.u8())
    let index = FrameIndex(parsedSamples: storedSamples(&r))
    let frames = index.frames
    // Probes: a count, then for each a kind byte and a value: a frame's time ± a little, or any Int64.
    for _ in 0..<(r.u8() % 16) {
        let kind = r.u8()
        let ns: Int64 = if kind & 1 == 0 {
            frames[Int(r.u8()) % frames.count].presentationTime + Int64(Int8(bitPattern: r.u8()))
        } else {
            Int64(bitPattern: r.u64())
        }
        checkTime(index, ns)
    }
    var wanted = Set<Int>()
    while !r.isAtEnd { wanted.insert(Int(r.u8()) % frames.count) }
    checkPlan(index, wanted, maxSkip: maxSkip)
    return 0
}

func checkTime(_ index: FrameIndex, _ ns: Int64) {
    let frames = index.frames
    let shown = index.frameDisplayed(at: ns)
    if let end = index.end, ns < end {
        guard let shown else { return check(false, "no frame displayed at \(ns), before the end \(end)") }
        check(shown == 0 || frames[shown].presentationTime <= ns, "frame \(shown) starts after \(ns)")
        check(shown == frames.count - 1 || frames[shown + 1].presentationTime > ns, "frame \(shown + 1) starts by \(ns)")
    } else {
        check(shown == nil, "frame \(String(describing: shown)) displayed at \(ns), at or after the end")
    }
    let resolved = try? index.resolve(.time(.nanoseconds(ns)))
    check(resolved == shown, "resolve(\(ns)) = \(String(describing: resolved)), frameDisplayed = \(String(describing: shown))")
    let near = index.nearest(ns)
    check(near >= 0 && near < frames.count, "nearest(\(ns)) = \(near)")
    let distance = { (i: Int) -> Int128 in Int128(frames[i].presentationTime) - Int128(ns) }
    for neighbour in [near - 1, near + 1] where neighbour >= 0 && neighbour < frames.count {
        check(distance(near).magnitude <= distance(neighbour).magnitude, "nearest(\(ns)) = \(near), \(neighbour) is nearer")
    }
}

func checkPlan(_ index: FrameIndex, _ wanted: Set<Int>, maxSkip: Int) {
    let frames = index.frames
    let plan = index.plan(wanted, maxSkip: maxSkip)
    check(plan.isEmpty == wanted.isEmpty && plan.count <= wanted.count, "\(plan.count) ranges for \(wanted.count) frames")
    let syncPositions = Set(frames.filter(\.isSync).map(\.decodePosition))
    for (a, b) in zip(plan, plan.dropFirst()) {
        check(a.firstPosition < b.firstPosition, "ranges start at positions \(a.firstPosition), \(b.firstPosition)")
    }
    for range in plan {
        check(range.firstPosition == 0 || syncPositions.contains(range.firstPosition), "a range starts at a non-sync sample")
        if let needed = range.neededSamples {
            check(needed == needed.sorted(), "needed samples out of order")
            check(range.lastNeededSample.map(needed.contains) ?? false, "last needed sample not among the needed ones")
        }
    }
    // Runs are built in decode order, so coverage holds even when a crafted ctts shows GOPs in another order
    // (FuzzRegressionTests.gopsShownInAnotherOrderThanDecodedAreEachPlanned).
    for i in wanted {
        let t = frames[i].presentationTime
        let holders = plan.filter { bounds($0).start <= t && t < bounds($0).end }
        check(!holders.isEmpty, "frame \(i) at \(t) is in no range")
        check(holders.contains { $0.neededSamples?.contains(t) ?? true }, "frame \(i) is in no range's needed samples")
    }
    let clean = zip(frames, frames.dropFirst()).allSatisfy {
        $0.presentationTime < $1.presentationTime && $0.presentationTime + $0.duration <= $1.presentationTime
    }
    // Ranges follow decode order; on a clean index whose GOPs are also in presentation order, they do not overlap.
    if clean && gopsInPresentationOrder(index) {
        for (a, b) in zip(plan, plan.dropFirst()) {
            check(bounds(a).end <= bounds(b).start, "ranges \(bounds(a)) and \(bounds(b)) overlap on a clean index")
        }
    }
}

/// A range's start and end, ns (plan makes nanosecond ranges).
func bounds(_ r: FrameIndex.DecodeRange) -> (start: Int64, end: Int64) {
    let start = r.range.start.nanoseconds!, duration = r.range.duration.nanoseconds!
    check(r.range.start.timescale == r.range.duration.timescale && duration > 0, "range \(r.range)")
    return (start, start + duration)
}

/// Whether the GOP of each frame (the last sync sample at or before it in decode order) never goes back in
/// presentation order.
func gopsInPresentationOrder(_ index: FrameIndex) -> Bool {
    var syncAt = [Bool](repeating: false, count: index.frames.count)
    for f in index.frames where f.isSync { syncAt[f.decodePosition] = true }
    var gop = [Int](repeating: 0, count: syncAt.count)
    for p in gop.indices { gop[p] = syncAt[p] ? p : (p > 0 ? gop[p - 1] : 0) }
    let order = index.frames.map { gop[$0.decodePosition] }
    return zip(order, order.dropFirst()).allSatisfy { $0 <= $1 }
}
