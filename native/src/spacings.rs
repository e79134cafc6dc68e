//! The blocked running sums of keyed exponentials of `polars_ppdm.kernels.spacings` (the
//! sorted uniforms of the ECDF's rank link), bit for bit: draw i is
//! `x_i = -ln(1 - u_i)` (`portable_math.minus_log`) with `u_i` the unit double of word 0
//! of `AES(stream || i)`; inside a block of 2,048 draws, `q` is the sequential sum of a
//! group of 16 up to i, `P` the sequential sum of the totals of the block's groups before
//! it, `c_i = q_i + P` (no addition in the first group); `S_i = c_i + O_b` with
//! `O_{b+1} = O_b + T_b`, `T_b` the block's last `c`.
//!
//! In NumPy these sums and the logarithm took as long as the sort of the column they
//! sample, and `np.take` (the logarithm's table) holds the GIL: the ECDF's columns, one
//! per thread, waited for each other there (issue 30).

use aes::Block;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{Cipher, PortableMath, check_len, set_block, unit_double, view, word};

/// Draws per summation block (`spacings.BLOCK`) and per group inside one (`spacings.GROUP`).
const BLOCK: usize = 2048;
const GROUP: usize = 16;

/// The in-block sums `c` of block `block` (draws of keys `block * BLOCK + j`) into `c`.
/// Every draw of the block is made: `c_i` depends on the draws up to i only.
fn block_sums(cipher: &Cipher, stream: u64, block: u64, math: &PortableMath<'_>, blocks: &mut [Block], c: &mut [f64]) {
    let first = block << BLOCK.trailing_zeros();
    for (j, b) in blocks.iter_mut().enumerate() {
        set_block(b, stream, first + j as u64);
    }
    cipher.encrypt(blocks);
    for (x, b) in c.iter_mut().zip(blocks.iter()) {
        *x = math.minus_log(1.0 - unit_double(word(b, 0))); // 1 - u is exact
    }
    let mut before = 0.0; // P: the totals of the groups before this one
    for (g, group) in c.chunks_exact_mut(GROUP).enumerate() {
        let mut q = group[0];
        for x in group[1..].iter_mut() {
            q += *x;
            *x = q;
        }
        if g > 0 {
            for x in group.iter_mut() {
                *x += before;
            }
            before += q;
        } else {
            before = q;
        }
    }
}

fn math_of(centres: &[f64]) -> PortableMath<'_> {
    PortableMath { minus_log_centres: centres, sines: &[], cosines: &[] }
}

fn centres_view(minus_log_centres: &Bound<'_, PyAny>) -> PyResult<super::View> {
    let centres = view(minus_log_centres, "minus_log_centres", 8, false)?;
    if centres.len != 55 * 1024 {
        return Err(PyValueError::new_err("the portable_math tables have the wrong sizes."));
    }
    Ok(centres)
}

/// `S_0 .. S_{n-1}` into `out` (n float64) and the total `S_n` returned
/// (`spacings.running_sums`).
#[pyfunction]
pub fn spacing_sums_into(
    py: Python<'_>,
    secret: &[u8],
    stream: u64,
    minus_log_centres: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<f64> {
    let cipher = Cipher::new(secret)?;
    let centres = centres_view(minus_log_centres)?;
    let out = view(out, "out", 8, true)?;
    super::apart(&out, &[&centres])?;
    Ok(py.detach(|| {
        let math = math_of(unsafe { centres.slice::<f64>() });
        let dst = unsafe { out.slice_mut::<f64>() };
        let n = dst.len();
        let mut blocks = vec![Block::default(); BLOCK];
        let mut c = vec![0.0f64; BLOCK];
        let mut offset = 0.0; // O_b
        let mut total = 0.0;
        for b in 0..=n / BLOCK {
            block_sums(&cipher, stream, b as u64, &math, &mut blocks, &mut c);
            let start = b * BLOCK;
            let kept = BLOCK.min(n - start);
            for (d, &x) in dst[start..start + kept].iter_mut().zip(&c[..kept]) {
                *d = x + offset;
            }
            if kept < BLOCK {
                total = c[kept] + offset; // draw n is in this block
            }
            offset += c[BLOCK - 1];
        }
        total
    }))
}

/// The in-block sums `c` of whole blocks (`spacings._draws_of_blocks`): row k of `out`
/// (`len(blocks) * 2048` float64) for block `blocks[k]`.
#[pyfunction]
pub fn block_sums_into(
    py: Python<'_>,
    secret: &[u8],
    stream: u64,
    blocks: &Bound<'_, PyAny>,
    minus_log_centres: &Bound<'_, PyAny>,
    out: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let cipher = Cipher::new(secret)?;
    let centres = centres_view(minus_log_centres)?;
    let numbers = view(blocks, "blocks", 8, false)?;
    let out = view(out, "out", 8, true)?;
    super::apart(&out, &[&centres, &numbers])?;
    check_len("out", out.len, numbers.len * BLOCK)?;
    py.detach(|| {
        let math = math_of(unsafe { centres.slice::<f64>() });
        let (numbers, dst) = unsafe { (numbers.slice::<u64>(), out.slice_mut::<f64>()) };
        let mut batch = vec![Block::default(); BLOCK];
        for (&number, c) in numbers.iter().zip(dst.chunks_exact_mut(BLOCK)) {
            block_sums(&cipher, stream, number, &math, &mut batch, c);
        }
    });
    Ok(())
}
