//! Which allocation samples are still alive, without stopping the JVM.
//!
//! Every sampled object gets a slot here holding what the sample stands for (class, site, thread,
//! sampling weight, size) and a JNI weak global reference to the object. The worker asks the
//! references which objects the GC has cleared (`poll_deaths`), books those deaths and reuses the
//! slots; so after any GC it knows the surviving samples, and from them estimates the live heap
//! (`census/estimate/`) with no walk and no stop. This is the technique of JFR's `OldObjectSample` and
//! async-profiler's `--live`.
//!
//! Why weak references and not tags with `ObjectFree`: a tag is an insert into the VM's tag map
//! under its lock, on the allocating thread, and JDK 17 rehashes the whole map on the first tag
//! operation after every moving GC, which then lands on whichever application thread samples
//! first. Measured in the sampling callback (JDK 17, `CatalogLeak`): `SetTag` about 750 ns, a
//! weak reference about 60 ns. A walk still needs the samples tagged (it only sees tags), so the
//! worker tags the live ones just before it starts one (`for_untagged`), on its own thread.
//!
//! Memory is bounded: slots live in chunks allocated on first use, at most `capacity` slots;
//! past it a sample is not tracked (counted in `untracked`), and the estimate says so. Live
//! samples are about `live bytes / sampling interval` (a 1 GiB heap at 512 KiB holds ~2,000),
//! so the default capacity is only reached by tiny intervals on huge heaps.
//!
//! Concurrency: the sampling callback (application threads) claims a slot and fills it, the weak
//! reference included, before publishing it live; the walk (VM thread at a safepoint) reads slots
//! and marks the ones it sees; only the worker marks deaths, scans, frees slots and deletes their
//! references. No lock is held across a JVMTI or JNI call, so no path here can wait for a
//! safepoint while another waits for it.

use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Slots per chunk (72 bytes each: 4.5 MiB per chunk).
const CHUNK: usize = 1 << 16;
const _: () = assert!(std::mem::size_of::<Slot>() == 72);

/// What the JVM spends per tracked sample: its weak reference, one slot of the VM's `OopStorage`
/// (8 bytes, and a block header per 64).
pub const JVM_BYTES_PER_REF: u64 = 9;
/// ...and per sample tagged for a walk: one tag-map entry (a hashtable entry holding a weak
/// handle, its OopStorage slot and the tag; about 48 bytes in JDK 17's `JvmtiTagMapTable`).
pub const JVM_BYTES_PER_TAG: u64 = 48;

const STATE_SHIFT: u32 = 62;
const LIVE: u64 = 1 << STATE_SHIFT;
const DEAD: u64 = 2 << STATE_SHIFT;
const STATE_MASK: u64 = 3 << STATE_SHIFT;
/// Set once the worker has tagged the object for walks (`for_untagged`).
const TAGGED: u64 = 1 << 61;
/// Set when a path search through every root missed the sample, cleared when one reaches it:
/// the second miss in a row is its death ([`Tracker::unreached`]).
const MISSED: u64 = 1 << 60;
/// `meta` layout below the state bits: site (22) | thread (12) | one-in (4, as log2).
const THREAD_SHIFT: u32 = 22;
const ONE_IN_SHIFT: u32 = 34;

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
    /// When it was allocated, by the tracker's clocks (see [`Moment`]).
    pub birth: Moment,
    /// What a walk or a path search last saw holding it: `(class, field)`, the field's name as
    /// the worker's string id (`[]` for an array's element).
    pub holder: Option<(u32, u32)>,
    /// When it was seen so, milliseconds since the tracker started.
    pub seen_ms: u32,
    /// Sites were recorded for one sample in this many when it was taken: with one, it stands
    /// for this many samples' lives (`lifetimes.rs`).
    pub one_in: u32,
    /// The last path search through every root missed it, and none has reached it since (one
    /// more miss in a row is its death: [`Tracker::unreached`]).
    pub missed: bool,
    /// The object's identity hash when it was sampled (0: none).
    pub identity: u32,
}

/// A point in the application's life by the tracker's three clocks: wall time since the
/// tracker started, GCs finished, and bytes allocated (estimated from the samples: each one's
/// weight times its size).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Moment {
    pub ms: u32,
    pub gcs: u32,
    pub allocated: u64,
}

impl Sample {
    /// Whether a path search reached it from a GC root: alive then, whatever its weak
    /// reference says between old-generation markings (one a later search through every root
    /// missed has died: [`Tracker::unreached`]).
    pub fn reached(&self) -> bool {
        self.holder.is_some()
    }

    /// `(site, thread)` packed as the tree's sample key (the same packing the tag used to carry).
    pub fn key(&self) -> u64 {
        u64::from(self.site) | (u64::from(self.thread) << THREAD_SHIFT)
    }
}

/// The site packed in a sample key ([`Sample::key`]).
pub fn site_of(key: u64) -> u32 {
    (key & ((1 << THREAD_SHIFT) - 1)) as u32
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
    /// The JNI weak global reference to the object (a `jweak`).
    weak: AtomicUsize,
    /// The object's identity hash, taken with the sample (0: none), so that the path search
    /// can know the object when it meets it without resolving `weak` (see `paths/`).
    identity: AtomicU32,
    born_ms: AtomicU32,
    born_gcs: AtomicU32,
    born_allocated: AtomicU64,
    /// `class << 32 | field name id` of the last holder seen (0: none), in one word so a reader
    /// never pairs one sighting's class with another's field.
    holder: AtomicU64,
    seen_ms: AtomicU32,
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
    /// Bumped before and after every walk and at the end of every GC (see `census/estimate/`).
    generation: AtomicU32,
    /// The generation the last GC ended with: samples born before it have survived a GC.
    last_gc: AtomicU32,
    /// Weak references of slots freed by `sweep`, for the worker to delete.
    released: Mutex<Vec<usize>>,
    /// Live samples tagged for walks, at the last sweep.
    tagged: AtomicU64,
    /// The clocks of [`Moment`]: since when, GCs finished, bytes allocated (estimated).
    start: std::time::Instant,
    gcs: AtomicU32,
    allocated: AtomicU64,
    /// The clocks when the last GC finished: deaths are dated by the GC that cleared them.
    last_gc_ms: AtomicU32,
    allocated_at_gc: AtomicU64,
    /// Bytes of the objects whose samples hold a weak reference (live, or dead and not yet
    /// swept), and the most that may: unlimited but on a collector that keeps what a weak
    /// reference holds (`set_hold_limit`).
    held_bytes: AtomicU64,
    hold_limit: AtomicU64,
    /// Samples not followed for that limit (also counted in `untracked`).
    unheld: AtomicU64,
    #[cfg(test)]
    passed_ms: AtomicU32,
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
            released: Mutex::new(Vec::new()),
            tagged: AtomicU64::new(0),
            start: std::time::Instant::now(),
            gcs: AtomicU32::new(0),
            allocated: AtomicU64::new(0),
            last_gc_ms: AtomicU32::new(0),
            allocated_at_gc: AtomicU64::new(0),
            held_bytes: AtomicU64::new(0),
            hold_limit: AtomicU64::new(u64::MAX),
            unheld: AtomicU64::new(0),
            #[cfg(test)]
            passed_ms: AtomicU32::new(0),
        }
    }

    /// Follows at most `bytes` of sampled objects at a time, and none larger than a 256th of
    /// that; the sampler then follows only objects that reference nothing more (`refuse_graph`). Generational ZGC's young collections mark through every weak reference (JNI's,
    /// JVMTI's tags, `java.lang.ref`'s: its reference processing runs in major collections
    /// only), so each followed object stays, promoted, until a major collection: unbounded,
    /// one 256 KiB array sampled in two kept the heap at 940 MB where it was 78 MB alone.
    pub fn set_hold_limit(&self, bytes: u64) {
        self.hold_limit.store(bytes, Ordering::Relaxed);
    }

    /// Whether a hold limit is set: the collector keeps what weak references hold through
    /// its young collections (generational ZGC).
    pub fn hold_limited(&self) -> bool {
        self.hold_limit.load(Ordering::Relaxed) != u64::MAX
    }

    /// Samples not followed for the hold limit since the tracker started.
    pub fn unheld(&self) -> u64 {
        self.unheld.load(Ordering::Relaxed)
    }

    /// Gives back `size` bytes of the hold limit (a sample freed, or one that got no slot).
    /// Saturating: samples taken before the limit was set were never counted.
    fn unhold(&self, size: u64) {
        if self.hold_limit.load(Ordering::Relaxed) != u64::MAX {
            let _ = self
                .held_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                    Some(held.saturating_sub(size))
                });
        }
    }

    /// A sample not followed under the hold limit because its object references others,
    /// which holding it would keep too (see `Sampler::references_only_leaves`). Counted as
    /// one past the limit is.
    pub fn refuse_graph(&self, weight: f64, size: u64) {
        self.count_allocation(weight, size);
        self.unheld.fetch_add(1, Ordering::Relaxed);
        self.untracked.fetch_add(1, Ordering::Relaxed);
    }

    /// Moves the allocation clock by what one sample stands for, `weight` allocations of about
    /// its `size`, tracked or not; returns the clock after it.
    fn count_allocation(&self, weight: f64, size: u64) -> u64 {
        let bytes = (weight.max(1.0) * size as f64) as u64;
        self.allocated.fetch_add(bytes, Ordering::Relaxed) + bytes
    }

    /// Claims `size` bytes of the hold limit for a sample; false (counted) past it.
    fn hold(&self, size: u64) -> bool {
        let limit = self.hold_limit.load(Ordering::Relaxed);
        if limit == u64::MAX {
            // No count kept without a limit: one contended atomic less per sample on every
            // other collector. Samples taken before the limit was set are not in the count.
            return true;
        }
        let claimed = size <= limit / 256
            && self
                .held_bytes
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                    (held + size <= limit).then_some(held + size)
                })
                .is_ok();
        if !claimed {
            self.unheld.fetch_add(1, Ordering::Relaxed);
            self.untracked.fetch_add(1, Ordering::Relaxed);
        }
        claimed
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

    /// Claims a slot for a new sample and fills it, `weak` being the weak reference to its object
    /// (0 in tests) and `identity` its identity hash (0: none). `None` when every slot is taken
    /// (counted): the caller keeps the reference.
    // One caller, on the sampling path, passing what the event gave it: a struct would be
    // filled per sample only to be taken apart here.
    #[allow(clippy::too_many_arguments)]
    pub fn track(
        &self,
        class: u32,
        site: u32,
        thread: u32,
        weight: f64,
        size: u64,
        weak: usize,
        identity: u32,
        one_in: u32,
    ) -> Option<SlotId> {
        // Every sample moves the allocation clock, tracked or not.
        let allocated = self.count_allocation(weight, size);
        // As the slot keeps it (saturated), so that a sweep gives back what was claimed.
        let size = size.min(u64::from(u32::MAX));
        if !self.hold(size) {
            return None;
        }
        let reused = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let id = match reused {
            Some(id) => id,
            None => {
                let id = self.high.fetch_add(1, Ordering::AcqRel);
                if id >= self.capacity {
                    self.high.fetch_sub(1, Ordering::AcqRel);
                    self.untracked.fetch_add(1, Ordering::Relaxed);
                    self.unhold(size);
                    return None;
                }
                id
            }
        };
        let Some(slot) = self.slot_or_alloc(id) else {
            self.untracked.fetch_add(1, Ordering::Relaxed);
            self.unhold(size);
            return None;
        };
        slot.class.store(class, Ordering::Relaxed);
        slot.size
            .store(size.min(u64::from(u32::MAX)) as u32, Ordering::Relaxed);
        slot.born.store(self.generation(), Ordering::Relaxed);
        slot.weight
            .store((weight.max(1.0) as f32).to_bits(), Ordering::Relaxed);
        slot.seen.store(0, Ordering::Relaxed);
        slot.weak.store(weak, Ordering::Relaxed);
        slot.identity.store(identity, Ordering::Relaxed);
        slot.born_ms.store(self.ms(), Ordering::Relaxed);
        slot.born_gcs
            .store(self.gcs.load(Ordering::Relaxed), Ordering::Relaxed);
        slot.born_allocated.store(allocated, Ordering::Relaxed);
        slot.holder.store(0, Ordering::Relaxed);
        slot.seen_ms.store(0, Ordering::Relaxed);
        let meta = LIVE
            | u64::from(site & ((1 << THREAD_SHIFT) - 1))
            | (u64::from(thread & 0xfff) << THREAD_SHIFT)
            | (u64::from(one_in.max(1).ilog2().min(15)) << ONE_IN_SHIFT);
        // Release: whoever sees LIVE sees the fields above.
        slot.meta.store(meta, Ordering::Release);
        Some(id)
    }

    /// The object of slot `id` was freed, or it stopped being a sample (its tag was replaced by
    /// a class tag). Only an atomic `or`.
    pub fn died(&self, id: SlotId) {
        if let Some(slot) = self.slot(id) {
            slot.meta.fetch_or(DEAD, Ordering::AcqRel);
        }
    }

    /// Asks every live sample's weak reference whether the GC cleared it (`cleared(weak)`, a JNI
    /// `IsSameObject(weak, NULL)`), marks those dead and tells `dead` of each. Worker thread
    /// only. Returns the deaths.
    pub fn poll_deaths(
        &self,
        mut cleared: impl FnMut(usize) -> bool,
        mut dead: impl FnMut(&Sample),
    ) -> u64 {
        let mut deaths = 0;
        self.for_live(|id, slot, _| {
            let weak = slot.weak.load(Ordering::Relaxed);
            if weak != 0 && cleared(weak) {
                if let Some(sample) = self.get(id) {
                    dead(&sample);
                }
                self.died(id);
                deaths += 1;
            }
        });
        deaths
    }

    /// Visits each live sample not yet tagged for walks: `tag(id, weak)` tags its object and
    /// says whether that worked (false: the object is gone or is a class, and the sample ends).
    /// Worker thread only, before a walk.
    pub fn for_untagged(&self, mut tag: impl FnMut(SlotId, usize) -> bool) {
        self.for_live(|id, slot, meta| {
            let weak = slot.weak.load(Ordering::Relaxed);
            if meta & TAGGED != 0 || weak == 0 {
                return;
            }
            if tag(id, weak) {
                slot.meta.fetch_or(TAGGED, Ordering::AcqRel);
            } else {
                self.died(id);
            }
        });
    }

    /// Visits each live sample with its weak reference: `f(id, sample, weak)`. Worker thread only
    /// (only the worker frees slots and deletes their references, so `weak` stays valid until
    /// the worker's next sweep).
    pub fn for_each_live(&self, mut f: impl FnMut(SlotId, &Sample, usize)) {
        self.for_live(|id, slot, _| {
            let weak = slot.weak.load(Ordering::Relaxed);
            if let (false, Some(sample)) = (weak == 0, self.get(id)) {
                f(id, &sample, weak);
            }
        });
    }

    /// Visits each live sample: `f(sample)`.
    pub fn for_each_sample(&self, mut f: impl FnMut(&Sample)) {
        self.for_live(|id, _, _| {
            if let Some(sample) = self.get(id) {
                f(&sample);
            }
        });
    }

    /// Visits the slots that are live and not dead: `f(id, slot, meta)`.
    fn for_live(&self, mut f: impl FnMut(SlotId, &Slot, u64)) {
        let high = self.high.load(Ordering::Acquire).min(self.capacity);
        for id in 0..high {
            let Some(slot) = self.slot(id) else { continue };
            let meta = slot.meta.load(Ordering::Acquire);
            if meta & STATE_MASK == LIVE {
                f(id, slot, meta);
            }
        }
    }

    /// Hands every reference still held (live, dead, or freed and not yet taken) to `delete`
    /// and empties the tracker; for a detach.
    pub fn release_references(&self, delete: &mut impl FnMut(usize)) {
        let high = self.high.load(Ordering::Acquire).min(self.capacity);
        for id in 0..high {
            let Some(slot) = self.slot(id) else { continue };
            let reference = slot.weak.swap(0, Ordering::AcqRel);
            slot.meta.store(0, Ordering::Release);
            if reference != 0 {
                delete(reference);
            }
        }
        for reference in self.take_released() {
            delete(reference);
        }
    }

    /// The weak references of slots freed since the last call: the caller deletes them.
    pub fn take_released(&self) -> Vec<usize> {
        std::mem::take(&mut *self.released.lock().unwrap_or_else(|p| p.into_inner()))
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
            birth: Moment {
                ms: slot.born_ms.load(Ordering::Relaxed),
                gcs: slot.born_gcs.load(Ordering::Relaxed),
                allocated: slot.born_allocated.load(Ordering::Relaxed),
            },
            holder: match slot.holder.load(Ordering::Relaxed) {
                0 => None,
                h => Some(((h >> 32) as u32, h as u32)),
            },
            seen_ms: slot.seen_ms.load(Ordering::Relaxed),
            one_in: 1 << ((meta >> ONE_IN_SHIFT) & 0xf),
            missed: meta & MISSED != 0,
            identity: slot.identity.load(Ordering::Relaxed),
        })
    }

    /// A successful walk at generation `gen` reached this sample: it was alive then.
    pub fn mark_seen(&self, id: SlotId, gen: u32) {
        if let Some(slot) = self.slot(id) {
            slot.seen.store(gen, Ordering::Relaxed);
        }
    }

    /// A walk or a path search, `ms` after the tracker started, saw field `field` (a string id)
    /// of an object of class `class` holding the sample in slot `id`, born when the allocation
    /// clock read `born`: a slot freed and taken again since (a sliced search outlives its
    /// targets) is another sample, and gets nothing. Class 0 (not yet known) records nothing.
    /// Worker thread only (the only one that frees slots, so the check holds for the store).
    pub fn set_holder(&self, id: SlotId, born: u64, class: u32, field: u32, ms: u32) {
        let Some(slot) = self.slot(id) else { return };
        let live = slot.meta.load(Ordering::Acquire) & STATE_MASK == LIVE;
        if live && class != 0 && slot.born_allocated.load(Ordering::Relaxed) == born {
            slot.holder
                .store(u64::from(class) << 32 | u64::from(field), Ordering::Relaxed);
            slot.seen_ms.store(ms, Ordering::Relaxed);
            slot.meta.fetch_and(!MISSED, Ordering::AcqRel);
        }
    }

    /// A path search reached the sample in slot `id` born when the allocation clock read
    /// `born`: a miss before it no longer counts toward its death ([`Tracker::unreached`]).
    pub fn reached(&self, id: SlotId, born: u64) {
        let Some(slot) = self.slot(id) else { return };
        if slot.born_allocated.load(Ordering::Relaxed) == born {
            slot.meta.fetch_and(!MISSED, Ordering::AcqRel);
        }
    }

    /// A path search that went through every root did not reach the sample in slot `id` born
    /// when the allocation clock read `born` (as [`Tracker::set_holder`]): no GC root held it,
    /// so it is garbage, whatever its weak reference says until the GC that frees it (an
    /// old-generation marking, or on generational ZGC a major collection, may be long in
    /// coming). The second such search in a row, with none reaching it between, ends it: the
    /// estimates stop counting it and its weak reference goes at the next sweep. Its holder
    /// stays, for the lifetimes to name as the death's context. Worker thread only.
    ///
    /// Why two: the search runs while the application does, so an object moved from a
    /// container it had not reached yet into one it had passed is missed though alive. A map
    /// growing past its table does that to every entry not yet moved (they hang from the
    /// resizing frame's local alone), so one search during a start-up fill missed thousands
    /// of a catalog's live strings at once, and the walk that found them again made a step the
    /// trends took for growth. Two searches in a row never meet the same resize.
    pub fn unreached(&self, id: SlotId, born: u64) {
        let Some(slot) = self.slot(id) else { return };
        let meta = slot.meta.load(Ordering::Acquire);
        if meta & STATE_MASK == LIVE && slot.born_allocated.load(Ordering::Relaxed) == born {
            let missed = if meta & MISSED != 0 { DEAD } else { MISSED };
            slot.meta.fetch_or(missed, Ordering::AcqRel);
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
        let mut released = Vec::new();
        let mut tagged = 0;
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
                let weak = slot.weak.swap(0, Ordering::Relaxed);
                if weak != 0 {
                    released.push(weak);
                }
                let size = u64::from(slot.size.load(Ordering::Relaxed));
                self.unhold(size);
                slot.meta.store(0, Ordering::Release);
                freed.push(id);
            } else if meta & TAGGED != 0 {
                tagged += 1;
            }
        }
        self.tagged.store(tagged, Ordering::Relaxed);
        if !released.is_empty() {
            self.released
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(released);
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

    /// Bytes this tracker holds (allocated chunks) plus what its weak references and tags cost
    /// the JVM (tags as of the last sweep).
    pub fn memory(&self) -> (u64, u64) {
        let chunks = self
            .chunks
            .iter()
            .filter(|c| !c.load(Ordering::Acquire).is_null())
            .count() as u64;
        let agent = chunks * (CHUNK * std::mem::size_of::<Slot>()) as u64;
        let jvm = self.in_use() * JVM_BYTES_PER_REF
            + self.tagged.load(Ordering::Relaxed) * JVM_BYTES_PER_TAG;
        (agent, jvm)
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

    /// A GC ended (called from `GarbageCollectionFinish`: atomics and the clock only). Samples
    /// taken before now have been through a GC.
    pub fn gc_finished(&self) {
        let generation = self.advance();
        self.last_gc.store(generation, Ordering::Release);
        self.last_gc_ms.store(self.ms(), Ordering::Relaxed);
        self.allocated_at_gc
            .store(self.allocated.load(Ordering::Relaxed), Ordering::Relaxed);
        self.gcs.fetch_add(1, Ordering::Release);
    }

    /// Milliseconds since the tracker started (wraps after 49 days: see [`Tracker::unwrap_ms`]).
    pub fn ms(&self) -> u32 {
        let ms = self.start.elapsed().as_millis() as u32;
        #[cfg(test)]
        let ms = ms + self.passed_ms.load(Ordering::Relaxed);
        ms
    }

    /// Moves the clocks' milliseconds on, as if `ms` had passed.
    #[cfg(test)]
    pub fn pass_ms(&self, ms: u32) {
        self.passed_ms.fetch_add(ms, Ordering::Relaxed);
    }

    /// A time of [`Tracker::ms`]'s, taken less than 49 days ago, as whole milliseconds since
    /// the tracker started.
    pub fn unwrap_ms(&self, ms: u32) -> u64 {
        let now = self.start.elapsed().as_millis() as u64;
        now.saturating_sub(u64::from((now as u32).wrapping_sub(ms)))
    }

    /// Bytes allocated since the tracker started, estimated from the samples.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// The clocks when the last GC finished: the moment of the deaths found since.
    pub fn last_gc_moment(&self) -> Moment {
        Moment {
            gcs: self.gcs.load(Ordering::Acquire),
            ms: self.last_gc_ms.load(Ordering::Relaxed),
            allocated: self.allocated_at_gc.load(Ordering::Relaxed),
        }
    }

    /// The generation the last GC ended with (0: none yet).
    pub fn last_gc(&self) -> u32 {
        self.last_gc.load(Ordering::Acquire)
    }
}

impl Tracker {
    /// Frees every slot's memory (a detach: the agent's struct stays, as a `&'static` may
    /// still name it, but what it tracked goes back to the process). Every sample is gone;
    /// a later `track` would allocate afresh.
    ///
    /// # Safety
    /// No other thread may use the tracker during or after the call: the sampling callbacks
    /// are off and drained, the worker has ended and no walk runs.
    pub unsafe fn release_memory(&self) {
        self.free_chunks();
        *self.free.lock().unwrap_or_else(|p| p.into_inner()) = Vec::new();
        *self.released.lock().unwrap_or_else(|p| p.into_inner()) = Vec::new();
        self.high.store(0, Ordering::Release);
        self.held_bytes.store(0, Ordering::Release);
    }

    fn free_chunks(&self) {
        for chunk in self.chunks.iter() {
            let base = chunk.swap(std::ptr::null_mut(), Ordering::AcqRel);
            if !base.is_null() {
                // SAFETY: allocated by `slot_or_alloc` as a CHUNK-long boxed slice; no one else
                // holds it once the tracker is dropped (or, by `release_memory`'s contract,
                // used).
                drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(base, CHUNK)) });
            }
        }
    }
}

impl Drop for Tracker {
    fn drop(&mut self) {
        self.free_chunks();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_round_trip_and_die() {
        let t = Tracker::new(10);
        let code = 100.0;
        let a = t.track(7, 5, 3, code, 24, 0x70, 0x5eed, 1).unwrap();
        let b = t.track(8, 6, 4, code, 1 << 40, 0x80, 0, 1).unwrap();
        let s = t.get(a).unwrap();
        assert_eq!((s.class, s.site, s.thread, s.size), (7, 5, 3, 24));
        assert_eq!(s.identity, 0x5eed);
        assert_eq!(s.weight, 100.0);
        assert_eq!(t.get(b).unwrap().size, u64::from(u32::MAX));
        assert_eq!(t.in_use(), 2);
        t.died(a);
        let mut seen = Vec::new();
        t.sweep(|id, s, dead| seen.push((id, s.class, dead)));
        assert_eq!(seen, [(a, 7, true), (b, 8, false)]);
        assert_eq!(t.in_use(), 1);
        assert_eq!(
            t.take_released(),
            [0x70],
            "a freed slot's reference is handed back once"
        );
        assert!(t.take_released().is_empty());
        assert!(t.get(a).is_none(), "a swept dead slot is free");
        // The freed slot is reused before the table grows.
        assert_eq!(t.track(9, 1, 1, code, 16, 0, 0, 1), Some(a));
    }

    /// A sample is born at the tracker's clocks; a GC moves them; a walk's holder is kept in
    /// one word; the allocation clock counts untracked samples too.
    #[test]
    fn samples_carry_their_birth_and_last_holder() {
        let t = Tracker::new(1);
        let a = t.track(7, 5, 3, 10.0, 24, 0, 0, 1).unwrap();
        let born = t.get(a).unwrap();
        assert_eq!((born.birth.gcs, born.birth.allocated), (0, 240));
        assert_eq!(born.holder, None);
        assert!(
            t.track(7, 5, 3, 10.0, 100, 0, 0, 1).is_none(),
            "the table is full"
        );
        assert_eq!(t.allocated(), 1240);
        t.gc_finished();
        let gc = t.last_gc_moment();
        assert_eq!((gc.gcs, gc.allocated), (1, 1240));
        t.set_holder(a, 240, 9, 4, 77);
        let seen = t.get(a).unwrap();
        assert_eq!(seen.holder, Some((9, 4)));
        assert_eq!(seen.seen_ms, 77);
        assert_eq!(seen.birth, born.birth, "birth does not move");
        t.set_holder(a, 240, 0, 1, 78);
        assert_eq!(
            t.get(a).unwrap().seen_ms,
            77,
            "an unknown class records nothing"
        );
        t.set_holder(a, 999, 9, 5, 79);
        assert_eq!(
            t.get(a).unwrap().holder,
            Some((9, 4)),
            "another sample's holder (born at another time) is not taken"
        );
        assert_eq!(t.unwrap_ms(t.ms()), u64::from(t.ms()));
    }

    /// Under a hold limit (generational ZGC) objects past a 256th of it are never followed,
    /// and the rest only while their bytes fit; a swept death gives its bytes back.
    #[test]
    fn a_hold_limit_bounds_the_bytes_followed() {
        let t = Tracker::new(1024);
        t.set_hold_limit(256 * 1024);
        assert_eq!(t.track(1, 0, 0, 1.0, 2048, 1, 0, 1), None, "past a 256th");
        let first = t.track(1, 0, 0, 1.0, 1024, 2, 0, 1).expect("fits");
        for weak in 3..258 {
            t.track(1, 0, 0, 1.0, 1024, weak, 0, 1).expect("fits");
        }
        assert_eq!(
            t.track(1, 0, 0, 1.0, 1024, 300, 0, 1),
            None,
            "the limit is full"
        );
        assert_eq!((t.unheld(), t.untracked()), (2, 2));
        t.died(first);
        t.sweep(|_, _, _| {});
        assert!(
            t.track(1, 0, 0, 1.0, 1024, 301, 0, 1).is_some(),
            "a death made room"
        );
    }

    #[test]
    fn a_full_table_counts_what_it_cannot_track() {
        let t = Tracker::new(2);
        assert!(t.track(1, 1, 1, 1.0, 8, 0, 0, 1).is_some());
        assert!(t.track(1, 1, 1, 1.0, 8, 0, 0, 1).is_some());
        assert!(t.track(1, 1, 1, 1.0, 8, 0, 0, 1).is_none());
        assert_eq!(t.untracked(), 1);
        assert_eq!(t.in_use(), 2);
        let (agent, jvm) = t.memory();
        assert!(agent > 0 && jvm == 2 * JVM_BYTES_PER_REF);
    }

    #[test]
    fn slots_span_chunks() {
        let t = Tracker::new(CHUNK as u32 + 5);
        for i in 0..(CHUNK as u32 + 5) {
            assert_eq!(t.track(i, 1, 1, 1.0, 8, 0, 0, 1), Some(i));
        }
        assert_eq!(t.get(CHUNK as u32 + 4).unwrap().class, CHUNK as u32 + 4);
        t.mark_seen(CHUNK as u32, 9);
        assert_eq!(t.get(CHUNK as u32).unwrap().seen, 9);
    }

    #[test]
    fn deaths_come_from_cleared_references_and_tagging_once() {
        let t = Tracker::new(10);
        let a = t.track(1, 1, 1, 1.0, 8, 0xa0, 0, 1).unwrap();
        let b = t.track(2, 1, 1, 1.0, 8, 0xb0, 0, 1).unwrap();
        let mut asked = Vec::new();
        t.for_untagged(|id, weak| {
            asked.push((id, weak));
            weak == 0xa0 // b's object turns out to be gone
        });
        assert_eq!(asked, [(a, 0xa0), (b, 0xb0)]);
        asked.clear();
        t.for_untagged(|id, weak| {
            asked.push((id, weak));
            true
        });
        assert!(
            asked.is_empty(),
            "a is tagged already and b is dead: {asked:?}"
        );
        // Only live, not yet dead samples are asked; a second poll books nothing twice.
        let mut told = Vec::new();
        assert_eq!(
            t.poll_deaths(|weak| weak == 0xa0, |s| told.push(s.class)),
            1
        );
        assert_eq!(t.poll_deaths(|_| true, |s| told.push(s.class)), 0);
        assert_eq!(told, [1], "each death is told once");
        let mut dead = Vec::new();
        t.sweep(|id, _, d| dead.push((id, d)));
        assert_eq!(dead, [(a, true), (b, true)]);
        let mut released = t.take_released();
        released.sort();
        assert_eq!(released, [0xa0, 0xb0]);
        assert_eq!(t.in_use(), 0);
    }
}
