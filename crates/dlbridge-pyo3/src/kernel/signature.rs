//! A kernel's signature: its parameters, their roles and platform, the results' shape rules,
//! and `BodyError`, why a body or a rule refused a call.

use std::fmt;

use dlbridge::DataType;

use crate::errors::tuple;

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
    /// A tensor the kernel reads ([`TensorArg`](crate::TensorArg)).
    Input,
    /// A tensor the kernel reads and writes in place ([`TensorArgMut`](crate::TensorArgMut) without
    /// a shape rule).
    Mutated,
    /// A tensor the kernel writes, whose shape its rule gives
    /// ([`TensorArgMut`](crate::TensorArgMut) named in the `where` clause).
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

/// Where a kernel's tensors are, as its parameters' types say: every tensor of a kernel is on
/// one platform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Platform {
    /// Host memory ([`TensorArg`](crate::TensorArg), [`TensorArgMut`](crate::TensorArgMut)): the
    /// body gets ndarray views.
    Cpu,
    /// CUDA device memory ([`CudaArg`](crate::CudaArg), [`CudaArgMut`](crate::CudaArgMut)): the
    /// body gets [`CudaBuffer`](crate::kernel::CudaBuffer)s and launches its work on their stream.
    Cuda,
}

impl Platform {
    /// The platform's name, as `__dlbridge_kernels__` gives it to Python (`"cpu"`, `"cuda"`).
    pub const fn name(self) -> &'static str {
        match self {
            Platform::Cpu => "cpu",
            Platform::Cuda => "cuda",
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
    /// Where a tensor is; `None` for an attribute.
    pub platform: Option<Platform>,
}

impl Parameter {
    pub(super) fn is_tensor(&self) -> bool {
        self.role != Role::Attribute
    }
}

/// A kernel's parameters, checked: every result a [`TensorArgMut`](crate::TensorArgMut) with a
/// rule, every `like` naming a tensor that is not a result.
#[derive(Debug)]
pub struct Signature {
    pub(super) name: &'static str,
    parameters: Vec<Parameter>,
    /// For each parameter, its index among the tensors that are not results (the shapes a
    /// rule gets), where it is one.
    shape_index: Vec<Option<usize>>,
    /// The results, in order: each one's parameter and, for a `like` rule, the index of the
    /// shape it takes among those a rule gets (worked out once, not by name on every call).
    pub(super) results: Vec<ResultRule>,
    /// Whether a result's rule is a function: only then are shapes collected for it per call.
    pub(super) computes: bool,
    /// Where every tensor is.
    pub(super) platform: Platform,
}

/// One result of a [`Signature`](crate::kernel::Signature).
#[derive(Clone, Copy, Debug)]
pub(super) struct ResultRule {
    /// Its index among the parameters.
    pub(super) parameter: usize,
    /// For a `like` rule, the index among the shapes a rule gets of the tensor it is like.
    pub(super) like: Option<usize>,
}

impl Signature {
    /// The signature of kernel `name`: `parameters` in order, of which `results` (name and
    /// rule) are results. An error names a result that is no [`TensorArgMut`](crate::TensorArgMut)
    /// parameter or is given twice, a `like` that names no tensor parameter, or a result, and
    /// tensors on two platforms (a host tensor and a CUDA one).
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
        let mut platforms = parameters
            .iter()
            .filter_map(|p| Some((p.name, p.platform?)));
        let platform = platforms
            .next()
            .map_or(Platform::Cpu, |(_, platform)| platform);
        if let Some((other, elsewhere)) = platforms.find(|&(_, p)| p != platform) {
            let first = parameters
                .iter()
                .find(|p| p.platform.is_some())
                .map(|p| p.name);
            return Err(BodyError::new(format!(
                "kernel {name}: {} is a {} tensor and {other} a {} one: a kernel's tensors are on \
                 one platform",
                first.unwrap_or_default(),
                platform.name(),
                elsewhere.name()
            )));
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
            platform,
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

    /// Where the kernel's tensors are.
    pub fn platform(&self) -> Platform {
        self.platform
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
    pub(super) fn computed_shape(computed: &[Vec<usize>], index: usize) -> &[usize] {
        computed.get(index).map_or(&[], Vec::as_slice)
    }

    /// Checks the shapes of an eager call's results against their rules, from every
    /// parameter's shape (`None` for attributes). Only a function rule makes it collect the
    /// shapes; a `like` rule compares two of them.
    pub(super) fn check_result_shapes(&self, shapes: &[Option<&[usize]>]) -> Result<(), BodyError> {
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
