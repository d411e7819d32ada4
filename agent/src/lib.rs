//! memcity's JVMTI agent: `java -agentpath:/path/to/libmemcity.so[=options] ...`, or loaded into
//! a running JVM by `memcity attach PID` (HotSpot's attach mechanism calls `Agent_OnAttach`).
//!
//! The agent is a guest in someone else's JVM. Its callbacks do almost nothing (GC finish bumps a
//! counter and notifies a raw monitor; a sampled allocation sets one tag); the heap walk, naming
//! and publishing run on the agent's own thread (`memcity-worker`), and the gRPC server on its
//! own (`memcity-grpc`). Every `extern` entry catches panics; on an internal error the agent logs,
//! turns itself off, and the application carries on. Nothing is ever written to stdout.

// The agent by stage, as one snapshot goes through it: the JVMTI layer; allocation samples
// and what follows them; the heap's census (walks, estimates, GC counts, the grouping tree);
// the path search that names holders; the worker thread that runs them; the ports that serve
// the stream (gRPC, the page, metrics, Pyroscope). Beside them, the OutOfMemoryError's stop
// and the threads the worker sets aside.
mod log;
// `jni!`, the one way the agent calls the JNI table, is defined there for every module after.
#[macro_use]
mod jvmti;
mod census;
mod intmap;
// Names are shared with heap dumps, which name the same types (`memcity_proto::names`).
use memcity_proto::names;
mod paths;
mod phase;
mod sampling;
mod start;
mod worker;
// Public for `examples/bench_metrics.rs` (the agent is used as a library nowhere else).
mod aside;
mod oom;
pub mod ports;
/// The option parser is shared with `memcity attach`, which checks options before sending them.
use memcity_proto::options;

use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::jvmti::sys::jthread;
use jni::sys::{jclass, jint, jlong, jobject, JNIEnv, JavaVM, JNI_OK};
use memcity_proto::v1::{stream_message::Kind, SessionEnd, StreamMessage};

use crate::jvmti::{sys, Jvmti, RawMonitor};
use crate::log::{error, info, warning};
use crate::options::Options;
use crate::phase::AgentPhase;
use crate::ports::hub::Hub;
use crate::ports::server;
use crate::sampling::Sampler;

/// The agent's `record=` file, kept under `record_max=` when given.
pub(crate) type Recorder = memcity_proto::capped::CappedWriter;

/// Everything the callbacks and threads share. Created in `Agent_OnLoad` or `Agent_OnAttach`,
/// and never freed: after a detach a callback the VM was already posting may still read it, and
/// a later attach makes a new one (its tables freed at the detach, the struct itself a few kilobytes).
pub(crate) struct Agent {
    jvmti: Jvmti,
    options: Options,
    /// Wakes the worker: GC finished, a request arrived, or the VM is dying.
    monitor: RawMonitor,
    gc_finished: AtomicU64,
    /// Hands out class ids (the tags of class mirrors): the class table, the sampling callback
    /// and the walk all tag classes, and an id must never be handed out twice.
    next_class: AtomicU32,
    /// Where the session stands: stopping, detaching, off, each only ever set (`phase.rs`).
    phase: AgentPhase,
    /// Loaded into a running JVM: what it allocated before was never sampled.
    attached: bool,
    worker_done: AtomicBool,
    /// The Java heap ran out (`oom.rs`): the request the failing thread left for the worker,
    /// and where it stands (`oom::OOM_*`).
    oom: Mutex<Option<oom::OomRequest>>,
    oom_state: AtomicU8,
    /// `ResourceExhausted` is on (`oom.rs`).
    heap_exhaustion: bool,
    /// Why the agent turned itself off, if it did.
    failure: OnceLock<String>,
    /// The session's `End` message was sent.
    ended: AtomicBool,
    sampler: Option<Sampler>,
    hub: Arc<Hub>,
    recorder: Mutex<Option<Recorder>>,
    requests_tx: Mutex<Option<mpsc::SyncSender<server::Request>>>,
    requests_rx: Mutex<Option<mpsc::Receiver<server::Request>>>,
    server: Mutex<Option<server::ServerHandle>>,
    start: Instant,
    start_unix_ms: u64,
    snapshots: AtomicU64,
}

/// The agent of this JVM's session, null before one starts and after a detach.
static AGENT: AtomicPtr<Agent> = AtomicPtr::new(std::ptr::null_mut());
/// Event callbacks running now: a detach waits for them before it disposes the JVMTI
/// environment they may be using.
static IN_CALLBACKS: AtomicUsize = AtomicUsize::new(0);

/// The current agent, active or not.
fn current() -> Option<&'static Agent> {
    let agent = AGENT.load(Ordering::SeqCst);
    // SAFETY: agents are leaked (`Box::leak`) and never freed, so a pointer once stored stays
    // valid for the life of the process.
    (!agent.is_null()).then(|| unsafe { &*agent })
}

/// Where a test asks the agent to fail on purpose (`MEMCITY_FAILPOINT`), to prove that a panic
/// anywhere leaves the JVM running. Read once at load; `None` in normal use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failpoint {
    GcCallback,
    SampleCallback,
    Worker,
}

static FAILPOINT: OnceLock<Option<Failpoint>> = OnceLock::new();

/// Failpoints fire only once the start snapshot is out, so that a test can check that what came
/// before the failure is kept: the JVM's own start-up GCs and allocation samples can come before
/// the worker's first walk, more so on a loaded machine.
static FAILPOINTS_ARMED: AtomicBool = AtomicBool::new(false);

pub(crate) fn arm_failpoints() {
    FAILPOINTS_ARMED.store(true, Ordering::Release);
}

pub(crate) fn failpoint(at: Failpoint) {
    if *FAILPOINT.get().unwrap_or(&None) == Some(at) && FAILPOINTS_ARMED.load(Ordering::Acquire) {
        panic!("failpoint {at:?} (MEMCITY_FAILPOINT)");
    }
}

impl Agent {
    fn get() -> Option<&'static Agent> {
        current().filter(|a| a.phase.get().active())
    }

    fn wake(&self) {
        if let Ok(guard) = self.monitor.enter() {
            let _ = guard.notify_all();
        }
    }

    /// Sends a message to viewers and the recording. Called from the worker and at VMDeath.
    pub(crate) fn publish(&self, message: StreamMessage) {
        {
            let mut recorder = self.recorder.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(writer) = recorder.as_mut() {
                let result = writer.write(&message);
                if let Some(trouble) = writer.take_trouble() {
                    warning!("{trouble}");
                }
                if let Err(e) = result {
                    error!(
                        "recording to {} failed: {e}; recording is off from here, the file keeps everything before, and the application continues",
                        self.options.record.as_ref().map(|p| p.display().to_string()).unwrap_or_default()
                    );
                    *recorder = None;
                }
            }
        }
        self.hub.publish(message);
    }

    /// Turns the agent off after an internal error. Safe from any context, a GC callback
    /// included: it only turns the phase off and wakes the worker, which (or VMDeath, if the worker is
    /// gone) turns the events off and tells viewers, from an ordinary thread.
    pub(crate) fn disable(&self, why: &str) {
        if !self.phase.turn_off() {
            return;
        }
        let _ = self.failure.set(why.to_string());
        error!("{why}; memcity turns itself off, the application continues");
        self.wake();
    }

    /// Ends the session once: after a failure, turns the events off; then sends the `End`
    /// message to viewers and the recording. The worker calls it when it stops (it only acts
    /// after a failure), VMDeath always.
    pub(crate) fn end_session(&self, otherwise: Option<&str>) {
        let reason = match (self.failure.get(), otherwise) {
            (Some(why), _) => format!("agent error: {why}"),
            (None, Some(reason)) => reason.to_string(),
            (None, None) => return,
        };
        if self.ended.swap(true, Ordering::AcqRel) {
            return;
        }
        if self.failure.get().is_some() {
            for event in [
                sys::jvmtiEvent_JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
                sys::jvmtiEvent_JVMTI_EVENT_SAMPLED_OBJECT_ALLOC,
            ] {
                let _ = self.jvmti.disable_event(event);
            }
        }
        self.publish(StreamMessage {
            kind: Some(Kind::End(SessionEnd {
                reason,
                snapshots: self.snapshots.load(Ordering::Relaxed),
            })),
        });
    }
}

pub(crate) fn unix_ms(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An event callback: `guarded`, and counted in `IN_CALLBACKS` while it runs.
fn in_callback<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    IN_CALLBACKS.fetch_add(1, Ordering::SeqCst);
    let result = guarded(what, f);
    IN_CALLBACKS.fetch_sub(1, Ordering::SeqCst);
    result
}

/// Runs `f`, turning a panic into `None` so it never unwinds into the JVM.
fn guarded<T>(what: &str, f: impl FnOnce() -> T) -> Option<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            let detail = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let why = format!("internal error in {what}: {detail}");
            match current() {
                Some(agent) => agent.disable(&why),
                None => error!("{why}"),
            }
            None
        }
    }
}

/// The JVM calls this when it loads the agent at start-up (`-agentpath`).
///
/// # Safety
/// Called by the JVM with a valid `JavaVM` and a NUL-terminated (or null) option string.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    // SAFETY: per the contract.
    let text = unsafe { start::option_text(options) };
    // SAFETY: `vm` comes from the JVM.
    guarded("Agent_OnLoad", || unsafe {
        start::on_load(vm, text.as_deref())
    })
    .unwrap_or(JNI_OK)
}

use memcity_proto::options::attach_code;

/// The JVM calls this when `memcity attach` (or any attach client) loads the library into a
/// running JVM, and again on the loaded library at every later load of the same path. So the
/// options are a command while a session runs: `stop` ends it, anything else is refused (there
/// is one agent per JVM); with no session running they start one.
///
/// # Safety
/// Called by the JVM with a valid `JavaVM` and a NUL-terminated (or null) option string.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnAttach(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    // SAFETY: per the contract.
    let text = unsafe { start::option_text(options) };
    // SAFETY: `vm` comes from the JVM.
    guarded("Agent_OnAttach", || unsafe {
        start::on_attach(vm, text.as_deref())
    })
    .unwrap_or(attach_code::NO_JVMTI)
}

unsafe extern "C" fn on_gc_finish(_jvmti: *mut sys::jvmtiEnv) {
    // Allowed here: raw monitors and atomics only (no JNI, no allocation, no heap access).
    in_callback("GarbageCollectionFinish", || {
        if let Some(agent) = Agent::get() {
            failpoint(Failpoint::GcCallback);
            if let Some(sampler) = &agent.sampler {
                sampler.tracker.gc_finished();
            }
            agent.gc_finished.fetch_add(1, Ordering::AcqRel);
            agent.wake();
        }
    });
}

unsafe extern "C" fn on_sampled_alloc(
    _jvmti: *mut sys::jvmtiEnv,
    jni: *mut JNIEnv,
    thread: jthread,
    object: jobject,
    klass: jclass,
    size: jlong,
) {
    in_callback("SampledObjectAlloc", || {
        if let Some(agent) = Agent::get() {
            if !agent.phase.get().samples() {
                return;
            }
            if let Some(sampler) = &agent.sampler {
                failpoint(Failpoint::SampleCallback);
                let event = sampling::Allocation {
                    jni,
                    thread,
                    object,
                    klass,
                    size,
                };
                sampler.on_sample(&agent.jvmti, &event, &agent.next_class);
            }
        }
    });
}

/// Longest VMDeath waits for the worker to finish a walk in progress.
const WORKER_EXIT_WAIT: Duration = Duration::from_secs(3);
/// Longest VMDeath waits for viewers to receive the last messages.
const DRAIN_WAIT: Duration = Duration::from_millis(500);

unsafe extern "C" fn on_vm_death(_jvmti: *mut sys::jvmtiEnv, _jni: *mut JNIEnv) {
    in_callback("VMDeath", || {
        let Some(agent) = Agent::get() else { return };
        agent.stop_worker(WORKER_EXIT_WAIT);
        agent.phase.turn_off();
        agent.finish("vm-death");
    });
}

/// Longest a detach waits for the worker beyond `max_pause` (a walk in progress).
const DETACH_WORKER_WAIT: Duration = Duration::from_secs(5);
/// Longest a detach waits for event callbacks already under way.
const DETACH_CALLBACKS_WAIT: Duration = Duration::from_secs(2);

/// Waits until no event callback runs (at most `DETACH_CALLBACKS_WAIT`); whether none does.
fn drain_callbacks() -> bool {
    let deadline = Instant::now() + DETACH_CALLBACKS_WAIT;
    while IN_CALLBACKS.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    IN_CALLBACKS.load(Ordering::SeqCst) == 0
}

impl Agent {
    /// Asks the worker to take its last snapshot and stop; waits for it at most `wait`.
    fn stop_worker(&self, wait: Duration) {
        self.phase.stop();
        self.wake();
        let deadline = Instant::now() + wait;
        while !self.worker_done.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Ends the session for viewers and the recording, closes the port and the registration.
    fn finish(&self, reason: &str) {
        self.end_session(Some(reason));
        if let Some(writer) = self
            .recorder
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        {
            if let Err(e) = writer.finish() {
                error!("finishing the recording failed: {e}");
            }
        }
        let deadline = Instant::now() + DRAIN_WAIT;
        while self.hub.subscriber_count() > 0 && !self.hub.drained() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if let Some(server) = self.server.lock().unwrap_or_else(|p| p.into_inner()).take() {
            server.stop();
        }
        // Local clients stop finding this JVM (a killed one leaves its file; they skip it).
        memcity_proto::registry::unregister(std::process::id());
    }

    /// `memcity detach`: stops the session and leaves the JVM as if memcity had never run. The
    /// worker finishes its step and hands back its weak references; events go off; callbacks
    /// already under way finish; viewers get the session's end, the recording is finalized, the
    /// port closes; then the JVMTI environment is disposed, which frees every tag and gives the
    /// capabilities back (allocation sampling is free for another agent). The library stays
    /// mapped (it is linked `-z nodelete`), so a later attach starts a new session.
    fn detach(&'static self) -> jint {
        // No sample is tracked from here on (the callback checks the phase), so once the
        // callbacks under way are done the worker can hand back every weak reference.
        self.phase.begin_detach();
        let _ = self
            .jvmti
            .disable_event(sys::jvmtiEvent_JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
        drain_callbacks();
        self.phase.stop();
        self.wake();
        let deadline = Instant::now() + self.options.max_pause + DETACH_WORKER_WAIT;
        while !self.worker_done.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        if !self.worker_done.load(Ordering::Acquire) && self.worker_started() {
            warning!("detach: the worker is still busy; try again");
            return attach_code::STOP_TIMED_OUT;
        }
        self.phase.turn_off();
        for event in [
            sys::jvmtiEvent_JVMTI_EVENT_VM_INIT,
            sys::jvmtiEvent_JVMTI_EVENT_VM_DEATH,
            sys::jvmtiEvent_JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
            sys::jvmtiEvent_JVMTI_EVENT_SAMPLED_OBJECT_ALLOC,
            sys::jvmtiEvent_JVMTI_EVENT_RESOURCE_EXHAUSTED,
        ] {
            let _ = self.jvmti.disable_event(event);
        }
        let drained = drain_callbacks();
        self.finish("detached");
        AGENT.store(std::ptr::null_mut(), Ordering::SeqCst);
        if drained {
            let _ = self.jvmti.dispose();
            // The agent's struct stays (threads of the session held it as `&'static`), but what
            // the session kept goes back to the process, so that an attach every hour costs
            // nothing that adds up: the tracker's slots (4.5 MiB a chunk), sites, thread names and
            // the hub's history.
            self.hub.clear();
            if let Some(sampler) = &self.sampler {
                // SAFETY: sampling is off and its callbacks drained, the worker has ended, and
                // with the environment disposed no walk can start.
                unsafe { sampler.release_memory() };
            }
            // What the session's threads freed stays in glibc's arenas (one per thread that
            // allocated) until given back: without this the JVM's resident memory kept 3-4 MB
            // of every attach.
            #[cfg(target_env = "gnu")]
            // SAFETY: malloc_trim only returns free memory to the kernel; mallinfo only reads
            // the allocator's counters.
            unsafe {
                libc::malloc_trim(0);
                // What stays allocated after a session: a figure that grows from one attach to
                // the next is memory a detach does not give back. `mallinfo` (its counters wrap
                // past 2 GiB) rather than `mallinfo2`, which needs glibc 2.33.
                let info = libc::mallinfo();
                crate::log::debug!(
                    "detached: {} KiB allocated in the process's heap, {} KiB in mapped blocks",
                    (info.uordblks as u32) >> 10,
                    (info.hblkhd as u32) >> 10
                );
            }
        } else {
            // A callback stuck in the VM (a long safepoint) may still use the environment:
            // leave it, with its events off. Its tags stay until the JVM exits.
            warning!("detach: event callbacks still running; the JVMTI environment is left in place (events off)");
        }
        info!("detached; the application continues without memcity");
        attach_code::OK
    }

    /// Whether the worker thread was started (it ends by setting `worker_done`).
    fn worker_started(&self) -> bool {
        self.requests_rx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
    }
}
