//! The walk's state inside the safepoint, and what each reference JVMTI reports adds to it.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::time::Instant;

use jni::sys::{jint, jlong};

use super::*;
use crate::intmap::{IntHasher, IntMap};
use crate::jvmti::sys;
use crate::jvmti::tags;
use crate::jvmti::{root_kind, RootKind};

pub(super) struct State<'a> {
    pub(super) facts: ClassFacts<'a>,
    pub(super) epoch: u64,
    pub(super) deadline: Instant,
    pub(super) calls: u64,
    pub(super) aborted: bool,
    pub(super) panicked: bool,
    pub(super) objects: Vec<u64>,
    pub(super) array_bytes: Vec<u64>,
    pub(super) instance_size: Vec<u64>,
    pub(super) sampled: IntMap<(u32, u64), SampleCount>,
    /// The object being visited: its class, or `None` between visits.
    pub(super) current: Option<u32>,
    /// For static-field visits of class mirrors: the mirror's tag, to tell mirrors apart.
    pub(super) current_mirror: Option<jlong>,
    /// The current visit's references by slot: `(slot, to, references, longest array, first
    /// slot to that class)`. Fields are reported once per slot; elements are merged by class.
    pub(super) slots: Vec<(u32, u32, u64, u64, bool)>,
    /// The referrer of field-level edges: the visited object's class, or for static fields the
    /// declaring class.
    pub(super) slot_owner: u32,
    /// The current visit's owner and depth, if owned; and whether it is an array (whose
    /// elements are counted but not owned: there may be millions).
    pub(super) current_owned: Option<(u32, u8)>,
    pub(super) current_array: bool,
    /// Elements of the current (owned) array made owned so far.
    pub(super) elements_owned: u32,
    pub(super) fields: IntMap<(u32, u32, u32), SlotCount>,
    pub(super) roots: Vec<Root>,
    /// Per root (owner number - 1), the depth its own object is owned at.
    pub(super) start_depths: Vec<u8>,
    pub(super) root_ids: HashMap<Root, u32, BuildHasherDefault<IntHasher>>,
    pub(super) owned: IntMap<OwnedKey, SlotCount>,
    pub(super) unowned_roots: u64,
    pub(super) visited: u64,
    /// Tracker slots of the sampled objects reached.
    pub(super) seen_slots: Vec<u32>,
    pub(super) holders: IntMap<u32, (u32, u32)>,
    /// Whether the object being visited is memcity's.
    pub(super) current_memcity: bool,
    /// Per class, memcity's objects and its arrays' bytes.
    pub(super) memcity_objects: Vec<u64>,
    pub(super) memcity_array_bytes: Vec<u64>,
}

impl<'a> State<'a> {
    pub(super) fn new(
        facts: ClassFacts<'a>,
        class_count: usize,
        epoch: u64,
        deadline: Instant,
    ) -> Self {
        let facts_threads = facts.threads.min(tags::MAX_OWNER);
        State {
            facts,
            epoch,
            deadline,
            calls: 0,
            aborted: false,
            panicked: false,
            objects: vec![0; class_count],
            array_bytes: vec![0; class_count],
            instance_size: vec![0; class_count],
            sampled: IntMap::default(),
            current: None,
            current_mirror: None,
            slots: Vec::with_capacity(16),
            slot_owner: 0,
            current_owned: None,
            current_array: false,
            elements_owned: 0,
            fields: IntMap::default(),
            roots: (1..=facts_threads)
                .map(|thread| Root {
                    thread,
                    ..Root::of(RootKind::Thread)
                })
                .collect(),
            start_depths: vec![0; facts_threads as usize],
            root_ids: HashMap::default(),
            owned: IntMap::default(),
            unowned_roots: 0,
            visited: 0,
            seen_slots: Vec::new(),
            holders: IntMap::default(),
            current_memcity: false,
            memcity_objects: vec![0; class_count],
            memcity_array_bytes: vec![0; class_count],
        }
    }

    #[inline]
    pub(super) fn class(&mut self, tag: jlong) -> u32 {
        let id = tags::class_id(tag);
        if (id as usize) < self.objects.len() {
            id
        } else if id != 0 && id < self.facts.next_class.load(Ordering::Acquire) {
            // Tagged by a sampling thread after the class table's refresh: one of ours.
            self.grow(id);
            id
        } else {
            0
        }
    }

    pub(super) fn grow(&mut self, id: u32) {
        let len = id as usize + 1;
        if self.objects.len() < len {
            self.objects.resize(len, 0);
            self.array_bytes.resize(len, 0);
            self.instance_size.resize(len, 0);
            self.memcity_objects.resize(len, 0);
            self.memcity_array_bytes.resize(len, 0);
        }
    }

    /// Gives an untagged class mirror (the referee of a CLASS reference) a provisional id. The VM
    /// stores the tag after the callback, so later objects of the class arrive with it.
    pub(super) fn tag_new_class(&mut self, mirror_tag: *mut jlong) -> u32 {
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's (the mirror's) tag.
        let existing = unsafe { *mirror_tag };
        if existing != 0 {
            return self.class(existing);
        }
        let id = self.facts.next_class.fetch_add(1, Ordering::AcqRel);
        self.grow(id);
        // SAFETY: as above.
        unsafe { *mirror_tag = tags::class_tag(id) };
        id
    }

    /// Ends the current visit: one referrer for each slot, and for each distinct target class
    /// (the first slot to it carries that, see `SlotCount::first_referrers`).
    pub(super) fn flush_visit(&mut self) {
        if self.current.take().is_some() {
            let owner = self.slot_owner;
            for &(slot, to, count, length, first) in &self.slots {
                let entry = self.fields.entry((owner, slot, to)).or_default();
                entry.add(count, length);
                entry.first_referrers += u64::from(first);
                if let Some((root, depth)) = self.current_owned {
                    // Levels count from the root's own object, whatever depth it started at.
                    let start = self
                        .start_depths
                        .get(root as usize - 1)
                        .copied()
                        .unwrap_or(0);
                    let level = depth.saturating_sub(start) + 1;
                    self.owned
                        .entry((root, level, owner, slot, to))
                        .or_default()
                        .add(count, length);
                }
            }
        }
        self.slots.clear();
        self.current_mirror = None;
        self.current_owned = None;
        self.current_array = false;
        self.current_memcity = false;
        self.elements_owned = 0;
    }

    /// Counts one reference of the current visit to class `to` through `slot`, and makes the
    /// referee owned one level below the visit's object when that is owned.
    #[inline]
    pub(super) fn add_target(&mut self, slot: u32, to: u32, length: jint, tag_ptr: *mut jlong) {
        let length = length.max(0) as u64;
        // Objects have few slots, so a linear scan beats hashing. Each field is reported once
        // per visit; elements repeat and merge by class. The first slot to a class counts the
        // object once as that class's referrer.
        let mut first = true;
        let mut merged = false;
        for s in self.slots.iter_mut() {
            if s.1 == to {
                first = false;
                if slot == ELEMENTS && s.0 == ELEMENTS {
                    s.2 += 1;
                    s.3 = s.3.max(length);
                    merged = true;
                    break;
                }
            }
        }
        if !merged {
            self.slots.push((slot, to, 1, length, first));
        }
        self.note_holder(slot, tag_ptr);
        if let Some((root, depth)) = self.current_owned {
            // An owned array's first elements are owned too (a thread's `ThreadLocalMap`
            // entries), not all of them: a big array's are the content, and there may be
            // millions.
            if depth < tags::MAX_OWNED_DEPTH
                && (!self.current_array || self.elements_owned < OWNED_ELEMENTS)
            {
                self.elements_owned += u32::from(self.current_array);
                self.own(tag_ptr, to, length, root, depth + 1);
            }
        }
    }

    /// Notes the current object (or class, for a static) as holding the referee through `slot`
    /// when the referee is a sample.
    #[inline]
    pub(super) fn note_holder(&mut self, slot: u32, tag_ptr: *mut jlong) {
        if self.facts.holders && !tag_ptr.is_null() {
            // SAFETY: JVMTI passes a valid pointer to the referee's tag.
            if let Some(sample) = tags::sample_slot(unsafe { *tag_ptr }) {
                self.holders.insert(sample, (self.slot_owner, slot));
            }
        }
    }

    /// Tags the referee as owned by `root` at `depth`, unless it is owned already in this walk,
    /// a class, or a primitive array (which holds nothing).
    #[inline]
    pub(super) fn own(
        &mut self,
        tag_ptr: *mut jlong,
        class: u32,
        length: u64,
        root: u32,
        depth: u8,
    ) {
        if tag_ptr.is_null() {
            return;
        }
        let is_array = self.facts.object_array.get(class as usize) == Some(&true);
        if length > 0 && !is_array {
            return;
        }
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's tag; the VM stores
        // the new tag after the callback returns.
        let tag = unsafe { *tag_ptr };
        // memcity's objects stay memcity's: a root of the JDK's static fields owns only its
        // object, and JFR's are under such roots.
        if tag & tags::CLASS_BIT != 0
            || tags::owner(tag, self.epoch).is_some()
            || tags::is_memcity(tag, self.epoch)
        {
            return;
        }
        // SAFETY: as above.
        unsafe { *tag_ptr = tags::with_owner(tag, root, depth, self.epoch) };
    }

    /// Counts a root reference and owns its object (see `Root::start_depth`).
    pub(super) fn root(
        &mut self,
        kind: RootKind,
        frame: &FrameRef,
        class_tag: jlong,
        length: jint,
        tag_ptr: *mut jlong,
    ) {
        let mut root = Root::of(kind);
        match kind {
            RootKind::Thread if !tag_ptr.is_null() => {
                // SAFETY: JVMTI passes a valid pointer to the referee's (the thread's) tag.
                let tag = unsafe { *tag_ptr };
                if let Some((thread, _)) = tags::owner(tag, self.epoch) {
                    if thread <= self.facts.threads {
                        root.thread = thread;
                    }
                }
            }
            RootKind::StackLocal | RootKind::JniLocal => {
                root.thread = tags::owner(frame.thread_tag, self.epoch).map_or(0, |(t, _)| t);
                if root.thread > self.facts.threads {
                    root.thread = 0; // a thread started since the worker tagged them
                }
                root.method = frame.method;
                root.depth = frame.depth;
                root.location = if kind == RootKind::StackLocal {
                    frame.location
                } else {
                    0
                };
            }
            _ => {}
        }
        let class = self.class(class_tag);
        self.count_root(root, class, length, tag_ptr, true);
    }

    /// The owner number of `root`, numbering it if new (`None` once numbers run out).
    pub(super) fn root_id(&mut self, root: Root) -> Option<u32> {
        if root.kind == RootKind::Thread && root.thread != 0 {
            return Some(root.thread);
        }
        if let Some(&id) = self.root_ids.get(&root) {
            return Some(id);
        }
        if self.roots.len() as u32 >= tags::MAX_OWNER {
            self.unowned_roots += 1;
            return None;
        }
        let application = self.facts.application.get(root.class as usize) == Some(&true);
        self.start_depths.push(
            root.start_depth(application)
                .unwrap_or(tags::MAX_OWNED_DEPTH),
        );
        self.roots.push(root);
        let id = self.roots.len() as u32;
        self.root_ids.insert(root, id);
        Some(id)
    }

    pub(super) fn count_root(
        &mut self,
        root: Root,
        class: u32,
        length: jint,
        tag_ptr: *mut jlong,
        own: bool,
    ) {
        let Some(id) = self.root_id(root) else {
            return;
        };
        let application = self.facts.application.get(root.class as usize) == Some(&true);
        let length = length.max(0) as u64;
        self.owned
            .entry((id, 0, 0, 0, class))
            .or_default()
            .add(1, length);
        if let (true, Some(depth)) = (own, root.start_depth(application)) {
            self.own(tag_ptr, class, length, id, depth);
        }
    }

    /// Learns sizes from a report of an object as a referee (or root). `from_memcity`: the
    /// reference is from one of memcity's objects, which makes the referee memcity's unless
    /// this walk counted or marked it already, or it is the application's whoever refers to it.
    #[inline]
    pub(super) fn referee(
        &mut self,
        class_tag: jlong,
        size: jlong,
        length: jint,
        tag_ptr: *mut jlong,
        from_memcity: bool,
    ) {
        let class = self.class(class_tag);
        let size = size.max(0) as u64;
        let object_array = self.facts.object_array.get(class as usize) == Some(&true);
        if length < 0 && class != self.facts.class_class {
            self.instance_size[class as usize] = size;
        }
        if tag_ptr.is_null() || !(object_array || from_memcity) {
            return;
        }
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's tag.
        let tag = unsafe { *tag_ptr };
        // Not seen in this walk: an object array's bytes are not counted yet, and no owner or
        // mark of this walk is in the tag.
        let first = tags::epoch(tag) != self.epoch && tag & tags::CLASS_BIT == 0;
        let memcity = from_memcity
            && first
            && class != self.facts.class_class
            && self.facts.shared.get(class as usize) != Some(&true);
        if object_array && first {
            self.array_bytes[class as usize] += size;
            if memcity {
                self.memcity_array_bytes[class as usize] += size;
            }
        }
        if memcity {
            // SAFETY: as above; the VM stores the new tag after the callback returns.
            unsafe { *tag_ptr = tags::with_memcity(tag, self.epoch) };
        } else if object_array && first {
            // SAFETY: as above. An owner from an older walk goes: owner numbers are per walk.
            unsafe { *tag_ptr = tags::with_epoch(tags::without_owner(tag), self.epoch) };
        }
    }

    /// A new visit starts (JVMTI reports an object's class first): the referrer is one more
    /// live object, and a sample if it carries a sample's tag.
    #[inline]
    pub(super) fn start_visit(
        &mut self,
        referrer_class_tag: jlong,
        tag_ptr: *mut jlong,
        referrer_tag_ptr: *mut jlong,
    ) {
        // A new visit starts: `referrer` is one more live object.
        self.flush_visit();
        let mut class = self.class(referrer_class_tag);
        if class == 0 && !tag_ptr.is_null() {
            class = self.tag_new_class(tag_ptr);
        }
        self.objects[class as usize] += 1;
        self.visited += 1;
        self.current = Some(class);
        self.slot_owner = class;
        self.current_array = self.facts.object_array.get(class as usize) == Some(&true);
        self.current_memcity = self.facts.memcity.get(class as usize) == Some(&true);
        if !referrer_tag_ptr.is_null() {
            // SAFETY: JVMTI passes a valid pointer to the referrer's tag.
            let tag = unsafe { *referrer_tag_ptr };
            self.current_owned = tags::owner(tag, self.epoch);
            self.current_memcity |= tags::is_memcity(tag, self.epoch);
            if let (Some(slot), Some(tracker)) = (tags::sample_slot(tag), self.facts.tracker) {
                if let Some(sample) = tracker.get(slot) {
                    self.seen_slots.push(slot);
                    if sample.class != class {
                        // Sampled before its class had an id, or the sampler and the
                        // walk tagged the class at once: the walk's is the one in use.
                        tracker.set_class(slot, class);
                    }
                    let entry = self.sampled.entry((class, sample.key())).or_default();
                    entry.objects += 1;
                    entry.weight += sample.weight;
                    entry.variance += sample.weight * (sample.weight - 1.0);
                }
            }
        }
        if self.current_memcity {
            self.memcity_objects[class as usize] += 1;
        }
    }

    /// A static field's reference, reported from its class mirror's visit.
    #[allow(clippy::too_many_arguments)] // the JVMTI callback's, as `on_reference`
    #[inline]
    pub(super) fn static_field(
        &mut self,
        field_index: jint,
        class_tag: jlong,
        size: jlong,
        length: jint,
        tag_ptr: *mut jlong,
        referrer_class_tag: jlong,
        referrer_tag_ptr: *mut jlong,
    ) {
        let mirror = if referrer_tag_ptr.is_null() {
            0
        } else {
            // SAFETY: as above.
            unsafe { *referrer_tag_ptr }
        };
        // Static fields are reported from the class mirror's visit, which has no CLASS
        // reference to start it; a different mirror tag starts a new visit instead.
        if self.current_mirror != Some(mirror) {
            self.flush_visit();
            self.current = Some(self.class(referrer_class_tag));
            self.current_mirror = Some(mirror);
            // Field-level edges name the declaring class, not `java.lang.Class`.
            self.slot_owner = self.class(mirror);
        }
        let from_memcity = self.facts.memcity.get(self.slot_owner as usize) == Some(&true);
        self.referee(class_tag, size, length, tag_ptr, from_memcity);
        let to = self.class(class_tag);
        let slot = STATIC | (field_index.max(0) as u32 & !STATIC);
        // No owner through a static (`add_target` gets no tag), but a sample held
        // there has its holder: the declaring class.
        self.add_target(slot, to, length, std::ptr::null_mut());
        self.note_holder(slot, tag_ptr);
        let root = Root {
            class: self.slot_owner,
            slot,
            ..Root::of(RootKind::StaticField)
        };
        self.count_root(root, to, length, tag_ptr, true);
    }

    #[allow(clippy::too_many_arguments)] // mirrors the JVMTI callback signature
    #[inline]
    pub(super) fn on_reference(
        &mut self,
        kind: sys::jvmtiHeapReferenceKind,
        field_index: jint,
        frame: &FrameRef,
        class_tag: jlong,
        referrer_class_tag: jlong,
        size: jlong,
        tag_ptr: *mut jlong,
        referrer_tag_ptr: *mut jlong,
        length: jint,
    ) -> jint {
        self.calls += 1;
        if self.calls & 0xfff == 0 && Instant::now() > self.deadline {
            self.aborted = true;
            return sys::JVMTI_VISIT_ABORT as jint;
        }
        match kind {
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_CLASS => {
                self.start_visit(referrer_class_tag, tag_ptr, referrer_tag_ptr);
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD
                if field_index == REFERENT_FIELD
                    && self.current.is_some_and(|c| {
                        self.facts.weak_reference.get(c as usize) == Some(&true)
                    }) =>
            {
                // A weak or phantom referent: what only this keeps is garbage the next GC
                // clears, so neither count the edge nor follow it. (The object is still
                // counted if anything else keeps it alive.)
                return 0;
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_FIELD => {
                self.referee(class_tag, size, length, tag_ptr, self.current_memcity);
                let to = self.class(class_tag);
                self.add_target(field_index.max(0) as u32 & !STATIC, to, length, tag_ptr);
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT => {
                self.referee(class_tag, size, length, tag_ptr, self.current_memcity);
                let to = self.class(class_tag);
                self.add_target(ELEMENTS, to, length, tag_ptr);
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_STATIC_FIELD => {
                self.static_field(
                    field_index,
                    class_tag,
                    size,
                    length,
                    tag_ptr,
                    referrer_class_tag,
                    referrer_tag_ptr,
                );
            }
            _ => {
                // Roots count per root; system classes (their statics are counted as static
                // fields) and class-metadata edges give sizes only.
                self.referee(class_tag, size, length, tag_ptr, false);
                if let Some(root) = root_kind(kind) {
                    self.root(root, frame, class_tag, length, tag_ptr);
                }
            }
        }
        sys::JVMTI_VISIT_OBJECTS as jint
    }
}
