//! The DLPack ABI version carried by versioned tensors and exchange API tables, and the
//! header's `DLPACK_MAJOR_VERSION` and `DLPACK_MINOR_VERSION` (re-exported by `ffi`).
//!
//! Vocabulary: imports nothing of the crate.

use std::fmt;

/// `DLPACK_MAJOR_VERSION`: the major ABI version this crate implements.
pub const DLPACK_MAJOR_VERSION: u32 = 1;
/// `DLPACK_MINOR_VERSION`: the minor ABI version this crate implements.
pub const DLPACK_MINOR_VERSION: u32 = 3;

/// A DLPack ABI version (`DLPackVersion` in `dlpack.h`).
///
/// The major version changes when the layout of `DLManagedTensorVersioned` changes; a consumer
/// must not read past the `deleter` field of a tensor whose major version it does not know.
/// The minor version grows when enumeration values (devices, dtypes) are added.
///
/// ```
/// use dlbridge::Version;
/// assert_eq!(Version::CURRENT.to_string(), "1.3");
/// assert!(Version::new(1, 1) < Version::STRIDES_REQUIRED);
/// ```
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct Version {
    /// Major version: a change means a different memory layout.
    pub major: u32,
    /// Minor version: a change means new enumeration values, same layout.
    pub minor: u32,
}

impl Version {
    /// The version this crate implements: DLPack 1.3.
    pub const CURRENT: Version = Version::new(DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION);
    /// The first version in which `strides` must not be NULL when `ndim > 0` (DLPack 1.2).
    pub const STRIDES_REQUIRED: Version = Version::new(1, 2);

    /// A version from its two parts.
    pub const fn new(major: u32, minor: u32) -> Self {
        Version { major, minor }
    }

    /// Whether this crate can read a tensor of this version (its major version is 1).
    pub const fn is_supported(self) -> bool {
        self.major == DLPACK_MAJOR_VERSION
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl From<(u32, u32)> for Version {
    fn from((major, minor): (u32, u32)) -> Self {
        Version::new(major, minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_follows_major_then_minor() {
        assert!(Version::new(1, 3) > Version::new(1, 2));
        assert!(Version::new(2, 0) > Version::new(1, 9));
        assert_eq!(Version::from((1, 3)), Version::CURRENT);
    }

    #[test]
    fn support_is_decided_by_major_only() {
        assert!(Version::new(1, 0).is_supported());
        assert!(Version::new(1, 99).is_supported());
        assert!(!Version::new(0, 8).is_supported());
        assert!(!Version::new(2, 0).is_supported());
    }
}
