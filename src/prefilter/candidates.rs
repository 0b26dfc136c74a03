//! The candidate stage of the prefilter: the positions where one of the
//! words may start, found 32 bytes at a time with SIMD, each then tested
//! for the words that start there ([`Verifier`]).
//!
//! A word's *fingerprint* is its first three bytes (all of them for a
//! shorter word), each folded with `| 0x20`. Folding maps both cases of a
//! letter to the lower-case one and every other byte to some byte, always
//! the same: two bytes equal ignoring ASCII case fold equal, so folding
//! adds candidates and never loses one. The fingerprints are spread over
//! eight buckets; for each of the three offsets a byte's low and high
//! nibbles select, through two 16-entry tables, the buckets that allow
//! that nibble there (the nibble-mask search of Teddy). A position is a
//! candidate when some bucket allows all three of its bytes. A bucket
//! holding a two-byte word allows any byte at the third offset. Mixing
//! fingerprints in a bucket, and nibbles, adds candidates, never loses
//! one: every position where a word starts is a candidate.
//!
//! Why a hand-written kernel: the `aho-corasick` crate's packed (Teddy)
//! searcher has no ASCII case-insensitive mode, and spelling every case
//! variant of the 28 fingerprints would take 224 patterns, over its limit;
//! `memchr` searches one to three bytes, and the words start with 16
//! different letters.

/// Bytes per block: one bit of a `u32` mask per position.
const BLOCK: usize = 32;

/// The buckets, tuned on a sample of the generated corpus and the real
/// tree (19 MB): about one position in 52 is a candidate, against one in
/// 85 that starts a fingerprint. Tuning only moves the speed; a
/// fingerprint not listed here goes to the last bucket.
const GROUPS: [&[&[u8]]; 8] = [
    &[b"cac", b"lea", b"loc"],
    &[b"fre", b"mut", b"pre"],
    &[b"cla", b"get", b"sem", b"ser", b"set"],
    &[b"nx"],
    &[b"abs", b"acq", b"for", b"not", b"obt"],
    &[b"dro", b"gra", b"has", b"ifa", b"if\x7f"],
    &[b"exi", b"red"],
    &[b"del", b"exp", b"rel", b"unl"],
];

/// How the blocks are searched, chosen once at run time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kernel {
    Scalar,
    #[cfg(target_arch = "x86_64")]
    Ssse3,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

impl Kernel {
    /// The fastest kernel this processor runs.
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2") {
                return Kernel::Avx2;
            }
            if is_x86_feature_detected!("ssse3") {
                return Kernel::Ssse3;
            }
        }
        Kernel::Scalar
    }

    /// Every kernel this processor runs (for the tests).
    #[cfg(test)]
    pub(super) fn available() -> Vec<Kernel> {
        #[allow(unused_mut)]
        let mut all = vec![Kernel::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("ssse3") {
                all.push(Kernel::Ssse3);
            }
            if is_x86_feature_detected!("avx2") {
                all.push(Kernel::Avx2);
            }
        }
        all
    }
}

/// The fingerprint of a word: its first three bytes (fewer if shorter),
/// folded.
fn fingerprint(word: &str) -> Vec<u8> {
    word.bytes().take(3).map(|b| b | 0x20).collect()
}

/// The candidate search for one list of words.
pub(super) struct Finder {
    /// For offset `k`: a folded byte's low nibble → the buckets allowing it
    /// there (`lo[k]`), its high nibble → the same (`hi[k]`); each table
    /// twice over, for both 128-bit lanes of an AVX2 register.
    lo: [[u8; 32]; 3],
    hi: [[u8; 32]; 3],
    /// For offset `k`: a raw byte → `lo & hi` of its folded byte, the
    /// scalar form of the same test.
    byte: [[u8; 256]; 3],
    kernel: Kernel,
}

impl Finder {
    pub(super) fn new(words: &[&str]) -> Finder {
        let mut lo = [[0u8; 32]; 3];
        let mut hi = [[0u8; 32]; 3];
        for w in words {
            let fp = fingerprint(w);
            assert!(!fp.is_empty(), "no empty word");
            let bucket = GROUPS
                .iter()
                .position(|g| g.contains(&fp.as_slice()))
                .unwrap_or(GROUPS.len() - 1);
            let bit = 1u8 << bucket;
            for k in 0..3 {
                match fp.get(k) {
                    Some(&b) => {
                        lo[k][usize::from(b & 0x0f)] |= bit;
                        hi[k][usize::from(b >> 4)] |= bit;
                    }
                    // a shorter word: any byte there
                    None => {
                        for n in 0..16 {
                            lo[k][n] |= bit;
                            hi[k][n] |= bit;
                        }
                    }
                }
            }
        }
        for k in 0..3 {
            let (l, h) = (lo[k], hi[k]);
            lo[k][16..].copy_from_slice(&l[..16]);
            hi[k][16..].copy_from_slice(&h[..16]);
        }
        let mut byte = [[0u8; 256]; 3];
        for (k, table) in byte.iter_mut().enumerate() {
            for (b, allowed) in table.iter_mut().enumerate() {
                let f = b | 0x20;
                *allowed = lo[k][f & 0x0f] & hi[k][f >> 4];
            }
        }
        Finder {
            lo,
            hi,
            byte,
            kernel: Kernel::detect(),
        }
    }

    /// The first block at or after `from` that holds a candidate: its start
    /// `b` and its mask, bit `j` set when `b + j` is a candidate (no bit at
    /// or past the end of `bytes`). Every position from `from` on where a
    /// word starts is in a block returned by this or a later call (from
    /// `b + 32` on).
    #[inline]
    pub(super) fn next(&self, bytes: &[u8], from: usize) -> Option<(usize, u32)> {
        self.next_with(self.kernel, bytes, from)
    }

    /// The kernel [`Finder::next`] uses.
    pub(super) fn kernel(&self) -> Kernel {
        self.kernel
    }

    /// [`Finder::next`] with the given kernel (one this processor runs).
    #[inline(always)]
    pub(super) fn next_with(
        &self,
        kernel: Kernel,
        bytes: &[u8],
        from: usize,
    ) -> Option<(usize, u32)> {
        let mut base = from;
        // whole blocks: the three loads of a block read up to `base + 34`
        if base + BLOCK + 2 <= bytes.len() {
            let (b, mask) = match kernel {
                Kernel::Scalar => self.blocks_scalar(bytes, base),
                // SAFETY: the kernel was detected on this processor
                #[cfg(target_arch = "x86_64")]
                Kernel::Ssse3 => unsafe { self.blocks_ssse3(bytes, base) },
                #[cfg(target_arch = "x86_64")]
                Kernel::Avx2 => unsafe { self.blocks_avx2(bytes, base) },
            };
            if mask != 0 {
                return Some((b, mask));
            }
            base = b;
        }
        // the last bytes: past the end reads as 0
        while base < bytes.len() {
            let mask = self.mask_scalar(bytes, base);
            if mask != 0 {
                return Some((base, mask));
            }
            base += BLOCK;
        }
        None
    }

    /// The candidates of the block at `base` (bounds-checked; a byte past
    /// the end reads as 0).
    fn mask_scalar(&self, bytes: &[u8], base: usize) -> u32 {
        let at = |i: usize| usize::from(bytes.get(i).copied().unwrap_or(0));
        let n = BLOCK.min(bytes.len().saturating_sub(base));
        let mut mask = 0u32;
        for j in 0..n {
            let i = base + j;
            if self.byte[0][at(i)] & self.byte[1][at(i + 1)] & self.byte[2][at(i + 2)] != 0 {
                mask |= 1 << j;
            }
        }
        mask
    }

    /// From `base`, whole blocks while they fit: the first with a
    /// candidate and its mask, or where the whole blocks end and 0.
    fn blocks_scalar(&self, bytes: &[u8], mut base: usize) -> (usize, u32) {
        while base + BLOCK + 2 <= bytes.len() {
            let mask = self.mask_scalar(bytes, base);
            if mask != 0 {
                return (base, mask);
            }
            base += BLOCK;
        }
        (base, 0)
    }

    /// [`Finder::blocks_scalar`] with AVX2: one block per round.
    ///
    /// # Safety
    /// The processor runs AVX2.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn blocks_avx2(&self, bytes: &[u8], mut base: usize) -> (usize, u32) {
        use std::arch::x86_64::*;
        let lo = [
            _mm256_loadu_si256(self.lo[0].as_ptr().cast()),
            _mm256_loadu_si256(self.lo[1].as_ptr().cast()),
            _mm256_loadu_si256(self.lo[2].as_ptr().cast()),
        ];
        let hi = [
            _mm256_loadu_si256(self.hi[0].as_ptr().cast()),
            _mm256_loadu_si256(self.hi[1].as_ptr().cast()),
            _mm256_loadu_si256(self.hi[2].as_ptr().cast()),
        ];
        let start = bytes.as_ptr();
        while base + BLOCK + 2 <= bytes.len() {
            // SAFETY: the three loads read `base..base + 34`, inside `bytes`
            let p = start.add(base);
            let all = _mm256_and_si256(
                _mm256_and_si256(
                    allow_avx2(p, lo[0], hi[0]),
                    allow_avx2(p.add(1), lo[1], hi[1]),
                ),
                allow_avx2(p.add(2), lo[2], hi[2]),
            );
            let none = _mm256_cmpeq_epi8(all, _mm256_setzero_si256());
            let mask = !(_mm256_movemask_epi8(none) as u32);
            if mask != 0 {
                return (base, mask);
            }
            base += BLOCK;
        }
        (base, 0)
    }

    /// [`Finder::blocks_scalar`] with SSSE3: one block per round, as two
    /// halves.
    ///
    /// # Safety
    /// The processor runs SSSE3.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "ssse3")]
    unsafe fn blocks_ssse3(&self, bytes: &[u8], mut base: usize) -> (usize, u32) {
        use std::arch::x86_64::*;
        let lo = [
            _mm_loadu_si128(self.lo[0].as_ptr().cast()),
            _mm_loadu_si128(self.lo[1].as_ptr().cast()),
            _mm_loadu_si128(self.lo[2].as_ptr().cast()),
        ];
        let hi = [
            _mm_loadu_si128(self.hi[0].as_ptr().cast()),
            _mm_loadu_si128(self.hi[1].as_ptr().cast()),
            _mm_loadu_si128(self.hi[2].as_ptr().cast()),
        ];
        let start = bytes.as_ptr();
        while base + BLOCK + 2 <= bytes.len() {
            // SAFETY: the loads read `base..base + 34`, inside `bytes`
            let p = start.add(base);
            let mask = half_ssse3(p, &lo, &hi) | (half_ssse3(p.add(16), &lo, &hi) << 16);
            if mask != 0 {
                return (base, mask);
            }
            base += BLOCK;
        }
        (base, 0)
    }
}

/// The buckets allowing each of the 32 bytes at `p` at one offset, given
/// that offset's nibble tables.
///
/// # Safety
/// The processor runs AVX2; `p..p + 32` is readable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn allow_avx2(
    p: *const u8,
    lo: std::arch::x86_64::__m256i,
    hi: std::arch::x86_64::__m256i,
) -> std::arch::x86_64::__m256i {
    use std::arch::x86_64::*;
    let v = _mm256_or_si256(_mm256_loadu_si256(p.cast()), _mm256_set1_epi8(0x20));
    let nibble = _mm256_set1_epi8(0x0f);
    let l = _mm256_and_si256(v, nibble);
    let h = _mm256_and_si256(_mm256_srli_epi16::<4>(v), nibble);
    _mm256_and_si256(_mm256_shuffle_epi8(lo, l), _mm256_shuffle_epi8(hi, h))
}

/// The candidate mask of the 16 positions at `p` (bits 0..16).
///
/// # Safety
/// The processor runs SSSE3; `p..p + 18` is readable.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "ssse3")]
#[inline]
unsafe fn half_ssse3(
    p: *const u8,
    lo: &[std::arch::x86_64::__m128i; 3],
    hi: &[std::arch::x86_64::__m128i; 3],
) -> u32 {
    use std::arch::x86_64::*;
    let fold = _mm_set1_epi8(0x20);
    let nibble = _mm_set1_epi8(0x0f);
    let mut all = _mm_set1_epi8(-1);
    for k in 0..3 {
        let v = _mm_or_si128(_mm_loadu_si128(p.add(k).cast()), fold);
        let l = _mm_and_si128(v, nibble);
        let h = _mm_and_si128(_mm_srli_epi16::<4>(v), nibble);
        all = _mm_and_si128(
            all,
            _mm_and_si128(_mm_shuffle_epi8(lo[k], l), _mm_shuffle_epi8(hi[k], h)),
        );
    }
    let none = _mm_cmpeq_epi8(all, _mm_setzero_si128());
    !(_mm_movemask_epi8(none) as u32) & 0xffff
}

/// The exact test of a candidate: which words start there. The words are
/// listed by their first byte; a candidate's 16 bytes, lower-cased
/// exactly (ASCII, eight bytes at a time), are compared with each word of
/// its first byte's list under a mask of the word's length. Where a walk
/// of the automaton from each candidate took a dependent table load per
/// byte and a hard-to-predict loop exit, this is two loads and a few
/// compares (generated corpus, one thread: 80 → 40 ms beside the 45 of
/// the block search).
pub(super) struct Verifier {
    /// A byte → the range of `words` whose first byte it is (ignoring
    /// ASCII case).
    first: [(u16, u16); 256],
    words: Vec<Spelling>,
}

/// One word as [`Verifier`] compares it.
struct Spelling {
    /// Its bytes, lower-cased, zero-padded to 16, as two little-endian words.
    bytes: [u64; 2],
    /// `0xff` for each of its bytes.
    mask: [u64; 2],
    /// Its number in the list given to [`Verifier::new`].
    id: u16,
    len: u16,
}

/// Longest word a [`Verifier`] holds.
pub(super) const MAX_WORD: usize = 16;

impl Verifier {
    pub(super) fn new(words: &[&str]) -> Verifier {
        let mut first = [(0u16, 0u16); 256];
        let mut list = Vec::new();
        for b in 0..=255u8 {
            let start = u16::try_from(list.len()).expect("few words");
            for (id, w) in words.iter().enumerate() {
                let w = w.as_bytes();
                assert!(
                    !w.is_empty() && w.len() <= MAX_WORD && !w.contains(&0),
                    "a word of 1 to {MAX_WORD} bytes, none of them 0"
                );
                if !w[0].eq_ignore_ascii_case(&b) {
                    continue;
                }
                let mut bytes = [0u8; MAX_WORD];
                bytes[..w.len()].copy_from_slice(&w.to_ascii_lowercase());
                let mut mask = [0u8; MAX_WORD];
                mask[..w.len()].fill(0xff);
                list.push(Spelling {
                    bytes: halves(&bytes),
                    mask: halves(&mask),
                    id: u16::try_from(id).expect("few words"),
                    len: w.len() as u16,
                });
            }
            first[usize::from(b)] = (start, u16::try_from(list.len()).expect("few words"));
        }
        Verifier { first, words: list }
    }

    /// Calls `f(word, start, end)` for each word starting at `at` (in the
    /// order of the list given to [`Verifier::new`]); stops and answers
    /// true as soon as `f` does.
    #[inline]
    pub(super) fn each_at(
        &self,
        bytes: &[u8],
        at: usize,
        f: &mut impl FnMut(usize, usize, usize) -> bool,
    ) -> bool {
        let (from, to) = self.first[usize::from(bytes[at])];
        if from == to {
            return false;
        }
        let here = match bytes.get(at..at + MAX_WORD) {
            Some(s) => halves(s.try_into().expect("16 bytes")),
            // near the end: zeros, which no word holds
            None => {
                let mut buf = [0u8; MAX_WORD];
                buf[..bytes.len() - at].copy_from_slice(&bytes[at..]);
                halves(&buf)
            }
        };
        let here = [lower(here[0]), lower(here[1])];
        for w in &self.words[usize::from(from)..usize::from(to)] {
            let differ =
                ((here[0] ^ w.bytes[0]) & w.mask[0]) | ((here[1] ^ w.bytes[1]) & w.mask[1]);
            if differ == 0 && f(usize::from(w.id), at, at + usize::from(w.len)) {
                return true;
            }
        }
        false
    }
}

/// 16 bytes as two little-endian words.
#[inline]
fn halves(b: &[u8; MAX_WORD]) -> [u64; 2] {
    let (lo, hi) = b.split_at(8);
    [
        u64::from_le_bytes(lo.try_into().expect("8 bytes")),
        u64::from_le_bytes(hi.try_into().expect("8 bytes")),
    ]
}

/// Eight bytes with each ASCII upper-case letter lower-cased, and nothing
/// else changed.
#[inline]
fn lower(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    // each byte's low seven bits: the additions below carry into no other byte
    let low7 = x & (0x7f * ONES);
    let from_a = low7 + u64::from(0x80 - b'A') * ONES;
    let past_z = low7 + u64::from(0x80 - b'Z' - 1) * ONES;
    // the top bit of each byte in A..=Z (and below 0x80)
    let upper = from_a & !past_z & !x & (0x80 * ONES);
    x | (upper >> 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every byte value, at each of the eight places, lower-cased as
    /// `to_ascii_lowercase` does, its neighbours untouched.
    #[test]
    fn lower_is_ascii_lowercase_bytewise() {
        for place in 0..8 {
            for b in 0..=255u8 {
                for around in [0u8, b'Z', 0xff, b'@', b'['] {
                    let mut bytes = [around; 8];
                    bytes[place] = b;
                    let want = bytes.map(|x| x.to_ascii_lowercase());
                    assert_eq!(lower(u64::from_le_bytes(bytes)).to_le_bytes(), want);
                }
            }
        }
    }

    /// Words of one first byte (ignoring case), a word and its
    /// extensions, found at every start, near the end too.
    #[test]
    fn verifier_finds_each_word_where_it_starts() {
        let words = ["nx", ".x", "lock", "locktake", "lockextend", "lease", "del"];
        let v = Verifier::new(&words);
        let text = b"NX.x\x0exLockTakeLOCKEXTENDlockLeAsEdel.X nx";
        let mut got = Vec::new();
        for at in 0..text.len() {
            v.each_at(text, at, &mut |w, s, e| {
                got.push((words[w], s, e));
                false
            });
        }
        let mut want = Vec::new();
        for at in 0..text.len() {
            for w in &words {
                if text[at..].len() >= w.len()
                    && text[at..at + w.len()].eq_ignore_ascii_case(w.as_bytes())
                {
                    want.push((*w, at, at + w.len()));
                }
            }
        }
        got.sort();
        want.sort();
        assert_eq!(got, want);
        assert!(got.len() >= 9, "{got:?}");
        // it stops at the first call answering true
        let mut n = 0;
        assert!(v.each_at(b"locktake", 0, &mut |_, _, _| {
            n += 1;
            true
        }));
        assert_eq!(n, 1);
    }
}
