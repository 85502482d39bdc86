//! `KernelParameter`: what a kernel's body gets of each parameter type, eagerly and inside
//! XLA, for host tensors ([`TensorArg`](crate::TensorArg), [`TensorArgMut`](crate::TensorArgMut))
//! and scalar attributes.

use dlbridge::ndarray::NdarrayViewExt;
use dlbridge::xla::HandlerError;
use dlbridge::{DataType, Element};
use ndarray::{ArrayView, ArrayViewMut};

use super::signature::{Parameter, Platform, Role};
use super::xla_buffers::{XlaBuffers, check_buffer};
use crate::args::constraints::{Constraints, Dimensionality, HOST_MEMORY};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};
use crate::streams::WorkStream;

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
            platform: P::PLATFORM,
        }
    }
}

/// A kernel's parameter type: a typed tensor argument or a scalar attribute. What the body
/// gets of it ([`KernelParameter::View`](crate::kernel::KernelParameter::View)), eagerly and inside
/// XLA.
pub trait KernelParameter {
    /// [`Role::Input`](crate::kernel::Role::Input), [`Role::Mutated`](crate::kernel::Role::Mutated)
    /// (a result where the `where` clause says so) or
    /// [`Role::Attribute`](crate::kernel::Role::Attribute).
    const ROLE: Role;
    /// The element type's, or the scalar's.
    const DATA_TYPE: DataType;
    /// The number of dimensions the type fixes.
    const NDIM: Option<usize>;
    /// Where a tensor is; `None` for an attribute.
    const PLATFORM: Option<Platform>;
    /// What the body gets.
    type View<'v>;
    /// The tensor's shape; `None` for an attribute.
    fn shape(&self) -> Option<&[usize]>;
    /// The stream a device tensor's work goes on (its producer's current stream); `None` for
    /// host tensors and attributes.
    fn work_stream(&self) -> Option<WorkStream> {
        None
    }
    /// The body's view of an eager argument (for a [`TensorArgMut`](crate::TensorArgMut), taking it
    /// counts as writing).
    fn kernel_view(&mut self) -> Self::View<'_>;
    /// The body's view of the next parameter of an XLA call.
    fn xla_view<'c>(buffers: &mut XlaBuffers<'c, '_>) -> Result<Self::View<'c>, HandlerError>;
}

impl<'a, T: Element, D: Dimensionality, C: Constraints> KernelParameter for TensorArg<'a, T, D, C> {
    const ROLE: Role = Role::Input;
    const DATA_TYPE: DataType = T::DTYPE;
    const NDIM: Option<usize> = D::NDIM;
    const PLATFORM: Option<Platform> = Some(Platform::Cpu);
    type View<'v> = ArrayView<'v, T, D>;

    fn shape(&self) -> Option<&[usize]> {
        Some(self.view.shape())
    }

    fn kernel_view(&mut self) -> ArrayView<'_, T, D> {
        self.view.view()
    }

    fn xla_view<'c>(buffers: &mut XlaBuffers<'c, '_>) -> Result<ArrayView<'c, T, D>, HandlerError> {
        let (parameter, argument) = buffers.next_argument()?;
        check_buffer::<T, D, C>(buffers.name, parameter, &argument, HOST_MEMORY)?;
        Ok(argument.as_array_dim::<T, D>()?)
    }
}

impl<'a, T: Element, D: Dimensionality, C: Constraints> KernelParameter
    for TensorArgMut<'a, T, D, C>
{
    const ROLE: Role = Role::Mutated;
    const DATA_TYPE: DataType = T::DTYPE;
    const NDIM: Option<usize> = D::NDIM;
    const PLATFORM: Option<Platform> = Some(Platform::Cpu);
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
        check_buffer::<T, D, C>(buffers.name, parameter, &result.view(), HOST_MEMORY)?;
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
            const PLATFORM: Option<Platform> = None;
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
