//! Compiled kernels of polars_ppdm: the keyed AES PRF (`polars_ppdm.kernels.prf`) and the
//! per-row draws built on it, with the same bits as the NumPy / pyca-cryptography path.
//!
//! Every function works on caller-owned NumPy buffers (C-contiguous; the Python wrapper
//! in `polars_ppdm/kernels/_native.py` checks dtypes and makes them so) and releases the
//! GIL for the whole call, so Polars' threads run their batches side by side.
//!
//! The PRF block of a row is the 16 bytes `stream || key`, both little-endian u64; its
//! AES ciphertext read as two little-endian u64 is `(w0, w1)`.

use aes::cipher::{BlockCipherEncrypt, KeyInit};
use aes::{Aes128, Aes256, Block};
use pyo3::buffer::PyUntypedBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

mod arrow_c;
mod dp_sampler;
mod plugin;
mod polars_memory;
mod radix;
mod repeats;
mod spacings;
mod udf;

/// Blocks encrypted per batch (15 KiB on the stack): a multiple of every backend's
/// parallel width (AES-NI 8, VAES-256 30, VAES-512 64 blocks), so no block of a full
/// batch goes through the one-block path.
const BATCH: usize = 960;

enum Cipher {
    A128(Aes128),
    A256(Aes256),
}

impl Cipher {
    fn new(secret: &[u8]) -> PyResult<Self> {
        Self::of(secret).map_err(PyValueError::new_err)
    }

    /// The cipher of a 16- or 32-byte secret (without Python: the plugins call it too).
    fn of(secret: &[u8]) -> Result<Self, String> {
        match secret.len() {
            16 => Ok(Cipher::A128(Aes128::new_from_slice(secret).expect("16 bytes"))),
            32 => Ok(Cipher::A256(Aes256::new_from_slice(secret).expect("32 bytes"))),
            n => Err(format!("The secret must be 16 or 32 bytes (AES-128 or AES-256). Got {n} bytes.")),
        }
    }

    #[inline]
    fn encrypt(&self, blocks: &mut [Block]) {
        match self {
            Cipher::A128(c) => c.encrypt_blocks(blocks),
            Cipher::A256(c) => c.encrypt_blocks(blocks),
        }
    }
}

#[inline]
fn set_block(block: &mut Block, stream: u64, key: u64) {
    block[..8].copy_from_slice(&stream.to_le_bytes());
    block[8..].copy_from_slice(&key.to_le_bytes());
}

#[inline]
fn word(block: &Block, half: usize) -> u64 {
    u64::from_le_bytes(block[half * 8..half * 8 + 8].try_into().expect("8 bytes"))
}

/// A checked view of a buffer: its address and item count (address as usize so that the
/// closure run without the GIL is Send; the PyUntypedBuffer keeps the memory alive).
struct View {
    _buffer: PyUntypedBuffer,
    address: usize,
    len: usize,
    bytes: usize,
}

fn view(obj: &Bound<'_, PyAny>, name: &str, item_size: usize, writable: bool) -> PyResult<View> {
    let buffer = PyUntypedBuffer::get(obj)?;
    if buffer.item_size() != item_size || !buffer.is_c_contiguous() {
        return Err(PyTypeError::new_err(format!(
            "'{name}' must be a C-contiguous buffer of {item_size}-byte items. Got {}-byte items{}.",
            buffer.item_size(),
            if buffer.is_c_contiguous() { "" } else { ", not contiguous" }
        )));
    }
    if writable && buffer.readonly() {
        return Err(PyTypeError::new_err(format!("'{name}' must be writable.")));
    }
    let address = buffer.buf_ptr() as usize;
    // A slice of u64 or f64 must be aligned (a NumPy view at an odd byte offset is not).
    if !address.is_multiple_of(item_size) {
        return Err(PyValueError::new_err(format!(
            "'{name}' must be aligned to {item_size} bytes (copy it with numpy.ascontiguousarray)."
        )));
    }
    let len = buffer.item_count();
    Ok(View { _buffer: buffer, address, len, bytes: len * item_size })
}

/// The output must not overlap an input: the kernels hold it as the only (mutable)
/// reference while they read the inputs, with the GIL released.
fn apart(out: &View, inputs: &[&View]) -> PyResult<()> {
    for input in inputs {
        let overlap = out.bytes > 0
            && input.bytes > 0
            && out.address < input.address + input.bytes
            && input.address < out.address + out.bytes;
        if overlap {
            return Err(PyValueError::new_err("'out' must not share memory with an input."));
        }
    }
    Ok(())
}

impl View {
    /// # Safety
    /// The buffer holds `len` items of `T` (checked by `view`'s item size) and nobody
    /// else writes it during the call.
    unsafe fn slice<'a, T>(&self) -> &'a [T] {
        if self.len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(self.address as *const T, self.len) }
    }
    /// # Safety
    /// As `slice`, and the caller has the only reference to the memory during the call.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slice_mut<'a, T>(&self) -> &'a mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        unsafe { std::slice::from_raw_parts_mut(self.address as *mut T, self.len) }
    }
}

fn check_len(name: &str, got: usize, want: usize) -> PyResult<()> {
    if got != want {
        return Err(PyValueError::new_err(format!("'{name}' must hold {want} items. Got {got}.")));
    }
    Ok(())
}

/// AES-ECB of the blocks of `plain` into `out`: both (n, 2) uint64, little-endian.
#[pyfunction]
fn encrypt_into(py: Python<'_>, secret: &[u8], plain: &Bound<'_, PyAny>, out: &Bound<'_, PyAny>) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    let plain = view(plain, "plain", 8, false)?;
    let out = view(out, "out", 8, true)?;
    apart(&out, &[&plain])?;
    check_len("out", out.len, plain.len)?;
    if plain.len % 2 != 0 {
        return Err(PyValueError::new_err("'plain' must hold whole 16-byte blocks."));
    }
    py.detach(|| {
        let (src, dst) = unsafe { (plain.slice::<u64>(), out.slice_mut::<u64>()) };
        let mut batch = [Block::default(); BATCH];
        for (src, dst) in src.chunks(2 * BATCH).zip(dst.chunks_mut(2 * BATCH)) {
            let m = src.len() / 2;
            for (i, block) in batch[..m].iter_mut().enumerate() {
                set_block(block, src[2 * i], src[2 * i + 1]);
            }
            cipher.encrypt(&mut batch[..m]);
            for (i, block) in batch[..m].iter().enumerate() {
                dst[2 * i] = word(block, 0);
                dst[2 * i + 1] = word(block, 1);
            }
        }
    });
    Ok(())
}

/// The PRF words of every key at one stream: `out[i] = AES(stream || keys[i])`.
#[pyfunction]
fn prf_words_into(
    py: Python<'_>,
    secret: &[u8],
    stream: u64,
    keys: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    let keys = view(keys, "keys", 8, false)?;
    let out = view(out, "out", 8, true)?;
    apart(&out, &[&keys])?;
    check_len("out", out.len, 2 * keys.len)?;
    py.detach(|| {
        let (keys, dst) = unsafe { (keys.slice::<u64>(), out.slice_mut::<u64>()) };
        let mut batch = [Block::default(); BATCH];
        for (keys, dst) in keys.chunks(BATCH).zip(dst.chunks_mut(2 * BATCH)) {
            let m = keys.len();
            for (block, &key) in batch[..m].iter_mut().zip(keys) {
                set_block(block, stream, key);
            }
            cipher.encrypt(&mut batch[..m]);
            for (i, block) in batch[..m].iter().enumerate() {
                dst[2 * i] = word(block, 0);
                dst[2 * i + 1] = word(block, 1);
            }
        }
    });
    Ok(())
}

/// Bit `at` of a bitmap, least significant bit first (Arrow's order).
fn bit_at(bits: &[u8], at: usize) -> u8 {
    (bits[at >> 3] >> (at & 7)) & 1
}

/// The bitmap holds a bit for every key from `bit_offset` on.
fn check_bitmap(bits: &View, bit_offset: usize, keys: usize) -> PyResult<()> {
    if bit_offset.checked_add(keys).is_none_or(|end| bits.len * 8 < end) {
        return Err(PyValueError::new_err(format!(
            "'bits' needs one bit per key: {keys} keys from bit {bit_offset} of a {}-byte bitmap.",
            bits.len
        )));
    }
    Ok(())
}

/// The checked views of a bitmap kernel's arguments: the bitmap (a bit per key from
/// `bit_offset`), the keys, and an output of `out_len(keys)` bytes sharing no memory with them.
fn bitmap_views(
    bits: &Bound<'_, PyAny>,
    bit_offset: usize,
    keys: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
    out_len: fn(usize) -> usize,
) -> PyResult<(View, View, View)> {
    let bits = view(bits, "bits", 1, false)?;
    let keys = view(keys, "keys", 8, false)?;
    let out = view(out, "out", 1, true)?;
    apart(&out, &[&bits, &keys])?;
    check_len("out", out.len, out_len(keys.len))?;
    check_bitmap(&bits, bit_offset, keys.len)?;
    Ok((bits, keys, out))
}

/// Binary randomized response on whole bytes of a bitmap: bit i of `out` is bit i of
/// `bits`, negated where word 0 of `AES((base XOR bit_i) || keys[i])` is at or above
/// `threshold` (a lie), for the `keys.len()` rows from bit 0 (bits past them: as in
/// `bits`).
fn rr_bitmap(cipher: &Cipher, base: u64, threshold: u64, bits: &[u8], keys: &[u64], out: &mut [u8]) {
    let mut batch = [[0u64; 2]; BATCH];
    let mut flags = [0u8; BATCH];
    // BATCH is a multiple of 8: each batch starts on a whole byte of `bits` and `out`.
    for (c, keys) in keys.chunks(BATCH).enumerate() {
        let m = keys.len();
        let bytes = c * BATCH / 8..(c * BATCH + m).div_ceil(8);
        let (bits, out) = (&bits[bytes.clone()], &mut out[bytes]);
        value_blocks(cipher, &mut batch[..m], bits, base, keys);
        // A byte per row first (a compare the compiler runs in vector lanes), then eight
        // of them to the bits of one byte by one multiplication: row k's 0 or 1 at bit
        // 8k lands at bit 56 + k, and no two partial products meet (so nothing carries).
        for (flag, pair) in flags[..m].iter_mut().zip(&batch[..m]) {
            *flag = u8::from(u64::from_le(pair[0]) >= threshold);
        }
        flags[m..m.next_multiple_of(8)].fill(0); // a short batch's last byte: no lie past its rows
        for ((o, &byte), eight) in out.iter_mut().zip(bits).zip(flags[..m.next_multiple_of(8)].chunks_exact(8)) {
            let lies = u64::from_le_bytes(eight.try_into().expect("8 bytes")).wrapping_mul(0x0102_0408_1020_4080) >> 56;
            *o = byte ^ lies as u8;
        }
    }
}

/// The value-keyed blocks `(base XOR bit) || key` of a batch whose rows start at bit 0 of
/// `bits`, built a byte of rows at a time as u64 pairs (through the block's byte array and
/// a bit lookup per row, this cost twice the AES), then encrypted in place.
fn value_blocks(cipher: &Cipher, batch: &mut [[u64; 2]], bits: &[u8], base: u64, keys: &[u64]) {
    for ((pairs, keys), &byte) in batch.chunks_mut(8).zip(keys.chunks(8)).zip(bits) {
        for (k, (pair, &key)) in pairs.iter_mut().zip(keys).enumerate() {
            *pair = [(base ^ u64::from((byte >> k) & 1)).to_le(), key.to_le()];
        }
    }
    cipher.encrypt(as_blocks(batch));
}

/// `n` bits of a bitmap from bit `first` on, moved to bit 0 (bits past `n` are 0).
fn shifted(bits: &[u8], first: usize, n: usize) -> Vec<u8> {
    let (bytes, skip, shift) = (n.div_ceil(8), first / 8, first % 8);
    let mut out: Vec<u8> = if shift == 0 {
        bits[skip..skip + bytes].to_vec()
    } else {
        (0..bytes)
            .map(|j| {
                let low = bits[skip + j] >> shift;
                let high = bits.get(skip + j + 1).map_or(0, |&b| b << (8 - shift));
                low | high
            })
            .collect()
    };
    if !n.is_multiple_of(8) {
        out[bytes - 1] &= (1u8 << (n % 8)) - 1;
    }
    out
}

/// Pairs of little-endian u64 as AES blocks, in place.
fn as_blocks(pairs: &mut [[u64; 2]]) -> &mut [Block] {
    // SAFETY: a Block is 16 bytes with alignment 1, as is the memory of each pair.
    unsafe { std::slice::from_raw_parts_mut(pairs.as_mut_ptr().cast::<Block>(), pairs.len()) }
}

/// The keep decisions of randomized response on a Boolean bitmap:
/// `out[i] = word 0 of AES((base XOR bit_i) || keys[i]) < threshold`, with bit_i the bit
/// `bit_offset + i` of `bits` (least significant bit first) and `out` one byte per row.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn keep_bits_into(
    py: Python<'_>,
    secret: &[u8],
    base: u64,
    bits: &Bound<'_, PyAny>,
    bit_offset: usize,
    keys: &Bound<'_, PyAny>,
    threshold: u64,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    let (bits, keys, out) = bitmap_views(bits, bit_offset, keys, out, |n| n)?;
    py.detach(|| {
        let (bits, keys, dst) = unsafe { (bits.slice::<u8>(), keys.slice::<u64>(), out.slice_mut::<u8>()) };
        let bits = shifted(bits, bit_offset, keys.len()); // from bit 0: whole bytes per batch
        let mut batch = [[0u64; 2]; BATCH];
        for (c, (keys, dst)) in keys.chunks(BATCH).zip(dst.chunks_mut(BATCH)).enumerate() {
            let m = keys.len();
            value_blocks(&cipher, &mut batch[..m], &bits[c * BATCH / 8..], base, keys);
            for (d, pair) in dst.iter_mut().zip(&batch[..m]) {
                *d = u8::from(u64::from_le(pair[0]) < threshold);
            }
        }
    });
    Ok(())
}

/// The keep decisions at value-keyed blocks of byte codes (a Boolean column unpacked,
/// or codes below 256): `out[i] = word 0 of AES((base XOR codes[i]) || keys[i]) < threshold`.
#[pyfunction]
fn keep_codes_into(
    py: Python<'_>,
    secret: &[u8],
    base: u64,
    codes: &Bound<'_, PyAny>,
    keys: &Bound<'_, PyAny>,
    threshold: u64,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    let codes = view(codes, "codes", 1, false)?;
    let keys = view(keys, "keys", 8, false)?;
    let out = view(out, "out", 1, true)?;
    apart(&out, &[&codes, &keys])?;
    check_len("codes", codes.len, keys.len)?;
    check_len("out", out.len, keys.len)?;
    py.detach(|| {
        let (codes, keys, dst) = unsafe { (codes.slice::<u8>(), keys.slice::<u64>(), out.slice_mut::<u8>()) };
        let mut batch = [Block::default(); BATCH];
        for ((codes, keys), dst) in codes.chunks(BATCH).zip(keys.chunks(BATCH)).zip(dst.chunks_mut(BATCH)) {
            let m = keys.len();
            for ((block, &key), &code) in batch.iter_mut().zip(keys).zip(codes) {
                set_block(block, base ^ u64::from(code), key);
            }
            cipher.encrypt(&mut batch[..m]);
            for (d, block) in dst.iter_mut().zip(&batch[..m]) {
                *d = u8::from(word(block, 0) < threshold);
            }
        }
    });
    Ok(())
}

/// The chained PRF of `polars_ppdm.kernels.prf.chained_prf_words`:
/// `w = word 0 of AES(steps[0] || key)`, then for each part j
/// `block = AES(steps[j + 1] || (w XOR parts[j][i]))`, `w = word 0 of block`; `out[i]` is
/// the last block (two uint64).
#[pyfunction]
fn chained_words_into(
    py: Python<'_>,
    secret: &[u8],
    steps: Vec<u64>,
    keys: &Bound<'_, PyAny>,
    parts: Vec<Bound<'_, PyAny>>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    if parts.is_empty() || steps.len() != parts.len() + 1 {
        return Err(PyValueError::new_err("'steps' must hold one stream word more than 'parts', at least two."));
    }
    let keys = view(keys, "keys", 8, false)?;
    let out = view(out, "out", 8, true)?;
    check_len("out", out.len, 2 * keys.len)?;
    let parts = parts
        .iter()
        .map(|p| {
            let v = view(p, "parts", 8, false)?;
            check_len("parts", v.len, keys.len)?;
            Ok(v)
        })
        .collect::<PyResult<Vec<View>>>()?;
    apart(&out, &std::iter::once(&keys).chain(parts.iter()).collect::<Vec<_>>())?;
    py.detach(|| {
        let (keys, dst) = unsafe { (keys.slice::<u64>(), out.slice_mut::<u64>()) };
        let parts: Vec<&[u64]> = parts.iter().map(|p| unsafe { p.slice::<u64>() }).collect();
        let mut batch = [Block::default(); BATCH];
        for (c, (keys, dst)) in keys.chunks(BATCH).zip(dst.chunks_mut(2 * BATCH)).enumerate() {
            let m = keys.len();
            let first = c * BATCH;
            for (block, &key) in batch.iter_mut().zip(keys) {
                set_block(block, steps[0], key);
            }
            cipher.encrypt(&mut batch[..m]);
            for (j, part) in parts.iter().enumerate() {
                let part = &part[first..first + m];
                for (block, &b) in batch[..m].iter_mut().zip(part) {
                    let w = word(block, 0);
                    set_block(block, steps[j + 1], w ^ b);
                }
                cipher.encrypt(&mut batch[..m]);
            }
            for (i, block) in batch[..m].iter().enumerate() {
                dst[2 * i] = word(block, 0);
                dst[2 * i + 1] = word(block, 1);
            }
        }
    });
    Ok(())
}

/// The tables and the exact steps of `polars_ppdm.kernels.portable_math`, bit for bit:
/// only IEEE-754 `+ - * /`, `floor`, `sqrt` and bit operations, each correctly rounded
/// (Rust never fuses a multiply and an add unless asked).
struct PortableMath<'a> {
    minus_log_centres: &'a [f64],
    sines: &'a [f64],
    cosines: &'a [f64],
}

const LOW_BITS: u32 = 52 - 10;
const KEEP: u64 = !((1u64 << LOW_BITS) - 1);
const HALF_CELL: u64 = 1u64 << (LOW_BITS - 1);
const FIRST_CELL: u64 = ((1023 - 54) as u64) << 10;

impl PortableMath<'_> {
    /// `-ln v` for v in [2**-54, 1] (`portable_math.minus_log`).
    #[inline(always)]
    fn minus_log(&self, v: f64) -> f64 {
        let bits = v.to_bits();
        let centre = f64::from_bits((bits & KEEP) | HALF_CELL);
        let t = (v - centre) / centre;
        // v in [2**-53, 1]: the cell is in the table (clamped so no bounds check is needed).
        let index = (((bits >> LOW_BITS) - FIRST_CELL) as usize).min(55 * 1024 - 1);
        let mut out = t * -0.25;
        out += 1.0 / 3.0;
        out *= t;
        out -= 0.5;
        out *= t;
        out *= t;
        out += t;
        let out = self.minus_log_centres[..55 * 1024][index] - out;
        // np.maximum(out, 0.0): out unless it is below 0 (-0.0 stays -0.0).
        if out >= 0.0 { out } else { 0.0 }
    }

    /// `cos(2 pi u)` for `u = x 2**-53`, x a 53-bit integer (`portable_math.cos_two_pi` of
    /// `prf.unit_doubles`). The steps there that are exact (the quadrant `floor(4u)`, the
    /// cell `floor(1024 r)` of `r = 4u - quadrant`, and `r` less the cell's centre) are
    /// read from x's bits here: the same values, without a rounding or a conversion that
    /// vector units lack (AVX2 has no double-to-64-bit conversion).
    #[inline(always)]
    fn cos_two_pi_bits(&self, x: u64) -> f64 {
        let quadrant = (x >> 51) & 3;
        let index = ((x >> 41) & 1023) as usize;
        // r - (cell + 0.5) / 1024 = ((x mod 2**41) - 2**40) 2**-51, each step exact; the
        // 41-bit integer becomes a double as in unit_double.
        let low = below_2_52_as_double(x & ((1u64 << 41) - 1));
        let mut a = (low - 1_099_511_627_776.0) * (1.0 / 2_251_799_813_685_248.0);
        a *= std::f64::consts::PI / 2.0;
        let (s, c) = (self.sines[..1024][index], self.cosines[..1024][index]);
        let a2 = a * a;
        let cos_a_minus_1 = a2 * (a2 * (1.0 / 24.0) - 0.5);
        let sin_a = a + a * a2 * (a2 * (1.0 / 120.0) - 1.0 / 6.0);
        let out =
            if quadrant & 1 == 1 { s + (s * cos_a_minus_1 + c * sin_a) } else { c + (c * cos_a_minus_1 - s * sin_a) };
        out * if quadrant == 1 || quadrant == 2 { -1.0 } else { 1.0 }
    }
}

const TWO_52: f64 = 4_503_599_627_370_496.0;

/// An integer below 2**52 as a double, exactly: its bits as the mantissa of 2**52 + x,
/// less 2**52. No 64-bit integer conversion, which AVX2 lacks (a loop with one runs a row
/// at a time).
#[inline(always)]
fn below_2_52_as_double(x: u64) -> f64 {
    f64::from_bits(TWO_52.to_bits() | x) - TWO_52
}

/// `(w >> 11) * 2**-53` (`prf.unit_doubles`).  The 53-bit integer becomes a double as its
/// low 52 bits (`below_2_52_as_double`) plus its top bit as 2**52.  Each step is exact, so
/// the bits are those of the conversion.
#[inline(always)]
fn unit_double(w: u64) -> f64 {
    let x = w >> 11;
    let low = below_2_52_as_double(x & ((1u64 << 52) - 1));
    let top = if x >> 52 != 0 { TWO_52 } else { 0.0 };
    (low + top) * (1.0 / 9007199254740992.0)
}

/// The additive noise of `polars_ppdm.kernels.noise`, whole batch: each row's block is
/// `AES(steps[0] || key)` without values, else the chain of `chained_words_into` over the
/// float64 bits of `values[i] + 0.0`; then uniform `(2 u0 - 1) * scale` or Gaussian
/// `scale * sqrt(2 (-ln(1 - u0))) * cos(2 pi u1)`, written to `out` (float64).
#[pyfunction]
#[pyo3(signature = (secret, steps, keys, values, gaussian, scale, minus_log_centres, sines, cosines, out))]
#[allow(clippy::too_many_arguments)]
fn noise_into(
    py: Python<'_>,
    secret: &[u8],
    steps: Vec<u64>,
    keys: &Bound<'_, PyAny>,
    values: Option<&Bound<'_, PyAny>>,
    gaussian: bool,
    scale: f64,
    minus_log_centres: &Bound<'_, PyAny>,
    sines: &Bound<'_, PyAny>,
    cosines: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    let keys = view(keys, "keys", 8, false)?;
    let out = view(out, "out", 8, true)?;
    check_len("out", out.len, keys.len)?;
    let values = match values {
        Some(v) => {
            let v = view(v, "values", 8, false)?;
            check_len("values", v.len, keys.len)?;
            Some(v)
        }
        None => None,
    };
    if steps.len() != 1 + usize::from(values.is_some()) {
        return Err(PyValueError::new_err("'steps' must hold one stream word, two with values."));
    }
    let centres = view(minus_log_centres, "minus_log_centres", 8, false)?;
    let sines = view(sines, "sines", 8, false)?;
    let cosines = view(cosines, "cosines", 8, false)?;
    apart(&out, &[&keys, &centres, &sines, &cosines])?;
    if let Some(v) = &values {
        apart(&out, &[v])?;
    }
    if centres.len != 55 * 1024 || sines.len != 1024 || cosines.len != 1024 {
        return Err(PyValueError::new_err("the portable_math tables have the wrong sizes."));
    }
    py.detach(|| {
        let math = unsafe {
            PortableMath {
                minus_log_centres: centres.slice::<f64>(),
                sines: sines.slice::<f64>(),
                cosines: cosines.slice::<f64>(),
            }
        };
        let (keys, dst) = unsafe { (keys.slice::<u64>(), out.slice_mut::<f64>()) };
        let values = values.as_ref().map(|v| unsafe { v.slice::<f64>() });
        fill_noise(&cipher, &steps, keys, values, gaussian, scale, &math, dst);
    });
    Ok(())
}

/// The noise of `noise_into` into `dst` (one per key): the chained blocks, then the
/// uniform or Gaussian steps. The Polars plugin calls it too.
#[allow(clippy::too_many_arguments)]
fn fill_noise(
    cipher: &Cipher,
    steps: &[u64],
    keys: &[u64],
    values: Option<&[f64]>,
    gaussian: bool,
    scale: f64,
    math: &PortableMath<'_>,
    dst: &mut [f64],
) {
    let mut batch = [Block::default(); BATCH];
    let (mut u0s, mut x1s) = ([0.0f64; BATCH], [0u64; BATCH]);
    for (c, (keys, dst)) in keys.chunks(BATCH).zip(dst.chunks_mut(BATCH)).enumerate() {
        let m = keys.len();
        for (block, &key) in batch.iter_mut().zip(keys) {
            set_block(block, steps[0], key);
        }
        cipher.encrypt(&mut batch[..m]);
        if let Some(values) = values {
            let values = &values[c * BATCH..c * BATCH + m];
            for (block, &v) in batch[..m].iter_mut().zip(values) {
                let w = word(block, 0);
                set_block(block, steps[1], w ^ (v + 0.0).to_bits());
            }
            cipher.encrypt(&mut batch[..m]);
        }
        if gaussian {
            // Two passes: the words to doubles, then the transform over plain arrays, which
            // the compiler can run several rows at a time (the same IEEE steps per row).
            let (u0s, x1s) = (&mut u0s[..m], &mut x1s[..m]);
            for ((u0, x1), block) in u0s.iter_mut().zip(x1s.iter_mut()).zip(&batch[..m]) {
                *u0 = unit_double(word(block, 0));
                *x1 = word(block, 1) >> 11;
            }
            gaussian_rows(math, scale, u0s, x1s, dst);
        } else {
            for (d, block) in dst.iter_mut().zip(&batch[..m]) {
                *d = (2.0 * unit_double(word(block, 0)) - 1.0) * scale;
            }
        }
    }
}

/// `scale * sqrt(2 (-ln(1 - u0))) * cos(2 pi u1)` for each row (`u1 = x1 2**-53`): with
/// AVX2 where the CPU has it and the build does not already assume it (four rows per
/// instruction; the table lookups one at a time, or as gathers where the build has
/// AVX-512), else with the build's own instructions.
/// The same IEEE steps either way, so the same bits: AVX2 brings no fused multiply-add
/// (that is FMA), and Rust never fuses a multiply and an add unasked.
fn gaussian_rows(math: &PortableMath<'_>, scale: f64, u0s: &[f64], x1s: &[u64], dst: &mut [f64]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { gaussian_rows_avx2(math, scale, u0s, x1s, dst) };
    }
    gaussian_rows_any_cpu(math, scale, u0s, x1s, dst);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn gaussian_rows_avx2(math: &PortableMath<'_>, scale: f64, u0s: &[f64], x1s: &[u64], dst: &mut [f64]) {
    gaussian_rows_any_cpu(math, scale, u0s, x1s, dst);
}

#[inline(always)]
fn gaussian_rows_any_cpu(math: &PortableMath<'_>, scale: f64, u0s: &[f64], x1s: &[u64], dst: &mut [f64]) {
    for ((d, &u0), &x1) in dst.iter_mut().zip(u0s).zip(x1s) {
        let radius = (2.0 * math.minus_log(1.0 - u0)).sqrt();
        *d = scale * radius * math.cos_two_pi_bits(x1);
    }
}

/// The exact DP noise of `polars_ppdm.kernels.dp_noise` into `out` (int64): `law` is
/// "laplace", "geometric" or "gaussian"; `keys[i]` is drawn under `secrets[i / per_secret]`
/// (`per_secret` 0: all under `secrets[0]`), its j-th word from the stream of
/// `prefix + "/" + j`. The scale is t / 2^shift (the Gaussian: sigma = m / 2^shift, its
/// proposal's scale t). Refusals of the range are RuntimeErrors, as on the Python path.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn discrete_noise_into(
    py: Python<'_>,
    law: &str,
    secrets: Vec<Vec<u8>>,
    prefix: &str,
    keys: &Bound<'_, PyAny>,
    per_secret: usize,
    t: u64,
    shift: u64,
    m: u64,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let law = match law {
        "laplace" => dp_sampler::Law::Laplace,
        "geometric" => dp_sampler::Law::Geometric,
        "gaussian" => dp_sampler::Law::Gaussian,
        other => {
            return Err(PyValueError::new_err(format!(
                "'law' must be 'laplace', 'geometric' or 'gaussian'. Got {other:?}."
            )));
        }
    };
    let ciphers = secrets.iter().map(|s| Cipher::new(s)).collect::<PyResult<Vec<_>>>()?;
    let keys = view(keys, "keys", 8, false)?;
    let out = view(out, "out", 8, true)?;
    apart(&out, &[&keys])?;
    check_len("out", out.len, keys.len)?;
    let owners = if per_secret == 0 { 1 } else { keys.len.div_ceil(per_secret) };
    // The Python wrapper passes t < 2^58 and, for the Gaussian, m >= 1 and shift < 64; a
    // direct call with others is refused rather than divided by zero or grown without bound.
    let gaussian_ok = law != dp_sampler::Law::Gaussian || (m >= 1 && shift < 64);
    if !(1..1 << 58).contains(&t) || !gaussian_ok || ciphers.len() < owners.max(1) {
        return Err(PyValueError::new_err(
            "'t' must be in [1, 2^58), the Gaussian's 'm' >= 1 and 'shift' < 64, and every key must have its secret.",
        ));
    }
    let mut streams = dp_sampler::Streams::new(prefix);
    py.detach(|| {
        let (keys, dst) = unsafe { (keys.slice::<u64>(), out.slice_mut::<i64>()) };
        dp_sampler::draw(law, &ciphers, &mut streams, keys, per_secret, t, shift, m, dst)
    })
    .map_err(pyo3::exceptions::PyRuntimeError::new_err)
}

/// Registers a secret for the Polars plugins under `handle` (its fingerprint, computed by
/// `polars_ppdm/perturb/_plugin.py`): query plans then carry the handle, not the secret.
#[pyfunction]
fn register_secret(handle: u64, secret: &[u8]) -> PyResult<()> {
    plugin::register_secret(handle, secret).map_err(PyValueError::new_err)
}

/// Hands Polars' allocator capsule (`polars._plr._allocator`) to the plugins, once per
/// process: their outputs are then allocated as Polars' own are. False where it is not
/// Polars' allocator capsule (the system's allocator serves then).
#[pyfunction]
fn register_polars_allocator(capsule: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a live object, and the GIL is held.
    unsafe { polars_memory::register(capsule.as_ptr()) }
}

/// How many output buffers Polars' allocator has made for the plugins in this process.
#[pyfunction]
fn buffers_from_polars() -> u64 {
    polars_memory::buffers_from_polars()
}

/// Hands the `portable_math` tables to the Polars plugins (once per process; the same
/// tables `noise_into` is given per call).
#[pyfunction]
fn register_noise_tables(
    minus_log_centres: &Bound<'_, PyAny>,
    sines: &Bound<'_, PyAny>,
    cosines: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let read = |obj, name| -> PyResult<Vec<f64>> {
        let v = view(obj, name, 8, false)?;
        Ok(unsafe { v.slice::<f64>() }.to_vec())
    };
    let tables = (read(minus_log_centres, "minus_log_centres")?, read(sines, "sines")?, read(cosines, "cosines")?);
    if tables.0.len() != 55 * 1024 || tables.1.len() != 1024 || tables.2.len() != 1024 {
        return Err(PyValueError::new_err("the portable_math tables have the wrong sizes."));
    }
    plugin::register_noise_tables(tables);
    Ok(())
}

/// The Polars expression plugins this library exports (`_polars_plugin_<name>`).
#[pyfunction]
fn plugins() -> Vec<&'static str> {
    vec!["rr_keep_bool", "add_noise_f64"]
}

/// The CPU features the AES backend uses here (for benchmarks' reports).
#[pyfunction]
fn backend() -> &'static str {
    #[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
    {
        if std::arch::is_x86_feature_detected!("aes") { "aes-ni" } else { "soft" }
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "x86")))]
    {
        "portable"
    }
}

#[pymodule]
fn polars_ppdm_native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(encrypt_into, m)?)?;
    m.add_function(wrap_pyfunction!(prf_words_into, m)?)?;
    m.add_function(wrap_pyfunction!(keep_bits_into, m)?)?;
    m.add_function(wrap_pyfunction!(keep_codes_into, m)?)?;
    m.add_function(wrap_pyfunction!(chained_words_into, m)?)?;
    m.add_function(wrap_pyfunction!(noise_into, m)?)?;
    m.add_function(wrap_pyfunction!(discrete_noise_into, m)?)?;
    m.add_function(wrap_pyfunction!(register_secret, m)?)?;
    m.add_function(wrap_pyfunction!(register_noise_tables, m)?)?;
    m.add_function(wrap_pyfunction!(register_polars_allocator, m)?)?;
    m.add_function(wrap_pyfunction!(buffers_from_polars, m)?)?;
    m.add_function(wrap_pyfunction!(plugins, m)?)?;
    m.add_function(wrap_pyfunction!(backend, m)?)?;
    m.add_function(wrap_pyfunction!(udf::udf_rr_binary, m)?)?;
    m.add_function(wrap_pyfunction!(spacings::spacing_sums_into, m)?)?;
    m.add_function(wrap_pyfunction!(spacings::block_sums_into, m)?)?;
    m.add_function(wrap_pyfunction!(radix::radix_sort_words, m)?)?;
    m.add_function(wrap_pyfunction!(repeats::screen_repeats_into, m)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `portable_math.cos_two_pi` step by step in doubles (what `cos_two_pi_bits` reads
    /// from the bits instead).
    fn cos_two_pi_in_doubles(math: &PortableMath<'_>, u: f64) -> f64 {
        let mut r = u * 4.0;
        let quadrant = r.floor();
        r -= quadrant;
        let cell = (r * 1024.0).floor();
        let a = (r - (cell + 0.5) * (1.0 / 1024.0)) * (std::f64::consts::PI / 2.0);
        let (s, c) = (math.sines[cell as usize], math.cosines[cell as usize]);
        let a2 = a * a;
        let cos_a_minus_1 = a2 * (a2 * (1.0 / 24.0) - 0.5);
        let sin_a = a + a * a2 * (a2 * (1.0 / 120.0) - 1.0 / 6.0);
        let q = quadrant as usize;
        let out = if q & 1 == 1 { s + (s * cos_a_minus_1 + c * sin_a) } else { c + (c * cos_a_minus_1 - s * sin_a) };
        out * [1.0, -1.0, -1.0, 1.0][q]
    }

    /// Every cell's edges in every quadrant, the ends of the range, and a spread between.
    fn edge_words() -> Vec<u64> {
        let mut words = vec![0, 1, (1u64 << 53) - 1, (1u64 << 53) - 2];
        for cell in 0..4 * 1024u64 {
            let start = cell << 41;
            words.extend([start, start + 1, start + (1 << 40) - 1, start + (1 << 40), start + (1 << 41) - 1]);
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            words.push(x >> 11);
        }
        words
    }

    fn tables() -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        // Distinct entries, so a wrong cell would show; any values test the same steps.
        let centres = (0..55 * 1024).map(|i| 40.0 - f64::from(i) / 1400.0).collect();
        let sines = (0..1024).map(|i| (f64::from(i) + 0.5) / 1024.0 * 0.75).collect();
        let cosines = (0..1024).map(|i| 1.0 - (f64::from(i) + 0.5) / 4096.0).collect();
        (centres, sines, cosines)
    }

    #[test]
    fn the_cosine_read_from_the_bits_is_the_cosine_of_the_doubles() {
        let (centres, sines, cosines) = tables();
        let math = PortableMath { minus_log_centres: &centres, sines: &sines, cosines: &cosines };
        for x in edge_words() {
            let u = unit_double(x << 11);
            let (ours, theirs) = (math.cos_two_pi_bits(x), cos_two_pi_in_doubles(&math, u));
            assert_eq!(ours.to_bits(), theirs.to_bits(), "x = {x:#x}");
        }
    }

    #[test]
    fn the_gaussian_rows_are_the_same_on_every_instruction_set() {
        // gaussian_rows takes AVX2 where the CPU has it; each row alone is the scalar code.
        let (centres, sines, cosines) = tables();
        let math = PortableMath { minus_log_centres: &centres, sines: &sines, cosines: &cosines };
        let words = edge_words();
        let u0s: Vec<f64> = words.iter().rev().map(|&x| unit_double(x << 11)).collect();
        let mut rows = vec![0.0; words.len()];
        gaussian_rows(&math, 2.5, &u0s, &words, &mut rows);
        for (i, (&u0, &x1)) in u0s.iter().zip(&words).enumerate() {
            let one =
                2.5 * (2.0 * math.minus_log(1.0 - u0)).sqrt() * cos_two_pi_in_doubles(&math, unit_double(x1 << 11));
            assert_eq!(rows[i].to_bits(), one.to_bits(), "row {i}");
        }
    }
}
