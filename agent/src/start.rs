//! How a session starts: the agent's options read, the capabilities and events it needs asked
//! for (`setup`), and once the VM can run Java threads, the recording, the ports and the worker
//! started (`start`), at the JVM's start (`Agent_OnLoad`, then VMInit) or into a running JVM
//! (`Agent_OnAttach`).

use std::ffi::{c_char, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use jni::sys::{jint, JNIEnv, JavaVM, JNI_ERR, JNI_OK};
use memcity_proto::command::Launched;
use memcity_proto::options::attach_code;
use memcity_proto::v1::RecordingHeader;

use crate::census::gc_counts;
use crate::jvmti::sys::jthread;
use crate::jvmti::{self, sys, Jvmti};
use crate::log::{debug, error, info, warning};
use crate::options::Options;
use crate::phase::AgentPhase;
use crate::ports::hub::Hub;
use crate::ports::{metrics, server};
use crate::sampling::{self, Sampler};
use crate::{
    current, guarded, in_callback, on_gc_finish, on_sampled_alloc, on_vm_death, unix_ms, Agent,
    Failpoint, Recorder, AGENT, FAILPOINT,
};
use crate::{log, oom, options, worker};

/// # Safety
/// `options` is null or NUL-terminated.
pub(crate) unsafe fn option_text(options: *const c_char) -> Option<String> {
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
    report_options(options::parse(text))
}

/// The options parsed, their warnings and errors logged (and the log level set).
fn report_options(
    parsed: Result<(Options, Vec<String>), options::OptionsError>,
) -> Option<Options> {
    match parsed {
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

pub(crate) unsafe fn on_load(vm: *mut JavaVM, text: Option<&str>) -> jint {
    // SAFETY: `vm` is the JavaVM given to Agent_OnLoad.
    let Some(jvmti) = (unsafe { jvmti::get_env(vm) }) else {
        error!(
            "this JVM offers no JVMTI 1.2+ environment; memcity is off, the application continues"
        );
        return JNI_OK;
    };
    // Given to every JVM of a host at once (`JAVA_TOOL_OPTIONS`), the agent leaves alone those
    // it was not meant for, without a word and without a port: `java -version`, the JDK's
    // tools, and whatever `only=` does not name. Even options that do not parse: a typo must
    // not stop `jcmd` from running.
    let launched = Launched::of(jvmti.system_property("sun.java.command").as_deref());
    let parsed = options::parse(text);
    let stays = match parsed.as_ref().ok().and_then(|(o, _)| o.only.as_ref()) {
        Some(only) => only.matches(&launched),
        None => matches!(launched, Launched::Application(_)),
    };
    if !stays {
        let _ = jvmti.dispose();
        return JNI_OK;
    }
    // Refusing the load stops the JVM: better than running without what the user asked.
    let Some(options) = report_options(parsed) else {
        error!("the JVM will not start with these options; fix or drop the value");
        let _ = jvmti.dispose();
        return JNI_ERR;
    };
    read_failpoint();
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

pub(crate) unsafe fn on_attach(vm: *mut JavaVM, text: Option<&str>) -> jint {
    let command = text.map(str::trim).unwrap_or_default();
    if let Some(agent) = current() {
        if command == "stop" {
            return agent.detach();
        }
        if command == "listen" {
            return listen(agent);
        }
        warning!("memcity is already running in this JVM; an attach with options '{command}' changes nothing (stop it first: memcity detach PID)");
        return attach_code::ALREADY_RUNNING;
    }
    if command == "stop" || command == "listen" {
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

/// Starts the gRPC server on `port` (and the page and metrics beside it, as the options ask),
/// on a thread of its own; a port it cannot bind is logged there.
fn spawn_server(agent: &'static Agent, port: u16) -> Result<(), StartError> {
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
    Ok(())
}

/// `listen`, sent by `--pid` commands: an agent that runs but does not listen (`port=off`, or a
/// fixed port another process held) starts its server on a free port, which it registers for
/// local clients; one that listens already changes nothing.
pub(crate) fn listen(agent: &'static Agent) -> jint {
    if !agent.phase.get().active() {
        return attach_code::NOT_RUNNING;
    }
    let listening = agent
        .server
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
        .is_some_and(server::ServerHandle::is_running);
    if listening {
        return attach_code::OK;
    }
    info!("asked to listen: serving on a free port");
    match spawn_server(agent, 0) {
        Ok(()) => attach_code::OK,
        Err(why) => {
            error!("{why}");
            attach_code::NO_JVMTI
        }
    }
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
    let Granted {
        heap_exhaustion,
        sampling,
    } = ask_capabilities(&jvmti, &options, loaded)?;
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

/// What the JVM granted beyond what memcity cannot do without.
struct Granted {
    /// `ResourceExhausted` for the heap (`oom.rs`).
    heap_exhaustion: bool,
    /// Allocation sampling, at this interval.
    sampling: Option<u64>,
}

/// Asks for tagging and GC events (refused: no memcity), line numbers and source files, the
/// heap's exhaustion when `oom_wait` asks for it, and allocation sampling on its own.
fn ask_capabilities(
    jvmti: &Jvmti,
    options: &Options,
    loaded: Loaded,
) -> Result<Granted, StartError> {
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

    Ok(Granted {
        heap_exhaustion,
        sampling,
    })
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
        spawn_server(agent, port)?;
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
