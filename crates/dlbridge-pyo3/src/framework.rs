//! What dlbridge knows of the producers whose fast paths would answer differently from their
//! own `__dlpack__`: PyTorch and PaddlePaddle.
//!
//! Both publish DLPack 1.3's C exchange table, and their tables export tensors that their
//! `__dlpack__` refuses (a tensor autograd tracks; PyTorch's lazily conjugated or negated
//! views, whose memory holds other values than the tensor's). `__dlpack__` is the reference:
//! every path of dlbridge gives its answer, or a stricter one, so these rules are applied
//! around the fast paths:
//!
//! - **`from_dlpack`** refuses, with `BufferError` as `__dlpack__` does, a tensor that autograd
//!   tracks (PyTorch `requires_grad`, PaddlePaddle `stop_gradient=False`) and a PyTorch view
//!   with the conjugation bit. A view with the negation bit is refused too, whatever its
//!   layout and data type, which is stricter than PyTorch: its `__dlpack__` exports the memory
//!   as it is, so that the consumer reads the values negated (silently wrong data).
//! - **Read-only typed arguments** (`TensorArg`) read a tracked tensor as `x.detach()` does:
//!   the same memory, outside the graph. Lazy views are refused as by `from_dlpack`.
//! - **Writable typed arguments** (`TensorArgMut`) never write into memory that autograd
//!   tracks without PyTorch knowing. While grad mode is on, a tracked tensor is refused (leaf
//!   or not: PyTorch's in-place operations refuse a leaf, and record the operation for the
//!   others, which a Rust kernel cannot do, so its gradient would come out wrong with no
//!   error). Under `torch.no_grad()` (as an optimizer step runs) it is written, as PyTorch's
//!   own in-place operations do there. And after every call, each PyTorch or PaddlePaddle
//!   tensor passed as `TensorArgMut` has its version counter bumped, as the frameworks'
//!   in-place operations do, so that `backward()` raises if a tensor it saved was written.
//!   PyTorch's inference tensors are refused outside `torch.inference_mode()`, as its
//!   in-place operations refuse them.
//!   This costs a read of `_version` before the call and one call into the framework per
//!   written tensor after it (about 10 ns and 160 ns for PyTorch: BENCHMARKS.md, "What the
//!   safety checks cost") and is not made for any other argument.
//!
//! The rules are found once per Python type ([`crate::dispatch`]) and held for the life of the
//! process, with the framework objects they call.

use pyo3::exceptions::{PyBufferError, PyTypeError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

use dlbridge::{DataType, DataTypeCode, TensorView};

/// The autograd of a framework: how a tensor says that autograd tracks it, whether grad mode
/// is on, and how an in-place write is reported.
struct Autograd {
    /// The attribute that says whether a tensor is tracked (`requires_grad`,
    /// `stop_gradient`).
    tracked: InstanceAttribute,
    /// The attribute's value for a tracked tensor (`requires_grad` True, `stop_gradient`
    /// False).
    tracked_when: bool,
    /// `torch.is_grad_enabled`, `paddle.is_grad_enabled`.
    grad_enabled: Py<PyAny>,
    /// How a write is reported.
    bump: VersionBump,
}

/// A C attribute of a framework's tensor class, read without a lookup on each call.
struct InstanceAttribute {
    /// The descriptor, taken from the class that defines it, so that no lookup searches the
    /// type on each call.
    descriptor: Py<PyAny>,
    /// The descriptor's C getter and its closure, called directly for instances of the type
    /// the descriptor belongs to (its `d_type`, the third member), which the getter reads its
    /// object as; any other object goes through the descriptor protocol, whose own check
    /// refuses it. (The rules are found for subclasses of `sys.modules["torch"].Tensor`, which
    /// Python code can replace with a class whose `requires_grad` is another type's getter.)
    /// `None` where the descriptor is not a getset descriptor, or its layout is not readable
    /// (the limited API).
    getter: Option<(ffi::getter, SendPointer, SendPointer)>,
}

impl InstanceAttribute {
    /// The attribute `name` of the tensor class `kind`.
    fn new(kind: &Bound<'_, PyType>, name: &str) -> PyResult<Self> {
        let descriptor = descriptor_in_mro(kind, name)?;
        let getter = getter_of(descriptor.bind(kind.py()));
        Ok(InstanceAttribute { descriptor, getter })
    }

    /// The attribute's value on `object`.
    #[inline]
    fn read<'py>(&self, object: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let py = object.py();
        // SAFETY: a live object and the descriptor's live type (the descriptor, held here,
        // holds it), the GIL held; only the types are read.
        let direct = self.getter.filter(|(_, _, owner)| unsafe {
            ffi::PyObject_TypeCheck(object.as_ptr(), owner.0.cast()) != 0
        });
        match direct {
            // SAFETY: the getset's own getter and closure, with an instance of the type the
            // descriptor belongs to (just checked), the GIL held; the result is a new
            // reference, owned here, or NULL with an exception set.
            Some((get, closure, _)) => unsafe {
                Bound::from_owned_ptr_or_err(py, get(object.as_ptr(), closure.0))
            },
            // The descriptor protocol, where its getter cannot be read (the limited API) or
            // the object is not of its type (refused there, with the descriptor's TypeError).
            None => self
                .descriptor
                .bind(py)
                .call_method1(intern!(py, "__get__"), (object,)),
        }
    }
}

/// PyTorch's inference tensors (made under `torch.inference_mode()`), which its in-place
/// operations refuse to write outside inference mode.
struct InferenceTensors {
    /// `torch.Tensor._version`, which an inference tensor (which has no version counter)
    /// raises for: a getter call where `is_inference()` would cost a method call that
    /// releases the GIL.
    version: InstanceAttribute,
    /// `torch.Tensor.is_inference`, which confirms what a raising `_version` suggests.
    is_inference: Py<PyAny>,
    /// `torch.is_inference_mode_enabled`.
    mode_enabled: Py<PyAny>,
}

impl InferenceTensors {
    /// Whether `object` is an inference tensor written outside inference mode.
    fn written_outside_inference_mode(&self, object: &Bound<'_, PyAny>) -> PyResult<bool> {
        let py = object.py();
        if self.version.read(object).is_ok() {
            return Ok(false);
        }
        drop(PyErr::take(py));
        Ok(truth(&call(py, &self.is_inference, &[object.as_ptr()])?)?
            && !truth(&call(py, &self.mode_enabled, &[])?)?)
    }
}

/// A C pointer held for the life of the process (a getset's closure, the type it belongs to).
#[derive(Clone, Copy)]
struct SendPointer(*mut std::ffi::c_void);

// SAFETY: the pointer is only passed back to the C getter it belongs to, or compared with as a
// type, with the GIL held.
unsafe impl Send for SendPointer {}
// SAFETY: as above.
unsafe impl Sync for SendPointer {}

/// The C getter behind `descriptor` (with its closure and the type it belongs to), if it is a
/// getset descriptor.
fn getter_of(descriptor: &Bound<'_, PyAny>) -> Option<(ffi::getter, SendPointer, SendPointer)> {
    #[cfg(not(Py_LIMITED_API))]
    {
        // SAFETY: comparing a live object's type with the interpreter's getset descriptor
        // type; reading its fields only once it is one, whose layout is
        // `PyGetSetDescrObject`, alive as long as `descriptor` (held by the rules), which
        // holds a reference to its type.
        unsafe {
            if ffi::Py_TYPE(descriptor.as_ptr()) != std::ptr::addr_of_mut!(ffi::PyGetSetDescr_Type)
            {
                return None;
            }
            let descriptor = &*descriptor.as_ptr().cast::<ffi::PyGetSetDescrObject>();
            let (getset, owner) = (descriptor.d_getset, descriptor.d_common.d_type);
            if getset.is_null() || owner.is_null() {
                return None;
            }
            let get = (*getset).get?;
            Some((
                get,
                SendPointer((*getset).closure),
                SendPointer(owner.cast()),
            ))
        }
    }
    #[cfg(Py_LIMITED_API)]
    {
        let _ = descriptor;
        None
    }
}

/// How a framework's version counter is bumped for a tensor written in place.
enum VersionBump {
    /// `torch._C._increment_version((x,))`: it takes an iterable of tensors (a bare tensor
    /// would be iterated, bumping once per element).
    TupleOfTensors(Py<PyAny>),
    /// `paddle.Tensor._bump_inplace_version(x)`.
    Method(Py<PyAny>),
}

/// PyTorch's lazy conjugation and negation bits (`is_conj()`, `is_neg()`), which its exchange
/// table ignores and its `__dlpack__` refuses (conjugation) or ignores (negation). The type's
/// methods are held and called with the object as their one argument, which spares the bound
/// method object that `x.is_neg()` makes.
pub(crate) struct LazyBits {
    is_conj: Py<PyAny>,
    is_neg: Py<PyAny>,
}

/// The rules of one framework (see the module docs).
pub(crate) struct FrameworkRules {
    /// The tensor class, as messages name it: `torch.Tensor`, `paddle.Tensor`.
    class_name: &'static str,
    /// How its documentation says "tracked by autograd" in a message.
    tracked_words: &'static str,
    /// Only floating-point and complex tensors can be tracked (PyTorch).
    only_inexact_tracked: bool,
    autograd: Autograd,
    /// PyTorch's inference tensors.
    inference: Option<InferenceTensors>,
    /// PyTorch's lazy views.
    pub(crate) lazy_bits: Option<LazyBits>,
    /// PyTorch: the one `__torch_function__` of tensors whose `__dlpack__` answers as the
    /// table does (a subclass overriding it may answer otherwise), and the disabled one
    /// (`torch.nn.Parameter`).
    torch_function: Option<(Py<PyAny>, Py<PyAny>)>,
}

/// Calls `callable(*args)` with vectorcall.
#[cfg(any(Py_3_12, all(Py_3_11, not(Py_LIMITED_API))))]
fn call<'py>(
    py: Python<'py>,
    callable: &Py<PyAny>,
    args: &[*mut ffi::PyObject],
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a live callable and live arguments, borrowed for the call; the GIL is held
    // (`py`); the result is a new reference, owned here, or NULL with an exception set.
    unsafe {
        let result = ffi::PyObject_Vectorcall(
            callable.as_ptr(),
            args.as_ptr(),
            args.len(),
            std::ptr::null_mut(),
        );
        Bound::from_owned_ptr_or_err(py, result)
    }
}

/// Calls `callable(*args)` with an argument tuple: `PyObject_Vectorcall` is in the limited
/// API (abi3) only from Python 3.12. The same call, with the same result or exception.
#[cfg(not(any(Py_3_12, all(Py_3_11, not(Py_LIMITED_API)))))]
fn call<'py>(
    py: Python<'py>,
    callable: &Py<PyAny>,
    args: &[*mut ffi::PyObject],
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: live arguments, borrowed for the call (the tuple takes its own references);
    // the GIL is held (`py`).
    let args = args
        .iter()
        .map(|&arg| unsafe { Borrowed::from_ptr(py, arg) });
    let args = pyo3::types::PyTuple::new(py, args)?;
    callable.bind(py).call1(args)
}

/// The truth of a result that is True or False (anything else by its truth value).
fn truth(value: &Bound<'_, PyAny>) -> PyResult<bool> {
    // SAFETY: comparing addresses with the interpreter's two booleans.
    let (true_, false_) = unsafe { (ffi::Py_True(), ffi::Py_False()) };
    if value.as_ptr() == true_ {
        Ok(true)
    } else if value.as_ptr() == false_ {
        Ok(false)
    } else {
        value.is_truthy()
    }
}

impl LazyBits {
    /// Whether the bit `method` reads is set on `object`.
    fn ask(method: &Py<PyAny>, object: &Bound<'_, PyAny>) -> PyResult<bool> {
        truth(&call(object.py(), method, &[object.as_ptr()])?)
    }

    /// The refusal of a lazy view of `object`, if it is one: `BufferError`, as PyTorch's
    /// `__dlpack__` refuses the conjugation bit (and, stricter, the negation bit it ignores).
    /// `exported` is what the exchange table made of the object, when it was asked: its data
    /// data type spares the conjugation question (see [`LazyBits::may_be_conjugated`]).
    pub(crate) fn refusal(
        &self,
        object: &Bound<'_, PyAny>,
        exported: Option<&TensorView<'_>>,
    ) -> PyResult<Option<PyErr>> {
        if Self::may_be_conjugated(exported) && Self::ask(&self.is_conj, object)? {
            return Ok(Some(PyBufferError::new_err(
                "a torch.Tensor with the conjugation bit set cannot be exported through DLPack \
                 (its memory holds the unconjugated values; torch.Tensor.__dlpack__ refuses it \
                 too): pass x.resolve_conj()",
            )));
        }
        if Self::ask(&self.is_neg, object)? {
            return Ok(Some(PyBufferError::new_err(
                "a torch.Tensor with the negation bit set cannot be exported through DLPack (its \
                 memory holds the values negated, which torch.Tensor.__dlpack__ would hand out \
                 as they are): pass x.resolve_neg()",
            )));
        }
        Ok(None)
    }

    /// Whether the conjugation bit can be set on a tensor whose export is known (`None`:
    /// unknown, it can): only on complex tensors, PyTorch sets it on no other. The type's
    /// `is_conj()` / `is_neg()` cost about 85 ns each (PyTorch releases the GIL in them).
    /// The negation bit is asked of every tensor, whatever its data type and layout: no layout
    /// gives it away (`x._neg_view()` is C-contiguous, and `detach()` keeps the bit on a tensor
    /// that is no view), and the private `_neg_view()` sets it on integer and boolean tensors
    /// too.
    fn may_be_conjugated(exported: Option<&TensorView<'_>>) -> bool {
        exported.is_none_or(|tensor| tensor.dtype().code == DataTypeCode::COMPLEX)
    }
}

/// What a tensor is reached for, which decides the rules of its framework that apply
/// ([`FrameworkRules::admit`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Purpose {
    /// An import (`from_dlpack`): what the framework's `__dlpack__` refuses is refused.
    Import,
    /// A read-only typed argument: a tensor autograd tracks is read as `detach()` reads it.
    Read,
    /// A writable typed argument: written only where the framework's in-place operations
    /// would write.
    Write,
}

impl FrameworkRules {
    /// The tensor class, as messages name it: `torch.Tensor`, `paddle.Tensor`.
    #[inline]
    pub(crate) fn class_name(&self) -> &'static str {
        self.class_name
    }

    /// Whether autograd tracks `object`.
    #[inline]
    pub(crate) fn is_tracked(&self, object: &Bound<'_, PyAny>) -> PyResult<bool> {
        let value = self.autograd.tracked.read(object)?;
        Ok(truth(&value)? == self.autograd.tracked_when)
    }

    /// Whether a tensor of `dtype` can be tracked at all: PyTorch tracks floating-point and
    /// complex tensors only (it refuses `requires_grad` on others); PaddlePaddle lets any
    /// tensor have `stop_gradient=False`.
    fn may_be_tracked(&self, dtype: DataType) -> bool {
        !self.only_inexact_tracked
            || !matches!(
                dtype.code,
                DataTypeCode::INT | DataTypeCode::UINT | DataTypeCode::BOOL
            )
    }

    /// Whether the framework's grad mode is on.
    fn grad_enabled(&self, py: Python<'_>) -> PyResult<bool> {
        truth(&call(py, &self.autograd.grad_enabled, &[])?)
    }

    /// `from_dlpack`'s own refusal (`BufferError`), the first of `__dlpack__`'s: a tracked
    /// tensor. `exported` is what the exchange table made of the object, when it was asked:
    /// its data type spares the question where it cannot be yes.
    fn refuse_tracked(
        &self,
        object: &Bound<'_, PyAny>,
        exported: Option<&TensorView<'_>>,
    ) -> PyResult<()> {
        let may_be_tracked = exported.is_none_or(|view| self.may_be_tracked(view.dtype()));
        if may_be_tracked && self.is_tracked(object)? {
            return Err(PyBufferError::new_err(format!(
                "a {} that {} cannot be exported through DLPack ({}.__dlpack__ refuses it \
                 too): pass x.detach()",
                self.class_name, self.tracked_words, self.class_name
            )));
        }
        Ok(())
    }

    /// A `TensorArgMut`'s refusals (`TypeError`), each where the framework's own in-place
    /// operations refuse too, in its words: an inference tensor outside inference mode
    /// (PyTorch); a tracked tensor while grad mode is on (PyTorch refuses a leaf, a view of
    /// one, a view made under no_grad or inference mode, an output of a multi-output view
    /// or custom Function; it records the operation for the other tracked tensors, which a
    /// Rust kernel cannot do, so these are refused too).
    fn check_writable(&self, object: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Some(inference) = &self.inference {
            if inference.written_outside_inference_mode(object)? {
                return Err(PyTypeError::new_err(
                    "cannot write in place into an inference tensor (made under \
                     torch.inference_mode()) outside inference mode: PyTorch's own in-place \
                     operations refuse it too (\"Inplace update to inference tensor outside \
                     InferenceMode is not allowed\"); run the kernel under \
                     torch.inference_mode(), or pass x.clone() to write a normal tensor",
                ));
            }
        }
        if self.is_tracked(object)? && self.grad_enabled(object.py())? {
            return Err(PyTypeError::new_err(format!(
                "cannot write in place into a {} that {} while grad mode is on: autograd \
                 would not know of the write and the gradient would be wrong; run the kernel \
                 under no_grad(), or pass x.detach() to write outside autograd",
                self.class_name, self.tracked_words
            )));
        }
        Ok(())
    }

    /// The framework's rules for `object` reached for `purpose`, applied once by every path:
    /// after the source that described its tensor (`exported`), or, for `__dlpack__`, before
    /// it is asked (`None`: every question is asked). First the purpose's own rule
    /// ([`FrameworkRules::admit_purpose`]), then a lazy view (PyTorch's conjugation or
    /// negation bit), whose memory holds other values than the tensor's: every purpose refuses
    /// it, with the same `BufferError`, as `__dlpack__` does.
    #[inline]
    pub(crate) fn admit(
        &self,
        object: &Bound<'_, PyAny>,
        exported: Option<&TensorView<'_>>,
        purpose: Purpose,
    ) -> PyResult<()> {
        self.admit_purpose(object, exported, purpose)?;
        match &self.lazy_bits {
            Some(lazy_bits) => match lazy_bits.refusal(object, exported)? {
                Some(refusal) => Err(refusal),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    /// The rule of `purpose` alone, without the lazy view's ([`FrameworkRules::admit`]):
    ///
    /// - for an import, a tracked tensor ([`FrameworkRules::refuse_tracked`], `BufferError`);
    /// - for a writable argument, what the framework's in-place operations refuse
    ///   ([`FrameworkRules::check_writable`], `TypeError`);
    /// - for a read-only argument, nothing (a tracked tensor is read as `detach()` reads it).
    ///
    /// Asked alone before a typed argument's reference import, which applies the lazy view's
    /// rule to what it imports (`x.detach()` keeps `x`'s bits).
    #[inline]
    pub(crate) fn admit_purpose(
        &self,
        object: &Bound<'_, PyAny>,
        exported: Option<&TensorView<'_>>,
        purpose: Purpose,
    ) -> PyResult<()> {
        match purpose {
            Purpose::Import => self.refuse_tracked(object, exported),
            Purpose::Write => self.check_writable(object),
            Purpose::Read => Ok(()),
        }
    }

    /// `object` outside autograd: `object.detach()` for a tracked tensor (the same memory),
    /// `object` itself otherwise.
    pub(crate) fn untracked<'py>(&self, object: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        if self.is_tracked(object)? {
            object.call_method0(intern!(object.py(), "detach"))
        } else {
            Ok(object.clone())
        }
    }

    /// Reports an in-place write of `object` to autograd (its version counter), as the
    /// framework's own in-place operations do.
    pub(crate) fn bump_version(&self, object: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = object.py();
        match &self.autograd.bump {
            VersionBump::TupleOfTensors(increment) => {
                let tensors = PyTuple::new(py, [object])?;
                call(py, increment, &[tensors.as_ptr()]).map(drop)
            }
            VersionBump::Method(bump) => call(py, bump, &[object.as_ptr()]).map(drop),
        }
    }

    /// Whether the framework's exchange table answers for objects of `kind` as its
    /// `__dlpack__` does: for PyTorch, not for a subclass with a `__torch_function__` of its
    /// own, through which its `__dlpack__` is dispatched.
    pub(crate) fn table_answers_for(&self, kind: &Bound<'_, PyType>) -> PyResult<bool> {
        let Some((default, disabled)) = &self.torch_function else {
            return Ok(true);
        };
        let py = kind.py();
        let function = kind.getattr(intern!(py, "__torch_function__"))?;
        // A classmethod is bound anew on each lookup: compare the functions it wraps.
        let function = function
            .getattr_opt(intern!(py, "__func__"))?
            .unwrap_or(function);
        Ok(function.is(default.bind(py)) || function.is(disabled.bind(py)))
    }
}

/// The rules for objects of `kind`, if it is a tensor class of a framework dlbridge knows
/// (checked against the frameworks already imported; looked up once per type).
pub(crate) fn rules_for(kind: &Bound<'_, PyType>) -> PyResult<Option<&'static FrameworkRules>> {
    let py = kind.py();
    let modules = py
        .import(intern!(py, "sys"))?
        .getattr(intern!(py, "modules"))?;
    for (module_name, rules) in [
        ("torch", &TORCH as &PyOnceLock<FrameworkRules>),
        ("paddle", &PADDLE),
    ] {
        let Ok(module) = modules.get_item(module_name) else {
            continue;
        };
        let Some(tensor_class) = module.getattr_opt(intern!(py, "Tensor"))? else {
            continue;
        };
        let Ok(tensor_class) = tensor_class.cast_into::<PyType>() else {
            continue;
        };
        if !kind.is_subclass(&tensor_class)? {
            continue;
        }
        let rules = rules.get_or_try_init(py, || match module_name {
            "torch" => torch_rules(&module, &tensor_class),
            _ => paddle_rules(&module, &tensor_class),
        })?;
        return Ok(Some(rules));
    }
    Ok(None)
}

static TORCH: PyOnceLock<FrameworkRules> = PyOnceLock::new();
static PADDLE: PyOnceLock<FrameworkRules> = PyOnceLock::new();

/// The attribute `name` as found on `kind` (through its MRO), unbound.
fn class_attribute(kind: &Bound<'_, PyType>, name: &str) -> PyResult<Py<PyAny>> {
    Ok(kind.getattr(name)?.unbind())
}

fn torch_rules(torch: &Bound<'_, PyAny>, tensor: &Bound<'_, PyType>) -> PyResult<FrameworkRules> {
    let torch_c = torch.getattr("_C")?;
    let default = tensor.getattr("__torch_function__")?.getattr("__func__")?;
    Ok(FrameworkRules {
        class_name: "torch.Tensor",
        tracked_words: "requires grad",
        only_inexact_tracked: true,
        autograd: Autograd {
            // The getset descriptor, from the class that defines it (`torch._C.TensorBase`).
            tracked: InstanceAttribute::new(tensor, "requires_grad")?,
            tracked_when: true,
            grad_enabled: torch.getattr("is_grad_enabled")?.unbind(),
            bump: VersionBump::TupleOfTensors(torch_c.getattr("_increment_version")?.unbind()),
        },
        inference: Some(InferenceTensors {
            version: InstanceAttribute::new(tensor, "_version")?,
            is_inference: class_attribute(tensor, "is_inference")?,
            mode_enabled: torch.getattr("is_inference_mode_enabled")?.unbind(),
        }),
        lazy_bits: Some(LazyBits {
            is_conj: class_attribute(tensor, "is_conj")?,
            is_neg: class_attribute(tensor, "is_neg")?,
        }),
        torch_function: Some((
            default.unbind(),
            torch_c.getattr("_disabled_torch_function_impl")?.unbind(),
        )),
    })
}

fn paddle_rules(paddle: &Bound<'_, PyAny>, tensor: &Bound<'_, PyType>) -> PyResult<FrameworkRules> {
    Ok(FrameworkRules {
        class_name: "paddle.Tensor",
        tracked_words: "does not stop gradient (stop_gradient=False)",
        only_inexact_tracked: false,
        autograd: Autograd {
            tracked: InstanceAttribute::new(tensor, "stop_gradient")?,
            tracked_when: false,
            grad_enabled: paddle.getattr("is_grad_enabled")?.unbind(),
            bump: VersionBump::Method(class_attribute(tensor, "_bump_inplace_version")?),
        },
        inference: None,
        lazy_bits: None,
        torch_function: None,
    })
}

/// The descriptor `name` as stored in the `__dict__` of the first class of `kind`'s MRO that
/// defines it (a getset descriptor for the frameworks' C attributes).
fn descriptor_in_mro(kind: &Bound<'_, PyType>, name: &str) -> PyResult<Py<PyAny>> {
    let py = kind.py();
    let Some(class) = defining_class(kind, &[name])? else {
        return Err(PyTypeError::new_err(format!(
            "{} has no attribute {name}",
            kind.name()?
        )));
    };
    Ok(class
        .getattr(intern!(py, "__dict__"))?
        .get_item(name)?
        .unbind())
}

/// The first class of `kind`'s MRO whose own `__dict__` defines one of `names`.
pub(crate) fn defining_class<'py>(
    kind: &Bound<'py, PyType>,
    names: &[&str],
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = kind.py();
    for class in kind.getattr(intern!(py, "__mro__"))?.try_iter()? {
        let class = class?;
        let dict = class.getattr(intern!(py, "__dict__"))?;
        for name in names {
            if dict.contains(name)? {
                return Ok(Some(class));
            }
        }
    }
    Ok(None)
}
