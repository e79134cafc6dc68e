//! The scalar SQL UDF `ppdm_rr_disguise` (`polars_ppdm/duckdb/scalar.py`) in one call per
//! DuckDB vector: `udf_rr_binary` reads the pyarrow arguments as DuckDB hands them
//! (one-chunk ChunkedArrays, or Arrays) through the Arrow C data interface
//! (`__arrow_c_stream__`, `__arrow_c_array__`), checks the constant arguments, asks Python
//! once for the query's plan (secret, stream, threshold: cached there) and disguises the
//! vector with the GIL released.  In Python each piece of that glue cost a microsecond or
//! more per 2,048-row vector, all of it together as much as the AES (issue 30).
//!
//! It returns None for what it does not serve (several chunks, another Arrow type, a NULL
//! key, a constant that varies or is NULL): the caller then takes the Python path, which
//! gives the same bits and names the fault.

use std::ffi::{CStr, c_void};
use std::ptr::NonNull;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use super::arrow_c::{ArrowArray, ArrowArrayStream, ArrowSchema};
use super::{Cipher, bit_at, rr_bitmap, shifted, view};

/// A released (empty) struct: what a consumer leaves behind when it moves one out.
fn released<T>() -> T {
    // SAFETY: the three structs are plain pointers, integers and Option<fn>, all valid zeroed.
    unsafe { std::mem::zeroed() }
}

/// Moves the struct out of a capsule of `name`, leaving the capsule's copy released (the
/// specification's "move": the capsule's destructor then frees nothing we use).
fn take<T>(capsule: &Bound<'_, PyAny>, name: &CStr) -> PyResult<T> {
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer: NonNull<c_void> = capsule.pointer_checked(Some(name))?;
    let pointer = pointer.as_ptr().cast::<T>();
    // SAFETY: a capsule of this name holds this struct (the interface's contract).
    unsafe {
        let value = std::ptr::read(pointer);
        std::ptr::write(pointer, released());
        Ok(value)
    }
}

/// One Arrow array and its type, imported; released when dropped.
struct Column {
    schema: ArrowSchema,
    array: ArrowArray,
}

impl Drop for Column {
    fn drop(&mut self) {
        // SAFETY: each release callback is called once, on the struct it belongs to.
        unsafe {
            if let Some(release) = self.array.release {
                release(&mut self.array);
            }
            if let Some(release) = self.schema.release {
                release(&mut self.schema);
            }
        }
    }
}

impl Column {
    /// The array of a pyarrow argument: the one chunk of a ChunkedArray (None for no or
    /// several chunks), or an Array.
    fn of(obj: &Bound<'_, PyAny>) -> PyResult<Option<Self>> {
        let py = obj.py();
        if let Ok(export) = obj.getattr(pyo3::intern!(py, "__arrow_c_stream__")) {
            let mut stream: ArrowArrayStream = take(&export.call0()?, c"arrow_array_stream")?;
            let column = Self::from_stream(&mut stream);
            if let Some(release) = stream.release {
                // SAFETY: the stream was moved out of its capsule: ours to release, once.
                unsafe { release(&mut stream) };
            }
            return Ok(column);
        }
        let pair = obj.call_method0(pyo3::intern!(py, "__arrow_c_array__"))?;
        let pair = pair.cast::<PyTuple>()?;
        let schema = take(&pair.get_item(0)?, c"arrow_schema")?;
        let array = take(&pair.get_item(1)?, c"arrow_array")?;
        Ok(Some(Column { schema, array }))
    }

    fn from_stream(stream: &mut ArrowArrayStream) -> Option<Self> {
        let (get_schema, get_next) = (stream.get_schema?, stream.get_next?);
        let mut column = Column { schema: released(), array: released() };
        let mut next: ArrowArray = released();
        // SAFETY: the stream's own callbacks, on structs we own; a struct is filled (and
        // then has a release callback) only when the call returns 0.
        unsafe {
            if get_schema(stream, &mut column.schema) != 0 || get_next(stream, &mut column.array) != 0 {
                return None;
            }
            if get_next(stream, &mut next) != 0 {
                return None;
            }
            if let Some(release) = next.release {
                release(&mut next); // a second chunk: the Python path combines them
                return None;
            }
        }
        column.array.release?; // no chunk at all
        Some(column)
    }

    fn format(&self) -> &[u8] {
        if self.schema.format.is_null() {
            return b"";
        }
        // SAFETY: a format is a NUL-terminated string owned by the schema.
        unsafe { CStr::from_ptr(self.schema.format) }.to_bytes()
    }

    fn len(&self) -> usize {
        self.array.length as usize
    }

    fn offset(&self) -> usize {
        self.array.offset as usize
    }

    /// Buffer `i`'s address (null for an absent validity bitmap).
    fn buffer(&self, i: usize) -> *const u8 {
        if (self.array.n_buffers as usize) <= i {
            return std::ptr::null();
        }
        // SAFETY: the array has n_buffers buffer pointers.
        unsafe { *self.array.buffers.add(i) }.cast::<u8>()
    }

    /// The first `bits` bits of bitmap buffer `i` (the offset included), or None if absent.
    fn bitmap(&self, i: usize) -> Option<&[u8]> {
        let address = self.buffer(i);
        if address.is_null() {
            return None;
        }
        // SAFETY: a bitmap holds offset + length bits.
        Some(unsafe { std::slice::from_raw_parts(address, (self.offset() + self.len()).div_ceil(8)) })
    }

    /// The null count (counted from the validity bitmap when the producer left it unknown).
    fn nulls(&self) -> usize {
        if self.array.null_count >= 0 {
            return self.array.null_count as usize;
        }
        match self.bitmap(0) {
            Some(valid) => (0..self.len()).filter(|&j| bit_at(valid, self.offset() + j) == 0).count(),
            None => 0,
        }
    }

    /// The bytes of a fixed-width column's values (`width` bytes each, the offset applied).
    fn values(&self, width: usize) -> &[u8] {
        let address = self.buffer(1);
        if address.is_null() || self.len() == 0 {
            return &[];
        }
        // SAFETY: a fixed-width array holds offset + length values of `width` bytes.
        unsafe { std::slice::from_raw_parts(address.add(self.offset() * width), self.len() * width) }
    }
}

/// Whether `data` repeats its first `period` bytes (it equals itself shifted by one
/// period: one memcmp).
fn periodic(data: &[u8], period: usize) -> bool {
    data.len() <= period || data[period..] == data[..data.len() - period]
}

/// A constant argument's value: Ok(None) for a column of NULLs only; Err(()) for what the
/// Python check should see (nulls among values, values that differ, another type).
enum Constant {
    Null,
    Double(f64),
    Text(String),
}

fn constant(column: &Column) -> Result<Constant, ()> {
    let n = column.len();
    if n == 0 {
        return Err(());
    }
    let nulls = column.nulls();
    if nulls == n {
        return Ok(Constant::Null);
    }
    if nulls != 0 {
        return Err(());
    }
    match column.format() {
        b"g" => {
            let data = column.values(8);
            if data.len() != n * 8 || !periodic(data, 8) {
                return Err(());
            }
            Ok(Constant::Double(f64::from_le_bytes(data[..8].try_into().expect("8 bytes"))))
        }
        b"u" => text(column, 4),
        b"U" => text(column, 8),
        _ => Err(()),
    }
}

/// The one string of a string column that repeats it (`width`: 4 for "u", 8 for "U").
fn text(column: &Column, width: usize) -> Result<Constant, ()> {
    let (n, offsets, data) = (column.len(), column.buffer(1), column.buffer(2));
    if offsets.is_null() {
        return Err(());
    }
    // SAFETY: a string array holds offset + length + 1 offsets of `width` bytes.
    let offsets = unsafe { std::slice::from_raw_parts(offsets.add(column.offset() * width), (n + 1) * width) };
    // SAFETY (align_to): any bit pattern is an i32.
    let aligned = if width == 4 { unsafe { offsets.align_to::<i32>() } } else { (&[][..], &[][..], &[][..]) };
    let spaced = if width == 4 && aligned.0.is_empty() {
        evenly_spaced_i32(aligned.1) // DuckDB's offsets: whole words, checked in SIMD lanes
    } else if width == 4 {
        evenly_spaced(offsets.chunks_exact(4).map(|b| i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes")))))
    } else {
        evenly_spaced(offsets.chunks_exact(8).map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes"))))
    };
    let Some((first, size)) = spaced else { return Err(()) };
    let (first, size) = (first as usize, size as usize);
    if size == 0 {
        return Ok(Constant::Text(String::new()));
    }
    if data.is_null() {
        return Err(());
    }
    // SAFETY: the offsets (checked above to be evenly spaced) point into the data buffer.
    let data = unsafe { std::slice::from_raw_parts(data.add(first), size * n) };
    if !periodic(data, size) {
        return Err(());
    }
    String::from_utf8(data[..size].to_vec()).map(Constant::Text).map_err(|_| ())
}

/// The first offset and the common step of string offsets that are evenly spaced (every
/// string of one length), else None.  No early exit: the loop vectorizes.
fn evenly_spaced(mut offsets: impl ExactSizeIterator<Item = i64> + Clone) -> Option<(i64, i64)> {
    let n = offsets.len().checked_sub(1)? as i64;
    let first = offsets.next()?;
    let size = offsets.clone().next()? - first;
    // The last offset bounds the others without overflow: first + i * size for i <= n.
    if first < 0 || size < 0 || size.checked_mul(n).and_then(|span| span.checked_add(first)).is_none() {
        return None;
    }
    let differ = offsets.zip(1i64..).fold(0i64, |acc, (offset, i)| acc | (offset ^ (first + i * size)));
    (differ == 0).then_some((first, size))
}

/// `evenly_spaced` on aligned 32-bit offsets: every step equals the first (wrapping
/// differences, OR-ed without an early exit, so the loop runs in SIMD lanes), and the last
/// offset is the first plus n steps without overflow (so no step wrapped).
fn evenly_spaced_i32(offsets: &[i32]) -> Option<(i64, i64)> {
    let (&first, &last) = (offsets.first()?, offsets.last()?);
    let size = offsets.get(1)?.wrapping_sub(first);
    let differ = offsets.windows(2).fold(0i32, |acc, w| acc | (w[1].wrapping_sub(w[0]) ^ size));
    let (first, size, n) = (i64::from(first), i64::from(size), offsets.len() as i64 - 1);
    (differ == 0 && first >= 0 && size >= 0 && first + size * n == i64::from(last)).then_some((first, size))
}

fn to_python(py: Python<'_>, value: Constant) -> Py<PyAny> {
    match value {
        Constant::Null => py.None(),
        Constant::Double(v) => v.into_pyobject(py).expect("a float").into_any().unbind(),
        Constant::Text(s) => s.into_pyobject(py).expect("a str").into_any().unbind(),
    }
}

/// Randomized response on a BOOLEAN vector: the SQL UDF `_ppdm_rr_binary(x, p, epsilon,
/// secret, key, stream)` in one call, its arguments pyarrow Arrays or one-chunk
/// ChunkedArrays.  The constants' values (a float, a str, or None for a column of NULLs
/// only) go to `plan(p, epsilon, secret, stream)`, which returns `(secret key bytes, base,
/// threshold)` (or None) and raises what it refuses.  Bit i of the output is bit i of `x`,
/// negated where word 0 of `AES((base XOR bit) || key_i)` is at or above `threshold`
/// (the bits of `keep_bits_into`'s decisions applied); NULLs stay NULL, with 0 under them.
///
/// The output's bitmaps go to `out` (a fresh writable buffer of 2 * ceil(n / 8) bytes,
/// e.g. `pyarrow.allocate_buffer`: Arrow's memory, which DuckDB frees without the GIL):
/// the values in its first half, from bit 0, and the validity in its second half when
/// `x` has nulls.  Returns `(with_validity, nulls)`, or None for anything else (a
/// constant that varies or holds a NULL among values, several chunks, an empty vector, a
/// NULL key, other types, `plan` returning None): the Python path then names the fault or
/// gives the same bits.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn udf_rr_binary<'py>(
    py: Python<'py>,
    x: &Bound<'py, PyAny>,
    p: &Bound<'py, PyAny>,
    epsilon: &Bound<'py, PyAny>,
    secret: &Bound<'py, PyAny>,
    key: &Bound<'py, PyAny>,
    stream: &Bound<'py, PyAny>,
    plan: &Bound<'py, PyAny>,
    out: &Bound<'py, PyAny>,
) -> PyResult<Option<(bool, usize)>> {
    let mut values = Vec::with_capacity(4);
    for obj in [p, epsilon, secret, stream] {
        let Some(column) = Column::of(obj)? else { return Ok(None) };
        match constant(&column) {
            Ok(value) => values.push(to_python(py, value)),
            Err(()) => return Ok(None),
        }
    }
    let (Some(x), Some(key)) = (Column::of(x)?, Column::of(key)?) else { return Ok(None) };
    let n = x.len();
    if n == 0 || key.len() != n || x.format() != b"b" || key.format() != b"l" || key.nulls() != 0 {
        return Ok(None);
    }
    let Some(bits) = x.bitmap(1) else { return Ok(None) };
    let planned = plan.call1(PyTuple::new(py, values)?)?;
    if planned.is_none() {
        return Ok(None);
    }
    let (secret, base, threshold): (Vec<u8>, u64, u64) = planned.extract()?;
    let cipher = Cipher::new(&secret)?;
    let raw = key.values(8);
    // DuckDB's key buffers are 8-byte aligned (read in place); a caller's slice may not be.
    let copied: Vec<u64>;
    let keys: &[u64] = match aligned_words(raw) {
        Some(keys) => keys,
        None => {
            copied = raw.chunks_exact(8).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes"))).collect();
            &copied
        }
    };
    let (first, bytes) = (x.offset(), n.div_ceil(8));
    let out = view(out, "out", 1, true)?;
    if out.len < 2 * bytes {
        return Err(PyValueError::new_err(format!("'out' must hold {} bytes. Got {}.", 2 * bytes, out.len)));
    }
    // The values from bit 0 (Arrow's bitmaps are unaligned at an offset), read once.
    let values = shifted(bits, first, n);
    let (keys_at, keys_len) = (keys.as_ptr() as usize, keys.len());
    // SAFETY: `out` is the caller's fresh buffer (pyarrow.allocate_buffer): no input shares it.
    let (dst, valid_dst) = unsafe { out.slice_mut::<u8>() }.split_at_mut(bytes);
    py.detach(|| {
        // SAFETY: the key Column (or `copied`) keeps the keys alive until after this call.
        let keys = unsafe { std::slice::from_raw_parts(keys_at as *const u64, keys_len) };
        rr_bitmap(&cipher, base, threshold, &values, keys, dst);
        if !n.is_multiple_of(8) {
            dst[bytes - 1] &= (1u8 << (n % 8)) - 1; // bits past the last row are 0
        }
    });
    let nulls = x.nulls();
    let with_validity = match x.bitmap(0) {
        Some(valid) if nulls != 0 => {
            valid_dst[..bytes].copy_from_slice(&shifted(valid, first, n));
            // Zeros under a NULL: the slot would otherwise carry the hidden value's coin.
            for (value, &valid) in dst.iter_mut().zip(&valid_dst[..bytes]) {
                *value &= valid;
            }
            true
        }
        _ => false,
    };
    Ok(Some((with_validity, nulls)))
}

/// `data` as u64 words in place, when it is 8-byte aligned (the keys' little-endian bit
/// patterns: Int64 read as the PRF takes it).
fn aligned_words(data: &[u8]) -> Option<&[u64]> {
    if data.is_empty() || !(data.as_ptr() as usize).is_multiple_of(8) || cfg!(target_endian = "big") {
        return None;
    }
    // SAFETY: aligned, a whole number of words, and any bit pattern is a u64.
    Some(unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u64>(), data.len() / 8) })
}
