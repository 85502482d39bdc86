//! The flag bits of a versioned managed tensor (the header's `DLPACK_FLAG_BITMASK_*`,
//! re-exported by `ffi`), and what they say about writing: [`Writability`].
//!
//! Vocabulary: imports nothing of the crate.

use std::fmt;
use std::ops::{BitOr, BitOrAssign};

/// `DLPACK_FLAG_BITMASK_READ_ONLY`: the tensor must not be written to.
pub const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1 << 0;
/// `DLPACK_FLAG_BITMASK_IS_COPIED`: the tensor is a copy owned by the consumer alone.
pub const DLPACK_FLAG_BITMASK_IS_COPIED: u64 = 1 << 1;
/// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements are padded to a byte each.
pub const DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED: u64 = 1 << 2;

/// The `flags` field of `DLManagedTensorVersioned`.
///
/// Unknown bits are kept as they are, never rejected: a newer producer may set bits this crate
/// does not know, and the header asks consumers to ignore them.
///
/// ```
/// use dlbridge::Flags;
/// let flags = Flags::READ_ONLY | Flags::IS_COPIED;
/// assert!(flags.is_read_only());
/// assert_eq!(flags.to_string(), "READ_ONLY|IS_COPIED");
/// assert_eq!(Flags::from_bits(1 << 40).to_string(), "0x10000000000");
/// ```
#[repr(transparent)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Flags(u64);

impl Flags {
    /// No flag set.
    pub const NONE: Flags = Flags(0);
    /// `DLPACK_FLAG_BITMASK_READ_ONLY`: the consumer must not write to the data.
    pub const READ_ONLY: Flags = Flags(DLPACK_FLAG_BITMASK_READ_ONLY);
    /// `DLPACK_FLAG_BITMASK_IS_COPIED`: the producer made a copy that the consumer owns alone.
    pub const IS_COPIED: Flags = Flags(DLPACK_FLAG_BITMASK_IS_COPIED);
    /// `DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED`: sub-byte elements take a byte each
    /// instead of being packed.
    pub const IS_SUBBYTE_TYPE_PADDED: Flags = Flags(DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED);
    /// All bits the header defines.
    pub const KNOWN: Flags = Flags(0b111);

    /// Flags from the raw field, unknown bits included.
    pub const fn from_bits(bits: u64) -> Self {
        Flags(bits)
    }

    /// The raw field.
    pub const fn bits(self) -> u64 {
        self.0
    }

    /// Whether every bit of `other` is set.
    pub const fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }

    /// These flags with the bits of `other` set (`on`) or cleared.
    #[must_use]
    pub const fn with(self, other: Flags, on: bool) -> Self {
        if on {
            Flags(self.0 | other.0)
        } else {
            Flags(self.0 & !other.0)
        }
    }

    /// Whether [`Flags::READ_ONLY`] is set.
    pub const fn is_read_only(self) -> bool {
        self.contains(Self::READ_ONLY)
    }

    /// Whether [`Flags::IS_COPIED`] is set.
    pub const fn is_copied(self) -> bool {
        self.contains(Self::IS_COPIED)
    }

    /// Whether [`Flags::IS_SUBBYTE_TYPE_PADDED`] is set.
    pub const fn is_subbyte_type_padded(self) -> bool {
        self.contains(Self::IS_SUBBYTE_TYPE_PADDED)
    }

    /// The bits the header does not define (kept, never interpreted).
    pub const fn unknown_bits(self) -> u64 {
        self.0 & !Self::KNOWN.0
    }
}

impl BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

impl BitOrAssign for Flags {
    fn bitor_assign(&mut self, rhs: Flags) {
        self.0 |= rhs.0;
    }
}

impl fmt::Display for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        for (flag, name) in [
            (Self::READ_ONLY, "READ_ONLY"),
            (Self::IS_COPIED, "IS_COPIED"),
            (Self::IS_SUBBYTE_TYPE_PADDED, "IS_SUBBYTE_TYPE_PADDED"),
        ] {
            if self.contains(flag) {
                parts.push(name.to_owned());
            }
        }
        if self.unknown_bits() != 0 {
            parts.push(format!("{:#x}", self.unknown_bits()));
        }
        if parts.is_empty() {
            f.write_str("NONE")
        } else {
            f.write_str(&parts.join("|"))
        }
    }
}

impl fmt::Debug for Flags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Flags({self})")
    }
}

/// Whether a consumer may write a tensor's memory: what the producer allows, as far as it
/// can say.
///
/// A versioned tensor says it with [`Flags::READ_ONLY`]. A legacy `DLManagedTensor` has no
/// flags, so its producer cannot say whether writes are allowed, and some legacy-only
/// producers export immutable memory (JAX and TensorFlow export only legacy capsules, over
/// buffers their arrays never change). Writability that is not known is not claimed: such a
/// tensor is [`Writability::Unknown`], and everything in this crate treats it as read-only
/// ([`crate::TensorView::is_read_only`], the mutable views, versioned re-exports, which carry
/// READ_ONLY). A legacy re-export stays possible, since it loses nothing the source had; and a
/// holder that knows better says so with [`crate::ManagedTensor::assume_legacy_writable`].
///
/// ```
/// use dlbridge::{Export, ManagedTensor, Writability};
/// let exported = Export::new(vec![1u8, 2, 3], &[3]).into_legacy()?;
/// // Rust memory exported by this crate is known to be writable...
/// assert_eq!(exported.view().writability(), Writability::Writable);
/// // ...but the same tensor coming back through C is a legacy tensor like any other.
/// let imported = unsafe { ManagedTensor::from_raw(exported.into_raw()) }?;
/// assert_eq!(imported.view().writability(), Writability::Unknown);
/// assert!(imported.view().is_read_only());
/// # Ok::<(), dlbridge::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Writability {
    /// Writes are allowed: a versioned tensor without READ_ONLY, memory this crate exported,
    /// or a legacy tensor its holder vouched for.
    Writable,
    /// The producer flagged the tensor READ_ONLY.
    ReadOnly,
    /// A legacy tensor whose producer could not say whether writes are allowed: read-only.
    Unknown,
}

impl Writability {
    /// Whether the memory may be written ([`Writability::Writable`] only).
    pub const fn allows_writes(self) -> bool {
        matches!(self, Writability::Writable)
    }

    /// The writability of a tensor with `flags`, `versioned` or legacy; a legacy tensor's
    /// writes are allowed only where its holder vouched for them (`legacy_writes_allowed`).
    #[inline]
    pub(crate) const fn of(flags: Flags, versioned: bool, legacy_writes_allowed: bool) -> Self {
        if flags.is_read_only() {
            Writability::ReadOnly
        } else if !versioned && !legacy_writes_allowed {
            Writability::Unknown
        } else {
            Writability::Writable
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_bits_match_the_header_positions() {
        assert_eq!(Flags::READ_ONLY.bits(), 1);
        assert_eq!(Flags::IS_COPIED.bits(), 2);
        assert_eq!(Flags::IS_SUBBYTE_TYPE_PADDED.bits(), 4);
    }

    #[test]
    fn unknown_bits_are_kept() {
        let flags = Flags::from_bits(0x8000_0000_0000_0001);
        assert!(flags.is_read_only());
        assert_eq!(flags.unknown_bits(), 0x8000_0000_0000_0000);
        assert_eq!(flags.bits(), 0x8000_0000_0000_0001);
        assert_eq!(flags.to_string(), "READ_ONLY|0x8000000000000000");
        assert_eq!(Flags::NONE.to_string(), "NONE");
    }

    #[test]
    fn with_sets_and_clears() {
        let flags = Flags::NONE.with(Flags::READ_ONLY, true);
        assert!(flags.is_read_only());
        assert!(!flags.with(Flags::READ_ONLY, false).is_read_only());
        let mut all = Flags::NONE;
        all |= Flags::IS_COPIED | Flags::IS_SUBBYTE_TYPE_PADDED;
        assert!(all.is_copied() && all.is_subbyte_type_padded() && !all.is_read_only());
    }
}
