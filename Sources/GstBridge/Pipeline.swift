import CGStreamer
import CGstShim
import TrackdProtocol

/// Owns a GstPipeline and its bus. The pipeline is set to NULL before the last unref.
final class Pipeline {
    private let pipeline: GstRef<GstElement>
    private let ownedBus: GstRef<GstBus>
    var element: ElementPtr { pipeline.pointer }
    var bus: BusPtr { ownedBus.pointer }
    /// Passthrough and discovery need no decoder: a missing-plugin message (qtdemux posts one for a codec it does not
    /// know) is then not an error.
    var ignoreMissingPlugins = false

    init() throws(TrackError) {
        guard let p = gst_pipeline_new(nil) else { throw TrackError(.unknown, "gst_pipeline_new failed") }
        pipeline = GstRef(floating: p)  // a toplevel pipeline has no parent to sink its floating ref
        ownedBus = GstRef(full: gst_element_get_bus(p))
    }

    /// NULL before the references go (GstRef's deinits run after this).
    deinit { _ = gst_element_set_state(element, GST_STATE_NULL) }

    /// Adds (bin takes the floating refs) and links the elements in order.
    func addChain(_ elements: [ElementPtr]) throws(TrackError) {
        for e in elements { _ = gst_bin_add(bin(element), e) }
        for (a, b) in zip(elements, elements.dropFirst()) {
            guard gst_element_link(a, b) != 0 else {
                throw TrackError(.unknown, "could not link \(name(a)) to \(name(b))")
            }
        }
    }

    /// trackdfdsrc(fd) ! parsebin, added to the pipeline. Returns the parsebin (borrowed: the pipeline owns it).
    func addSourceAndParser(fd: Int32) throws(TrackError) -> ElementPtr {
        let source = try makeElement("trackdfdsrc")
        let parser = try makeElement("parsebin")
        swift_gst_object_set_int(source.pointer, "fd", fd)
        try addChain([source.pointer, parser.pointer])
        return parser.pointer
    }

    /// Sets `state`; a synchronous FAILURE is reported with the error the element posted.
    func setState(_ state: GstState, context: String) throws(TrackError) {
        if gst_element_set_state(element, state) == GST_STATE_CHANGE_FAILURE {
            throw popError(context: context) ?? TrackError(.unknown, "\(context): state change failed")
        }
    }

    /// Preroll/seek completion: waits for ASYNC_DONE, converting errors and timeouts.
    func waitAsyncDone(timeoutNs: UInt64, context: String) throws(TrackError) {
        switch try waitForAsyncDone(bus, timeoutNs: timeoutNs, context: context, ignoreMissingPlugins: ignoreMissingPlugins) {
        case .done: return
        case .timedOut:
            throw TrackError(.fileFailedToParse, "\(context): timed out after \(timeoutNs / 1_000_000_000) s")
        }
    }

    /// Drains the bus without blocking; returns the first error found (non-error messages are dropped).
    func popError(context: String) -> TrackError? {
        var found: TrackError?
        while let message = gst_bus_pop(bus).map({ GstRef<GstMessage>(full: $0) }) {
            if found == nil {
                found = checkMessage(message.pointer, context: context, ignoreMissingPlugins: ignoreMissingPlugins)
            }
        }
        return found
    }
}

func name(_ e: ElementPtr) -> String {
    takeString(gst_object_get_name(upcast(e, to: GstObject.self))) ?? "element"
}
