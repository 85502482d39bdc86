//! One declaration per kernel, for every way it is called: eagerly from Python (a
//! `#[pyfunction]` on NumPy arrays, PyTorch tensors, JAX arrays), inside `jax.jit` (an XLA FFI
//! handler) and inside `torch.compile` (a `torch.library` operator, registered by
//! `dlbridge.torch.register`).
//!
//! [`kernel!`](crate::kernel!) takes a function whose parameters are typed arguments and
//! attributes:
//!
//! - [`TensorArg`](crate::TensorArg) parameters are read (`Tensor` in PyTorch's schema);
//! - [`TensorArgMut`](crate::TensorArgMut) parameters are written: each is a **result** where the
//!   `where` clause gives its shape (`out = like(a)`, or `out = shape(rule)`: a function of the
//!   other tensors' shapes), else a **mutated** argument, read and written in place (`Tensor(a!)`);
//! - the other parameters are **attributes**: scalars (`f32`, `f64`, `i32`, `i64`, `bool`; in
//!   PyTorch's schema `float`, `int`, `bool`).
//!
//! The body is written once, on ndarray views ([`KernelParameter::View`]: an `ArrayView` for a
//! `TensorArg`, an `ArrayViewMut` for a `TensorArgMut`, the value for an attribute), and
//! returns `Result<(), BodyError>`. The macro makes a module named after the kernel holding:
//!
//! - the eager `#[pyfunction]` of the same name, taking every parameter in order, the results
//!   too (the caller allocates them); the shapes of results are checked against their rule
//!   before the body runs, and the GIL is released while it runs on many elements;
//! - an XLA FFI handler for the kernel's platform: arguments are the tensors that are not
//!   results, results are the results and the mutated arguments (in order; a mutated
//!   argument's result starts as a copy of it), every buffer checked against its parameter's
//!   type and rule;
//! - `KERNEL`, the [`Kernel`] that [`publish_kernels`] puts on a module.
//!
//! **CUDA kernels.** A kernel whose tensors are [`CudaArg`](crate::CudaArg)s and
//! [`CudaArgMut`](crate::CudaArgMut)s is a CUDA kernel ([`Platform::Cuda`]; a kernel's tensors
//! are on one platform). Its body gets [`CudaBuffer`]s and [`CudaBufferMut`]s (device
//! addresses, shapes, strides, the stream) and enqueues its work on their stream without
//! waiting: eagerly the caller's framework's current stream (one for every tensor of the
//! call, else `ValueError`), inside `jax.jit` XLA's stream for the call (its handler is for
//! XLA's `CUDA` platform, on the device XLA runs it on), inside `torch.compile` PyTorch's
//! current stream (the operator's implementation is for the `CUDA` dispatch key). Inside XLA a
//! mutated argument's result starts as a device-to-device copy of it, which needs this crate's
//! feature `cuda`. The example `examples/cuda_saxpy` declares two, launched with cudarc.
//!
//! ```
//! use dlbridge_pyo3::kernel::{BodyError, publish_kernels};
//! use dlbridge_pyo3::prelude::*;
//! use pyo3::prelude::*;
//!
//! dlbridge_pyo3::kernel! {
//!     /// `out = x * alpha`, elementwise.
//!     pub fn scale(x: TensorArg<'_, f32>, out: TensorArgMut<'_, f32>, alpha: f32)
//!     where out = like(x)
//!     {
//!         out.zip_mut_with(&x, |out, &x| *out = x * alpha);
//!         Ok(())
//!     }
//! }
//!
//! dlbridge_pyo3::kernel! {
//!     /// `out = a @ b` for float32 matrices.
//!     pub fn matmul(a: TensorArg2<'_, f32>, b: TensorArg2<'_, f32>, out: TensorArgMut2<'_, f32>)
//!     where out = shape(product_shape)
//!     {
//!         ndarray::linalg::general_mat_mul(1.0, &a, &b, 0.0, &mut out);
//!         Ok(())
//!     }
//! }
//!
//! /// The shape of `a @ b`, from the shapes of `a` and `b` (two dimensions each: their type's).
//! fn product_shape(shapes: &[&[usize]]) -> Result<Vec<usize>, BodyError> {
//!     let (a, b) = (shapes[0], shapes[1]);
//!     if a[1] != b[0] {
//!         return Err(BodyError::new(format!("a has shape {a:?} and b {b:?}: inner extents differ")));
//!     }
//!     Ok(vec![a[0], b[1]])
//! }
//!
//! dlbridge_pyo3::kernel! {
//!     /// `x = max(x, 0)`, in place.
//!     pub fn relu_(x: TensorArgMut<'_, f64>) {
//!         x.mapv_inplace(|value| value.max(0.0));
//!         Ok(())
//!     }
//! }
//!
//! #[pymodule]
//! fn my_kernels(module: &Bound<'_, PyModule>) -> PyResult<()> {
//!     publish_kernels(module, &[scale::KERNEL, matmul::KERNEL, relu_::KERNEL])
//! }
//! # fn main() {
//! # Python::initialize();
//! # Python::attach(|py| -> PyResult<()> {
//! #     let module = PyModule::new(py, "my_kernels")?;
//! #     my_kernels(&module)?;
//! #     let globals = pyo3::types::PyDict::new(py);
//! #     globals.set_item("m", &module)?;
//! #     py.run(c"
//! # from array import array
//! # x, out = array('f', [1, 2, 3]), array('f', [0] * 3)
//! # m.scale(x, out, 2.0)
//! # assert out.tolist() == [2, 4, 6], out
//! # try:
//! #     m.scale(x, array('f', [0] * 4), 2.0)
//! # except ValueError as error:
//! #     assert 'out has shape (4,), but its rule gives (3,)' in str(error), error
//! # else:
//! #     raise AssertionError('a wrong shape was taken')
//! # spec = m.__dlbridge_kernels__['matmul']
//! # assert spec['output_shapes']([(2, 3), (3, 4)]) == [(2, 4)]
//! # assert [p[:2] for p in spec['parameters']] == [('a', 'input'), ('b', 'input'), ('out', 'output')]
//! # assert 'cpu' in m.__dlbridge_xla_handlers__['relu_']
//! # ", Some(&globals), None)?;
//! #     Ok(())
//! # }).unwrap();
//! # }
//! ```
//!
//! (Kernels are declared at a module's top level: the module the macro makes sees the items
//! beside it, not a function's locals.)
//!
//! `dlbridge.jax.kernel(module, "matmul")` and `dlbridge.torch.register(module)` (Python) take
//! it from there: the kernel's signature, published as `__dlbridge_kernels__`, gives JAX the
//! results' shapes and data types at trace time and PyTorch its schema and fake (shape-only)
//! implementation.

mod signature;
mod xla_buffers;
mod parameter;
mod cuda;

use dlbridge::xla::ffi::XLA_FFI_Handler;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyList, PyModule, PyTuple};

pub use self::cuda::{CudaBuffer, CudaBufferMut};
pub use self::parameter::KernelParameter;
pub use self::signature::{
    BodyError, Parameter, Platform, Role, ShapeFunction, ShapeRule, Signature,
};
pub use self::xla_buffers::XlaBuffers;
#[doc(hidden)]
pub use self::xla_buffers::handle_xla;
use crate::streams::WorkStream;
use crate::xla::{XlaHandler, publish_xla_handlers, published_dict};

/// The module attribute that holds the published kernels' signatures.
pub const KERNELS_ATTRIBUTE: &str = "__dlbridge_kernels__";

/// Above this many elements (all tensor parameters together) the eager function releases the
/// GIL while the body runs: releasing and taking it back costs about as much as a few
/// thousand elements' work.
pub const DETACH_ABOVE_ELEMENTS: usize = 1 << 14;

/// A kernel declared with [`kernel!`](crate::kernel!), for [`publish_kernels`]: what the macro
/// generated, by name.
#[derive(Clone, Copy, Debug)]
pub struct Kernel {
    /// The kernel's name (the eager function's, the XLA target's last part, the PyTorch
    /// operator's).
    pub name: &'static str,
    /// The kernel's signature (made once; an error for a `where` clause that does not fit the
    /// parameters).
    pub signature: fn() -> Result<&'static Signature, BodyError>,
    /// The eager `#[pyfunction]`, made for a module.
    pub eager: for<'py> fn(&Bound<'py, PyModule>) -> PyResult<Bound<'py, PyCFunction>>,
    /// The XLA FFI handler, of the kernel's platform
    /// ([`Signature::platform`](crate::kernel::Signature::platform)).
    pub xla: XLA_FFI_Handler,
}

/// Publishes `kernels` on `module`: each eager function as a module attribute of its name,
/// each XLA handler in `__dlbridge_xla_handlers__` (for `dlbridge.jax`; platform `"cpu"` or
/// `"CUDA"`), and each signature in `__dlbridge_kernels__` (`{name: {"parameters": [(name,
/// role, dtype, ndim, like)], "platform": "cpu" | "cuda", "output_shapes": callable,
/// "function": the eager function}}`, for `dlbridge.jax` and `dlbridge.torch`). `ValueError` for a
/// kernel whose `where` clause does not fit its parameters, or a name given twice.
pub fn publish_kernels(module: &Bound<'_, PyModule>, kernels: &[Kernel]) -> PyResult<()> {
    let py = module.py();
    let published = published_dict(module, KERNELS_ATTRIBUTE)?;
    for kernel in kernels {
        let signature =
            (kernel.signature)().map_err(|error| PyValueError::new_err(error.to_string()))?;
        if published.contains(kernel.name)? {
            return Err(PyValueError::new_err(format!(
                "the kernel {:?} is published twice",
                kernel.name
            )));
        }
        let function = (kernel.eager)(module)?;
        module.add_function(function.clone())?;
        let handler = match signature.platform() {
            Platform::Cpu => XlaHandler::cpu(kernel.name, kernel.xla),
            Platform::Cuda => XlaHandler::cuda(kernel.name, kernel.xla),
        };
        publish_xla_handlers(module, &[handler])?;
        let entry = PyDict::new(py);
        let parameters = PyList::empty(py);
        for parameter in signature.parameters() {
            let like = match parameter.rule {
                Some(ShapeRule::Like(like)) => Some(like),
                _ => None,
            };
            parameters.append(PyTuple::new(
                py,
                [
                    parameter.name.into_pyobject(py)?.into_any(),
                    parameter.role.name().into_pyobject(py)?.into_any(),
                    parameter
                        .data_type
                        .to_string()
                        .into_pyobject(py)?
                        .into_any(),
                    parameter.ndim.into_pyobject(py)?.into_any(),
                    like.into_pyobject(py)?.into_any(),
                ],
            )?)?;
        }
        entry.set_item("parameters", parameters)?;
        entry.set_item("platform", signature.platform().name())?;
        entry.set_item("output_shapes", output_shapes_function(py, signature)?)?;
        entry.set_item("function", function)?;
        published.set_item(kernel.name, entry)?;
    }
    Ok(())
}

/// `output_shapes(shapes)`: the results' shapes (a list of tuples) from the shapes of the
/// tensors that are not results, in order; `ValueError` with the rule's message.
fn output_shapes_function<'py>(
    py: Python<'py>,
    signature: &'static Signature,
) -> PyResult<Bound<'py, PyCFunction>> {
    PyCFunction::new_closure(
        py,
        Some(c"output_shapes"),
        Some(c"The results' shapes from the shapes of the tensors that are not results."),
        move |args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, PyDict>>| {
            let (shapes,): (Vec<Vec<usize>>,) = args.extract()?;
            let shapes: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
            let results = signature
                .result_shapes(&shapes)
                .map_err(|error| PyValueError::new_err(error.to_string()))?;
            let py = args.py();
            results
                .into_iter()
                .map(|shape| Ok(PyTuple::new(py, shape)?.unbind()))
                .collect::<PyResult<Vec<Py<PyTuple>>>>()
        },
    )
}

/// The eager function's checks before the body runs: the signature, every result's shape
/// against its rule (`ValueError`), and, for a device kernel, that every tensor's work goes on
/// one stream of one device (`ValueError` naming both otherwise).
#[doc(hidden)]
pub fn check_eager_call(
    signature: Result<&'static Signature, BodyError>,
    shapes: &[Option<&[usize]>],
    streams: &[Option<WorkStream>],
) -> PyResult<()> {
    signature
        .and_then(|signature| signature.check_result_shapes(shapes))
        .map_err(|error| PyValueError::new_err(error.to_string()))?;
    if streams.iter().any(Option::is_some) {
        WorkStream::common(streams.iter().flatten().copied())?;
    }
    Ok(())
}

/// Runs an eager call's body, with the GIL released above [`DETACH_ABOVE_ELEMENTS`]; its
/// error is a `ValueError` naming the kernel.
#[doc(hidden)]
pub fn run_eager(
    py: Python<'_>,
    name: &str,
    elements: usize,
    body: impl FnOnce() -> Result<(), BodyError> + Send,
) -> PyResult<()> {
    let outcome = if elements > DETACH_ABOVE_ELEMENTS {
        py.detach(body)
    } else {
        body()
    };
    outcome.map_err(|error| PyValueError::new_err(format!("{name}: {error}")))
}

/// The number of elements of an eager argument (0 for an attribute).
#[doc(hidden)]
pub fn elements<P: KernelParameter>(parameter: &P) -> usize {
    parameter.shape().map_or(0, |shape| shape.iter().product())
}

/// Declares a kernel once for every way it is called (see [the module](mod@crate::kernel)):
///
/// ```text
/// dlbridge_pyo3::kernel! {
///     /// Docs (the eager function's docstring).
///     pub fn name(a: TensorArg<'_, f32>, out: TensorArgMut<'_, f32>, alpha: f32)
///     where out = like(a)        // or: out = shape(rule_function)
///     {
///         /* a: ArrayView, out: ArrayViewMut, alpha: f32 */
///         Ok(())
///     }
/// }
/// ```
///
/// It expands to a module `name` holding the eager `#[pyfunction] name`, the XLA handler and
/// `KERNEL` ([`Kernel`](crate::kernel::Kernel)); the module sees the items of the one it is
/// declared in (`use super::*`). The crate needs `pyo3` as a dependency of its own (for
/// `#[pyfunction]`).
#[macro_export]
macro_rules! kernel {
    (
        $(#[$meta:meta])*
        $vis:vis fn $name:ident ( $( $param:ident : $ty:ty ),* $(,)? )
        $( where $( $result:ident = $rule:ident ( $($rule_arg:tt)* ) ),+ $(,)? )?
        $body:block
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case, unused_imports, clippy::too_many_arguments)]
        $vis mod $name {
            use super::*;

            /// The kernel's body, on views.
            #[allow(unused_mut)]
            fn __kernel_body(
                $( mut $param: <$ty as $crate::kernel::KernelParameter>::View<'_> ),*
            ) -> ::core::result::Result<(), $crate::kernel::BodyError> $body

            /// The kernel's signature, made once.
            pub fn signature() -> ::core::result::Result<
                &'static $crate::kernel::Signature,
                $crate::kernel::BodyError,
            > {
                static SIGNATURE: ::std::sync::OnceLock<
                    ::core::result::Result<$crate::kernel::Signature, $crate::kernel::BodyError>,
                > = ::std::sync::OnceLock::new();
                SIGNATURE
                    .get_or_init(|| {
                        $crate::kernel::Signature::new(
                            ::core::stringify!($name),
                            ::std::vec![$( $crate::kernel::Parameter::of::<$ty>(::core::stringify!($param)) ),*],
                            &[$($( (::core::stringify!($result), $crate::kernel!(@rule $rule ($($rule_arg)*))) ),+)?],
                        )
                    })
                    .as_ref()
                    .map_err(::core::clone::Clone::clone)
            }

            $(#[$meta])*
            #[::pyo3::pyfunction]
            #[allow(unused_mut)]
            pub fn $name(
                py: ::pyo3::Python<'_>,
                $( mut $param: $ty ),*
            ) -> ::pyo3::PyResult<()> {
                $crate::kernel::check_eager_call(
                    signature(),
                    &[$( $crate::kernel::KernelParameter::shape(&$param) ),*],
                    &[$( $crate::kernel::KernelParameter::work_stream(&$param) ),*],
                )?;
                let elements = 0 $( + $crate::kernel::elements(&$param) )*;
                $crate::kernel::run_eager(py, ::core::stringify!($name), elements, || {
                    __kernel_body($( $crate::kernel::KernelParameter::kernel_view(&mut $param) ),*)
                })
            }

            /// The XLA FFI handler, of the kernel's platform.
            unsafe extern "C" fn __xla(
                frame: *mut $crate::dlbridge::xla::ffi::XLA_FFI_CallFrame,
            ) -> *mut $crate::dlbridge::xla::ffi::XLA_FFI_Error {
                // SAFETY: XLA calls the handler, registered for the signature's platform only
                // (`publish_kernels`), with a live call frame of that platform's buffers.
                unsafe {
                    $crate::kernel::handle_xla(frame, signature, |mut buffers| {
                        $( let $param = <$ty as $crate::kernel::KernelParameter>::xla_view(&mut buffers)?; )*
                        __kernel_body($( $param ),*).map_err(|error| {
                            $crate::dlbridge::xla::HandlerError::invalid_argument(
                                ::std::format!("{}: {error}", ::core::stringify!($name)),
                            )
                        })
                    })
                }
            }

            /// The kernel, for `publish_kernels`.
            pub const KERNEL: $crate::kernel::Kernel = $crate::kernel::Kernel {
                name: ::core::stringify!($name),
                signature,
                eager: |module| ::pyo3::wrap_pyfunction!(self::$name, module),
                xla: __xla,
            };
        }
    };
    (@rule like ($like:ident)) => {
        $crate::kernel::ShapeRule::Like(::core::stringify!($like))
    };
    (@rule shape ($rule:expr)) => {
        $crate::kernel::ShapeRule::Function($rule)
    };
}

#[cfg(test)]
mod tests {
    use dlbridge::DataType;

    use super::*;
    use crate::errors::tuple;

    fn tensor(name: &'static str, role: Role, ndim: Option<usize>) -> Parameter {
        Parameter {
            name,
            role,
            data_type: DataType::FLOAT32,
            ndim,
            rule: None,
            platform: Some(Platform::Cpu),
        }
    }

    fn product(shapes: &[&[usize]]) -> Result<Vec<usize>, BodyError> {
        Ok(vec![shapes[0][0], shapes[1][1]])
    }

    #[test]
    fn results_take_their_rules_and_like_names_an_argument() {
        let signature = Signature::new(
            "k",
            vec![
                tensor("a", Role::Input, Some(2)),
                tensor("b", Role::Input, Some(2)),
                tensor("x", Role::Mutated, None),
                tensor("out", Role::Mutated, None),
                tensor("same", Role::Mutated, None),
                Parameter::of::<f32>("alpha"),
            ],
            &[
                ("out", ShapeRule::Function(product)),
                ("same", ShapeRule::Like("x")),
            ],
        )
        .unwrap();
        let roles: Vec<Role> = signature.parameters().iter().map(|p| p.role).collect();
        assert_eq!(
            roles,
            [
                Role::Input,
                Role::Input,
                Role::Mutated,
                Role::Output,
                Role::Output,
                Role::Attribute
            ]
        );
        let shapes = signature.result_shapes(&[&[2, 3], &[3, 4], &[7]]).unwrap();
        assert_eq!(shapes, [vec![2, 4], vec![7]]);
        // The numbers of shapes and of dimensions are checked before a rule runs.
        let error = signature.result_shapes(&[&[2, 3], &[3, 4]]).unwrap_err();
        assert_eq!(error.message(), "k: 2 shapes given for 3 tensors");
        let error = signature.result_shapes(&[&[2], &[3, 4], &[7]]).unwrap_err();
        assert_eq!(error.message(), "k: a has 1 dimension, not 2");
    }

    #[test]
    fn where_clauses_that_do_not_fit_are_refused() {
        let parameters = || {
            vec![
                tensor("a", Role::Input, None),
                tensor("out", Role::Mutated, None),
            ]
        };
        let refusal = |results: &[(&'static str, ShapeRule)]| {
            Signature::new("k", parameters(), results)
                .unwrap_err()
                .message()
                .to_owned()
        };
        assert_eq!(
            refusal(&[("nope", ShapeRule::Like("a"))]),
            "kernel k: the result nope is not a parameter"
        );
        assert_eq!(
            refusal(&[("a", ShapeRule::Like("a"))]),
            "kernel k: the result a is read-only, not a TensorArgMut"
        );
        assert_eq!(
            refusal(&[("out", ShapeRule::Like("a")), ("out", ShapeRule::Like("a"))]),
            "kernel k: the result out is given twice, not a TensorArgMut"
        );
        assert_eq!(
            refusal(&[("out", ShapeRule::Like("out"))]),
            "kernel k: out = like(out): out is not a tensor parameter that is not a result"
        );
    }

    #[test]
    fn tensors_on_two_platforms_are_refused() {
        let mut on_cuda = tensor("y", Role::Input, None);
        on_cuda.platform = Some(Platform::Cuda);
        let parameters = vec![
            Parameter::of::<f32>("alpha"),
            tensor("x", Role::Input, None),
            on_cuda,
        ];
        let refused = Signature::new("k", parameters, &[]).unwrap_err();
        assert_eq!(
            refused.message(),
            "kernel k: x is a cpu tensor and y a cuda one: a kernel's tensors are on one platform"
        );
        // Attributes alone leave a kernel on the host.
        let scalars = Signature::new("k", vec![Parameter::of::<f32>("alpha")], &[]).unwrap();
        assert_eq!(scalars.platform(), Platform::Cpu);
    }

    #[test]
    fn shapes_are_written_as_python_tuples() {
        assert_eq!(tuple::<usize>(&[]), "()");
        assert_eq!(tuple(&[4usize]), "(4,)");
        assert_eq!(tuple(&[2usize, 3]), "(2, 3)");
        assert_eq!(tuple(&[2i64, 3]), "(2, 3)");
    }
}
