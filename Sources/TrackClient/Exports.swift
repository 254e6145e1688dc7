/// TrackClient's users see the wire's types (MediaTime, TrackError, Settings, PixelFormat …) and the media
/// vocabulary through this one import, as an AVFoundation user imports AVFoundation and gets CoreMedia's types.
@_exported import TrackdProtocol
