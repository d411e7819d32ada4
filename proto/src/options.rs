//! The agent's options: `-agentpath:libmemcity.so=key=value,key=value`.
//!
//! A malformed value refuses the load (a half-configured agent is worse than none); an unknown
//! key is a warning, so an option added in a newer memcity does not break an older one.

use std::fmt;
use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

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
/// Default gRPC port.
pub const DEFAULT_PORT: u16 = 7788;
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

/// One valid key, its value syntax and its meaning; printed when options are wrong.
pub const KEYS: &[(&str, &str, &str)] = &[
    (
        "classifiers",
        "package:type",
        "grouping chain of package, type, site, thread",
    ),
    (
        "sampling",
        "512k",
        "sampling interval in bytes, fixed as the least (default: 512k, down to 32k if cheap; 0 = all; off)",
    ),
    (
        "sampling_cost",
        "0.5%",
        "most sampling time, percent of one core, before the interval grows (off = fixed)",
    ),
    (
        "tracked",
        "256k",
        "most allocation samples tracked at once (bounds the agent's memory)",
    ),
    (
        "estimates",
        "500ms",
        "least time between estimated snapshots at GCs (off = exact walks only)",
    ),
    (
        "gc_counts",
        "100ms",
        "let full GCs and G1 remarks count types (JFR) while that adds less than this (off)",
    ),
    (
        "paths",
        "5%",
        "most time, percent of one core on average, for searching paths from GC roots to live samples, which name leak holders (off)",
    ),
    (
        "lifetimes",
        "on",
        "record where sampled objects are born, how long they live and what last held them (off: no allocation sites unless classifiers has site)",
    ),
    (
        "oom_wait",
        "5s",
        "longest the thread that runs out of Java heap waits while memcity takes the last snapshot and names the holder (off)",
    ),
    (
        "site_frames",
        "1",
        "top frames naming an allocation site (1-16), plus the first app frame",
    ),
    (
        "budget",
        "2%",
        "most stopped time for heap walks, percent of wall time",
    ),
    (
        "min_interval",
        "1s",
        "least time between two GC-triggered walks",
    ),
    (
        "max_pause",
        "2s",
        "abort a single walk that stops the JVM longer than this",
    ),
    (
        "period",
        "10s",
        "snapshot after this long without a GC (off = only at GCs)",
    ),
    (
        "port",
        "7788",
        "gRPC port (0 = pick a free one; off = no server)",
    ),
    ("bind", "127.0.0.1", "gRPC bind address"),
    (
        "http",
        "8081",
        "also serve the web page (the city in a browser) on this port (0 = a free one; off by default)",
    ),
    (
        "metrics",
        "9404",
        "serve Prometheus metrics (GET /metrics, OpenMetrics text) on this port (0 = a free one; off by default)",
    ),
    (
        "metrics_token",
        "PATH",
        "scrapes must send this file's token as a bearer token (needed off loopback)",
    ),
    (
        "metrics_top",
        "10",
        "most series per metric family: the largest top-level groups, the fastest-growing types (1-1000)",
    ),
    (
        "pyroscope",
        "URL",
        "push the live heap as a pprof profile to this Pyroscope server (http://host:4040) every pyroscope_every",
    ),
    ("pyroscope_every", "15s", "time between two pushes to Pyroscope"),
    (
        "service",
        "NAME",
        "the application's name in metrics and pushed profiles (default: its main class or jar)",
    ),
    (
        "metrics_window",
        "10m",
        "how far back the metrics' growth and leak suspects look",
    ),
    (
        "web",
        "PATH",
        "the page's files (default: web/ beside libmemcity.so, or one folder up)",
    ),
    (
        "tls_cert",
        "PATH",
        "serve over TLS with this PEM certificate (chain); with tls_key",
    ),
    ("tls_key", "PATH", "the PEM private key of tls_cert"),
    (
        "insecure",
        "false",
        "serve a non-loopback bind without TLS (true: anyone who can reach it and has the token reads the heap's structure)",
    ),
    (
        "portfile",
        "PATH",
        "write the gRPC port here once listening",
    ),
    ("record", "PATH", "write the session to this recording file"),
    (
        "record_max",
        "1g",
        "keep the recording under this size (at least 1m): past it, about half of its older snapshots go, evenly in time; the first and the newest stay",
    ),
    (
        "history",
        "64m",
        "memory cap of the history kept for late viewers",
    ),
    (
        "log",
        "info",
        "log level on stderr: error, warn, info, debug, off",
    ),
];

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

/// What went wrong, with the key it concerns; rendered with the table of valid keys.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionsError {
    pub message: String,
}

impl fmt::Display for OptionsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "invalid agent options: {}", self.message)?;
        write!(
            f,
            "usage: -agentpath:/path/to/libmemcity.so[=key=value,...] or memcity attach PID [key=value,...]; valid keys:"
        )?;
        for (key, example, meaning) in KEYS {
            write!(f, "\n  {key:<13} {example:<13} {meaning}")?;
        }
        Ok(())
    }
}

/// Parses the option string. Returns the options and warnings (unknown keys) to log.
pub fn parse(text: Option<&str>) -> Result<(Options, Vec<String>), OptionsError> {
    let mut options = Options::default();
    let mut warnings = Vec::new();
    let (mut tls_cert, mut tls_key) = (None, None);
    let text = text.unwrap_or("").trim();
    if text.is_empty() {
        return Ok((options, warnings));
    }
    for item in text.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let Some((key, value)) = item.split_once('=') else {
            return Err(err(format!("'{item}' has no value (expected key=value)")));
        };
        let key = key.trim().to_ascii_lowercase();
        let value = value.trim();
        let bad = |why: String| err(format!("{key}={value}: {why}"));
        // The printed table is the list of keys: one that is not in it is unknown, so a key
        // cannot be parsed without being documented.
        if !KEYS.iter().any(|(k, _, _)| *k == key) {
            warnings.push(format!(
                "unknown option '{key}' ignored (valid: {})",
                KEYS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
            ));
            continue;
        }
        match key.as_str() {
            "classifiers" => options.classifiers = parse_classifiers(value).map_err(bad)?,
            "sampling" => {
                options.sampling = if value.eq_ignore_ascii_case("off") {
                    None
                } else {
                    let bytes = parse_bytes(value).map_err(bad)?;
                    if bytes > i32::MAX as u64 {
                        return Err(bad("the JVM takes at most 2147483647 bytes".into()));
                    }
                    // An explicit interval is what the user wants at least: never sample finer.
                    options.sampling_floor = bytes;
                    Some(bytes)
                }
            }
            "sampling_cost" => options.sampling_cost = parse_share_or_off(value).map_err(bad)?,
            "tracked" => {
                let count = parse_count(value).map_err(bad)?;
                if count == 0 || count > u64::from(u32::MAX) {
                    return Err(bad(
                        "expected a number of samples from 1 to 4g (such as 256k)".into(),
                    ));
                }
                options.tracked = count as u32;
            }
            "gc_counts" => {
                options.gc_counts = if value.eq_ignore_ascii_case("off") {
                    None
                } else {
                    Some(parse_duration(value).map_err(bad)?)
                }
            }
            "estimates" => {
                options.estimates = if value.eq_ignore_ascii_case("off") {
                    None
                } else {
                    Some(parse_duration(value).map_err(bad)?)
                }
            }
            "oom_wait" => {
                options.oom_wait = if value.eq_ignore_ascii_case("off") {
                    None
                } else {
                    Some(parse_duration(value).map_err(bad)?)
                }
            }
            "site_frames" => {
                let frames: usize = value
                    .parse()
                    .map_err(|_| bad("expected a whole number of frames".into()))?;
                if !(1..=MAX_SITE_FRAMES).contains(&frames) {
                    return Err(bad(format!("expected 1 to {MAX_SITE_FRAMES}")));
                }
                options.site_frames = frames;
            }
            "budget" => {
                let percent = parse_percent(value).map_err(bad)?;
                if !(percent > 0.0 && percent <= 100.0) {
                    return Err(bad("expected a percentage above 0 and at most 100".into()));
                }
                options.budget = percent / 100.0;
            }
            "min_interval" => options.min_interval = parse_duration(value).map_err(bad)?,
            "max_pause" => {
                let pause = parse_duration(value).map_err(bad)?;
                if pause.is_zero() {
                    return Err(bad("a zero pause would abort every walk".into()));
                }
                options.max_pause = pause;
            }
            "period" => {
                options.period = if value.eq_ignore_ascii_case("off") {
                    None
                } else {
                    let period = parse_duration(value).map_err(bad)?;
                    if period.is_zero() {
                        return Err(bad("a zero period would walk continuously; use off".into()));
                    }
                    Some(period)
                }
            }
            "port" => options.port = parse_port_or_off(value).map_err(bad)?,
            "http" => options.http = parse_port_or_off(value).map_err(bad)?,
            "web" => options.web = Some(non_empty_path(value).map_err(bad)?),
            "metrics" => options.metrics = parse_port_or_off(value).map_err(bad)?,
            "metrics_token" => options.metrics_token = Some(non_empty_path(value).map_err(bad)?),
            "metrics_top" => {
                let top = parse_count(value).map_err(bad)?;
                if !(1..=MAX_METRICS_TOP as u64).contains(&top) {
                    return Err(bad(format!(
                        "expected 1 to {MAX_METRICS_TOP} series per family"
                    )));
                }
                options.metrics_top = top as usize;
            }
            "pyroscope" => options.pyroscope = Some(PushUrl::parse(value).map_err(bad)?),
            "pyroscope_every" => {
                let every = parse_duration(value).map_err(bad)?;
                if every < Duration::from_secs(1) {
                    return Err(bad("push at most once a second: give 1s or more".into()));
                }
                options.pyroscope_every = every;
            }
            "service" => {
                if value.is_empty() {
                    return Err(bad("expected a name, such as checkout-service".into()));
                }
                options.service = Some(value.to_string());
            }
            "metrics_window" => {
                let window = parse_duration(value).map_err(bad)?;
                if window < Duration::from_secs(10) {
                    return Err(bad(
                        "a trend needs several snapshots: give at least 10s".into()
                    ));
                }
                options.metrics_window = window;
            }
            "bind" => {
                options.bind = value
                    .parse()
                    .map_err(|_| bad("expected an IP address such as 127.0.0.1 or ::1".into()))?
            }
            "insecure" => options.insecure = parse_switch(value).map_err(bad)?,
            "paths" => options.paths = parse_share_or_off(value).map_err(bad)?,
            "lifetimes" => options.lifetimes = parse_switch(value).map_err(bad)?,
            "tls_cert" => tls_cert = Some(non_empty_path(value).map_err(bad)?),
            "tls_key" => tls_key = Some(non_empty_path(value).map_err(bad)?),
            "portfile" => options.portfile = Some(non_empty_path(value).map_err(bad)?),
            "record" => options.record = Some(non_empty_path(value).map_err(bad)?),
            "record_max" => options.record_max = Some(parse_max_size(value).map_err(bad)?),
            "history" => options.history_bytes = parse_bytes(value).map_err(bad)?,
            "log" => {
                options.log = Level::parse(value)
                    .ok_or_else(|| bad("expected error, warn, info, debug or off".into()))?
            }
            _ => warnings.push(format!("option '{key}' is listed but not handled; ignored")),
        }
    }
    if options.http.is_some() && options.port.is_none() {
        return Err(err(
            "http serves the page beside the gRPC server, which port=off turns off: drop port=off (or http)"
                .into(),
        ));
    }
    if options.metrics.is_some() && options.port.is_none() {
        return Err(err(
            "metrics are served beside the gRPC server, which port=off turns off: drop port=off (or metrics)"
                .into(),
        ));
    }
    if options.pyroscope.is_some() && options.port.is_none() {
        return Err(err(
            "the Pyroscope push runs beside the gRPC server, which port=off turns off: drop port=off (or pyroscope)"
                .into(),
        ));
    }
    if options.metrics_token.is_some() && options.metrics.is_none() {
        return Err(err(
            "metrics_token guards the metrics port, which is off: add metrics=PORT (or drop metrics_token)"
                .into(),
        ));
    }
    options.tls = match (tls_cert, tls_key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => {
            return Err(err(
                "tls_cert and tls_key go together: give both PEM files, or neither".into(),
            ))
        }
    };
    Ok((options, warnings))
}

/// A server to push to: `http://host[:port][/prefix]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushUrl {
    pub host: String,
    pub port: u16,
    /// A path the server is mounted under (a reverse proxy's), without the trailing `/`.
    pub prefix: String,
}

impl PushUrl {
    /// Parses the option's URL; an error says what to give instead.
    pub fn parse(url: &str) -> Result<PushUrl, String> {
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err(
                "memcity pushes over plain HTTP only: push to a Grafana Alloy or a TLS-terminating proxy on this machine"
                    .into(),
            );
        } else {
            return Err("expected the server's address, such as http://pyroscope:4040".into());
        };
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        // `[::1]:4040` keeps its brackets' colons.
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.ends_with(']') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| format!("'{port}' is not a port"))?,
            ),
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err("no host: expected http://host:port".into());
        }
        Ok(PushUrl {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            prefix: if path.trim_end_matches('/').is_empty() {
                String::new()
            } else {
                format!("/{}", path.trim_end_matches('/'))
            },
        })
    }
}

impl PushUrl {
    /// `host:port` (`[::1]:4040` for an IPv6 address), as an HTTP `Host` header names it.
    pub fn authority(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

impl fmt::Display for PushUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}{}", self.authority(), self.prefix)
    }
}

fn err(message: String) -> OptionsError {
    OptionsError { message }
}

/// A port (0: a free one) or `off`.
fn parse_port_or_off(value: &str) -> Result<Option<u16>, String> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|_| "expected a port 0-65535 or off".into())
}

/// A share of one core as a percentage above 0 and at most 100 (`0.5%` -> 0.005), or `off`.
fn parse_share_or_off(value: &str) -> Result<Option<f64>, String> {
    if value.eq_ignore_ascii_case("off") {
        return Ok(None);
    }
    let percent = parse_percent(value)?;
    if !(percent > 0.0 && percent <= 100.0) {
        return Err("expected a percentage above 0 and at most 100, or off".into());
    }
    Ok(Some(percent / 100.0))
}

/// `true`/`yes`/`on` or `false`/`no`/`off`.
fn parse_switch(value: &str) -> Result<bool, String> {
    match value {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" => Ok(false),
        _ => Err("expected on or off (true or false)".into()),
    }
}

fn non_empty_path(value: &str) -> Result<PathBuf, String> {
    if value.is_empty() {
        Err("expected a file path".into())
    } else {
        Ok(PathBuf::from(value))
    }
}

/// `512k`, `4m`, `1g`, `65536`, `64mb` (binary multiples).
pub fn parse_bytes(value: &str) -> Result<u64, String> {
    let lower = value.to_ascii_lowercase();
    let trimmed = lower.trim_end_matches('b').trim_end_matches('i');
    let (digits, multiplier) = match trimmed.chars().last() {
        Some('k') => (&trimmed[..trimmed.len() - 1], 1024),
        Some('m') => (&trimmed[..trimmed.len() - 1], 1024 * 1024),
        Some('g') => (&trimmed[..trimmed.len() - 1], 1024 * 1024 * 1024),
        _ => (trimmed, 1),
    };
    digits
        .trim()
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or_else(|| "expected a size such as 512k, 64m or 1048576".to_string())
}

/// A recording's size limit (`record_max=`, `memcity record --max-size`): a size, and one a
/// thinning can keep to (the newest snapshots alone take a quarter of it).
pub fn parse_max_size(value: &str) -> Result<u64, String> {
    parse_bytes_at_least(value, "to hold a session's start and its newest snapshots")
}

/// A size of at least 1 MiB, for what must hold a session (`--memory`, `--max-size`); `what`
/// says what it holds when it is too small.
pub fn parse_bytes_at_least(value: &str, what: &str) -> Result<u64, String> {
    let bytes = parse_bytes(value)?;
    if bytes < 1 << 20 {
        return Err(format!("{value} is too small {what}: give at least 1m"));
    }
    Ok(bytes)
}

/// `2`, `2%`, `0.5%`.
fn parse_percent(value: &str) -> Result<f64, String> {
    value
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| "expected a percentage such as 2 or 0.5%".to_string())
}

/// `1000`, `256k`, `1m` (decimal-free counts with binary multiples, like sizes).
fn parse_count(value: &str) -> Result<u64, String> {
    parse_bytes(value).map_err(|_| "expected a count such as 1000 or 256k".to_string())
}

/// `250ms`, `2s`, `1m`, or plain milliseconds.
pub fn parse_duration(value: &str) -> Result<Duration, String> {
    let lower = value.to_ascii_lowercase();
    let parse = |digits: &str| digits.trim().parse::<f64>().ok().filter(|v| *v >= 0.0);
    let millis = if let Some(d) = lower.strip_suffix("ms") {
        parse(d)
    } else if let Some(d) = lower.strip_suffix('s') {
        parse(d).map(|v| v * 1000.0)
    } else if let Some(d) = lower.strip_suffix('m') {
        parse(d).map(|v| v * 60_000.0)
    } else {
        parse(&lower)
    };
    millis
        .filter(|v| v.is_finite() && *v < 1e12)
        .map(|ms| Duration::from_micros((ms * 1000.0) as u64))
        .ok_or_else(|| "expected a duration such as 500ms, 2s or 1m".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_options_gives_documented_defaults() {
        let (o, w) = parse(None).unwrap();
        assert_eq!(o, Options::default());
        assert!(w.is_empty());
        assert_eq!(o.classifiers, [Classifier::Package, Classifier::Type]);
        assert_eq!(o.sampling, Some(512 * 1024));
        assert_eq!(o.sampling_floor, 32 * 1024);
        assert_eq!(o.budget, 0.02);
        assert_eq!(o.port, Some(7788));
        assert_eq!(o.bind.to_string(), "127.0.0.1");
        assert_eq!(o.history_bytes, 64 << 20);
        assert_eq!(parse(Some("  ")).unwrap().0, Options::default());
    }

    #[test]
    fn every_key_parses() {
        let (o, w) = parse(Some(
            "classifiers=type:site:thread,sampling=64k,sampling_cost=1%,tracked=1k,estimates=2s,gc_counts=50ms,site_frames=5,budget=5%,min_interval=250ms,\
             max_pause=3s,period=5s,port=0,bind=::1,portfile=/tmp/p,record=/tmp/r.mcrec,history=1m,log=debug,\
             lifetimes=off",
        ))
        .unwrap();
        assert!(w.is_empty());
        assert_eq!(
            o.classifiers,
            [Classifier::Type, Classifier::Site, Classifier::Thread]
        );
        assert_eq!(o.sampling, Some(65536));
        assert_eq!(o.sampling_floor, 65536, "an explicit interval is the floor");
        assert_eq!(o.sampling_cost, Some(0.01));
        assert_eq!(o.tracked, 1024);
        assert_eq!(o.estimates, Some(Duration::from_secs(2)));
        assert_eq!(o.gc_counts, Some(Duration::from_millis(50)));
        assert_eq!(o.site_frames, 5);
        assert!(!o.lifetimes);
        assert!(Options::default().lifetimes, "on by default");
        assert!((o.budget - 0.05).abs() < 1e-12);
        assert_eq!(o.min_interval, Duration::from_millis(250));
        assert_eq!(o.max_pause, Duration::from_secs(3));
        assert_eq!(o.period, Some(Duration::from_secs(5)));
        assert_eq!(o.port, Some(0));
        assert_eq!(o.bind.to_string(), "::1");
        assert_eq!(o.portfile, Some(PathBuf::from("/tmp/p")));
        assert_eq!(o.record, Some(PathBuf::from("/tmp/r.mcrec")));
        assert_eq!(o.history_bytes, 1 << 20);
        assert_eq!(o.log, Level::Debug);
    }

    #[test]
    fn off_values_and_sampling_zero() {
        let (o, _) = parse(Some(
            "sampling=off,port=off,log=off,period=off,sampling_cost=off,estimates=off,gc_counts=off",
        ))
        .unwrap();
        assert_eq!(o.sampling_cost, None);
        assert_eq!(o.estimates, None);
        assert_eq!(o.gc_counts, None);
        assert_eq!(o.period, None);
        assert_eq!(o.sampling, None);
        assert_eq!(o.port, None);
        assert_eq!(o.log, Level::Off);
        assert_eq!(parse(Some("sampling=0")).unwrap().0.sampling, Some(0));
        assert_eq!(parse(Some("paths=off")).unwrap().0.paths, None);
        assert_eq!(parse(Some("paths=20%")).unwrap().0.paths, Some(0.2));
        assert_eq!(parse(None).unwrap().0.paths, Some(0.05));
        for bad in ["paths=0", "paths=150%", "paths=fast"] {
            assert!(parse(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse(Some("oom_wait=off")).unwrap().0.oom_wait, None);
        assert_eq!(
            parse(Some("oom_wait=2s")).unwrap().0.oom_wait,
            Some(Duration::from_secs(2))
        );
        assert_eq!(parse(None).unwrap().0.oom_wait, Some(DEFAULT_OOM_WAIT));
        let e = parse(Some("oom_wait=soon")).unwrap_err().to_string();
        assert!(e.contains("oom_wait=soon") && e.contains("oom_wait"), "{e}");
    }

    #[test]
    fn the_page_needs_the_grpc_server() {
        let (o, _) = parse(Some("http=8081,web=/opt/memcity/web")).unwrap();
        assert_eq!(o.http, Some(8081));
        assert_eq!(o.web, Some("/opt/memcity/web".into()));
        assert_eq!(parse(None).unwrap().0.http, None);
        assert_eq!(parse(Some("http=off")).unwrap().0.http, None);
        let e = parse(Some("port=off,http=0")).unwrap_err().to_string();
        assert!(e.contains("port=off"), "{e}");
        let e = parse(Some("http=web")).unwrap_err().to_string();
        assert!(e.contains("expected a port"), "{e}");
    }

    #[test]
    fn metrics_options() {
        let (o, _) = parse(Some(
            "metrics=9404,metrics_token=/etc/memcity/token,metrics_top=25,metrics_window=30m",
        ))
        .unwrap();
        assert_eq!(o.metrics, Some(9404));
        assert_eq!(o.metrics_token, Some("/etc/memcity/token".into()));
        assert_eq!(o.metrics_top, 25);
        assert_eq!(o.metrics_window, Duration::from_secs(1800));
        let defaults = parse(None).unwrap().0;
        assert_eq!(defaults.metrics, None);
        assert_eq!(defaults.metrics_top, DEFAULT_METRICS_TOP);
        for (given, says) in [
            ("port=off,metrics=0", "port=off"),
            ("metrics_token=/tmp/t", "add metrics=PORT"),
            ("metrics=0,metrics_top=0", "expected 1 to 1000"),
            ("metrics=0,metrics_top=5000", "expected 1 to 1000"),
            ("metrics=0,metrics_window=2s", "at least 10s"),
            ("metrics=prometheus", "expected a port"),
        ] {
            let e = parse(Some(given)).unwrap_err().to_string();
            assert!(e.contains(says), "{given}: {e}");
        }
    }

    #[test]
    fn pyroscope_urls_are_read_or_refused_with_what_to_do() {
        let (o, _) = parse(Some("pyroscope=http://pyroscope:4040,pyroscope_every=30s")).unwrap();
        let url = o.pyroscope.unwrap();
        assert_eq!(
            url,
            PushUrl {
                host: "pyroscope".into(),
                port: 4040,
                prefix: String::new()
            }
        );
        assert_eq!(url.to_string(), "http://pyroscope:4040");
        assert_eq!(o.pyroscope_every, Duration::from_secs(30));
        let url = PushUrl::parse("http://10.0.0.7/profiles/").unwrap();
        assert_eq!((url.port, url.prefix.as_str()), (80, "/profiles"));
        let url = PushUrl::parse("http://[::1]:4040").unwrap();
        assert_eq!((url.host.as_str(), url.port), ("::1", 4040));
        assert_eq!(url.to_string(), "http://[::1]:4040");
        for (given, says) in [
            ("pyroscope=https://x:4040", "plain HTTP only"),
            ("pyroscope=pyroscope:4040", "such as http://"),
            ("pyroscope=http://x:port", "not a port"),
            ("pyroscope=http://:4040", "no host"),
            ("pyroscope=http://x,pyroscope_every=100ms", "1s or more"),
            ("pyroscope=http://x,port=off", "port=off"),
        ] {
            let e = parse(Some(given)).unwrap_err().to_string();
            assert!(e.contains(says), "{given}: {e}");
        }
    }

    #[test]
    fn a_certificate_needs_its_key() {
        let e = parse(Some("tls_cert=/tmp/c")).unwrap_err().to_string();
        assert!(e.contains("go together"), "{e}");
        let (o, _) = parse(Some("tls_cert=/tmp/c,tls_key=/tmp/k")).unwrap();
        assert_eq!(o.tls, Some(("/tmp/c".into(), "/tmp/k".into())));
    }

    #[test]
    fn every_parsed_key_is_in_the_printed_table() {
        // Each key the parser accepts must be listed for users (and the README, by a docs test).
        for (key, example, _) in KEYS {
            let value = match *key {
                "portfile" | "record" | "tls_cert" | "tls_key" | "web" | "metrics_token" => {
                    "/tmp/x"
                }
                "pyroscope" => "http://localhost:4040",
                _ => example,
            };
            // The certificate and its key only come together.
            let pair = match *key {
                "tls_cert" => ",tls_key=/tmp/k",
                "tls_key" => ",tls_cert=/tmp/c",
                // A token guards a metrics port.
                "metrics_token" => ",metrics=0",
                _ => "",
            };
            let (_, warnings) = parse(Some(&format!("{key}={value}{pair}"))).unwrap();
            assert!(warnings.is_empty(), "{key}: {warnings:?}");
        }
        let text = parse(Some("port=x")).unwrap_err().to_string();
        for key in ["period", "sampling_cost", "site_frames", "estimates"] {
            assert!(text.contains(key), "{text}");
        }
    }

    #[test]
    fn unknown_key_warns_and_continues() {
        let (o, w) = parse(Some("colour=red,port=1234")).unwrap();
        assert_eq!(o.port, Some(1234));
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("colour"));
        assert!(w[0].contains("classifiers"));
    }

    #[test]
    fn malformed_values_are_errors_that_list_the_keys() {
        for bad in [
            "port=http",
            "port=70000",
            "sampling=lots",
            "sampling=4g",
            "budget=0",
            "budget=150%",
            "classifiers=type:colour",
            "classifiers=type:type",
            "classifiers=",
            "max_pause=0",
            "period=0",
            "min_interval=soon",
            "bind=localhost:80",
            "record=",
            "record_max=64k",
            "log=chatty",
            "site_frames=0",
            "sampling_cost=0",
            "sampling_cost=many",
            "tracked=0",
            "tracked=lots",
            "estimates=soon",
            "gc_counts=lots",
            "lifetimes=sometimes",
            "justakey",
        ] {
            let e = parse(Some(bad)).unwrap_err();
            let text = e.to_string();
            assert!(text.contains("invalid agent options"), "{bad}: {text}");
            assert!(text.contains("portfile"), "{bad}: lists keys: {text}");
        }
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_bytes("512k"), Ok(524288));
        assert_eq!(parse_bytes("64MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("1g"), Ok(1 << 30));
        assert_eq!(parse_bytes("100"), Ok(100));
        assert!(parse_bytes("k").is_err());
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_millis(20)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("-1s").is_err());
    }
}
