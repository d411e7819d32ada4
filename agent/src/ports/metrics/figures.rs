//! The figures a scrape answers with, taken from the metrics' model (`Feed::figures`), and how
//! each family of them is written: the agent, the heap, the largest groups, the growing types,
//! the leak suspects and memcity's own cost.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Unit;

use super::{Settings, Totals};
use memcity_proto::v1::WalkCost;
use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub(super) struct Group {
    pub(super) name: String,
    pub(super) objects: u64,
    pub(super) bytes: u64,
    pub(super) objects_error: u64,
    pub(super) bytes_error: u64,
}

#[derive(Debug)]
pub(super) struct Growing {
    pub(super) now: Group,
    pub(super) objects_per_second: f64,
    pub(super) bytes_per_second: f64,
}

#[derive(Debug)]
pub(super) struct SuspectFigures {
    pub(super) id: String,
    pub(super) root: String,
    pub(super) holder: String,
    pub(super) objects_per_second: f64,
    pub(super) bytes_per_second: f64,
    pub(super) confirmed: bool,
}

/// One scrape's numbers, encoded by `prometheus-client` (a collector: the families are
/// made at each render from the model, not kept as live metrics).
#[derive(Debug)]
pub(super) struct Figures {
    pub(super) settings: Settings,
    pub(super) pid: u32,
    pub(super) jvm: String,
    pub(super) gc: String,
    /// The first level of the grouping (`Package`), the groups' `level` label.
    pub(super) level: String,
    pub(super) heap: Option<Group>,
    pub(super) estimated: bool,
    pub(super) latest_ms: Option<u64>,
    pub(super) window_s: f64,
    pub(super) groups: Vec<Group>,
    pub(super) growing: Vec<Growing>,
    pub(super) suspects: Vec<SuspectFigures>,
    pub(super) cost: WalkCost,
    pub(super) totals: Totals,
    pub(super) render: Duration,
}

fn objects() -> Unit {
    Unit::Other("objects".into())
}

fn per_second(what: &str) -> Unit {
    Unit::Other(format!("{what}_per_second"))
}

/// One family: a descriptor and its series, each a label set and a value.
fn family<L: prometheus_client::encoding::EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    series: impl IntoIterator<Item = (L, f64)>,
) -> std::fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?;
    for (labels, value) in series {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

fn counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: f64,
) -> std::fmt::Result {
    let counter = ConstCounter::new(value);
    counter.encode(encoder.encode_descriptor(name, help, unit, counter.metric_type())?)
}

fn gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    unit: Option<&Unit>,
    value: f64,
) -> std::fmt::Result {
    ConstGauge::new(value).encode(encoder.encode_descriptor(name, help, unit, MetricType::Gauge)?)
}

impl Collector for Figures {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        self.encode_agent(&mut e)?;
        self.encode_heap(&mut e)?;
        self.encode_groups(&mut e)?;
        self.encode_growing(&mut e)?;
        self.encode_suspects(&mut e)?;
        self.encode_cost(&mut e)
    }
}

impl Figures {
    /// The JVM and agent these figures are of.
    fn encode_agent(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let s = &self.settings;
        let pid = self.pid.to_string();
        let info = [
            ("agent", s.agent.as_str()),
            ("service", s.service.as_str()),
            ("pid", pid.as_str()),
            ("jvm", self.jvm.as_str()),
            ("gc", self.gc.as_str()),
            ("version", env!("CARGO_PKG_VERSION")),
            ("page", s.page.as_deref().unwrap_or("")),
        ];
        let info = prometheus_client::metrics::info::Info::new(info.to_vec());
        info.encode(e.encode_descriptor(
            "agent",
            "The JVM memcity watches; `memcity view` takes the agent label's address.",
            None,
            info.metric_type(),
        )?)?;
        Ok(())
    }

    /// The whole heap, and what the latest snapshot rests on.
    fn encode_heap(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let objects = objects();
        let bytes = Unit::Bytes;
        let seconds = Unit::Seconds;
        if let Some(heap) = &self.heap {
            let area = || [("area", "heap")];
            for (name, help, unit, value) in [
                ("heap_live", "Live objects in the Java heap at the latest snapshot (after a GC).", &objects, heap.objects),
                ("heap_live", "Live bytes in the Java heap at the latest snapshot (after a GC), reachable objects only (the JVM's used-after-GC figure also counts what a young GC left unreachable in the old generation).", &bytes, heap.bytes),
                ("heap_live_error", "The 95 % error of memcity_heap_live_objects when estimated from allocation samples (0 when walked).", &objects, heap.objects_error),
                ("heap_live_error", "The 95 % error of memcity_heap_live_bytes when estimated from allocation samples (0 when walked).", &bytes, heap.bytes_error),
            ] {
                family(e, name, help, Some(unit), [(area(), value as f64)])?;
            }
        }
        gauge(
            e,
            "snapshot_estimated",
            "1 when the latest snapshot was estimated from allocation samples, 0 when the heap was walked.",
            None,
            f64::from(u8::from(self.estimated)),
        )?;
        if let Some(ms) = self.latest_ms {
            gauge(
                e,
                "snapshot_timestamp",
                "When the latest snapshot was taken (Unix time).",
                Some(&seconds),
                ms as f64 / 1000.0,
            )?;
        }
        Ok(())
    }

    /// The first level's largest groups.
    fn encode_groups(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let objects = objects();
        let bytes = Unit::Bytes;
        let level = self.level.as_str();
        let groups = |value: fn(&Group) -> u64| {
            self.groups.iter().map(move |g| {
                (
                    [("level", level), ("group", g.name.as_str())],
                    value(g) as f64,
                )
            })
        };
        family(e, "group_live", "Live objects of the largest first-level groups (packages by default); past metrics_top, the rest as group=\"(others)\".", Some(&objects), groups(|g| g.objects))?;
        family(
            e,
            "group_live",
            "Live bytes of the largest first-level groups.",
            Some(&bytes),
            groups(|g| g.bytes),
        )?;
        family(
            e,
            "group_live_error",
            "The 95 % error of memcity_group_live_objects (0 when walked).",
            Some(&objects),
            groups(|g| g.objects_error),
        )?;
        family(
            e,
            "group_live_error",
            "The 95 % error of memcity_group_live_bytes (0 when walked).",
            Some(&bytes),
            groups(|g| g.bytes_error),
        )?;
        Ok(())
    }

    /// The types that grew most over the window.
    fn encode_growing(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let objects = objects();
        let bytes = Unit::Bytes;
        let growing = |value: fn(&Growing) -> f64| {
            self.growing
                .iter()
                .map(move |g| ([("type", g.now.name.as_str())], value(g)))
        };
        family(
            e,
            "growing_type_live",
            "Live objects of the metrics_top types that grew most over metrics_window.",
            Some(&objects),
            growing(|g| g.now.objects as f64),
        )?;
        family(
            e,
            "growing_type_live",
            "Live bytes of the types that grew most.",
            Some(&bytes),
            growing(|g| g.now.bytes as f64),
        )?;
        family(
            e,
            "growing_type_live_error",
            "The 95 % error of memcity_growing_type_live_objects (0 when walked).",
            Some(&objects),
            growing(|g| g.now.objects_error as f64),
        )?;
        family(
            e,
            "growing_type_live_error",
            "The 95 % error of memcity_growing_type_live_bytes (0 when walked).",
            Some(&bytes),
            growing(|g| g.now.bytes_error as f64),
        )?;
        family(
            e,
            "growing_type_growth",
            "How fast the type's live objects rose over metrics_window (least-squares slope).",
            Some(&per_second("objects")),
            growing(|g| g.objects_per_second),
        )?;
        family(
            e,
            "growing_type_growth",
            "How fast the type's live bytes rose over metrics_window (least-squares slope).",
            Some(&per_second("bytes")),
            growing(|g| g.bytes_per_second),
        )?;
        Ok(())
    }

    /// Leak suspects, as memcity names them.
    fn encode_suspects(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let seconds = Unit::Seconds;
        let s = &self.settings;
        let suspect = |value: fn(&SuspectFigures) -> f64| {
            self.suspects.iter().map(move |x| {
                (
                    [
                        ("suspect", x.id.as_str()),
                        ("root", x.root.as_str()),
                        ("holder", x.holder.as_str()),
                        ("agent", s.agent.as_str()),
                    ],
                    value(x),
                )
            })
        };
        family(e, "leak_suspect_growth", "What the suspect's holder keeps alive of the growth over metrics_window, per second. suspect is a stable id of the leak (its root and holder); agent is the address to open with memcity view.", Some(&per_second("bytes")), suspect(|x| x.bytes_per_second))?;
        family(
            e,
            "leak_suspect_growth",
            "The suspect's growth in objects per second.",
            Some(&per_second("objects")),
            suspect(|x| x.objects_per_second),
        )?;
        family(e, "leak_suspect_confirmed", "1 when the suspect's growth is backed by a walk or an old-generation marking, 0 while it rose only in estimates since.", None, suspect(|x| f64::from(u8::from(x.confirmed))))?;
        gauge(
            e,
            "leak_suspects",
            "Leak suspects memcity names now.",
            None,
            self.suspects.len() as f64,
        )?;
        gauge(
            e,
            "window",
            "The span growth and suspects are fitted over now (up to metrics_window).",
            Some(&seconds),
            self.window_s,
        )?;
        Ok(())
    }

    /// What memcity costs the JVM.
    fn encode_cost(&self, e: &mut DescriptorEncoder) -> std::fmt::Result {
        let bytes = Unit::Bytes;
        let seconds = Unit::Seconds;
        let c = &self.cost;
        let t = &self.totals;
        counter(
            e,
            "stopped",
            "Time the application was stopped for memcity's heap walks.",
            Some(&seconds),
            c.total_pause_ns as f64 / 1e9,
        )?;
        counter(
            e,
            "sampling",
            "Time application threads spent in memcity's allocation-sampling callback.",
            Some(&seconds),
            c.sampling_ns as f64 / 1e9,
        )?;
        counter(
            e,
            "allocation_samples",
            "Allocation samples taken.",
            None,
            c.samples as f64,
        )?;
        counter(
            e,
            "walks_refused",
            "Walks not started because their predicted stop was past max_pause.",
            None,
            t.refused_walks as f64,
        )?;
        counter(
            e,
            "walks_aborted",
            "Walks aborted for running far over budget.",
            None,
            t.aborted_walks as f64,
        )?;
        counter(
            e,
            "gcs_skipped",
            "GCs after which no snapshot was taken (budget, interval or coalescing).",
            None,
            t.skipped_gcs as f64,
        )?;
        counter(
            e,
            "snapshots",
            "Snapshots these metrics have seen.",
            None,
            t.snapshots as f64,
        )?;
        counter(
            e,
            "snapshots_dropped",
            "Snapshots lost to slow readers of the agent's stream: viewers, and these metrics (whose walk and GC counters then miss that snapshot's).",
            None,
            c.dropped_snapshots as f64,
        )?;
        gauge(
            e,
            "sampling_interval",
            "The allocation sampling interval in force.",
            Some(&bytes),
            c.sampling_interval as f64,
        )?;
        gauge(
            e,
            "tracked_samples",
            "Allocation samples tracked now.",
            None,
            c.tracked_samples as f64,
        )?;
        family(
            e,
            "tracking",
            "Memory the tracking of samples takes, in the agent and in the JVM.",
            Some(&bytes),
            [
                ([("in", "agent")], c.tracking_agent_bytes as f64),
                ([("in", "jvm")], c.tracking_jvm_bytes as f64),
            ],
        )?;
        gauge(
            e,
            "metrics_render",
            "What rendering the previous answer to a scrape took (on memcity's server thread).",
            Some(&seconds),
            self.render.as_secs_f64(),
        )?;
        Ok(())
    }
}
