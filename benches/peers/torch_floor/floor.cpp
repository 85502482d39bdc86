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
//
// The checked floors: the same steps plus the questions dlbridge must ask of every torch tensor
// because the exchange table does not (issues 18, 19, 28), asked as any extension that does not
// link libtorch must ask them, through Python: `is_neg()` (a negated view's memory holds the
// values negated), and for `from_dlpack` also `requires_grad`. Nothing else is checked.
//
//   add_by_table_checked(a, b)   add_by_table, plus is_neg() of both arguments.
//   noop3_by_table(a, b, c)      the three arguments read through the table, nothing done.
//   noop3_by_table_checked(a, b, c)  the same, plus is_neg() of each.
//   from_dlpack_by_table(t)      the table's managed tensor, wrapped in a new capsule whose
//                                destructor calls the deleter (the smallest owning object).
//   from_dlpack_by_table_checked(t)  the same, after t.requires_grad and t.is_neg().
//
// The floor under a dlbridge kernel registered as a PyTorch operator (benches/compiled_graphs.py):
// torch.ops.dlbridge_floor.axpy(Tensor x, Tensor y, float alpha) -> Tensor, written by hand with
// TORCH_LIBRARY: a CPU kernel (`alpha * x + y` into at::empty_like(x), float32, one shape, any
// strides made contiguous first) and a Meta kernel (the result's shape, for torch.compile).
#include <Python.h>
#include <ATen/ATen.h>
#include <torch/library.h>
#include <ATen/dlpack.h>
#include <torch/csrc/autograd/python_variable.h>

#include <cstdlib>

namespace {

const DLPackExchangeAPI* exchange_table = nullptr;
// torch.Tensor.is_neg, the method descriptor, called with the tensor as its one argument.
PyObject* is_neg_method = nullptr;
PyObject* requires_grad_name = nullptr;

bool have_table() {
    if (exchange_table == nullptr) {
        PyErr_SetString(PyExc_RuntimeError, "torch_floor: the exchange table is missing");
        return false;
    }
    return true;
}

// Whether `tensor.is_neg()` is true; -1 with an exception set on error.
int negated(PyObject* tensor) {
    PyObject* result = PyObject_Vectorcall(is_neg_method, &tensor, 1, nullptr);
    if (result == nullptr) {
        return -1;
    }
    int answer = result == Py_True;
    Py_DECREF(result);
    return answer;
}

// Refuses a negated view (BufferError), as dlbridge does; false with an exception set.
bool refuse_negated(PyObject* tensor) {
    int answer = negated(tensor);
    if (answer < 0) {
        return false;
    }
    if (answer == 1) {
        PyErr_SetString(PyExc_BufferError, "negated view");
        return false;
    }
    return true;
}

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
    if (!have_table()) {
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

PyObject* add_by_table_checked(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "add_by_table_checked takes two tensors");
        return nullptr;
    }
    if (!refuse_negated(args[0]) || !refuse_negated(args[1])) {
        return nullptr;
    }
    return add_by_table(self, args, nargs);
}

PyObject* noop3(PyObject* const* args, Py_ssize_t nargs, bool checked) {
    if (!have_table()) {
        return nullptr;
    }
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "noop3 takes three tensors");
        return nullptr;
    }
    for (Py_ssize_t i = 0; i < 3; ++i) {
        DLTensor tensor;
        if (exchange_table->dltensor_from_py_object_no_sync(args[i], &tensor) != 0) {
            return nullptr;
        }
        if (checked && !refuse_negated(args[i])) {
            return nullptr;
        }
    }
    Py_RETURN_NONE;
}

PyObject* noop3_by_table(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return noop3(args, nargs, false);
}

PyObject* noop3_by_table_checked(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    return noop3(args, nargs, true);
}

void delete_captured(PyObject* capsule) {
    auto* managed = static_cast<DLManagedTensorVersioned*>(
        PyCapsule_GetPointer(capsule, "dlbridge_floor_tensor"));
    if (managed != nullptr && managed->deleter != nullptr) {
        managed->deleter(managed);
    }
}

PyObject* from_dlpack(PyObject* tensor, bool checked) {
    if (!have_table()) {
        return nullptr;
    }
    if (checked) {
        PyObject* tracked = PyObject_GetAttr(tensor, requires_grad_name);
        if (tracked == nullptr) {
            return nullptr;
        }
        bool refused = tracked == Py_True;
        Py_DECREF(tracked);
        if (refused) {
            PyErr_SetString(PyExc_BufferError, "tracked by autograd");
            return nullptr;
        }
        if (!refuse_negated(tensor)) {
            return nullptr;
        }
    }
    DLManagedTensorVersioned* managed = nullptr;
    if (exchange_table->managed_tensor_from_py_object_no_sync(tensor, &managed) != 0) {
        return nullptr;
    }
    PyObject* capsule = PyCapsule_New(managed, "dlbridge_floor_tensor", delete_captured);
    if (capsule == nullptr && managed->deleter != nullptr) {
        managed->deleter(managed);
    }
    return capsule;
}

PyObject* from_dlpack_by_table(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "from_dlpack_by_table takes one tensor");
        return nullptr;
    }
    return from_dlpack(args[0], false);
}

PyObject* from_dlpack_by_table_checked(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    if (nargs != 1) {
        PyErr_SetString(PyExc_TypeError, "from_dlpack_by_table_checked takes one tensor");
        return nullptr;
    }
    return from_dlpack(args[0], true);
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
    {"add_by_table_checked", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(add_by_table_checked)),
     METH_FASTCALL, nullptr},
    {"noop3_by_table", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(noop3_by_table)),
     METH_FASTCALL, nullptr},
    {"noop3_by_table_checked", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(noop3_by_table_checked)),
     METH_FASTCALL, nullptr},
    {"from_dlpack_by_table", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(from_dlpack_by_table)),
     METH_FASTCALL, nullptr},
    {"from_dlpack_by_table_checked", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(from_dlpack_by_table_checked)),
     METH_FASTCALL, nullptr},
    {"empty_wrapped", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(empty_wrapped)),
     METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "dlbridge_peer_torch_floor", nullptr, -1, methods,
};

}  // namespace

namespace {

at::Tensor axpy_cpu(const at::Tensor& x, const at::Tensor& y, double alpha) {
    TORCH_CHECK(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat,
                "axpy: float32 only");
    TORCH_CHECK(x.sizes() == y.sizes(), "axpy: shapes differ");
    at::Tensor xs = x.contiguous();
    at::Tensor ys = y.contiguous();
    at::Tensor out = at::empty_like(xs);
    const float a = static_cast<float>(alpha);
    const float* xp = xs.data_ptr<float>();
    const float* yp = ys.data_ptr<float>();
    float* op = out.data_ptr<float>();
    const int64_t n = out.numel();
    for (int64_t i = 0; i < n; ++i) op[i] = a * xp[i] + yp[i];
    return out;
}

at::Tensor axpy_meta(const at::Tensor& x, const at::Tensor& y, double alpha) {
    TORCH_CHECK(x.sizes() == y.sizes(), "axpy: shapes differ");
    (void)alpha;
    return at::empty_like(x, x.options().memory_format(at::MemoryFormat::Contiguous));
}

}  // namespace

TORCH_LIBRARY(dlbridge_floor, m) {
    m.def("axpy(Tensor x, Tensor y, float alpha) -> Tensor");
}

TORCH_LIBRARY_IMPL(dlbridge_floor, CPU, m) {
    m.impl("axpy", axpy_cpu);
}

TORCH_LIBRARY_IMPL(dlbridge_floor, Meta, m) {
    m.impl("axpy", axpy_meta);
}

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
    is_neg_method = PyObject_GetAttrString(tensor_type, "is_neg");
    requires_grad_name = PyUnicode_InternFromString("requires_grad");
    if (is_neg_method == nullptr || requires_grad_name == nullptr) {
        Py_DECREF(tensor_type);
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
