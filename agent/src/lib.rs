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
mod names;
mod paths;
mod phase;
mod sampling;
mod worker;
// Public for `examples/bench_metrics.rs` (the agent is used as a library nowhere else).
mod aside;
mod oom;
pub mod ports;
/// The option parser is shared with `memcity attach`, which checks options before sending them.
use memcity_proto::options;

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{
    AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering,
};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::jvmti::sys::jthread;
use jni::sys::{jclass, jint, jlong, jobject, JNIEnv, JavaVM, JNI_ERR, JNI_OK};
use memcity_proto::v1::{stream_message::Kind, RecordingHeader, SessionEnd, StreamMessage};

use crate::census::gc_counts;
use crate::jvmti::{sys, Jvmti, RawMonitor};
use crate::log::{debug, error, info, warning};
use crate::options::Options;
use crate::phase::AgentPhase;
use crate::ports::hub::Hub;
use crate::ports::{metrics, server};
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
    /// Where the session stands: running, detaching, stopping, off (`phase.rs`).
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
    let text = unsafe { option_text(options) };
    // SAFETY: `vm` comes from the JVM.
    guarded("Agent_OnLoad", || unsafe { on_load(vm, text.as_deref()) }).unwrap_or(JNI_OK)
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
    let text = unsafe { option_text(options) };
    // SAFETY: `vm` comes from the JVM.
    guarded("Agent_OnAttach", || unsafe {
        on_attach(vm, text.as_deref())
    })
    .unwrap_or(attach_code::NO_JVMTI)
}

/// # Safety
/// `options` is null or NUL-terminated.
unsafe fn option_text(options: *const c_char) -> Option<String> {
    if options.is_null() {
        return None;
    }
    // SAFETY: per the contract.
    Some(
        unsafe { CStr::from_ptr(options) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Why the agent could not start: it stays off, and the application continues.
#[derive(Debug, thiserror::Error)]
enum StartError {
    #[error("cannot {doing}: {source}")]
    Jvmti {
        doing: &'static str,
        source: jvmti::JvmtiError,
    },
    #[error("this JVM cannot tag objects or report GCs to agents")]
    CannotTag,
    #[error("memcity is loaded twice; the second copy stays off")]
    LoadedTwice,
    #[error("cannot enable event {event}: {source}")]
    EnableEvent {
        event: sys::jvmtiEvent,
        source: jvmti::JvmtiError,
    },
    #[error("request channel already closed")]
    RequestsClosed,
    #[error("no JNIEnv: {0}")]
    NoJniEnv(jni::errors::Error),
    #[error("cannot create the worker thread object: {0}")]
    WorkerThreadObject(jni::errors::Error),
}

impl StartError {
    fn jvmti(doing: &'static str) -> impl FnOnce(jvmti::JvmtiError) -> StartError {
        move |source| StartError::Jvmti { doing, source }
    }
}

/// When the agent starts: with the JVM (VMInit starts the threads) or into a running one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Loaded {
    OnLoad,
    Attach,
}

fn parse_options(text: Option<&str>) -> Option<Options> {
    match options::parse(text) {
        Ok((options, warnings)) => {
            log::set_level(options.log);
            for warning in warnings {
                warning!("{warning}");
            }
            Some(options)
        }
        Err(e) => {
            for line in e.to_string().lines() {
                error!("{line}");
            }
            None
        }
    }
}

fn read_failpoint() {
    let _ = FAILPOINT.set(match std::env::var("MEMCITY_FAILPOINT").as_deref() {
        Ok("gc-callback") => Some(Failpoint::GcCallback),
        Ok("sample-callback") => Some(Failpoint::SampleCallback),
        Ok("worker") => Some(Failpoint::Worker),
        _ => None,
    });
}

unsafe fn on_load(vm: *mut JavaVM, text: Option<&str>) -> jint {
    // Refusing the load stops the JVM: better than running without what the user asked.
    let Some(options) = parse_options(text) else {
        error!("the JVM will not start with these options; fix or drop the value");
        return JNI_ERR;
    };
    read_failpoint();
    // SAFETY: `vm` is the JavaVM given to Agent_OnLoad.
    let Some(jvmti) = (unsafe { jvmti::get_env(vm) }) else {
        error!(
            "this JVM offers no JVMTI 1.2+ environment; memcity is off, the application continues"
        );
        return JNI_OK;
    };
    match setup(jvmti, options, Loaded::OnLoad) {
        Ok(_) => {
            oom::watch_process_exit(vm);
            JNI_OK
        }
        Err(why) => {
            error!("{why}; memcity is off, the application continues");
            let _ = jvmti.dispose();
            JNI_OK
        }
    }
}

unsafe fn on_attach(vm: *mut JavaVM, text: Option<&str>) -> jint {
    let command = text.map(str::trim).unwrap_or_default();
    if let Some(agent) = current() {
        if command == "stop" {
            return agent.detach();
        }
        warning!("memcity is already running in this JVM; an attach with options '{command}' changes nothing (stop it first: memcity detach PID)");
        return attach_code::ALREADY_RUNNING;
    }
    if command == "stop" {
        return attach_code::NOT_RUNNING;
    }
    let Some(options) = parse_options(text) else {
        return attach_code::BAD_OPTIONS;
    };
    read_failpoint();
    // SAFETY: `vm` is the JavaVM given to Agent_OnAttach.
    let Some(jvmti) = (unsafe { jvmti::get_env(vm) }) else {
        error!("this JVM offers no JVMTI 1.2+ environment; memcity is off");
        return attach_code::NO_JVMTI;
    };
    let agent = match setup(jvmti, options, Loaded::Attach) {
        Ok(agent) => {
            oom::watch_process_exit(vm);
            agent
        }
        Err(why) => {
            error!("{why}; memcity is off, the application continues");
            let _ = jvmti.dispose();
            return attach_code::NO_JVMTI;
        }
    };
    // VMInit is long past: start the threads here, on the attach listener's thread (a Java
    // thread), and return at once; the worker's first walk runs on its own thread.
    // SAFETY: `vm` is the JavaVM and this thread (the attach listener) is attached to it.
    let Some(jni) = (unsafe { jni_env(vm) }) else {
        agent.disable("no JNIEnv on the attaching thread");
        return attach_code::NO_JVMTI;
    };
    // SAFETY: `jni` is this thread's JNIEnv.
    if let Err(why) = unsafe { start(agent, jni) } {
        agent.disable(&why.to_string());
        agent.detach();
        return attach_code::NO_JVMTI;
    }
    attach_code::OK
}

/// The current thread's JNIEnv.
///
/// # Safety
/// `vm` must be the process's JavaVM and the current thread attached to it.
unsafe fn jni_env(vm: *mut JavaVM) -> Option<*mut JNIEnv> {
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: per the contract; GetEnv is always in the invoke table.
    let rc = unsafe { ((**vm).GetEnv?)(vm, &mut env, jni::sys::JNI_VERSION_1_8) };
    (rc == JNI_OK && !env.is_null()).then_some(env.cast())
}

/// Asks for the capabilities and events memcity needs, and creates the agent. Allocation
/// sampling is asked for on its own: in a running JVM another agent (async-profiler's alloc
/// mode, say) may hold it, since only one environment can, and `AddCapabilities` grants all or
/// nothing. Without it memcity still walks, and says what is missing.
fn setup(jvmti: Jvmti, options: Options, loaded: Loaded) -> Result<&'static Agent, StartError> {
    let potential = jvmti
        .potential_capabilities()
        .map_err(StartError::jvmti("read JVMTI capabilities"))?;
    let mut caps = jvmti::empty_capabilities();
    caps.set_can_tag_objects(1);
    caps.set_can_generate_garbage_collection_events(1);
    if potential.can_tag_objects() == 0 || potential.can_generate_garbage_collection_events() == 0 {
        return Err(StartError::CannotTag);
    }
    caps.set_can_get_line_numbers(potential.can_get_line_numbers());
    caps.set_can_get_source_file_name(potential.can_get_source_file_name());
    // The Java heap running out (`oom.rs`); JVMs grant it at any phase.
    let heap_exhaustion =
        options.oom_wait.is_some() && potential.can_generate_resource_exhaustion_heap_events() != 0;
    caps.set_can_generate_resource_exhaustion_heap_events(u32::from(heap_exhaustion));
    jvmti
        .add_capabilities(&caps)
        .map_err(StartError::jvmti("add JVMTI capabilities"))?;
    let sampling = options.sampling.filter(|_| {
        if potential.can_generate_sampled_object_alloc_events() == 0 {
            if loaded == Loaded::Attach {
                warning!("allocation sampling is not available to memcity: another agent in this JVM holds it (only one can, e.g. async-profiler in alloc mode); memcity walks the heap but shows no sites or threads and no estimates between walks");
            } else {
                warning!("this JVM has no allocation sampling (JDK 11+ needed): site and thread groups stay unsampled");
            }
            return false;
        }
        let mut sampling = jvmti::empty_capabilities();
        sampling.set_can_generate_sampled_object_alloc_events(1);
        match jvmti.add_capabilities(&sampling) {
            Ok(()) => true,
            Err(e) => {
                warning!("cannot take allocation sampling ({e}): memcity walks the heap but shows no sites or threads and no estimates between walks");
                false
            }
        }
    });

    // SAFETY: all optional function pointers; zero is `None`.
    let mut callbacks: sys::jvmtiEventCallbacks = unsafe { std::mem::zeroed() };
    callbacks.VMInit = Some(on_vm_init);
    callbacks.VMDeath = Some(on_vm_death);
    callbacks.GarbageCollectionFinish = Some(on_gc_finish);
    if heap_exhaustion {
        callbacks.ResourceExhausted = Some(oom::on_resource_exhausted);
    }
    if sampling.is_some() {
        callbacks.SampledObjectAlloc = Some(on_sampled_alloc);
    }
    jvmti
        .set_event_callbacks(&callbacks)
        .map_err(StartError::jvmti("set event callbacks"))?;
    let monitor = jvmti
        .create_raw_monitor(c"memcity-worker")
        .map_err(StartError::jvmti("create a raw monitor"))?;
    if let Some(interval) = sampling {
        jvmti
            .set_heap_sampling_interval(interval as jint)
            .map_err(StartError::jvmti("set the sampling interval"))?;
    }
    let (tx, rx) = mpsc::sync_channel(server::REQUEST_QUEUE);
    let now = SystemTime::now();
    let agent: &'static Agent = Box::leak(Box::new(Agent {
        jvmti,
        sampler: sampling.map(|interval| {
            let sampler = Sampler::new(
                interval,
                options.sampling_floor,
                options.site_frames,
                options.tracked,
            );
            // From the first sample on: a stack taken while the JVM starts costs the most.
            sampler.record_sites(sampling::sites_every(
                options.classifiers.contains(&options::Classifier::Site),
                options.lifetimes,
            ));
            sampler
        }),
        hub: Arc::new(Hub::new(options.history_bytes)),
        options,
        monitor,
        gc_finished: AtomicU64::new(0),
        next_class: AtomicU32::new(1),
        phase: AgentPhase::new(),
        attached: loaded == Loaded::Attach,
        worker_done: AtomicBool::new(false),
        oom: Mutex::new(None),
        oom_state: AtomicU8::new(oom::OOM_NONE),
        heap_exhaustion,
        failure: OnceLock::new(),
        ended: AtomicBool::new(false),
        recorder: Mutex::new(None),
        requests_tx: Mutex::new(Some(tx)),
        requests_rx: Mutex::new(Some(rx)),
        server: Mutex::new(None),
        start: Instant::now(),
        start_unix_ms: unix_ms(now),
        snapshots: AtomicU64::new(0),
    }));
    if AGENT
        .compare_exchange(
            std::ptr::null_mut(),
            agent as *const Agent as *mut Agent,
            Ordering::SeqCst,
            Ordering::SeqCst,
        )
        .is_err()
    {
        return Err(StartError::LoadedTwice);
    }
    let mut events = vec![
        sys::jvmtiEvent_JVMTI_EVENT_VM_DEATH,
        sys::jvmtiEvent_JVMTI_EVENT_GARBAGE_COLLECTION_FINISH,
    ];
    if loaded == Loaded::OnLoad {
        events.push(sys::jvmtiEvent_JVMTI_EVENT_VM_INIT);
    }
    if sampling.is_some() {
        events.push(sys::jvmtiEvent_JVMTI_EVENT_SAMPLED_OBJECT_ALLOC);
    }
    if heap_exhaustion {
        events.push(sys::jvmtiEvent_JVMTI_EVENT_RESOURCE_EXHAUSTED);
    }
    for event in events {
        if let Err(e) = jvmti.enable_event(event) {
            AGENT.store(std::ptr::null_mut(), Ordering::SeqCst);
            return Err(StartError::EnableEvent { event, source: e });
        }
    }
    Ok(agent)
}

unsafe extern "C" fn on_vm_init(_jvmti: *mut sys::jvmtiEnv, jni: *mut JNIEnv, _thread: jthread) {
    in_callback("VMInit", || {
        let Some(agent) = Agent::get() else { return };
        if agent.sampler.is_some() {
            // SAFETY: `jni` is this thread's JNIEnv (the main thread's, which runs `main`).
            let (samples, bytes) = unsafe { sampling::prime(jni) };
            debug!("sampling primed on the main thread: {samples} samples in {bytes} bytes");
        }
        // SAFETY: `jni` is this thread's JNIEnv, given by the VM for this callback.
        if let Err(why) = unsafe { start(agent, jni) } {
            agent.disable(&why.to_string());
        }
    });
}

/// Starts recording, the server and the worker once the VM can run Java threads.
unsafe fn start(agent: &'static Agent, jni: *mut JNIEnv) -> Result<(), StartError> {
    log::new_session();
    worker::say_collector(agent);
    // Whatever killed JVMs left in memcity's run directory goes with the next agent that starts.
    gc_counts::clear_stale_repositories();
    let handshake = worker::handshake(agent);
    agent.hub.set_handshake(handshake.clone());
    if let Some(path) = &agent.options.record {
        let header = RecordingHeader {
            handshake: Some(handshake),
            writer: "agent".into(),
            recorded_at_unix_ms: agent.start_unix_ms,
            thinned_snapshots: 0,
        };
        let max = agent.options.record_max.unwrap_or(u64::MAX);
        match Recorder::create(path, &header, max) {
            Ok(writer) => {
                match agent.options.record_max {
                    Some(max) => info!(
                        "recording to {}, kept under {} MiB (older snapshots thinned past it)",
                        path.display(),
                        max >> 20
                    ),
                    None => info!("recording to {}", path.display()),
                }
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
            .ok_or(StartError::RequestsClosed)?;
        let addr = std::net::SocketAddr::new(agent.options.bind, port);
        match server::spawn(
            addr,
            agent.options.insecure,
            agent.options.tls.clone(),
            agent.options.portfile.clone(),
            agent.options.http.map(|port| server::PageOptions {
                port,
                web: agent.options.web.clone(),
            }),
            (agent.options.metrics.is_some() || agent.options.pyroscope.is_some()).then(|| {
                server::FleetOptions {
                    metrics: agent.options.metrics,
                    token: agent.options.metrics_token.clone(),
                    top: agent.options.metrics_top,
                    window: agent.options.metrics_window,
                    service: metrics::service_name(agent.options.service.as_deref()),
                    pyroscope: agent.options.pyroscope.clone(),
                    pyroscope_every: agent.options.pyroscope_every,
                }
            }),
            agent.hub.clone(),
            tx,
        ) {
            Ok(handle) => *agent.server.lock().unwrap_or_else(|p| p.into_inner()) = Some(handle),
            Err(e) => error!(
                "cannot start the gRPC thread: {e}; the application continues without live viewers"
            ),
        }
    }
    // SAFETY: `jni` is the current thread's JNIEnv.
    let mut env = unsafe { jni::JNIEnv::from_raw(jni) }.map_err(StartError::NoJniEnv)?;
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
            StartError::WorkerThreadObject(e)
        })?;
    // SAFETY: `thread` is a fresh java.lang.Thread; the start function matches JVMTI's contract.
    unsafe {
        agent
            .jvmti
            .run_agent_thread(thread.as_raw(), Some(worker_main), std::ptr::null())
    }
    .map_err(StartError::jvmti("start the worker thread"))
}

unsafe extern "C" fn worker_main(_jvmti: *mut sys::jvmtiEnv, jni: *mut JNIEnv, _arg: *mut c_void) {
    guarded("the worker thread", || {
        oom::mark_memcity_thread();
        if let Some(agent) = current() {
            // SAFETY: `jni` is the agent thread's own JNIEnv.
            unsafe { worker::run(agent, jni) };
        }
    });
    if let Some(agent) = current() {
        // After a failure anywhere (this thread's included), end the session from here.
        guarded("ending the session", || agent.end_session(None));
        agent.worker_done.store(true, Ordering::Release);
    }
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
