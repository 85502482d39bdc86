//! One XLA call's buffers, checked against a kernel's signature and handed to its parameters
//! in order, and the body of a kernel's XLA FFI handler (`handle_xla`).

use dlbridge::xla::ffi::{XLA_FFI_CallFrame, XLA_FFI_Error};
use dlbridge::xla::{Attributes, Call, HandlerError, ResultBuffer, handle, handle_on_device};
use dlbridge::{Device, DeviceType, Element, TensorView};

use super::signature::{BodyError, Parameter, Platform, Role, Signature};
use crate::args::constraints::{Constraints, Dimensionality, Placement, expectation_at, fits};
use crate::errors::tuple;

/// Refuses an XLA buffer that parameter's type does not take (`TensorArg<'_, f32, Ix2>` and a
/// float64 buffer, say), naming the kernel, the parameter and both.
pub(super) fn check_buffer<T: Element, D: Dimensionality, C: Constraints>(
    kernel: &str,
    parameter: &Parameter,
    buffer: &TensorView<'_>,
    placement: Placement,
) -> Result<(), HandlerError> {
    if let (true, true) = fits::<T, D, C>(buffer, placement) {
        return Ok(());
    }
    Err(HandlerError::invalid_argument(format!(
        "{kernel}: {}: expected {}, got {} shape {}",
        parameter.name,
        expectation_at::<T, D, C>(false, placement),
        buffer.dtype(),
        tuple(buffer.shape()),
    )))
}

/// A buffer's extents in `usize` (XLA's extents are never negative: `handle` refuses them).
pub(super) fn usize_extents<'b>(
    buffer: &'b TensorView<'_>,
) -> impl ExactSizeIterator<Item = usize> + 'b {
    buffer
        .shape()
        .iter()
        .map(|&extent| usize::try_from(extent).unwrap_or(0))
}

/// One XLA call's buffers, handed to a kernel's parameters in order
/// ([`KernelParameter::xla_view`](crate::kernel::KernelParameter::xla_view)): the arguments
/// (tensors that are not results), the results (results and mutated arguments) and the attributes.
/// Made by [`XlaBuffers::new`](crate::kernel::XlaBuffers::new), which checks the buffers against
/// the signature first.
pub struct XlaBuffers<'c, 'a> {
    pub(super) name: &'static str,
    parameters: std::slice::Iter<'static, Parameter>,
    arguments: std::slice::Iter<'c, TensorView<'a>>,
    results: std::slice::IterMut<'c, ResultBuffer<'a>>,
    pub(super) attributes: Attributes<'a>,
    /// The call's stream (a `CUstream` for the CUDA platform; 0 on the host).
    pub(super) stream: usize,
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
            let shapes: Vec<Vec<usize>> = call
                .args
                .iter()
                .map(|arg| usize_extents(arg).collect())
                .collect();
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
        let stream = match signature.platform {
            Platform::Cpu => 0,
            // An address XLA hands out, kept as the integer DLPack passes streams as.
            Platform::Cuda => call.stream()?.expose_provenance(),
        };
        let Call { args, results, .. } = call;
        let args: &'c Vec<TensorView<'a>> = args;
        Ok(XlaBuffers {
            name,
            parameters: parameters.iter(),
            arguments: args.iter(),
            results: results.iter_mut(),
            attributes,
            stream,
        })
    }

    pub(super) fn next_parameter(&mut self) -> Result<&'static Parameter, HandlerError> {
        self.parameters.next().ok_or_else(|| {
            HandlerError::invalid_argument(format!("{}: more parameters than declared", self.name))
        })
    }

    pub(super) fn next_argument(
        &mut self,
    ) -> Result<(&'static Parameter, TensorView<'a>), HandlerError> {
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
    pub(super) fn next_result(
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

/// The body of a kernel's XLA FFI handler (what [`kernel!`](crate::kernel!) makes): XLA's
/// call checked against the signature ([`XlaBuffers::new`](crate::kernel::XlaBuffers::new)) on the
/// kernel's platform (host buffers, or CUDA buffers of the device XLA runs the call on), then
/// `body` with the buffers.
///
/// # Safety
///
/// `frame` is NULL or a call frame XLA made for a handler registered for the signature's
/// platform, live for the call ([`dlbridge::xla::handle`]'s contract).
#[doc(hidden)]
pub unsafe fn handle_xla(
    frame: *mut XLA_FFI_CallFrame,
    signature: fn() -> Result<&'static Signature, BodyError>,
    body: impl for<'c, 'a> FnOnce(XlaBuffers<'c, 'a>) -> Result<(), HandlerError>,
) -> *mut XLA_FFI_Error {
    let signature = signature();
    let platform = signature.as_ref().map_or(Platform::Cpu, |s| s.platform);
    let run = |call: &mut Call<'_>| {
        let signature = signature
            .clone()
            .map_err(|error| HandlerError::invalid_argument(error.to_string()))?;
        body(XlaBuffers::new(signature, call)?)
    };
    match platform {
        // SAFETY: the caller's contract: XLA's frame of a host handler.
        Platform::Cpu => unsafe { handle(frame, Device::CPU, 0, run) },
        // SAFETY: the caller's contract: XLA's frame of a CUDA handler.
        Platform::Cuda => unsafe { handle_on_device(frame, DeviceType::CUDA, 0, run) },
    }
}
