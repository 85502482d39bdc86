//! The seal of the bridges' extension traits (`faer::FaerViewExt`, `burn::BurnTensorExt`...):
//! each has [`Sealed`] as a supertrait, which only this crate's [`TensorView`] and
//! [`ManagedTensor`] implement, so that methods can be added to the traits without breaking
//! anyone, and no other type can claim the guarantees their implementations give.

use crate::managed::ManagedTensor;
use crate::view::TensorView;

/// Implemented by [`TensorView`] and [`ManagedTensor`] only; public in a private module, so
/// that it can bound public traits and nothing outside the crate can name it.
pub trait Sealed {}

impl Sealed for TensorView<'_> {}
impl Sealed for ManagedTensor {}
