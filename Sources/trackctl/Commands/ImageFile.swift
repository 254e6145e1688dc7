import CCairo
import CJPEG
import SystemCalls
import TrackdProtocol

#if canImport(Glibc)
import Glibc
#endif

/// The image files of `frame` and `contact-sheet`: the format follows --output's extension (`.png`; `.jpg` or
/// `.jpeg`), `-` is PNG on standard output, any other extension is a usage error. PNG is encoded by cairo
/// (cairo_surface_write_to_png_stream, libpng inside), JPEG by Debian's libjpeg-turbo — never by trackctl.
struct ImageFile {
    enum Format: String { case png = "PNG", jpeg = "JPEG" }

    /// JPEG quality (libjpeg's 0 … 100 scale): ffmpeg's `-q:v 2` region, visually lossless for frames.
    static let jpegQuality: Int32 = 92

    let path: String
    let format: Format

    /// The format `path` names; a usage error for any other extension.
    init(_ path: String) throws(UsageError) {
        self.path = path
        if path == "-" { format = .png; return }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        let ext = name.contains(".") ? String(name.split(separator: ".").last ?? "").lowercased() : ""
        switch ext {
        case "png": format = .png
        case "jpg", "jpeg": format = .jpeg
        default:
            throw UsageError("--output \(path): "
                + (ext.isEmpty ? "no extension" : "unknown image extension .\(ext)")
                + "; use .png, .jpg or .jpeg (or - for PNG on standard output)")
        }
    }

    /// Encodes `pixels` (BGRX rows of `stride` bytes, cairo's RGB24 on little-endian) and writes them to the path
    /// or standard output; exits with a clear error when encoding or writing fails.
    func write(_ pixels: inout [UInt8], width: Int, height: Int, stride: Int) {
        let bytes = switch format {
        case .png: Self.png(&pixels, width: width, height: height, stride: stride)
        case .jpeg: Self.jpeg(pixels, width: width, height: height, stride: stride)
        }
        guard let bytes else { Exit.failed(TrackError(.unknown, "encoding \(path) as \(format.rawValue) failed")) }
        if path == "-" {
            guard IO.out.write(bytes) else { Exit.failed(TrackError(.unknown, "writing the image to standard output failed")) }
            IO.out.flush()
            return
        }
        guard let file = OutputFile.create(path) else {
            Exit.failed(TrackError(.unknown, "cannot write \(path): \(SystemError("fopen", errno: currentErrno()).reason)"))
        }
        let written = file.write(bytes)
        file.close()
        guard written else { Exit.failed(TrackError(.unknown, "writing \(path) failed")) }
    }

    /// cairo's PNG of the pixels, collected in memory; nil when cairo reports an error.
    static func png(_ pixels: inout [UInt8], width: Int, height: Int, stride: Int) -> [UInt8]? {
        final class Sink { var bytes: [UInt8] = [] }
        let sink = Sink()
        let status = unsafe pixels.withUnsafeMutableBytes { buffer in
            let surface = unsafe cairo_image_surface_create_for_data(
                buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), CAIRO_FORMAT_RGB24, Int32(width), Int32(height),
                Int32(stride))
            defer { unsafe cairo_surface_destroy(surface) }
            let box = unsafe Unmanaged.passUnretained(sink).toOpaque()
            return unsafe cairo_surface_write_to_png_stream(surface, { closure, data, length in
                guard let closure, let data else { return CAIRO_STATUS_WRITE_ERROR }
                let sink = unsafe Unmanaged<Sink>.fromOpaque(closure).takeUnretainedValue()
                sink.bytes.append(contentsOf: unsafe UnsafeBufferPointer(start: data, count: Int(length)))
                return CAIRO_STATUS_SUCCESS
            }, box)
        }
        return status == CAIRO_STATUS_SUCCESS ? sink.bytes : nil
    }

    /// libjpeg-turbo's baseline JPEG (4:2:0, `jpegQuality`) of the pixels, read as BGRX (JCS_EXT_BGRX), encoded in
    /// memory (jpeg_mem_dest). libjpeg's default error handler prints its message and exits on a failure.
    static func jpeg(_ pixels: [UInt8], width: Int, height: Int, stride: Int) -> [UInt8]? {
        var errors = jpeg_error_mgr()
        var info = jpeg_compress_struct()
        unsafe info.err = jpeg_std_error(&errors)
        // jpeg_create_compress is a macro around jpeg_CreateCompress with the library version and the struct size.
        unsafe jpeg_CreateCompress(&info, JPEG_LIB_VERSION, MemoryLayout<jpeg_compress_struct>.size)
        defer { unsafe jpeg_destroy_compress(&info) }
        var output: UnsafeMutablePointer<UInt8>? = nil
        var length: UInt = 0
        unsafe jpeg_mem_dest(&info, &output, &length)
        info.image_width = JDIMENSION(width)
        info.image_height = JDIMENSION(height)
        info.input_components = 4
        info.in_color_space = JCS_EXT_BGRX
        unsafe jpeg_set_defaults(&info)
        unsafe jpeg_set_quality(&info, jpegQuality, 1)
        unsafe jpeg_start_compress(&info, 1)
        unsafe pixels.withUnsafeBufferPointer { buffer in
            while info.next_scanline < info.image_height {
                var row: JSAMPROW? = unsafe UnsafeMutablePointer(mutating: buffer.baseAddress! + Int(info.next_scanline) * stride)
                unsafe _ = jpeg_write_scanlines(&info, &row, 1)
            }
        }
        unsafe jpeg_finish_compress(&info)
        guard let output else { return nil }
        defer { unsafe free(output) }
        return unsafe Array(UnsafeBufferPointer(start: output, count: Int(length)))
    }
}
