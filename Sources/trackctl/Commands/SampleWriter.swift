import TrackdProtocol
import SystemCalls
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// Where read and frames put each sample: the packed bytes to --output (a file or - for stdout), one
/// "INDEX PTS DURATION SIZE MD5" line (--md5) or JSON object (--json) per sample, and a summary line otherwise.
final class SampleWriter {
    let md5: Bool, json: Bool
    let decodedAudio: Bool
    private var sink: OutputFile?
    private let dataOnStdout: Bool

    init(_ p: ParsedArguments, decodedAudio: Bool) {
        md5 = p[SampleOutput.md5]
        json = p[SampleOutput.json]
        self.decodedAudio = decodedAudio
        let output = p[SampleOutput.output]
        dataOnStdout = output == "-"
        if let path = output {
            sink = path == "-" ? IO.out : OutputFile.create(path)
            guard sink != nil else {
                Exit.failed(TrackError(.unknown, "cannot write \(path): \(SystemError("fopen", errno: currentErrno()).reason)"))
            }
        }
    }

    /// Writes one sample; returns its packed size in bytes.
    func write(_ sample: SampleBuffer, index: Int) -> Int {
        var digest = md5 || json ? MD5Digest() : nil
        var size = 0
        sample.forEachPackedSpan { row in
            size += row.byteCount
            digest?.update(row)
            if let sink, !sink.write(row) {
                Exit.failed(TrackError(.unknown, "writing the output failed: \(SystemError("fwrite", errno: currentErrno()).reason)"))
            }
        }
        let pts = fixed(sample.presentationTimeStamp.seconds, 6)
        let duration = sample.duration.isNumeric ? fixed(sample.duration.seconds, 6) : "0.000000"
        if json {
            var fields: [(String, JSON.Value)] = [
                ("index", .int(Int64(index))), ("pts", .number(sample.presentationTimeStamp.seconds, decimals: 6)),
                // The exact time: value / timescale in the track's timescale (PROTOCOL.md §7.1), as ffprobe's pts.
                ("ptsValue", .int(sample.presentationTimeStamp.value)),
                ("timescale", .int(Int64(sample.presentationTimeStamp.timescale))),
                ("duration", sample.duration.isNumeric ? .number(sample.duration.seconds, decimals: 6) : .null),
                ("size", .int(Int64(size))), ("sync", .bool(sample.isSync)),
            ]
            if decodedAudio { fields.append(("frames", .int(Int64(sample.numberOfSamples)))) }
            // Passthrough trims (TrimDurationAtStart / AtEnd), exact: value / timescale, only when not zero.
            for (key, trim) in [("trimAtStart", sample.trimDurationAtStart), ("trimAtEnd", sample.trimDurationAtEnd)] {
                if let trim { fields.append((key, .object([("value", .int(trim.value)), ("timescale", .int(Int64(trim.timescale)))]))) }
            }
            if md5 { fields.append(("md5", .string(digest!.finalizeHex()))) }
            emit(JSON.encode(.object(fields)))
        } else if md5 {
            emit("\(index) \(pts) \(duration) \(size) \(digest!.finalizeHex())")
        }
        return size
    }

    func close() {
        if let sink, sink !== IO.out { sink.close() } else { IO.out.flush() }
        sink = nil
    }

    /// "N samples in S s (… samples/s, … MiB/s)" unless --md5 or --json.
    func summary(samples: Int, audioFrames: Int?, bytes: Int, since start: Double) {
        guard !md5 && !json else { return }
        let elapsed = max(monotonicSeconds() - start, 1e-9)
        let line = "\(samples) samples" + (audioFrames.map { " (\($0) audio frames)" } ?? "") + " in \(fixed(elapsed, 3)) s ("
            + "\(fixed(Double(samples) / elapsed, 1)) samples/s, \(fixed(Double(bytes) / 1_048_576 / elapsed, 1)) MiB/s)"
        emit(line)
    }

    /// A line on stdout, or on stderr when stdout carries the samples' bytes.
    private func emit(_ line: String) {
        if dataOnStdout { IO.err.write(line + "\n") } else { print(line) }
    }
}
