//! The accessors of the typed arguments, written once for all four
//! ([`TensorArg`](crate::TensorArg), [`TensorArgMut`](crate::TensorArgMut),
//! [`DeviceTensorArg`](crate::DeviceTensorArg), [`DeviceTensorArgMut`](crate::DeviceTensorArgMut)):
//!
//! - `every`: what any argument says of itself: its Python object, the path its tensor came
//!   by, and a result returned like it ([`return_like`](crate::return_like));
//! - `host`: a host argument's elements, as an `ndarray` view or one slice;
//! - `device`: a device argument's address, extents and stream, and its `{:?}`.
//!
//! Each argument type names the kinds it has where it is defined ([`super::tensor_arg`],
//! [`super::device_arg`]). What only writable arguments have (mutable views, slices and
//! pointers, which count as writing for autograd) is theirs alone, so it is written once too.
//!
//! The macro's types are spelled with `$crate` paths, so that a file using it needs no imports
//! for them; the argument types' fields it reads (`held`, and `view` or `tensor`) are the same
//! in all of them.

use ndarray::{ArrayView, ArrayViewMut, Dimension};

/// Implements the accessors of the kinds named (`every`, then `host` or `device`), and `{:?}`, for
/// one argument type: `argument_accessors!(every host: impl['a, T: Element, ...] TensorArg['a, T,
/// D, C], token 'py);`, the type's lifetime first. `token` names the lifetime of the Python token
/// the accessors take (distinct from the type's own). Attributes before the kinds are added to
/// `path`'s docs (an example).
macro_rules! argument_accessors {
    ($(#[$path_doc:meta])* every $kind:ident : impl[$lt:lifetime, $($generics:tt)*] $name:ident[$arg_lt:lifetime, $($args:tt)*], token $py:lifetime) => {
        impl<$lt, $($generics)*> $name<$arg_lt, $($args)*> {
            /// The Python object passed as this argument.
            pub fn object<$py>(&self, py: $crate::pyo3::Python<$py>) -> &$crate::pyo3::Bound<$py, $crate::pyo3::PyAny> {
                self.held.object.bind(py)
            }

            /// How the argument reached its tensor (which fast path, or a full DLPack import);
            /// `{:?}` on the argument shows it too.
            $(#[$path_doc])*
            pub fn path(&self) -> $crate::explain::ArgumentPath {
                self.held.source.path()
            }

            /// Returns `result` to Python as a tensor of this argument's framework, zero-copy
            /// where that framework can hold it as it is (a read-only result, or a layout it
            /// refuses, is copied first: [`return_like`](crate::return_like), which this is
            /// with this argument's object). `result` is
            /// anything [`IntoTensor`](crate::IntoTensor): an ndarray `Array`, a `Vec` with a
            /// shape, a [`dlbridge::ManagedTensor`]. For a device argument, a tensor on its
            /// device (a cudarc buffer exported with `dlbridge::cuda::export_slice`):
            /// enqueue the work that fills it on the argument's `stream()`, which the caller's
            /// framework uses, so that its later work is ordered after it (PyTorch's exchange
            /// table takes the tensor without synchronising; CuPy's `from_dlpack` asks for its
            /// current stream, the same one).
            pub fn return_like<$py>(
                &self,
                py: $crate::pyo3::Python<$py>,
                result: impl $crate::IntoTensor,
            ) -> $crate::pyo3::PyResult<$crate::pyo3::Bound<$py, $crate::pyo3::PyAny>> {
                $crate::return_like(py, result, self.object(py))
            }
        }
        $crate::args::accessors::argument_accessors!(@$kind impl[$lt, $($generics)*] $name[$arg_lt, $($args)*]);
    };

    (@host impl[$lt:lifetime, $($generics:tt)*] $name:ident[$arg_lt:lifetime, $($args:tt)*]) => {
        impl<$lt, $($generics)*> $name<$arg_lt, $($args)*> {
            /// The elements as an `ndarray` view.
            pub fn view(&self) -> $crate::ndarray::ArrayView<'_, T, D> {
                self.view.view()
            }

            /// The elements as one slice in memory order (the order of their indices for
            /// [`CContiguous`](crate::CContiguous), first index fastest for
            /// [`FContiguous`](crate::FContiguous)): for argument types that require a
            /// contiguous layout, which extraction checked, so that this cannot fail. For other
            /// layouts it does not compile; [`try_as_slice`](Self::try_as_slice) is there for
            /// them.
            pub fn as_slice(&self) -> &[T]
            where
                C::Layout: $crate::Contiguous,
            {
                $crate::args::accessors::contiguous_slice(self.view.view())
            }

            /// The elements as one slice in memory order, when the tensor happens to be
            /// contiguous (in either order); `None` otherwise.
            ///
            /// ```
            /// use dlbridge_pyo3::prelude::*;
            ///
            /// /// The sum, through one slice where the tensor allows it.
            /// fn total(x: &TensorArg<'_, f64>) -> f64 {
            ///     match x.try_as_slice() {
            ///         Some(values) => values.iter().sum(),
            ///         None => x.view().sum(),
            ///     }
            /// }
            /// ```
            pub fn try_as_slice(&self) -> Option<&[T]> {
                self.view.as_slice_memory_order()
            }
        }

        impl<$($generics)*> std::fmt::Debug for $name<'_, $($args)*> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("dtype", &format_args!("{}", T::DTYPE))
                    .field("shape", &self.view.shape())
                    .field("strides", &self.view.strides())
                    .field("path", &format_args!("{}", self.path()))
                    .finish()
            }
        }
    };

    (@device impl[$lt:lifetime, $($generics:tt)*] $name:ident[$arg_lt:lifetime, $($args:tt)*]) => {
        impl<$lt, $($generics)*> $name<$arg_lt, $($args)*> {
            /// The tensor's device (`(kDLCUDA, 0)`, say).
            pub fn device(&self) -> $crate::dlbridge::Device {
                self.tensor.device
            }

            /// The stream the kernel must launch on (see [`WorkStream`](crate::streams::WorkStream)).
            pub fn stream(&self) -> $crate::streams::WorkStream {
                self.tensor.stream
            }

            /// The extents.
            pub fn shape(&self) -> &[usize] {
                self.tensor.shape.slice()
            }

            /// The strides, in elements (negative ones allowed unless a layout constraint
            /// forbids them): `i64`, as DLPack stores them and as the core's `TensorView`,
            /// `Export::strides` and `ClassTensor` give and take them.
            pub fn strides(&self) -> &[i64] {
                self.tensor.strides()
            }

            /// The number of dimensions.
            pub fn ndim(&self) -> usize {
                self.tensor.shape.ndim()
            }

            /// The number of elements.
            pub fn len(&self) -> usize {
                self.tensor.elements
            }

            /// Whether the tensor has no elements (its address may then be anything, NULL
            /// included).
            pub fn is_empty(&self) -> bool {
                self.tensor.elements == 0
            }

            /// The first element's device address (`data + byte_offset`), as the CUDA driver
            /// API takes it (`CUdeviceptr`, cudarc's `sys::CUdeviceptr`). The kernel may read
            /// the elements the shape and strides reach, on [`stream`](Self::stream), until
            /// the call returns.
            pub fn device_ptr(&self) -> u64 {
                self.tensor.first as usize as u64
            }

            /// The first element as a typed pointer (device memory: never dereference it on
            /// the host).
            pub fn as_ptr(&self) -> *const T {
                self.tensor.first.cast::<T>().cast_const()
            }
        }

        impl<$($generics)*> std::fmt::Debug for $name<'_, $($args)*> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($name))
                    .field("dtype", &format_args!("{}", T::DTYPE))
                    .field("device", &format_args!("{}", self.device()))
                    .field("shape", &self.shape())
                    .field("strides", &self.strides())
                    .field("stream", &self.stream())
                    .field("path", &format_args!("{}", self.path()))
                    .finish()
            }
        }
    };
}

pub(crate) use argument_accessors;

/// The elements of a view whose layout extraction found contiguous, as one slice in memory
/// order. ndarray agrees with the core's contiguity check for every tensor with elements; an
/// empty one, whose strides the core does not look at, is the empty slice.
pub(crate) fn contiguous_slice<T, D: Dimension>(view: ArrayView<'_, T, D>) -> &[T] {
    if view.is_empty() {
        return &[];
    }
    view.to_slice_memory_order()
        .expect("a contiguous layout, checked at extraction")
}

/// The elements of a mutable view whose layout extraction found contiguous, as one mutable
/// slice in memory order, by the same rule as [`contiguous_slice`].
pub(crate) fn contiguous_slice_mut<T, D: Dimension>(view: ArrayViewMut<'_, T, D>) -> &mut [T] {
    if view.is_empty() {
        return &mut [];
    }
    view.into_slice_memory_order()
        .expect("a contiguous layout, checked at extraction")
}
