// Compiled by the layers_* tests (CMakeLists.txt) with one library's include directories:
// including GPUSCOPE_PROBE_HEADER must fail across a forbidden arrow and succeed within the layer.
// It lives outside src/ so that a quoted include is not found beside it.
#include GPUSCOPE_PROBE_HEADER

int gpuscope_layer_probe() { return 0; }
