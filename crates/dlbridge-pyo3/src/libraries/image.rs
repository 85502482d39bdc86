//! image buffers over typed arguments, and owned image buffers returned (feature `image`).

use dlbridge::image::{ImageTensorExt, ImageViewExt};
use dlbridge::{Element, ManagedTensor};
use image::{ImageBuffer, Pixel};
use pyo3::PyResult;

use super::core_view::with_core_view;
use super::sealed::Sealed;
use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};
use crate::produce::returning::IntoTensor;

/// The image buffers over a typed argument ([`TensorArg`](crate::TensorArg)), with the core's
/// checks and refusals as `TypeError`s (feature `image`). In scope with
/// `dlbridge_pyo3::prelude::*`, or `use dlbridge_pyo3::image::ImageArgExt;`; sealed: implemented
/// for the typed arguments only.
pub trait ImageArgExt<T: Element>: Sealed {
    /// A C-contiguous `HxWxC` (or `HxW`) argument as an image buffer of pixel type `P`,
    /// without copying (feature `image`; `dlbridge`'s `ImageViewExt::as_image_buffer`): the
    /// channel axis must have `P::CHANNEL_COUNT` entries, `P::Subpixel` must be `T`.
    fn as_image_buffer<P>(&self) -> PyResult<ImageBuffer<P, &[T]>>
    where
        P: Pixel<Subpixel = T>;
}

impl<T: Element, D: Dimensionality, C: Constraints> ImageArgExt<T> for TensorArg<'_, T, D, C> {
    fn as_image_buffer<P>(&self) -> PyResult<ImageBuffer<P, &[T]>>
    where
        P: Pixel<Subpixel = T>,
    {
        let view = self.view();
        let (width, height) = with_core_view(&view, |view| {
            view.as_image_buffer::<P>().map(|image| image.dimensions())
        })?;
        // The core accepted a C-contiguous layout, so the argument's elements are one slice.
        let subpixels = self.try_as_slice().unwrap_or(&[]);
        ImageBuffer::from_raw(width, height, subpixels).ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err("the image's pixels do not fill its buffer")
        })
    }
}

/// The mutable image buffers over a writable typed argument
/// ([`TensorArgMut`](crate::TensorArgMut)), with the core's checks and refusals as `TypeError`s
/// (feature `image`). In scope with `dlbridge_pyo3::prelude::*`, or `use
/// dlbridge_pyo3::image::ImageArgMutExt;`; sealed: implemented for the typed arguments only.
pub trait ImageArgMutExt<T: Element>: Sealed {
    /// A C-contiguous `HxWxC` (or `HxW`) argument as a mutable image buffer, without copying
    /// (feature `image`), refused as [`TensorArg::as_image_buffer`] refuses; taking it counts
    /// as writing.
    fn as_image_buffer_mut<P>(&mut self) -> PyResult<ImageBuffer<P, &mut [T]>>
    where
        P: Pixel<Subpixel = T>;
}

impl<T: Element, D: Dimensionality, C: Constraints> ImageArgMutExt<T>
    for TensorArgMut<'_, T, D, C>
{
    fn as_image_buffer_mut<P>(&mut self) -> PyResult<ImageBuffer<P, &mut [T]>>
    where
        P: Pixel<Subpixel = T>,
    {
        let (width, height) = with_core_view(&self.view(), |view| {
            view.as_image_buffer::<P>().map(|image| image.dimensions())
        })?;
        let subpixels = self.try_as_mut_slice().unwrap_or(&mut []);
        ImageBuffer::from_raw(width, height, subpixels).ok_or_else(|| {
            pyo3::exceptions::PyTypeError::new_err("the image's pixels do not fill its buffer")
        })
    }
}

impl<P> IntoTensor for ImageBuffer<P, Vec<P::Subpixel>>
where
    P: Pixel,
    P::Subpixel: Element,
{
    /// Without copying: `ImageTensorExt::from_image_buffer` (`HxWxC`).
    fn into_tensor(self) -> dlbridge::Result<ManagedTensor> {
        ManagedTensor::from_image_buffer(self)
    }
}
