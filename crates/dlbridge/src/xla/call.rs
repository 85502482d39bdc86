//! One call of a handler: XLA's call frame read as DLPack views ([`handle`]).

use std::any::Any;
use std::ffi::{CString, c_void};
use std::mem::size_of;
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::data_types::data_type;
use super::ffi::{
    XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR, XLA_FFI_Api, XLA_FFI_Api_Version, XLA_FFI_ArgType,
    XLA_FFI_Array, XLA_FFI_AttrType, XLA_FFI_Buffer, XLA_FFI_ByteSpan, XLA_FFI_CallFrame,
    XLA_FFI_DataType, XLA_FFI_DeviceOrdinal_Get_Args, XLA_FFI_Error, XLA_FFI_Error_Code,
    XLA_FFI_Error_Create_Args, XLA_FFI_ExecutionStage, XLA_FFI_Extension_Base,
    XLA_FFI_Extension_Type, XLA_FFI_Handler_Traits, XLA_FFI_Metadata_Extension, XLA_FFI_RetType,
    XLA_FFI_Scalar, XLA_FFI_Stream_Get_Args, XLA_FFI_UNKNOWN_TYPE_ID,
};
use crate::device::{Device, DeviceType};
use crate::element::Element;
use crate::error::{Error, MAX_NDIM, drop_panic_payload};
use crate::ffi::DLTensor;
use crate::flags::Flags;
use crate::layout;
use crate::validate::validate_descriptor;
use crate::version::Version;
use crate::view::TensorView;

/// The function `$field` of an API table, `None` where the table is too short to hold it (an
/// older XLA's: its `struct_size` says how far it goes) or holds NULL there.
macro_rules! api_function {
    ($api:expr, $field:ident) => {{
        let api: &XLA_FFI_Api = $api;
        let end = std::mem::offset_of!(XLA_FFI_Api, $field)
            + std::mem::size_of::<Option<super::ffi::$field>>();
        if api.struct_size >= end {
            api.$field
        } else {
            None
        }
    }};
}

/// Why a handler failed, as XLA is told: a status code and a message. A [`crate::Error`]
/// (a data type the kernel does not take, say) becomes `INVALID_ARGUMENT` with its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HandlerError {
    /// The status code.
    pub code: XLA_FFI_Error_Code,
    /// The message, as XLA raises it (JAX: `XlaRuntimeError`).
    pub message: String,
}

impl HandlerError {
    /// An error of `code` saying `message`.
    pub fn new(code: XLA_FFI_Error_Code, message: impl Into<String>) -> Self {
        HandlerError {
            code,
            message: message.into(),
        }
    }

    /// An `INVALID_ARGUMENT` error saying `message`.
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        HandlerError::new(XLA_FFI_Error_Code::INVALID_ARGUMENT, message)
    }
}

impl From<Error> for HandlerError {
    fn from(error: Error) -> Self {
        HandlerError::invalid_argument(error.to_string())
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self.code.name().unwrap_or("UNKNOWN");
        write!(f, "{code}: {}", self.message)
    }
}

impl std::error::Error for HandlerError {}

/// A result buffer of one call, which XLA allocated for the handler to fill: dense, row-major,
/// not reached by any argument (see [`Call`]).
#[derive(Debug)]
pub struct ResultBuffer<'a> {
    /// Written only through `&mut self` (`as_mut_slice`; the `ndarray` bridge's
    /// `as_array_mut`).
    pub(crate) view: TensorView<'a>,
}

impl<'a> ResultBuffer<'a> {
    /// The buffer as a view (shape, data type, device), for as long as `self` is borrowed:
    /// what it reads cannot be alive while [`ResultBuffer::as_mut_slice`] writes.
    pub fn view(&self) -> TensorView<'_> {
        self.view
    }

    /// The elements, to write, in row-major order: checked as [`TensorView::as_slice`] checks
    /// (host memory, the data type `T`, alignment).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], Error> {
        let len = self.view.as_slice::<T>()?.len();
        let first = self.view.first_element::<T>()?;
        // SAFETY: `as_slice` accepted these elements (type, alignment, a compact layout in
        // host memory); XLA allocated the buffer for this call to write, and `handle` refused
        // a call where any other buffer reaches its bytes, so `&mut self` is the only access.
        Ok(unsafe { std::slice::from_raw_parts_mut(first.as_ptr(), len) })
    }
}

/// One call of a handler: its arguments as read-only views and its results as buffers to
/// fill, every buffer described as a DLPack tensor on the handler's device, dense and
/// row-major, with its data type named as DLPack's ([`super::data_type`](crate::xla::data_type)).
#[derive(Debug)]
pub struct Call<'a> {
    /// The arguments, in order.
    pub args: Vec<TensorView<'a>>,
    /// The results, in order.
    pub results: Vec<ResultBuffer<'a>>,
    frame: &'a XLA_FFI_CallFrame,
}

impl<'a> Call<'a> {
    /// The call's attributes: a copy, so that they can be read while results are written.
    pub fn attributes(&self) -> Attributes<'a> {
        Attributes { frame: self.frame }
    }

    /// The scalar attribute `name` ([`Attributes::scalar`]).
    pub fn scalar<T: Element>(&self, name: &str) -> Result<T, HandlerError> {
        self.attributes().scalar(name)
    }

    /// The array attribute `name` ([`Attributes::array`]).
    pub fn array<T: Element>(&self, name: &str) -> Result<&'a [T], HandlerError> {
        self.attributes().array(name)
    }

    /// The string attribute `name` ([`Attributes::string`]).
    pub fn string(&self, name: &str) -> Result<&'a str, HandlerError> {
        self.attributes().string(name)
    }

    /// The names of the call's attributes, in XLA's order (sorted).
    pub fn attribute_names(&self) -> Vec<&'a str> {
        self.attributes().names()
    }

    /// The platform's stream of this call (CUDA: the `CUstream`; NULL on the host), from
    /// XLA's `XLA_FFI_Stream_Get`.
    pub fn stream(&self) -> Result<*mut c_void, HandlerError> {
        // SAFETY: the frame's API table, valid for the call (`handle`'s contract).
        let api = unsafe { &*self.frame.api };
        let args = XLA_FFI_Stream_Get_Args {
            struct_size: XLA_FFI_Stream_Get_Args::STRUCT_SIZE,
            extension_start: std::ptr::null_mut(),
            ctx: self.frame.ctx,
            stream: std::ptr::null_mut(),
        };
        let missing = "XLA has no XLA_FFI_Stream_Get";
        query(api, api_function!(api, XLA_FFI_Stream_Get), missing, args).map(|args| args.stream)
    }
}

/// The attributes of one call (`jax.ffi.ffi_call(...)(x, alpha=np.float32(2.0))`), by name,
/// kind and data type.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    frame: &'a XLA_FFI_CallFrame,
}

impl<'a> Attributes<'a> {
    /// The scalar attribute `name` (`jax.ffi.ffi_call(...)(x, alpha=np.float32(2.0))`), of
    /// type `T`: `INVALID_ARGUMENT` where the call has no such attribute, or one of another kind
    /// or data type (naming both).
    pub fn scalar<T: Element>(&self, name: &str) -> Result<T, HandlerError> {
        let attribute = self.attribute(name, XLA_FFI_AttrType::SCALAR)?;
        // SAFETY: a live scalar attribute (`handle`'s contract; its type just checked).
        let scalar = unsafe { &*attribute.cast::<XLA_FFI_Scalar>() };
        let bytes = attribute_bytes::<T>(name, scalar.dtype, scalar.value.cast_const(), 1)?;
        // SAFETY: `size_of::<T>()` bytes of a valid `T` (checked by `attribute_bytes`); a copy.
        Ok(unsafe { bytes.cast::<T>().read_unaligned() })
    }

    /// The array attribute `name` (a 1-D NumPy array passed as an attribute), of element type
    /// `T`: `INVALID_ARGUMENT` as for [`Attributes::scalar`], and for an array whose data is not
    /// aligned for `T`.
    pub fn array<T: Element>(&self, name: &str) -> Result<&'a [T], HandlerError> {
        let attribute = self.attribute(name, XLA_FFI_AttrType::ARRAY)?;
        // SAFETY: a live array attribute (`handle`'s contract; its type just checked).
        let array = unsafe { &*attribute.cast::<XLA_FFI_Array>() };
        let bytes = attribute_bytes::<T>(name, array.dtype, array.data.cast_const(), array.size)?;
        if array.size == 0 {
            return Ok(&[]);
        }
        if !bytes.cast::<T>().is_aligned() {
            return Err(HandlerError::invalid_argument(format!(
                "attribute {name:?}: its data at {:#x} is not aligned for {}",
                bytes as usize,
                T::DTYPE
            )));
        }
        // SAFETY: `size` valid values of `T`, aligned, alive and unchanged for the call.
        Ok(unsafe { std::slice::from_raw_parts(bytes.cast::<T>(), array.size) })
    }

    /// The string attribute `name`: `INVALID_ARGUMENT` as for [`Attributes::scalar`], and for bytes
    /// that are not UTF-8.
    pub fn string(&self, name: &str) -> Result<&'a str, HandlerError> {
        let attribute = self.attribute(name, XLA_FFI_AttrType::STRING)?;
        // SAFETY: a live string attribute (`handle`'s contract; its type just checked).
        let span = unsafe { &*attribute.cast::<XLA_FFI_ByteSpan>() };
        let bytes = if span.len == 0 {
            &[][..]
        } else {
            // SAFETY: `len` bytes, alive for the call.
            unsafe { std::slice::from_raw_parts(span.ptr.cast::<u8>(), span.len) }
        };
        std::str::from_utf8(bytes).map_err(|error| {
            HandlerError::invalid_argument(format!("attribute {name:?} is not UTF-8: {error}"))
        })
    }

    /// The names of the call's attributes, in XLA's order (sorted).
    pub fn names(&self) -> Vec<&'a str> {
        (0..self.count())
            // SAFETY: an index below the count.
            .map(|index| unsafe { self.name(index) })
            .collect()
    }

    fn count(&self) -> usize {
        let attrs = &self.frame.attrs;
        let listed = !attrs.types.is_null() && !attrs.names.is_null() && !attrs.attrs.is_null();
        if listed {
            usize::try_from(attrs.size).unwrap_or(0)
        } else {
            0
        }
    }

    /// The name of attribute `index` (not UTF-8: shown lossily, never matched).
    ///
    /// # Safety
    ///
    /// `index` is below [`Attributes::count`].
    unsafe fn name(&self, index: usize) -> &'a str {
        // SAFETY: `index` is in the list; the name is a live span (`handle`'s contract).
        let span = unsafe { &**self.frame.attrs.names.add(index) };
        if span.len == 0 || span.ptr.is_null() {
            return "";
        }
        // SAFETY: `len` bytes alive for the call.
        let bytes = unsafe { std::slice::from_raw_parts(span.ptr.cast::<u8>(), span.len) };
        std::str::from_utf8(bytes).unwrap_or("\u{fffd}")
    }

    /// The attribute `name`, of kind `kind`.
    fn attribute(&self, name: &str, kind: XLA_FFI_AttrType) -> Result<*mut c_void, HandlerError> {
        for index in 0..self.count() {
            // SAFETY: an index below the count.
            if unsafe { self.name(index) } != name {
                continue;
            }
            // SAFETY: as above: `size` types and attributes.
            let (found, attribute) = unsafe {
                (
                    *self.frame.attrs.types.add(index),
                    *self.frame.attrs.attrs.add(index),
                )
            };
            if found != kind || attribute.is_null() {
                return Err(HandlerError::invalid_argument(format!(
                    "attribute {name:?} is {}, not {}",
                    found.name().unwrap_or("of an unknown kind").to_lowercase(),
                    kind.name().unwrap_or_default().to_lowercase()
                )));
            }
            return Ok(attribute);
        }
        Err(HandlerError::invalid_argument(format!(
            "no attribute {name:?} (the call has {:?})",
            self.names()
        )))
    }
}

/// The message of an error XLA returned, then destroys it.
///
/// # Safety
///
/// `error` is an error returned by a function of `api`, not yet destroyed.
unsafe fn take_error_message(api: &XLA_FFI_Api, error: *mut XLA_FFI_Error) -> String {
    let mut message = String::from("XLA returned an error");
    if let Some(get_message) = api_function!(api, XLA_FFI_Error_GetMessage) {
        let mut args = super::ffi::XLA_FFI_Error_GetMessage_Args {
            struct_size: super::ffi::XLA_FFI_Error_GetMessage_Args::STRUCT_SIZE,
            extension_start: std::ptr::null_mut(),
            error,
            message: std::ptr::null(),
        };
        // SAFETY: a live error of this API.
        unsafe { get_message(&mut args) };
        if !args.message.is_null() {
            // SAFETY: a NUL-terminated message owned by the error, alive until it is destroyed.
            message = unsafe { std::ffi::CStr::from_ptr(args.message) }
                .to_string_lossy()
                .into_owned();
        }
    }
    if let Some(destroy) = api_function!(api, XLA_FFI_Error_Destroy) {
        let mut args = super::ffi::XLA_FFI_Error_Destroy_Args {
            struct_size: super::ffi::XLA_FFI_Error_Destroy_Args::STRUCT_SIZE,
            extension_start: std::ptr::null_mut(),
            error,
        };
        // SAFETY: a live error of this API, destroyed once.
        unsafe { destroy(&mut args) };
    }
    message
}

/// Makes XLA's error for `error` with the frame's API, or NULL where the table cannot make one
/// (XLA then sees success: only a table without `XLA_FFI_Error_Create`, which no XLA has).
fn to_xla_error(api: &XLA_FFI_Api, error: &HandlerError) -> *mut XLA_FFI_Error {
    let Some(create) = api_function!(api, XLA_FFI_Error_Create) else {
        return std::ptr::null_mut();
    };
    // A message with a NUL byte is cut there, as C would read it.
    let text = error.message.split('\0').next().unwrap_or_default();
    let message = CString::new(text).unwrap_or_default();
    let mut args = XLA_FFI_Error_Create_Args {
        struct_size: XLA_FFI_Error_Create_Args::STRUCT_SIZE,
        extension_start: std::ptr::null_mut(),
        message: message.as_ptr(),
        errc: error.code,
    };
    // SAFETY: XLA's function with its arguments struct; the message is copied by XLA.
    unsafe { create(&mut args) }
}

/// The metadata extension of `frame`, if XLA is asking for the handler's metadata.
///
/// # Safety
///
/// `frame`'s extension chain is XLA's: each link live, its `type_` saying what it is.
unsafe fn metadata_query(frame: &XLA_FFI_CallFrame) -> Option<*mut XLA_FFI_Metadata_Extension> {
    let mut link: *mut XLA_FFI_Extension_Base = frame.extension_start;
    while !link.is_null() {
        // SAFETY: a live link of XLA's chain (the contract).
        let base = unsafe { &*link };
        if base.type_ == XLA_FFI_Extension_Type::METADATA {
            return Some(link.cast());
        }
        link = base.next;
    }
    None
}

/// Runs `body` on the call XLA makes through `frame`: a handler's whole body, which answers
/// XLA's metadata query (the API version this crate speaks, `traits`) and every stage but
/// execution without calling `body`. For execution, every argument and result must be a
/// buffer of a data type DLPack names ([`data_type`](crate::xla::data_type)) on `device` (the
/// handler's platform), and no result may share a byte with another buffer (XLA's
/// `input_output_aliases` are refused); else XLA gets `INVALID_ARGUMENT` naming the buffer.
/// What `body` returns goes to XLA as its error; a panic in `body` is caught and becomes
/// `INTERNAL`, never unwinding into XLA.
///
/// ```
/// use dlbridge::xla::{Call, HandlerError, ffi, handle};
///
/// /// `out = a + b` for float32 buffers of one shape.
/// unsafe extern "C" fn add_f32(frame: *mut ffi::XLA_FFI_CallFrame) -> *mut ffi::XLA_FFI_Error {
///     // SAFETY: XLA calls a handler with a live frame.
///     unsafe { handle(frame, dlbridge::Device::CPU, 0, add) }
/// }
///
/// fn add(call: &mut Call<'_>) -> Result<(), HandlerError> {
///     let a = call.args[0].as_slice::<f32>()?;
///     let b = call.args[1].as_slice::<f32>()?;
///     let out = call.results[0].as_mut_slice::<f32>()?;
///     if a.len() != out.len() || b.len() != out.len() {
///         return Err(HandlerError::invalid_argument("add: shapes differ"));
///     }
///     for ((out, a), b) in out.iter_mut().zip(a).zip(b) {
///         *out = a + b;
///     }
///     Ok(())
/// }
/// # let _ = add_f32;
/// ```
///
/// # Safety
///
/// `frame` is NULL or a call frame XLA made, live for this call with everything it points to:
/// the API table, the extension chain, the arguments' and results' buffers, each buffer's data
/// in `device`'s memory and valid for its shape, and the attributes (names, and values of the
/// kind and data type their type says).
pub unsafe fn handle(
    frame: *mut XLA_FFI_CallFrame,
    device: Device,
    traits: XLA_FFI_Handler_Traits,
    body: impl FnOnce(&mut Call<'_>) -> Result<(), HandlerError>,
) -> *mut XLA_FFI_Error {
    // SAFETY: the caller's contract, passed on.
    unsafe { handle_with(frame, traits, |_, _| Ok(device), body) }
}

/// [`handle`] for a handler of a GPU platform (XLA's `"CUDA"`, `"ROCM"`): every buffer is in
/// the memory of the device of type `device_type` whose ordinal XLA gives the call
/// (`XLA_FFI_DeviceOrdinal_Get`; `UNIMPLEMENTED` from an XLA without it). The body launches
/// its work on the call's stream ([`Call::stream`]) and returns without waiting for it: XLA
/// orders its later work on that stream after it.
///
/// # Safety
///
/// As for [`handle`], the buffers' data in the memory of that device (XLA's, for a handler
/// registered for that platform).
pub unsafe fn handle_on_device(
    frame: *mut XLA_FFI_CallFrame,
    device_type: DeviceType,
    traits: XLA_FFI_Handler_Traits,
    body: impl FnOnce(&mut Call<'_>) -> Result<(), HandlerError>,
) -> *mut XLA_FFI_Error {
    let device = |frame: &XLA_FFI_CallFrame, api: &XLA_FFI_Api| {
        Ok(Device::new(device_type, device_ordinal(frame, api)?))
    };
    // SAFETY: the caller's contract, passed on.
    unsafe { handle_with(frame, traits, device, body) }
}

/// The ordinal of the device XLA runs this call on.
fn device_ordinal(frame: &XLA_FFI_CallFrame, api: &XLA_FFI_Api) -> Result<i32, HandlerError> {
    let args = XLA_FFI_DeviceOrdinal_Get_Args {
        struct_size: XLA_FFI_DeviceOrdinal_Get_Args::STRUCT_SIZE,
        extension_start: std::ptr::null_mut(),
        ctx: frame.ctx,
        device_ordinal: 0,
    };
    let missing = "XLA has no XLA_FFI_DeviceOrdinal_Get: a device handler needs a newer jaxlib";
    let function = api_function!(api, XLA_FFI_DeviceOrdinal_Get);
    query(api, function, missing, args).map(|args| args.device_ordinal)
}

/// Calls one of XLA's functions that fill an arguments struct (`XLA_FFI_Stream_Get`,
/// `XLA_FFI_DeviceOrdinal_Get`) with `args`, made for this call's context, and returns the
/// struct as XLA filled it: `UNIMPLEMENTED` saying `missing` where the table lacks the function
/// (`None`), `INTERNAL` with XLA's message where it fails.
fn query<A>(
    api: &XLA_FFI_Api,
    function: Option<unsafe extern "C" fn(*mut A) -> *mut XLA_FFI_Error>,
    missing: &str,
    mut args: A,
) -> Result<A, HandlerError> {
    let function =
        function.ok_or_else(|| HandlerError::new(XLA_FFI_Error_Code::UNIMPLEMENTED, missing))?;
    // SAFETY: XLA's function from its table, called with its own arguments struct (the type
    // says so), filled for this call's context.
    let error = unsafe { function(&mut args) };
    if error.is_null() {
        Ok(args)
    } else {
        Err(HandlerError::new(
            XLA_FFI_Error_Code::INTERNAL,
            // SAFETY: an error XLA returned to us, ours to destroy.
            unsafe { take_error_message(api, error) },
        ))
    }
}

/// [`handle`], with the device the buffers are on worked out at execution by `device`.
///
/// # Safety
///
/// As for [`handle`], for the device `device` gives.
unsafe fn handle_with(
    frame: *mut XLA_FFI_CallFrame,
    traits: XLA_FFI_Handler_Traits,
    device: impl FnOnce(&XLA_FFI_CallFrame, &XLA_FFI_Api) -> Result<Device, HandlerError>,
    body: impl FnOnce(&mut Call<'_>) -> Result<(), HandlerError>,
) -> *mut XLA_FFI_Error {
    if frame.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: live for the call (the contract).
    let frame = unsafe { &*frame };
    // SAFETY: XLA's chain (the contract).
    if let Some(extension) = unsafe { metadata_query(frame) } {
        // SAFETY: XLA's metadata extension, with the metadata to fill.
        unsafe { answer_metadata(extension, traits) };
        return std::ptr::null_mut();
    }
    if frame.api.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: the frame's API table (the contract).
    let api = unsafe { &*frame.api };
    if frame.stage != XLA_FFI_ExecutionStage::EXECUTE {
        return std::ptr::null_mut();
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let device = device(frame, api)?;
        // SAFETY: the frame's buffers (the contract).
        let described = unsafe { Described::of(frame, device) }?;
        let mut call = described.call(frame)?;
        body(&mut call)
    }));
    match outcome {
        Ok(Ok(())) => std::ptr::null_mut(),
        Ok(Err(error)) => to_xla_error(api, &error),
        Err(panic) => {
            let message = format!("the handler panicked: {}", panic_message(&*panic));
            drop_panic_payload(panic);
            to_xla_error(
                api,
                &HandlerError::new(XLA_FFI_Error_Code::INTERNAL, message),
            )
        }
    }
}

/// Fills XLA's metadata: the API version these bindings are for, and `traits`.
///
/// # Safety
///
/// `extension` is XLA's live metadata extension, its `metadata` NULL or live.
unsafe fn answer_metadata(
    extension: *mut XLA_FFI_Metadata_Extension,
    traits: XLA_FFI_Handler_Traits,
) {
    // SAFETY: live (the contract).
    let metadata = unsafe { (*extension).metadata };
    if metadata.is_null() {
        return;
    }
    // SAFETY: live, XLA's to fill (the contract).
    let metadata = unsafe { &mut *metadata };
    metadata.api_version = XLA_FFI_Api_Version {
        struct_size: XLA_FFI_Api_Version::STRUCT_SIZE,
        extension_start: std::ptr::null_mut(),
        major_version: XLA_FFI_API_MAJOR,
        minor_version: XLA_FFI_API_MINOR,
    };
    metadata.traits = traits;
    metadata.state_type_id = XLA_FFI_UNKNOWN_TYPE_ID;
}

/// The first byte of `count` values of `T` at `data` (XLA's `dtype`), after checking that the
/// data type is `T`'s and, for a type with invalid bit patterns (`bool`), every value.
fn attribute_bytes<T: Element>(
    name: &str,
    dtype: XLA_FFI_DataType,
    data: *const c_void,
    count: usize,
) -> Result<*const u8, HandlerError> {
    if data_type(dtype) != Some(T::DTYPE) || T::DTYPE.size_in_bytes() != Some(size_of::<T>()) {
        return Err(HandlerError::invalid_argument(format!(
            "attribute {name:?} is {}, not {}",
            data_type(dtype).map_or_else(|| format!("XLA's type {}", dtype.0), |d| d.to_string()),
            T::DTYPE
        )));
    }
    if count > 0 && data.is_null() {
        return Err(HandlerError::invalid_argument(format!(
            "attribute {name:?} has no data"
        )));
    }
    let bytes = data.cast::<u8>();
    if T::HAS_INVALID_BIT_PATTERNS {
        for index in 0..count {
            // SAFETY: `count` values of `size_of::<T>()` bytes (`handle`'s contract), read as
            // bytes.
            let value = unsafe {
                std::slice::from_raw_parts(bytes.add(index * size_of::<T>()), size_of::<T>())
            };
            if !T::is_valid_bit_pattern(value) {
                return Err(HandlerError::invalid_argument(format!(
                    "attribute {name:?}: value {index} is not a valid {}",
                    T::DTYPE
                )));
            }
        }
    }
    Ok(bytes)
}

/// A panic's message, where it is a string.
fn panic_message(panic: &(dyn Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}

/// The frame's buffers described as DLPack tensors, which the views of a [`Call`] borrow.
struct Described {
    /// One descriptor per argument, then one per result.
    tensors: Vec<DLTensor>,
    /// The strides of every descriptor, back to back (row-major, in elements).
    _strides: Vec<i64>,
    args: usize,
}

impl Described {
    /// Describes every argument and result of `frame`.
    ///
    /// # Safety
    ///
    /// As for [`handle`].
    unsafe fn of(frame: &XLA_FFI_CallFrame, device: Device) -> Result<Self, HandlerError> {
        // SAFETY: the frame's lists (the contract).
        let args = unsafe {
            buffers(
                frame.args.size,
                frame.args.types.cast(),
                frame.args.args,
                "argument",
                XLA_FFI_ArgType::BUFFER.0,
            )
        }?;
        // SAFETY: as above.
        let results = unsafe {
            buffers(
                frame.rets.size,
                frame.rets.types.cast(),
                frame.rets.rets,
                "result",
                XLA_FFI_RetType::BUFFER.0,
            )
        }?;
        // Checked and filled first; the descriptors then point into the finished list, one
        // pointer derived from it for all, so that no later write moves or reborrows it.
        let all = || args.iter().chain(&results);
        let mut strides = vec![0i64; all().map(|buffer| buffer.rank as usize).sum()];
        let mut dtypes = Vec::with_capacity(args.len() + results.len());
        let mut at = 0;
        for (index, buffer) in all().enumerate() {
            let what = || buffer_name(index, args.len());
            let rank = buffer.rank as usize;
            let dims: &[i64] = if rank == 0 {
                &[]
            } else {
                // SAFETY: `rank` extents (the contract; `buffers` checked the pointer).
                unsafe { std::slice::from_raw_parts(buffer.dims, rank) }
            };
            if let Some(dim) = dims.iter().position(|&extent| extent < 0) {
                return Err(HandlerError::invalid_argument(format!(
                    "{}: extent {} of dimension {dim} is negative",
                    what(),
                    dims[dim]
                )));
            }
            let Some(dtype) = data_type(buffer.dtype) else {
                return Err(HandlerError::invalid_argument(format!(
                    "{}: XLA's data type {} ({}) has no DLPack data type here",
                    what(),
                    buffer.dtype.name().unwrap_or("unknown"),
                    buffer.dtype.0
                )));
            };
            layout::fill_row_major_strides(dims, &mut strides[at..at + rank]);
            dtypes.push(dtype);
            at += rank;
        }
        let base = strides.as_mut_ptr();
        let mut tensors = Vec::with_capacity(dtypes.len());
        let mut at = 0;
        for (buffer, dtype) in all().zip(dtypes) {
            let rank = buffer.rank as usize;
            tensors.push(DLTensor {
                data: buffer.data,
                device,
                ndim: rank as i32,
                dtype,
                shape: buffer.dims,
                strides: if rank == 0 {
                    std::ptr::null_mut()
                } else {
                    // SAFETY: `at + rank` is within the list (the ranks' sum is its length).
                    unsafe { base.add(at) }
                },
                byte_offset: 0,
            });
            at += rank;
        }
        Ok(Described {
            tensors,
            _strides: strides,
            args: args.len(),
        })
    }

    /// The call's views of these descriptors, each validated; refused where a result shares a
    /// byte with another buffer.
    fn call<'a>(&'a self, frame: &'a XLA_FFI_CallFrame) -> Result<Call<'a>, HandlerError> {
        let mut views = Vec::with_capacity(self.tensors.len());
        for (index, tensor) in self.tensors.iter().enumerate() {
            let flags = if index < self.args {
                Flags::READ_ONLY
            } else {
                Flags::NONE
            };
            let version = Version::CURRENT;
            // SAFETY: a descriptor of a buffer XLA keeps alive and unchanged (but for the
            // results this call writes) for the call; its shape is XLA's and its strides are
            // ours, both alive as long as `self`.
            let validated =
                unsafe { validate_descriptor(tensor, Some(version), flags, tensor.device) }
                    .map_err(|error| {
                        let what = buffer_name(index, self.args);
                        HandlerError::invalid_argument(format!("{what}: {error}"))
                    })?;
            // SAFETY: `validated` is this descriptor's validation with the same arguments.
            views.push(unsafe {
                TensorView::from_validated(
                    tensor,
                    Some(version),
                    flags,
                    tensor.device,
                    validated,
                    None,
                    false,
                )
            });
        }
        let ranges: Vec<Option<(usize, usize)>> = views.iter().map(byte_range).collect();
        for (result, range) in ranges.iter().enumerate().skip(self.args) {
            let Some((start, end)) = *range else { continue };
            let shared = ranges.iter().enumerate().find(|&(other, other_range)| {
                other != result
                    && other_range.is_some_and(|(other_start, other_end)| {
                        start < other_end && other_start < end
                    })
            });
            if let Some((other, _)) = shared {
                return Err(HandlerError::invalid_argument(format!(
                    "{} shares memory with {}: dlbridge's handlers write results that no other \
                     buffer reaches (register the call without input_output_aliases)",
                    buffer_name(result, self.args),
                    buffer_name(other, self.args)
                )));
            }
        }
        let results = views.split_off(self.args);
        Ok(Call {
            args: views,
            results: results
                .into_iter()
                .map(|view| ResultBuffer { view })
                .collect(),
            frame,
        })
    }
}

/// "argument 1", "result 0": the buffer at `index` of the arguments (`args` of them) and then
/// the results, in the reports; made only for a refusal.
fn buffer_name(index: usize, args: usize) -> String {
    if index < args {
        format!("argument {index}")
    } else {
        format!("result {}", index - args)
    }
}

/// The bytes a dense view reaches, `[start, end)`; `None` without any.
fn byte_range(view: &TensorView<'_>) -> Option<(usize, usize)> {
    let bytes = view.compact_byte_size() as usize;
    (bytes > 0).then(|| {
        let start = view.data_ptr() as usize;
        (start, start + bytes)
    })
}

/// The buffers of a list of arguments or results (`what`), each checked to be of the type
/// `buffer_type` (XLA's value for a buffer in that list) with a rank this crate takes and, with
/// a rank, non-NULL extents.
///
/// # Safety
///
/// `types` and `items` hold `size` values each, of XLA's (NULL only with `size` 0); each item
/// of type BUFFER is a live `XLA_FFI_Buffer`.
unsafe fn buffers<'a>(
    size: i64,
    types: *const i32,
    items: *mut *mut c_void,
    what: &str,
    buffer_type: i32,
) -> Result<Vec<&'a XLA_FFI_Buffer>, HandlerError> {
    let count = usize::try_from(size)
        .map_err(|_| HandlerError::invalid_argument(format!("XLA passed {size} {what}s")))?;
    if count == 0 {
        return Ok(Vec::new());
    }
    if types.is_null() || items.is_null() {
        return Err(HandlerError::invalid_argument(format!(
            "XLA passed {count} {what}s without their list"
        )));
    }
    let mut found = Vec::with_capacity(count);
    for index in 0..count {
        // SAFETY: `size` types and items (the contract).
        let (kind, item) = unsafe { (*types.add(index), *items.add(index)) };
        if kind != buffer_type || item.is_null() {
            return Err(HandlerError::invalid_argument(format!(
                "{what} {index}: not a buffer (type {kind}); dlbridge's handlers take buffers only"
            )));
        }
        // SAFETY: a live buffer (the contract).
        let buffer = unsafe { &*item.cast::<XLA_FFI_Buffer>() };
        if !(0..=i64::from(MAX_NDIM)).contains(&buffer.rank) {
            return Err(HandlerError::invalid_argument(format!(
                "{what} {index}: rank {} is not in 0..={MAX_NDIM}",
                buffer.rank
            )));
        }
        if buffer.rank > 0 && buffer.dims.is_null() {
            return Err(HandlerError::invalid_argument(format!(
                "{what} {index}: rank {} without its extents",
                buffer.rank
            )));
        }
        found.push(buffer);
    }
    Ok(found)
}
