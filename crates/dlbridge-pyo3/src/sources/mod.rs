//! The sources a tensor behind a Python object is reached by, and the two orders that use
//! them: one function per source, each saying what it found (a borrowed descriptor or an owned
//! tensor, whether its memory may be written, the path), and one set of rules applied after
//! it answers ([`FrameworkRules::admit`](crate::framework::FrameworkRules::admit), for the
//! purpose: an import, a read, a write).
//!
//! | source | borrowed, for a typed argument's call | owned |
//! |---|---|---|
//! | the type's C exchange table | [`table::borrow`] | `ExchangeApi::managed_tensor_unclaimed` |
//! | NumPy's array struct | `host::numpy::with_array_view` | `host::numpy::import` |
//! | the buffer protocol | `host::buffer::with_buffer_view` | `host::buffer::import_buffer` |
//! | `__dlpack__` and its retries | | [`dlpack::negotiate`] |
//! | a raw capsule | | `capsule::take_from_capsule` |
//!
//! An owned tensor of a Python object's memory is marked shared once, where its source makes
//! it (`capsule::mark_imported`): the object and its other views still reach the memory.
//!
//! The orders: an import ([`crate::consume`]: a capsule; else, for a plain import, NumPy's
//! struct and the exchange table's export; then `__dlpack__`) and a typed argument
//! ([`crate::args`]: the table, NumPy's struct or the buffer protocol, borrowed; then, the
//! reference, `__dlpack__` held for the call). A typed argument's owned tensor
//! (`TensorArg::to_managed`) takes the owned form of the source its argument read.

pub(crate) mod dlpack;
pub(crate) mod table;
