//! A screen for privacy units that occur in more than one row, in memory that does not
//! grow with the number of units (`polars_ppdm.kernels.repeats`).
//!
//! `ppdm run` checks, before it reserves any budget, that no unit holds more distinct
//! values of a randomized-response column than the step is charged for. An exact
//! group-by over every unit held ~70 bytes a unit: 7 GB for a 100M-row table of 100M
//! units (issue 30). A unit seen in one row only holds one value, so only the units seen
//! twice need the exact check. This screen finds a superset of them: each key's hash sets
//! a few bits of one 64-bit word of a Bloom filter, and a row whose bits were all set
//! already is flagged. A repeated unit is always flagged at its second row (a Bloom
//! filter has no false negatives, and the test-and-set is one atomic operation on one
//! word, so two threads offering the same key cannot both miss it); a unit seen once is
//! flagged only by a false positive, which costs the exact check a few more rows.

use std::sync::atomic::{AtomicU64, Ordering};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::{apart, check_len, view};

/// Bits set per key, all in one word ("register-blocked"): one cache miss a key.
const BITS_PER_KEY: u32 = 6;
/// Keys whose words are computed and prefetched before their test-and-set: the misses of
/// a filter far larger than the cache overlap instead of queueing one after another.
const AHEAD: usize = 64;
/// Keys below which a batch is screened on the calling thread alone (a thread costs
/// tens of microseconds to start; 32,768 keys take about half a millisecond).
const MIN_PER_THREAD: usize = 32_768;

/// Offers each 64-bit key hash of `hashes` to the filter `bits` (uint64 words, zeroed
/// at the start, any number of them) and writes to `seen` (one byte a hash) 1 where all
/// of the hash's bits were set already, else 0. Safe to call from several threads at
/// once on the same `bits`.
#[pyfunction]
pub fn screen_repeats_into(
    py: Python<'_>,
    bits: &Bound<'_, PyAny>,
    hashes: &Bound<'_, PyAny>,
    seen: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let bits = view(bits, "bits", 8, true)?;
    let hashes = view(hashes, "hashes", 8, false)?;
    let seen = view(seen, "seen", 1, true)?;
    apart(&seen, &[&hashes, &bits])?;
    apart(&bits, &[&hashes])?;
    check_len("seen", seen.len, hashes.len)?;
    if bits.len == 0 {
        return Err(PyValueError::new_err("'bits' must hold at least one word. Got 0."));
    }
    py.detach(|| {
        // SAFETY: the words are only touched through atomics, by every caller.
        let words: &[AtomicU64] = unsafe { bits.slice() };
        let (hashes, seen) = unsafe { (hashes.slice::<u64>(), seen.slice_mut::<u8>()) };
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        screen_on(cores, words, hashes, seen);
    });
    Ok(())
}

/// A batch on up to `cores` threads: the time is the filter's cache misses, which threads
/// overlap (the test-and-set is atomic, so a key repeated across them is still seen).
fn screen_on(cores: usize, words: &[AtomicU64], hashes: &[u64], seen: &mut [u8]) {
    let threads = cores.min(hashes.len() / MIN_PER_THREAD).max(1);
    if threads == 1 {
        return screen(words, hashes, seen);
    }
    let share = hashes.len().div_ceil(threads);
    std::thread::scope(|scope| {
        for (hashes, seen) in hashes.chunks(share).zip(seen.chunks_mut(share)) {
            scope.spawn(move || screen(words, hashes, seen));
        }
    });
}

fn screen(words: &[AtomicU64], hashes: &[u64], seen: &mut [u8]) {
    let mut slots = [(0usize, 0u64); AHEAD];
    for (chunk, out) in hashes.chunks(AHEAD).zip(seen.chunks_mut(AHEAD)) {
        for (slot, &hash) in slots.iter_mut().zip(chunk) {
            *slot = place(hash, words.len());
            prefetch(&words[slot.0]);
        }
        for ((index, pattern), flag) in slots.iter().zip(out.iter_mut()) {
            let before = words[*index].fetch_or(*pattern, Ordering::Relaxed);
            *flag = u8::from(before & pattern == *pattern);
        }
    }
}

/// The word of a hash (multiply-shift of one mixed half onto the filter's length) and
/// its bits (six-bit fields of another mix), both from the splitmix64 finaliser: a key
/// hash Polars gives is not promised to be mixed, nor its bits independent.
#[inline]
fn place(hash: u64, words: usize) -> (usize, u64) {
    let first = mix(hash);
    let second = mix(first ^ 0x9E37_79B9_7F4A_7C15);
    let index = ((u128::from(first) * words as u128) >> 64) as usize;
    let pattern = (0..BITS_PER_KEY).fold(0u64, |acc, i| acc | 1 << ((second >> (6 * i)) & 63));
    (index, pattern)
}

#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[inline]
fn prefetch(word: &AtomicU64) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; the address is a valid reference.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(word.as_ptr() as *const i8);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = word;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(words: &[AtomicU64], hashes: &[u64]) -> Vec<u8> {
        let mut seen = vec![0u8; hashes.len()];
        screen(words, hashes, &mut seen);
        seen
    }

    #[test]
    fn a_repeated_hash_is_always_flagged_at_its_second_row() {
        let words: Vec<AtomicU64> = (0..3).map(|_| AtomicU64::new(0)).collect();
        // A tiny filter: many false positives, never a false negative.
        let hashes: Vec<u64> = (0..40u64).chain(0..40u64).collect();
        let seen = offered(&words, &hashes);
        assert!(seen[40..].iter().all(|&s| s == 1));
    }

    #[test]
    fn a_key_repeated_across_threads_is_flagged_once_of_its_two_rows() {
        // Each key twice, one copy in each thread's share of the batch: whichever thread
        // sets its bits first, the other sees them (one atomic test-and-set a word).
        let n = 4 * MIN_PER_THREAD;
        let words: Vec<AtomicU64> = (0..(2 * n * 16 / 64)).map(|_| AtomicU64::new(0)).collect();
        let hashes: Vec<u64> = (0..n as u64).chain(0..n as u64).collect();
        let mut seen = vec![0u8; hashes.len()];
        screen_on(2, &words, &hashes, &mut seen);
        for key in 0..n {
            assert!(seen[key] + seen[key + n] >= 1, "key {key} was missed");
        }
    }

    #[test]
    fn distinct_hashes_in_a_roomy_filter_are_rarely_flagged() {
        let words: Vec<AtomicU64> = (0..(100_000 * 16 / 64)).map(|_| AtomicU64::new(0)).collect();
        let hashes: Vec<u64> = (0..100_000u64).collect();
        let flagged = offered(&words, &hashes).iter().map(|&s| u64::from(s)).sum::<u64>();
        // 16 bits a key, six set in one word: a few per thousand.
        assert!(flagged < 1_000, "{flagged}");
        assert_eq!(offered(&words, &hashes).iter().map(|&s| u64::from(s)).sum::<u64>(), 100_000);
    }
}
