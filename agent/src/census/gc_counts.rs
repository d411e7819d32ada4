//! Exact type totals from the GC itself, where HotSpot has them: JFR's `jdk.ObjectCountAfterGC`.
//!
//! Inside full GCs (G1, Parallel, Serial) and G1 remark pauses, HotSpot can count the live objects
//! of every class with the collector's own marking (gcTrace.cpp `report_object_count_after_gc`,
//! in parallel on the GC workers since JDK-8307348), for a few nanoseconds per object against the
//! ~190 of a JVMTI walk. It does so only while a JFR recording asks for the event. The agent
//! starts one in-process: it defines a small Java class (`agent/java/memcity/GcCounts.java`, built
//! by `build.rs`) that opens a `RecordingStream` and hands every event to the native methods
//! below, which only queue it. The worker takes whole GCs' counts from the queue and reconciles
//! its estimates with them (`Worker::reconcile`).
//!
//! Where it cannot help: ZGC never sends the event and Epsilon never collects, so the agent starts
//! no stream with them (`worker::jvm::gc_counts_types`); Shenandoah sends it only in the versions
//! that count (a stream that hears nothing costs little); young GCs count nothing; classes
//! under `ObjectCountCutOffPercent` of the counted bytes (0.5 % by default, an experimental flag)
//! are not reported, so their estimates stand; a G1 remark counts objects allocated during
//! marking too, so its count only lowers an estimate above it (`GcCount::exact`, told by the
//! GC's name in `jdk.GarbageCollection`); JDK 11 to 13 have no `RecordingStream`.
//!
//! Counting lengthens the pauses it runs in, so the worker turns the event off while the
//! predicted addition (live objects times the measured time per object, from the GC's "Report
//! Object Count" phase) is past the `gc_counts` option, and on again when it fits.
//!
//! The stream's JFR repository goes to memcity's run directory, not the application's /tmp
//! (`repository.rs`).

pub(crate) mod repository;

use crate::jvmti::JavaError;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use jni::objects::{GlobalRef, JClass, JObject, JString, JValue};
use jni::{JNIEnv, NativeMethod};

/// One GC's counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GcCount {
    pub gc_id: u64,
    /// When the GC counted, milliseconds since the Unix epoch.
    pub time_unix_ms: u64,
    /// `(JFR class name, live objects, live bytes)`.
    pub classes: Vec<(String, u64, u64)>,
    /// What counting added to the pause, when the GC reported its phase.
    pub phase_ns: Option<u64>,
    /// A full GC's count: every object it counted was live. Any other count is an upper bound:
    /// a G1 remark counts as live everything allocated since its marking began (the young
    /// regions' garbage too), and a GC not yet known to be full is taken for such a one.
    pub exact: bool,
}

/// JFR's names of the collections that count after marking the whole heap and collecting it
/// (HotSpot's `gcName.hpp`).
fn is_full_collection(name: &str) -> bool {
    matches!(name, "G1Full" | "ParallelOld" | "SerialOld" | "PSMarkSweep")
}

#[derive(Default)]
struct Inbox {
    /// Counts still arriving, by GC id.
    open: BTreeMap<u64, GcCount>,
    /// Phase times that arrived before (or without) their counts.
    phases: HashMap<u64, u64>,
    /// The GCs known to be full collections.
    full: HashSet<u64>,
    /// Whole GCs, ready for the worker.
    ready: Vec<GcCount>,
}

/// Most GCs kept waiting for the worker; older ones are dropped (a worker that slow has bigger
/// problems, and the newest count is the one that matters).
const MAX_READY: usize = 16;

static INBOX: Mutex<Option<Inbox>> = Mutex::new(None);

fn with_inbox<T>(f: impl FnOnce(&mut Inbox) -> T) -> T {
    let mut guard = INBOX.lock().unwrap_or_else(|p| p.into_inner());
    f(guard.get_or_insert_with(Inbox::default))
}

/// Whether the application runs JFR itself (a recording or JFR options on its command line):
/// otherwise memcity's stream for GC counts is the JVM's only JFR, and what JFR makes and logs is
/// memcity's doing.
pub fn application_uses_jfr(command_line: &str) -> bool {
    command_line.contains("FlightRecord")
}

/// Set once memcity starts the JVM's only JFR (see [`claim_jfr_threads`]).
static JFR_THREADS_OURS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called as memcity starts its JFR stream: when the application runs no JFR of its own, JFR's
/// threads (`JFR Periodic Tasks`, `JFR Event Stream`, ...) exist for memcity alone, and what
/// they allocate and hold is memcity's, not growth of the application's.
pub fn claim_jfr_threads(command_line: &str) {
    if !application_uses_jfr(command_line) {
        JFR_THREADS_OURS.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Whether a thread of this name is one of JFR's, started for memcity alone.
pub fn is_our_jfr_thread(name: &str) -> bool {
    name.starts_with("JFR ") && JFR_THREADS_OURS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Removes the JFR repositories of JVMs that are gone (see `repository.rs`); for an agent's
/// start.
pub fn clear_stale_repositories() {
    repository::clear_stale();
}

/// Every GC whose counts are complete (a stream flush ends a chunk, and a GC's events are all in
/// one chunk: they are written together at the end of its pause).
pub fn take_ready() -> Vec<GcCount> {
    with_inbox(|inbox| std::mem::take(&mut inbox.ready))
}

extern "system" fn counted(
    mut env: JNIEnv,
    _class: JClass,
    gc_id: jni::sys::jlong,
    name: JString,
    count: jni::sys::jlong,
    bytes: jni::sys::jlong,
    time_ms: jni::sys::jlong,
) {
    // Called on JFR's stream thread: a panic must not unwind into the JVM.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Ok(name) = env.get_string(&name).map(String::from) else {
            let _ = env.exception_clear();
            return;
        };
        with_inbox(|inbox| {
            let entry = inbox.open.entry(gc_id as u64).or_default();
            entry.gc_id = gc_id as u64;
            entry.time_unix_ms = time_ms.max(0) as u64;
            entry
                .classes
                .push((name, count.max(0) as u64, bytes.max(0) as u64));
        });
    }));
}

extern "system" fn phase(
    _env: JNIEnv,
    _class: JClass,
    gc_id: jni::sys::jlong,
    nanos: jni::sys::jlong,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        with_inbox(|inbox| {
            inbox.phases.insert(gc_id as u64, nanos.max(0) as u64);
        });
    }));
}

extern "system" fn collected(
    mut env: JNIEnv,
    _class: JClass,
    gc_id: jni::sys::jlong,
    name: JString,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let Ok(name) = env.get_string(&name).map(String::from) else {
            let _ = env.exception_clear();
            return;
        };
        if is_full_collection(&name) {
            with_inbox(|inbox| inbox.full.insert(gc_id as u64));
        }
    }));
}

extern "system" fn flushed(_env: JNIEnv, _class: JClass) {
    let _ = catch_unwind(AssertUnwindSafe(|| with_inbox(hand_over)));
}

/// A chunk was read: the GCs counted in it are complete.
fn hand_over(inbox: &mut Inbox) {
    let open = std::mem::take(&mut inbox.open);
    for (gc_id, mut count) in open {
        count.phase_ns = inbox.phases.remove(&gc_id);
        // A full GC's end is written with its counts, in the same pause.
        count.exact = inbox.full.remove(&gc_id);
        inbox.ready.push(count);
    }
    // Phases and names of older GCs that counted nothing (the event was off) are of no use.
    let newest = inbox.ready.iter().map(|c| c.gc_id).max().unwrap_or(0);
    inbox.phases.retain(|&id, _| id > newest);
    inbox.full.retain(|&id| id > newest);
    // While counting is off, full GCs' names still come and no counts take them away.
    while inbox.full.len() > MAX_READY {
        if let Some(&oldest) = inbox.full.iter().min() {
            inbox.full.remove(&oldest);
        }
    }
    let excess = inbox.ready.len().saturating_sub(MAX_READY);
    inbox.ready.drain(..excess);
}

/// The running JFR stream. A clone is a second handle on the same stream, for a call made on
/// another thread (`aside.rs`).
#[derive(Clone)]
pub struct GcCounts {
    class: GlobalRef,
    stream: GlobalRef,
    enabled: bool,
}

#[cfg(memcity_gc_counts)]
const CLASS_FILE: Option<&[u8]> = Some(include_bytes!(concat!(
    env!("OUT_DIR"),
    "/memcity/GcCounts.class"
)));
#[cfg(not(memcity_gc_counts))]
const CLASS_FILE: Option<&[u8]> = None;

/// The class of the pending Java exception, if one is pending; cleared, so nothing is printed.
fn pending_exception(env: &mut JNIEnv) -> Option<String> {
    if !env.exception_check().unwrap_or(false) {
        return None;
    }
    let thrown = env.exception_occurred().ok();
    let _ = env.exception_clear();
    let name = thrown
        .and_then(|t| {
            let class = env.get_object_class(&t).ok()?;
            let name = env
                .call_method(&class, "getName", "()Ljava/lang/String;", &[])
                .ok()?
                .l()
                .ok()?;
            let _ = env.exception_clear();
            env.get_string(&JString::from(name)).ok().map(String::from)
        })
        .unwrap_or_else(|| "an exception".into());
    Some(name)
}

/// A JNI call's result with a pending Java exception turned into its error (cleared).
pub(crate) fn check(
    env: &mut JNIEnv,
    what: &str,
    result: jni::errors::Result<()>,
) -> Result<(), JavaError> {
    match pending_exception(env) {
        Some(exception) => Err(JavaError::Threw {
            what: what.to_string(),
            exception,
        }),
        None => result.map_err(|e| JavaError::jni(what, e)),
    }
}

/// The error of a JNI call that failed: the exception it threw (cleared), else JNI's own.
pub(crate) fn thrown(env: &mut JNIEnv, what: &str, error: jni::errors::Error) -> JavaError {
    match pending_exception(env) {
        Some(exception) => JavaError::Threw {
            what: what.to_string(),
            exception,
        },
        None => JavaError::jni(what, error),
    }
}

impl GcCounts {
    /// Defines the helper class in the system class loader and starts the stream.
    pub fn start(env: &mut JNIEnv) -> Result<GcCounts, JavaError> {
        let bytes = CLASS_FILE.ok_or(JavaError::NoHelperClass)?;
        let framed = env.with_local_frame(16, |env| {
            Ok::<_, jni::errors::Error>(Self::start_in_frame(env, bytes))
        });
        framed.map_err(|e| JavaError::jni("JNI local frame", e))?
    }

    fn start_in_frame(env: &mut JNIEnv, bytes: &[u8]) -> Result<GcCounts, JavaError> {
        {
            let loader = env
                .call_static_method(
                    "java/lang/ClassLoader",
                    "getSystemClassLoader",
                    "()Ljava/lang/ClassLoader;",
                    &[],
                )
                .and_then(|v| v.l());
            let loader = match loader {
                Ok(l) => l,
                Err(e) => {
                    return Err(thrown(env, "no system class loader", e));
                }
            };
            // A session before a detach may have defined it already (a class cannot be defined
            // twice in one loader); it is the same class file.
            let name: JObject = env
                .new_string("memcity.GcCounts")
                .map_err(|e| JavaError::jni("JNI", e))?
                .into();
            let defined = env
                .call_static_method(
                    "java/lang/Class",
                    "forName",
                    "(Ljava/lang/String;ZLjava/lang/ClassLoader;)Ljava/lang/Class;",
                    &[
                        JValue::Object(&name),
                        JValue::Bool(0),
                        JValue::Object(&loader),
                    ],
                )
                .and_then(|v| v.l());
            let defined = match defined {
                Ok(class) if !class.is_null() => Some(JClass::from(class)),
                _ => {
                    let _ = env.exception_clear();
                    None
                }
            };
            let class = match defined
                .map_or_else(|| env.define_class("memcity/GcCounts", &loader, bytes), Ok)
            {
                Ok(c) => c,
                Err(e) => {
                    // An old JDK refuses the class file (JFR streaming needs JDK 14).
                    return Err(thrown(env, "the JVM refused the JFR helper class", e));
                }
            };
            let natives = [
                NativeMethod {
                    name: "counted".into(),
                    sig: "(JLjava/lang/String;JJJ)V".into(),
                    fn_ptr: counted as *mut std::ffi::c_void,
                },
                NativeMethod {
                    name: "phase".into(),
                    sig: "(JJ)V".into(),
                    fn_ptr: phase as *mut std::ffi::c_void,
                },
                NativeMethod {
                    name: "collected".into(),
                    sig: "(JLjava/lang/String;)V".into(),
                    fn_ptr: collected as *mut std::ffi::c_void,
                },
                NativeMethod {
                    name: "flushed".into(),
                    sig: "()V".into(),
                    fn_ptr: flushed as *mut std::ffi::c_void,
                },
            ];
            // Before the stream starts: a killed JVM would leave its first chunk in /tmp.
            let repository = repository::place(env)
                .map_err(|e| e.in_step("JFR's repository cannot be kept out of java.io.tmpdir"))?;
            crate::log::debug!("the GC counts' JFR repository: {repository}");
            let registered = env.register_native_methods(&class, &natives);
            check(env, "cannot register the JFR callbacks", registered)?;
            let started = env.call_static_method(&class, "start", "()Ljava/lang/Object;", &[]);
            let stream = match started.and_then(|v| v.l()) {
                Ok(stream) => stream,
                Err(e) => {
                    return Err(thrown(env, "JFR did not start", e));
                }
            };
            let class = env
                .new_global_ref(&class)
                .map_err(|e| JavaError::jni("global reference", e))?;
            let stream = env
                .new_global_ref(stream)
                .map_err(|e| JavaError::jni("global reference", e))?;
            Ok(GcCounts {
                class,
                stream,
                enabled: true,
            })
        }
    }

    /// Closes the stream (its thread ends); for a detach.
    pub fn stop(&mut self, env: &mut JNIEnv) -> Result<(), JavaError> {
        let class: &JClass = self.class.as_obj().into();
        let stream: &JObject = self.stream.as_obj();
        let result = env
            .call_static_method(
                class,
                "stop",
                "(Ljava/lang/Object;)V",
                &[JValue::Object(stream)],
            )
            .map(|_| ());
        check(env, "cannot stop the GC counts' JFR stream", result)
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Turns counting on or off for the following GCs; [`switched`](Self::switched) records it
    /// once done (the call may be made on another thread, from a clone).
    pub fn set_enabled(&self, env: &mut JNIEnv, on: bool) -> Result<(), JavaError> {
        let class: &JClass = self.class.as_obj().into();
        let stream: &JObject = self.stream.as_obj();
        let result = env
            .call_static_method(
                class,
                "setEnabled",
                "(Ljava/lang/Object;Z)V",
                &[JValue::Object(stream), JValue::Bool(u8::from(on))],
            )
            .map(|_| ());
        check(env, "cannot switch GC counts", result)
    }

    /// Counting was turned on or off.
    pub fn switched(&mut self, on: bool) {
        self.enabled = on;
    }
}

/// JFR names arrays by descriptor with dots (`[J`, `[Ljava.lang.String;`), other classes by
/// their binary name (`java.util.HashMap$Node`): the names the class table uses.
pub fn java_name(jfr_name: &str) -> String {
    if jfr_name.starts_with('[') {
        crate::names::java_name(&jfr_name.replace('.', "/"))
    } else {
        jfr_name.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jfr_names_become_table_names() {
        assert_eq!(java_name("[J"), "long[]");
        assert_eq!(java_name("[[Ljava.lang.String;"), "java.lang.String[][]");
        assert_eq!(
            java_name("java.util.HashMap$Node"),
            "java.util.HashMap$Node"
        );
    }

    #[test]
    fn a_flush_hands_over_whole_gcs_with_their_phase() {
        let mut inbox = Inbox::default();
        inbox.phases.insert(3, 50); // a GC that counted nothing
        inbox.phases.insert(7, 1_000);
        inbox.phases.insert(9, 2_000); // its counts are still to come
        inbox.open.insert(
            7,
            GcCount {
                gc_id: 7,
                time_unix_ms: 5,
                classes: vec![("[J".into(), 10, 160)],
                ..Default::default()
            },
        );
        inbox.full.insert(7);
        hand_over(&mut inbox);
        assert_eq!(inbox.ready.len(), 1);
        assert_eq!(inbox.ready[0].phase_ns, Some(1_000));
        assert!(inbox.ready[0].exact, "its name said it was full");
        assert!(inbox.full.is_empty());
        assert!(inbox.open.is_empty());
        assert_eq!(inbox.phases.keys().copied().collect::<Vec<_>>(), [9]);
        for id in 10..40 {
            inbox.open.insert(
                id,
                GcCount {
                    gc_id: id,
                    ..Default::default()
                },
            );
        }
        hand_over(&mut inbox);
        assert_eq!(inbox.ready.len(), MAX_READY, "the newest are kept");
        assert_eq!(inbox.ready.last().unwrap().gc_id, 39);
        assert!(
            inbox.ready.iter().all(|c| !c.exact),
            "a GC not known to be full counts as an upper bound"
        );
    }

    #[test]
    fn only_full_collections_count_exactly() {
        for full in ["G1Full", "ParallelOld", "SerialOld", "PSMarkSweep"] {
            assert!(is_full_collection(full), "{full}");
        }
        // G1's concurrent cycle (its remark counts), young GCs, ZGC, Shenandoah.
        for not in [
            "G1Old",
            "G1New",
            "ParallelScavenge",
            "DefNew",
            "Z",
            "ZMajor",
            "Shenandoah",
        ] {
            assert!(!is_full_collection(not), "{not}");
        }
    }
}
