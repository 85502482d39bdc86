//! The seal of the argument traits (`faer::FaerArgExt`, `nalgebra::NalgebraArgMutExt`...):
//! each has [`Sealed`] as a supertrait, which only the typed arguments implement, so that
//! methods can be added to the traits without breaking anyone.

use dlbridge::Element;

use crate::args::constraints::{Constraints, Dimensionality};
use crate::args::tensor_arg::{TensorArg, TensorArgMut};

/// Implemented by [`TensorArg`] and [`TensorArgMut`] only; public in a private module, so that
/// it can bound public traits and nothing outside the crate can name it.
pub trait Sealed {}

impl<T: Element, D: Dimensionality, C: Constraints> Sealed for TensorArg<'_, T, D, C> {}
impl<T: Element, D: Dimensionality, C: Constraints> Sealed for TensorArgMut<'_, T, D, C> {}
