//! Small collections the scheduler is built on: a fast hasher for
//! correlation ids ([`FxMap`]), a bit set, and the slab every waiting
//! request lives in (queues hold slab indices, so a request is moved, not
//! copied, from arrival to its batch).

use super::SeqHandle;
use crate::batching::Request;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A small multiplicative hasher: correlation ids are hashed once per
/// arrival, SipHash's DoS protection is not needed for a local trace.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl FxHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b));
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    fn write_isize(&mut self, i: isize) {
        self.add(i as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

pub(crate) type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;

/// A two-level bit set with ordered "next set bit" search.
#[derive(Default)]
pub(super) struct Bits {
    words: Vec<u64>,
    top: Vec<u64>,
}

impl Bits {
    pub(super) fn new(n: usize) -> Self {
        let words = n.div_ceil(64);
        Bits {
            words: vec![0; words],
            top: vec![0; words.div_ceil(64)],
        }
    }
    #[inline]
    pub(super) fn set(&mut self, k: usize) {
        let w = k / 64;
        self.words[w] |= 1 << (k % 64);
        self.top[w / 64] |= 1 << (w % 64);
    }
    #[inline]
    pub(super) fn clear(&mut self, k: usize) {
        let w = k / 64;
        self.words[w] &= !(1 << (k % 64));
        if self.words[w] == 0 {
            self.top[w / 64] &= !(1 << (w % 64));
        }
    }
    /// The smallest set bit `>= k`.
    pub(super) fn next_from(&self, k: usize) -> Option<usize> {
        let w = k / 64;
        if w >= self.words.len() {
            return None;
        }
        let m = self.words[w] & (!0u64 << (k % 64));
        if m != 0 {
            return Some(w * 64 + m.trailing_zeros() as usize);
        }
        let next = w + 1;
        let mut t = next / 64;
        let mut mask = !0u64 << (next % 64);
        while t < self.top.len() {
            let m = self.top[t] & mask;
            if m != 0 {
                let w2 = t * 64 + m.trailing_zeros() as usize;
                return Some(w2 * 64 + self.words[w2].trailing_zeros() as usize);
            }
            t += 1;
            mask = !0;
        }
        None
    }
}

/// A request waiting somewhere in the scheduler.
pub(super) struct Job {
    pub(super) req: Request,
    pub(super) seq: Option<SeqHandle>,
    /// When it entered its dynamic-batcher queue.
    pub(super) enq: u64,
    pub(super) deadline: Option<u64>,
    /// Oldest: the candidate slot it came from.
    pub(super) slot: usize,
}

/// Storage of waiting requests; memory follows the live requests.
#[derive(Default)]
pub(super) struct Slab {
    items: Vec<Option<Job>>,
    free: Vec<u32>,
}

impl Slab {
    pub(super) fn insert(&mut self, job: Job) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = Some(job);
                i
            }
            None => {
                self.items.push(Some(job));
                (self.items.len() - 1) as u32
            }
        }
    }
    pub(super) fn take(&mut self, i: u32) -> Job {
        let job = self.items[i as usize].take().expect("live job");
        self.free.push(i);
        job
    }
    #[inline]
    pub(super) fn get(&self, i: u32) -> &Job {
        self.items[i as usize].as_ref().expect("live job")
    }
    #[inline]
    pub(super) fn get_mut(&mut self, i: u32) -> &mut Job {
        self.items[i as usize].as_mut().expect("live job")
    }
}
