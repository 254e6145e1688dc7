/// The media vocabulary the messages are written in (times, time grids, four-character codes, track kinds, metadata,
/// edit segments, display matrices, errors) lives in MediaVocabulary, which container parsing uses without the wire;
/// every user of the wire sees it through this module.
@_exported import MediaVocabulary
