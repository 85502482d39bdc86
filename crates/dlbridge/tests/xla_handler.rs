//! `dlbridge::xla::handle` against a fake XLA: call frames built here as XLA builds them, with
//! an API table whose errors are Rust boxes, so that every path (the metadata query, other
//! stages, buffers refused, results written, errors and panics reported) runs under Miri too.

use std::ffi::{CStr, CString, c_void};
use std::ptr::{null, null_mut};

use dlbridge::xla::ffi::*;
use dlbridge::xla::{Call, HandlerError, handle, handle_on_device};
use dlbridge::{DataType, Device, DeviceType, Writability};

/// An error made by the fake `XLA_FFI_Error_Create`: what the handler reported.
struct FakeError {
    code: XLA_FFI_Error_Code,
    message: CString,
}

unsafe extern "C" fn create_error(args: *mut XLA_FFI_Error_Create_Args) -> *mut XLA_FFI_Error {
    // SAFETY: the handler passes its arguments struct, with a NUL-terminated message.
    let (code, message) = unsafe { ((*args).errc, CStr::from_ptr((*args).message).to_owned()) };
    Box::into_raw(Box::new(FakeError { code, message })).cast()
}

unsafe extern "C" fn error_message(args: *mut XLA_FFI_Error_GetMessage_Args) {
    // SAFETY: an error of `create_error`, live.
    unsafe { (*args).message = (*(*args).error.cast::<FakeError>()).message.as_ptr() };
}

unsafe extern "C" fn destroy_error(args: *mut XLA_FFI_Error_Destroy_Args) {
    // SAFETY: an error of `create_error`, destroyed once.
    drop(unsafe { Box::from_raw((*args).error.cast::<FakeError>()) });
}

/// The fake stream `stream_get` hands out.
const STREAM: usize = 0x5eed;

unsafe extern "C" fn stream_get(args: *mut XLA_FFI_Stream_Get_Args) -> *mut XLA_FFI_Error {
    // SAFETY: the handler's arguments struct.
    unsafe { (*args).stream = std::ptr::without_provenance_mut(STREAM) };
    null_mut()
}

/// The device ordinal `device_ordinal_get` gives.
const ORDINAL: i32 = 3;

unsafe extern "C" fn device_ordinal_get(
    args: *mut XLA_FFI_DeviceOrdinal_Get_Args,
) -> *mut XLA_FFI_Error {
    // SAFETY: the handler's arguments struct.
    unsafe { (*args).device_ordinal = ORDINAL };
    null_mut()
}

/// The fake API table.
fn api() -> XLA_FFI_Api {
    XLA_FFI_Api {
        struct_size: XLA_FFI_Api::STRUCT_SIZE,
        extension_start: null_mut(),
        api_version: XLA_FFI_Api_Version {
            struct_size: XLA_FFI_Api_Version::STRUCT_SIZE,
            extension_start: null_mut(),
            major_version: XLA_FFI_API_MAJOR,
            minor_version: XLA_FFI_API_MINOR,
        },
        internal_api: null(),
        XLA_FFI_Error_Create: Some(create_error),
        XLA_FFI_Error_GetMessage: Some(error_message),
        XLA_FFI_Error_Destroy: Some(destroy_error),
        XLA_FFI_Handler_Register: None,
        XLA_FFI_Stream_Get: Some(stream_get),
        XLA_FFI_Type_Register: None,
        XLA_FFI_ExecutionContext_Get: None,
        XLA_FFI_State_Set: None,
        XLA_FFI_State_Get: None,
        XLA_FFI_DeviceMemory_Allocate: None,
        XLA_FFI_DeviceMemory_Free: None,
        XLA_FFI_ThreadPool_Schedule: None,
        XLA_FFI_ThreadPool_NumThreads: None,
        XLA_FFI_Future_Create: None,
        XLA_FFI_Future_SetAvailable: None,
        XLA_FFI_Future_SetError: None,
        XLA_FFI_RunId_Get: None,
        XLA_FFI_DeviceOrdinal_Get: Some(device_ordinal_get),
    }
}

/// One buffer of a fake call: its extents and its memory.
struct FakeBuffer {
    dims: Vec<i64>,
    buffer: XLA_FFI_Buffer,
}

impl FakeBuffer {
    fn new(dtype: XLA_FFI_DataType, data: *mut c_void, dims: &[i64]) -> Box<Self> {
        let mut fake = Box::new(FakeBuffer {
            dims: dims.to_vec(),
            buffer: XLA_FFI_Buffer {
                struct_size: XLA_FFI_Buffer::STRUCT_SIZE,
                extension_start: null_mut(),
                dtype,
                data,
                rank: dims.len() as i64,
                dims: null_mut(),
            },
        });
        fake.buffer.dims = fake.dims.as_mut_ptr();
        fake
    }

    fn of<T>(dtype: XLA_FFI_DataType, data: &mut [T], dims: &[i64]) -> Box<Self> {
        FakeBuffer::new(dtype, data.as_mut_ptr().cast(), dims)
    }
}

/// A fake call frame over `args` and `results`, with what it points to.
struct FakeFrame {
    _attr_names: Vec<XLA_FFI_ByteSpan>,
    _attr_name_pointers: Vec<*mut XLA_FFI_ByteSpan>,
    _attr_types: Vec<XLA_FFI_AttrType>,
    _attr_values: Vec<*mut c_void>,
    _api: Box<XLA_FFI_Api>,
    _arg_types: Vec<XLA_FFI_ArgType>,
    _ret_types: Vec<XLA_FFI_RetType>,
    _args: Vec<*mut c_void>,
    _rets: Vec<*mut c_void>,
    frame: XLA_FFI_CallFrame,
}

impl FakeFrame {
    fn new(args: &mut [Box<FakeBuffer>], results: &mut [Box<FakeBuffer>]) -> Box<Self> {
        let pointers = |buffers: &mut [Box<FakeBuffer>]| -> Vec<*mut c_void> {
            buffers
                .iter_mut()
                .map(|fake| (&raw mut fake.buffer).cast())
                .collect()
        };
        let mut fake = Box::new(FakeFrame {
            _attr_names: Vec::new(),
            _attr_name_pointers: Vec::new(),
            _attr_types: Vec::new(),
            _attr_values: Vec::new(),
            _api: Box::new(api()),
            _arg_types: vec![XLA_FFI_ArgType::BUFFER; args.len()],
            _ret_types: vec![XLA_FFI_RetType::BUFFER; results.len()],
            _args: pointers(args),
            _rets: pointers(results),
            frame: XLA_FFI_CallFrame {
                struct_size: XLA_FFI_CallFrame::STRUCT_SIZE,
                extension_start: null_mut(),
                api: null(),
                ctx: null_mut(),
                stage: XLA_FFI_ExecutionStage::EXECUTE,
                args: XLA_FFI_Args {
                    struct_size: XLA_FFI_Args::STRUCT_SIZE,
                    extension_start: null_mut(),
                    size: args.len() as i64,
                    types: null_mut(),
                    args: null_mut(),
                },
                rets: XLA_FFI_Rets {
                    struct_size: XLA_FFI_Rets::STRUCT_SIZE,
                    extension_start: null_mut(),
                    size: results.len() as i64,
                    types: null_mut(),
                    rets: null_mut(),
                },
                attrs: XLA_FFI_Attrs {
                    struct_size: XLA_FFI_Attrs::STRUCT_SIZE,
                    extension_start: null_mut(),
                    size: 0,
                    types: null_mut(),
                    names: null_mut(),
                    attrs: null_mut(),
                },
                future: null_mut(),
            },
        });
        fake.frame.api = (&raw mut *fake._api).cast_const();
        fake.frame.args.types = fake._arg_types.as_mut_ptr();
        fake.frame.args.args = fake._args.as_mut_ptr();
        fake.frame.rets.types = fake._ret_types.as_mut_ptr();
        fake.frame.rets.rets = fake._rets.as_mut_ptr();
        fake
    }

    /// Gives the frame `attributes`: `(name, kind, value)`, each value live as long as the frame,
    /// in XLA's order (sorted by name).
    fn set_attributes(&mut self, attributes: &[(&'static str, XLA_FFI_AttrType, *mut c_void)]) {
        self._attr_names = attributes
            .iter()
            .map(|(name, _, _)| XLA_FFI_ByteSpan {
                ptr: name.as_ptr().cast(),
                len: name.len(),
            })
            .collect();
        // One pointer to the list, then each name's from it, so that none reborrows the list.
        let first = self._attr_names.as_mut_ptr();
        self._attr_name_pointers = (0..attributes.len())
            // SAFETY: an index within the list.
            .map(|index| unsafe { first.add(index) })
            .collect();
        self._attr_types = attributes.iter().map(|(_, kind, _)| *kind).collect();
        self._attr_values = attributes.iter().map(|(_, _, value)| *value).collect();
        self.frame.attrs.size = attributes.len() as i64;
        self.frame.attrs.names = self._attr_name_pointers.as_mut_ptr();
        self.frame.attrs.types = self._attr_types.as_mut_ptr();
        self.frame.attrs.attrs = self._attr_values.as_mut_ptr();
    }

    /// Calls `body` through `handle` as XLA would, on the host; the error it reports, if any,
    /// as `(code, message)`.
    fn call(
        &mut self,
        body: impl FnOnce(&mut Call<'_>) -> Result<(), HandlerError>,
    ) -> Option<(XLA_FFI_Error_Code, String)> {
        // SAFETY: a live frame whose buffers are live for the call.
        let error = unsafe { handle(&raw mut self.frame, Device::CPU, 0, body) };
        reported(error)
    }

    /// As `call`, for a handler of a GPU platform of `device_type`.
    fn call_on_device(
        &mut self,
        device_type: DeviceType,
        body: impl FnOnce(&mut Call<'_>) -> Result<(), HandlerError>,
    ) -> Option<(XLA_FFI_Error_Code, String)> {
        // SAFETY: a live frame; its buffers' addresses are never dereferenced (device memory).
        let error = unsafe { handle_on_device(&raw mut self.frame, device_type, 0, body) };
        reported(error)
    }
}

/// What a handler reported: `None` for success.
fn reported(error: *mut XLA_FFI_Error) -> Option<(XLA_FFI_Error_Code, String)> {
    (!error.is_null()).then(|| {
        // SAFETY: an error of `create_error`, ours now.
        let error = unsafe { Box::from_raw(error.cast::<FakeError>()) };
        (error.code, error.message.into_string().unwrap())
    })
}

fn add(call: &mut Call<'_>) -> Result<(), HandlerError> {
    let a = call.args[0].as_slice::<f32>()?;
    let b = call.args[1].as_slice::<f32>()?;
    let out = call.results[0].as_mut_slice::<f32>()?;
    if a.len() != out.len() || b.len() != out.len() {
        return Err(HandlerError::invalid_argument("add: shapes differ"));
    }
    for ((out, a), b) in out.iter_mut().zip(a).zip(b) {
        *out = a + b;
    }
    Ok(())
}

#[test]
fn a_call_reads_its_arguments_and_writes_its_result() {
    let (mut a, mut b, mut out) = ([1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [10.0f32; 6], [0.0f32; 6]);
    let mut args = [
        FakeBuffer::of(XLA_FFI_DataType::F32, &mut a, &[2, 3]),
        FakeBuffer::of(XLA_FFI_DataType::F32, &mut b, &[2, 3]),
    ];
    let mut results = [FakeBuffer::of(XLA_FFI_DataType::F32, &mut out, &[2, 3])];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let error = frame.call(|call| {
        let first = &call.args[0];
        assert_eq!(first.dtype(), DataType::FLOAT32);
        assert_eq!((first.shape(), first.strides()), (&[2, 3][..], &[3, 1][..]));
        assert_eq!(first.device(), Device::CPU);
        assert_eq!(first.writability(), Writability::ReadOnly);
        assert_eq!(call.results[0].view().writability(), Writability::Writable);
        assert_eq!(call.stream()?, std::ptr::without_provenance_mut(STREAM));
        add(call)
    });
    assert_eq!(error, None);
    drop(frame);
    assert_eq!(out, [11.0, 12.0, 13.0, 14.0, 15.0, 16.0]);
}

#[test]
fn the_metadata_query_is_answered_without_calling_the_body() {
    let mut metadata = XLA_FFI_Metadata {
        struct_size: XLA_FFI_Metadata::STRUCT_SIZE,
        api_version: XLA_FFI_Api_Version {
            struct_size: 0,
            extension_start: null_mut(),
            major_version: -1,
            minor_version: -1,
        },
        traits: 0,
        state_type_id: XLA_FFI_TypeId { type_id: 7 },
    };
    let mut extension = XLA_FFI_Metadata_Extension {
        extension_base: XLA_FFI_Extension_Base {
            struct_size: XLA_FFI_Metadata_Extension::STRUCT_SIZE,
            type_: XLA_FFI_Extension_Type::METADATA,
            next: null_mut(),
        },
        metadata: &raw mut metadata,
    };
    let mut frame = FakeFrame::new(&mut [], &mut []);
    frame.frame.extension_start = (&raw mut extension).cast();
    let traits = XLA_FFI_HANDLER_TRAITS_COMMAND_BUFFER_COMPATIBLE;
    // SAFETY: a live frame.
    let error = unsafe {
        handle(&raw mut frame.frame, Device::CPU, traits, |_| {
            panic!("the body runs for execution only")
        })
    };
    assert!(error.is_null());
    assert_eq!(
        (
            metadata.api_version.major_version,
            metadata.api_version.minor_version
        ),
        (XLA_FFI_API_MAJOR, XLA_FFI_API_MINOR)
    );
    assert_eq!(
        metadata.api_version.struct_size,
        XLA_FFI_Api_Version::STRUCT_SIZE
    );
    assert_eq!(metadata.traits, traits);
    assert_eq!(metadata.state_type_id, XLA_FFI_UNKNOWN_TYPE_ID);
}

#[test]
fn stages_before_execution_and_a_null_frame_do_nothing() {
    for stage in [
        XLA_FFI_ExecutionStage::INSTANTIATE,
        XLA_FFI_ExecutionStage::PREPARE,
        XLA_FFI_ExecutionStage::INITIALIZE,
    ] {
        let mut frame = FakeFrame::new(&mut [], &mut []);
        frame.frame.stage = stage;
        assert_eq!(frame.call(|_| panic!("not for {stage:?}")), None);
    }
    // SAFETY: NULL is allowed.
    let error = unsafe { handle(null_mut(), Device::CPU, 0, |_| panic!("no frame")) };
    assert!(error.is_null());
}

#[test]
fn errors_and_panics_of_the_body_reach_xla_as_errors() {
    let mut frame = FakeFrame::new(&mut [], &mut []);
    assert_eq!(
        frame.call(|_| Err(HandlerError::new(
            XLA_FFI_Error_Code::OUT_OF_RANGE,
            "index 9 of 3"
        ))),
        Some((XLA_FFI_Error_Code::OUT_OF_RANGE, "index 9 of 3".to_owned()))
    );
    assert_eq!(
        frame.call(|_| panic!("boom {}", 7)),
        Some((
            XLA_FFI_Error_Code::INTERNAL,
            "the handler panicked: boom 7".to_owned()
        ))
    );
    // A message with a NUL byte is cut there, as C reads it.
    assert_eq!(
        frame.call(|_| Err(HandlerError::invalid_argument("before\0after"))),
        Some((XLA_FFI_Error_Code::INVALID_ARGUMENT, "before".to_owned()))
    );
}

#[test]
fn a_data_type_the_kernel_does_not_take_is_refused_with_dlpack_s_message() {
    let mut a = [1.0f64; 4];
    let mut out = [0.0f32; 4];
    let mut args = [
        FakeBuffer::of(XLA_FFI_DataType::F64, &mut a, &[4]),
        FakeBuffer::of(XLA_FFI_DataType::F64, &mut a, &[4]),
    ];
    let mut results = [FakeBuffer::of(XLA_FFI_DataType::F32, &mut out, &[4])];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let (code, message) = frame.call(add).expect("refused");
    assert_eq!(code, XLA_FFI_Error_Code::INVALID_ARGUMENT);
    assert!(
        message.contains("float32") && message.contains("float64"),
        "{message}"
    );
}

#[test]
fn buffers_dlpack_cannot_describe_are_refused_naming_the_buffer() {
    let mut bytes = [0u8; 8];
    let cases: [(XLA_FFI_DataType, &[i64], &str); 4] = [
        (
            XLA_FFI_DataType::TOKEN,
            &[1],
            "argument 0: XLA's data type TOKEN (17) has no DLPack data type here",
        ),
        (
            XLA_FFI_DataType::S4,
            &[2],
            "argument 0: XLA's data type S4 (21) has no DLPack data type here",
        ),
        (
            XLA_FFI_DataType(77),
            &[2],
            "argument 0: XLA's data type unknown (77) has no DLPack data type here",
        ),
        (
            XLA_FFI_DataType::U8,
            &[2, -1],
            "argument 0: extent -1 of dimension 1 is negative",
        ),
    ];
    for (dtype, dims, expected) in cases {
        let mut args = [FakeBuffer::of(dtype, &mut bytes, dims)];
        let mut frame = FakeFrame::new(&mut args, &mut []);
        assert_eq!(
            frame.call(|_| panic!("refused before the body")),
            Some((XLA_FFI_Error_Code::INVALID_ARGUMENT, expected.to_owned()))
        );
    }
}

#[test]
fn a_result_that_shares_memory_with_another_buffer_is_refused() {
    let mut data = [1.0f32; 4];
    let pointer = data.as_mut_ptr().cast();
    let mut args = [FakeBuffer::new(XLA_FFI_DataType::F32, pointer, &[4])];
    let mut results = [FakeBuffer::new(XLA_FFI_DataType::F32, pointer, &[2])];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let (code, message) = frame.call(|_| panic!("refused")).expect("refused");
    assert_eq!(code, XLA_FFI_Error_Code::INVALID_ARGUMENT);
    assert!(
        message.starts_with("result 0 shares memory with argument 0"),
        "{message}"
    );
}

#[test]
fn scalars_and_empty_buffers_are_views_too() {
    let mut scalar = [2.5f64];
    let mut args = [
        FakeBuffer::of(XLA_FFI_DataType::F64, &mut scalar, &[]),
        FakeBuffer::new(XLA_FFI_DataType::S32, null_mut(), &[0, 3]),
    ];
    let mut results = [FakeBuffer::new(XLA_FFI_DataType::PRED, null_mut(), &[0])];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let error = frame.call(|call| {
        assert_eq!(call.args[0].as_slice::<f64>()?, &[2.5]);
        assert_eq!(call.args[0].ndim(), 0);
        assert_eq!(call.args[1].as_slice::<i32>()?, &[] as &[i32]);
        assert_eq!(
            call.results[0].as_mut_slice::<bool>()?,
            &mut [] as &mut [bool]
        );
        Ok(())
    });
    assert_eq!(error, None);
}

#[test]
fn an_older_api_table_without_a_function_is_told_apart() {
    let mut frame = FakeFrame::new(&mut [], &mut []);
    // A table that ends before XLA_FFI_Stream_Get.
    // SAFETY: the frame's own table, not borrowed elsewhere.
    unsafe {
        (*frame.frame.api.cast_mut()).struct_size =
            std::mem::offset_of!(XLA_FFI_Api, XLA_FFI_Stream_Get);
    }
    let error = frame.call(|call| {
        let refused = call.stream().unwrap_err();
        assert_eq!(refused.code, XLA_FFI_Error_Code::UNIMPLEMENTED);
        Err(refused)
    });
    assert_eq!(
        error,
        Some((
            XLA_FFI_Error_Code::UNIMPLEMENTED,
            "XLA has no XLA_FFI_Stream_Get".to_owned()
        ))
    );
}

#[test]
fn a_device_handlers_buffers_are_on_the_device_xla_gives_the_call() {
    let device = |address: usize| std::ptr::without_provenance_mut::<c_void>(address);
    let mut args = [FakeBuffer::new(
        XLA_FFI_DataType::F32,
        device(0x7000_0000),
        &[4],
    )];
    let mut results = [FakeBuffer::new(
        XLA_FFI_DataType::F32,
        device(0x7000_1000),
        &[4],
    )];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let error = frame.call_on_device(DeviceType::CUDA, |call| {
        let cuda = Device::new(DeviceType::CUDA, ORDINAL);
        assert_eq!(call.args[0].device(), cuda);
        assert_eq!(call.results[0].view().device(), cuda);
        assert_eq!(call.args[0].data_ptr() as usize, 0x7000_0000);
        assert_eq!(call.stream()?.addr(), STREAM);
        // The host reads none of it.
        assert!(call.args[0].as_slice::<f32>().is_err());
        assert!(call.results[0].as_mut_slice::<f32>().is_err());
        Ok(())
    });
    assert_eq!(error, None);
    // An XLA whose table ends before XLA_FFI_DeviceOrdinal_Get: refused, the body not run.
    // SAFETY: the frame's own table, not borrowed elsewhere.
    unsafe {
        (*frame.frame.api.cast_mut()).struct_size =
            std::mem::offset_of!(XLA_FFI_Api, XLA_FFI_DeviceOrdinal_Get);
    }
    let error = frame.call_on_device(DeviceType::CUDA, |_| unreachable!("the body ran"));
    assert_eq!(
        error,
        Some((
            XLA_FFI_Error_Code::UNIMPLEMENTED,
            "XLA has no XLA_FFI_DeviceOrdinal_Get: a device handler needs a newer jaxlib"
                .to_owned()
        ))
    );
}

#[test]
fn attributes_are_read_by_name_kind_and_data_type() {
    let mut alpha_value = 2.5f32;
    let mut alpha = XLA_FFI_Scalar {
        dtype: XLA_FFI_DataType::F32,
        value: (&raw mut alpha_value).cast(),
    };
    let mut axes_values = [0i64, 2];
    let mut axes = XLA_FFI_Array {
        dtype: XLA_FFI_DataType::S64,
        size: 2,
        data: axes_values.as_mut_ptr().cast(),
    };
    let mut flags_values = [1u8, 2];
    let mut flags = XLA_FFI_Array {
        dtype: XLA_FFI_DataType::PRED,
        size: 2,
        data: flags_values.as_mut_ptr().cast(),
    };
    let mode_text = "nearest";
    let mut mode = XLA_FFI_ByteSpan {
        ptr: mode_text.as_ptr().cast(),
        len: mode_text.len(),
    };
    let bad_text = [0xffu8, 0xfe];
    let mut bad = XLA_FFI_ByteSpan {
        ptr: bad_text.as_ptr().cast(),
        len: bad_text.len(),
    };
    let mut frame = FakeFrame::new(&mut [], &mut []);
    frame.set_attributes(&[
        ("alpha", XLA_FFI_AttrType::SCALAR, (&raw mut alpha).cast()),
        ("axes", XLA_FFI_AttrType::ARRAY, (&raw mut axes).cast()),
        ("bad", XLA_FFI_AttrType::STRING, (&raw mut bad).cast()),
        ("flags", XLA_FFI_AttrType::ARRAY, (&raw mut flags).cast()),
        ("mode", XLA_FFI_AttrType::STRING, (&raw mut mode).cast()),
    ]);
    let error = frame.call(|call| {
        assert_eq!(call.attribute_names(), ["alpha", "axes", "bad", "flags", "mode"]);
        assert_eq!(call.scalar::<f32>("alpha")?, 2.5);
        assert_eq!(call.array::<i64>("axes")?, &[0, 2]);
        assert_eq!(call.string("mode")?, "nearest");
        let refused = |result: Result<(), HandlerError>| result.unwrap_err().message;
        assert_eq!(
            refused(call.scalar::<f64>("alpha").map(drop)),
            "attribute \"alpha\" is float32, not float64"
        );
        assert_eq!(
            refused(call.scalar::<f32>("mode").map(drop)),
            "attribute \"mode\" is string, not scalar"
        );
        assert_eq!(
            refused(call.scalar::<f32>("beta").map(drop)),
            "no attribute \"beta\" (the call has [\"alpha\", \"axes\", \"bad\", \"flags\", \"mode\"])"
        );
        assert_eq!(
            refused(call.array::<bool>("flags").map(drop)),
            "attribute \"flags\": value 1 is not a valid bool"
        );
        assert!(refused(call.string("bad").map(drop)).starts_with("attribute \"bad\" is not UTF-8"));
        Ok(())
    });
    assert_eq!(error, None);
}

#[cfg(feature = "ndarray")]
#[test]
fn results_are_written_through_ndarray_views() {
    use ndarray::{Ix2, IxDyn};

    let (mut a, mut out) = ([1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0], [0.0f32; 6]);
    let mut args = [FakeBuffer::of(XLA_FFI_DataType::F32, &mut a, &[2, 3])];
    let mut results = [FakeBuffer::of(XLA_FFI_DataType::F32, &mut out, &[2, 3])];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let error = frame.call(|call| {
        let a = call.args[0];
        let a = dlbridge::ndarray::NdarrayViewExt::as_array_dim::<f32, Ix2>(&a)?;
        let mut out = call.results[0].as_array_mut::<f32, Ix2>()?;
        assert_eq!(out.shape(), [2, 3]);
        out.zip_mut_with(&a.t().reversed_axes(), |out, &a| *out = 10.0 * a);
        Ok(())
    });
    assert_eq!(error, None);
    assert_eq!(out, [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]);
    // The checks of a typed view: the data type, the number of dimensions.
    let mut results = [FakeBuffer::of(XLA_FFI_DataType::F32, &mut out, &[2, 3])];
    let mut args: [Box<FakeBuffer>; 0] = [];
    let mut frame = FakeFrame::new(&mut args, &mut results);
    let error = frame.call(|call| {
        let refused = call.results[0].as_array_mut::<f64, IxDyn>().unwrap_err();
        assert!(refused.to_string().contains("float64"), "{refused}");
        let refused = call.results[0]
            .as_array_mut::<f32, ndarray::Ix3>()
            .unwrap_err();
        assert!(refused.to_string().contains('3'), "{refused}");
        Ok(())
    });
    assert_eq!(error, None);
}
