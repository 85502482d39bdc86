//! Tests of the `image` conversions: exports of owned buffers of several pixel types, views of
//! `HxWxC` and `HxW` tensors, and the refusals of layouts and shapes a buffer cannot hold.

use ::image::{GrayImage, ImageBuffer, Luma, LumaA, Rgb, Rgb32FImage, Rgba};

use super::{ImageTensorExt, ImageViewExt};
use crate::{DataType, Device, Error, Export, ManagedTensor};

#[test]
fn owned_buffers_export_as_height_width_channels_without_copying() {
    let image = ImageBuffer::from_fn(5, 3, |x, y| Rgb([x as u8, y as u8, 7]));
    let data = image.as_raw().as_ptr();
    let exported = ManagedTensor::from_image_buffer(image).unwrap();
    assert_eq!(exported.view().data_ptr() as *const u8, data);
    let view = exported.view();
    assert_eq!(view.shape(), &[3, 5, 3]);
    assert_eq!(view.strides(), &[15, 3, 1]);
    assert_eq!(view.dtype(), DataType::UINT8);
    assert!(!view.is_read_only());
    let elements = view.elements::<u8>().unwrap();
    assert_eq!(elements.get(&[2, 4, 0]), Some(&4)); // x = 4
    assert_eq!(elements.get(&[2, 4, 1]), Some(&2)); // y = 2

    // One channel still has its channel axis; other subpixel types keep theirs.
    let gray = GrayImage::from_pixel(2, 2, Luma([9]));
    assert_eq!(
        ManagedTensor::from_image_buffer(gray)
            .unwrap()
            .view()
            .shape(),
        &[2, 2, 1]
    );
    let float = Rgb32FImage::from_pixel(1, 1, Rgb([0.5, 0.25, 1.0]));
    let tensor = ManagedTensor::from_image_buffer(float).unwrap();
    assert_eq!(tensor.view().dtype(), DataType::FLOAT32);
    assert_eq!(tensor.view().as_slice::<f32>().unwrap(), &[0.5, 0.25, 1.0]);
    let wide: ImageBuffer<LumaA<u16>, Vec<u16>> = ImageBuffer::from_pixel(3, 1, LumaA([1, 2]));
    assert_eq!(
        ManagedTensor::from_image_buffer(wide)
            .unwrap()
            .view()
            .shape(),
        &[1, 3, 2]
    );
}

#[test]
fn a_longer_buffer_exports_its_pixels_only() {
    let image: ImageBuffer<Luma<u8>, Vec<u8>> =
        ImageBuffer::from_raw(2, 2, vec![1, 2, 3, 4, 5, 6]).unwrap();
    let tensor = ManagedTensor::from_image_buffer(image).unwrap();
    assert_eq!(tensor.view().as_slice::<u8>().unwrap(), &[1, 2, 3, 4]);
}

#[test]
fn tensors_are_seen_as_buffers_and_round_trip() {
    let pixels: Vec<f32> = (0..24).map(|v| v as f32).collect();
    let tensor = Export::new(pixels, &[2, 3, 4]).into_versioned().unwrap();
    let view = tensor.view();
    let image = view.as_image_buffer::<Rgba<f32>>().unwrap();
    assert_eq!(image.dimensions(), (3, 2));
    assert_eq!(image.get_pixel(2, 1), &Rgba([20.0, 21.0, 22.0, 23.0]));
    assert_eq!(image.as_raw().as_ptr(), view.data_ptr() as *const f32);
    // A 2-D tensor is a one-channel image.
    let gray = Export::new(vec![1u8, 2, 3, 4, 5, 6], &[3, 2])
        .into_versioned()
        .unwrap();
    let image = gray.view().as_image_buffer::<Luma<u8>>().unwrap();
    assert_eq!(image.dimensions(), (2, 3));
    assert_eq!(image.get_pixel(1, 2), &Luma([6]));
    // Owned buffer -> tensor -> borrowed buffer: the same pixels, the same memory.
    let owned = ImageBuffer::from_fn(4, 4, |x, y| Rgb([x as u16, y as u16, (x * y) as u16]));
    let expected = owned.clone();
    let tensor = ManagedTensor::from_image_buffer(owned).unwrap();
    let view = tensor.view();
    let back = view.as_image_buffer::<Rgb<u16>>().unwrap();
    assert_eq!(back.as_raw()[..], expected.as_raw()[..]);
    assert_eq!(back.as_raw().as_ptr(), view.data_ptr() as *const u16);
}

#[test]
fn mutable_buffers_write_through_and_refuse_shared_tensors() {
    let mut tensor = Export::new(vec![0u8; 12], &[2, 2, 3])
        .into_versioned()
        .unwrap();
    {
        let mut image = tensor.as_image_buffer_mut::<Rgb<u8>>().unwrap();
        image.put_pixel(1, 0, Rgb([1, 2, 3]));
    }
    assert_eq!(
        tensor.view().as_slice::<u8>().unwrap(),
        &[0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0, 0]
    );
    tensor.mark_shared();
    assert!(matches!(
        tensor.as_image_buffer_mut::<Rgb<u8>>(),
        Err(Error::SharedMemory)
    ));
    let shared: std::sync::Arc<[u8]> = vec![0u8; 4].into();
    let _other = std::sync::Arc::clone(&shared);
    let mut read_only = Export::new(shared, &[2, 2]).into_versioned().unwrap();
    assert!(matches!(
        read_only.as_image_buffer_mut::<Luma<u8>>(),
        Err(Error::ReadOnly { .. })
    ));
}

#[test]
fn layouts_and_shapes_a_buffer_cannot_hold_are_refused() {
    // Channels first (CHW), as PyTorch's vision models hold images: not contiguous as HWC.
    let chw = Export::new(vec![0u8; 12], &[2, 2, 3])
        .strides(&[2, 1, 4])
        .into_versioned()
        .unwrap();
    assert!(matches!(
        chw.view().as_image_buffer::<Rgb<u8>>(),
        Err(Error::NotContiguous { order: "C", .. })
    ));
    // Four channels for an RGB pixel.
    let rgba = Export::new(vec![0u8; 16], &[2, 2, 4])
        .into_versioned()
        .unwrap();
    let error = rgba.view().as_image_buffer::<Rgb<u8>>().unwrap_err();
    assert_eq!(
        error.to_string(),
        "image cannot express an image buffer of a tensor of shape [2, 2, 4]: its last axis \
         has 4 channels, and the pixel type has 3"
    );
    // A 2-D tensor for a three-channel pixel, a 1-D one for any.
    let flat = Export::new(vec![0u8; 4], &[2, 2]).into_versioned().unwrap();
    assert!(matches!(
        flat.view().as_image_buffer::<Rgb<u8>>(),
        Err(Error::DimensionalityMismatch {
            expected: 3,
            actual: 2
        })
    ));
    // The wrong subpixel type.
    assert!(matches!(
        flat.view().as_image_buffer::<Luma<u16>>(),
        Err(Error::DataTypeMismatch { .. })
    ));
    // Not on the host.
    let mut device = Export::new(vec![0u8; 4], &[2, 2]).into_versioned().unwrap();
    // SAFETY: the label is never used to reach the memory as device memory.
    unsafe { device.set_device_unchecked(Device::new(crate::DeviceType::CUDA, 0)) }.unwrap();
    assert!(matches!(
        device.view().as_image_buffer::<Luma<u8>>(),
        Err(Error::NotHostReadable { .. })
    ));
}

#[test]
fn extents_beyond_u32_are_refused() {
    // An empty tensor can have any extent; image's cannot exceed u32.
    let empty = Export::new(Vec::<u8>::new(), &[0, 1 << 33])
        .into_versioned()
        .unwrap();
    let error = empty.view().as_image_buffer::<Luma<u8>>().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Unrepresentable {
                library: "image",
                ..
            }
        ),
        "{error}"
    );
    let fits = Export::new(Vec::<u8>::new(), &[0, 5])
        .into_versioned()
        .unwrap();
    assert_eq!(
        fits.view()
            .as_image_buffer::<Luma<u8>>()
            .unwrap()
            .dimensions(),
        (5, 0)
    );
}
