// ORC (Debian: liborc-0.4-dev), GStreamer's run-time code generator: only CSandbox uses it directly, to seal the
// code ORC generated before the worker's filter and to make every later compile fall back to ORC's C backup
// functions (docs/SECURITY.md "W^X").
#include <orc/orc.h>
