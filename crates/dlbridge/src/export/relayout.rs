//! New layouts of a tensor's elements, without a copy: [`ManagedTensor::reshape`],
//! [`ManagedTensor::permute`] and [`ManagedTensor::insert_axis`]; and
//! [`ManagedTensor::into_compact`], which copies only where the layout is not compact already.
//!
//! A relayout is an export (`block::export_owner`) of the new shape and strides over the same
//! elements, whose owner is the tensor laid out anew: that tensor keeps the memory alive and is
//! dropped, once, by the new tensor's deleter. The new descriptor is validated like any import
//! before anything is moved, and it reaches exactly the elements the old one reached (reshape:
//! the same elements in the same row-major order; permute and insert_axis: the same offsets).
//! What the old handle was as a Rust handle (exclusive or shared, its count as a share, its
//! release, its ready stream) moves to the new one, which is the only way left to the old one.
//! A relayout of a relayout takes the tensor under it out of its block instead of nesting a
//! block per call, so a chain of relayouts holds one block, whatever its length.

use std::ptr::NonNull;

use super::block::{Descriptor, export_owner, take_owner};
use crate::error::{Error, MAX_NDIM, Result};
use crate::ffi::{DLManagedTensor, DLManagedTensorVersioned, DLTensor};
use crate::flags::Flags;
use crate::layout;
use crate::managed::{ManagedTensor, RawManagedTensor};
use crate::validate::validate_descriptor;
use crate::version::Version;

impl ManagedTensor {
    /// The same elements in row-major (C) order with a new shape, without a copy: NumPy's
    /// `reshape` where NumPy returns a view, and an [`Error::ReshapeNeedsCopy`] where it would
    /// copy (call [`ManagedTensor::into_compact`] first there). One extent may be `-1`, inferred
    /// from the others as NumPy and PyTorch infer it.
    ///
    /// A compact row-major tensor reshapes to any shape of as many elements. Any other layout
    /// reshapes where the new shape only merges axes that are contiguous with each other, or
    /// splits axes, or adds and drops axes of extent 1 (the strides follow NumPy's
    /// `_attempt_nocopy_reshape`); a transposed matrix, say, cannot be flattened without a copy.
    /// A shape equal to the tensor's gives the tensor back unchanged.
    ///
    /// The new tensor keeps this one alive (it is dropped once, when the new one is), with its
    /// data type, device, first element ([`TensorView::data_ptr`](crate::TensorView::data_ptr),
    /// with `byte_offset = 0`), layout (versioned or legacy) and flags (READ_ONLY where this
    /// one may not be written, IS_COPIED, IS_SUBBYTE_TYPE_PADDED); and it is the handle this
    /// one was: exclusive if this one was ([`ManagedTensor::is_exclusive`]), a share if this
    /// one was one, with its release ([`ManagedTensor::set_release_on_drop`]) and its ready
    /// stream. Refused: a shape with more than one `-1` or another negative extent, a shape of
    /// another element count, more than [`MAX_NDIM`] dimensions ([`Error::InvalidArgument`],
    /// [`Error::InvalidNdim`]); the tensor is released then, as on every error.
    ///
    /// ```
    /// use dlbridge::{Error, Export};
    /// let tensor = Export::new((0..6).collect::<Vec<i32>>(), &[2, 3]).into_versioned()?;
    /// let mut columns = tensor.reshape(&[3, -1])?;
    /// assert_eq!((columns.view().shape(), columns.view().strides()), (&[3i64, 2][..], &[2i64, 1][..]));
    /// columns.as_mut_slice::<i32>()?[5] = 50; // still the only handle: writable
    /// assert_eq!(columns.view().as_slice::<i32>()?, &[0, 1, 2, 3, 4, 50]);
    ///
    /// // A transposed matrix cannot be flattened without a copy:
    /// let transposed = Export::new(vec![1u8, 2, 3, 4, 5, 6], &[3, 2]).strides(&[1, 3]).into_versioned()?;
    /// let refused = transposed.reshape(&[6]).unwrap_err();
    /// assert!(matches!(refused, Error::ReshapeNeedsCopy { .. }));
    /// assert!(refused.to_string().contains("into_compact()"));
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn reshape(self, shape: &[i64]) -> Result<ManagedTensor> {
        let view = self.view();
        let new_shape = resolve_shape(shape, view.shape(), view.num_elements())?;
        if new_shape == view.shape() {
            return Ok(self);
        }
        let Some(strides) = reshape_strides(view.shape(), view.strides(), &new_shape) else {
            return Err(Error::ReshapeNeedsCopy {
                shape: view.shape().to_vec(),
                strides: view.strides().to_vec(),
                new_shape,
            });
        };
        relayout(self, &new_shape, &strides)
    }

    /// The axes reordered, without a copy: axis `i` of the new tensor is axis `axes[i]` of this
    /// one (NumPy's `transpose(axes)`, PyTorch's `permute`). `axes` must be a permutation of
    /// `0..ndim` ([`Error::InvalidArgument`] otherwise, naming `axes` and its value; the tensor
    /// is released then). The identity gives the tensor back unchanged.
    ///
    /// The new tensor keeps this one alive and is the handle this one was, as for
    /// [`ManagedTensor::reshape`]: same memory, data type, device, flags, exclusivity.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let tensor = Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
    /// let transposed = tensor.permute(&[1, 0])?;
    /// assert_eq!(transposed.view().shape(), &[3, 2]);
    /// assert_eq!(transposed.view().strides(), &[1, 3]);
    /// assert_eq!(transposed.view().elements::<f32>()?.to_vec(), [1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    /// // ...and back:
    /// let back = transposed.permute(&[1, 0])?;
    /// assert_eq!(back.view().as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn permute(self, axes: &[usize]) -> Result<ManagedTensor> {
        let view = self.view();
        let ndim = view.ndim();
        let invalid = |reason: String| Error::InvalidArgument {
            operation: "permute",
            argument: "axes",
            value: format!("{axes:?}"),
            reason,
        };
        if axes.len() != ndim {
            return Err(invalid(format!(
                "has {} entries, but the tensor has {ndim} dimensions: axes must be a \
                 permutation of 0..{ndim}",
                axes.len()
            )));
        }
        let mut seen = vec![false; ndim];
        for &axis in axes {
            match seen.get_mut(axis) {
                None => {
                    return Err(invalid(format!(
                        "axis {axis} is out of range for a tensor of {ndim} dimensions: axes \
                         must be a permutation of 0..{ndim}"
                    )));
                }
                Some(true) => {
                    return Err(invalid(format!(
                        "axis {axis} appears twice: axes must be a permutation of 0..{ndim}"
                    )));
                }
                Some(seen) => *seen = true,
            }
        }
        if axes.iter().enumerate().all(|(place, &axis)| place == axis) {
            return Ok(self);
        }
        let shape: Vec<i64> = axes.iter().map(|&axis| view.shape()[axis]).collect();
        let strides: Vec<i64> = axes.iter().map(|&axis| view.strides()[axis]).collect();
        relayout(self, &shape, &strides)
    }

    /// A new axis of extent 1 at `axis` (`0..=ndim`: before the first axis up to after the
    /// last), without a copy: NumPy's `expand_dims`, PyTorch's `unsqueeze`. Its stride is
    /// PyTorch's (`1` at the end, else the extent times the stride of the axis it goes
    /// before), so a compact tensor stays compact. Refused ([`Error::InvalidArgument`]) for an
    /// `axis` above `ndim`, and ([`Error::InvalidNdim`]) for a tensor of [`MAX_NDIM`]
    /// dimensions already; the tensor is released then.
    ///
    /// The new tensor keeps this one alive and is the handle this one was, as for
    /// [`ManagedTensor::reshape`].
    ///
    /// ```
    /// use dlbridge::Export;
    /// let row = Export::new(vec![1u16, 2, 3], &[3]).into_versioned()?.insert_axis(0)?;
    /// assert_eq!((row.view().shape(), row.view().strides()), (&[1i64, 3][..], &[3i64, 1][..]));
    /// let column = row.insert_axis(2)?;
    /// assert_eq!(column.view().shape(), &[1, 3, 1]);
    /// assert_eq!(column.view().as_slice::<u16>()?, &[1, 2, 3]);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn insert_axis(self, axis: usize) -> Result<ManagedTensor> {
        let view = self.view();
        let ndim = view.ndim();
        if axis > ndim {
            return Err(Error::InvalidArgument {
                operation: "insert_axis",
                argument: "axis",
                value: axis.to_string(),
                reason: format!(
                    "must be at most ndim = {ndim} (after the last axis) for a tensor of shape \
                     {:?}",
                    view.shape()
                ),
            });
        }
        if ndim >= MAX_NDIM as usize {
            return Err(Error::InvalidNdim {
                ndim: ndim as i64 + 1,
            });
        }
        let stride = match (view.shape().get(axis), view.strides().get(axis)) {
            (Some(&extent), Some(&stride)) => extent.saturating_mul(stride),
            _ => 1,
        };
        let mut shape = view.shape().to_vec();
        let mut strides = view.strides().to_vec();
        shape.insert(axis, 1);
        strides.insert(axis, stride);
        relayout(self, &shape, &strides)
    }

    /// This tensor where its layout is compact row-major already
    /// ([`TensorView::is_c_contiguous`](crate::TensorView::is_c_contiguous)), unchanged, on
    /// any device; otherwise its compact copy
    /// ([`TensorView::to_compact_copy`](crate::TensorView::to_compact_copy): a versioned CPU
    /// tensor in 64-byte aligned Rust memory, flagged IS_COPIED, writable and exclusive, and
    /// this tensor is released once the elements are copied). The copy needs host-readable
    /// memory ([`Error::NotHostReadable`] otherwise) and, for sub-byte types, a compact layout
    /// already ([`Error::NotContiguous`]); the tensor is released on error.
    ///
    /// ```
    /// use dlbridge::Export;
    /// let transposed = Export::new(vec![1i64, 3, 2, 4], &[2, 2]).strides(&[1, 2]).into_versioned()?;
    /// let mut compact = transposed.into_compact()?;
    /// assert_eq!(compact.view().as_slice::<i64>()?, &[1, 2, 3, 4]);
    /// compact.as_mut_slice::<i64>()?[0] = 10; // the copy is writable, and only this handle's
    /// let address = compact.view().data_ptr();
    /// // Compact already: the same tensor, no copy.
    /// assert_eq!(compact.into_compact()?.view().data_ptr(), address);
    /// # Ok::<(), dlbridge::Error>(())
    /// ```
    pub fn into_compact(self) -> Result<ManagedTensor> {
        let view = self.view();
        if view.is_c_contiguous() {
            return Ok(self);
        }
        view.to_compact_copy()
    }
}

/// `shape` with its `-1` (if any) resolved, checked to describe the `elements` of a tensor of
/// shape `current`.
fn resolve_shape(shape: &[i64], current: &[i64], elements: u64) -> Result<Vec<i64>> {
    let invalid = |reason: String| Error::InvalidArgument {
        operation: "reshape",
        argument: "shape",
        value: format!("{shape:?}"),
        reason,
    };
    if shape.len() > MAX_NDIM as usize {
        return Err(Error::InvalidNdim {
            ndim: shape.len() as i64,
        });
    }
    let mut inferred = None;
    for (dim, &extent) in shape.iter().enumerate() {
        match extent {
            -1 => {
                if let Some(first) = inferred {
                    return Err(invalid(format!(
                        "at most one extent may be -1 (inferred), but shape[{first}] and \
                         shape[{dim}] are"
                    )));
                }
                inferred = Some(dim);
            }
            extent if extent < 0 => {
                return Err(invalid(format!(
                    "shape[{dim}] = {extent}: extents must not be negative (-1 alone stands \
                     for an extent inferred from the others)"
                )));
            }
            _ => {}
        }
    }
    // The product of the given extents (0 whenever one is 0, even past an overflow).
    let given = layout::count_elements(shape.iter().copied().filter(|&extent| extent != -1));
    let mut resolved = shape.to_vec();
    match (inferred, given) {
        (Some(_), Ok(0)) => Err(invalid(format!(
            "the extent -1 stands for cannot be inferred: the other extents multiply to 0 (the \
             tensor has {elements} elements, shape {current:?})"
        ))),
        (Some(dim), Ok(given)) if elements % given == 0 => {
            let extent = elements / given;
            resolved[dim] = i64::try_from(extent).map_err(|_| {
                invalid(format!(
                    "the inferred extent shape[{dim}] = {extent} does not fit in an i64"
                ))
            })?;
            Ok(resolved)
        }
        (Some(_), Ok(given)) => Err(invalid(format!(
            "the other extents multiply to {given}, which does not divide the tensor's \
             {elements} elements (shape {current:?})"
        ))),
        (None, Ok(given)) if given == elements => Ok(resolved),
        (None, Ok(given)) => Err(invalid(format!(
            "describes {given} elements, but the tensor has {elements} (shape {current:?})"
        ))),
        (_, Err(_)) => Err(invalid(format!(
            "the extents multiply past 64 bits, but the tensor has {elements} elements \
             (shape {current:?})"
        ))),
    }
}

/// The strides of `new_shape` over the elements of the layout `shape`/`strides` in row-major
/// order, without a copy, or `None` where no strides reach them so: NumPy's
/// `_attempt_nocopy_reshape` (C order). `new_shape` must describe as many elements.
///
/// A compact layout takes the compact strides of the new shape. Any other (it has elements:
/// an empty layout is compact) is cut into runs of axes whose extents multiply to the same
/// product in both shapes, axes of extent 1 aside: each run of the old shape must be
/// contiguous with itself (each stride the next one times its extent), and the new run takes
/// the old run's last stride for its last axis and the compact strides of its extents from
/// there. An axis of extent 1 reaches one offset whatever its stride: it takes its neighbour's.
fn reshape_strides(shape: &[i64], strides: &[i64], new_shape: &[i64]) -> Option<Vec<i64>> {
    let mut new_strides = vec![0i64; new_shape.len()];
    if layout::is_c_contiguous(shape, strides) {
        layout::fill_row_major_strides(new_shape, &mut new_strides);
        return Some(new_strides);
    }
    // Every extent is positive here (a zero would make the layout compact), and the products
    // of the extents are at most the element count, a `u64`: in `u128` and `i128`, nothing
    // below overflows.
    let old: Vec<(u128, i128)> = shape
        .iter()
        .zip(strides)
        .filter(|&(&extent, _)| extent != 1)
        .map(|(&extent, &stride)| (extent as u128, i128::from(stride)))
        .collect();
    let new: Vec<u128> = new_shape.iter().map(|&extent| extent as u128).collect();
    let mut wide = vec![0i128; new.len()];
    let (mut old_start, mut new_start) = (0, 0);
    while new_start < new.len() && old_start < old.len() {
        // The shortest runs old[old_start..old_end], new[new_start..new_end] of one product.
        let (mut old_end, mut new_end) = (old_start + 1, new_start + 1);
        let (mut old_product, mut new_product) = (old[old_start].0, new[new_start]);
        while old_product != new_product {
            if new_product < old_product {
                new_product *= new[new_end];
                new_end += 1;
            } else {
                old_product *= old[old_end].0;
                old_end += 1;
            }
        }
        // The old run must be contiguous: each stride the next one times its extent.
        let contiguous = old[old_start..old_end]
            .windows(2)
            .all(|pair| pair[0].1 == pair[1].1 * pair[1].0 as i128);
        if !contiguous {
            return None;
        }
        // The new run, from its last axis (the old run's last stride) to its first.
        wide[new_end - 1] = old[old_end - 1].1;
        for axis in (new_start + 1..new_end).rev() {
            wide[axis - 1] = wide[axis] * new[axis] as i128;
        }
        (old_start, new_start) = (old_end, new_end);
    }
    // Trailing axes of extent 1 take the last stride set (the element's, 1, if none was).
    let last = new_start.checked_sub(1).map_or(1, |axis| wide[axis]);
    for stride in &mut wide[new_start..] {
        *stride = last;
    }
    // An axis of extent 2 or more reaches offsets the old layout reaches, so its stride fits
    // an `i64` (V7); one of extent 1 may carry any stride, saturated where its product does not.
    for (out, &stride) in new_strides.iter_mut().zip(&wide) {
        *out = i64::try_from(stride).unwrap_or(if stride < 0 { i64::MIN } else { i64::MAX });
    }
    Some(new_strides)
}

/// `tensor`'s elements with a new `shape` and `strides` (in elements, from its first element),
/// which must reach exactly the offsets its own layout reaches: an export whose owner is
/// `tensor` (or, for a relayout, the tensor under it), validated before anything moves, which
/// takes over `tensor`'s role as a handle.
fn relayout(mut tensor: ManagedTensor, shape: &[i64], strides: &[i64]) -> Result<ManagedTensor> {
    debug_assert_eq!(shape.len(), strides.len());
    let view = tensor.view();
    let source_flags = view.flags();
    let flags = Flags::NONE
        .with(Flags::READ_ONLY, view.is_read_only())
        .with(Flags::IS_COPIED, source_flags.is_copied())
        .with(
            Flags::IS_SUBBYTE_TYPE_PADDED,
            source_flags.is_subbyte_type_padded(),
        );
    let legacy = !tensor.is_versioned();
    let descriptor = Descriptor::of_view(&view, flags, legacy);
    // The new descriptor as the export block will hold it (version, data, byte_offset 0),
    // validated as an import would be; `shape.len()` is at most MAX_NDIM (checked by every
    // caller), so it fits the `i32`.
    let candidate = DLTensor {
        data: descriptor.data,
        device: descriptor.device,
        ndim: shape.len() as i32,
        dtype: descriptor.dtype,
        shape: shape.as_ptr().cast_mut(),
        strides: strides.as_ptr().cast_mut(),
        byte_offset: 0,
    };
    let version = (!legacy).then_some(Version::CURRENT);
    // SAFETY: `shape` and `strides` are `ndim` readable values each, borrowed for the call.
    let validated = unsafe { validate_descriptor(&candidate, version, flags, descriptor.device) }?;
    // The same elements: the same lowest and highest offsets (the callers' layouts reach the
    // very offsets the tensor's does; this holds them to it, whatever a bug would make them).
    assert_eq!(
        validated.offsets,
        view.element_offset_range(),
        "a relayout reaches the offsets its tensor reaches"
    );
    // From here nothing fails: the handle's role moves to the new tensor.
    let role = tensor.take_handle_role();
    let owner = if tensor.is_relayout() {
        // A relayout of a relayout: the tensor under it becomes the owner, its block is freed.
        match tensor.into_raw() {
            RawManagedTensor::Versioned(ptr) => {
                // SAFETY: `is_relayout`: made by `export_owner` with a `ManagedTensor` owner,
                // versioned as the pointer is; just given up by its handle, which took its
                // count and release off first (nothing of them runs), never deleted, and not
                // used again.
                unsafe {
                    take_owner::<DLManagedTensorVersioned, ManagedTensor>(NonNull::new_unchecked(
                        ptr,
                    ))
                }
            }
            RawManagedTensor::Legacy(ptr) => {
                // SAFETY: as above, legacy as the pointer is.
                unsafe { take_owner::<DLManagedTensor, ManagedTensor>(NonNull::new_unchecked(ptr)) }
            }
        }
    } else {
        tensor
    };
    // SAFETY: `owner` keeps alive the memory that the tensor laid out anew described (it is that
    // tensor, or the tensor that one kept alive as its owner, reaching the same memory), on its
    // device, with its data type, writable unless READ_ONLY or of unknown writability, which
    // carries over. The new shape and strides reach the same elements from the same first
    // element, and `validated` is the validation of exactly this descriptor (data, data type,
    // device, shape, strides, flags, version).
    let mut relaid = unsafe {
        export_owner(
            owner,
            shape.len(),
            descriptor,
            Some(validated),
            |_, shape_out, strides_out| {
                shape_out.copy_from_slice(shape);
                strides_out.copy_from_slice(strides);
            },
        )
    }?;
    // SAFETY: the new tensor's owner keeps the tensor the role comes from alive (or that one's
    // owner, which keeps its source alive for its count), and reaches no memory but that
    // tensor's; that tensor is inside the block, where nothing reaches it.
    unsafe { relaid.take_up_handle_role(role) };
    // SAFETY: made by `export_owner` just now, with a `ManagedTensor` as its owner.
    unsafe { relaid.mark_relayout() };
    Ok(relaid)
}

#[cfg(test)]
mod tests;
