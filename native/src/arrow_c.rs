//! The structs of the Arrow C data and stream interfaces
//! (<https://arrow.apache.org/docs/format/CDataInterface.html>), shared by the Polars
//! plugins (`plugin.rs`) and the DuckDB UDF (`udf.rs`), which read and write Arrow memory
//! without a Rust Arrow library (set-up time counts; the structs are the whole contract).

use std::ffi::{CStr, c_char, c_void};

#[repr(C)]
pub(crate) struct ArrowSchema {
    pub(crate) format: *const c_char,
    pub(crate) name: *const c_char,
    pub(crate) metadata: *const c_char,
    pub(crate) flags: i64,
    pub(crate) n_children: i64,
    pub(crate) children: *mut *mut ArrowSchema,
    pub(crate) dictionary: *mut ArrowSchema,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowSchema)>,
    pub(crate) private_data: *mut c_void,
}

#[repr(C)]
pub(crate) struct ArrowArray {
    pub(crate) length: i64,
    pub(crate) null_count: i64,
    pub(crate) offset: i64,
    pub(crate) n_buffers: i64,
    pub(crate) n_children: i64,
    pub(crate) buffers: *mut *const c_void,
    pub(crate) children: *mut *mut ArrowArray,
    pub(crate) dictionary: *mut ArrowArray,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowArray)>,
    pub(crate) private_data: *mut c_void,
}

#[repr(C)]
pub(crate) struct ArrowArrayStream {
    pub(crate) get_schema: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowSchema) -> i32>,
    pub(crate) get_next: Option<unsafe extern "C" fn(*mut ArrowArrayStream, *mut ArrowArray) -> i32>,
    pub(crate) get_last_error: Option<unsafe extern "C" fn(*mut ArrowArrayStream) -> *const c_char>,
    pub(crate) release: Option<unsafe extern "C" fn(*mut ArrowArrayStream)>,
    pub(crate) private_data: *mut c_void,
}

impl ArrowSchema {
    /// The format string (`"b"`, `"l"`, `"g"`, ...); `"?"` if it is not UTF-8.
    pub(crate) fn format(&self) -> &str {
        // SAFETY: a valid schema's format is a NUL-terminated string (the interface's contract).
        unsafe { CStr::from_ptr(self.format) }.to_str().unwrap_or("?")
    }
}
