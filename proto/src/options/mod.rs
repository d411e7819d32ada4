//! The agent's options: `-agentpath:libmemcity.so=key=value,key=value`.
//!
//! A malformed value refuses the load (a half-configured agent is worse than none); an unknown
//! key is a warning, so an option added in a newer memcity does not break an older one.
//!
//! The options and their defaults are here, the documented table of keys in `keys.rs`, reading
//! the string in `parse.rs`, the values' syntax (sizes, durations, shares) in `values.rs` and
//! the Pyroscope server's URL in `push_url.rs`.

mod keys;
mod only;
mod parse;
mod push_url;
mod values;

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use keys::KEYS;
pub use only::Only;
pub use parse::{parse, OptionsError};
pub use push_url::PushUrl;
pub use values::{parse_bytes, parse_bytes_at_least, parse_duration, parse_max_size};

/// What the agent's `Agent_OnAttach` returns; the JVM reports only this number to the attaching
/// client, so `memcity attach` turns each into a message.
pub mod attach_code {
    pub const OK: i32 = 0;
    /// The options did not parse (the agent logs why on the JVM's stderr; `memcity attach`
    /// checks them first and says it itself).
    pub const BAD_OPTIONS: i32 = 101;
    /// memcity is already running in this JVM: a second attach is not a second agent.
    pub const ALREADY_RUNNING: i32 = 102;
    /// `stop` asked of a JVM where memcity is not running.
    pub const NOT_RUNNING: i32 = 103;
    /// The JVM offers no JVMTI environment, or the capabilities memcity needs.
    pub const NO_JVMTI: i32 = 104;
    /// The agent did not stop in time (a walk still running); ask again.
    pub const STOP_TIMED_OUT: i32 = 105;
}

/// How much the agent logs (to the JVM's stderr, never stdout).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    Off = 0,
    Error = 1,
    Warn = 2,
    Info = 3,
    Debug = 4,
}

impl Level {
    pub fn parse(text: &str) -> Option<Level> {
        Some(match text.to_ascii_lowercase().as_str() {
            "off" | "none" => Level::Off,
            "error" => Level::Error,
            "warn" | "warning" => Level::Warn,
            "info" => Level::Info,
            "debug" => Level::Debug,
            _ => return None,
        })
    }
}

/// Default classifier chain: districts by package, buildings by type.
pub const DEFAULT_CLASSIFIERS: &str = "package:type";
/// Default `SampledObjectAlloc` interval to start with: the JVM's own default, cheap anywhere.
pub const DEFAULT_SAMPLING_BYTES: u64 = 512 * 1024;
/// Default smallest interval the agent lowers sampling to while its measured cost stays well
/// under `sampling_cost`: estimates are as good as their samples (the relative error of a type
/// holding B live bytes is about sqrt(interval / B)), so an application that allocates slowly
/// gets more samples for the same cost.
pub const DEFAULT_SAMPLING_FLOOR: u64 = 32 * 1024;
/// Default stopped-time budget: 2 % of wall time.
pub const DEFAULT_BUDGET_PERCENT: f64 = 2.0;
/// Default minimum time between two GC-triggered walks.
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_millis(1000);
/// Default longest time without a snapshot when no GC happens.
pub const DEFAULT_PERIOD: Duration = Duration::from_secs(10);
/// Default hard cap on one walk's stopped time; a walk past it is aborted.
pub const DEFAULT_MAX_PAUSE: Duration = Duration::from_millis(2000);
/// Default gRPC port: a free one, found by `memcity list` and `--pid` through the registry
/// (`registry.rs`), so that any number of JVMs on one host, each given the agent by the same
/// `JAVA_TOOL_OPTIONS`, listen side by side. A fixed port only when asked (`port=7788`).
pub const DEFAULT_PORT: u16 = 0;
/// Default bind address: loopback only; heap contents are not for the network unless asked.
pub const DEFAULT_BIND: &str = "127.0.0.1";
/// Default memory cap for the history kept for late-joining viewers.
pub const DEFAULT_HISTORY_BYTES: u64 = 64 * 1024 * 1024;
/// Default most time application threads may spend in the sampling callback, percent of one
/// core, before the sampling interval grows.
pub const DEFAULT_SAMPLING_COST_PERCENT: f64 = 0.5;
/// Default average share of one core for the path search, percent.
pub const DEFAULT_PATHS_PERCENT: f64 = 5.0;
/// Default least time between two estimated snapshots (they cost no stop, but each is a message
/// to every viewer and the recording).
pub const DEFAULT_ESTIMATE_INTERVAL: Duration = Duration::from_millis(500);
/// Default most a GC's own count of live objects per class (JFR `jdk.ObjectCountAfterGC`) may be
/// predicted to add to the pause it runs in: about 6-10 ns per live object, so heaps up to some
/// 10-15 M objects are counted at full GCs and G1 remarks.
pub const DEFAULT_GC_COUNTS: Duration = Duration::from_millis(100);
/// Default most allocation samples tracked at once (28 bytes each in the agent, about 48 in the
/// JVM's tag map).
pub const DEFAULT_TRACKED: u32 = 256 * 1024;
/// Default longest the thread that runs out of Java heap waits, before its OutOfMemoryError is
/// thrown, while the agent takes the heap's last snapshot and searches the leak's holder: the
/// moment a user most needs the answer, on a JVM about to die (a heap dump takes seconds too).
pub const DEFAULT_OOM_WAIT: Duration = Duration::from_secs(5);
/// Default cap on series per metric family (`metrics_top`).
pub const DEFAULT_METRICS_TOP: usize = 10;
/// Most series per metric family a user may ask for: Prometheus's cost grows with each.
pub const MAX_METRICS_TOP: usize = 1000;
/// Default span the metrics' trends and suspects are fitted over (`metrics_window`).
pub const DEFAULT_METRICS_WINDOW: Duration = Duration::from_secs(600);
/// Default time between two pushes to Pyroscope (`pyroscope_every`): its own agents' 10-15 s.
pub const DEFAULT_PYROSCOPE_EVERY: Duration = Duration::from_secs(15);
/// Default number of stack frames that name an allocation site.
pub const DEFAULT_SITE_FRAMES: usize = 1;
/// Most frames a site may have; deeper stacks cost more in every sampled allocation.
pub const MAX_SITE_FRAMES: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classifier {
    Package,
    Type,
    Site,
    Thread,
}

impl Classifier {
    pub fn name(self) -> &'static str {
        match self {
            Classifier::Package => "package",
            Classifier::Type => "type",
            Classifier::Site => "site",
            Classifier::Thread => "thread",
        }
    }

    /// Whether this level comes from allocation sampling (an estimate) rather than the walk.
    pub fn is_sampled(self) -> bool {
        matches!(self, Classifier::Site | Classifier::Thread)
    }
}

/// Parses a chain such as `package:type:site` (also accepts `,`-free aliases like `pkg`).
pub fn parse_classifiers(text: &str) -> Result<Vec<Classifier>, String> {
    let mut chain = Vec::new();
    for part in text.split(':') {
        let classifier = match part.trim().to_ascii_lowercase().as_str() {
            "package" | "pkg" => Classifier::Package,
            "type" | "class" => Classifier::Type,
            "site" | "allocation-site" | "allocsite" => Classifier::Site,
            "thread" => Classifier::Thread,
            other => {
                return Err(format!(
                    "unknown classifier '{other}' (valid: package, type, site, thread)"
                ))
            }
        };
        if chain.contains(&classifier) {
            return Err(format!("classifier '{}' appears twice", classifier.name()));
        }
        chain.push(classifier);
    }
    if chain.is_empty() {
        return Err("the classifier chain is empty".into());
    }
    Ok(chain)
}

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub classifiers: Vec<Classifier>,
    /// Interval to start sampling with; `None`: sampling off.
    pub sampling: Option<u64>,
    /// Least interval the cost control may lower sampling to.
    pub sampling_floor: u64,
    /// Most sampling time as a fraction of one core (0.005 = 0.5 %); `None`: fixed interval.
    pub sampling_cost: Option<f64>,
    /// Most samples tracked at once.
    pub tracked: u32,
    /// Least time between estimated snapshots; `None`: no estimated snapshots.
    pub estimates: Option<Duration>,
    /// Most predicted pause a GC's own type count may add; `None`: no GC counts (no JFR).
    pub gc_counts: Option<Duration>,
    /// Most time the path search may take on average, as a fraction of one core (`memcity.proto`
    /// `PathTree`); `None`: no search.
    pub paths: Option<f64>,
    pub site_frames: usize,
    /// Record each sample's site, birth, death and last holder (`memcity.proto` `Lifetimes`).
    pub lifetimes: bool,
    /// Longest an OutOfMemoryError waits for the agent's last snapshot; `None`: none is taken.
    pub oom_wait: Option<Duration>,
    /// Fraction of wall time (0.02 = 2 %).
    pub budget: f64,
    pub min_interval: Duration,
    pub max_pause: Duration,
    /// Longest time without a snapshot; `None`: snapshots only at GCs.
    pub period: Option<Duration>,
    /// Which JVMs the agent stays in (`only=`), by main class or jar; `None`: applications,
    /// not the JDK's tools.
    pub only: Option<Only>,
    /// `None`: no gRPC server.
    pub port: Option<u16>,
    /// The web page's port, beside the gRPC server; `None`: no page.
    pub http: Option<u16>,
    /// Where the page's files are; `None`: beside the library.
    pub web: Option<PathBuf>,
    /// Prometheus metrics port (`None`: off).
    pub metrics: Option<u16>,
    /// A file whose content scrapes must present as `Authorization: Bearer`.
    pub metrics_token: Option<PathBuf>,
    pub metrics_top: usize,
    pub metrics_window: Duration,
    /// The application's name for fleets (`None`: its main class or jar).
    pub service: Option<String>,
    /// Where to push the live heap as pprof (`pyroscope=`).
    pub pyroscope: Option<PushUrl>,
    pub pyroscope_every: Duration,
    pub bind: IpAddr,
    /// Serve a non-loopback `bind` without TLS.
    pub insecure: bool,
    /// PEM certificate and key to serve TLS with.
    pub tls: Option<(PathBuf, PathBuf)>,
    pub portfile: Option<PathBuf>,
    pub record: Option<PathBuf>,
    /// Keep the recording under this many bytes (`capped.rs`); `None`: no limit.
    pub record_max: Option<u64>,
    pub history_bytes: u64,
    pub log: Level,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            classifiers: parse_classifiers(DEFAULT_CLASSIFIERS).expect("valid default"),
            sampling: Some(DEFAULT_SAMPLING_BYTES),
            sampling_floor: DEFAULT_SAMPLING_FLOOR,
            sampling_cost: Some(DEFAULT_SAMPLING_COST_PERCENT / 100.0),
            tracked: DEFAULT_TRACKED,
            estimates: Some(DEFAULT_ESTIMATE_INTERVAL),
            gc_counts: Some(DEFAULT_GC_COUNTS),
            paths: Some(DEFAULT_PATHS_PERCENT / 100.0),
            site_frames: DEFAULT_SITE_FRAMES,
            lifetimes: true,
            oom_wait: Some(DEFAULT_OOM_WAIT),
            budget: DEFAULT_BUDGET_PERCENT / 100.0,
            min_interval: DEFAULT_MIN_INTERVAL,
            max_pause: DEFAULT_MAX_PAUSE,
            period: Some(DEFAULT_PERIOD),
            only: None,
            port: Some(DEFAULT_PORT),
            http: None,
            web: None,
            metrics: None,
            metrics_token: None,
            metrics_top: DEFAULT_METRICS_TOP,
            metrics_window: DEFAULT_METRICS_WINDOW,
            service: None,
            pyroscope: None,
            pyroscope_every: DEFAULT_PYROSCOPE_EVERY,
            bind: DEFAULT_BIND.parse().expect("valid default"),
            insecure: false,
            tls: None,
            portfile: None,
            record: None,
            record_max: None,
            history_bytes: DEFAULT_HISTORY_BYTES,
            log: Level::Info,
        }
    }
}
