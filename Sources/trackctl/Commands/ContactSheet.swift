import CCairo
import TrackdProtocol
import TrackClient

#if canImport(Glibc)
import Glibc
#endif

/// What `trackctl contact-sheet` (`ContactSheetCommand`) draws: N evenly spaced exact frames of a video track in a
/// grid, each captioned with its presentation time and frame index, under a header line naming the file. The frames
/// come from TrackClient's exact random access (`Asset.frames(at:)`, `ShownFrame`), decoded by trackd to BGRA at the
/// tile size; cairo composes the sheet and draws the text; `ImageFile` writes it.
///
/// Geometry (all in pixels; `trackctl contact-sheet --help` documents it, the tests check it):
/// - a tile's picture is `tileWidth` (320) wide and TH = the even number nearest 320 × display height / display
///   width tall (at least 2), where the display size is the track's size with width and height swapped for a
///   rotation of 90° or 270° (the picture is shown rotated, as a player shows it);
/// - columns C = min(N, ⌈√(N · 4 · TH / (3 · 320))⌉) (a sheet about 4:3), rows R = ⌈N / C⌉;
/// - the sheet is M + C · (320 + M) wide and M + HEADER + R · (TH + CAPTION + M) tall, M = 12, HEADER = 28,
///   CAPTION = 22; tile i (row-major) has its picture's top-left corner at
///   x = M + (i mod C) · (320 + M), y = M + HEADER + ⌊i / C⌋ · (TH + CAPTION + M), its caption below it;
/// - frame i is the one shown at start + (i + ½) · D / N, D the track's duration and start its timeRange start:
///   the centre of the i-th of N equal slices.
enum ContactSheet {
    static let tileWidth = 320
    static let margin = 12
    static let header = 28
    static let caption = 22

    struct Geometry: Equatable {
        var count: Int
        var tileHeight: Int
        var columns: Int
        var rows: Int
        /// The decoded frame's size before rotation (what trackd is asked for).
        var decodeWidth: Int
        var decodeHeight: Int

        init(count: Int, trackWidth: Int, trackHeight: Int, rotation: Int) {
            let quarter = ((rotation % 360) + 360) % 360 / 90
            let turned = quarter % 2 == 1
            let displayWidth = turned ? trackHeight : trackWidth
            let displayHeight = turned ? trackWidth : trackHeight
            let exact = Double(ContactSheet.tileWidth) * Double(displayHeight) / Double(displayWidth)
            self.count = count
            tileHeight = max(2, 2 * Int((exact / 2).rounded()))
            let wanted = (Double(count) * 4 * Double(tileHeight) / (3 * Double(ContactSheet.tileWidth))).squareRoot()
            columns = max(1, min(count, Int(wanted.rounded(.up))))
            rows = (count + columns - 1) / columns
            decodeWidth = turned ? tileHeight : ContactSheet.tileWidth
            decodeHeight = turned ? ContactSheet.tileWidth : tileHeight
        }

        var width: Int { margin + columns * (tileWidth + margin) }
        var height: Int { margin + header + rows * (tileHeight + caption + margin) }
        func origin(_ i: Int) -> (x: Int, y: Int) {
            (margin + (i % columns) * (tileWidth + margin), margin + header + (i / columns) * (tileHeight + caption + margin))
        }
    }

    /// HH:MM:SS.mmm
    static func clock(_ seconds: Double) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        let milli = ms % 1000
        return "\(two(ms / 3_600_000)):\(two(ms / 60_000 % 60)):\(two(ms / 1000 % 60))."
            + (milli < 10 ? "00" : milli < 100 ? "0" : "") + "\(milli)"
    }

    /// Composes the sheet; its status is cairo's of the first thing that failed.
    static func draw(_ g: Geometry, frames: [ShownFrame], rotation: Int, headline: String) -> CairoCanvas {
        let sheet = CairoCanvas(width: g.width, height: g.height)
        sheet.setColor(0.11, 0.11, 0.12)
        sheet.paint()

        sheet.setFont(bold: true, size: 15)
        sheet.setColor(0.95, 0.95, 0.95)
        sheet.move(to: Double(margin), Double(margin + header - 10))
        sheet.showText(headline)

        sheet.setFont(bold: false, size: 13)
        for (i, frame) in frames.enumerated() {
            let (x, y) = g.origin(i)
            paint(frame.sample, on: sheet, x: x, y: y, g: g, rotation: rotation)
            let baseline = Double(y + g.tileHeight + caption - 6)
            sheet.setColor(0.85, 0.85, 0.85)
            sheet.move(to: Double(x), baseline)
            sheet.showText(clock(frame.sample.presentationTimeStamp.seconds))
            let label = "#\(frame.index)"
            let advance = sheet.textAdvance(label)
            sheet.setColor(0.6, 0.6, 0.6)
            sheet.move(to: Double(x + tileWidth) - advance, baseline)
            sheet.showText(label)
        }
        return sheet
    }

    /// Paints one decoded BGRA frame (opaque: painted as cairo's RGB24, which is BGRX in memory on little-endian)
    /// centred in its tile, rotated clockwise by `rotation` degrees and scaled if trackd's size differs.
    static func paint(_ sample: SampleBuffer, on sheet: CairoCanvas, x: Int, y: Int, g: Geometry, rotation: Int) {
        guard let plane = sample.planes.first, sample.width > 0, sample.height > 0 else { return }
        let w = Int(sample.width), h = Int(sample.height)
        let stride = Int(cairo_format_stride_for_width(CAIRO_FORMAT_RGB24, Int32(w)))
        var pixels = [UInt8](repeating: 0, count: stride * h)
        // The first plane's rows, packed (rowBytes each), into cairo's stride.
        let packed = sample.packedBytes()
        let rowBytes = Int(plane.rowBytes), copied = min(rowBytes, w * 4)
        for row in 0..<min(h, Int(plane.height)) {
            pixels[row * stride ..< row * stride + copied] = packed[row * rowBytes ..< row * rowBytes + copied]
        }
        sheet.paintImage(&pixels, width: w, height: h, stride: stride,
                         clip: (Double(x), Double(y), Double(tileWidth), Double(g.tileHeight)),
                         center: (Double(x) + Double(tileWidth) / 2, Double(y) + Double(g.tileHeight) / 2),
                         degrees: Double(rotation), scale: (Double(g.decodeWidth) / Double(w), Double(g.decodeHeight) / Double(h)))
    }
}
