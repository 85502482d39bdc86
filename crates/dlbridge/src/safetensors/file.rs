//! A safetensors file in memory (mapped, or read), its header checked, its tensors exported
//! over its bytes without copying.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{Ordering, fence};

use super::error::SafetensorsError;
use super::header::{self, Header, TensorInfo};
use crate::device::Device;
use crate::export::Export;
use crate::managed::ManagedTensor;

/// What keeps a file's bytes alive.
enum Keep {
    /// A private, copy-on-write mapping of the file: pages are read from the file when first
    /// touched, and a write (by a consumer that ignores READ_ONLY, or into a writable tensor)
    /// copies the page for this process alone; the file never changes.
    /// (Held for its `Drop`, which unmaps.)
    Mapped(#[allow(dead_code)] memmap2::MmapMut),
    /// The file read into 8-byte words (so that tensors keep the alignment they have in the
    /// file), owned through the raw pointer `Box::into_raw` gave.
    Heap(*mut [u64]),
}

/// The bytes of a file, shared by the file and every tensor exported from it.
struct Storage {
    /// The first byte, with the provenance of the whole allocation or mapping.
    base: *mut u8,
    /// The file's length in bytes.
    len: usize,
    keep: Keep,
}

// SAFETY: `Storage` owns its memory (a mapping or a heap allocation) as a `Vec` would; its raw
// pointers are not shared with anything but the tensors it keeps alive, which read the bytes
// (read-only tensors) or write disjoint ranges of them (writable ones, each tensor's range
// handed out once: `SafetensorsFile::into_tensors`). Dropping it frees the memory on any thread.
unsafe impl Send for Storage {}
// SAFETY: `&Storage` gives nothing but the pointer and the length; see `Send`.
unsafe impl Sync for Storage {}

impl Storage {
    /// The whole file's bytes, for the header's reader.
    ///
    /// # Safety
    ///
    /// Only before any tensor is exported: no writable tensor may be alive.
    unsafe fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `base` addresses `len` initialised bytes (the file's) that live as long as
        // `self`; no tensor writes them (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Keep::Heap(words) = self.keep {
            // SAFETY: `words` came from `Box::into_raw` in `Storage::heap` and is freed once,
            // here; every tensor over it holds an `Arc<Storage>`, so none is alive.
            drop(unsafe { Box::from_raw(words) });
        }
    }
}

impl Storage {
    /// The bytes `fill` writes, in 8-byte words owned by the storage.
    fn heap(
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> std::io::Result<()>,
    ) -> std::io::Result<Self> {
        let mut words = vec![0u64; len.div_ceil(8)].into_boxed_slice();
        // SAFETY: `words` holds `8 * len.div_ceil(8) >= len` initialised bytes; any byte is a
        // valid `u8`, and `u8` needs no alignment; the slice is the only reference to them.
        let bytes = unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), len) };
        fill(bytes)?;
        let words = Box::into_raw(words);
        Ok(Storage {
            base: words.cast::<u8>(),
            len,
            keep: Keep::Heap(words),
        })
    }

    /// A private copy-on-write mapping of `file`, of `len` bytes.
    ///
    /// # Safety
    ///
    /// As [`SafetensorsFile::open`].
    unsafe fn mapped(file: &File, len: usize) -> std::io::Result<Self> {
        // SAFETY: the caller's contract: nothing truncates or writes the file while the mapping
        // lives. A private mapping's own writes never reach the file.
        let mut mapping = unsafe { memmap2::MmapOptions::new().len(len).map_copy(file)? };
        let base = mapping.as_mut_ptr();
        Ok(Storage {
            base,
            len,
            keep: Keep::Mapped(mapping),
        })
    }
}

/// A safetensors file, its header read and checked, its tensors exported over its bytes
/// without a copy (each tensor keeps the bytes alive: the file may be dropped first).
///
/// Made by [`SafetensorsFile::open`] (a copy-on-write memory map: pages are read when first
/// touched), [`SafetensorsFile::read`] (the file read into memory) or
/// [`SafetensorsFile::from_bytes`]. Every rule of the format is checked when it is made (no
/// gap, no overlap, sizes that match types and shapes, nothing past the end: see
/// [`SafetensorsError`]), so a hostile file is refused as a whole and no tensor ever reaches
/// outside its bytes.
///
/// ```
/// use dlbridge::safetensors::{self, SafetensorsFile};
/// use dlbridge::{DataType, Export};
///
/// let weight = Export::new(vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).into_versioned()?;
/// let bias = Export::new(vec![0.5f32, -0.5], &[2]).into_versioned()?;
/// let mut bytes = Vec::new();
/// safetensors::write(
///     &mut bytes,
///     [("weight", weight.view()), ("bias", bias.view())],
///     &[("format".to_owned(), "pt".to_owned())],
/// )?;
///
/// let file = SafetensorsFile::from_bytes(&bytes)?;
/// assert_eq!(file.metadata(), &[("format".to_owned(), "pt".to_owned())]);
/// let names: Vec<&str> = file.tensors().iter().map(|info| info.name()).collect();
/// assert_eq!(names, ["bias", "weight"]); // the order of their bytes
/// let weight = file.tensor("weight")?; // no copy: a read-only tensor over the file's bytes
/// assert_eq!(weight.view().dtype(), DataType::FLOAT32);
/// assert_eq!(weight.view().as_slice::<f32>()?, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
/// assert!(weight.view().is_read_only());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct SafetensorsFile {
    storage: Arc<Storage>,
    header: Header,
}

impl SafetensorsFile {
    /// Maps a file (privately, copy-on-write) and checks its header. Nothing of the data is
    /// read until a tensor's pages are touched, so opening a large file costs the header only.
    ///
    /// # Safety
    ///
    /// Nothing may truncate or write the file while the mapping lives, that is, while this
    /// value or any tensor exported from it lives (in this process or another): the tensors
    /// read the file's pages, and a truncated file's pages cannot be read at all (the
    /// process is killed with `SIGBUS`). Writes through the mapping itself are this process's
    /// own and never reach the file. Writing a new file with [`save`](super::save) is safe:
    /// it replaces the file rather than writing into it. Where the file may change, use
    /// [`SafetensorsFile::read`].
    pub unsafe fn open(path: impl AsRef<Path>) -> Result<Self, SafetensorsError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(SafetensorsError::io("open", path))?;
        let len = file_len(&file).map_err(SafetensorsError::io("open", path))?;
        if len < 8 {
            return Err(SafetensorsError::FileTooShort {
                file_len: len as u64,
            });
        }
        // SAFETY: the caller's contract, passed on.
        let storage =
            unsafe { Storage::mapped(&file, len) }.map_err(SafetensorsError::io("map", path))?;
        Self::checked(storage)
    }

    /// Reads a file into memory and checks its header: the safe way to load a file that may
    /// change, at the cost of reading all of it (one copy, from the file into memory).
    pub fn read(path: impl AsRef<Path>) -> Result<Self, SafetensorsError> {
        let path = path.as_ref();
        let mut file = File::open(path).map_err(SafetensorsError::io("open", path))?;
        let len = file_len(&file).map_err(SafetensorsError::io("open", path))?;
        let storage = Storage::heap(len, |bytes| file.read_exact(bytes))
            .map_err(SafetensorsError::io("read", path))?;
        Self::checked(storage)
    }

    /// A file's bytes already in memory, copied once (into memory aligned as the file is) and
    /// checked.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, SafetensorsError> {
        let storage = Storage::heap(bytes.len(), |target| {
            target.copy_from_slice(bytes);
            Ok(())
        })
        .map_err(SafetensorsError::io("copy", Path::new("")))?;
        Self::checked(storage)
    }

    fn checked(storage: Storage) -> Result<Self, SafetensorsError> {
        // SAFETY: no tensor exists yet.
        let header = header::parse(unsafe { storage.bytes() })?;
        Ok(SafetensorsFile {
            storage: Arc::new(storage),
            header,
        })
    }

    /// The file's `__metadata__`, in its order (empty when it has none).
    pub fn metadata(&self) -> &[(String, String)] {
        &self.header.metadata
    }

    /// The file's tensors, in the order of their bytes.
    pub fn tensors(&self) -> &[TensorInfo] {
        &self.header.tensors
    }

    /// The tensor of that name, as the header describes it.
    pub fn info(&self, name: &str) -> Option<&TensorInfo> {
        let position = *self.header.index.get(name)?;
        self.header.tensors.get(position)
    }

    /// Whether the file is memory-mapped ([`SafetensorsFile::open`]) rather than read.
    pub fn is_mapped(&self) -> bool {
        matches!(self.storage.keep, Keep::Mapped(_))
    }

    /// The tensor of that name, over the file's bytes (no copy), flagged READ_ONLY: a CPU
    /// tensor, versioned, that keeps the bytes alive. Asked twice, it is exported twice, over
    /// the same bytes.
    pub fn tensor(&self, name: &str) -> Result<ManagedTensor, SafetensorsError> {
        let info = self.info(name).ok_or_else(|| SafetensorsError::NotFound {
            name: name.to_owned(),
        })?;
        self.export(info, false)
    }

    /// Every tensor, in the order of their bytes, each exported once over the file's bytes
    /// (no copy). Writable tensors (`writable = true`) write their own bytes only, in this
    /// process's memory (a mapped file's pages are copied on write: the file never changes);
    /// that needs every tensor exported earlier by [`SafetensorsFile::tensor`] to be gone,
    /// since it reads the same bytes ([`SafetensorsError::StillLent`] otherwise).
    pub fn into_tensors(
        self,
        writable: bool,
    ) -> Result<Vec<(String, ManagedTensor)>, SafetensorsError> {
        let lent = Arc::strong_count(&self.storage) - 1;
        if writable {
            if lent > 0 {
                return Err(SafetensorsError::StillLent { tensors: lent });
            }
            // `strong_count` reads the count without ordering; pair it with the release
            // decrement of every tensor already dropped (on any thread), so that their reads of
            // the bytes happen before the writable tensors' writes (what `Arc::get_mut` does).
            fence(Ordering::Acquire);
        }
        self.header
            .tensors
            .iter()
            .map(|info| Ok((info.name().to_owned(), self.export(info, writable)?)))
            .collect()
    }

    fn export(&self, info: &TensorInfo, writable: bool) -> Result<ManagedTensor, SafetensorsError> {
        // The header's reader checked `data_start + end <= len`: the offset is inside the
        // file's bytes (or at their end, for an empty tensor there).
        let begin = (self.header.data_start + info.data_offsets()[0]) as usize;
        debug_assert!(begin + info.byte_len() as usize <= self.storage.len);
        // SAFETY: `begin <= len` (above): inside the allocation, or one past its end.
        let data = unsafe { self.storage.base.add(begin) };
        // SAFETY: `data` addresses the tensor's bytes, `info.byte_len()` of them, which are
        // exactly what its data type and shape take, compact (the header's reader checked
        // both); the storage keeps them alive while the owner (an `Arc` of it) lives. They are
        // initialised (the file's bytes). A read-only tensor is never written by this crate;
        // a writable one is exported once, with no read-only one alive
        // (`into_tensors`), and no other tensor's bytes overlap its own (the reader refuses
        // overlaps). Nothing outside writes them: a private mapping (`open`'s contract) or
        // heap memory this crate owns.
        let export = unsafe {
            Export::from_raw_parts(
                Arc::clone(&self.storage),
                data.cast(),
                info.dtype(),
                Device::CPU,
                info.shape(),
            )
        };
        let export = match info.dtype().size_in_bytes() {
            Some(size) => export.with_buffer_len(info.byte_len() as usize / size),
            None => export,
        };
        export
            .read_only(!writable)
            .into_versioned()
            .map_err(|source| SafetensorsError::Tensor {
                name: info.name().to_owned(),
                source,
            })
    }
}

/// A file's length, as `usize` (a longer file cannot be held in memory).
fn file_len(file: &File) -> std::io::Result<usize> {
    let len = file.metadata()?.len();
    usize::try_from(len).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("{len} bytes cannot be held in this process's memory"),
        )
    })
}
