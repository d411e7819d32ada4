//! memcity's JVMTI agent: `java -agentpath:/path/to/libmemcity.so[=options] ...`.
//!
//! The agent is a guest in someone else's JVM. Its callbacks do almost nothing (GC finish bumps a
//! counter and notifies a raw monitor; a sampled allocation sets one tag); the heap walk, naming
//! and publishing run on the agent's own thread (`memcity-worker`), and the gRPC server on its
//! own (`memcity-grpc`). Every `extern` entry catches panics; on an internal error the agent logs,
//! turns itself off, and the application carries on. Nothing is ever written to stdout.

mod budget;
mod estimate;
mod fields;
mod gc_counts;
mod hub;
mod jvmti;
mod log;
mod names;
mod options;
mod sampling;
mod server;
#[allow(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)] // generated bindings
mod sys;
#[cfg(test)]
mod sys_layout;
mod tags;
mod tracker;
mod tree;
mod walk;
mod worker;

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::sys::jthread;
use jni::sys::{jclass, jint, jlong, jobject, JNIEnv, JavaVM, JNI_ERR, JNI_OK};
use memcity_proto::recording::RecordingWriter;
use memcity_proto::v1::{stream_message::Kind, RecordingHeader, SessionEnd, StreamMessage};

use crate::hub::Hub;
use crate::jvmti::{Jvmti, RawMonitor};
use crate::log::{error, info, warning};
use crate::options::Options;
use crate::sampling::Sampler;

pub(crate) type Recorder = RecordingWriter<std::io::BufWriter<std::fs::File>>;

/// Everything the callbacks and threads share. Created once in `Agent_OnLoad`.
pub(crate) struct Agent {
    jvmti: Jvmti,
    options: Options,
    /// Wakes the worker: GC finished, a request arrived, or the VM is dying.
    monitor: RawMonitor,
    gc_finished: AtomicU64,
    /// Hands out class ids (the tags of class mirrors): the class table, the sampling callback
    /// and the walk all tag classes, and an id must never be handed out twice.
    next_class: AtomicU32,
    /// False once the agent turned itself off; callbacks then return at once.
    active: AtomicBool,
    /// Set at VMDeath: the worker finishes its current step and exits.
    stopping: AtomicBool,
    worker_done: AtomicBool,
    /// Why the agent turned itself off, if it did.
    failure: OnceLock<String>,
    /// The session's `End` message was sent.
    ended: AtomicBool,
    sampler: Option<Sampler>,
    hub: Arc<Hub>,
    recorder: Mutex<Option<Recorder>>,
    requests_tx: Mutex<Option<mpsc::SyncSender<server::Request>>>,
    requests_rx: Mutex<Option<mpsc::Receiver<server::Request>>>,
    start: Instant,
    start_unix_ms: u64,
    snapshots: AtomicU64,
}

static AGENT: OnceLock<Agent> = OnceLock::new();

/// Where a test asks the agent to fail on purpose (`MEMCITY_FAILPOINT`), to prove that a panic
/// anywhere leaves the JVM running. Read once at load; `None` in normal use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failpoint {
    GcCallback,
    SampleCallback,
    Worker,
}

static FAILPOINT: OnceLock<Option<Failpoint>> = OnceLock::new();

pub(crate) fn failpoint(at: Failpoint) {
    if *FAILPOINT.get().unwrap_or(&None) == Some(at) {
        panic!("failpoint {at:?} (MEMCITY_FAILPOINT)");
    }
}

impl Agent {
    fn get() -> Option<&'static Agent> {
        AGENT.get().filter(|a| a.active.load(Ordering::Acquire))
    }

    fn wake(&self) {
        if let Ok(guard) = self.monitor.enter() {
            let _ = guard.notify_all();
        }
    }

    /// Sends a message to viewers and the recording. Called from the worker and at VMDeath.
    pub(crate) fn publish(&self, message: StreamMessage) {
        let is_snapshot = matches!(message.kind, Some(Kind::Snapshot(_)));
        let is_end = matches!(message.kind, Some(Kind::End(_)));
        {
            let mut recorder = self.recorder.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(writer) = recorder.as_mut() {
                let mut result = writer.write(&message);
                if result.is_ok() && (is_snapshot || is_end) {
                    result = writer.flush();
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
    /// included: it only flips flags and wakes the worker, which (or VMDeath, if the worker is
    /// gone) turns the events off and tells viewers, from an ordinary thread.
    pub(crate) fn disable(&self, why: &str) {
        if !self.active.swap(false, Ordering::AcqRel) {
            return;
        }
        let _ = self.failure.set(why.to_string());
        error!("{why}; memcity turns itself off, the application continues");
        self.wake();
    }

    /// Ends the session once: after a failure, turns the events off; then sends the `End`
    /// message to viewers and the recording. The worker calls it when it stops (it only acts
    /// after a failure), VMDeath always.
    pub(crate) fn end_session(&self, vm_death: bool) {
        let reason = match self.failure.get() {
            Some(why) => format!("agent error: {why}"),
            None if vm_death => "vm-death".to_string(),
            None => return,
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
            match AGENT.get() {
                Some(agent) => agent.disable(&why),
                None => error!("{why}"),
            }
            None
        }
    }
}

/// The JVM calls this when it loads the agent.
///
/// # Safety
/// Called by the JVM with a valid `JavaVM` and a NUL-terminated (or null) option string.
#[no_mangle]
pub unsafe extern "C" fn Agent_OnLoad(
    vm: *mut JavaVM,
    options: *mut c_char,
    _reserved: *mut c_void,
) -> jint {
    let text = if options.is_null() {
        None
    } else {
        // SAFETY: the JVM passes a NUL-terminated string.
        Some(
            unsafe { CStr::from_ptr(options) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    // SAFETY: `vm` comes from the JVM.
    guarded("Agent_OnLoad", || unsafe { on_load(vm, text.as_deref()) }).unwrap_or(JNI_OK)
}

unsafe fn on_load(vm: *mut JavaVM, text: Option<&str>) -> jint {
    let (options, warnings) = match options::parse(text) {
        Ok(parsed) => parsed,
        Err(e) => {
            // Refusing the load stops the JVM: better than running without what the user asked.
            for line in e.to_string().lines() {
                error!("{line}");
            }
            return JNI_ERR;
        }
    };
    log::set_level(options.log);
    let _ = FAILPOINT.set(match std::env::var("MEMCITY_FAILPOINT").as_deref() {
        Ok("gc-callback") => Some(Failpoint::GcCallback),
        Ok("sample-callback") => Some(Failpoint::SampleCallback),
        Ok("worker") => Some(Failpoint::Worker),
        _ => None,
    });
    for warning in warnings {
        warning!("{warning}");
    }
    // SAFETY: `vm` is the JavaVM given to Agent_OnLoad.
    let Some(jvmti) = (unsafe { jvmti::get_env(vm) }) else {
        error!(
            "this JVM offers no JVMTI 1.2+ environment; memcity is off, the application continues"
        );
        return JNI_OK;
    };
    match setup(jvmti, options) {
        Ok(()) => JNI_OK,
        Err(why) => {
            error!("{why}; memcity is off, the application continues");
            let _ = jvmti.dispose();
            JNI_OK
        }
    }
}

fn setup(jvmti: Jvmti, options: Options) -> Result<(), String> {
    let potential = jvmti
        .potential_capabilities()
        .map_err(|e| format!("cannot read JVMTI capabilities: {e}"))?;
    let mut caps = jvmti::empty_capabilities();
    caps.set_can_tag_objects(1);
    caps.set_can_generate_garbage_collection_events(1);
    if potential.can_tag_objects() == 0 || potential.can_generate_garbage_collection_events() == 0 {
        return Err("this JVM cannot tag objects or report GCs to agents".into());
    }
    let sampling = options.sampling.filter(|_| {
        let ok = potential.can_generate_sampled_object_alloc_events() != 0;
        if !ok {
            warning!("this JVM has no allocation sampling (JDK 11+ needed): site and thread groups stay unsampled");
        }
        ok
    });
    // Which samples died is asked of their weak references (tracker.rs), not of `ObjectFree`.
    if sampling.is_some() {
        caps.set_can_generate_sampled_object_alloc_events(1);
    }
    caps.set_can_get_line_numbers(potential.can_get_line_numbers());
    caps.set_can_get_source_file_name(potential.can_get_source_file_name());
    jvmti
        .add_capabilities(&caps)
        .map_err(|e| format!("cannot add JVMTI capabilities: {e}"))?;

    // SAFETY: all optional function pointers; zero is `None`.
    let mut callbacks: sys::jvmtiEventCallbacks = unsafe { std::mem::zeroed() };
    callbacks.VMInit = Some(on_vm_init);
    callbacks.VMDeath = Some(on_vm_death);
    callbacks.GarbageCollectionFinish = Some(on_gc_finish);
    if sampling.is_some() {
        callbacks.SampledObjectAlloc = Some(on_sampled_alloc);
    }
    jvmti
        .set_event_callbacks(&callbacks)
        .map_err(|e| format!("cannot set event callbacks: {e}"))?;
    let monitor = jvmti
        .create_raw_monitor(c"memcity-worker")
        .map_err(|e| format!("cannot create a raw monitor: {e}"))?;
    if let Some(interval) = sampling {
        jvmti
            .set_heap_sampling_interval(interval as jint)
            .map_err(|e| format!("cannot set the sampling interval: {e}"))?;
    }
    let (tx, rx) = mpsc::sync_channel(server::REQUEST_QUEUE);
    let now = SystemTime::now();
    let agent = Agent {
        jvmti,
        sampler: sampling.map(|interval| {
            Sampler::new(
                interval,
                options.sampling_floor,
                options.site_frames,
                options.tracked,
            )
        }),
        hub: Arc::new(Hub::new(options.history_bytes)),
        options,
        monitor,
        gc_finished: AtomicU64::new(0),
        next_class: AtomicU32::new(1),
        active: AtomicBool::new(true),
        stopping: AtomicBool::new(false),
        worker_done: AtomicBool::new(false),
        failure: OnceLock::new(),
        ended: AtomicBool::new(false),
        recorder: Mutex::new(None),
        requests_tx: Mutex::new(Some(tx)),
        requests_rx: Mutex::new(Some(rx)),
        start: Instant::now(),
        start_unix_ms: unix_ms(now),
        snapshots: AtomicU64::new(0),
    };
    if AGENT.set(agent).is_err() {
        return Err("memcity is loaded twice; the second copy stays off".into());
    }
    let mut events = vec![
        sys::jvmtiEvent_JVMTI_EVENT_VM_INIT,
        sys::jvmtiEvent_JVMTI_EVENT_VM_DEATH,
        sys::jvmtiEvent_JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
    ];
    if sampling.is_some() {
        events.push(sys::jvmtiEvent_JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
    }
    for event in events {
        jvmti
            .enable_event(event)
            .map_err(|e| format!("cannot enable event {event}: {e}"))?;
    }
    Ok(())
}

unsafe extern "C" fn on_vm_init(_jvmti: *mut sys::jvmtiEnv, jni: *mut JNIEnv, _thread: jthread) {
    guarded("VMInit", || {
        let Some(agent) = Agent::get() else { return };
        // SAFETY: `jni` is this thread's JNIEnv, given by the VM for this callback.
        if let Err(why) = unsafe { start(agent, jni) } {
            agent.disable(&why);
        }
    });
}

/// Starts recording, the server and the worker once the VM can run Java threads.
unsafe fn start(agent: &'static Agent, jni: *mut JNIEnv) -> Result<(), String> {
    let handshake = worker::handshake(agent);
    agent.hub.set_handshake(handshake.clone());
    if let Some(path) = &agent.options.record {
        let header = RecordingHeader {
            handshake: Some(handshake),
            writer: "agent".into(),
            recorded_at_unix_ms: agent.start_unix_ms,
        };
        match RecordingWriter::create(path, &header) {
            Ok(writer) => {
                info!("recording to {}", path.display());
                *agent.recorder.lock().unwrap_or_else(|p| p.into_inner()) = Some(writer);
            }
            Err(e) => error!(
                "cannot write recording {}: {e}; recording is off, the application continues",
                path.display()
            ),
        }
    }
    if let Some(port) = agent.options.port {
        let tx = agent
            .requests_tx
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or("request channel already closed")?;
        let addr = std::net::SocketAddr::new(agent.options.bind, port);
        if let Err(e) = server::spawn(
            addr,
            agent.options.insecure,
            agent.options.tls.clone(),
            agent.options.portfile.clone(),
            agent.hub.clone(),
            tx,
        ) {
            error!(
                "cannot start the gRPC thread: {e}; the application continues without live viewers"
            );
        }
    }
    // SAFETY: `jni` is the current thread's JNIEnv.
    let mut env = unsafe { jni::JNIEnv::from_raw(jni) }.map_err(|e| format!("no JNIEnv: {e}"))?;
    let thread = env
        .new_string("memcity-worker")
        .and_then(|name| {
            env.new_object(
                "java/lang/Thread",
                "(Ljava/lang/String;)V",
                &[(&name).into()],
            )
        })
        .map_err(|e| {
            let _ = env.exception_clear();
            format!("cannot create the worker thread object: {e}")
        })?;
    // SAFETY: `thread` is a fresh java.lang.Thread; the start function matches JVMTI's contract.
    unsafe {
        agent
            .jvmti
            .run_agent_thread(thread.as_raw(), Some(worker_main), std::ptr::null())
    }
    .map_err(|e| format!("cannot start the worker thread: {e}"))
}

unsafe extern "C" fn worker_main(_jvmti: *mut sys::jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    guarded("the worker thread", || {
        if let Some(agent) = AGENT.get() {
            // SAFETY: `jni` is the agent thread's own JNIEnv.
            unsafe { worker::run(agent, jni) };
        }
    });
    if let Some(agent) = AGENT.get() {
        // After a failure anywhere (this thread's included), end the session from here.
        guarded("ending the session", || agent.end_session(false));
        agent.worker_done.store(true, Ordering::Release);
    }
}

unsafe extern "C" fn on_gc_finish(_jvmti: *mut sys::jvmtiEnv) {
    // Allowed here: raw monitors and atomics only (no JNI, no allocation, no heap access).
    guarded("GarbageCollectionFinish", || {
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
    guarded("SampledObjectAlloc", || {
        if let Some(agent) = Agent::get() {
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
    guarded("VMDeath", || {
        let Some(agent) = AGENT.get() else { return };
        agent.stopping.store(true, Ordering::Release);
        agent.wake();
        let deadline = Instant::now() + WORKER_EXIT_WAIT;
        while !agent.worker_done.load(Ordering::Acquire) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        agent.active.store(false, Ordering::Release);
        agent.end_session(true);
        if let Some(writer) = agent
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
        while agent.hub.subscriber_count() > 0 && !agent.hub.drained() && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Local clients stop finding this JVM (a killed one leaves its file; they skip it).
        memcity_proto::registry::unregister(std::process::id());
    });
}
