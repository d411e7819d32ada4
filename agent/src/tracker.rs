//! Which allocation samples are still alive, without stopping the JVM.
//!
//! Every sampled object gets a slot here, and its JVMTI tag is the slot's number (see `tags.rs`).
//! The slot holds what the sample stands for: class, site, thread, sampling weight and size.
//! When the GC frees a tagged object, the JVM posts `ObjectFree` with its tag: the handler marks
//! the slot dead (one atomic `or`), and the worker later books the death and reuses the slot.
//! So after any GC the worker knows the surviving samples, and from them estimates the live heap
//! (`estimate.rs`) with no walk and no stop. This is the technique of JFR's `OldObjectSample`
//! and async-profiler's `--live` (they hold weak references; tags plus `ObjectFree` do the same
//! for an agent that already tags its samples).
//!
//! Memory is bounded: slots live in chunks allocated on first use, at most `capacity` slots;
//! past it a sample is not tracked (counted in `untracked`), and the estimate says so. Live
//! samples are about `live bytes / sampling interval` (a 1 GiB heap at 512 KiB holds ~2,000),
//! so the default capacity is only reached by tiny intervals on huge heaps.
//!
//! Concurrency: the sampling callback (application threads) claims a slot and fills it before
//! tagging the object; `ObjectFree` (a VM thread) only sets the dead bit; the walk (VM thread at a
//! safepoint) reads slots and marks the ones it sees; the worker scans, books deaths and frees
//! slots. No lock is held across a JVMTI call, so no path here can wait for a safepoint while
//! another waits for it.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// Slots per chunk (28 bytes each: 1.75 MiB per chunk).
const CHUNK: usize = 1 << 16;

/// What the JVM spends per tracked sample: one tag-map entry (a hashtable entry holding a weak
/// handle, its OopStorage slot and the tag; about 48 bytes in JDK 17's `JvmtiTagMapTable`).
pub const JVM_BYTES_PER_TAG: u64 = 48;

const STATE_SHIFT: u32 = 62;
const LIVE: u64 = 1 << STATE_SHIFT;
const DEAD: u64 = 2 << STATE_SHIFT;
const STATE_MASK: u64 = 3 << STATE_SHIFT;
/// `meta` layout below the state bits: site (22) | thread (12).
const THREAD_SHIFT: u32 = 22;

/// One sample as the worker and the walk see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub class: u32,
    pub site: u32,
    pub thread: u32,
    /// Allocations this sample stands for (the inverse of its probability of being sampled).
    pub weight: f64,
    /// The object's size in bytes (saturated at 4 GiB).
    pub size: u64,
    /// Tracker generation when the sample was taken (see [`Tracker::generation`]).
    pub born: u32,
    /// Generation of the last walk that found it alive (0: none).
    pub seen: u32,
}

impl Sample {
    /// `(site, thread)` packed as the tree's sample key (the same packing the tag used to carry).
    pub fn key(&self) -> u64 {
        u64::from(self.site) | (u64::from(self.thread) << THREAD_SHIFT)
    }
}

#[derive(Default)]
struct Slot {
    /// State (2 bits) | thread | site.
    meta: AtomicU64,
    class: AtomicU32,
    /// The weight as `f32` bits: a coarser code (an earlier 10-bit one) biased every type of
    /// one object size by the same fraction of a percent, which no number of samples averages
    /// out.
    weight: AtomicU32,
    size: AtomicU32,
    born: AtomicU32,
    seen: AtomicU32,
}

pub struct Tracker {
    chunks: Box<[AtomicPtr<Slot>]>,
    capacity: u32,
    /// Slots ever handed out; slots `0..high` may be in use.
    high: AtomicU32,
    /// Slots the worker freed, for reuse. Never held across a JVMTI call.
    free: Mutex<Vec<u32>>,
    /// Samples not tracked because every slot was taken.
    untracked: AtomicU64,
    /// Bumped before and after every walk and at the end of every GC (see `estimate.rs`).
    generation: AtomicU32,
    /// The generation the last GC ended with: samples born before it have survived a GC.
    last_gc: AtomicU32,
    /// Deaths reported so far: while this moves, the JVM is still posting a GC's `ObjectFree`s.
    deaths: AtomicU64,
}

/// A slot's index, or why there is none.
pub type SlotId = u32;

impl Tracker {
    pub fn new(capacity: u32) -> Self {
        let capacity = capacity.max(1);
        let chunks = (capacity as usize).div_ceil(CHUNK);
        Self {
            chunks: (0..chunks)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
            capacity,
            high: AtomicU32::new(0),
            free: Mutex::new(Vec::new()),
            untracked: AtomicU64::new(0),
            generation: AtomicU32::new(2),
            last_gc: AtomicU32::new(0),
            deaths: AtomicU64::new(0),
        }
    }

    fn slot(&self, id: SlotId) -> Option<&Slot> {
        let chunk = self.chunks.get(id as usize / CHUNK)?;
        let base = chunk.load(Ordering::Acquire);
        if base.is_null() {
            return None;
        }
        // SAFETY: a non-null chunk pointer points at CHUNK initialized slots that live as long as
        // the tracker (chunks are never freed before `Drop`).
        Some(unsafe { &*base.add(id as usize % CHUNK) })
    }

    /// The chunk holding `id`, allocated on first use.
    fn slot_or_alloc(&self, id: SlotId) -> Option<&Slot> {
        if let Some(slot) = self.slot(id) {
            return Some(slot);
        }
        let chunk = self.chunks.get(id as usize / CHUNK)?;
        let fresh: Box<[Slot]> = (0..CHUNK).map(|_| Slot::default()).collect();
        let fresh = Box::into_raw(fresh).cast::<Slot>();
        if chunk
            .compare_exchange(
                std::ptr::null_mut(),
                fresh,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // Another thread allocated it first.
            // SAFETY: `fresh` came from `Box::into_raw` of a CHUNK-long slice just above and was
            // never shared.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(fresh, CHUNK)) });
        }
        self.slot(id)
    }

    /// Claims a slot for a new sample and fills it; the caller then tags the object with
    /// `tags::sample_tag(id)`. `None` when every slot is taken (counted).
    pub fn track(
        &self,
        class: u32,
        site: u32,
        thread: u32,
        weight: f64,
        size: u64,
    ) -> Option<SlotId> {
        let reused = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let id = match reused {
            Some(id) => id,
            None => {
                let id = self.high.fetch_add(1, Ordering::AcqRel);
                if id >= self.capacity {
                    self.high.fetch_sub(1, Ordering::AcqRel);
                    self.untracked.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
                id
            }
        };
        let Some(slot) = self.slot_or_alloc(id) else {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        slot.class.store(class, Ordering::Relaxed);
        slot.size
            .store(size.min(u64::from(u32::MAX)) as u32, Ordering::Relaxed);
        slot.born.store(self.generation(), Ordering::Relaxed);
        slot.weight
            .store((weight.max(1.0) as f32).to_bits(), Ordering::Relaxed);
        slot.seen.store(0, Ordering::Relaxed);
        let meta = LIVE
            | u64::from(site & ((1 << THREAD_SHIFT) - 1))
            | (u64::from(thread & 0xfff) << THREAD_SHIFT);
        // Release: whoever sees LIVE sees the fields above.
        slot.meta.store(meta, Ordering::Release);
        Some(id)
    }

    /// The object tagged with slot `id` was freed (`ObjectFree`), or its tag was replaced.
    /// Only an atomic `or`: this runs on VM threads, in JDK 11 even inside the GC.
    pub fn died(&self, id: SlotId) {
        if let Some(slot) = self.slot(id) {
            slot.meta.fetch_or(DEAD, Ordering::AcqRel);
        }
        self.deaths.fetch_add(1, Ordering::Relaxed);
    }

    /// Deaths reported so far (see `deaths`).
    pub fn deaths(&self) -> u64 {
        self.deaths.load(Ordering::Relaxed)
    }

    /// Reads a live (or dead but not yet booked) sample.
    pub fn get(&self, id: SlotId) -> Option<Sample> {
        let slot = self.slot(id)?;
        let meta = slot.meta.load(Ordering::Acquire);
        if meta & STATE_MASK == 0 {
            return None;
        }
        Some(Sample {
            class: slot.class.load(Ordering::Relaxed),
            site: (meta & ((1 << THREAD_SHIFT) - 1)) as u32,
            thread: ((meta >> THREAD_SHIFT) & 0xfff) as u32,
            weight: f64::from(f32::from_bits(slot.weight.load(Ordering::Relaxed))),
            size: u64::from(slot.size.load(Ordering::Relaxed)),
            born: slot.born.load(Ordering::Relaxed),
            seen: slot.seen.load(Ordering::Relaxed),
        })
    }

    /// A successful walk at generation `gen` reached this sample: it was alive then.
    pub fn mark_seen(&self, id: SlotId, gen: u32) {
        if let Some(slot) = self.slot(id) {
            slot.seen.store(gen, Ordering::Relaxed);
        }
    }

    /// Sets the class of a sample whose class was not tagged yet when it was taken.
    pub fn set_class(&self, id: SlotId, class: u32) {
        if let Some(slot) = self.slot(id) {
            slot.class.store(class, Ordering::Relaxed);
        }
    }

    /// Visits every slot in use: `f(id, sample, dead)`. Dead slots are freed after `f` returns
    /// (the worker books their death in `f`). Worker thread only.
    pub fn sweep(&self, mut f: impl FnMut(SlotId, &Sample, bool)) {
        let high = self.high.load(Ordering::Acquire).min(self.capacity);
        let mut freed = Vec::new();
        for id in 0..high {
            let Some(slot) = self.slot(id) else { continue };
            let meta = slot.meta.load(Ordering::Acquire);
            if meta & STATE_MASK == 0 {
                continue;
            }
            let dead = meta & DEAD != 0;
            if let Some(sample) = self.get(id) {
                f(id, &sample, dead);
            }
            if dead {
                slot.meta.store(0, Ordering::Release);
                freed.push(id);
            }
        }
        if !freed.is_empty() {
            self.free
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(freed);
        }
    }

    /// Samples in use now (live, or dead and not yet swept).
    pub fn in_use(&self) -> u64 {
        let high = self.high.load(Ordering::Acquire).min(self.capacity);
        let free = self.free.lock().unwrap_or_else(|p| p.into_inner()).len() as u32;
        u64::from(high.saturating_sub(free))
    }

    pub fn untracked(&self) -> u64 {
        self.untracked.load(Ordering::Relaxed)
    }

    /// Bytes this tracker holds (allocated chunks) plus what its tags cost the JVM.
    pub fn memory(&self) -> (u64, u64) {
        let chunks = self
            .chunks
            .iter()
            .filter(|c| !c.load(Ordering::Acquire).is_null())
            .count() as u64;
        let agent = chunks * (CHUNK * std::mem::size_of::<Slot>()) as u64;
        (agent, self.in_use() * JVM_BYTES_PER_TAG)
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub fn generation(&self) -> u32 {
        self.generation.load(Ordering::Acquire)
    }

    /// Advances the generation; returns the new one.
    pub fn advance(&self) -> u32 {
        self.generation.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A GC ended (called from `GarbageCollectionFinish`: atomics only). Samples taken before
    /// now have been through a GC.
    pub fn gc_finished(&self) {
        let generation = self.advance();
        self.last_gc.store(generation, Ordering::Release);
    }

    /// The generation the last GC ended with (0: none yet).
    pub fn last_gc(&self) -> u32 {
        self.last_gc.load(Ordering::Acquire)
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        for chunk in self.chunks.iter() {
            let base = chunk.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !base.is_null() {
                // SAFETY: allocated by `slot_or_alloc` as a CHUNK-long boxed slice; no one else
                // holds it once the tracker is dropped.
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(base, CHUNK)) });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_and_die() {
        let t = Tracker::new(10);
        let code = 100.0;
        let a = t.track(7, 5, 3, code, 24).unwrap();
        let b = t.track(8, 6, 4, code, 1 << 40).unwrap();
        let s = t.get(a).unwrap();
        assert_eq!((s.class, s.site, s.thread, s.size), (7, 5, 3, 24));
        assert_eq!(s.weight, 100.0);
        assert_eq!(t.get(b).unwrap().size, u64::from(u32::MAX));
        assert_eq!(t.in_use(), 2);
        t.died(a);
        let mut seen = Vec::new();
        t.sweep(|id, s, dead| seen.push((id, s.class, dead)));
        assert_eq!(seen, [(a, 7, true), (b, 8, false)]);
        assert_eq!(t.in_use(), 1);
        assert!(t.get(a).is_none(), "a swept dead slot is free");
        // The freed slot is reused before the table grows.
        assert_eq!(t.track(9, 1, 1, code, 16), Some(a));
    }

    #[test]
    fn a_full_table_counts_what_it_cannot_track() {
        let t = Tracker::new(2);
        assert!(t.track(1, 1, 1, 1.0, 8).is_some());
        assert!(t.track(1, 1, 1, 1.0, 8).is_some());
        assert!(t.track(1, 1, 1, 1.0, 8).is_none());
        assert_eq!(t.untracked(), 1);
        assert_eq!(t.in_use(), 2);
        let (agent, jvm) = t.memory();
        assert!(agent > 0 && jvm == 2 * JVM_BYTES_PER_TAG);
    }

    #[test]
    fn slots_span_chunks() {
        let t = Tracker::new(CHUNK as u32 + 5);
        for i in 0..(CHUNK as u32 + 5) {
            assert_eq!(t.track(i, 1, 1, 1.0, 8), Some(i));
        }
        assert_eq!(t.get(CHUNK as u32 + 4).unwrap().class, CHUNK as u32 + 4);
        t.mark_seen(CHUNK as u32, 9);
        assert_eq!(t.get(CHUNK as u32).unwrap().seen, 9);
    }
}
