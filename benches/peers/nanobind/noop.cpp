// Benchmark peer for dlbridge: a nanobind extension whose functions accept
// three 2-d float32 CPU arrays and do nothing with them. Calling them from
// Python measures only what nanobind spends turning each argument into an
// nb::ndarray (plus its ordinary call dispatch), to set beside dlbridge's own
// argument conversion. It is not part of dlbridge; build.sh in this folder
// compiles it into target/peers/python/.

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

namespace nb = nanobind;

// Read-only view: `const float` lets nanobind accept read-only producers.
using ConstMatrix = nb::ndarray<const float, nb::ndim<2>, nb::device::cpu>;
// Writable view: nanobind must reject producers that flag their data read-only.
using MutMatrix = nb::ndarray<float, nb::ndim<2>, nb::device::cpu>;

// Every argument is marked noconvert(): by default nanobind retries a failed
// call with implicit conversion, which would quietly copy a float64 array into
// a new float32 one; a peer that mirrors dlbridge must raise TypeError instead.
// The annotations stay unnamed on purpose: a named nb::arg() moves nanobind
// onto its slower keyword-aware dispatcher, and the benchmark only ever passes
// the three arrays positionally.
#define DLBRIDGE_PEER_STRICT3 \
    nb::arg().noconvert(), nb::arg().noconvert(), nb::arg().noconvert()

NB_MODULE(dlbridge_peer_nanobind, m) {
    m.doc() = "dlbridge benchmark peer: nanobind nb::ndarray no-op functions";

    m.def("noop3",
          [](ConstMatrix, ConstMatrix, ConstMatrix) {}, DLBRIDGE_PEER_STRICT3,
          "Take three read-only 2-d float32 CPU arrays; do nothing.");

    m.def("noop3_writable",
          [](MutMatrix, MutMatrix, MutMatrix) {}, DLBRIDGE_PEER_STRICT3,
          "Take three writable 2-d float32 CPU arrays; do nothing.");
}
