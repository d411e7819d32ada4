//! Allocation sampling: `SampledObjectAlloc` records a sampled object's class, allocation site,
//! thread, size and weight in a tracker slot (`tracker.rs`), with a weak reference to the object.
//! The callback runs on the allocating application thread, so it does the least it can: read the
//! top frames (only while a `site` level asks for them) and intern them under a short lock, find
//! the class's id in a lock-free cache, claim a slot, make one weak reference. It never touches
//! the VM's tag map, whose lock and post-GC rehash would land on the application (see
//! `tracker.rs`). Method and thread names are resolved later, on the agent's own thread. Each
//! step is timed (`SampleCost`), so the cost is measured where it is paid, not guessed.

mod class_cache;
pub(crate) mod lifetimes;
mod sites;
pub(crate) mod tracker;

use class_cache::ClassCache;
pub use sites::{site_of, MethodNames};

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::jvmti::sys::jthread;
use jni::sys::{jlong, jmethodID, jobject, JNIEnv};

use crate::jvmti::sys;
use crate::jvmti::tags;
use crate::jvmti::{weak, Jvmti};
use crate::options::MAX_SITE_FRAMES;
use crate::sampling::tracker::Tracker;
use memcity_proto::frames::is_library_frame;

/// Most garbage [`prime`] allocates before it gives up.
const PRIME_MAX_BYTES: usize = 64 << 20;
/// The arrays [`prime`] allocates: small against any TLAB's refill-waste limit, so each one
/// lands in the TLAB, and the one that does not fit retires it.
const PRIME_ARRAY: i32 = 1024;

thread_local! {
    /// Samples seen on this thread while [`prime`] runs on it (`None`: not priming).
    static PRIMING: std::cell::Cell<Option<u32>> = const { std::cell::Cell::new(None) };
}

/// Makes the current thread's TLAB sample. Before JDK 25, HotSpot arms a thread's sampling
/// point inside its TLAB only when it samples or refills the TLAB; a TLAB filled before
/// sampling was on (the main thread's, handed out while the JDK started) has none, so
/// everything the thread allocates in it goes unsampled, up to a whole TLAB (measured: 50,000
/// objects made first thing in `main` came out 20 % short on a 1 GB G1 heap, 60-70 % short on
/// 4 GB, where TLABs are larger; exact on JDK 25). So at VM init, on the main thread, the agent
/// allocates small garbage arrays until two samples have come on this thread: the first comes
/// when the TLAB refills (and arms the sampling point), the second from that point. It costs
/// about a TLAB plus one sampling interval of short-lived garbage (a few MB, a millisecond),
/// and no stop. Those samples are not tracked (see [`Sampler::on_sample`]).
///
/// # Safety
/// `jni` must be the current thread's JNIEnv.
pub unsafe fn prime(jni: *mut JNIEnv) -> (u32, usize) {
    PRIMING.with(|p| p.set(Some(0)));
    let mut allocated = 0;
    // SAFETY: per contract; every function is in the JNI table since 1.1.
    unsafe {
        let (Some(new_array), Some(delete), Some(check), Some(clear)) = (
            (**jni).NewByteArray,
            (**jni).DeleteLocalRef,
            (**jni).ExceptionCheck,
            (**jni).ExceptionClear,
        ) else {
            return (0, 0);
        };
        while allocated < PRIME_MAX_BYTES && PRIMING.with(|p| p.get().unwrap_or(0)) < 2 {
            let array = new_array(jni, PRIME_ARRAY);
            if check(jni) == jni::sys::JNI_TRUE {
                clear(jni); // an OutOfMemoryError: give up quietly
                break;
            }
            if !array.is_null() {
                delete(jni, array);
            }
            allocated += PRIME_ARRAY as usize;
        }
    }
    let samples = PRIMING.with(|p| p.replace(None)).unwrap_or(0);
    (samples, allocated)
}

/// A `SampledObjectAlloc` event's arguments.
pub struct Allocation {
    /// The allocating thread's JNIEnv (the event comes on that thread).
    pub jni: *mut JNIEnv,
    pub thread: jthread,
    pub object: jobject,
    pub klass: jni::sys::jclass,
    pub size: jlong,
}

/// One frame of a site: method and bytecode index.
pub type Frame = (usize, i64);

#[derive(Default)]
struct Sites {
    /// Hashed with the walk's integer hasher: this runs on application threads.
    ids: crate::intmap::IntMap<Vec<Frame>, u32>,
    /// Index `id - 1`.
    frames: Vec<Vec<Frame>>,
}

struct Threads {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    /// By thread id (0 stands for none): whether the thread is memcity's own, decided once,
    /// when its name is first seen.
    memcity: Vec<bool>,
}

impl Default for Threads {
    fn default() -> Self {
        Self {
            ids: HashMap::new(),
            names: Vec::new(),
            memcity: vec![false],
        }
    }
}

/// Whether thread `id` is memcity's own, in `memcity` ([`Sampler::memcity_threads`]); ids past
/// it (a thread named since) and the overflow id are not.
pub fn is_memcity(memcity: &[bool], id: u32) -> bool {
    memcity.get(id as usize).copied().unwrap_or(false)
}

/// Whether a thread is one of memcity's own: its named threads, and JFR's when memcity's stream
/// is the JVM's only JFR.
pub fn is_memcity_thread(name: &str) -> bool {
    name.starts_with("memcity-") || crate::census::gc_counts::is_our_jfr_thread(name)
}

/// Whether a class is one of memcity's own (its JFR helper).
pub fn is_memcity_class(name: &str) -> bool {
    name.starts_with("memcity.")
}

pub struct Sampler {
    /// Bytes between samples to start with; 0 samples every allocation.
    base_interval: u64,
    /// The least interval the cost control may lower it to.
    floor: u64,
    /// Bytes between samples now: raised above the base when the sample rate passes its cap
    /// (see [`Sampler::adapt`]), and read by every sample for its weight.
    interval: AtomicU64,
    frames: usize,
    /// Which samples record their allocation site: one in this many (0: none). Every one while
    /// the classifier chain has a `site` level; one in [`LIFETIME_SITES_EVERY`] for lifetimes
    /// alone. The stack trace is most of a sample's cost (decoding compiled frames takes
    /// microseconds), and type, package and thread levels do not need it.
    sites_every: AtomicU32,
    /// Samples counted toward `sites_every`.
    site_turn: AtomicU32,
    sites: Mutex<Sites>,
    threads: Mutex<Threads>,
    samples: AtomicU64,
    cost: SampleCost,
    pub tracker: Tracker,
    classes: ClassCache,
    /// By class id, whether the class's objects reference nothing that could hold more
    /// ([`Sampler::references_only_leaves`]): 0 not looked up yet, 1 yes, 2 no. Read only while a hold
    /// limit is set; class ids past the table are looked up every time.
    leaves: Box<[AtomicU8]>,
    /// Serializes "class untagged? then tag it" between sampling threads and the class table, so
    /// a class never gets two ids. Never held while waiting for anything but that one tag.
    class_tagging: Mutex<()>,
}

/// Nanoseconds spent in each step of the sampling callback, summed over all samples: where a
/// sample's cost goes (see BENCHMARKS.md).
#[derive(Default)]
pub struct SampleCost {
    pub total: AtomicU64,
    /// `GetStackTrace` of the top frames.
    pub stack: AtomicU64,
    /// Interning the frames as a site id (a shared map under a lock).
    pub site: AtomicU64,
    /// The thread id (JVMTI thread-local storage; the name once per thread).
    pub thread: AtomicU64,
    /// The class's id (the mirror's identity hash into `ClassCache`; on a miss, its tag).
    pub class: AtomicU64,
    /// Claiming a tracker slot and the weak reference to the object.
    pub track: AtomicU64,
}

/// Whether no instance field of `class` or of its superclasses can hold a reference. Unknown
/// (an error) counts as a reference.
///
/// # Safety
/// `jni` must be the current thread's JNIEnv and `class` a valid reference in it.
unsafe fn no_reference_fields(jvmti: &Jvmti, jni: *mut JNIEnv, class: jni::sys::jclass) -> bool {
    const ACC_STATIC: jni::sys::jint = 0x0008;
    let mut at = class;
    let mut none = true;
    while none && !at.is_null() {
        none = jvmti.class_fields(at).is_ok_and(|fields| {
            fields.as_slice().iter().all(|&field| {
                jvmti
                    .field_modifiers(at, field)
                    .is_ok_and(|m| m & ACC_STATIC != 0)
                    || jvmti
                        .field_name(at, field)
                        .is_ok_and(|(_, sig)| !sig.to_string_lossy().starts_with(['L', '[']))
            })
        });
        // SAFETY: per the contract; GetSuperclass and DeleteLocalRef are in every JNI table.
        // The superclasses' local references are deleted as the climb goes: the callback runs
        // in the application's own frame.
        let next = unsafe {
            match (**jni).GetSuperclass {
                Some(superclass) => superclass(jni, at),
                None => std::ptr::null_mut(),
            }
        };
        if at != class {
            // SAFETY: as above; `at` is a superclass reference made in this loop.
            unsafe {
                if let Some(delete) = (**jni).DeleteLocalRef {
                    delete(jni, at);
                }
            }
        }
        at = next;
    }
    if !at.is_null() && at != class {
        // SAFETY: as above.
        unsafe {
            if let Some(delete) = (**jni).DeleteLocalRef {
                delete(jni, at);
            }
        }
    }
    none
}

/// Class ids whose [`Sampler::references_only_leaves`] answer is remembered (a byte each).
const LEAF_TABLE: usize = 1 << 16;

/// The largest interval adaptation goes to (the JVM takes up to 2^31 - 1).
pub const MAX_ADAPTED_INTERVAL: u64 = 1 << 30;

/// Lifetimes alone (no `site` level) take the site of one sample in this many, and follow only
/// those (their weights scaled up): a stack trace costs a sample 1-4 us (more when it waits for
/// a safepoint), several times the rest of it, and under `sampling_cost` every sample made
/// dearer makes the interval coarser for the estimates too. Measured on AllocBench (13 s, the
/// default interval and cost): 136 k samples without sites, 85-92 k with one in 8, 45-55 k
/// with one in 4.
pub const LIFETIME_SITES_EVERY: u32 = 8;

/// One sample in how many records its site: all with a `site` level, one in
/// [`LIFETIME_SITES_EVERY`] for lifetimes alone, none otherwise.
pub fn sites_every(site_level: bool, lifetimes: bool) -> u32 {
    match (site_level, lifetimes) {
        (true, _) => 1,
        (false, true) => LIFETIME_SITES_EVERY,
        (false, false) => 0,
    }
}

/// Frames captured per sample: enough to get past most library code to the application.
pub const CAPTURE_FRAMES: usize = 12;

/// Site id of samples taken while no `site` level was asked for.
pub const NO_SITE: u32 = 0;
/// Site id of samples beyond [`tags::MAX_SITE`] distinct sites.
pub const OVERFLOW_SITE: u32 = tags::MAX_SITE;
/// Thread id of samples beyond [`tags::MAX_THREAD`] distinct thread names.
pub const OVERFLOW_THREAD: u32 = tags::MAX_THREAD;

impl Sampler {
    /// Gives back the session's tables (samples, sites, thread names, the class cache) on
    /// detach.
    ///
    /// # Safety
    /// As [`Tracker::release_memory`]: no sampling callback runs or will, and the worker has
    /// ended.
    pub unsafe fn release_memory(&self) {
        // SAFETY: per contract.
        unsafe {
            self.tracker.release_memory();
            self.classes.release_memory();
        }
        *self.sites.lock().unwrap_or_else(|p| p.into_inner()) = Sites::default();
        *self.threads.lock().unwrap_or_else(|p| p.into_inner()) = Threads::default();
    }

    pub fn new(interval: u64, floor: u64, frames: usize, tracked: u32) -> Self {
        Self {
            base_interval: interval,
            floor: floor.min(interval),
            interval: AtomicU64::new(interval),
            frames: frames.clamp(1, MAX_SITE_FRAMES),
            sites_every: AtomicU32::new(1),
            site_turn: AtomicU32::new(0),
            sites: Mutex::default(),
            threads: Mutex::default(),
            samples: AtomicU64::new(0),
            cost: SampleCost::default(),
            tracker: Tracker::new(tracked),
            classes: ClassCache::new(),
            leaves: (0..LEAF_TABLE).map(|_| AtomicU8::new(0)).collect(),
            class_tagging: Mutex::new(()),
        }
    }

    /// Where sampling time went (sums over all samples).
    pub fn step_costs(&self) -> &SampleCost {
        &self.cost
    }

    /// The lock that keeps class tagging unique; the class table takes it too.
    pub fn class_tagging(&self) -> std::sync::MutexGuard<'_, ()> {
        self.class_tagging.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the site of one sample in `every` from now on (0: none; see `sites_every`).
    pub fn record_sites(&self, every: u32) {
        self.sites_every.store(every, Ordering::Relaxed);
    }

    /// Frames that name a site (the `site_frames` option).
    pub fn naming_frames(&self) -> usize {
        self.frames
    }

    /// The configured interval (the handshake reports this one).
    pub fn interval(&self) -> u64 {
        self.base_interval
    }

    /// The interval in force now.
    pub fn current_interval(&self) -> u64 {
        self.interval.load(Ordering::Relaxed)
    }

    /// Keeps sampling's cost under `max_fraction` of one core, as measured: `fraction` is the time
    /// application threads spent in the callback over the last check, divided by the wall time.
    /// What a sample costs varies tenfold between applications (stack depth, compiled frames,
    /// threads contending for the VM's tag map), so a cap on the sample count would be too
    /// strict for one and too loose for another. Over the target, the interval doubles; under
    /// half of it, the interval moves toward the one that would cost half the target (at most a
    /// quarter of it at once, never below the floor): more samples, better estimates, within the
    /// budget. `live_bytes` raises the floor so the live samples (about live bytes / interval)
    /// stay within half the tracker's capacity. Returns the new interval if it changed.
    /// `sampling=0` (every allocation) is never adapted: that is an explicit request.
    pub fn adapt(&self, fraction: f64, max_fraction: f64, live_bytes: u64) -> Option<u64> {
        let current = self.current_interval();
        if self.base_interval == 0 {
            return None;
        }
        let floor = self
            .floor
            .max(live_bytes.saturating_mul(2) / u64::from(self.tracker.capacity().max(1)))
            .min(MAX_ADAPTED_INTERVAL);
        let next = if (fraction > max_fraction || current < floor) && current < MAX_ADAPTED_INTERVAL
        {
            current.saturating_mul(2).min(MAX_ADAPTED_INTERVAL)
        } else if fraction < max_fraction / 2.0 {
            // The cost is about proportional to the sample rate, so to 1 / interval.
            let wanted = current as f64 * fraction / (max_fraction / 2.0);
            let next = (wanted as u64).max(current / 4).max(floor);
            // Small steps are not worth a change (and the measurement is noisy).
            if next * 3 > current * 2 {
                return None;
            }
            next
        } else {
            return None;
        };
        self.interval.store(next, Ordering::Relaxed);
        Some(next)
    }

    /// How many allocations of `size` bytes one sample stands for at the current interval
    /// (`memcity_proto::sampled::weight`, which readers apply too).
    pub fn weight(&self, size: jlong) -> f64 {
        memcity_proto::sampled::weight(self.current_interval(), size as f64)
    }

    fn site_id(&self, frames: &[Frame]) -> u32 {
        let mut sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&id) = sites.ids.get(frames) {
            return id;
        }
        if sites.frames.len() as u32 >= OVERFLOW_SITE - 1 {
            return OVERFLOW_SITE;
        }
        sites.frames.push(frames.to_vec());
        let id = sites.frames.len() as u32;
        sites.ids.insert(frames.to_vec(), id);
        id
    }

    fn thread_id(&self, name: String) -> u32 {
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(&id) = threads.ids.get(&name) {
            return id;
        }
        if threads.names.len() as u32 >= OVERFLOW_THREAD - 1 {
            return OVERFLOW_THREAD;
        }
        threads.memcity.push(is_memcity_thread(&name));
        threads.names.push(name.clone());
        let id = threads.names.len() as u32;
        threads.ids.insert(name, id);
        id
    }

    /// Samples handled and the time spent in them, for the cost report in every snapshot.
    pub fn cost(&self) -> (u64, u64) {
        (
            self.samples.load(Ordering::Relaxed),
            self.cost.total.load(Ordering::Relaxed),
        )
    }

    /// Handles one `SampledObjectAlloc` event on the allocating thread. `next_class` hands out
    /// class ids (shared with the class table and the walk).
    pub fn on_sample(&self, jvmti: &Jvmti, event: &Allocation, next_class: &AtomicU32) {
        // The agent's own priming garbage (see `prime`) is counted there, not tracked.
        if PRIMING
            .with(|p| p.get().map(|n| p.set(Some(n + 1))))
            .is_some()
        {
            return;
        }
        let start = Instant::now();
        self.sample(jvmti, event, next_class, start);
        self.samples.fetch_add(1, Ordering::Relaxed);
        self.cost
            .total
            .fetch_add(charged(start.elapsed()), Ordering::Relaxed);
    }

    fn sample(&self, jvmti: &Jvmti, event: &Allocation, next_class: &AtomicU32, start: Instant) {
        let &Allocation {
            jni,
            thread,
            object,
            klass,
            size,
        } = event;
        let mut lap = start;
        let mut step = |counter: &AtomicU64| {
            let now = Instant::now();
            counter.fetch_add(charged(now - lap), Ordering::Relaxed);
            lap = now;
        };
        let mut buf: [sys::jvmtiFrameInfo; MAX_SITE_FRAMES] =
            std::array::from_fn(|_| sys::jvmtiFrameInfo {
                method: std::ptr::null_mut(),
                location: 0,
            });
        let every = self.sites_every.load(Ordering::Relaxed);
        let site = if every == 1
            || (every > 1
                && self
                    .site_turn
                    .fetch_add(1, Ordering::Relaxed)
                    .is_multiple_of(every))
        {
            // Deeper than the frames that name a site, so the name can reach the first
            // application frame below library code (see `site_name`).
            let capture = self.frames.max(CAPTURE_FRAMES);
            let depth = jvmti.stack_trace(thread, &mut buf[..capture]).unwrap_or(0);
            step(&self.cost.stack);
            let mut frames = [(0usize, 0i64); MAX_SITE_FRAMES];
            for (slot, frame) in frames.iter_mut().zip(&buf[..depth]) {
                *slot = (frame.method as usize, frame.location);
            }
            let site = if depth == 0 {
                OVERFLOW_SITE
            } else {
                self.site_id(&frames[..depth])
            };
            step(&self.cost.site);
            site
        } else {
            NO_SITE
        };
        // The thread's id lives in JVMTI thread-local storage (stored plus one, since null means
        // "not yet looked up"), so the name is fetched once per thread, not per sample. The
        // event comes on the allocating thread, so null (the current thread) names it: that
        // form does not enter the VM or look the thread up.
        let thread_id = match jvmti.thread_local_storage(std::ptr::null_mut()) {
            Ok(data) if !data.is_null() => (data as usize - 1) as u32,
            _ => {
                let name = jvmti
                    .thread_info(thread)
                    .map(|info| info.name)
                    .unwrap_or_else(|_| "(unnamed thread)".into());
                let id = self.thread_id(name);
                let _ = jvmti.set_thread_local_storage(
                    std::ptr::null_mut(),
                    (id as usize + 1) as *const c_void,
                );
                id
            }
        };
        step(&self.cost.thread);
        let class = self.class_id(jvmti, jni, klass, next_class);
        step(&self.cost.class);
        let weight = self.weight(size);
        // Where the collector keeps whatever a reference holds (generational ZGC), an object
        // that references others would keep them too: one sampled entry of a dropped `TreeMap`
        // reaches the whole tree (parents, children), and held so until a major collection it
        // stalled a 4 GB heap for seconds. Only objects that reach nothing more are followed.
        if self.tracker.hold_limited() && !self.references_only_leaves(jvmti, jni, klass, class) {
            self.tracker.refuse_graph(weight, size.max(0) as u64);
            step(&self.cost.track);
            return;
        }
        // SAFETY: `jni` is this thread's JNIEnv and `object` the event's local reference.
        let reference = unsafe { weak::new(jni, object) };
        if reference != 0 {
            // Taken now, while the event holds the object: the path search knows its targets
            // by this hash, and to take it later it would have to resolve the weak reference,
            // which on a concurrent collector keeps an object that died alive through the
            // marking under way, with all it references (see `paths/`).
            let identity = jvmti.object_hash(object).map_or(0, |hash| hash as u32);
            let tracked = self.tracker.track(
                class,
                site,
                thread_id,
                weight,
                size.max(0) as u64,
                reference,
                identity,
                every.max(1),
            );
            if tracked.is_none() {
                // SAFETY: made just above on this thread, and not stored anywhere.
                unsafe { weak::delete(jni, reference) };
            }
        }
        step(&self.cost.track);
    }

    /// Whether the objects of `klass` (id `class`) reference nothing that references more: a
    /// primitive array, a `String` (its own array), a box, or an instance with no reference
    /// field of its own or inherited. Looked up once per class id.
    fn references_only_leaves(
        &self,
        jvmti: &Jvmti,
        jni: *mut JNIEnv,
        klass: jni::sys::jclass,
        class: u32,
    ) -> bool {
        // Id 0 is every class whose tagging failed: its answer is no one class's.
        let known = self.leaves.get(class as usize).filter(|_| class != 0);
        match known.map(|k| k.load(Ordering::Relaxed)) {
            Some(1) => return true,
            Some(2) => return false,
            _ => {}
        }
        let leaf = match jvmti.class_signature(klass) {
            Ok(signature) => {
                let signature = signature.to_string_lossy();
                // The VM injects a `Class` reference into this one (`vmholder`), which
                // `GetClassFields` does not list; every other injected reference is in a class
                // that declares one of its own.
                let instance = !signature.starts_with('[')
                    && signature != "Ljava/lang/invoke/ResolvedMethodName;";
                crate::census::fields::holds_only_leaves(&signature)
                    || (instance
                        // SAFETY: `jni` is this thread's JNIEnv and `klass` the event's
                        // local reference.
                        && unsafe { no_reference_fields(jvmti, jni, klass) })
            }
            Err(_) => false,
        };
        if let Some(known) = known {
            known.store(if leaf { 1 } else { 2 }, Ordering::Relaxed);
        }
        leaf
    }

    /// The class id of `klass`: from the cache, else its mirror's tag (tagging a class seen for
    /// the first time), then cached.
    fn class_id(
        &self,
        jvmti: &Jvmti,
        jni: *mut JNIEnv,
        klass: jni::sys::jclass,
        next_class: &AtomicU32,
    ) -> u32 {
        let Ok(hash) = jvmti.object_hash(klass) else {
            return self.tagged_class_id(jvmti, klass, next_class);
        };
        // SAFETY: `jni` is this thread's JNIEnv and `klass` the event's local reference.
        let same = |reference: usize| unsafe { weak::is(jni, reference, klass) };
        if let Some(id) = self.classes.get(hash, same) {
            return id;
        }
        let id = self.tagged_class_id(jvmti, klass, next_class);
        if id != 0 {
            // Under the tagging lock, so two threads missing on one class cache it once.
            let _tagging = self.class_tagging();
            if self.classes.get(hash, same).is_none() {
                // SAFETY: as above.
                let reference = unsafe { weak::new(jni, klass) };
                if reference != 0 && !self.classes.insert(hash, id, reference) {
                    // SAFETY: made just above on this thread, and not stored anywhere.
                    unsafe { weak::delete(jni, reference) };
                }
            }
        }
        id
    }

    /// The class id of `klass` from its mirror's tag, tagging a class seen for the first time.
    fn tagged_class_id(
        &self,
        jvmti: &Jvmti,
        klass: jni::sys::jclass,
        next_class: &AtomicU32,
    ) -> u32 {
        let id = jvmti.tag(klass).map(tags::class_id).unwrap_or(0);
        if id != 0 {
            return id;
        }
        let _tagging = self.class_tagging();
        // Again under the lock: another thread, or the class table, may have just tagged it.
        match jvmti.tag(klass) {
            Ok(tag) if tags::class_id(tag) != 0 => tags::class_id(tag),
            Ok(_) => {
                let id = next_class.fetch_add(1, Ordering::AcqRel);
                match jvmti.set_tag(klass, tags::class_tag(id)) {
                    Ok(()) => id,
                    Err(_) => 0,
                }
            }
            Err(_) => 0,
        }
    }

    /// Hands every weak reference the sampler holds (samples, class cache) to `delete`; for a
    /// detach, once no sample is taken any more.
    pub fn release_references(&self, mut delete: impl FnMut(usize)) {
        self.tracker.release_references(&mut delete);
        self.classes.release_references(&mut delete);
    }

    /// Frames of sites `from..` (ids), for the agent thread to resolve.
    pub fn sites_from(&self, from: u32) -> Vec<(u32, Vec<Frame>)> {
        let sites = self.sites.lock().unwrap_or_else(|p| p.into_inner());
        sites
            .frames
            .iter()
            .enumerate()
            .skip(from.saturating_sub(1) as usize)
            .map(|(i, frames)| (i as u32 + 1, frames.clone()))
            .collect()
    }

    pub fn thread_name(&self, id: u32) -> Option<String> {
        let threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.names.get((id as usize).checked_sub(1)?).cloned()
    }

    /// By thread id, whether each sampled thread so far is memcity's own ([`is_memcity`]): the
    /// one record of it, for the city's `(memcity)` share, the path search and the lifetimes.
    pub fn memcity_threads(&self) -> Vec<bool> {
        let threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        threads.memcity.clone()
    }
}

/// Longest time one sample (or one of its steps) is charged. Every JVMTI call in the callback
/// waits while a safepoint is in progress (the thread goes from native into the VM), so a sample
/// taken as a GC starts can take the whole pause; that wait is the GC's, not the sample's, and
/// would make the cost control sample coarsely for nothing. Real samples cost microseconds
/// (a deep stack of compiled frames, some 20 µs).
const MAX_CHARGED: Duration = Duration::from_micros(100);

fn charged(elapsed: Duration) -> u64 {
    elapsed.min(MAX_CHARGED).as_nanos() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What generational ZGC may follow: what holding keeps no more than itself.
    #[test]
    fn only_objects_that_reach_nothing_more_count_as_leaves() {
        for leaf in ["[B", "[J", "[Z", "Ljava/lang/String;", "Ljava/lang/Long;"] {
            assert!(crate::census::fields::holds_only_leaves(leaf), "{leaf}");
        }
        for graph in [
            "[Ljava/lang/Object;",
            "[[B",
            "Ljava/util/TreeMap$Entry;",
            "Ljava/lang/Object;",
            "Ljava/lang/StringBuilder;",
            "[",
            "",
        ] {
            assert!(!crate::census::fields::holds_only_leaves(graph), "{graph}");
        }
    }

    #[test]
    fn adaptation_holds_the_measured_cost_under_its_target_and_returns() {
        let s = Sampler::new(512 * 1024, 128 * 1024, 1, 1 << 20);
        assert_eq!(s.adapt(0.02, 0.005, 0), Some(1024 * 1024));
        assert!(
            (s.weight(1024) - 1024.5).abs() < 0.1,
            "weights use the interval in force"
        );
        assert_eq!(s.adapt(0.02, 0.005, 0), Some(2048 * 1024));
        assert_eq!(
            s.adapt(0.003, 0.005, 0),
            None,
            "between half the target and the target: hold"
        );
        // At 0.2 % of a core, the interval that costs 0.25 % is 4/5 of this one: too small a
        // step to take.
        assert_eq!(s.adapt(0.002, 0.005, 0), None);
        // At 0.1 %: 2/5 of it.
        assert_eq!(s.adapt(0.001, 0.005, 0), Some(2048 * 1024 * 2 / 5));
        // Far under: a quarter at once, then down to the floor, never below.
        let now = s.current_interval();
        assert_eq!(s.adapt(0.00001, 0.005, 0), Some(now / 4));
        assert_eq!(s.adapt(0.00001, 0.005, 0), Some(128 * 1024));
        assert_eq!(s.adapt(0.00001, 0.005, 0), None, "never below the floor");
        // With 1 Mi slots, 256 GiB live raise the floor to 512 KiB: the interval doubles to it
        // whatever the cost, so live samples fit half the table.
        assert_eq!(s.adapt(0.00001, 0.005, 256 << 30), Some(256 * 1024));
        assert_eq!(s.adapt(0.00001, 0.005, 256 << 30), Some(512 * 1024));
        assert_eq!(s.adapt(0.00001, 0.005, 256 << 30), None);
        assert_eq!(
            Sampler::new(0, 0, 1, 16).adapt(1.0, 0.005, 0),
            None,
            "sampling=0 is never adapted"
        );
    }

    #[test]
    fn weights_are_inverse_sampling_probabilities() {
        let s = Sampler::new(1024, 1024, 1, 16);
        // Small objects: about interval / size.
        assert!((s.weight(16) - 64.5).abs() < 0.1, "{}", s.weight(16));
        // An object as large as the interval is sampled 63 % of the time, not always.
        assert!((s.weight(1024) - 1.582).abs() < 0.001, "{}", s.weight(1024));
        assert!((s.weight(1 << 20) - 1.0).abs() < 1e-9);
        assert_eq!(Sampler::new(0, 0, 1, 16).weight(16), 1.0);
    }
}
