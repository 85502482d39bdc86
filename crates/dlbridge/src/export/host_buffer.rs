//! The Rust buffers [`Export::new`](crate::Export::new) takes, [`HostBuffer`]: `Vec<T>`,
//! `Box<[T]>` and `Arc<[T]>`, each split into the owner the tensor keeps, its first element, its
//! length and whether the consumer may write.

use std::sync::Arc;

use crate::element::Element;

mod sealed {
    pub trait Sealed {}
}

/// Host memory this crate knows how to export safely: `Vec<T>`, `Box<[T]>` and `Arc<[T]>` of
/// any [`Element`] type.
///
/// Uniquely owned buffers export writable; an `Arc<[T]>` exports writable only when no other
/// `Arc` or `Weak` points to it, and read-only otherwise. For other owners use
/// [`Export::from_raw_parts`](crate::Export::from_raw_parts).
pub trait HostBuffer: sealed::Sealed + Send + 'static {
    /// The element type.
    type Element: Element;
    /// The value the exported tensor keeps alive.
    #[doc(hidden)]
    type Owner: Send + 'static;
    /// Splits the buffer into its owner, its first element, its length, and whether the
    /// consumer may write. The pointer must stay valid while the owner lives, wherever it is
    /// moved.
    #[doc(hidden)]
    fn into_parts(self) -> (Self::Owner, *mut Self::Element, usize, bool);
}

impl<T: Element> sealed::Sealed for Vec<T> {}
impl<T: Element> HostBuffer for Vec<T> {
    type Element = T;
    type Owner = Vec<T>;
    fn into_parts(mut self) -> (Vec<T>, *mut T, usize, bool) {
        let (data, len) = (self.as_mut_ptr(), self.len());
        (self, data, len, true)
    }
}

impl<T: Element> sealed::Sealed for Box<[T]> {}
impl<T: Element> HostBuffer for Box<[T]> {
    type Element = T;
    // Kept as a Vec (same allocation, no copy): moving a `Box` asserts unique access to its
    // memory, which would invalidate the pointer handed to the consumer.
    type Owner = Vec<T>;
    fn into_parts(self) -> (Vec<T>, *mut T, usize, bool) {
        HostBuffer::into_parts(self.into_vec())
    }
}

impl<T: Element> sealed::Sealed for Arc<[T]> {}
impl<T: Element> HostBuffer for Arc<[T]> {
    type Element = T;
    type Owner = Arc<[T]>;
    fn into_parts(mut self) -> (Arc<[T]>, *mut T, usize, bool) {
        let len = self.len();
        match Arc::get_mut(&mut self) {
            Some(unique) => {
                let data = unique.as_mut_ptr();
                (self, data, len, true)
            }
            None => {
                let data = Arc::as_ptr(&self).cast::<T>().cast_mut();
                (self, data, len, false)
            }
        }
    }
}
