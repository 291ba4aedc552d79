//! The Direct sequence batcher: the free `(slot, instance)` pairs in
//! Triton's order ([`SlotHeap`]) and the scheduler step that forms a
//! batch from the slots of one instance.

use super::sequence::Item;
use super::{Release, ReleaseReason, Row, Sched, Scheduler, Slot};

/// The free `(slot, instance)` pairs, in the order Triton hands them out.
///
/// Triton keeps them in a `std::priority_queue` whose comparison looks at
/// the slot index only, so which instance's slot comes first among equal
/// indices depends on how the underlying binary heap moves its elements
/// (libstdc++'s heap algorithms; docs/spec/schedulers-observed.md, Direct).
/// This is a binary heap in an array (children of `k` at `2k+1` and `2k+2`)
/// that moves elements the same way:
///
/// * push: the new pair goes to the end and climbs while its parent has a
///   strictly larger slot index (an equal parent stops it);
/// * pop: the last pair is set aside, the hole left at the root walks down
///   to a leaf, each step taking the child with the smaller slot index and
///   the right-hand one when both are equal (a lone left child at the
///   bottom is taken too), then the set-aside pair climbs from the hole as
///   in push.
#[derive(Default)]
pub(super) struct SlotHeap {
    /// `(slot, instance)`.
    items: Vec<(usize, usize)>,
}

impl SlotHeap {
    pub(super) fn push(&mut self, item: (usize, usize)) {
        self.items.push(item);
        let hole = self.items.len() - 1;
        self.climb(hole, item);
    }

    /// Moves `item` up from the empty position `hole` while the parent's
    /// slot is strictly larger, and stores it where it stops.
    fn climb(&mut self, mut hole: usize, item: (usize, usize)) {
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.items[parent].0 <= item.0 {
                break;
            }
            self.items[hole] = self.items[parent];
            hole = parent;
        }
        self.items[hole] = item;
    }

    pub(super) fn pop(&mut self) -> Option<(usize, usize)> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = self.items[0];
        let len = self.items.len();
        let mut hole = 0;
        // Down to a leaf, always through a child.
        loop {
            let right = 2 * hole + 2;
            if right < len {
                let left = right - 1;
                let child = if self.items[right].0 > self.items[left].0 {
                    left
                } else {
                    right
                };
                self.items[hole] = self.items[child];
                hole = child;
            } else {
                if right == len {
                    // Only a left child.
                    self.items[hole] = self.items[right - 1];
                    hole = right - 1;
                }
                break;
            }
        }
        self.climb(hole, last);
        Some(top)
    }
}

impl Scheduler {
    pub(super) fn form_direct(&mut self, now: u64, inst: usize) {
        let mbs = self.mbs.max(1);
        let shapes = self.shapes;
        let Sched::Direct(st, delay, util) = &mut self.sched else {
            return;
        };
        let (delay, util) = (*delay, *util);
        let n = st.slots[inst].len();
        for s in 0..n {
            while let Some(Item::Release(h)) = st.slots[inst][s].queue.front() {
                let h = *h;
                st.slots[inst][s].queue.pop_front();
                self.releases.push(Release {
                    sequence: h,
                    reason: ReleaseReason::Idle,
                });
                st.release(inst, s);
            }
        }
        let head = |slot: &Slot| match slot.queue.front() {
            Some(Item::Req(j)) => Some(*j),
            _ => None,
        };
        let mut count = 0usize;
        let mut first = None;
        let mut hi = None;
        let mut earliest = u64::MAX;
        for (s, slot) in st.slots[inst].iter().enumerate() {
            if let Some(j) = head(slot) {
                count += 1;
                first.get_or_insert(j);
                hi = Some(s);
                earliest = earliest.min(self.jobs.get(j).req.arrival_us);
            }
        }
        let Some(hi) = hi else { return };
        if delay > 0 && util > 0.0 {
            let due = earliest.saturating_add(delay).saturating_add(1);
            let full = count as f32 / mbs as f32 >= util;
            if !(now >= due || full) {
                self.wait[inst] = Some(due);
                return;
            }
        }
        // Heads whose shapes differ from the first ready head's are padded
        // and stay queued (docs/spec/schedulers.md §3.8 rule 4).
        let mut entries = std::mem::take(&mut self.entries);
        entries.clear();
        let rep = &self.jobs.get(first.expect("a ready slot")).req.shape;
        for s in 0..=hi {
            let e = match head(&st.slots[inst][s]) {
                Some(j) if shapes && self.jobs.get(j).req.shape != *rep => None,
                Some(j) => {
                    st.slots[inst][s].queue.pop_front();
                    Some(j)
                }
                None => None,
            };
            entries.push(e);
        }
        for (s, e) in entries.iter().enumerate() {
            if e.is_some_and(|j| self.jobs.get(j).req.end) {
                st.release(inst, s);
            }
        }
        let mut rows = std::mem::take(&mut self.running[inst].rows);
        rows.clear();
        for (s, e) in entries.iter().enumerate() {
            rows.push(match e {
                Some(j) => {
                    let job = self.jobs.take(*j);
                    Row {
                        end: job.req.end,
                        request: Some(job.req),
                        slot: Some(s),
                        sequence: job.seq,
                    }
                }
                None => Row {
                    request: None,
                    slot: Some(s),
                    sequence: None,
                    end: false,
                },
            });
        }
        let size = entries.len() as u32;
        self.entries = entries;
        let b = self.start_batch(now, inst, None);
        b.size = size;
        b.rows = rows;
        b.sequence = true;
        b.slot_count = n;
    }
}
