// The floor under dlbridge's "two torch tensors in, a new torch tensor out" (the `add` row of
// benches/python_exchange.py): the same steps written by hand in C++ against the raw CPython
// API (METH_FASTCALL), with none of dlbridge's checks. Not part of dlbridge; built by
// `make bench-peers` against the installed torch wheel's headers.
//
//   add_by_table(a, b)  both arguments read through PyTorch's DLPack exchange table, the sum of
//                       the 16 floats written into one malloc'd DLManagedTensorVersioned, which
//                       the table's managed_tensor_to_py_object_no_sync turns into a tensor.
//                       Assumes 4x4 contiguous float32 CPU tensors and checks nothing else.
//   empty_wrapped()     PyTorch's own cost of a new 4x4 float32 tensor object:
//                       THPVariable_Wrap(at::empty({4, 4})), no arguments, no arithmetic.
#include <Python.h>
#include <ATen/ATen.h>
#include <ATen/dlpack.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdlib>

namespace {

const DLPackExchangeAPI* exchange_table = nullptr;

// One allocation holding the managed tensor, its shape and strides and its 16 floats.
struct OwnedResult {
    DLManagedTensorVersioned managed;
    int64_t shape[2];
    int64_t strides[2];
    float data[16];
};

void free_owned_result(DLManagedTensorVersioned* managed) {
    std::free(reinterpret_cast<OwnedResult*>(managed));
}

PyObject* add_by_table(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (exchange_table == nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "torch_floor: the exchange table is missing");
        return nullptr;
    }
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_by_table takes two tensors");
        return nullptr;
    }
    DLTensor a;
    DLTensor b;
    if (exchange_table->dltensor_from_py_object_no_sync(args[0], &a) != 0 ||
        exchange_table->dltensor_from_py_object_no_sync(args[1], &b) != 0) {
        return nullptr;
    }
    auto* owned = static_cast<OwnedResult*>(std::malloc(sizeof(OwnedResult)));
    if (owned == nullptr) {
        return PyErr_NoMemory();
    }
    owned->shape[0] = 4;
    owned->shape[1] = 4;
    owned->strides[0] = 4;
    owned->strides[1] = 1;
    owned->managed.version.major = DLPACK_MAJOR_VERSION;
    owned->managed.version.minor = DLPACK_MINOR_VERSION;
    owned->managed.manager_ctx = nullptr;
    owned->managed.deleter = free_owned_result;
    owned->managed.flags = 0;
    owned->managed.dl_tensor.data = owned->data;
    owned->managed.dl_tensor.device = DLDevice{kDLCPU, 0};
    owned->managed.dl_tensor.ndim = 2;
    owned->managed.dl_tensor.dtype = DLDataType{kDLFloat, 32, 1};
    owned->managed.dl_tensor.shape = owned->shape;
    owned->managed.dl_tensor.strides = owned->strides;
    owned->managed.dl_tensor.byte_offset = 0;
    const auto* x = static_cast<const float*>(a.data);
    const auto* y = static_cast<const float*>(b.data);
    for (int i = 0; i < 16; ++i) {
        owned->data[i] = x[i] + y[i];
    }
    void* result = nullptr;
    if (exchange_table->managed_tensor_to_py_object_no_sync(&owned->managed, &result) != 0) {
        return nullptr;
    }
    return static_cast<PyObject*>(result);
}

PyObject* empty_wrapped(PyObject*, PyObject* const*, Py_ssize_t) {
    try {
        return THPVariable_Wrap(at::empty({4, 4}, at::TensorOptions().dtype(at::kFloat)));
    } catch (const std::exception& error) {
        PyErr_SetString(PyExc_RuntimeError, error.what());
        return nullptr;
    }
}

PyMethodDef methods[] = {
    {"add_by_table", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(add_by_table)),
     METH_FASTCALL, nullptr},
    {"empty_wrapped", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(empty_wrapped)),
     METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "dlbridge_peer_torch_floor", nullptr, -1, methods,
};

}  // namespace

PyMODINIT_FUNC PyInit_dlbridge_peer_torch_floor() {
    PyObject* torch = PyImport_ImportModule("torch");
    if (torch == nullptr) {
        return nullptr;
    }
    PyObject* tensor_type = PyObject_GetAttrString(torch, "Tensor");
    Py_DECREF(torch);
    if (tensor_type == nullptr) {
        return nullptr;
    }
    PyObject* capsule = PyObject_GetAttrString(tensor_type, "__dlpack_c_exchange_api__");
    Py_DECREF(tensor_type);
    if (capsule == nullptr) {
        return nullptr;
    }
    // The table is static in libtorch_python: the pointer outlives the capsule.
    exchange_table = static_cast<const DLPackExchangeAPI*>(
        PyCapsule_GetPointer(capsule, "dlpack_exchange_api"));
    Py_DECREF(capsule);
    if (exchange_table == nullptr) {
        return nullptr;
    }
    return PyModule_Create(&module_definition);
}
