//! Sets PyO3's configuration flags (`Py_GIL_DISABLED` for free-threaded Python), which the
//! aliasing registry of typed arguments depends on.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
