//! The end of a leak: the Java heap runs out, and the JVM may exit without the usual VMDeath.
//!
//! Why: a leak ends in `OutOfMemoryError`, and that is when a user most needs the holder. Two
//! things made a session end without it (LinkedListLeak in a 128 MB heap: the recording stopped
//! seconds before the error, with no session end):
//! - The worker itself allocated (a canary `Object`, JFR), so with the heap full it stood in the
//!   GC queue with the application and took no snapshot. The worker now allocates nothing once
//!   the heap is nearly full or out ([`HeapGauge::tight`]).
//! - After an uncaught OutOfMemoryError in `main`, `DestroyJavaVM` has to allocate the thread
//!   object it attaches as; with the heap full that fails, the launcher simply calls `exit`, and
//!   VMDeath never comes. [`on_process_exit`] (an `atexit` handler) ends the session then.
//!
//! At the error itself, JVMTI posts `ResourceExhausted` (Java heap) on the allocating thread,
//! in native state, before the error is thrown and holding no GC lock. [`on_resource_exhausted`]
//! keeps that thread there (at most `oom_wait`) while the worker estimates the heap and runs a
//! path search to the deadline, and publishes the snapshot (`TRIGGER_OUT_OF_MEMORY`). Only the
//! first one: every failing allocation on every thread posts the event, and an application may
//! catch the error and go on.
//!
//! What cannot be seen: with `-XX:+ExitOnOutOfMemoryError` (or `CrashOnOutOfMemoryError`)
//! HotSpot exits before it posts the event (`report_java_out_of_memory` comes first in
//! `MemAllocator::Allocation::check_out_of_memory`); JDK 17 exits through `exit` (our handler
//! runs, on a thread inside the VM, so it waits for no JNI), JDK 18 and later through `_exit`
//! (nothing runs). The recording then ends with the last GC-time snapshot, whose `heap` says how
//! full the heap was; `memcity report` states the likely error from that and the JVM's flags.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::time::{Duration, Instant};

use jni::sys::{jclass, jint, jmethodID, jobject, jvalue, JNIEnv, JavaVM, JNI_OK};

use crate::jvmti::sys;
use crate::log::{info, warning};
use crate::{in_callback, Agent};

/// What the thread that ran out asks of the worker.
pub(crate) struct OomRequest {
    pub message: String,
    pub thread: String,
    pub at: Instant,
    pub wait: Duration,
}

/// `Agent::oom_state`: no error yet; one asked for a snapshot; the snapshot is out.
pub(crate) const OOM_NONE: u8 = 0;
pub(crate) const OOM_ASKED: u8 = 1;
pub(crate) const OOM_DONE: u8 = 2;

/// The worker's share of the OOM wait: the rest is for publishing and the callback's return.
pub(crate) const SEARCH_SHARE_OF_WAIT: f64 = 0.8;

thread_local! {
    /// Set on memcity's own threads: their allocation failing must not wait for the worker
    /// (the worker would wait for itself).
    static MEMCITY_THREAD: Cell<bool> = const { Cell::new(false) };
}

pub(crate) fn mark_memcity_thread() {
    MEMCITY_THREAD.with(|m| m.set(true));
}

/// The JVM, for [`on_process_exit`] to ask whether the exiting thread is inside it.
static VM: AtomicPtr<JavaVM> = AtomicPtr::new(std::ptr::null_mut());

/// Registers [`on_process_exit`] once per process (a later attach reuses it).
pub(crate) fn watch_process_exit(vm: *mut JavaVM) {
    if VM.swap(vm, Ordering::AcqRel).is_null() {
        // SAFETY: `on_process_exit` is a plain `extern "C" fn()` that never unwinds (guarded);
        // the library is linked `-z nodelete`, so it is still mapped when exit runs it.
        if unsafe { libc::atexit(on_process_exit) } != 0 {
            warning!("cannot watch the process's exit: a JVM that exits without VMDeath (after an OutOfMemoryError) leaves the session without its end");
        }
    }
}

/// JVMTI `ResourceExhausted`. Runs on the thread whose allocation failed, in native state.
pub(crate) unsafe extern "C" fn on_resource_exhausted(
    _jvmti: *mut sys::jvmtiEnv,
    _jni: *mut JNIEnv,
    flags: jint,
    _reserved: *const c_void,
    description: *const c_char,
) {
    in_callback("ResourceExhausted", || {
        if flags & sys::JVMTI_RESOURCE_EXHAUSTED_JAVA_HEAP as jint == 0 {
            return; // threads, metaspace, an array past the VM's limit: not a leak's end
        }
        if MEMCITY_THREAD.with(Cell::get) {
            return;
        }
        let Some(agent) = Agent::get() else { return };
        let Some(wait) = agent.options.oom_wait else {
            return;
        };
        if agent
            .oom_state
            .compare_exchange(OOM_NONE, OOM_ASKED, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        // Once is all a session takes; and each further post is one more line of the JVM's
        // own log on some JDKs.
        let _ = agent
            .jvmti
            .disable_event(sys::jvmtiEvent_JVMTI_EVENT_RESOURCE_EXHAUSTED);
        let message = if description.is_null() {
            "Java heap space".to_string()
        } else {
            // SAFETY: the JVM passes a NUL-terminated description valid during the callback.
            unsafe { CStr::from_ptr(description) }
                .to_string_lossy()
                .into_owned()
        };
        let thread = agent
            .jvmti
            .thread_info(std::ptr::null_mut())
            .map(|t| t.name)
            .unwrap_or_default();
        let at = Instant::now();
        *agent.oom.lock().unwrap_or_else(|p| p.into_inner()) = Some(OomRequest {
            message: message.clone(),
            thread: thread.clone(),
            at,
            wait,
        });
        agent.wake();
        while agent.oom_state.load(Ordering::Acquire) != OOM_DONE
            && at.elapsed() < wait
            && !agent.worker_done.load(Ordering::Acquire)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        info!(
            "OutOfMemoryError ({message}) in thread \"{thread}\": {} in {} ms",
            if agent.oom_state.load(Ordering::Acquire) == OOM_DONE {
                "the heap's last snapshot and its paths are taken"
            } else {
                "no snapshot within oom_wait"
            },
            at.elapsed().as_millis()
        );
    });
}

/// Share of the maximum heap from which the JVM's lines below are turned off: only in a JVM
/// whose heap fills up, since turning them off runs a diagnostic command, which loads
/// management classes and makes objects in the application's heap.
pub(crate) const QUIET_SHARE: f64 = 0.75;

/// The diagnostic command that turns off on the application's stdout the lines the JVM prints
/// there at error level only because of memcity, each for its own tag set alone (`VM.log
/// output=stdout what=...=off`; every other tag keeps its level); `None` if there are none:
/// - HotSpot logs every `ResourceExhausted` it posts (`[error][jvmti] Posting Resource Exhausted
///   event: Java heap space`), an event on only because memcity asked for it;
/// - JFR logs its periodic tasks failing (`[error][jfr,system] Error in Periodic task:
///   java.lang.OutOfMemoryError`) from the stream memcity may start for GC counts
///   (`jfr_stream`: asked for, with a collector that counts), and that stream failing to stop
///   with the heap full (`[warning][jfr] Recording Recording Stream: ... could not be
///   stopped`), unless the application uses JFR itself.
///
/// Each is left alone where the command line asks for that logging or for JFR. A heap that
/// runs out before a GC has shown it three quarters full may still get the first line, once.
pub(crate) fn quiet_command(agent: &Agent, command_line: &str, jfr_stream: bool) -> Option<String> {
    let mut tags = Vec::new();
    if agent.heap_exhaustion && !asks_for_logging(command_line, "jvmti") {
        tags.push("jvmti=off");
    }
    if jfr_stream
        && !asks_for_logging(command_line, "jfr")
        && !crate::census::gc_counts::application_uses_jfr(command_line)
    {
        tags.push("jfr+system=off");
        tags.push("jfr=off");
    }
    (!tags.is_empty()).then(|| format!("VM.log output=stdout what={}", tags.join(",")))
}

/// Runs [`quiet_command`]'s command. A diagnostic command loads management classes and makes
/// objects in the application's heap, three quarters full by now: the worker has it made on a
/// thread of its own (`aside.rs`).
pub(crate) fn quiet_the_jvms_lines(
    env: &mut jni::JNIEnv,
    command: &str,
) -> Result<(), crate::jvmti::JavaError> {
    match crate::census::gc_counts::repository::diagnostic_command(env, command) {
        Ok(_) => info!("the Java heap is three quarters full: the JVM's lines that memcity would cause on stdout are turned off ({command})"),
        Err(e) => crate::log::debug!("cannot quiet the JVM's lines on stdout ({command}): {e}"),
    }
    Ok(())
}

/// Whether an `-Xlog` option of the command line mentions `tag`.
fn asks_for_logging(command_line: &str, tag: &str) -> bool {
    command_line
        .split_whitespace()
        .any(|arg| arg.starts_with("-Xlog") && arg.contains(tag))
}

/// Longest the exit waits for the worker's last snapshot.
const EXIT_WAIT: Duration = Duration::from_secs(3);

/// The process exits. After VMDeath (a normal end, `System.exit`) or a detach the session is
/// over and this does nothing. Otherwise the JVM was not shut down: the launcher exits after
/// `DestroyJavaVM` failed (no heap left for its thread object), or HotSpot exits on
/// `ExitOnOutOfMemoryError` (JDK 17). From outside the VM the worker can still take the last
/// snapshot; from a thread inside it (in the VM's own state, where no safepoint can begin until
/// it leaves) JNI on the worker could block, so then the session only ends.
extern "C" fn on_process_exit() {
    crate::guarded("the process's exit", || {
        let Some(agent) = Agent::get() else { return };
        let vm = VM.load(Ordering::Acquire);
        if !vm.is_null() && !inside_vm(vm) {
            agent.stop_worker(EXIT_WAIT);
        }
        agent.phase.turn_off();
        agent.finish("exit");
    });
}

/// Whether the calling thread is attached to the JVM (`GetEnv` succeeds).
fn inside_vm(vm: *mut JavaVM) -> bool {
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: `vm` is the JavaVM the agent was loaded into, valid for the process's life; GetEnv
    // may be called from any thread and changes nothing.
    let got = unsafe {
        match (**vm).GetEnv {
            Some(get_env) => get_env(vm, &mut env, jni::sys::JNI_VERSION_1_8),
            None => return true,
        }
    };
    got == JNI_OK
}

/// Reads the Java heap's size through `Runtime` with class and method ids taken once at the
/// worker's start: `FindClass` from the worker may go through the application class loader in
/// Java (allocating), which must not happen with the heap full. `getRuntime` returns a static;
/// the three sizes are native methods.
pub(crate) struct HeapGauge {
    runtime_class: jclass,
    get_runtime: jmethodID,
    total: jmethodID,
    free: jmethodID,
    max: jmethodID,
    /// The last reading, `(used, max)`.
    last: Cell<Option<(u64, u64)>>,
}

/// Past this share of the maximum after a GC, the heap is too full for the worker to allocate.
const TIGHT_SHARE: f64 = 0.9;

impl HeapGauge {
    /// # Safety
    /// `jni` must be the calling thread's JNIEnv.
    pub(crate) unsafe fn new(jni: *mut JNIEnv) -> Option<HeapGauge> {
        // SAFETY: per contract; every call checks its result and clears an exception.
        unsafe {
            let f = &**jni;
            let local = f.FindClass?(jni, c"java/lang/Runtime".as_ptr());
            if local.is_null() {
                f.ExceptionClear?(jni);
                return None;
            }
            let runtime_class = f.NewGlobalRef?(jni, local) as jclass;
            f.DeleteLocalRef?(jni, local);
            let id = |name: &CStr, sig: &CStr, is_static: bool| {
                let id = if is_static {
                    (f.GetStaticMethodID?)(jni, runtime_class, name.as_ptr(), sig.as_ptr())
                } else {
                    (f.GetMethodID?)(jni, runtime_class, name.as_ptr(), sig.as_ptr())
                };
                if id.is_null() {
                    (f.ExceptionClear?)(jni);
                    None
                } else {
                    Some(id)
                }
            };
            Some(HeapGauge {
                runtime_class,
                get_runtime: id(c"getRuntime", c"()Ljava/lang/Runtime;", true)?,
                total: id(c"totalMemory", c"()J", false)?,
                free: id(c"freeMemory", c"()J", false)?,
                max: id(c"maxMemory", c"()J", false)?,
                last: Cell::new(None),
            })
        }
    }

    /// `(used, max)` bytes now, garbage included.
    ///
    /// # Safety
    /// `jni` must be the calling thread's JNIEnv, the one `new` was given.
    pub(crate) unsafe fn read(&self, jni: *mut JNIEnv) -> Option<(u64, u64)> {
        // SAFETY: per contract; the ids and class are from `new` and stay valid (a global
        // reference keeps `Runtime` loaded).
        let read = unsafe {
            let f = &**jni;
            // A call made with an exception pending returns nothing (it is undefined, by the JNI
            // specification): one left by an earlier call of the worker's (an allocation that
            // failed as the heap ran out) would cost the error's snapshot its heap reading.
            if (f.ExceptionCheck?)(jni) != 0 {
                crate::log::debug!("heap reading: an exception was pending on the worker thread");
                (f.ExceptionClear?)(jni);
            }
            let none: [jvalue; 0] = [];
            let runtime: jobject = (f.CallStaticObjectMethodA?)(
                jni,
                self.runtime_class,
                self.get_runtime,
                none.as_ptr(),
            );
            if runtime.is_null() {
                (f.ExceptionClear?)(jni);
                return None;
            }
            let total = (f.CallLongMethodA?)(jni, runtime, self.total, none.as_ptr());
            let free = (f.CallLongMethodA?)(jni, runtime, self.free, none.as_ptr());
            let max = (f.CallLongMethodA?)(jni, runtime, self.max, none.as_ptr());
            (f.DeleteLocalRef?)(jni, runtime);
            if (f.ExceptionCheck?)(jni) != 0 {
                (f.ExceptionClear?)(jni);
                return None;
            }
            (total.saturating_sub(free).max(0) as u64, max.max(0) as u64)
        };
        self.last.set(Some(read));
        Some(read)
    }

    /// Whether the last reading was past [`TIGHT_SHARE`] of the maximum: the worker then makes
    /// no Java object of its own (canaries, the JFR stream), which would queue for a GC with the
    /// application's allocations, and with `ExitOnOutOfMemoryError` could be the allocation
    /// that ends the JVM.
    pub(crate) fn tight(&self) -> bool {
        self.last.get().is_some_and(|(used, max)| tight(used, max))
    }
}

/// Whether a reading after a GC was past [`QUIET_SHARE`] of the maximum: the heap is filling up
/// with what survives, and estimates come more often (`worker::schedule::FILLING_ESTIMATES`).
pub(crate) fn filling(used: u64, max: u64) -> bool {
    max > 0 && used as f64 >= QUIET_SHARE * max as f64
}

/// See [`HeapGauge::tight`].
pub(crate) fn tight(used: u64, max: u64) -> bool {
    max > 0 && used as f64 >= TIGHT_SHARE * max as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logging_asked_for_on_the_command_line_is_left_alone() {
        let asks = asks_for_logging;
        assert!(asks("java -Xlog:jvmti=debug -jar app.jar", "jvmti"));
        assert!(asks("java -Xlog:gc,jvmti*=info:file=x.log App", "jvmti"));
        assert!(asks("java -Xlog:jfr+system=info App", "jfr"));
        assert!(!asks("java -Xlog:gc -jar app.jar", "jvmti"));
        assert!(!asks("java -Djvmti=1 App", "jvmti"));
    }

    #[test]
    fn a_heap_is_tight_past_nine_tenths_of_its_maximum() {
        assert!(!tight(0, 0), "an unknown maximum is not tight");
        assert!(!tight(80, 100));
        assert!(tight(90, 100));
        assert!(tight(128 << 20, 128 << 20));
    }
}
