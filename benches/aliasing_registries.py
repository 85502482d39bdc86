"""Each dlbridge module of a benchmark's process with an aliasing registry of its own.

Every extension module built with dlbridge-pyo3 uses one aliasing registry per process
(crates/dlbridge-pyo3/src/claims.rs): the first module to claim memory publishes its own, as a
capsule in the module `_dlbridge_pyo3_shared` of `sys.modules`, and calls it inlined; every
later module finds it there and calls it through the capsule's function pointers, a call across
modules per claim. A benchmark that loads several dlbridge modules (two builds of dlbridge's
extension, the example kernels, the user kernels of benches/peers/dlbridge-user) would so time
every module but the first with a cost that module does not have alone in its process, which
is how a user's extension runs. `own_registry` makes a module publish and keep a registry of
its own: the entry is taken out of `sys.modules` before the module's first claim, as if the
module were the only dlbridge module of the process. benches/compare_builds.py and
benches/python_exchange.py use it.
"""

import ctypes
import sys

# Where dlbridge-pyo3 publishes the registry, and the name of the registry's capsule.
SHARED_MODULE = "_dlbridge_pyo3_shared"
REGISTRY_CAPSULE = b"dlbridge_pyo3.aliasing_registry"


def registry_address():
    """The address of the registry table published in `sys.modules`, or None."""
    shared = sys.modules.get(SHARED_MODULE)
    if shared is None:
        return None
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get_pointer(shared.aliasing_registry, REGISTRY_CAPSULE)


def own_registry(label, first_claim, registries):
    """Runs `first_claim` (the module's first call that claims memory) with no registry in
    `sys.modules`, so that the module publishes and keeps its own; exits naming `label` unless
    it did (a table none of the set `registries` holds), and adds the table there."""
    sys.modules.pop(SHARED_MODULE, None)
    first_claim()
    address = registry_address()
    if address is None or address in registries:
        sys.exit(f"{label} did not publish an aliasing registry of its own")
    registries.add(address)


def shared_registry(label, first_claim, registries):
    """Runs `first_claim` with the registry that a module loaded before published left in
    `sys.modules`, so that the module calls that one, as the second dlbridge module of a
    process does; exits naming `label` unless it did."""
    address = registry_address()
    if address is None:
        sys.exit(f"{label}: a shared registry needs a module that published one before it")
    first_claim()
    if registry_address() != address or address not in registries:
        sys.exit(f"{label} did not take the registry already published")
