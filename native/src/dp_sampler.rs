//! The exact samplers of `polars_ppdm.kernels.dp_noise` (Canonne, Kamath, Steinke 2020,
//! Algorithms 1-3): the discrete Laplace, its one-sided magnitude, and the discrete
//! Gaussian, with the same bits as the NumPy path.
//!
//! A sample's j-th random word is word 0 of AES(secret, stream_j || key), with
//! `stream_j` the first 8 bytes (little-endian) of SHA-256("polars_ppdm/stream/" +
//! prefix + "/" + j): the Python path's `_draw_stream`. Each sample walks its own state
//! machine one word at a time, so the order in which samples advance cannot change a bit;
//! all pending samples advance together here too, so the AES runs over whole batches.
//! The Gaussian's acceptance test needs integers of ~2^230: `num-bigint`, once per
//! proposal.

use aes::Block;
use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::{ToPrimitive, Zero};
use sha2::{Digest, Sha256};
use std::collections::HashMap;

use crate::{Cipher, set_block, word};

/// Samples drawn side by side (their states, ~100 bytes each, stay in cache).
const CHUNK: usize = 4096;

/// Which law a call draws.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Law {
    /// The discrete Laplace (two-sided geometric): a negative zero is drawn again.
    Laplace,
    /// Its magnitude alone: every sample ends at the sign step.
    Geometric,
    /// The discrete Gaussian: a Laplace proposal kept with probability exp(-gamma).
    Gaussian,
}

// The steps: the proposal's U, D, V, B (Algorithm 2), the Gaussian's E and F (Algorithm 1
// for its acceptance).
const U: u8 = 0;
const D: u8 = 1;
const V: u8 = 2;
const B: u8 = 3;
const E: u8 = 4;
const F: u8 = 5;

/// The stream words of one sampler's draws, computed as the draws reach them.
pub(crate) struct Streams {
    prefix: String,
    words: Vec<u64>,
}

impl Streams {
    pub(crate) fn new(prefix: &str) -> Self {
        Streams { prefix: prefix.to_owned(), words: Vec::new() }
    }

    fn get(&mut self, draw: u64) -> u64 {
        let draw = draw as usize;
        while self.words.len() <= draw {
            let label = format!("polars_ppdm/stream/{}/{}", self.prefix, self.words.len());
            let digest = Sha256::digest(label.as_bytes());
            self.words.push(u64::from_le_bytes(digest[..8].try_into().expect("8 bytes")));
        }
        self.words[draw]
    }
}

/// One pending sample.
#[derive(Clone, Default)]
struct Sample {
    index: usize,
    key: u64,
    owner: usize,
    draw: u64,
    state: u8,
    u: u64,
    k: u64,
    v: u64,
    // The Gaussian's proposal |Y| and sign, its exp(-1) trials left and floor(f 2^64).
    y: u64,
    negative: bool,
    whole: u64,
    fraction: u64,
    exact: bool,
}

/// Exact uniform integers in [0, bound) (bound >= 1): a word at or above the largest
/// multiple of `bound` below 2^64 is rejected. Returns (accepted, value).
#[inline]
fn below(w: u64, bound: u64) -> (bool, u64) {
    let excess = 0u64.wrapping_sub(bound) % bound; // 2^64 mod bound
    (w <= !excess, w % bound)
}

/// Algorithm 2's steps (the discrete Laplace of scale t / 2^shift).
struct Proposal {
    t: u64,
    shift: u64,
    k_limit: u64,
    func: &'static str,
}

enum Stepped {
    Pending,
    Finished(u64, bool),
}

impl Proposal {
    fn new(t: u64, shift: u64, func: &'static str) -> Self {
        Proposal { t, shift, k_limit: u64::MAX / t, func }
    }

    fn out_of_range(&self) -> String {
        format!("{}: the exact sampler ran out of 64-bit range (probability < 1e-27).", self.func)
    }

    /// One word of U (a uniform in [0, t)), D (the Bernoulli(exp(-U/t)) loop: K = 1, 2,
    /// ... while uniform[0, tK) < U, accepted if K is odd), V (Bernoulli(exp(-1))
    /// loops, uniform[0, K) == 0, counting successes) or B (the sign; a negative zero
    /// draws again).
    fn step(&self, s: &mut Sample, w: u64) -> Result<Stepped, String> {
        match s.state {
            U => {
                let (ok, value) = below(w, self.t);
                if ok {
                    s.u = value;
                    s.k = 1;
                    s.state = D;
                }
            }
            D => {
                if s.k >= self.k_limit {
                    return Err(self.out_of_range());
                }
                let (ok, value) = below(w, self.t.wrapping_mul(s.k));
                if ok {
                    if value < s.u {
                        s.k += 1;
                    } else if s.k & 1 == 1 {
                        s.state = V;
                        s.k = 1;
                        s.v = 0;
                    } else {
                        s.state = U;
                    }
                }
            }
            V => {
                if s.v >= self.k_limit - 1 {
                    return Err(self.out_of_range());
                }
                let (ok, value) = below(w, s.k);
                if ok {
                    if value == 0 {
                        s.k += 1;
                    } else if s.k & 1 == 1 {
                        s.v += 1;
                        s.k = 1;
                    } else {
                        s.state = B;
                    }
                }
            }
            _ => {
                let y = if self.shift < 64 { s.u.wrapping_add(self.t.wrapping_mul(s.v)) >> self.shift } else { 0 };
                let negative = w >> 63 == 1;
                if negative && y == 0 {
                    s.state = U;
                } else {
                    return Ok(Stepped::Finished(y, negative));
                }
            }
        }
        Ok(Stepped::Pending)
    }

    fn magnitude(&self, s: &Sample) -> u64 {
        if self.shift < 64 { s.u.wrapping_add(self.t.wrapping_mul(s.v)) >> self.shift } else { 0 }
    }
}

/// Algorithm 3's acceptance test in exact integers: gamma = a^2 / den with a = |Y| t
/// 4^shift - m^2 and den = 2 (m t 2^shift)^2, for sigma = m / 2^shift.
struct Acceptance {
    scaled_t: BigUint,
    m2: BigUint,
    den: BigUint,
    // Most proposals repeat a few small |Y|: gamma is worked out once per |Y| a call.
    seen: HashMap<u64, (u64, u64, bool)>,
}

impl Acceptance {
    fn new(m: u64, shift: u64, t: u64) -> Self {
        let root = (BigUint::from(m) * t) << shift;
        Acceptance {
            scaled_t: BigUint::from(t) << (2 * shift),
            m2: BigUint::from(m) * m,
            den: (&root * &root) << 1,
            seen: HashMap::new(),
        }
    }

    fn a_squared(&self, y: u64) -> BigUint {
        let scaled = &self.scaled_t * y;
        let a = if scaled >= self.m2 { scaled - &self.m2 } else { &self.m2 - scaled };
        &a * &a
    }

    /// ``(floor(gamma), floor(f 2^64), f 2^64 is an integer)`` for the fraction f.
    fn of(&mut self, y: u64) -> Result<(u64, u64, bool), String> {
        if let Some(&known) = self.seen.get(&y) {
            return Ok(known);
        }
        let (whole, rest) = self.a_squared(y).div_rem(&self.den);
        let whole = match whole.to_u64() {
            Some(g) if g < 1 << 63 => g,
            _ => {
                return Err(
                    "discrete_gaussian: the exact sampler ran out of 64-bit range (probability < 1e-1000).".to_owned()
                );
            }
        };
        let (fraction, remainder) = (rest << 64u32).div_rem(&self.den);
        let known = (whole, fraction.to_u64().expect("below 2^64"), remainder.is_zero());
        self.seen.insert(y, known);
        Ok(known)
    }
}

/// Finishes ``U < p`` after U's first 64 bits equalled p's (probability 2^-64 a word):
/// ``remainder / denominator`` is what is left of ``p 2^64``, U's next 64-bit digits are
/// ``next(0), next(1), ...``. Returns (U < p, digits read): the Python path's
/// `_bernoulli_after_tie`.
fn bernoulli_after_tie(mut next: impl FnMut(u64) -> u64, mut remainder: BigUint, denominator: &BigUint) -> (bool, u64) {
    let mut used = 0;
    loop {
        let (digit, rest) = (remainder << 64u32).div_rem(denominator);
        remainder = rest;
        let digit = digit.to_u64().expect("a 64-bit digit");
        let w = next(used);
        used += 1;
        if w != digit {
            return (w < digit, used);
        }
        if remainder.is_zero() {
            return (false, used);
        }
    }
}

/// The whole sampler: `keys[i]` drawn under `ciphers[i / per_secret]` (per_secret 0: all
/// under `ciphers[0]`) into `out[i]`. Laplace and Geometric take the scale t / 2^shift;
/// Gaussian takes sigma = m / 2^shift and its proposal's scale t.
#[allow(clippy::too_many_arguments)]
pub(crate) fn draw(
    law: Law,
    ciphers: &[Cipher],
    streams: &mut Streams,
    keys: &[u64],
    per_secret: usize,
    t: u64,
    shift: u64,
    m: u64,
    out: &mut [i64],
) -> Result<(), String> {
    let func = match law {
        Law::Laplace => "discrete_laplace",
        Law::Geometric => "one_sided_geometric",
        Law::Gaussian => "discrete_gaussian",
    };
    let gaussian = law == Law::Gaussian;
    let proposal = Proposal::new(t, if gaussian { 0 } else { shift }, func);
    let mut acceptance = gaussian.then(|| Acceptance::new(m, shift, t));
    // Samples are independent (each reads its own words): a few thousand at a time keep
    // their states in cache.
    let mut pending: Vec<Sample> = Vec::with_capacity(CHUNK);
    let mut blocks = vec![Block::default(); CHUNK];
    for first in (0..keys.len()).step_by(CHUNK) {
        let last = (first + CHUNK).min(keys.len());
        pending.clear();
        pending.extend((first..last).map(|index| Sample {
            index,
            key: keys[index],
            owner: index.checked_div(per_secret).unwrap_or(0),
            k: 1,
            ..Sample::default()
        }));
        advance(law, &proposal, &mut acceptance, ciphers, streams, &mut pending, &mut blocks, out)?;
    }
    Ok(())
}

/// Advances the pending samples together, a word each a round, until every one is drawn.
#[allow(clippy::too_many_arguments)]
fn advance(
    law: Law,
    proposal: &Proposal,
    acceptance: &mut Option<Acceptance>,
    ciphers: &[Cipher],
    streams: &mut Streams,
    pending: &mut Vec<Sample>,
    blocks: &mut [Block],
    out: &mut [i64],
) -> Result<(), String> {
    while !pending.is_empty() {
        let blocks = &mut blocks[..pending.len()];
        for (block, s) in blocks.iter_mut().zip(pending.iter()) {
            set_block(block, streams.get(s.draw), s.key);
        }
        // The pending samples stay in order, so each secret's samples are one run.
        let mut start = 0;
        while start < pending.len() {
            let owner = pending[start].owner;
            let end = start + pending[start..].iter().take_while(|s| s.owner == owner).count();
            ciphers[owner].encrypt(&mut blocks[start..end]);
            start = end;
        }
        let mut kept = 0;
        for i in 0..pending.len() {
            let w = word(&blocks[i], 0);
            let s = &mut pending[i];
            s.draw += 1;
            let done = match (s.state, acceptance.as_mut()) {
                (E, _) => {
                    exp_minus_one_trial(s, w);
                    None
                }
                (F, Some(accept)) => exp_minus_fraction(s, w, accept, &ciphers[s.owner], streams),
                (_, _) => {
                    let at_sign = s.state == B;
                    match proposal.step(s, w)? {
                        _ if law == Law::Geometric && at_sign => Some((proposal.magnitude(s), false)),
                        Stepped::Finished(y, negative) => match acceptance.as_mut() {
                            None => Some((y, negative)),
                            Some(accept) => {
                                let (whole, fraction, exact) = accept.of(y)?;
                                (s.y, s.negative, s.whole, s.fraction, s.exact) = (y, negative, whole, fraction, exact);
                                (s.k, s.state) = if whole == 0 { (1, F) } else { (2, E) };
                                None
                            }
                        },
                        Stepped::Pending => None,
                    }
                }
            };
            match done {
                Some((y, negative)) => out[s.index] = if negative { (y as i64).wrapping_neg() } else { y as i64 },
                None => {
                    pending.swap(kept, i);
                    kept += 1;
                }
            }
        }
        pending.truncate(kept);
    }
    Ok(())
}

/// E: one of the floor(gamma) Bernoulli(exp(-1)) trials, A_K = (uniform[0, K) == 0) for
/// K = 2, 3, ... (A_1 always holds); it ends at the first A_K = 0 and passes if K is odd.
fn exp_minus_one_trial(s: &mut Sample, w: u64) {
    let (ok, value) = below(w, s.k);
    if !ok {
        return;
    }
    if value == 0 {
        s.k += 1;
    } else if s.k & 1 == 1 {
        s.whole -= 1;
        (s.k, s.state) = if s.whole == 0 { (1, F) } else { (2, E) };
    } else {
        s.state = U;
    }
}

/// F: Bernoulli(exp(-f)) for gamma's fraction f, A_K = (U < f / K) read off the word
/// against floor(f 2^64 / K), a tie on all 64 bits continued digit by digit; it ends at
/// the first A_K = 0 and keeps the proposal if K is odd. Returns the kept draw.
fn exp_minus_fraction(
    s: &mut Sample,
    w: u64,
    accept: &Acceptance,
    cipher: &Cipher,
    streams: &mut Streams,
) -> Option<(u64, bool)> {
    let bound = s.fraction / s.k;
    let more = if w < bound {
        true
    } else if w > bound || (s.exact && s.fraction.is_multiple_of(s.k)) {
        false
    } else {
        let p_den = &accept.den * s.k;
        let numerator = accept.a_squared(s.y) % &accept.den;
        let rest = (numerator << 64u32) - &p_den * bound;
        let (first, key) = (s.draw, s.key);
        let next = |j: u64| {
            let mut block = [Block::default()];
            set_block(&mut block[0], streams.get(first + j), key);
            cipher.encrypt(&mut block);
            word(&block[0], 0)
        };
        let (below, used) = bernoulli_after_tie(next, rest, &p_den);
        s.draw += used;
        below
    };
    if more {
        s.k += 1;
        return None;
    }
    if s.k & 1 == 1 {
        return Some((s.y, s.negative));
    }
    s.state = U;
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tie_is_continued_digit_by_digit_as_the_python_path_does() {
        // The examples of `_bernoulli_after_tie` and of test_a_tie_on_all_64_bits_is_continued_exactly.
        let words = |ws: Vec<u64>| move |j: u64| ws[j as usize];
        let (one, two, three) = (BigUint::from(1u32), BigUint::from(2u32), BigUint::from(3u32));
        assert_eq!(bernoulli_after_tie(words(vec![5, 0]), one.clone(), &two), (true, 1));
        assert_eq!(bernoulli_after_tie(words(vec![1 << 63, 7]), one.clone(), &two), (false, 1));
        let third = u64::MAX / 3;
        assert_eq!(bernoulli_after_tie(words(vec![third - 1]), one.clone(), &three), (true, 1));
        assert_eq!(bernoulli_after_tie(words(vec![third + 1]), one.clone(), &three), (false, 1));
        assert_eq!(bernoulli_after_tie(words(vec![third, third - 5]), one, &three), (true, 2));
    }

    #[test]
    fn below_rejects_exactly_the_words_past_the_last_whole_multiple() {
        assert_eq!(below(u64::MAX, 1), (true, 0));
        // 2^64 = 3 * 6148914691236517205 + 1: the one word left over is rejected.
        assert_eq!(below(u64::MAX, 3), (false, 0));
        assert_eq!(below(u64::MAX - 1, 3), (true, 2));
        assert_eq!(below(u64::MAX, 1 << 63), (true, (1 << 63) - 1));
    }

    #[test]
    fn the_acceptance_is_gamma_in_exact_integers() {
        // sigma = 1 (m = 2^31, shift 31), t = 2: gamma(|Y|) = (|Y| - 1/2)^2 / 2.
        let mut accept = Acceptance::new(1 << 31, 31, 2);
        assert_eq!(accept.of(0).unwrap(), (0, 1 << 61, true)); // 1/8
        assert_eq!(accept.of(3).unwrap(), (3, 1 << 61, true)); // 25/8
        assert_eq!(accept.of(1).unwrap(), (0, 1 << 61, true)); // 1/8
        assert!(accept.of(u64::MAX / 4).is_err());
    }
}
