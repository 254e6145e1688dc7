import CCairo

/// A cairo RGB24 image surface and its drawing context, owned here (destroyed with this object): the only trackctl
/// code that holds cairo's pointers. `ContactSheet` draws through it.
@safe final class CairoCanvas {
    private let surface: OpaquePointer
    private let cr: OpaquePointer

    init(width: Int, height: Int) {
        // cairo never returns NULL here: a failure is a surface or context in an error state, which `status` reports.
        let surface = unsafe cairo_image_surface_create(CAIRO_FORMAT_RGB24, Int32(width), Int32(height))!
        unsafe self.surface = surface
        unsafe cr = cairo_create(surface)!
    }

    deinit {
        unsafe cairo_destroy(cr)
        unsafe cairo_surface_destroy(surface)
    }

    func setColor(_ red: Double, _ green: Double, _ blue: Double) { unsafe cairo_set_source_rgb(cr, red, green, blue) }

    /// Paints the current source everywhere (inside the clip).
    func paint() { unsafe cairo_paint(cr) }

    /// The sans-serif face, bold or not, at `size`.
    func setFont(bold: Bool, size: Double) {
        unsafe cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                                      bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL)
        unsafe cairo_set_font_size(cr, size)
    }

    func move(to x: Double, _ y: Double) { unsafe cairo_move_to(cr, x, y) }

    func showText(_ text: String) { unsafe cairo_show_text(cr, text) }

    /// How far `text` advances the current point (cairo_text_extents' x_advance).
    func textAdvance(_ text: String) -> Double {
        var extents = cairo_text_extents_t()
        unsafe cairo_text_extents(cr, text, &extents)
        return extents.x_advance
    }

    /// Paints `pixels` (an RGB24 image: BGRX rows of `stride` bytes) clipped to the rectangle `clip`, with its
    /// centre at `center`, rotated clockwise by `degrees` and scaled by `scale`.
    func paintImage(_ pixels: inout [UInt8], width: Int, height: Int, stride: Int,
                    clip: (x: Double, y: Double, width: Double, height: Double), center: (x: Double, y: Double),
                    degrees: Double, scale: (x: Double, y: Double)) {
        precondition(pixels.count >= stride * height && stride >= width * 4)
        unsafe pixels.withUnsafeMutableBytes { buffer in
            let image = unsafe cairo_image_surface_create_for_data(
                buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), CAIRO_FORMAT_RGB24, Int32(width), Int32(height),
                Int32(stride))
            defer { unsafe cairo_surface_destroy(image) }
            unsafe cairo_save(cr)
            unsafe cairo_rectangle(cr, clip.x, clip.y, clip.width, clip.height)
            unsafe cairo_clip(cr)
            unsafe cairo_translate(cr, center.x, center.y)
            unsafe cairo_rotate(cr, degrees * Double.pi / 180)
            unsafe cairo_scale(cr, scale.x, scale.y)
            unsafe cairo_set_source_surface(cr, image, -Double(width) / 2, -Double(height) / 2)
            unsafe cairo_paint(cr)
            unsafe cairo_restore(cr)
        }
    }

    /// The context's status: CAIRO_STATUS_SUCCESS unless something failed.
    var status: cairo_status_t { unsafe cairo_status(cr) }

    /// A copy of the surface's pixels: BGRX rows (cairo's RGB24 on little-endian) of `stride` bytes.
    func pixels() -> (bytes: [UInt8], stride: Int) {
        unsafe cairo_surface_flush(surface)
        let stride = Int(unsafe cairo_image_surface_get_stride(surface))
        let height = Int(unsafe cairo_image_surface_get_height(surface))
        guard let data = unsafe cairo_image_surface_get_data(surface) else { return ([], stride) }
        return (unsafe Array(UnsafeBufferPointer(start: data, count: stride * height)), stride)
    }

    /// cairo's text for `status`.
    static func describe(_ status: cairo_status_t) -> String {
        unsafe String(cString: cairo_status_to_string(status))
    }
}
