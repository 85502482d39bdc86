//! One declaration per kernel, for every way it is called: eagerly from Python (a
//! `#[pyfunction]` on NumPy arrays, PyTorch tensors, JAX arrays), inside `jax.jit` (an XLA FFI
//! handler) and inside `torch.compile` (a `torch.library` operator, registered by
//! `dlbridge.torch.register`).
//!
//! [`kernel!`](crate::kernel!) takes a function whose parameters are typed arguments and
//! attributes:
//!
//! - [`TensorArg`] parameters are read (`Tensor` in PyTorch's schema);
//! - [`TensorArgMut`] parameters are written: each is a **result** where the `where` clause
//!   gives its shape (`out = like(a)`, or `out = shape(rule)`: a function of the other
//!   tensors' shapes), else a **mutated** argument, read and written in place
//!   (`Tensor(a!)`);
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
//! - an XLA FFI handler for the CPU platform: arguments are the tensors that are not results,
//!   results are the results and the mutated arguments (in order; a mutated argument's result
//!   starts as a copy of it), every buffer checked against its parameter's type and rule;
//! - `KERNEL`, the [`Kernel`] that [`publish_kernels`] puts on a module.
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

use std::fmt;

use dlbridge::ndarray::NdarrayViewExt;
use dlbridge::xla::ffi::XLA_FFI_Handler;
use dlbridge::xla::{Attributes, Call, HandlerError, ResultBuffer};
use dlbridge::{DataType, Element, TensorView};
use ndarray::{ArrayView, ArrayViewMut};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyDict, PyList, PyModule, PyTuple};

use crate::args::constraints::{Constraints, Dimensionality, HOST_MEMORY, expectation_at, fits};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};
use crate::errors::tuple;
use crate::xla::{XlaHandler, publish_xla_handlers, published_dict};

/// The module attribute that holds the published kernels' signatures.
pub const KERNELS_ATTRIBUTE: &str = "__dlbridge_kernels__";

/// Above this many elements (all tensor parameters together) the eager function releases the
/// GIL while the body runs: releasing and taking it back costs about as much as a few
/// thousand elements' work.
pub const DETACH_ABOVE_ELEMENTS: usize = 1 << 14;

/// Why a kernel's body, or a shape rule, refused a call: a message, raised as `ValueError`
/// eagerly and as XLA's `INVALID_ARGUMENT` inside `jax.jit`. The core's errors and ndarray's
/// `ShapeError` convert with `?`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyError {
    message: String,
}

impl BodyError {
    /// An error saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        BodyError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for BodyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for BodyError {}

impl From<dlbridge::Error> for BodyError {
    fn from(error: dlbridge::Error) -> Self {
        BodyError::new(error.to_string())
    }
}

impl From<ndarray::ShapeError> for BodyError {
    fn from(error: ndarray::ShapeError) -> Self {
        BodyError::new(error.to_string())
    }
}

impl From<String> for BodyError {
    fn from(message: String) -> Self {
        BodyError::new(message)
    }
}

impl From<&str> for BodyError {
    fn from(message: &str) -> Self {
        BodyError::new(message)
    }
}

/// What a parameter is to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// A tensor the kernel reads ([`TensorArg`]).
    Input,
    /// A tensor the kernel reads and writes in place ([`TensorArgMut`] without a shape rule).
    Mutated,
    /// A tensor the kernel writes, whose shape its rule gives ([`TensorArgMut`] named in the
    /// `where` clause).
    Output,
    /// A scalar.
    Attribute,
}

impl Role {
    /// The role's name, as `__dlbridge_kernels__` gives it to Python.
    pub const fn name(self) -> &'static str {
        match self {
            Role::Input => "input",
            Role::Mutated => "mutated",
            Role::Output => "output",
            Role::Attribute => "attribute",
        }
    }
}

/// How a result's shape follows from the shapes of the kernel's other tensors.
#[derive(Clone, Copy, Debug)]
pub enum ShapeRule {
    /// The shape of the named tensor parameter (`out = like(x)`).
    Like(&'static str),
    /// A function of the shapes of the tensors that are not results, in their order
    /// (`out = shape(rule)`); their numbers of dimensions are checked against their types
    /// before it is called.
    Function(ShapeFunction),
}

/// A result's shape as a function of the shapes of the tensors that are not results.
pub type ShapeFunction = fn(&[&[usize]]) -> Result<Vec<usize>, BodyError>;

/// One parameter of a kernel, as its type and the `where` clause declare it.
#[derive(Clone, Copy, Debug)]
pub struct Parameter {
    /// The parameter's name.
    pub name: &'static str,
    /// What it is to the kernel.
    pub role: Role,
    /// Its data type (the element type of a tensor, the scalar's type of an attribute).
    pub data_type: DataType,
    /// Its number of dimensions where its type fixes one (`Ix2`); `None` for any.
    pub ndim: Option<usize>,
    /// A result's shape rule.
    pub rule: Option<ShapeRule>,
}

impl Parameter {
    /// The parameter `name` of type `P`, as the kernel's type declares it (before the `where`
    /// clause makes results of some).
    pub fn of<P: KernelParameter>(name: &'static str) -> Self {
        Parameter {
            name,
            role: P::ROLE,
            data_type: P::DATA_TYPE,
            ndim: P::NDIM,
            rule: None,
        }
    }

    fn is_tensor(&self) -> bool {
        self.role != Role::Attribute
    }
}

/// A kernel's parameters, checked: every result a [`TensorArgMut`] with a rule, every `like`
/// naming a tensor that is not a result.
#[derive(Debug)]
pub struct Signature {
    name: &'static str,
    parameters: Vec<Parameter>,
    /// For each parameter, its index among the tensors that are not results (the shapes a
    /// rule gets), where it is one.
    shape_index: Vec<Option<usize>>,
    /// The results, in order: each one's parameter and, for a `like` rule, the index of the
    /// shape it takes among those a rule gets (worked out once, not by name on every call).
    results: Vec<ResultRule>,
    /// Whether a result's rule is a function: only then are shapes collected for it per call.
    computes: bool,
}

/// One result of a [`Signature`].
#[derive(Clone, Copy, Debug)]
struct ResultRule {
    /// Its index among the parameters.
    parameter: usize,
    /// For a `like` rule, the index among the shapes a rule gets of the tensor it is like.
    like: Option<usize>,
}

impl Signature {
    /// The signature of kernel `name`: `parameters` in order, of which `results` (name and
    /// rule) are results. An error names a result that is no [`TensorArgMut`] parameter or
    /// is given twice, and a `like` that names no tensor parameter, or a result.
    pub fn new(
        name: &'static str,
        mut parameters: Vec<Parameter>,
        results: &[(&'static str, ShapeRule)],
    ) -> Result<Signature, BodyError> {
        for &(result, rule) in results {
            let Some(parameter) = parameters.iter_mut().find(|p| p.name == result) else {
                return Err(BodyError::new(format!(
                    "kernel {name}: the result {result} is not a parameter"
                )));
            };
            if parameter.role != Role::Mutated {
                return Err(BodyError::new(format!(
                    "kernel {name}: the result {result} is {}, not a TensorArgMut",
                    if parameter.role == Role::Output {
                        "given twice"
                    } else {
                        "read-only"
                    }
                )));
            }
            parameter.role = Role::Output;
            parameter.rule = Some(rule);
        }
        let mut shape_index = Vec::with_capacity(parameters.len());
        let mut next = 0;
        for parameter in &parameters {
            if parameter.is_tensor() && parameter.role != Role::Output {
                shape_index.push(Some(next));
                next += 1;
            } else {
                shape_index.push(None);
            }
        }
        let mut signature = Signature {
            name,
            parameters,
            shape_index,
            results: Vec::new(),
            computes: false,
        };
        for (index, parameter) in signature.parameters.iter().enumerate() {
            let like = match parameter.rule {
                None => continue,
                Some(ShapeRule::Function(_)) => None,
                Some(ShapeRule::Like(like)) => {
                    Some(signature.like_index(like).ok_or_else(|| {
                        BodyError::new(format!(
                            "kernel {name}: {} = like({like}): {like} is not a tensor parameter \
                         that is not a result",
                            parameter.name
                        ))
                    })?)
                }
            };
            signature.results.push(ResultRule {
                parameter: index,
                like,
            });
        }
        signature.computes = signature.results.iter().any(|result| result.like.is_none());
        Ok(signature)
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The parameters, in order.
    pub fn parameters(&self) -> &[Parameter] {
        &self.parameters
    }

    /// The index among the shapes a rule gets of the parameter `like`.
    fn like_index(&self, like: &str) -> Option<usize> {
        self.parameters
            .iter()
            .position(|p| p.name == like)
            .and_then(|index| self.shape_index[index])
    }

    /// The shape of every result, in order, from the shapes of the tensors that are not
    /// results (in order): an error for a number of shapes or of dimensions the parameters'
    /// types refuse, and the rules' own.
    pub fn result_shapes(&self, shapes: &[&[usize]]) -> Result<Vec<Vec<usize>>, BodyError> {
        let givens = self.parameters.iter().zip(&self.shape_index);
        let mut expected = 0;
        for (parameter, index) in givens {
            let Some(index) = *index else { continue };
            expected += 1;
            let Some(shape) = shapes.get(index) else {
                continue;
            };
            if let Some(ndim) = parameter.ndim.filter(|&ndim| ndim != shape.len()) {
                return Err(BodyError::new(format!(
                    "{}: {} has {} dimension{}, not {ndim}",
                    self.name,
                    parameter.name,
                    shape.len(),
                    if shape.len() == 1 { "" } else { "s" }
                )));
            }
        }
        if shapes.len() != expected {
            return Err(BodyError::new(format!(
                "{}: {} shapes given for {expected} tensors",
                self.name,
                shapes.len()
            )));
        }
        self.results
            .iter()
            .map(
                |result| match (result.like, self.parameters[result.parameter].rule) {
                    (Some(like), _) => Ok(shapes[like].to_vec()),
                    (None, Some(ShapeRule::Function(rule))) => rule(shapes)
                        .map_err(|error| BodyError::new(format!("{}: {error}", self.name))),
                    (None, _) => unreachable!("a result without a like rule has a function rule"),
                },
            )
            .collect()
    }

    /// The shape a function rule computed for result `index` (among the results), from
    /// `computed` (`result_shapes`' answer; empty where no rule is a function).
    fn computed_shape(computed: &[Vec<usize>], index: usize) -> &[usize] {
        computed.get(index).map_or(&[], Vec::as_slice)
    }

    /// Checks the shapes of an eager call's results against their rules, from every
    /// parameter's shape (`None` for attributes). Only a function rule makes it collect the
    /// shapes; a `like` rule compares two of them.
    fn check_result_shapes(&self, shapes: &[Option<&[usize]>]) -> Result<(), BodyError> {
        let computed = if self.computes {
            let given: Vec<&[usize]> = self
                .shape_index
                .iter()
                .zip(shapes)
                .filter(|(index, _)| index.is_some())
                .filter_map(|(_, shape)| *shape)
                .collect();
            self.result_shapes(&given)?
        } else {
            Vec::new()
        };
        for (index, result) in self.results.iter().enumerate() {
            let have = shapes[result.parameter].unwrap_or_default();
            let want = match result.like {
                Some(like) => self.given_shape(shapes, like),
                None => Self::computed_shape(&computed, index),
            };
            if have != want {
                return Err(BodyError::new(format!(
                    "{}: {} has shape {}, but its rule gives {}",
                    self.name,
                    self.parameters[result.parameter].name,
                    tuple(have),
                    tuple(want)
                )));
            }
        }
        Ok(())
    }

    /// The shape of the tensor at `index` among those a rule gets, from every parameter's.
    fn given_shape<'s>(&self, shapes: &[Option<&'s [usize]>], index: usize) -> &'s [usize] {
        self.shape_index
            .iter()
            .position(|&given| given == Some(index))
            .and_then(|parameter| shapes[parameter])
            .unwrap_or_default()
    }
}

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
    /// The XLA FFI handler of the CPU platform.
    pub xla_cpu: XLA_FFI_Handler,
}

/// Publishes `kernels` on `module`: each eager function as a module attribute of its name,
/// each XLA handler in `__dlbridge_xla_handlers__` (for `dlbridge.jax`), and each signature
/// in `__dlbridge_kernels__` (`{name: {"parameters": [(name, role, dtype, ndim, like)],
/// "output_shapes": callable, "function": the eager function}}`, for `dlbridge.jax` and
/// `dlbridge.torch`). `ValueError` for a kernel whose `where` clause does not fit its
/// parameters, or a name given twice.
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
        publish_xla_handlers(module, &[XlaHandler::cpu(kernel.name, kernel.xla_cpu)])?;
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

/// A kernel's parameter type: a typed tensor argument or a scalar attribute. What the body
/// gets of it ([`KernelParameter::View`]), eagerly and inside XLA.
pub trait KernelParameter {
    /// [`Role::Input`], [`Role::Mutated`] (a result where the `where` clause says so) or
    /// [`Role::Attribute`].
    const ROLE: Role;
    /// The element type's, or the scalar's.
    const DATA_TYPE: DataType;
    /// The number of dimensions the type fixes.
    const NDIM: Option<usize>;
    /// What the body gets.
    type View<'v>;
    /// The tensor's shape; `None` for an attribute.
    fn shape(&self) -> Option<&[usize]>;
    /// The body's view of an eager argument (for a [`TensorArgMut`], taking it counts as
    /// writing).
    fn kernel_view(&mut self) -> Self::View<'_>;
    /// The body's view of the next parameter of an XLA call.
    fn xla_view<'c>(buffers: &mut XlaBuffers<'c, '_>) -> Result<Self::View<'c>, HandlerError>;
}

impl<'a, T: Element, D: Dimensionality, C: Constraints> KernelParameter for TensorArg<'a, T, D, C> {
    const ROLE: Role = Role::Input;
    const DATA_TYPE: DataType = T::DTYPE;
    const NDIM: Option<usize> = D::NDIM;
    type View<'v> = ArrayView<'v, T, D>;

    fn shape(&self) -> Option<&[usize]> {
        Some(self.view.shape())
    }

    fn kernel_view(&mut self) -> ArrayView<'_, T, D> {
        self.view.view()
    }

    fn xla_view<'c>(buffers: &mut XlaBuffers<'c, '_>) -> Result<ArrayView<'c, T, D>, HandlerError> {
        let (parameter, argument) = buffers.next_argument()?;
        check_buffer::<T, D, C>(buffers.name, parameter, &argument)?;
        Ok(argument.as_array_dim::<T, D>()?)
    }
}

impl<'a, T: Element, D: Dimensionality, C: Constraints> KernelParameter
    for TensorArgMut<'a, T, D, C>
{
    const ROLE: Role = Role::Mutated;
    const DATA_TYPE: DataType = T::DTYPE;
    const NDIM: Option<usize> = D::NDIM;
    type View<'v> = ArrayViewMut<'v, T, D>;

    fn shape(&self) -> Option<&[usize]> {
        Some(self.view.shape())
    }

    fn kernel_view(&mut self) -> ArrayViewMut<'_, T, D> {
        self.view_mut()
    }

    fn xla_view<'c>(
        buffers: &mut XlaBuffers<'c, '_>,
    ) -> Result<ArrayViewMut<'c, T, D>, HandlerError> {
        let (parameter, result, argument) = buffers.next_result()?;
        check_buffer::<T, D, C>(buffers.name, parameter, &result.view())?;
        if let Some(argument) = argument {
            // A mutated argument: its result starts as its value (`XlaBuffers::new` checked
            // that both have one shape and data type).
            result
                .as_mut_slice::<T>()?
                .copy_from_slice(argument.as_slice::<T>()?);
        }
        Ok(result.as_array_mut::<T, D>()?)
    }
}

macro_rules! scalar_parameters {
    ($($ty:ty),*) => {$(
        impl KernelParameter for $ty {
            const ROLE: Role = Role::Attribute;
            const DATA_TYPE: DataType = <$ty as Element>::DTYPE;
            const NDIM: Option<usize> = None;
            type View<'v> = $ty;

            fn shape(&self) -> Option<&[usize]> {
                None
            }

            fn kernel_view(&mut self) -> $ty {
                *self
            }

            fn xla_view<'c>(buffers: &mut XlaBuffers<'c, '_>) -> Result<$ty, HandlerError> {
                let parameter = buffers.next_parameter()?;
                buffers.attributes.scalar::<$ty>(parameter.name)
            }
        }
    )*};
}

scalar_parameters!(f32, f64, i32, i64, bool);

/// Refuses an XLA buffer that parameter's type does not take (`TensorArg<'_, f32, Ix2>` and a
/// float64 buffer, say), naming the kernel, the parameter and both.
fn check_buffer<T: Element, D: Dimensionality, C: Constraints>(
    kernel: &str,
    parameter: &Parameter,
    buffer: &TensorView<'_>,
) -> Result<(), HandlerError> {
    if let (true, true) = fits::<T, D, C>(buffer, HOST_MEMORY) {
        return Ok(());
    }
    Err(HandlerError::invalid_argument(format!(
        "{kernel}: {}: expected {}, got {} shape {}",
        parameter.name,
        expectation_at::<T, D, C>(false, HOST_MEMORY),
        buffer.dtype(),
        tuple(buffer.shape()),
    )))
}

/// A buffer's shape in `usize` (XLA's extents are never negative: `handle` refuses them).
fn usize_shape(buffer: &TensorView<'_>) -> Vec<usize> {
    buffer
        .shape()
        .iter()
        .map(|&extent| usize::try_from(extent).unwrap_or(0))
        .collect()
}

/// One XLA call's buffers, handed to a kernel's parameters in order
/// ([`KernelParameter::xla_view`]): the arguments (tensors that are not results), the results
/// (results and mutated arguments) and the attributes. Made by [`XlaBuffers::new`], which
/// checks the buffers against the signature first.
pub struct XlaBuffers<'c, 'a> {
    name: &'static str,
    parameters: std::slice::Iter<'static, Parameter>,
    arguments: std::slice::Iter<'c, TensorView<'a>>,
    results: std::slice::IterMut<'c, ResultBuffer<'a>>,
    attributes: Attributes<'a>,
}

impl<'c, 'a> XlaBuffers<'c, 'a> {
    /// `call`'s buffers for the kernel of `signature`: `INVALID_ARGUMENT` for a number of
    /// arguments or results the kernel does not take, a result whose shape is not its
    /// rule's, and a mutated argument's result of another shape or data type than the
    /// argument.
    pub fn new(
        signature: &'static Signature,
        call: &'c mut Call<'a>,
    ) -> Result<XlaBuffers<'c, 'a>, HandlerError> {
        let name = signature.name;
        let parameters = signature.parameters();
        let takes = |roles: &[Role]| {
            parameters
                .iter()
                .filter(|p| roles.contains(&p.role))
                .count()
        };
        let (arguments, results) = (
            takes(&[Role::Input, Role::Mutated]),
            takes(&[Role::Output, Role::Mutated]),
        );
        if call.args.len() != arguments || call.results.len() != results {
            return Err(HandlerError::invalid_argument(format!(
                "{name}: called with {} arguments and {} results; the kernel takes {arguments} \
                 and {results}",
                call.args.len(),
                call.results.len()
            )));
        }
        // Rules that are functions get the arguments' shapes in `usize`; `like` rules and
        // mutated arguments compare XLA's extents as they are, with nothing allocated.
        let computed = if signature.computes {
            let shapes: Vec<Vec<usize>> = call.args.iter().map(usize_shape).collect();
            let given: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
            signature
                .result_shapes(&given)
                .map_err(|error| HandlerError::invalid_argument(error.to_string()))?
        } else {
            Vec::new()
        };
        let mut outputs = signature.results.iter().enumerate();
        let mut argument = call.args.iter();
        let mut result = call.results.iter();
        for parameter in parameters {
            let (given, written) = match parameter.role {
                Role::Input => {
                    argument.next();
                    continue;
                }
                Role::Attribute => continue,
                Role::Mutated => (argument.next(), result.next()),
                Role::Output => (None, result.next()),
            };
            // The results (in order) with their rules, as `result_shapes` numbers them.
            let output = if parameter.role == Role::Output {
                outputs.next()
            } else {
                None
            };
            let Some(written) = written.map(ResultBuffer::view) else {
                continue;
            };
            let like = match (given, output) {
                (Some(given), _) => Some(*given),
                (None, Some((_, rule))) => rule.like.and_then(|like| call.args.get(like)).copied(),
                (None, None) => None,
            };
            // The shape the result must have: the `like` tensor's (or the mutated argument's),
            // or the one a function rule computed.
            let (fits, want_type, want_shape) = match like {
                Some(like) => {
                    // A mutated argument's result is of its type; a `like` result of its own.
                    let want_type = if given.is_some() {
                        like.dtype()
                    } else {
                        written.dtype()
                    };
                    let fits = written.shape() == like.shape() && written.dtype() == want_type;
                    (fits, want_type, Err(like))
                }
                None => {
                    let index = output.map_or(usize::MAX, |(index, _)| index);
                    let want = Signature::computed_shape(&computed, index);
                    let fits = written.shape().len() == want.len()
                        && written
                            .shape()
                            .iter()
                            .zip(want)
                            .all(|(&have, &want)| usize::try_from(have) == Ok(want));
                    (fits, written.dtype(), Ok(want))
                }
            };
            if !fits {
                return Err(HandlerError::invalid_argument(format!(
                    "{name}: the result for {} is {} shape {}, not {want_type} shape {}",
                    parameter.name,
                    written.dtype(),
                    tuple(written.shape()),
                    want_shape.map_or_else(|like| tuple(like.shape()), tuple)
                )));
            }
        }
        let attributes = call.attributes();
        let Call { args, results, .. } = call;
        let args: &'c Vec<TensorView<'a>> = args;
        Ok(XlaBuffers {
            name,
            parameters: parameters.iter(),
            arguments: args.iter(),
            results: results.iter_mut(),
            attributes,
        })
    }

    fn next_parameter(&mut self) -> Result<&'static Parameter, HandlerError> {
        self.parameters.next().ok_or_else(|| {
            HandlerError::invalid_argument(format!("{}: more parameters than declared", self.name))
        })
    }

    fn next_argument(&mut self) -> Result<(&'static Parameter, TensorView<'a>), HandlerError> {
        let parameter = self.next_parameter()?;
        let argument = self
            .arguments
            .next()
            .copied()
            .ok_or_else(|| self.exhausted())?;
        Ok((parameter, argument))
    }

    /// The next result, with the argument it starts as for a mutated parameter.
    #[allow(clippy::type_complexity)]
    fn next_result(
        &mut self,
    ) -> Result<
        (
            &'static Parameter,
            &'c mut ResultBuffer<'a>,
            Option<TensorView<'a>>,
        ),
        HandlerError,
    > {
        let parameter = self.next_parameter()?;
        let argument = if parameter.role == Role::Mutated {
            Some(
                self.arguments
                    .next()
                    .copied()
                    .ok_or_else(|| self.exhausted())?,
            )
        } else {
            None
        };
        let result = self.results.next().ok_or_else(|| self.exhausted())?;
        Ok((parameter, result, argument))
    }

    fn exhausted(&self) -> HandlerError {
        HandlerError::invalid_argument(format!("{}: fewer buffers than parameters", self.name))
    }
}

/// The eager function's checks before the body runs: the signature, and every result's
/// shape against its rule (`ValueError`).
#[doc(hidden)]
pub fn check_eager_call(
    signature: Result<&'static Signature, BodyError>,
    shapes: &[Option<&[usize]>],
) -> PyResult<()> {
    signature
        .and_then(|signature| signature.check_result_shapes(shapes))
        .map_err(|error| PyValueError::new_err(error.to_string()))
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
                )?;
                let elements = 0 $( + $crate::kernel::elements(&$param) )*;
                $crate::kernel::run_eager(py, ::core::stringify!($name), elements, || {
                    __kernel_body($( $crate::kernel::KernelParameter::kernel_view(&mut $param) ),*)
                })
            }

            /// The XLA FFI handler of the CPU platform.
            unsafe extern "C" fn __xla_cpu(
                frame: *mut $crate::dlbridge::xla::ffi::XLA_FFI_CallFrame,
            ) -> *mut $crate::dlbridge::xla::ffi::XLA_FFI_Error {
                // SAFETY: XLA calls a handler of the CPU platform with a live call frame whose
                // buffers are host memory (`handle`'s contract).
                unsafe {
                    $crate::dlbridge::xla::handle(frame, $crate::dlbridge::Device::CPU, 0, |call| {
                        let signature = signature()
                            .map_err(|error| $crate::dlbridge::xla::HandlerError::invalid_argument(error.to_string()))?;
                        let mut buffers = $crate::kernel::XlaBuffers::new(signature, call)?;
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
                xla_cpu: __xla_cpu,
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
    use super::*;

    fn tensor(name: &'static str, role: Role, ndim: Option<usize>) -> Parameter {
        Parameter {
            name,
            role,
            data_type: DataType::FLOAT32,
            ndim,
            rule: None,
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
    fn shapes_are_written_as_python_tuples() {
        assert_eq!(tuple::<usize>(&[]), "()");
        assert_eq!(tuple(&[4usize]), "(4,)");
        assert_eq!(tuple(&[2usize, 3]), "(2, 3)");
        assert_eq!(tuple(&[2i64, 3]), "(2, 3)");
    }
}
