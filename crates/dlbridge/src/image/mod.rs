//! Zero-copy conversion between managed tensors and `image` buffers (feature `image`).
//!
//! Export: [`ImageTensorExt::from_image_buffer`] moves an `ImageBuffer<P, Vec<_>>` into a
//! managed tensor of shape `[height, width, channels]` without copying a pixel. Views:
//! [`ImageViewExt::as_image_buffer`] sees an `HxWxC` tensor (or an `HxW` one, for one-channel
//! pixels) as an `ImageBuffer<P, &[_]>`, and [`ImageTensorExt::as_image_buffer_mut`] as an
//! `ImageBuffer<P, &mut [_]>`.
//!
//! # How image and DLPack describe a layout
//!
//! An `ImageBuffer` is a slice of subpixels, row after row, each pixel's channels adjacent:
//! a C-contiguous `HxWxC` tensor, which is how every framework stores an image it decoded
//! (NumPy arrays from Pillow or OpenCV, PyTorch's `HWC` tensors; PyTorch's `CHW` convention
//! is the permutation `x.permute(1, 2, 0)`, which is not contiguous). A buffer has no strides,
//! so a tensor that is not C-contiguous is refused ([`Error::NotContiguous`]): copy it into a
//! contiguous one first (`x.permute(1, 2, 0).contiguous()` in PyTorch).
//!
//! The channel axis must have the pixel type's channel count (`Rgb<u8>`: 3, `Rgba<u8>`: 4,
//! `Luma<u16>`: 1); a one-channel pixel also takes a 2-D `HxW` tensor. Width and height are
//! `u32` in image: a larger extent is [`Error::Unrepresentable`].
//!
//! # Data types
//!
//! The subpixel types image has (its `Primitive` trait) that DLPack has too: `u8`, `u16`,
//! `u32`, `u64`, `i8`, `i16`, `i32`, `i64`, `f32` and `f64`. image has no `f16`, `bf16`,
//! `bool` or complex subpixels, and `usize`/`isize` subpixels have no DLPack data type: such
//! buffers do not compile (the `Element` bound), and tensors of those types are refused by
//! the data type check.
//!
//! The tests are in `tests.rs` beside this file.

use ::image::{ImageBuffer, Pixel};

use crate::element::Element;
use crate::error::{Error, Result};
use crate::export::Export;
use crate::managed::ManagedTensor;
use crate::view::TensorView;

const IMAGE_VIEW: &str = "an image buffer";

/// The width and height of an image view of `view`, after checking its dimensions against
/// the pixel type's channel count.
fn image_extents<P: Pixel>(view: &TensorView<'_>) -> Result<(u32, u32)> {
    let shape = view.shape();
    let channels = i64::from(P::CHANNEL_COUNT);
    match (shape.len(), P::CHANNEL_COUNT) {
        (3, _) if shape[2] == channels => {}
        (2, 1) => {}
        (3, _) => {
            return Err(Error::Unrepresentable {
                library: "image",
                asked: IMAGE_VIEW,
                given: format!(
                    "a tensor of shape {shape:?}: its last axis has {} channels, and the pixel \
                     type has {channels}",
                    shape[2]
                ),
            });
        }
        (ndim, _) => {
            return Err(Error::DimensionalityMismatch {
                expected: 3,
                actual: ndim,
            });
        }
    }
    let extent = |axis: usize| {
        u32::try_from(shape[axis]).map_err(|_| Error::Unrepresentable {
            library: "image",
            asked: IMAGE_VIEW,
            given: format!(
                "a tensor of shape {shape:?}: image's widths and heights are u32, and extent \
                 {axis} is larger"
            ),
        })
    };
    Ok((extent(1)?, extent(0)?))
}

/// The view of a checked subpixel slice; `None` (a refusal) only where image's own length
/// arithmetic overflows, which the checks before rule out.
fn image_buffer<P: Pixel, C>(
    width: u32,
    height: u32,
    subpixels: C,
    shape: &[i64],
) -> Result<ImageBuffer<P, C>>
where
    C: std::ops::Deref<Target = [P::Subpixel]>,
{
    ImageBuffer::from_raw(width, height, subpixels).ok_or_else(|| Error::Unrepresentable {
        library: "image",
        asked: IMAGE_VIEW,
        given: format!("a tensor of shape {shape:?}: its size overflows image's arithmetic"),
    })
}

/// The image buffers over a [`TensorView`]: `use dlbridge::image::ImageViewExt;` and call it on any
/// view.
///
/// The bridge's entry points for the feature `image`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait ImageViewExt<'a>: crate::sealed::Sealed {
    /// A C-contiguous `HxWxC` tensor (or `HxW`, for a one-channel pixel type) as an image
    /// buffer, without copying (feature `image`).
    ///
    /// Checks what [`TensorView::as_slice`] checks (a host-readable device, the data type of
    /// `P::Subpixel`, alignment, C-contiguity) and that the channel axis has
    /// `P::CHANNEL_COUNT` entries.
    ///
    /// ```
    /// use dlbridge::image::ImageViewExt;
    /// use dlbridge::Export;
    /// use image::Rgb;
    ///
    /// // A 2x3 RGB image, as a framework holds a decoded image: height x width x channels.
    /// let pixels: Vec<u8> = (0..18).collect();
    /// let tensor = Export::new(pixels, &[2, 3, 3]).into_versioned()?;
    /// let view = tensor.view();
    /// let image = view.as_image_buffer::<Rgb<u8>>()?;
    /// assert_eq!(image.dimensions(), (3, 2)); // width, height
    /// assert_eq!(image.get_pixel(1, 1), &Rgb([12, 13, 14]));
    /// assert_eq!(image.as_raw().as_ptr(), view.data_ptr() as *const u8); // no copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_image_buffer<P>(&self) -> Result<ImageBuffer<P, &'a [P::Subpixel]>>
    where
        P: Pixel,
        P::Subpixel: Element;
}

impl<'a> ImageViewExt<'a> for TensorView<'a> {
    fn as_image_buffer<P>(&self) -> Result<ImageBuffer<P, &'a [P::Subpixel]>>
    where
        P: Pixel,
        P::Subpixel: Element,
    {
        let (width, height) = image_extents::<P>(self)?;
        let subpixels = self.as_slice::<P::Subpixel>()?;
        image_buffer(width, height, subpixels, self.shape())
    }
}

/// The image bridge on a [`ManagedTensor`]: a mutable image buffer, and an `ImageBuffer` exported
/// without a copy (`ImageTensorExt::from_image_buffer`, with this trait in scope).
///
/// The bridge's entry points for the feature `image`; the trait is sealed (implemented for this
/// crate's types only), so methods can be added to it without breaking anyone.
pub trait ImageTensorExt: crate::sealed::Sealed {
    /// A C-contiguous `HxWxC` (or `HxW`) tensor as a mutable image buffer, without copying
    /// (feature `image`), with the checks of [`ImageViewExt::as_image_buffer`] and of
    /// [`ManagedTensor::as_mut_slice`] (writable, not shared).
    ///
    /// ```
    /// use dlbridge::image::ImageTensorExt;
    /// use dlbridge::Export;
    /// use image::Luma;
    ///
    /// let mut tensor = Export::new(vec![0u16; 6], &[2, 3]).into_versioned()?;
    /// tensor.as_image_buffer_mut::<Luma<u16>>()?.put_pixel(2, 1, Luma([500]));
    /// assert_eq!(tensor.view().as_slice::<u16>()?, &[0, 0, 0, 0, 0, 500]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn as_image_buffer_mut<P>(&mut self) -> Result<ImageBuffer<P, &mut [P::Subpixel]>>
    where
        P: Pixel,
        P::Subpixel: Element;

    /// Exports an owned image buffer as a versioned, writable `HxWxC` managed tensor (`C`:
    /// the pixel type's channel count, 1 included), without copying its subpixels (feature
    /// `image`). The buffer's `Vec` is the owner, dropped by the deleter on whatever thread
    /// the consumer calls it.
    ///
    /// ```
    /// use dlbridge::image::ImageTensorExt;
    /// use dlbridge::ManagedTensor;
    /// use image::{Rgba, RgbaImage};
    ///
    /// let image = RgbaImage::from_pixel(4, 2, Rgba([1, 2, 3, 255]));
    /// let data = image.as_raw().as_ptr();
    /// let tensor = ManagedTensor::from_image_buffer(image)?;
    /// assert_eq!(tensor.view().shape(), &[2, 4, 4]); // height, width, channels
    /// assert_eq!(tensor.view().data_ptr() as *const u8, data); // no copy
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    fn from_image_buffer<P>(image: ImageBuffer<P, Vec<P::Subpixel>>) -> Result<ManagedTensor>
    where
        P: Pixel,
        P::Subpixel: Element;
}

impl ImageTensorExt for ManagedTensor {
    fn as_image_buffer_mut<P>(&mut self) -> Result<ImageBuffer<P, &mut [P::Subpixel]>>
    where
        P: Pixel,
        P::Subpixel: Element,
    {
        let (width, height) = image_extents::<P>(&self.view())?;
        let shape = self.view().shape().to_vec();
        let subpixels = self.as_mut_slice::<P::Subpixel>()?;
        image_buffer(width, height, subpixels, &shape)
    }

    fn from_image_buffer<P>(image: ImageBuffer<P, Vec<P::Subpixel>>) -> Result<ManagedTensor>
    where
        P: Pixel,
        P::Subpixel: Element,
    {
        let (width, height) = image.dimensions();
        let shape = [
            height as usize,
            width as usize,
            usize::from(P::CHANNEL_COUNT),
        ];
        let mut subpixels = image.into_raw();
        // image allows a buffer longer than its pixels need; the tensor covers the pixels.
        let len = shape.iter().product::<usize>();
        if subpixels.len() != len {
            subpixels.truncate(len);
        }
        Export::new(subpixels, &shape).into_versioned()
    }
}

#[cfg(test)]
mod tests;
