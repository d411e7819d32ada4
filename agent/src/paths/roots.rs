//! The search's roots: the one stop that lists what frames, JNI references and monitors hold
//! (`FollowReferences` in a JVMTI environment of its own, whose callback follows nothing), the
//! threads and their names, the static fields read through JNI, which of them a search goes
//! through, and their order.

use std::ffi::c_void;
use std::ptr;
use std::time::Instant;

use jni::sys::{jint, jlong, jobject, JNIEnv};

use super::{
    marker_index, object_marker, thread_marker, vthreads, Env, Identities, PathRoot, RootKey,
    RootObject, RootOrder, Scope, Search, ACC_STATIC, MAX_ROOTS_NOTED, MOUNTED, ROOTS_LIMIT,
    VIRTUAL_ARRAY,
};
use crate::jvmti::sys;
use crate::jvmti::{Jvmti, RootKind};
use crate::sampling::{is_memcity_class, is_memcity_thread};

/// What a search may do about the roots only a stop lists (frames' locals, JNI references,
/// monitors): whether it may stop the JVM to list them at all (the agent's budget for stops
/// decides: JDK 17 and 18 go over the whole heap after the listing), and what such roots held
/// at the last listing.
pub struct Listing<'a> {
    pub allowed: bool,
    pub lasting: &'a Identities,
}

/// What `Search::start` needs to know of the classes (the worker's class table).
pub struct ClassFacts<'a> {
    pub names: &'a [String],
    pub application: &'a [bool],
}

impl ClassFacts<'_> {
    fn is_app(&self, id: u32) -> bool {
        self.application.get(id as usize).copied().unwrap_or(false)
    }

    fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", String::as_str)
    }
}

/// Whether a root of this kind holds its object for a moment rather than for the JVM's life:
/// a frame's local, a native method's JNI local, a monitor held.
fn is_transient(kind: RootKind) -> bool {
    matches!(
        kind,
        RootKind::StackLocal | RootKind::JniLocal | RootKind::Monitor
    )
}

/// Which roots a search goes through: its scope, and for a focused one the roots the last
/// search found the growth under.
pub(super) struct Wanted<'a> {
    pub(super) scope: Scope,
    pub(super) preferred: &'a [RootKey],
}

impl Wanted<'_> {
    /// Whether this search lists the roots, if it may: a full search does, a focused one only
    /// when a preferred root is one only the listing finds.
    pub(super) fn listing(&self) -> bool {
        match self.scope {
            Scope::Full => true,
            Scope::Preferred => self.preferred.iter().any(|root| root.enumerated),
            Scope::StaticsAndThreads => false,
        }
    }

    fn wants(&self, root: &PathRoot, threads: &[String]) -> bool {
        match self.scope {
            Scope::Full => true,
            Scope::Preferred => {
                let key = root.key(threads);
                self.preferred.iter().any(|p| p.key == key)
            }
            // The application's statics and the threads: the JDK's statics hold a growth
            // rarely, and a few new samples in their lazily filled caches would be taken for
            // where the growth is (the full search still goes through them).
            Scope::StaticsAndThreads => {
                matches!(root.order, RootOrder::ApplicationStatic | RootOrder::Thread)
            }
        }
    }
}

/// What the roots' enumeration found, fetched back from its markers.
pub(super) struct Enumerated {
    state: RootsState,
    /// Each marked object by a weak global reference (null: gone by the fetch), and its
    /// identity hash.
    objects: Vec<jobject>,
    identities: Vec<u32>,
    failed: bool,
}

pub(super) fn new_global(jni: *mut JNIEnv, local: jobject) -> jobject {
    if local.is_null() {
        ptr::null_mut()
    } else {
        jni!(jni, NewGlobalRef, local)
    }
}

fn new_weak(jni: *mut JNIEnv, local: jobject) -> jobject {
    if local.is_null() {
        ptr::null_mut()
    } else {
        jni!(jni, NewWeakGlobalRef, local)
    }
}

/// A class by its JNI name, as a global reference (null when it cannot be found).
pub(super) fn find_class(jni: *mut JNIEnv, name: &std::ffi::CStr) -> jobject {
    let local = jni!(jni, FindClass, name.as_ptr());
    if local.is_null() {
        jni!(jni, ExceptionClear);
        return ptr::null_mut();
    }
    let global = new_global(jni, local);
    jni!(jni, DeleteLocalRef, local);
    global
}

/// A JVMTI environment of its own for the enumeration's markers, disposed with its tags right
/// after: the agent's own tags (classes, samples, walks) are never touched, and nothing needs
/// restoring. `None` when the JVM gives none.
pub(super) fn markers_env(jni: *mut JNIEnv) -> Option<TempEnv> {
    let mut vm: *mut jni::sys::JavaVM = ptr::null_mut();
    if jni!(jni, GetJavaVM, &mut vm) != 0 || vm.is_null() {
        return None;
    }
    // SAFETY: `vm` is this process's JavaVM, from the worker's JNIEnv.
    let marks = TempEnv(unsafe { crate::jvmti::get_env(vm) }?);
    let mut caps = crate::jvmti::empty_capabilities();
    caps.set_can_tag_objects(1);
    marks.0.add_capabilities(&caps).ok()?;
    Some(marks)
}

/// What the roots' enumeration callback collects.
pub(super) struct RootsState {
    roots: Vec<RawRoot>,
    /// Objects marked so far.
    objects: usize,
    /// Thread markers from this index on are virtual threads'.
    first_virtual: usize,
    /// The enumeration has reported every root and walks into the virtual threads.
    in_virtual: bool,
    deadline: Instant,
    calls: u64,
    aborted: bool,
}

impl RootsState {
    /// A virtual thread's marker, mounted or not.
    fn is_virtual(&self, tag: jlong) -> bool {
        marker_index(tag).is_some_and(|(thread, i)| thread && i >= self.first_virtual)
    }
}

pub(super) struct RawRoot {
    kind: RootKind,
    thread: Option<usize>,
    method: usize,
    location: i64,
    /// Object index (into `RootsState::old_tags`), or a thread's index with `is_thread`.
    object: usize,
    is_thread: bool,
}

impl RootsState {
    fn on_root(&mut self, kind: RootKind, frame: (jlong, usize, i64), tag_ptr: *mut jlong) {
        if tag_ptr.is_null() {
            return;
        }
        // SAFETY: JVMTI passes a valid, writable pointer to the referee's tag; the VM stores a
        // changed tag after the callback returns.
        let tag = unsafe { *tag_ptr };
        let (is_thread, object) = match marker_index(tag) {
            Some(marked) => marked,
            None => {
                let index = self.objects;
                self.objects += 1;
                // SAFETY: as above.
                unsafe { *tag_ptr = object_marker(index) };
                (false, index)
            }
        };
        let thread = marker_index(frame.0).filter(|m| m.0).map(|m| m.1);
        self.roots.push(RawRoot {
            kind,
            thread: if kind == RootKind::Thread && is_thread {
                Some(object)
            } else {
                thread
            },
            method: frame.1,
            location: frame.2,
            object,
            is_thread,
        });
    }
}

unsafe extern "C" fn roots_callback(
    kind: sys::jvmtiHeapReferenceKind,
    info: *const sys::jvmtiHeapReferenceInfo,
    _class_tag: jlong,
    _referrer_class_tag: jlong,
    _size: jlong,
    tag_ptr: *mut jlong,
    referrer_tag_ptr: *mut jlong,
    _length: jint,
    user_data: *mut c_void,
) -> jint {
    // SAFETY: `user_data` is the `RootsState` that `Search::enumerate_roots` passed to
    // `follow_references`; the VM calls us from one thread at a time.
    let state = unsafe { &mut *user_data.cast::<RootsState>() };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        state.calls += 1;
        if state.calls & 0x3ff == 0 && Instant::now() > state.deadline {
            state.aborted = true;
            return sys::JVMTI_VISIT_ABORT as jint;
        }
        // SAFETY: JVMTI passes valid pointers to the tags, or null.
        let tag = unsafe { tag_ptr.as_ref() }.copied().unwrap_or(0);
        // The walk goes into the array of virtual threads and, from it, into each parked one,
        // whose frames HotSpot then reports as stack locals; into nothing else.
        match kind {
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_JNI_GLOBAL if tag == VIRTUAL_ARRAY => {
                state.in_virtual = true;
                return sys::JVMTI_VISIT_OBJECTS as jint;
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_ARRAY_ELEMENT => {
                // SAFETY: as above.
                let referrer = unsafe { referrer_tag_ptr.as_ref() }.copied().unwrap_or(0);
                let parked = state.is_virtual(tag) && tag & MOUNTED == 0;
                return if referrer == VIRTUAL_ARRAY && parked {
                    sys::JVMTI_VISIT_OBJECTS as jint
                } else {
                    0
                };
            }
            sys::jvmtiHeapReferenceKind_JVMTI_HEAP_REFERENCE_OTHER if state.is_virtual(tag) => {
                // A mounted virtual thread, reported before its frames on its carrier's stack.
                // SAFETY: `tag` came from this pointer, so it is not null.
                unsafe { *tag_ptr = tag | MOUNTED };
                return 0;
            }
            _ => {}
        }
        // System classes (their statics are read through JNI) and, were anything followed,
        // object references: not roots.
        let Some(root) = crate::jvmti::root_kind(kind) else {
            return 0;
        };
        let frame = match root {
            RootKind::StackLocal if !info.is_null() => {
                // SAFETY: for stack locals JVMTI passes the `stack_local` member.
                let local = unsafe { (*info).stack_local.as_ref() };
                (local.thread_tag, local.method as usize, local.location)
            }
            RootKind::JniLocal if !info.is_null() => {
                // SAFETY: for JNI locals JVMTI passes the `jni_local` member.
                let local = unsafe { (*info).jni_local.as_ref() };
                (local.thread_tag, local.method as usize, 0)
            }
            _ => (0, 0, 0),
        };
        state.on_root(root, frame, tag_ptr);
        // No JVMTI_VISIT_OBJECTS: nothing is followed, so the stop is the roots' enumeration.
        0
    }));
    outcome.unwrap_or_else(|_| {
        state.aborted = true;
        sys::JVMTI_VISIT_ABORT as jint
    })
}

/// A JVMTI environment disposed when dropped.
pub(super) struct TempEnv(Jvmti);

impl Drop for TempEnv {
    fn drop(&mut self) {
        let _ = self.0.dispose();
    }
}

impl Search {
    /// Names the threads, platform then virtual, and marks each so that the enumeration tells
    /// whose stack a local is on.
    pub(super) fn name_threads(
        &mut self,
        env: &Env,
        threads: &[jobject],
        virtuals: &[jobject],
        marks: Option<&TempEnv>,
    ) {
        for (i, &thread) in threads.iter().enumerate() {
            let name = env
                .jvmti
                .thread_info(thread)
                .map(|info| info.name)
                .unwrap_or_else(|_| "(unnamed thread)".into());
            self.threads.push(name);
            if let Some(marks) = marks {
                let _ = marks.0.set_tag(thread, thread_marker(i));
            }
        }
        // Virtual threads: their own markers, and an array of them the enumeration walks into.
        let first_virtual = self.threads.len();
        for (i, &thread) in virtuals.iter().enumerate() {
            let name = env
                .jvmti
                .thread_info(thread)
                .map(|info| info.name)
                .ok()
                .filter(|name| !name.is_empty())
                // SAFETY: the worker's own JNIEnv; `thread` is a global reference.
                .or_else(|| unsafe { vthreads::id(env.jni, thread) }.map(|id| format!("#{id}")))
                .unwrap_or_else(|| "(unnamed)".into());
            self.threads.push(name);
            if let Some(marks) = marks {
                let _ = marks.0.set_tag(thread, thread_marker(first_virtual + i));
            }
        }
        self.first_virtual = first_virtual;
    }

    /// The one stop: lists every root's object, marked in `marks`, and fetches the marked
    /// objects back by weak references; `marks` is disposed with its tags.
    pub(super) fn enumerate_roots(
        &mut self,
        env: &Env,
        marks: TempEnv,
        virtuals: &[jobject],
    ) -> Enumerated {
        let jni = env.jni;
        let mut state = RootsState {
            roots: Vec::new(),
            objects: 0,
            first_virtual: self.first_virtual,
            in_virtual: false,
            deadline: Instant::now() + ROOTS_LIMIT,
            calls: 0,
            aborted: false,
        };
        // SAFETY: the worker's own JNIEnv, on a Java thread that may run Java code.
        let virtual_array = unsafe { vthreads::as_array(jni, virtuals) };
        if !virtual_array.is_null() {
            let _ = marks.0.set_tag(virtual_array, VIRTUAL_ARRAY);
        }
        // SAFETY: the struct is all optional function pointers, for which zero means `None`.
        let mut callbacks: sys::jvmtiHeapCallbacks = unsafe { std::mem::zeroed() };
        callbacks.heap_reference_callback = Some(roots_callback);
        let stop = Instant::now();
        // SAFETY: the callback takes `RootsState` as user data, which outlives the call.
        let failed = unsafe {
            marks
                .0
                .follow_references(&callbacks, (&mut state as *mut RootsState).cast::<c_void>())
        }
        .is_err();
        self.roots_pause = stop.elapsed();
        let (objects, identities) = fetch_marked(env, &marks.0, state.objects);
        drop(marks);
        if !virtual_array.is_null() {
            jni!(jni, DeleteGlobalRef, virtual_array);
        }
        Enumerated {
            state,
            objects,
            identities,
            failed,
        }
    }

    /// Says what the listing left out, if anything, and starts noting what frames, JNI locals
    /// and monitors hold (for the next search's `lasting`) when it listed them all.
    pub(super) fn say_listing(
        &mut self,
        enumerated: Option<&Enumerated>,
        (virtuals, more_virtual): (usize, bool),
    ) {
        let Some(e) = enumerated else { return };
        if !e.failed && !e.state.aborted {
            self.locals = Some(Identities::default());
        }
        if e.failed || e.state.aborted {
            self.incomplete = format!(
                "the GC roots' enumeration {} after {} ms: {} not searched",
                if e.state.aborted {
                    "was abandoned"
                } else {
                    "failed"
                },
                self.roots_pause.as_millis(),
                if e.state.in_virtual {
                    "some virtual threads' frames were"
                } else {
                    "locals and JNI references were"
                }
            );
        } else if more_virtual {
            self.incomplete = format!(
                "the frames of {virtuals} virtual threads were searched, not of the others"
            );
        }
    }

    fn memcity_thread(&self, thread: Option<usize>) -> bool {
        thread
            .and_then(|i| self.threads.get(i))
            .is_some_and(|n| is_memcity_thread(n))
    }

    /// Every thread is a root, whether or not the enumeration reported it.
    pub(super) fn thread_roots(
        &self,
        jni: *mut JNIEnv,
        threads: &[jobject],
        wanted: &Wanted<'_>,
        roots: &mut Vec<(PathRoot, RootObject)>,
    ) {
        for (i, &thread) in threads.iter().enumerate() {
            let order = if self.memcity_thread(Some(i)) {
                RootOrder::Memcity
            } else {
                RootOrder::Thread
            };
            let root = PathRoot {
                kind: RootKind::Thread,
                order,
                thread: Some(i),
                method: 0,
                location: 0,
                class: 0,
                field: String::new(),
            };
            if wanted.wants(&root, &self.threads) {
                roots.push((root, RootObject::Held(new_weak(jni, thread))));
            }
        }
    }

    /// The roots the enumeration listed (locals, JNI references, monitors), but a moment's
    /// locals; the references to the objects no root kept go at once.
    pub(super) fn listed_roots(
        &mut self,
        env: &mut Env,
        enumerated: &Enumerated,
        facts: &ClassFacts<'_>,
        (lasting, wanted): (&Identities, &Wanted<'_>),
        roots: &mut Vec<(PathRoot, RootObject)>,
    ) {
        let jni = env.jni;
        let mut kept = vec![false; enumerated.objects.len()];
        for raw in &enumerated.state.roots {
            if raw.is_thread || raw.kind == RootKind::Thread {
                continue; // every thread is a root already (`thread_roots`)
            }
            let object = enumerated
                .objects
                .get(raw.object)
                .copied()
                .unwrap_or(ptr::null_mut());
            if object.is_null() {
                continue;
            }
            let order = self.listed_order(env, raw, facts);
            // A frame's local that held another object at the last enumeration (seconds ago)
            // is a moment's: a request's objects, a map just built and dropped again. A leak
            // lasts, and so does a frame that holds one (a loop that never returns): that
            // object was there the last time too. Entered, a moment's graph stays in the heap
            // while the search is inside it (its local references are roots to the GC, and
            // ZGC, Shenandoah and G1 keep what a weak one yields while they mark): a
            // million-entry map the application dropped, for seconds.
            if is_transient(raw.kind) && order != RootOrder::Memcity {
                let identity = enumerated.identities.get(raw.object).copied().unwrap_or(0);
                if let Some(locals) = self.locals.as_mut() {
                    if locals.len() < MAX_ROOTS_NOTED {
                        locals.insert(identity);
                    }
                }
                if !lasting.contains(&identity) {
                    self.transient_locals += 1;
                    continue;
                }
            }
            let root = PathRoot {
                kind: raw.kind,
                order,
                thread: raw.thread,
                method: raw.method,
                location: raw.location,
                class: 0,
                field: String::new(),
            };
            if wanted.wants(&root, &self.threads) {
                kept[raw.object] = true;
                // Shared with other roots of the same object: released once, when the search
                // has come to the last of them (`let_go_of_root`) or at its end.
                roots.push((root, RootObject::Held(object)));
            }
        }
        for (object, kept) in enumerated.objects.iter().zip(&kept) {
            if !kept && !object.is_null() {
                jni!(jni, DeleteWeakGlobalRef, *object);
            }
        }
    }

    /// A listed root's order: memcity's own threads last, an application frame's local before
    /// the JDK's frames and JNI references.
    fn listed_order(&self, env: &mut Env, raw: &RawRoot, facts: &ClassFacts<'_>) -> RootOrder {
        if self.memcity_thread(raw.thread) {
            return RootOrder::Memcity;
        }
        let jni = env.jni;
        let application_frame = raw.method != 0
            && env
                .jvmti
                .method_declaring_class(raw.method as jni::sys::jmethodID)
                .ok()
                .and_then(|class| {
                    let id = (env.class_id)(class);
                    jni!(jni, DeleteLocalRef, class);
                    id
                })
                .is_some_and(|id| facts.is_app(id));
        match raw.kind {
            RootKind::StackLocal if application_frame => RootOrder::ApplicationLocal,
            RootKind::StackLocal | RootKind::JniLocal | RootKind::Monitor => RootOrder::OtherLocal,
            _ => RootOrder::JniGlobal,
        }
    }

    /// Static reference fields of the loaded, initialized classes, read when their turn comes.
    pub(super) fn static_roots(
        &self,
        env: &mut Env,
        facts: &ClassFacts<'_>,
        wanted: &Wanted<'_>,
        roots: &mut Vec<(PathRoot, RootObject)>,
    ) {
        let (jni, jvmti) = (env.jni, env.jvmti);
        let Ok(classes) = jvmti.loaded_classes() else {
            return;
        };
        for &class in classes.as_slice() {
            let initialized = jvmti
                .class_status(class)
                .is_ok_and(|s| s & sys::JVMTI_CLASS_STATUS_INITIALIZED as jint != 0);
            let Some(id) = (initialized).then(|| (env.class_id)(class)).flatten() else {
                continue;
            };
            let Ok(fields) = jvmti.class_fields(class) else {
                continue;
            };
            let name = facts.name(id);
            let order = if is_memcity_class(name) {
                RootOrder::Memcity
            } else if facts.is_app(id) {
                RootOrder::ApplicationStatic
            } else {
                RootOrder::JdkStatic
            };
            let mut held: jobject = ptr::null_mut();
            for &field in fields.as_slice() {
                let statik = jvmti
                    .field_modifiers(class, field)
                    .is_ok_and(|m| m & ACC_STATIC != 0);
                if !statik {
                    continue;
                }
                let Ok((field_name, signature)) = jvmti.field_name(class, field) else {
                    continue;
                };
                let signature = signature.to_string_lossy();
                if !(signature.starts_with('L') || signature.starts_with('[')) {
                    continue;
                }
                let root = PathRoot {
                    kind: RootKind::StaticField,
                    order,
                    thread: None,
                    method: 0,
                    location: 0,
                    class: id,
                    field: field_name.to_string_lossy(),
                };
                if !wanted.wants(&root, &self.threads) {
                    continue;
                }
                if held.is_null() {
                    held = new_global(jni, class);
                }
                roots.push((root, RootObject::Static(held, field)));
            }
            jni!(jni, DeleteLocalRef, class);
        }
    }

    /// Takes the roots in their order. Stable: within an order, the JVM's own order (threads
    /// as listed, locals top frame first, classes as loaded). Preferred roots first within
    /// their order, never before a root of an earlier one: what a root finds first it is
    /// credited with, and a frame's local that held the leak once (a request loop touching a
    /// static deque) must not claim it from the static field in every later search.
    pub(super) fn order_roots(
        &mut self,
        mut roots: Vec<(PathRoot, RootObject)>,
        preferred: &[RootKey],
    ) {
        let threads = &self.threads;
        roots.sort_by_cached_key(|(root, _)| {
            let key = root.key(threads);
            (
                root.order,
                preferred
                    .iter()
                    .position(|p| p.key == key)
                    .unwrap_or(usize::MAX),
            )
        });
        self.roots = roots;
    }
}

/// The objects the enumeration marked, fetched back by their markers: each by a weak global
/// reference (null when gone), and its identity hash.
fn fetch_marked(env: &Env, marks: &Jvmti, count: usize) -> (Vec<jobject>, Vec<u32>) {
    let jni = env.jni;
    let markers: Vec<jlong> = (0..count).map(object_marker).collect();
    let mut objects = vec![ptr::null_mut(); count];
    let mut identities = vec![0; count];
    for chunk in markers.chunks(1024) {
        let Ok((found, found_tags)) = marks.objects_with_tags(chunk) else {
            continue;
        };
        for (&object, &tag) in found.as_slice().iter().zip(found_tags.as_slice()) {
            if let Some((false, index)) = marker_index(tag) {
                if let Some(slot) = objects.get_mut(index) {
                    *slot = new_weak(jni, object);
                    identities[index] = env.jvmti.object_hash(object).unwrap_or(0) as u32;
                }
            }
            jni!(jni, DeleteLocalRef, object);
        }
    }
    (objects, identities)
}
