//! Polars expression plugins: randomized response on a Boolean column run inside Polars'
//! own threads, without Python and without the GIL (issue 30: a `map_batches` callback
//! holds the GIL for its Python glue, so a second thread gained 1.37x at most).
//!
//! Polars loads this same shared library by path (`polars.plugins.register_plugin_function`)
//! and calls the `_polars_plugin_*` symbols with the shared-library ABI of `polars-ffi`
//! ("version 0": Series as Arrow C data interface arrays). The structs below are that ABI,
//! written out here rather than taken from the `polars` crates: those would compile for
//! minutes (set-up time counts) and pin one Polars version, while the ABI has stayed the
//! same since Polars 0.20. `polars_ppdm/perturb/_plugin.py` registers the expressions, and
//! `tests/test_plugins.py` holds them to the same bits as the NumPy path.
//!
//! Same bits as `keep_bits_into`: row i keeps its value where word 0 of
//! `AES((base XOR bit_i) || key_i)` is below `threshold`, and `value == kept` is the output.

use std::cell::RefCell;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, OnceLock};

use super::arrow_c::{ArrowArray, ArrowSchema};
use super::polars_memory::Floats;
use super::{Cipher, PortableMath, bit_at, fill_noise, rr_bitmap};

/// `polars_ffi::version_0::SeriesExport`: a Series as a field and its chunks.
#[repr(C)]
pub struct SeriesExport {
    field: *mut ArrowSchema,
    arrays: *mut *mut ArrowArray,
    len: usize,
    release: Option<unsafe extern "C" fn(*mut SeriesExport)>,
    private_data: *mut c_void,
}

/// `polars_ffi::version_0::CallerContext` (unused: the kernel is one thread per call).
#[repr(C)]
pub struct CallerContext {
    bitflags: u64,
}

// ---- Errors: Polars reads the last one after a call that returned no Series.

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(message: &str) {
    let message = CString::new(message.replace('\0', " ")).expect("no NUL left");
    LAST_ERROR.with(|last| *last.borrow_mut() = message);
}

/// # Safety
/// Called by Polars on the thread whose call failed; the pointer lives until that thread's
/// next failing call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _polars_plugin_get_last_error_message() -> *const c_char {
    LAST_ERROR.with(|last| last.borrow().as_ptr())
}

/// The plugin ABI version, `major << 16 | minor`: 0.1 (Series exported with the newest
/// Arrow layouts, as `polars-ffi` 0.1).
#[unsafe(no_mangle)]
pub extern "C" fn _polars_plugin_get_version() -> u32 {
    1
}

// ---- Reading inputs

/// One input Series, owned: its chunks are released, then the export itself, when dropped.
struct Input {
    export: SeriesExport,
}

impl Input {
    fn field(&self) -> &ArrowSchema {
        unsafe { &*self.export.field }
    }

    /// The chunks holding rows (an empty chunk may have no buffers at all).
    fn chunks(&self) -> impl Iterator<Item = &ArrowArray> {
        (0..self.export.len).map(move |i| unsafe { &**self.export.arrays.add(i) }).filter(|a| a.length > 0)
    }

    fn len(&self) -> usize {
        self.chunks().map(|a| a.length as usize).sum()
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        for i in 0..self.export.len {
            let array = unsafe { *self.export.arrays.add(i) };
            if let Some(release) = unsafe { (*array).release } {
                unsafe { release(array) };
            }
        }
        if let Some(release) = self.export.release {
            unsafe { release(&mut self.export) };
        }
    }
}

fn format_of(schema: &ArrowSchema) -> &str {
    schema.format()
}

fn name_of(schema: &ArrowSchema) -> String {
    if schema.name.is_null() {
        return String::new();
    }
    unsafe { CStr::from_ptr(schema.name) }.to_string_lossy().into_owned()
}

/// A bitmap buffer of a chunk (validity or Boolean values) and the bit of its first row.
fn bitmap(array: &ArrowArray, buffer: usize) -> Option<(&[u8], usize)> {
    let address = unsafe { *array.buffers.add(buffer) } as *const u8;
    if address.is_null() {
        return None;
    }
    let bits = (array.offset + array.length) as usize;
    Some((unsafe { std::slice::from_raw_parts(address, bits.div_ceil(8)) }, array.offset as usize))
}

/// A key column's 64-bit words and the validity of its keys (None: no key is null).
type RowKeys<'a> = (std::borrow::Cow<'a, [u64]>, Option<Vec<u8>>);

/// The 64-bit row keys of an integer key column, as `polars_ppdm._encoding.row_keys`:
/// the two's-complement pattern of the value as Int64, or the UInt64 itself. A single
/// 64-bit chunk is borrowed as it is; anything else is widened into a new vector.
/// Alongside, the validity of each row's key (None: no key is null).
fn row_keys(keys: &Input) -> Result<RowKeys<'_>, String> {
    let format = format_of(keys.field());
    let width = match format {
        "c" | "C" => 1,
        "s" | "S" => 2,
        "i" | "I" => 4,
        "l" | "L" => 8,
        other => return Err(format!("internal: the rr plugin got a key column of Arrow format {other:?}")),
    };
    let signed = format.chars().all(|c| c.is_ascii_lowercase());
    let n = keys.len();
    let any_null = keys.chunks().any(|a| a.null_count != 0);
    let validity = any_null.then(|| {
        let mut valid = vec![0u8; n.div_ceil(8)];
        let mut row = 0;
        for array in keys.chunks() {
            let bits = if array.null_count != 0 { bitmap(array, 0) } else { None };
            for j in 0..array.length as usize {
                if bits.is_none_or(|(b, f)| bit_at(b, f + j) == 1) {
                    valid[row >> 3] |= 1 << (row & 7);
                }
                row += 1;
            }
        }
        valid
    });
    let chunks: Vec<&ArrowArray> = keys.chunks().collect();
    if width == 8 && chunks.len() == 1 {
        let array = chunks[0];
        let data = unsafe { *array.buffers.add(1) } as *const u64;
        if !data.is_null() && data.is_aligned() {
            let words = unsafe { std::slice::from_raw_parts(data.add(array.offset as usize), n) };
            return Ok((std::borrow::Cow::Borrowed(words), validity));
        }
    }
    let mut words = Vec::with_capacity(n);
    for array in chunks {
        let data = unsafe { *array.buffers.add(1) } as *const u8;
        for j in 0..array.length as usize {
            let at = (array.offset as usize + j) * width;
            let raw = unsafe { std::slice::from_raw_parts(data.add(at), width) };
            let mut bytes = [0u8; 8];
            bytes[..width].copy_from_slice(raw);
            if signed && raw[width - 1] & 0x80 != 0 {
                bytes[width..].fill(0xff);
            }
            words.push(u64::from_le_bytes(bytes));
        }
    }
    Ok((std::borrow::Cow::Owned(words), validity))
}

/// Sets bits `from..from + length` of `out`.
fn set_ones(out: &mut [u8], from: usize, length: usize) {
    for row in from..from + length {
        out[row >> 3] |= 1 << (row & 7);
    }
}

/// Copies `length` bits of a chunk's bitmap (validity or values), from its bit `first`,
/// to bits `to..to + length` of `out` (which are 0).
fn copy_bits(out: &mut [u8], to: usize, bits: &[u8], first: usize, length: usize) {
    if to.is_multiple_of(8) && first.is_multiple_of(8) {
        let bytes = length.div_ceil(8);
        out[to / 8..to / 8 + bytes].copy_from_slice(&bits[first / 8..first / 8 + bytes]);
        if !length.is_multiple_of(8) {
            out[(to + length) / 8] &= (1u8 << (length % 8)) - 1;
        }
        return;
    }
    for j in 0..length {
        let row = to + j;
        out[row >> 3] |= bit_at(bits, first + j) << (row & 7);
    }
}

/// The validity of a column from bit 0 (None: no nulls), and its null count.
fn validity(column: &Input) -> (Option<Vec<u8>>, usize) {
    let n = column.len();
    let nulls: usize = column.chunks().map(|a| a.null_count as usize).sum();
    if nulls == 0 {
        return (None, 0);
    }
    let mut valid = vec![0u8; n.div_ceil(8)];
    let mut row = 0usize;
    for array in column.chunks() {
        let length = array.length as usize;
        match bitmap(array, 0) {
            Some((v, f)) if array.null_count != 0 => copy_bits(&mut valid, row, v, f, length),
            _ => set_ones(&mut valid, row, length),
        }
        row += length;
    }
    (Some(valid), nulls)
}

/// A row with a value needs a key: it has no identity otherwise (the error of
/// `polars_ppdm._encoding.row_keys`).
fn check_keys(
    func: &str,
    keys: &Input,
    key_valid: Option<&[u8]>,
    validity: Option<&[u8]>,
    n: usize,
) -> Result<(), String> {
    let Some(key_valid) = key_valid else { return Ok(()) };
    // The message names the column, never how many rows (nor which): a count over the
    // private rows is no part of an error (docs/privacy-model.md).
    let missing = (0..n).any(|row| bit_at(key_valid, row) == 0 && validity.is_none_or(|v| bit_at(v, row) == 1));
    if missing {
        return Err(format!(
            "The key column '{}' of {func} has null values in rows that need a random draw; every such row \
             needs a key: fill the key or drop those rows first.",
            name_of(keys.field()),
        ));
    }
    Ok(())
}

// ---- Writing the output

/// The data buffer of an output chunk: bits (Boolean) or float64 values.
enum Data {
    Bits(Vec<u8>),
    Floats(Floats),
}

impl Data {
    fn pointer(&self) -> *const c_void {
        match self {
            Data::Bits(v) => v.as_ptr() as *const c_void,
            Data::Floats(v) => v.as_ptr(),
        }
    }
}

/// The buffers of an output chunk, kept alive until Polars releases the chunk.
struct OwnedBuffers {
    _validity: Option<Vec<u8>>,
    _data: Data,
    pointers: Box<[*const c_void; 2]>,
}

unsafe extern "C" fn release_array(array: *mut ArrowArray) {
    unsafe {
        drop(Box::from_raw((*array).private_data as *mut OwnedBuffers));
        (*array).release = None;
    }
}

/// A chunk of a Boolean or Float64 column: a validity bitmap (None: no nulls) and the data.
fn array(data: Data, validity: Option<Vec<u8>>, length: usize, null_count: usize) -> ArrowArray {
    let pointers =
        Box::new([validity.as_ref().map_or(std::ptr::null(), |v| v.as_ptr() as *const c_void), data.pointer()]);
    let mut owned = Box::new(OwnedBuffers { _validity: validity, _data: data, pointers });
    let buffers = owned.pointers.as_mut_ptr();
    ArrowArray {
        length: length as i64,
        null_count: null_count as i64,
        offset: 0,
        n_buffers: 2,
        n_children: 0,
        buffers,
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_array),
        private_data: Box::into_raw(owned) as *mut c_void,
    }
}

/// The strings of an output schema, kept alive until Polars releases it.
struct SchemaStrings {
    _format: CString,
    _name: CString,
}

unsafe extern "C" fn release_schema(schema: *mut ArrowSchema) {
    unsafe {
        drop(Box::from_raw((*schema).private_data as *mut SchemaStrings));
        (*schema).release = None;
    }
}

fn schema(format: &str, name: &str) -> ArrowSchema {
    let format = CString::new(format).expect("a format has no NUL");
    let name = CString::new(name.replace('\0', " ")).expect("no NUL left");
    let (format_ptr, name_ptr) = (format.as_ptr(), name.as_ptr());
    ArrowSchema {
        format: format_ptr,
        name: name_ptr,
        metadata: std::ptr::null(),
        flags: 2, // ARROW_FLAG_NULLABLE
        n_children: 0,
        children: std::ptr::null_mut(),
        dictionary: std::ptr::null_mut(),
        release: Some(release_schema),
        private_data: Box::into_raw(Box::new(SchemaStrings { _format: format, _name: name })) as *mut c_void,
    }
}

/// What an output SeriesExport owns until Polars has taken its chunk and releases it.
struct OutputParts {
    field: Box<ArrowSchema>,
    arrays: Box<[*mut ArrowArray; 1]>,
}

unsafe extern "C" fn release_series(export: *mut SeriesExport) {
    unsafe {
        let parts = Box::from_raw((*export).private_data as *mut OutputParts);
        // Polars moved the chunk out (it releases the chunk itself): free only its box.
        drop(Box::from_raw(parts.arrays[0]));
        let mut field = parts.field;
        if let Some(release) = field.release {
            release(&mut *field);
        }
        (*export).release = None;
    }
}

fn series(field: ArrowSchema, array: ArrowArray) -> SeriesExport {
    let mut parts =
        Box::new(OutputParts { field: Box::new(field), arrays: Box::new([Box::into_raw(Box::new(array))]) });
    let field = &mut *parts.field as *mut ArrowSchema;
    let arrays = parts.arrays.as_mut_ptr();
    SeriesExport {
        field,
        arrays,
        len: 1,
        release: Some(release_series),
        private_data: Box::into_raw(parts) as *mut c_void,
    }
}

// ---- Secrets: the plan holds a handle, never the secret

/// The ciphers of the secrets registered in this process, by handle. Polars keeps a
/// plugin's kwargs in the query plan (`LazyFrame.serialize` writes them out), so the
/// kwargs carry only a handle: a SHA-256 fingerprint of the secret computed by the caller,
/// from which the secret cannot be recovered.
///
/// At most `MAX_SECRETS` are kept, the oldest dropped first, so a process that makes
/// secrets in a loop does not keep every one alive; a plan whose secret was dropped
/// fails with a message saying so (it never runs with another key).
struct Registry {
    ciphers: BTreeMap<u64, Arc<Cipher>>,
    order: VecDeque<u64>,
}

const MAX_SECRETS: usize = 4096;

static SECRETS: Mutex<Registry> = Mutex::new(Registry { ciphers: BTreeMap::new(), order: VecDeque::new() });

pub(crate) fn register_secret(handle: u64, secret: &[u8]) -> Result<(), String> {
    let cipher = Arc::new(Cipher::of(secret)?);
    let mut registry = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    if registry.ciphers.insert(handle, cipher).is_none() {
        registry.order.push_back(handle);
        while registry.order.len() > MAX_SECRETS {
            let oldest = registry.order.pop_front().expect("not empty");
            registry.ciphers.remove(&oldest);
        }
    }
    Ok(())
}

fn registered(handle: u64) -> Result<Arc<Cipher>, String> {
    let registry = SECRETS.lock().unwrap_or_else(|e| e.into_inner());
    registry.ciphers.get(&handle).cloned().ok_or_else(|| {
        format!(
            "The secret of this compiled rr_disguise / add_noise step is not known in this process: a query \
             plan holds a handle to its secret, not the secret, so a plan built in another process (or \
             deserialized) cannot run here, nor one whose secret was dropped after {MAX_SECRETS} newer ones. \
             Build the query again in this process."
        )
    })
}

// ---- Arguments

/// The arguments of `rr_keep_bool`, from Polars' pickled kwargs `{"args": bytes}`: the
/// secret's handle, the value stream's base word, the keep threshold and whether every
/// row keeps its value (p = 1), as 25 little-endian bytes laid out by
/// `polars_ppdm/perturb/_plugin.py`.
struct RrArgs {
    cipher: Arc<Cipher>,
    base: u64,
    threshold: u64,
    keep_all: bool,
}

fn argument_bytes(kwargs: &[u8]) -> Result<Vec<u8>, String> {
    use serde_pickle::{DeOptions, HashableValue, Value};
    let value = serde_pickle::value_from_slice(kwargs, DeOptions::new()).map_err(|e| format!("internal: {e}"))?;
    if let Value::Dict(dict) = value
        && let Some(Value::Bytes(bytes)) = dict.get(&HashableValue::String("args".into()))
    {
        return Ok(bytes.clone());
    }
    Err("internal: the plugin's kwargs must be {'args': bytes}".into())
}

impl RrArgs {
    fn parse(kwargs: &[u8]) -> Result<Self, String> {
        let bytes = argument_bytes(kwargs)?;
        if bytes.len() != 25 {
            return Err(format!("internal: the rr plugin's arguments are 25 bytes, not {}", bytes.len()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(RrArgs { cipher: registered(u64_at(0))?, base: u64_at(8), threshold: u64_at(16), keep_all: bytes[24] != 0 })
    }
}

// ---- rr_keep_bool: randomized response on a Boolean column, keyed by an integer column

/// The output field of a plugin over (values, key): `format`, named as the values, where
/// the values' Arrow format is `values_format`.
///
/// # Safety
/// Polars' plugin ABI: `fields` holds `len` input schemas, `return_value` is writable.
unsafe fn output_field(fields: *mut ArrowSchema, len: usize, return_value: *mut ArrowSchema, format: &str, what: &str) {
    let result = catch_unwind(AssertUnwindSafe(|| {
        let fields = unsafe { std::slice::from_raw_parts(fields, len) };
        match fields.first() {
            Some(values) if len == 2 && format_of(values) == format => {
                unsafe { return_value.write(schema(format, &name_of(values))) };
            }
            _ => set_error(&format!("internal: the plugin takes {what} and an integer key column")),
        }
    }));
    if result.is_err() {
        set_error("internal: a plugin panicked while typing its output");
    }
}

/// # Safety
/// As `output_field`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _polars_plugin_field_rr_keep_bool(
    fields: *mut ArrowSchema,
    len: usize,
    return_value: *mut ArrowSchema,
    _kwargs_ptr: *const u8,
    _kwargs_len: usize,
) {
    unsafe { output_field(fields, len, return_value, "b", "a Boolean column") }
}

/// # Safety
/// As `output_field`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _polars_plugin_field_add_noise_f64(
    fields: *mut ArrowSchema,
    len: usize,
    return_value: *mut ArrowSchema,
    _kwargs_ptr: *const u8,
    _kwargs_len: usize,
) {
    unsafe { output_field(fields, len, return_value, "g", "a Float64 column") }
}

/// Runs a plugin over its owned inputs and hands Polars its Series or its error.
///
/// # Safety
/// Polars' plugin ABI: `inputs` holds `len` exports this call owns; `kwargs_ptr` holds
/// `kwargs_len` bytes; `return_value` is writable.
unsafe fn run(
    inputs: *mut SeriesExport,
    len: usize,
    kwargs_ptr: *const u8,
    kwargs_len: usize,
    return_value: *mut SeriesExport,
    body: fn(&[Input], &[u8]) -> Result<SeriesExport, String>,
) {
    // Take ownership of every input first, so each is released however the call ends.
    let inputs: Vec<Input> = (0..len).map(|i| Input { export: unsafe { std::ptr::read(inputs.add(i)) } }).collect();
    let kwargs = if kwargs_len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(kwargs_ptr, kwargs_len) } };
    match catch_unwind(AssertUnwindSafe(|| body(&inputs, kwargs))) {
        Ok(Ok(out)) => unsafe { return_value.write(out) },
        Ok(Err(message)) => set_error(&message),
        Err(_) => set_error("internal: a plugin panicked"),
    }
}

/// # Safety
/// As `run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _polars_plugin_rr_keep_bool(
    inputs: *mut SeriesExport,
    len: usize,
    kwargs_ptr: *const u8,
    kwargs_len: usize,
    return_value: *mut SeriesExport,
    _context: *mut CallerContext,
) {
    unsafe { run(inputs, len, kwargs_ptr, kwargs_len, return_value, rr_keep_bool) }
}

/// # Safety
/// As `run`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn _polars_plugin_add_noise_f64(
    inputs: *mut SeriesExport,
    len: usize,
    kwargs_ptr: *const u8,
    kwargs_len: usize,
    return_value: *mut SeriesExport,
    _context: *mut CallerContext,
) {
    unsafe { run(inputs, len, kwargs_ptr, kwargs_len, return_value, add_noise_f64) }
}

/// A plugin's two inputs (values of Arrow format `format`, keys) and their row count.
fn values_and_keys<'a>(
    inputs: &'a [Input],
    plugin: &str,
    format: &str,
) -> Result<(&'a Input, &'a Input, usize), String> {
    let [values, keys] = inputs else {
        return Err(format!("internal: {plugin} takes a column of Arrow format {format:?} and an integer key column"));
    };
    if format_of(values.field()) != format {
        return Err(format!("internal: {plugin} takes a column of Arrow format {format:?}"));
    }
    let n = values.len();
    if keys.len() != n {
        return Err(format!("internal: {plugin} got columns of different lengths (values and keys)"));
    }
    Ok((values, keys, n))
}

fn rr_keep_bool(inputs: &[Input], kwargs: &[u8]) -> Result<SeriesExport, String> {
    let (values, keys, n) = values_and_keys(inputs, "rr_keep_bool", "b")?;
    let args = RrArgs::parse(kwargs)?;
    let (key_words, key_valid) = row_keys(keys)?;

    // The values' bitmap from bit 0 (one copy: chunks may start anywhere).
    let mut bits = vec![0u8; n.div_ceil(8)];
    let mut row = 0usize;
    for array in values.chunks() {
        let length = array.length as usize;
        let (b, first) = bitmap(array, 1).ok_or("internal: a Boolean chunk without values")?;
        copy_bits(&mut bits, row, b, first, length);
        row += length;
    }
    let (validity, nulls) = validity(values);
    check_keys("rr_disguise", keys, key_valid.as_deref(), validity.as_deref(), n)?;

    let mut out = vec![0u8; n.div_ceil(8)];
    if args.keep_all {
        out.copy_from_slice(&bits);
    } else {
        // Rows under a null value (or a null key there) draw too, with whatever bit and
        // key they hold: the validity hides their output, and branch-free batches are faster.
        rr_bitmap(&args.cipher, args.base, args.threshold, &bits, &key_words, &mut out);
        // Bits past the last row stay 0.
        if n % 8 != 0 {
            out[n >> 3] &= (1u8 << (n % 8)) - 1;
        }
    }
    // Zeros under the nulls: an Arrow IPC file writes the data buffer whole, and the bit
    // there would be a keyed coin of the unit (or the input's own hidden bit).
    if let Some(valid) = &validity {
        out.iter_mut().zip(valid).for_each(|(o, v)| *o &= v);
    }
    Ok(series(schema("b", &name_of(values.field())), array(Data::Bits(out), validity, n, nulls)))
}

// ---- add_noise_f64: x + keyed noise on a Float64 column, keyed by an integer column

static NOISE_TABLES: OnceLock<(Vec<f64>, Vec<f64>, Vec<f64>)> = OnceLock::new();

/// The `portable_math` tables (minus-log centres, sines, cosines), handed over once.
pub(crate) fn register_noise_tables(tables: (Vec<f64>, Vec<f64>, Vec<f64>)) {
    let _ = NOISE_TABLES.set(tables);
}

/// The arguments of `add_noise_f64` (41 little-endian bytes): the secret's handle, the
/// two stream words of the value-keyed chain, Gaussian or uniform, the scale, and the
/// grid of the released values (`polars_ppdm.kernels.noise.noise_grid`).
struct NoiseArgs {
    cipher: Arc<Cipher>,
    steps: [u64; 2],
    gaussian: bool,
    scale: f64,
    grid: f64,
}

impl NoiseArgs {
    fn parse(kwargs: &[u8]) -> Result<Self, String> {
        let bytes = argument_bytes(kwargs)?;
        if bytes.len() != 41 {
            return Err(format!("internal: the noise plugin's arguments are 41 bytes, not {}", bytes.len()));
        }
        let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
        Ok(NoiseArgs {
            cipher: registered(u64_at(0))?,
            steps: [u64_at(8), u64_at(16)],
            gaussian: bytes[24] != 0,
            scale: f64::from_bits(u64_at(25)),
            grid: f64::from_bits(u64_at(33)),
        })
    }
}

/// The float64 values of a column's chunks, each from its offset.
fn float_chunks(values: &Input) -> Result<Vec<&[f64]>, String> {
    values
        .chunks()
        .map(|array| {
            let data = unsafe { *array.buffers.add(1) } as *const f64;
            if data.is_null() || !data.is_aligned() {
                return Err("internal: a Float64 chunk without an aligned data buffer".into());
            }
            Ok(unsafe { std::slice::from_raw_parts(data.add(array.offset as usize), array.length as usize) })
        })
        .collect()
}

/// The values that key a column's noise, from row 0: a single chunk without nulls is
/// borrowed (None here); else a copy with 0.0 under each null, the value that keys its
/// noise (as the map_batches path fills it: nobody sees that noise, but the buffer may
/// hold a NaN there). The copy comes from Polars' allocator like the output, so that an
/// eager call on a column with nulls faults no fresh pages in either.
fn keyed_values(chunks: &[&[f64]], validity: Option<&[u8]>, n: usize) -> Option<Floats> {
    if chunks.len() == 1 && validity.is_none() {
        return None;
    }
    let mut copy = Floats::zeroed(n);
    let dst = copy.as_mut_slice();
    let mut row = 0;
    for chunk in chunks {
        dst[row..row + chunk.len()].copy_from_slice(chunk);
        row += chunk.len();
    }
    if let Some(valid) = validity {
        for (row, x) in dst.iter_mut().enumerate() {
            if bit_at(valid, row) == 0 {
                *x = 0.0;
            }
        }
    }
    Some(copy)
}

/// Each `noise[i] + values[i]` rounded to a multiple of `grid` (ties to even, -0.0 as
/// 0.0), in `noise`; kept as it is past 2^52 grid steps (or for a quotient that is not
/// finite), where its own spacing is coarser than the grid.  Branch-free, so the compiler
/// runs several rows at a time.  The grid is a power of two: where its reciprocal is one
/// too, `sum * (1 / grid)` is the quotient `sum / grid` bit for bit (both are the correctly
/// rounded `sum * 2^-k`), without a division per row.
fn onto_grid(noise: &mut [f64], values: &[f64], grid: f64) {
    const LIMIT: f64 = 4_503_599_627_370_496.0;
    let inverse = 1.0 / grid;
    let power_of_two = grid.is_normal() && grid.to_bits() & ((1u64 << 52) - 1) == 0;
    if power_of_two && inverse.is_normal() && inverse * grid == 1.0 {
        for (o, &x) in noise.iter_mut().zip(values) {
            let sum = *o + x;
            let steps = sum * inverse;
            let rounded = steps.round_ties_even() * grid + 0.0;
            *o = if steps.abs() < LIMIT { rounded } else { sum };
        }
    } else {
        for (o, &x) in noise.iter_mut().zip(values) {
            let sum = *o + x;
            let steps = sum / grid;
            *o = if steps.abs() < LIMIT { steps.round_ties_even() * grid + 0.0 } else { sum };
        }
    }
}

/// Whether a row with a value (valid) holds NaN or an infinity.  First one branch-free
/// pass over the whole buffer (the common case: every value finite); rows are looked up in
/// the validity only when some value is not finite.
fn non_finite_valid(data: &[f64], validity: Option<&[u8]>) -> bool {
    const EXPONENT: u64 = 0x7ff0_0000_0000_0000;
    let any = data.chunks(1024).any(|chunk| chunk.iter().fold(false, |a, x| a | (x.to_bits() & EXPONENT == EXPONENT)));
    any && (0..data.len()).any(|row| !data[row].is_finite() && validity.is_none_or(|v| bit_at(v, row) == 1))
}

fn add_noise_f64(inputs: &[Input], kwargs: &[u8]) -> Result<SeriesExport, String> {
    let (values, keys, n) = values_and_keys(inputs, "add_noise_f64", "g")?;
    let args = NoiseArgs::parse(kwargs)?;
    let (centres, sines, cosines) = NOISE_TABLES.get().ok_or("internal: the noise tables are not registered")?;
    let (key_words, key_valid) = row_keys(keys)?;
    let chunks = float_chunks(values)?;
    let (validity, nulls) = validity(values);
    let copy = keyed_values(&chunks, validity.as_deref().filter(|_| nulls > 0), n);
    let data: &[f64] = copy.as_ref().map_or(chunks.first().copied().unwrap_or(&[]), Floats::as_slice);
    if non_finite_valid(data, validity.as_deref()) {
        return Err(format!(
            "add_noise: the column '{}' holds NaN or infinite values; replace them or make them null.",
            name_of(values.field())
        ));
    }
    check_keys("add_noise", keys, key_valid.as_deref(), validity.as_deref(), n)?;
    let is_valid = |row: usize| validity.as_ref().is_none_or(|v| bit_at(v, row) == 1);
    let math = PortableMath { minus_log_centres: centres, sines, cosines };
    let mut buffer = Floats::zeroed(n);
    let out = buffer.as_mut_slice();
    fill_noise(&args.cipher, &args.steps, &key_words, Some(data), args.gaussian, args.scale, &math, out);
    // x + r on the grid (the steps of kernels/noise.py's noisy_values). Zero under a
    // null: an Arrow IPC file writes the data buffer whole, and the noise of the filler
    // 0.0 there is the unit's noise for the value 0.0.
    onto_grid(out, data, args.grid);
    if nulls > 0 {
        for (row, o) in out.iter_mut().enumerate() {
            if !is_valid(row) {
                *o = 0.0;
            }
        }
    }
    Ok(series(schema("g", &name_of(values.field())), array(Data::Floats(buffer), validity, n, nulls)))
}
