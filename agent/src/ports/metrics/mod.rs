//! Prometheus metrics (`metrics=PORT`): what memcity knows of the heap at every GC, in the
//! monitoring a fleet already runs, so that one alert rule finds the JVM that leaks among
//! hundreds and its `agent` label says where to point `memcity view`.
//!
//! The metrics follow the session as a viewer does: the agent's own reader of its stream
//! ([`Hub::subscribe_internal`]) feeds a city model of the last `metrics_window`, and leak
//! suspects come from the same code the viewer names them with (`memcity_city::leak`). A
//! scrape renders that model once per snapshot and answers from the cache until the next one;
//! it runs on the gRPC server's thread, never on an application thread, and stops nothing.
//!
//! Cardinality is bounded by `metrics_top` (N): every family has at most N series. Groups are
//! labelled by the first level of the grouping (packages, by default) and by type; allocation
//! sites are never labels.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use memcity_city::leak::roots::RootRef;
use memcity_city::leak::{growers, suspects};
use memcity_city::model::{CityModel, Metric, Window, ROOT};
use memcity_proto::v1::{stream_message::Kind, StreamMessage};
use prometheus_client::registry::Registry;

use crate::log::warning;
use crate::ports::error::PortError;
use crate::ports::hub::Hub;
use access::Access;

mod access;
mod figures;

use figures::{Figures, Group, Growing, SuspectFigures};

/// The two formats a scrape may get.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics text, which Prometheus asks for first (units, info metrics).
    OpenMetrics,
    /// Prometheus's text format 0.0.4, for clients that do not ask for OpenMetrics.
    Text,
}

impl Format {
    /// What the scraper's `Accept` header asks for.
    pub fn accepted(accept: Option<&str>) -> Format {
        if accept.is_some_and(|a| a.contains("application/openmetrics-text")) {
            Format::OpenMetrics
        } else {
            Format::Text
        }
    }

    fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
        }
    }
}

/// A node's numbers in a snapshot the model keeps at most, all snapshots together (some 24
/// bytes each, with the errors of estimated ones: about 40 MB): a heap of many groups keeps
/// fewer snapshots of the window, a JVM that collects ten times a second a thinner sample of
/// them. A trend needs a few dozen points, not thousands.
const MAX_VALUES: usize = 1_500_000;
/// Snapshots kept at least and at most, whatever the budget above allows.
const MIN_FRAMES: usize = 20;
const MAX_FRAMES: usize = 240;

/// What the metrics say about themselves and their JVM.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Most series per family.
    pub top: usize,
    /// How far back growth and suspects look.
    pub window: Duration,
    /// The agent's gRPC address as a viewer elsewhere reaches it (`host:port`): what a
    /// dashboard's link passes to `memcity view`.
    pub agent: String,
    /// The application's name (the `service` option, or its main class or jar).
    pub service: String,
    /// The agent's web page (`http=PORT`) as a browser elsewhere reaches it, without its token:
    /// a dashboard's link to the city.
    pub page: Option<String>,
}

/// Running totals of what each snapshot reports "since the previous snapshot".
#[derive(Debug, Default, Clone, Copy)]
struct Totals {
    snapshots: u64,
    refused_walks: u64,
    aborted_walks: u64,
    skipped_gcs: u64,
}

/// The session as the metrics follow it.
pub struct Feed {
    settings: Settings,
    model: CityModel,
    totals: Totals,
    /// The rendered answers, each with the snapshot count it was rendered at.
    cache: Vec<(Format, u64, Arc<String>)>,
    /// A message the model refused, said once.
    said_refused: bool,
    /// How long the last render took (exported in the next one).
    render: Duration,
    /// A push found no sites to profile, and said so.
    said_no_profile: bool,
}

/// The latest snapshot as a profile to push.
pub struct Latest {
    pub seq: u64,
    /// When it was taken, Unix ms.
    pub unix_ms: u64,
    pub profile: memcity_proto::pprof::Profile,
}

impl Feed {
    pub fn new(settings: Settings) -> Self {
        let mut model = CityModel::new();
        // It keeps a fixed span of snapshots itself (`retain_frames`), in the JVM's process.
        model.set_detail_budget(None);
        // They accumulate over the whole session, and no metric reads them.
        model.gather_lifetimes(false);
        Feed {
            settings,
            model,
            totals: Totals::default(),
            cache: Vec::new(),
            said_refused: false,
            render: Duration::ZERO,
            said_no_profile: false,
        }
    }

    /// When the session started, Unix ms (the handshake's; 0 before it).
    fn start_unix_ms(&self) -> u64 {
        self.model
            .handshake
            .as_ref()
            .map_or(0, |h| h.start_time_unix_ms)
    }

    /// Takes one message of the agent's stream.
    pub fn apply(&mut self, message: &StreamMessage) {
        let newest = self.model.frames().last().map(|f| f.seq);
        if let Err(e) = self.model.apply(message) {
            // The agent's own stream: only a bug gets here. Say it once, go on.
            if !self.said_refused {
                warning!("metrics: a message of the session was refused (said once): {e}");
                self.said_refused = true;
            }
            return;
        }
        let Some(Kind::Snapshot(snapshot)) = &message.kind else {
            return;
        };
        // One the model kept once already (a late join's overlap) is not counted twice.
        if self.model.frames().last().map(|f| f.seq) == newest {
            return;
        }
        self.totals.snapshots += 1;
        if let Some(cost) = snapshot.cost {
            self.totals.refused_walks += cost.refused_walks;
            self.totals.aborted_walks += cost.aborted_walks;
            self.totals.skipped_gcs += cost.skipped_gcs;
        }
        self.keep_window();
    }

    /// Forgets snapshots older than the window, except the one with the newest object-level
    /// paths (they name suspects' holders, and a search on a large heap can be minutes old);
    /// past the budget, keeps snapshots at least `window / cap` apart; fits growth over the
    /// window alone.
    fn keep_window(&mut self) {
        let frames = self.model.frames();
        let Some(newest) = frames.last() else {
            return;
        };
        let len = frames.len();
        let cutoff = newest
            .time_ms
            .saturating_sub(self.settings.window.as_millis() as u64);
        let in_window = frames.partition_point(|f| f.time_ms < cutoff);
        let paths = self.model.paths_at(len - 1).map(|(at, _)| at);
        let cap = (MAX_VALUES / self.model.nodes().len().max(1)).clamp(MIN_FRAMES, MAX_FRAMES);
        // Over the cap, an even spread over the window: a snapshot goes when it follows the
        // last one kept by less than the spacing. Kept ones are that far apart already, so
        // they stay kept as the window moves on.
        let spacing = if len - in_window > cap {
            self.settings.window.as_millis() as u64 / cap as u64
        } else {
            0
        };
        let mut last_kept: Option<u64> = None;
        self.model.retain_frames(|i, frame| {
            let keep = Some(i) == paths
                || i + 1 == len
                || (i >= in_window
                    && last_kept.is_none_or(|t| frame.time_ms >= t.saturating_add(spacing)));
            if keep && i >= in_window {
                last_kept = Some(frame.time_ms);
            }
            keep
        });
        let frames = self.model.frames();
        let last = frames.len() - 1;
        // Past the VM-start snapshot, as the viewer's default window.
        let start = frames
            .partition_point(|f| f.time_ms < cutoff)
            .max(self.model.warm_start())
            .min(last);
        self.model.set_window(Some(Window { start, end: last }));
    }

    /// The metrics of the latest snapshot in `format` (rendered once per snapshot and format).
    pub fn render(&mut self, format: Format) -> Arc<String> {
        let now = self.totals.snapshots;
        if let Some((_, _, text)) = self.cache.iter().find(|c| c.0 == format && c.1 == now) {
            return text.clone();
        }
        let started = Instant::now();
        let figures = self.figures();
        let mut registry = Registry::with_prefix("memcity");
        registry.register_collector(Box::new(figures));
        let mut text = String::new();
        let encoded = match format {
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut text, &registry),
            Format::Text => {
                prometheus_client::encoding::prometheus_text::encode(&mut text, &registry)
            }
        };
        // Writing to a String cannot fail; a failure would be a bug in the encoder.
        if let Err(e) = encoded {
            crate::log::once!(Warn, "metrics: cannot encode: {e}");
        }
        self.render = started.elapsed();
        let text = Arc::new(text);
        self.cache.retain(|c| c.0 != format);
        self.cache.push((format, now, text.clone()));
        text
    }

    /// The latest snapshot as a pprof profile (the Pyroscope push), unless it is snapshot
    /// `pushed` (the same heap again says nothing new); `None` before the first, or when it
    /// has no allocation sites (said once).
    pub fn latest_profile(&mut self, pushed: Option<u64>) -> Option<Latest> {
        let at = self.model.frames().len().checked_sub(1)?;
        let frame = &self.model.frames()[at];
        let (seq, unix_ms) = (frame.seq, self.start_unix_ms() + frame.time_ms);
        if pushed == Some(seq) {
            return None;
        }
        match memcity_city::pprof::heap_profile(&self.model, at, None) {
            Ok(profile) => Some(Latest {
                seq,
                unix_ms,
                profile: profile.profile,
            }),
            Err(e) => {
                if !self.said_no_profile {
                    warning!("no profile to push to Pyroscope: {e}");
                    self.said_no_profile = true;
                }
                None
            }
        }
    }

    fn figures(&self) -> Figures {
        let model = &self.model;
        let top = self.settings.top;
        let frames = model.frames();
        let window = model.window();
        let last = frames.len().checked_sub(1);
        let group = |id, at: usize| Group {
            name: model.node(id).name.clone(),
            objects: model.value(id, at, Metric::Objects),
            bytes: model.value(id, at, Metric::Bytes),
            objects_error: model.error(id, at, Metric::Objects),
            bytes_error: model.error(id, at, Metric::Bytes),
        };
        let (heap, groups) = match last {
            Some(at) => (Some(group(ROOT, at)), top_groups(model, at, top, group)),
            None => (None, Vec::new()),
        };
        let span_s = match (frames.get(window.start), frames.get(window.end)) {
            (Some(a), Some(b)) => (b.time_ms.saturating_sub(a.time_ms)) as f64 / 1000.0,
            _ => 0.0,
        };
        let per_second = |rise: f64| if span_s > 0.0 { rise / span_s } else { 0.0 };
        let growing = growers::growing_types(model, top)
            .into_iter()
            .map(|g| Growing {
                now: Group {
                    name: g.type_name,
                    objects: g.objects_now,
                    bytes: g.bytes_now,
                    objects_error: g.objects_error,
                    bytes_error: g.bytes_error,
                },
                objects_per_second: per_second(g.objects.growth),
                bytes_per_second: per_second(g.bytes.map_or(0.0, |t| t.growth)),
            })
            .collect();
        // One series per suspect id: two suspects of one signature (a pool's threads named
        // by their family) are one leak, their rates summed.
        let mut suspects: Vec<SuspectFigures> = Vec::new();
        // Backed suspects only: a rise within the estimates' doubt that no search explained
        // is no leak to page anyone for (`Suspect::is_backed`).
        for s in suspects::suspects(model)
            .into_iter()
            .filter(|s| s.is_backed())
        {
            let (objects, bytes) = s.held();
            let id = signature_id(&s.signature.to_string());
            if let Some(same) = suspects.iter_mut().find(|x| x.id == id) {
                same.objects_per_second += per_second(objects as f64);
                same.bytes_per_second += per_second(bytes as f64);
                same.confirmed |= s.confirmed;
                continue;
            }
            if suspects.len() == top {
                continue;
            }
            suspects.push(SuspectFigures {
                id,
                root: s.root.as_ref().map_or(String::new(), RootRef::stable_name),
                holder: s.holder.clone(),
                objects_per_second: per_second(objects as f64),
                bytes_per_second: per_second(bytes as f64),
                confirmed: s.confirmed,
            });
        }
        let handshake = model.handshake.as_ref();
        let newest = frames.last();
        Figures {
            settings: self.settings.clone(),
            pid: handshake.map_or(std::process::id(), |h| h.pid),
            jvm: handshake.map_or(String::new(), |h| h.jvm_version.clone()),
            gc: handshake.map_or(String::new(), |h| h.gc_name.clone()),
            level: model
                .level_roles()
                .first()
                .map_or(String::new(), |l| l.to_lowercase()),
            heap,
            estimated: last.is_some_and(|at| frames[at].is_estimated()),
            latest_ms: newest.map(|f| self.start_unix_ms() + f.time_ms),
            window_s: span_s,
            groups,
            growing,
            suspects,
            cost: newest.and_then(|f| f.cost).unwrap_or_default(),
            totals: self.totals,
            render: self.render,
        }
    }
}

/// The `top` largest first-level groups at snapshot `at` by bytes; past `top`, the largest
/// `top - 1` and the rest summed as `(others)`, so the family never has more than `top` series.
fn top_groups(
    model: &CityModel,
    at: usize,
    top: usize,
    group: impl Fn(u32, usize) -> Group,
) -> Vec<Group> {
    let mut all: Vec<Group> = model
        .node(ROOT)
        .children
        .iter()
        .map(|&id| group(id, at))
        .filter(|g| g.objects > 0 || g.bytes > 0)
        .collect();
    all.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
    if all.len() <= top {
        return all;
    }
    let rest = all.split_off(top.saturating_sub(1));
    all.push(rest.into_iter().fold(
        Group {
            name: "(others)".into(),
            ..Group::default()
        },
        |mut sum, g| {
            sum.objects += g.objects;
            sum.bytes += g.bytes;
            // An upper bound (see `leak::growers::Growing`).
            sum.objects_error += g.objects_error;
            sum.bytes_error += g.bytes_error;
            sum
        },
    ));
    all
}

/// A short label that stays the same for a suspect's signature in every run and every JVM
/// of a fleet (FNV-1a: no seed, unlike std's hasher).
fn signature_id(signature: &str) -> String {
    let hash = signature.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    format!("{hash:016x}")
}

/// `host:port` for the agent's gRPC port bound at `local`: a wildcard bind is reached by the
/// machine's name.
pub fn agent_address(local: SocketAddr) -> String {
    if local.ip().is_unspecified() {
        format!("{}:{}", hostname(), local.port())
    } else {
        local.to_string()
    }
}

/// `url` with a wildcard host (`0.0.0.0`, `[::]`) as the machine's name.
pub fn reachable_url(url: &str) -> String {
    for wildcard in ["//0.0.0.0:", "//[::]:"] {
        if url.contains(wildcard) {
            return url.replacen(wildcard, &format!("//{}:", hostname()), 1);
        }
    }
    url.to_string()
}

fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its length; gethostname NUL-terminates within it on success.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return "localhost".into();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

/// The application's name: the `service` option, else its main class or jar.
pub fn service_name(option: Option<&str>) -> String {
    if let Some(name) = option {
        return name.to_string();
    }
    memcity_proto::command::main_of(&memcity_proto::command::args_of(None))
}

/// The session as the metrics and the Pyroscope push follow it.
pub struct Shared {
    feed: Mutex<Feed>,
}

/// Starts following the session (on the calling runtime) for the metrics and the push.
pub fn follow_session(hub: Arc<Hub>, settings: Settings) -> Arc<Shared> {
    let shared = Arc::new(Shared {
        feed: Mutex::new(Feed::new(settings)),
    });
    tokio::spawn(follow(hub, shared.clone()));
    shared
}

/// What a scrape reaches.
struct Endpoint {
    shared: Arc<Shared>,
    access: Access,
}

/// Binds the metrics' port. The caller enforced the bind rules (TLS off loopback) for the gRPC
/// port; the metrics take the same TLS files, and off loopback a token as well.
pub async fn prepare(
    bind: std::net::IpAddr,
    port: u16,
    tls: Option<&(PathBuf, PathBuf)>,
    token_file: Option<&Path>,
    shared: Arc<Shared>,
) -> Result<memcity_page::Ready, PortError> {
    let access = Access::new(token_file)?;
    if !bind.is_loopback() && !access.has_token() {
        return Err(PortError::NeedsToken { bind });
    }
    let listening = memcity_page::Listening::bind(
        SocketAddr::new(bind, port),
        tls,
        "the metrics",
        "metrics",
        crate::ports::hub::log_refusal,
    )
    .await?;
    let app = Router::new()
        .route("/metrics", get(scrape))
        .with_state(Arc::new(Endpoint { shared, access }));
    Ok(listening.with(app, "metrics"))
}

pub(crate) fn lock(shared: &Shared) -> std::sync::MutexGuard<'_, Feed> {
    // A panic while rendering leaves a model that was whole before the message; go on with it.
    shared.feed.lock().unwrap_or_else(|p| p.into_inner())
}

/// Feeds the session to the metrics' model, off the runtime's thread (a snapshot of tens of
/// thousands of groups takes milliseconds to take in; gRPC viewers must not wait for it).
async fn follow(hub: Arc<Hub>, shared: Arc<Shared>) {
    let (backlog, mut live) = hub.subscribe_internal();
    let take = |items: Vec<crate::ports::hub::Item>| {
        let shared = shared.clone();
        tokio::task::spawn_blocking(move || {
            let mut feed = lock(&shared);
            for item in &items {
                feed.apply(item);
            }
        })
    };
    if take(backlog).await.is_err() {
        return;
    }
    while let Some(item) = live.recv().await {
        // Whatever else queued meanwhile goes in the same trip.
        let mut items = vec![item];
        while let Ok(more) = live.try_recv() {
            items.push(more);
        }
        if take(items).await.is_err() {
            return;
        }
    }
}

async fn scrape(
    State(endpoint): State<Arc<Endpoint>>,
    extensions: axum::http::Extensions,
    headers: HeaderMap,
) -> Response {
    if let Err(refused) = endpoint.access.check(&headers) {
        return refused.into_response();
    }
    // A scraper with the bearer token may keep its connection (`memcity_page::conn`); without
    // a token (loopback names only) anyone local passes, so no connection is trusted for it.
    if endpoint.access.has_token() {
        if let Some(connection) = memcity_page::conn::of_extensions(&extensions) {
            connection.trust.grant();
        }
    }
    let format = Format::accepted(headers.get(header::ACCEPT).and_then(|a| a.to_str().ok()));
    let shared = endpoint.shared.clone();
    let rendered = tokio::task::spawn_blocking(move || lock(&shared).render(format)).await;
    match rendered {
        Ok(text) => (
            [(header::CONTENT_TYPE, format.content_type())],
            String::clone(&text),
        )
            .into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "memcity: rendering the metrics failed; see the JVM's stderr\n",
        )
            .into_response(),
    }
}

#[doc(hidden)]
pub mod synthetic;

#[cfg(test)]
mod tests {
    use super::synthetic::Session;
    use super::*;

    fn settings(top: usize) -> Settings {
        Settings {
            top,
            window: Duration::from_secs(600),
            agent: "host:7788".into(),
            service: "App".into(),
            page: None,
        }
    }

    /// A feed with `snapshots` of `session` taken in, exporting `top` series per family.
    fn fed(session: &Session, snapshots: u64, top: usize) -> Feed {
        let mut feed = Feed::new(settings(top));
        for message in session.messages(snapshots) {
            feed.apply(&message);
        }
        feed
    }

    /// Series per family name (samples' names without OpenMetrics' `_total` and `_info`).
    fn series(text: &str) -> std::collections::HashMap<String, usize> {
        let mut out = std::collections::HashMap::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let name = line.split(['{', ' ']).next().unwrap();
            let name = name
                .strip_suffix("_total")
                .or_else(|| name.strip_suffix("_info"))
                .unwrap_or(name);
            *out.entry(name.to_string()).or_default() += 1;
        }
        out
    }

    fn value(text: &str, prefix: &str) -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    }

    #[test]
    fn no_family_has_more_series_than_metrics_top() {
        // 100,000 types in 1,000 packages, all of package 0's growing.
        let session = Session {
            packages: 1000,
            types: 100,
            rise: 20_000,
            every_ms: 1000,
        };
        let mut feed = fed(&session, 4, 7);
        let text = feed.render(Format::OpenMetrics);
        assert!(text.ends_with("# EOF\n"), "{text}");
        let counts = series(&text);
        for (family, n) in &counts {
            assert!(*n <= 7, "{family} has {n} series:\n{text}");
        }
        for family in [
            "memcity_group_live_objects",
            "memcity_growing_type_live_objects",
            "memcity_growing_type_growth_objects_per_second",
        ] {
            assert_eq!(counts.get(family), Some(&7), "{family}:\n{text}");
        }
        assert!(text.contains("group=\"(others)\""), "{text}");
        // The heap is every group's sum, the rest included.
        assert_eq!(
            value(&text, "memcity_heap_live_objects{"),
            (100_000 * 100 + 100 * 20_000 * 3) as f64
        );
        // Package 0's types rose 20,000 objects a second each.
        assert_eq!(
            value(
                &text,
                "memcity_growing_type_growth_objects_per_second{type=\"p0.T"
            ),
            20_000.0
        );
        assert_eq!(value(&text, "memcity_walks_refused_total"), 4.0);
        assert_eq!(value(&text, "memcity_stopped_seconds_total"), 2.0);
        assert!(
            text.contains("memcity_agent_info{agent=\"host:7788\",service=\"App\",pid=\"42\""),
            "{text}"
        );
    }

    #[test]
    fn a_growing_type_without_paths_is_a_suspect_without_a_holder() {
        let session = Session {
            packages: 2,
            types: 3,
            rise: 10_000,
            every_ms: 1000,
        };
        let mut feed = fed(&session, 6, 10);
        let text = feed.render(Format::OpenMetrics);
        assert_eq!(value(&text, "memcity_leak_suspects "), 3.0, "{text}");
        assert!(text.contains("memcity_leak_suspect_growth_objects_per_second{suspect=\""));
        assert_eq!(
            value(&text, "memcity_leak_suspect_growth_objects_per_second{"),
            10_000.0
        );
        // Exact counts back the whole steady rise: a suspect without a holder, but confirmed
        // (a rise within the estimates' doubt would not be counted at all).
        assert_eq!(value(&text, "memcity_leak_suspect_confirmed{"), 1.0);
        // The same answer until the next snapshot.
        assert!(Arc::ptr_eq(&text, &feed.render(Format::OpenMetrics)));
    }

    #[test]
    fn the_model_keeps_the_window_and_no_more() {
        let session = Session {
            packages: 1,
            types: 2,
            rise: 10,
            every_ms: 60_000,
        };
        let mut feed = Feed::new(settings(10));
        // 30 minutes of snapshots a minute apart; the window is 10 minutes.
        for message in session.messages(31) {
            feed.apply(&message);
        }
        assert_eq!(feed.model.frames().len(), 11);
        let text = feed.render(Format::OpenMetrics);
        assert_eq!(value(&text, "memcity_window_seconds "), 600.0);
        assert_eq!(value(&text, "memcity_snapshots_total"), 31.0);
    }

    #[test]
    fn many_snapshots_in_the_window_are_thinned_and_the_window_kept() {
        // Ten snapshots a second for 10 minutes, 100 groups: far more than a trend needs.
        let session = Session {
            packages: 1,
            types: 100,
            rise: 10,
            every_ms: 100,
        };
        let mut feed = fed(&session, 6100, 10);
        let frames = feed.model.frames();
        assert!(frames.len() <= MAX_FRAMES + 1, "{}", frames.len());
        assert!(frames.len() >= MAX_FRAMES / 2, "{}", frames.len());
        // The window still spans its 10 minutes, and the rise is still 100 objects a second.
        let text = feed.render(Format::OpenMetrics);
        let span = value(&text, "memcity_window_seconds ");
        assert!((590.0..=600.0).contains(&span), "{span}");
        let rate = value(
            &text,
            "memcity_growing_type_growth_objects_per_second{type=\"p0.T",
        );
        assert!((rate - 100.0).abs() < 1e-6, "{rate}");
    }

    #[test]
    fn wildcard_addresses_are_named_by_the_machine() {
        let name = hostname();
        assert_eq!(
            reachable_url("http://0.0.0.0:8081/"),
            format!("http://{name}:8081/")
        );
        assert_eq!(
            reachable_url("https://[::]:8081/"),
            format!("https://{name}:8081/")
        );
        assert_eq!(
            reachable_url("http://10.1.2.3:8081/"),
            "http://10.1.2.3:8081/"
        );
        assert_eq!(
            agent_address("0.0.0.0:7788".parse().unwrap()),
            format!("{name}:7788")
        );
        assert_eq!(
            agent_address("127.0.0.1:7788".parse().unwrap()),
            "127.0.0.1:7788"
        );
    }

    #[test]
    fn scrapers_that_do_not_ask_for_openmetrics_get_prometheus_text() {
        assert_eq!(
            Format::accepted(Some(
                "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
            )),
            Format::OpenMetrics
        );
        assert_eq!(Format::accepted(Some("text/plain")), Format::Text);
        assert_eq!(Format::accepted(None), Format::Text);
        let session = Session {
            packages: 2,
            types: 3,
            rise: 10_000,
            every_ms: 1000,
        };
        let mut feed = fed(&session, 4, 10);
        let open = feed.render(Format::OpenMetrics);
        let text = feed.render(Format::Text);
        assert!(open.ends_with("# EOF\n") && open.contains("# TYPE memcity_agent info"));
        assert!(
            !text.contains("# EOF") && !text.contains("# UNIT"),
            "{text}"
        );
        assert!(text.contains("memcity_stopped_seconds_total 2"), "{text}");
        // Each format is rendered once per snapshot.
        assert!(Arc::ptr_eq(&text, &feed.render(Format::Text)));
        assert!(Arc::ptr_eq(&open, &feed.render(Format::OpenMetrics)));
    }

    #[test]
    fn signature_ids_are_stable_and_distinct() {
        assert_eq!(signature_id("a"), signature_id("a"));
        assert_ne!(signature_id("a"), signature_id("b"));
        // FNV-1a of the empty string is its offset basis: no hidden seed.
        assert_eq!(signature_id(""), "cbf29ce484222325");
    }
}
