//! Leak suspects: from a growing group to the GC root that holds it, window-free.
//!
//! 1. **Trend.** A type grows when its live objects rise steadily over the window (after the
//!    warm-up, see `CityModel::warm_start`): the least-squares slope times the window's span, and
//!    how well a line fits (R²), in the spirit of JMC's live-set rule; first against last alone
//!    would call any start-up ramp a leak.
//! 2. **Climb.** From a growing type, follow the incoming field edge that gained the most
//!    references between the window's first and last walk. While its source type grows too, it
//!    leaks too: climb on. The first source that stays flat is the **holder** (the accumulation
//!    point of Eclipse MAT's leak suspects) and that edge the **suspect reference**. A self-edge
//!    (`LinkedList$Node.next`) is a chain: the climb enters it from the edge that leads into it.
//! 3. **Fold.** Collection internals (`HashMap$Node[]`, an `ArrayList`'s `Object[]`,
//!    `ThreadLocalMap$Entry`) are not where a fix goes: a holder that is one climbs to the
//!    collection that owns it, and the internals become its *content*.
//! 4. **Root.** Per-type edges mix the one growing map with every map of its type, so the root
//!    comes from what each root owns near it (`OwnedEdge`): the root whose objects reach the
//!    holder and whose content is largest (the longest table, the largest fan-out). The search
//!    prefers static fields, then threads, then locals (the order of JFR's and LeakCanary's paths
//!    to GC roots, chosen for readable chains). Without such evidence the class-level edges give
//!    a candidate, marked ambiguous.

use std::collections::{HashMap, HashSet};

use memcity_proto::v1::root::Kind as RootKind;

use crate::model::{CityModel, FieldRef, Graph, Metric, ROOT};

/// How a type's live objects moved over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub first: u64,
    pub last: u64,
    /// The fitted line's rise over the window (objects).
    pub growth: f64,
    /// How well a line fits, 0..1 (1 for a straight rise).
    pub fit: f64,
}

impl Trend {
    /// Least squares over `(seconds, objects)` points.
    pub fn fit(points: &[(f64, f64)]) -> Option<Trend> {
        if points.len() < 2 {
            return None;
        }
        let n = points.len() as f64;
        let (mx, my) = points
            .iter()
            .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
        let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
        for &(x, y) in points {
            sxy += (x - mx) * (y - my);
            sxx += (x - mx) * (x - mx);
            syy += (y - my) * (y - my);
        }
        if sxx <= 0.0 {
            return None;
        }
        let slope = sxy / sxx;
        let fit = if syy > 0.0 {
            (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let span = points.last().unwrap().0 - points[0].0;
        Some(Trend {
            first: points[0].1.max(0.0) as u64,
            last: points.last().unwrap().1.max(0.0) as u64,
            growth: slope * span,
            fit,
        })
    }

    /// A steady rise worth naming: a line fits well and it rose by at least `floor` objects.
    pub fn is_leak(&self, floor: f64) -> bool {
        self.growth >= floor && self.fit >= MIN_FIT && self.last > self.first
    }
}

/// How well a line must fit a type's objects over time to call it a steady rise.
pub const MIN_FIT: f64 = 0.6;
/// The least growth named a leak: this share of the heap's objects (and at least 100 objects).
pub const MIN_GROWTH_SHARE: f64 = 0.002;
/// A source type grows along with an edge when its objects rose by this share of the edge's
/// new references (a `Node[]` table stays one object while its nodes multiply).
const GROWS_WITH: f64 = 0.2;
/// Suspects named at most.
const MAX_SUSPECTS: usize = 5;

/// The nodes of each type (one per package path it appears under).
fn type_nodes(model: &CityModel) -> HashMap<&str, Vec<u32>> {
    let mut types: HashMap<&str, Vec<u32>> = HashMap::new();
    for (id, node) in model.nodes().iter().enumerate() {
        if node.role == "Type" {
            types.entry(node.name.as_str()).or_default().push(id as u32);
        }
    }
    types
}

/// The trend of every type in the window, strongest growth first.
pub fn type_trends(model: &CityModel) -> Vec<(String, Trend)> {
    trends_of(model, &type_nodes(model))
}

/// `type_trends` for the nodes of each type, `types`.
fn trends_of(model: &CityModel, types: &HashMap<&str, Vec<u32>>) -> Vec<(String, Trend)> {
    let w = model.window();
    let frames = model.frames();
    if frames.is_empty() {
        return Vec::new();
    }
    let t0 = frames[w.start].time_ms as f64;
    let mut out: Vec<(String, Trend)> = types
        .iter()
        .filter_map(|(&name, ids)| {
            let points: Vec<(f64, f64)> = (w.start..=w.end)
                .map(|i| {
                    // Saturating: a damaged file's counts must not overflow.
                    let objects: u64 = ids.iter().fold(0u64, |sum, &id| {
                        sum.saturating_add(model.value(id, i, Metric::Objects))
                    });
                    ((frames[i].time_ms as f64 - t0) / 1000.0, objects as f64)
                })
                .collect();
            Trend::fit(&points).map(|t| (name.to_string(), t))
        })
        .collect();
    out.sort_by(|a, b| b.1.growth.total_cmp(&a.1.growth).then(a.0.cmp(&b.0)));
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Confidence {
    /// The root's own objects hold the largest growing container of the holder's type, far
    /// ahead of any other root's.
    Exact,
    /// The root is the only (or the preferred) one whose objects reach the holder's type.
    Likely,
    /// Only per-type edges point at it: another object of the same type may be the one.
    #[default]
    Ambiguous,
}

impl Confidence {
    pub fn label(self) -> &'static str {
        match self {
            Confidence::Exact => "exact",
            Confidence::Likely => "likely",
            Confidence::Ambiguous => "ambiguous",
        }
    }
}

/// One step of a leak trace, from the root down.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub type_name: String,
    /// The field of the step above that references this one (`[]` for elements); for the first
    /// step, empty (the root references it).
    pub field: String,
    /// Live objects of the type at the window's end, and their growth over it.
    pub objects: u64,
    pub growth: i64,
    /// A collection's internals (folded into the collection above in a short trace).
    pub content: bool,
    /// This step is reached through the suspect reference.
    pub suspect: bool,
    /// The largest array length or fan-out seen through `field` (0 when unknown).
    pub size: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Suspect {
    pub root_kind: String,
    /// `static CacheKeyLeak.CACHE`, `thread "worker"`, `local in ... of thread "main"`; empty
    /// when no root was found.
    pub root: String,
    pub steps: Vec<Step>,
    /// The accumulation point: the collection (or object) whose content grows.
    pub holder: String,
    /// `Holder.field -> Type`: where the growth enters.
    pub suspect_reference: String,
    /// The growing types this trace explains, the strongest first.
    pub leaking: Vec<String>,
    /// Objects gained by the first of `leaking` over the window (the fitted rise).
    pub growth: i64,
    /// Of that, what the numbers back: at the window's end or at the last walk, whichever backs
    /// more (`CityModel::significant_growth`: less the estimate's error and what may be garbage
    /// no old-generation marking has met).
    pub backed_growth: i64,
    /// Whether `backed_growth` is a leak's worth. An unconfirmed suspect rose in the estimates
    /// since the last walk and old marking only: objects promoted to the old generation and
    /// dead there rise the same way until a marking frees them. It is named, after the
    /// confirmed ones, and says so.
    pub confirmed: bool,
    pub confidence: Confidence,
    /// Other threads that hold a container of the holder's type as the same kind of
    /// thread-local value, with content of the root's order: a pool's threads each hold one of
    /// the growing lists (empty otherwise).
    pub co_holders: Vec<String>,
    /// Stable across snapshots and runs: root, holder, and the suspect reference (which names
    /// the leaking type it leads to). With co-holders the root is named by its thread family
    /// (`thread "pool-#-thread-#"`), since which of them holds most varies.
    pub signature: String,
    /// The walk the trace comes from, and how much older it is than the window's end.
    pub walk_seq: u64,
    pub walk_age_ms: u64,
    /// Where the first of `leaking` is allocated, most live objects first (with a `site` level
    /// in the grouping; estimated from allocation samples).
    pub sites: Vec<(String, u64)>,
    /// What the holder rests on: object-level paths (`None`: per-type edges only, from a
    /// recording without paths, which never names a holder with more than *ambiguous*).
    pub evidence: Option<Evidence>,
}

/// The object-level evidence behind a suspect (see `holders.rs`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Evidence {
    /// Sampled objects of the leaking type the paths reached, and how many of them pass
    /// through the holder.
    pub samples: u64,
    pub through_holder: u64,
    /// Share of the type's sampled weight through the holder (co-holders included).
    pub share: f64,
    /// How the paths split over roots ("83 % through ..., 17 % through ..."), empty when one
    /// root holds them all.
    pub split: String,
    /// When the search that found the paths finished (ms since the session's start), and how
    /// much older that is than the window's end.
    pub witnessed_ms: u64,
    pub age_ms: u64,
    /// Growth of the leaking type since the paths were found; when it is more than the type
    /// had then, the holder is not known to hold the new objects (`stale`).
    pub growth_since: i64,
    pub stale: bool,
    /// Objects of the leaking types the search counted one by one, and those it reached from
    /// the holder's root (and co-holders): counts, not samples.
    pub counted: u64,
    pub counted_through: u64,
    /// Identity hash of the holder instance (tells two instances of one type apart).
    pub holder_identity: u32,
    /// The holder's field in the object above it, `Type.field`, or the root for a root's
    /// object: "the `ConcurrentHashMap` in `DefaultSessionCache._sessions`".
    pub holder_in: String,
}

/// What a thread's `ThreadLocalMap` holds each thread-local's value in.
const THREAD_LOCAL_ENTRY: &str = "java.lang.ThreadLocal$ThreadLocalMap$Entry";

/// The root `Climb::root_of` names for a holder.
#[derive(Debug, Default)]
struct RootChoice {
    name: String,
    kind: String,
    /// The steps from the root down to the holder (top-down, holder excluded), and the field
    /// through which the last of them references the holder.
    above: Vec<Step>,
    field_into: String,
    confidence: Confidence,
    /// See `Suspect::co_holders`.
    co_holders: Vec<String>,
}

/// The level at which `root` holds a `holder` as a thread-local value, if it does.
fn thread_local_level(g: &Graph, root: usize, holder: &str) -> Option<u32> {
    g.owned
        .iter()
        .find(|o| o.root == root && o.to == holder && o.from == THREAD_LOCAL_ENTRY)
        .map(|o| o.level)
}

/// " and N more threads" after a root that a pool's threads share (`Suspect::co_holders`),
/// else nothing.
pub fn more_threads(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => " and 1 more thread".into(),
        n => format!(" and {n} more threads"),
    }
}

/// A thread root's name with its numbers as `#`: the threads of one pool share it.
pub fn thread_family(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_number = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_number {
                out.push('#');
            }
            in_number = true;
        } else {
            out.push(c);
            in_number = false;
        }
    }
    out
}

/// Whether a type is a collection's internals rather than a place a fix goes.
pub fn is_internal(type_name: &str) -> bool {
    let base = type_name.trim_end_matches("[]");
    (base.starts_with("java.util.") || base.starts_with("java.lang.ThreadLocal$"))
        && base.contains('$')
}

/// Walks (snapshots with a reference graph) in the window: suspects are traced from them.
pub fn walks_in_window(model: &CityModel) -> usize {
    let w = model.window();
    model.frames().get(w.start..=w.end).map_or(0, |frames| {
        frames.iter().filter(|f| f.graph.is_some()).count()
    })
}

/// The leak suspects of the window, most growth first (empty when nothing grows steadily or no
/// walk has a graph).
pub fn suspects(model: &CityModel) -> Vec<Suspect> {
    let w = model.window();
    let frames = model.frames();
    if frames.is_empty() {
        return Vec::new();
    }
    if let Some((at, paths)) = model.paths_at(w.end) {
        return suspects_from_paths(model, at, paths);
    }
    let Some(last) = (w.start..=w.end).rev().find(|&i| frames[i].graph.is_some()) else {
        return Vec::new();
    };
    let first = (w.start..last).find(|&i| frames[i].graph.is_some());
    let g1 = frames[last].graph.as_deref().unwrap();
    let g0 = first.and_then(|i| frames[i].graph.as_deref());
    let types = type_nodes(model);
    let trends: HashMap<String, Trend> = trends_of(model, &types).into_iter().collect();
    let heap = model.value(ROOT, w.end, Metric::Objects) as f64;
    let floor = (heap * MIN_GROWTH_SHARE).max(100.0);
    let backed = |name: &str, index: usize| -> f64 {
        types.get(name).map_or(0.0, |ids| {
            ids.iter()
                .map(|&id| model.significant_growth(id, index, Metric::Objects) as f64)
                .sum()
        })
    };
    let mut growers: Vec<(&String, &Trend)> =
        trends.iter().filter(|(_, t)| t.is_leak(floor)).collect();
    growers.sort_by(|a, b| b.1.growth.total_cmp(&a.1.growth).then(a.0.cmp(b.0)));
    let graph = Climb::new(g0, g1, &trends);
    let mut out: Vec<Suspect> = Vec::new();
    for (name, trend) in growers.into_iter().take(MAX_SUSPECTS * 4) {
        let Some(mut suspect) = graph.trace(name) else {
            continue;
        };
        if let Some(known) = out.iter_mut().find(|s| s.signature == suspect.signature) {
            known.leaking.push(name.clone());
            continue;
        }
        // Types that a trace already passes through are explained by it.
        if let Some(known) = out
            .iter_mut()
            .find(|s| s.steps.iter().any(|step| &step.type_name == name))
        {
            known.leaking.push(name.clone());
            continue;
        }
        suspect.growth = trend.growth.round() as i64;
        let backed = backed(name, w.end).max(backed(name, last));
        suspect.backed_growth = backed.round() as i64;
        suspect.confirmed = backed >= floor;
        suspect.sites = top_sites(model, name, w.end, 3);
        suspect.walk_seq = frames[last].seq;
        suspect.walk_age_ms = frames[w.end].time_ms.saturating_sub(frames[last].time_ms);
        // Per-type edges join every instance of a type: another object of the holder's type
        // may be the one, so they never name a holder with more than this.
        suspect.confidence = Confidence::Ambiguous;
        out.push(suspect);
        if out.len() == MAX_SUSPECTS {
            break;
        }
    }
    // Confirmed first; each part keeps its order by growth.
    out.sort_by_key(|s| !s.confirmed);
    out
}

/// The growing types of the window, strongest first, with their trends and the leak floor.
fn growers(model: &CityModel, types: &HashMap<&str, Vec<u32>>) -> (Vec<(String, Trend)>, f64) {
    let w = model.window();
    let heap = model.value(ROOT, w.end, Metric::Objects) as f64;
    let floor = (heap * MIN_GROWTH_SHARE).max(100.0);
    let mut growers: Vec<(String, Trend)> = trends_of(model, types)
        .into_iter()
        .filter(|(_, t)| t.is_leak(floor))
        .collect();
    growers.sort_by(|a, b| b.1.growth.total_cmp(&a.1.growth).then(a.0.cmp(&b.0)));
    (growers, floor)
}

/// Objects of `type_name` at snapshot `index`.
fn objects_at(model: &CityModel, ids: Option<&Vec<u32>>, index: usize) -> u64 {
    ids.map_or(0, |ids| {
        ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.value(id, index, Metric::Objects))
        })
    })
}

/// Suspects named from object-level paths (`holders.rs`): the paths carried by snapshot `at`.
fn suspects_from_paths(
    model: &CityModel,
    at: usize,
    paths: &crate::holders::Paths,
) -> Vec<Suspect> {
    let w = model.window();
    let frames = model.frames();
    let types = type_nodes(model);
    let (growers, floor) = growers(model, &types);
    let trends: HashMap<&str, &Trend> = growers.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let all_trends: HashMap<String, Trend> = trends_of(model, &types).into_iter().collect();
    let end_ms = frames[w.end].time_ms;
    let backed = |name: &str, index: usize| -> f64 {
        types.get(name).map_or(0.0, |ids| {
            ids.iter()
                .map(|&id| model.significant_growth(id, index, Metric::Objects) as f64)
                .sum()
        })
    };
    let step_of = |node: &crate::holders::PathNode, content: bool, suspect: bool| Step {
        type_name: node.type_name.clone(),
        field: node.field.clone(),
        objects: all_trends.get(&node.type_name).map_or(0, |t| t.last),
        growth: all_trends
            .get(&node.type_name)
            .map_or(0, |t| crate::units::growth(t.first, t.last)),
        content,
        suspect,
        size: node.length.max(if node.chain > 1 { node.chain } else { 0 }),
    };
    let names: Vec<&str> = growers
        .iter()
        .take(MAX_SUSPECTS * 4)
        .map(|(n, _)| n.as_str())
        .collect();
    let since = |name: &str| -> (i64, u64) {
        let then = objects_at(model, types.get(name), at);
        let now = objects_at(model, types.get(name), w.end);
        (now as i64 - then as i64, then)
    };
    // The growth's own objects: samples taken in the window's second half (a steady rise
    // has them, a one-off jump at its start does not), where each type has enough of them.
    let mut paths = paths.clone();
    let start_ms = frames[w.start].time_ms;
    let mid_ms = start_ms + end_ms.saturating_sub(start_ms) / 2;
    paths.weigh_growth_from(
        &names,
        start_ms.div_ceil(1000) as u32,
        (mid_ms / 1000) as u32,
    );
    let paths = &paths;
    let mut out: Vec<Suspect> = Vec::new();
    let mut explained: HashSet<String> = HashSet::new();
    for h in paths.leaks(&names) {
        let name = h.types[0].as_str();
        explained.extend(h.types.iter().cloned());
        let trend = trends[name];
        let backed_growth = backed(name, w.end);
        let (growth_since, then) = since(name);
        let holder = &paths.nodes[h.holder];
        let top = &paths.nodes[h.chain[0]];
        let (root, root_kind) = top
            .root
            .as_ref()
            .map_or((String::new(), String::new()), |r| {
                (r.name.clone(), kind_label(r.kind).to_string())
            });
        let content = |node: &crate::holders::PathNode,
                       parent: Option<&crate::holders::PathNode>| {
            is_internal(&node.type_name)
                || (node.type_name.ends_with("[]")
                    && parent.is_some_and(|p| p.type_name.starts_with("java.util.")))
        };
        let mut steps: Vec<Step> = h
            .chain
            .iter()
            .map(|&n| step_of(&paths.nodes[n], false, false))
            .collect();
        if let Some(first) = steps.first_mut() {
            first.field.clear();
        }
        for (i, &n) in h.below.iter().enumerate() {
            let node = &paths.nodes[n];
            let parent = node.parent.map(|p| &paths.nodes[p]);
            steps.push(step_of(node, content(node, parent), i == 0));
        }
        let suspect_reference = h.below.first().map_or(String::new(), |&n| {
            let node = &paths.nodes[n];
            format!("{}.{} -> {}", holder.type_name, node.field, node.type_name)
        });
        let holder_in = match holder.parent {
            Some(p) => format!("{}.{}", paths.nodes[p].type_name, holder.field),
            None => root.clone(),
        };
        let signed_root = if h.co_holders.is_empty() {
            root.clone()
        } else {
            thread_family(&root)
        };
        // What names the leak and stays the same across runs: the root, the holder's type and
        // where it sits (not which of its insides a run's samples happened to pass).
        let signature = format!("{signed_root} | {} | {holder_in}", holder.type_name);
        // Stale: more of the type appeared since the paths were found than existed then, so
        // the holder is not known to hold the new objects.
        let stale = growth_since > (then as i64).max(floor as i64);
        let mut confidence = h.confidence;
        if stale && confidence == Confidence::Exact {
            confidence = Confidence::Likely;
        }
        let split = if h.alternatives.is_empty() {
            String::new()
        } else {
            crate::holders::describe_split(&root, h.share, &h.alternatives)
        };
        out.push(Suspect {
            root_kind,
            root,
            steps,
            holder: holder.type_name.clone(),
            suspect_reference,
            leaking: h.types.clone(),
            growth: trend.growth.round() as i64,
            backed_growth: backed_growth.round() as i64,
            confirmed: backed_growth >= floor && !stale,
            confidence,
            co_holders: h.co_holders.clone(),
            signature,
            walk_seq: frames[at].seq,
            walk_age_ms: end_ms.saturating_sub(paths.finished_ms),
            sites: top_sites(model, name, w.end, 3),
            evidence: Some(Evidence {
                samples: h.samples,
                through_holder: h.holder_samples,
                share: h.share,
                split,
                witnessed_ms: paths.finished_ms,
                age_ms: end_ms.saturating_sub(paths.finished_ms),
                growth_since,
                stale,
                counted: h.counted,
                counted_through: h.counted_through,
                holder_identity: holder.identity,
                holder_in,
            }),
        });
    }
    // Growing types no sampled path reached: a trace that passes through one explains it
    // (a leak's strings may be sampled too rarely to weigh); else say so, not guess.
    for &name in &names {
        if explained.contains(name) {
            continue;
        }
        if let Some(known) = out
            .iter_mut()
            .find(|s| !s.holder.is_empty() && s.steps.iter().any(|step| step.type_name == name))
        {
            known.leaking.push(name.to_string());
            continue;
        }
        if out.len() >= MAX_SUSPECTS {
            continue;
        }
        let (growth_since, _) = since(name);
        out.push(Suspect {
            root_kind: String::new(),
            root: String::new(),
            steps: Vec::new(),
            holder: String::new(),
            suspect_reference: String::new(),
            leaking: vec![name.to_string()],
            growth: trends[name].growth.round() as i64,
            backed_growth: backed(name, w.end).round() as i64,
            confirmed: false,
            confidence: Confidence::Ambiguous,
            co_holders: Vec::new(),
            signature: format!("(not seen) | {name}"),
            walk_seq: frames[at].seq,
            walk_age_ms: end_ms.saturating_sub(paths.finished_ms),
            sites: top_sites(model, name, w.end, 3),
            evidence: Some(Evidence {
                witnessed_ms: paths.finished_ms,
                age_ms: end_ms.saturating_sub(paths.finished_ms),
                growth_since,
                stale: true,
                ..Default::default()
            }),
        });
    }
    out.truncate(MAX_SUSPECTS);
    // Named holders first, then the confirmed; each part keeps its order by growth.
    out.sort_by_key(|s| (s.holder.is_empty(), !s.confirmed));
    out
}

struct Climb<'a> {
    g1: &'a Graph,
    trends: &'a HashMap<String, Trend>,
    /// References per `(from, field, to)` at the first walk.
    before: HashMap<(&'a str, &'a str, &'a str), u64>,
    has_before: bool,
    incoming: HashMap<&'a str, Vec<&'a FieldRef>>,
}

impl<'a> Climb<'a> {
    fn new(g0: Option<&'a Graph>, g1: &'a Graph, trends: &'a HashMap<String, Trend>) -> Self {
        let before = g0
            .map(|g| {
                g.fields
                    .iter()
                    .map(|f| {
                        (
                            (f.from.as_str(), f.field.as_str(), f.to.as_str()),
                            f.references,
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut incoming: HashMap<&str, Vec<&FieldRef>> = HashMap::new();
        for f in &g1.fields {
            if !f.is_static {
                incoming.entry(f.to.as_str()).or_default().push(f);
            }
        }
        Climb {
            g1,
            trends,
            before,
            has_before: g0.is_some(),
            incoming,
        }
    }

    /// References an edge gained between the walks (all of them when there is one walk).
    fn gained(&self, f: &FieldRef) -> i64 {
        let before = if self.has_before {
            self.before
                .get(&(f.from.as_str(), f.field.as_str(), f.to.as_str()))
                .copied()
                .unwrap_or(0)
        } else {
            0
        };
        crate::units::growth(before, f.references)
    }

    fn growth(&self, type_name: &str) -> i64 {
        self.trends
            .get(type_name)
            .map_or(0, |t| crate::units::growth(t.first, t.last))
    }

    fn objects(&self, type_name: &str) -> u64 {
        self.trends.get(type_name).map_or(0, |t| t.last)
    }

    fn step(&self, type_name: &str, field: &str, size: u64) -> Step {
        Step {
            type_name: type_name.to_string(),
            field: field.to_string(),
            objects: self.objects(type_name),
            growth: self.growth(type_name),
            content: false,
            suspect: false,
            size,
        }
    }

    /// The edge into `to` that explains its growth: the one that gained most, from a type not on
    /// the trace yet (a self-edge such as `LinkedList$Node.next` is a chain, entered from
    /// elsewhere; an edge back into the trace is a cycle).
    fn best_into(&self, to: &str, seen: &HashSet<&str>) -> Option<&'a FieldRef> {
        self.incoming
            .get(to)?
            .iter()
            .filter(|f| f.from != to && !seen.contains(f.from.as_str()))
            .max_by_key(|f| {
                // Ties go to the first name (`first` before `last`), so traces are stable.
                (
                    self.gained(f),
                    f.references,
                    std::cmp::Reverse((f.from.clone(), f.field.clone())),
                )
            })
            .copied()
    }

    /// The edge from the collection that owns `internal` (a table, a node): the one through
    /// which the largest array or fan-out is held, since the growing collection is the big one
    /// among all of its type.
    fn container_of(&self, internal: &str) -> Option<&'a FieldRef> {
        self.incoming
            .get(internal)?
            .iter()
            .filter(|f| f.from != internal)
            .max_by_key(|f| {
                (
                    f.max_length.max(f.max_fanout),
                    self.gained(f),
                    f.references,
                    std::cmp::Reverse((f.from.clone(), f.field.clone())),
                )
            })
            .copied()
    }

    fn trace(&self, leaking: &str) -> Option<Suspect> {
        // Bottom-up: the leaking type first.
        let mut up: Vec<Step> = vec![self.step(leaking, "", 0)];
        let mut seen: HashSet<&str> = HashSet::from([leaking]);
        let mut current: &str = leaking;
        let mut suspect_edge: Option<&FieldRef> = None;
        for _ in 0..32 {
            let Some(edge) = self.best_into(current, &seen) else {
                break;
            };
            up.last_mut().unwrap().field = edge.field.clone();
            up.last_mut().unwrap().size = edge.max_length.max(edge.max_fanout);
            let source_growth = self.growth(&edge.from) as f64;
            let grows =
                source_growth > 0.0 && source_growth >= GROWS_WITH * self.gained(edge) as f64;
            up.push(self.step(&edge.from, "", 0));
            seen.insert(edge.from.as_str());
            current = edge.from.as_str();
            if !grows {
                suspect_edge = Some(edge);
                break;
            }
        }
        let suspect_edge = suspect_edge?;
        // The step reached through the suspect reference is the one below the holder.
        let below = up.len() - 2;
        up[below].suspect = true;
        // Fold: a holder that is a collection's internals climbs to its collection (an
        // `Object[]` is one when a `java.util` collection holds it, as `ArrayList.elementData`).
        while let Some(edge) = self.container_of(current) {
            let internal = is_internal(current)
                || (current == "java.lang.Object[]" && edge.from.starts_with("java.util."));
            if !internal {
                break;
            }
            if seen.contains(edge.from.as_str()) {
                break;
            }
            let top = up.last_mut().unwrap();
            top.content = true;
            top.field = edge.field.clone();
            top.size = edge.max_length.max(edge.max_fanout);
            up.push(self.step(&edge.from, "", 0));
            seen.insert(edge.from.as_str());
            current = edge.from.as_str();
        }
        // Types between the holder and the suspect reference that are internals are content.
        let holder_at = up.len() - 1;
        for step in up.iter_mut().take(holder_at).skip(below + 1) {
            step.content = true;
        }
        let holder = current.to_string();
        let RootChoice {
            name: root,
            kind: root_kind,
            above,
            field_into,
            confidence,
            co_holders,
        } = self.root_of(&holder, &up);
        up.last_mut().unwrap().field = field_into;
        let mut steps: Vec<Step> = above;
        steps.extend(up.into_iter().rev());
        let suspect_reference = format!(
            "{}.{} -> {}",
            suspect_edge.from, suspect_edge.field, suspect_edge.to
        );
        // The leaking type of the signature is the one the suspect reference leads to: which
        // grower a trace starts from varies between runs (`String` or `byte[]` may grow most),
        // where the growth enters does not.
        let signed_root = if co_holders.is_empty() {
            root.clone()
        } else {
            thread_family(&root)
        };
        let signature = format!("{signed_root} | {holder} | {suspect_reference}");
        Some(Suspect {
            root_kind,
            root,
            steps,
            holder,
            suspect_reference,
            leaking: vec![leaking.to_string()],
            growth: 0,
            backed_growth: 0,
            confirmed: false,
            confidence,
            co_holders,
            signature,
            walk_seq: 0,
            walk_age_ms: 0,
            sites: Vec::new(),
            evidence: None,
        })
    }

    /// The root holding `holder`, the steps from it down to (not including) the holder, and how
    /// sure that is. `below`: the trace below the holder (bottom-up), whose types tell which
    /// of a root's containers is the growing one.
    fn root_of(&self, holder: &str, below: &[Step]) -> RootChoice {
        let g = self.g1;
        // The holder's own containers are the evidence: its internals folded into the trace
        // as content (the list's `Object[]`, the map's table). The leaking types below are not:
        // their fields (a `String`'s `byte[]`) say nothing of the collection's size, and any
        // frame holding a string would bring evidence.
        let content: HashSet<&str> = below
            .iter()
            .filter(|s| s.content)
            .map(|s| s.type_name.as_str())
            .collect();
        // Per root: the deepest level at which it owns a holder, and how large the containers
        // it owns below that are.
        let mut candidates: HashMap<usize, (u32, u64)> = HashMap::new();
        for o in &g.owned {
            if o.to == holder {
                let c = candidates.entry(o.root).or_insert((o.level, 0));
                c.0 = c.0.min(o.level);
            }
        }
        for o in &g.owned {
            if let Some(c) = candidates.get_mut(&o.root) {
                if o.level > c.0 && (o.from == holder || content.contains(o.from.as_str())) {
                    c.1 = c.1.max(o.max_length).max(o.max_fanout);
                }
            }
        }
        let rank = |root: usize| -> u8 {
            let r = &g.roots[root];
            let app = !is_jdk_root(&r.name);
            match r.kind {
                RootKind::StaticField if app => 0,
                RootKind::Thread => 1,
                RootKind::StackLocal if !is_jdk_frame(&r.name) => 2,
                RootKind::StaticField => 3,
                RootKind::StackLocal | RootKind::JniLocal => 4,
                _ => 5,
            }
        };
        // One reference is no evidence of size: only containers count.
        let mut ranked: Vec<(usize, (u32, u64))> = candidates
            .into_iter()
            .map(|(root, (level, size))| (root, (level, if size > 1 { size } else { 0 })))
            .collect();
        ranked.sort_by_key(|&(root, (level, size))| {
            (
                std::cmp::Reverse(size),
                rank(root),
                level,
                g.roots[root].name.clone(),
            )
        });
        if let Some(&(mut root, (mut level, size))) = ranked.first() {
            let runner_up = ranked.get(1).map_or(0, |r| r.1 .1);
            let mut confidence = if size > 0 && size >= 2 * runner_up.max(1) {
                Confidence::Exact
            } else if ranked.len() == 1 || rank(root) < ranked.get(1).map_or(u8::MAX, |r| rank(r.0))
            {
                Confidence::Likely
            } else {
                Confidence::Ambiguous
            };
            // An object is owned by the first root the walk comes from, and the walk visits
            // what thread stacks hold before class mirrors and their statics: a method working
            // on a static map takes it from its field. When a frame won and an application
            // static holds the holder's type directly, the static is the root to fix (the frame
            // only borrows it), though the evidence is the frame's.
            if matches!(
                g.roots[root].kind,
                RootKind::StackLocal | RootKind::JniLocal
            ) {
                if let Some(&(r, (l, _))) =
                    ranked.iter().find(|(r, (l, _))| *l == 0 && rank(*r) == 0)
                {
                    root = r;
                    level = l;
                    confidence = confidence.max(Confidence::Likely);
                }
            }
            // A JDK method working on the holder (`HashMap.computeIfAbsent`'s `this`) owns it
            // when the walk came while the application was inside that call, and its evidence
            // (the table it owns) is then the largest. The application's frame below it on the
            // same thread holds the holder for longer, and is where a fix goes.
            if g.roots[root].kind == RootKind::StackLocal && is_jdk_frame(&g.roots[root].name) {
                let thread = &g.roots[root].thread;
                if let Some(&(r, (l, _))) = ranked
                    .iter()
                    .find(|(r, _)| rank(*r) == 2 && g.roots[*r].thread == *thread)
                {
                    root = r;
                    level = l;
                    confidence = confidence.max(Confidence::Likely);
                }
            }
            // A frame's local owns what it references before the walk follows anything (roots
            // are reported first), so a method working on its thread-local list takes the list
            // from the thread. When the frame's thread holds the holder's type as a
            // thread-local value and shows nothing inside it (the frame took it), the thread
            // holds it for longer, and the thread-local is where a fix goes.
            if matches!(
                g.roots[root].kind,
                RootKind::StackLocal | RootKind::JniLocal
            ) {
                let thread = &g.roots[root].thread;
                let held_as_thread_local = ranked
                    .iter()
                    .filter(|(r, (_, size))| {
                        let candidate = &g.roots[*r];
                        candidate.kind == RootKind::Thread
                            && !thread.is_empty()
                            && candidate.thread == *thread
                            && *size == 0
                    })
                    .find_map(|&(r, _)| thread_local_level(g, r, holder).map(|l| (r, l)));
                if let Some((r, l)) = held_as_thread_local {
                    root = r;
                    level = l;
                    confidence = Confidence::Likely;
                }
            }
            // A pool's threads each hold one of the growing containers, as the same
            // thread-local: name the one with the most, say how many more, and do not count
            // them as rivals.
            // The evidence to match: the first-ranked root's (the frame's, when one took the
            // list from its thread).
            let reference = size;
            let co: Vec<usize> = if g.roots[root].kind == RootKind::Thread
                && thread_local_level(g, root, holder).is_some()
            {
                ranked
                    .iter()
                    .filter(|&&(r, (_, s))| {
                        r != root
                            && g.roots[r].kind == RootKind::Thread
                            && s > 0
                            && s * 4 >= reference
                            && thread_local_level(g, r, holder).is_some()
                    })
                    .map(|&(r, _)| r)
                    .collect()
            } else {
                Vec::new()
            };
            if !co.is_empty() && confidence == Confidence::Ambiguous {
                let rival = ranked
                    .iter()
                    .filter(|(r, _)| *r != root && !co.contains(r))
                    .map(|(_, (_, s))| *s)
                    .max()
                    .unwrap_or(0);
                if reference >= 2 * rival.max(1) {
                    confidence = Confidence::Exact;
                }
            }
            let (above, field_into) = self.owned_path(root, level, holder);
            let r = &g.roots[root];
            return RootChoice {
                name: r.name.clone(),
                kind: kind_label(r.kind).into(),
                above,
                field_into,
                confidence,
                co_holders: co.iter().map(|&r| g.roots[r].name.clone()).collect(),
            };
        }
        // No root owns one: the static fields pointing at the holder's type, the application's
        // first.
        let mut statics: Vec<&FieldRef> = g
            .fields
            .iter()
            .filter(|f| f.is_static && f.to == holder)
            .collect();
        statics.sort_by_key(|f| (is_jdk_root(&f.from), f.from.clone(), f.field.clone()));
        let mut choice = RootChoice::default();
        if let Some(f) = statics.first() {
            choice.name = format!("static {}.{}", f.from, f.field);
            choice.kind = kind_label(RootKind::StaticField).into();
        }
        choice
    }

    /// The steps from a root's object down to the holder it owns at `level` (top-down, holder
    /// excluded), and the field through which the last of them references the holder.
    fn owned_path(&self, root: usize, level: u32, holder: &str) -> (Vec<Step>, String) {
        let mut steps: Vec<Step> = Vec::new();
        let mut to = holder.to_string();
        let mut field_into = String::new();
        for l in (1..=level).rev() {
            let Some(o) = self
                .g1
                .owned
                .iter()
                .filter(|o| o.root == root && o.level == l && o.to == to)
                .max_by_key(|o| o.references)
            else {
                break;
            };
            match steps.last_mut() {
                None => field_into = o.field.clone(),
                Some(below) => below.field = o.field.clone(),
            }
            steps.push(self.step(&o.from, "", 0));
            to = o.from.clone();
        }
        steps.reverse();
        (steps, field_into)
    }
}

/// The `n` allocation sites of `type_name` holding most objects at snapshot `index`.
fn top_sites(model: &CityModel, type_name: &str, index: usize, n: usize) -> Vec<(String, u64)> {
    let types: Vec<u32> = (0..model.nodes().len() as u32)
        .filter(|&id| {
            let node = model.node(id);
            node.role == "Type" && node.name == type_name
        })
        .collect();
    crate::details::top_sites(model, &types, index, Metric::Objects, n)
}

fn kind_label(kind: RootKind) -> &'static str {
    match kind {
        RootKind::StaticField => "static field",
        RootKind::Thread => "thread",
        RootKind::StackLocal => "stack local",
        RootKind::JniLocal => "JNI local",
        RootKind::JniGlobal => "JNI global",
        RootKind::Monitor => "monitor",
        RootKind::Other | RootKind::Unspecified => "VM internal",
    }
}

/// Whether a local's frame (`local in Class.method(...) of thread ...`) is the JDK's code.
fn is_jdk_frame(name: &str) -> bool {
    let frame = name.split_once(" in ").map_or(name, |(_, rest)| rest);
    ["java.", "javax.", "jdk.", "sun.", "com.sun."]
        .iter()
        .any(|p| frame.starts_with(p))
}

/// Whether a root belongs to the JDK (a JDK class's static), for ranking the application's first.
fn is_jdk_root(name: &str) -> bool {
    let name = name.strip_prefix("static ").unwrap_or(name);
    ["java.", "javax.", "jdk.", "sun.", "com.sun."]
        .iter()
        .any(|p| name.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OwnedRef, RootRef};

    fn edge(from: &str, field: &str, to: &str, references: u64, length: u64) -> FieldRef {
        FieldRef {
            from: from.into(),
            field: field.into(),
            is_static: false,
            to: to.into(),
            referrers: references.min(1),
            references,
            max_fanout: references,
            max_length: length,
        }
    }

    fn owned(root: usize, level: u32, from: &str, field: &str, to: &str, length: u64) -> OwnedRef {
        OwnedRef {
            root,
            level,
            from: from.into(),
            field: field.into(),
            to: to.into(),
            references: 1,
            max_fanout: 1,
            max_length: length,
        }
    }

    /// Three snapshots of types `(name, objects)` a second apart, each with `graph(i)`.
    fn session(types: &[(&str, [u64; 3])], graph: impl Fn(usize) -> Graph) -> CityModel {
        let mut m = CityModel::new();
        for i in 0..3 {
            let rows: Vec<(Vec<String>, String, u64, u64)> = types
                .iter()
                .map(|(name, counts)| {
                    (
                        vec!["p".into(), name.to_string()],
                        "Type".into(),
                        counts[i],
                        counts[i] * 16,
                    )
                })
                .collect();
            let total: u64 = types.iter().map(|t| t.1[i]).sum();
            m.push_tree(i as u64 * 1000, (total, total * 16), &rows, Vec::new());
            m.set_graph(i, graph(i));
        }
        m
    }

    /// The types of [`map_leak`]'s sessions: items in a map's nodes, table and map flat.
    const MAP_LEAK_TYPES: &[(&str, [u64; 3])] = &[
        ("Item", [110, 10_010, 20_010]),
        ("java.util.Map$Node", [105, 10_005, 20_005]),
        ("java.util.Map$Node[]", [3, 3, 3]),
        ("java.util.Map", [3, 3, 3]),
    ];

    fn map_leak(i: usize) -> Graph {
        let n = [100, 10_000, 20_000][i];
        Graph {
            fields: vec![
                edge("java.util.Map", "table", "java.util.Map$Node[]", 3, 32_768),
                edge(
                    "java.util.Map$Node[]",
                    "[]",
                    "java.util.Map$Node",
                    n + 20,
                    n,
                ),
                edge("java.util.Map$Node", "value", "Item", n, 0),
                edge("java.util.Map$Node", "next", "java.util.Map$Node", 5, 0),
                edge("Other", "items", "Item", 10, 0),
            ],
            roots: vec![
                RootRef {
                    kind: RootKind::StaticField,
                    name: "static App.CACHE".into(),
                    thread: String::new(),
                },
                RootRef {
                    kind: RootKind::StaticField,
                    name: "static java.util.Registry.MAPS".into(),
                    thread: String::new(),
                },
            ],
            owned: vec![
                owned(0, 0, "", "", "java.util.Map", 0),
                owned(
                    0,
                    1,
                    "java.util.Map",
                    "table",
                    "java.util.Map$Node[]",
                    32_768,
                ),
                owned(1, 0, "", "", "java.util.Map", 0),
                owned(1, 1, "java.util.Map", "table", "java.util.Map$Node[]", 16),
            ],
        }
    }

    #[test]
    fn a_steady_rise_is_a_trend_and_a_ramp_then_flat_is_not() {
        let rise: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, 100.0 + 50.0 * i as f64))
            .collect();
        let t = Trend::fit(&rise).unwrap();
        assert!((t.growth - 450.0).abs() < 1e-6 && t.fit > 0.99);
        assert!(t.is_leak(100.0));
        let flat: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, if i % 2 == 0 { 1000.0 } else { 1010.0 }))
            .collect();
        assert!(!Trend::fit(&flat).unwrap().is_leak(100.0));
        assert!(Trend::fit(&rise[..1]).is_none());
    }

    #[test]
    fn the_climb_stops_at_the_flat_table_and_folds_it_into_the_map_of_the_largest_root() {
        let m = session(MAP_LEAK_TYPES, map_leak);
        let s = suspects(&m);
        assert_eq!(s.len(), 1, "{s:#?}");
        let s = &s[0];
        assert_eq!(
            s.root, "static App.CACHE",
            "the root owning the long table, not the JDK's"
        );
        assert_eq!(s.holder, "java.util.Map");
        assert_eq!(
            s.suspect_reference,
            "java.util.Map$Node[].[] -> java.util.Map$Node"
        );
        assert_eq!(s.confidence, Confidence::Exact);
        assert_eq!(
            s.leaking,
            ["Item", "java.util.Map$Node"],
            "the nodes are explained by the same trace"
        );
        let steps: Vec<(&str, &str, bool)> = s
            .steps
            .iter()
            .map(|t| (t.type_name.as_str(), t.field.as_str(), t.content))
            .collect();
        assert_eq!(
            steps,
            [
                ("java.util.Map", "", false),
                ("java.util.Map$Node[]", "table", true),
                ("java.util.Map$Node", "[]", false),
                ("Item", "value", false)
            ]
        );
        assert!(s.steps[2].suspect);
    }

    #[test]
    fn shared_containers_leave_the_root_ambiguous_without_size_evidence() {
        let m = session(MAP_LEAK_TYPES, |i| {
            let mut g = map_leak(i);
            // Two application statics hold a map each, with tables of the same length.
            g.roots[1].name = "static App.OTHER".into();
            g.owned[1].max_length = 64;
            g.owned[3].max_length = 64;
            g
        });
        let s = &suspects(&m)[0];
        assert_eq!(s.confidence, Confidence::Ambiguous, "{s:#?}");
    }

    #[test]
    fn a_jdk_method_working_on_the_holder_yields_to_the_application_frame_below_it() {
        let local = |frame: &str| frame_root(frame, "main");
        let m = session(MAP_LEAK_TYPES, |i| {
            let mut g = map_leak(i);
            // The walk came while `main` was inside `Map.computeIfAbsent`: that frame owns
            // the map and its long table; `main`'s own local owns the manager holding it.
            g.roots = vec![
                local("java.util.Map.computeIfAbsent(Map.java:10)"),
                local("App.main(App.java:7)"),
            ];
            g.owned = vec![
                owned(0, 0, "", "", "java.util.Map", 0),
                owned(
                    0,
                    1,
                    "java.util.Map",
                    "table",
                    "java.util.Map$Node[]",
                    32_768,
                ),
                owned(1, 0, "", "", "App$Manager", 0),
                owned(1, 1, "App$Manager", "pools", "java.util.Map", 0),
            ];
            g
        });
        let s = &suspects(&m)[0];
        assert_eq!(
            s.root, "local in App.main(App.java:7) of thread \"main\"",
            "{s:#?}"
        );
        assert_eq!(s.confidence, Confidence::Likely);
        assert_eq!(s.steps[0].type_name, "App$Manager", "{s:#?}");
        assert_eq!(s.steps[1].field, "pools");
    }

    #[test]
    fn a_leaking_types_own_fields_are_no_evidence_of_the_holders_size() {
        let m = session(MAP_LEAK_TYPES, |i| {
            let mut g = map_leak(i);
            // The thread holds the map as a thread-local value but its table is out of reach;
            // a JDK frame holds a small map of the same type and one item with a long array.
            g.roots = vec![
                thread_root("worker"),
                frame_root("java.util.Helper.run(Helper.java:3)", "main"),
            ];
            g.owned = vec![
                owned(0, 0, "", "", "java.lang.Thread", 0),
                owned(0, 4, THREAD_LOCAL_ENTRY, "value", "java.util.Map", 0),
                owned(1, 0, "", "", "java.util.Map", 0),
                owned(1, 0, "", "", "Item", 0),
                owned(1, 1, "Item", "name", "byte[]", 39),
            ];
            g
        });
        let s = &suspects(&m)[0];
        assert_eq!(s.root, "thread \"worker\"", "{s:#?}");
    }

    #[test]
    fn a_frame_working_on_its_threads_thread_local_yields_to_the_thread() {
        let m = session(MAP_LEAK_TYPES, |i| {
            let mut g = map_leak(i);
            // The walk came while the worker was adding to its thread-local map: the frame's
            // local took the map (and its long table) before the thread's entry reached it.
            g.roots = vec![
                thread_root("worker"),
                frame_root("App.handle(App.java:5)", "worker"),
            ];
            g.owned = vec![
                owned(0, 0, "", "", "java.lang.Thread", 0),
                owned(
                    0,
                    1,
                    "java.lang.Thread",
                    "threadLocals",
                    "java.lang.ThreadLocal$ThreadLocalMap",
                    0,
                ),
                owned(
                    0,
                    2,
                    "java.lang.ThreadLocal$ThreadLocalMap",
                    "table",
                    "java.lang.ThreadLocal$ThreadLocalMap$Entry[]",
                    16,
                ),
                owned(
                    0,
                    3,
                    "java.lang.ThreadLocal$ThreadLocalMap$Entry[]",
                    "[]",
                    THREAD_LOCAL_ENTRY,
                    0,
                ),
                owned(0, 4, THREAD_LOCAL_ENTRY, "value", "java.util.Map", 0),
                owned(1, 0, "", "", "java.util.Map", 0),
                owned(
                    1,
                    1,
                    "java.util.Map",
                    "table",
                    "java.util.Map$Node[]",
                    32_768,
                ),
            ];
            g
        });
        let s = &suspects(&m)[0];
        assert_eq!(s.root, "thread \"worker\"", "{s:#?}");
        assert_eq!(s.confidence, Confidence::Likely);
        let fields: Vec<&str> = s.steps.iter().map(|s| s.field.as_str()).collect();
        assert_eq!(
            fields[..5],
            ["", "threadLocals", "table", "[]", "value"],
            "{s:#?}"
        );
        // With a list of its own in view, the thread's map is another one: the frame stays.
        let m = session(MAP_LEAK_TYPES, |i| {
            let mut g = m.frames()[i].graph.as_deref().unwrap().clone();
            g.owned.push(owned(
                0,
                5,
                "java.util.Map",
                "table",
                "java.util.Map$Node[]",
                16,
            ));
            g
        });
        assert_eq!(
            suspects(&m)[0].root,
            "local in App.handle(App.java:5) of thread \"worker\""
        );
    }

    #[test]
    fn a_rise_that_may_all_be_garbage_no_marking_has_met_is_named_unconfirmed() {
        let mut m = session(MAP_LEAK_TYPES, map_leak);
        let s = &suspects(&m)[0];
        assert!(s.confirmed && s.backed_growth > 0, "{s:#?}");
        // Only the first snapshot is a walk; the last, an estimate, counts births no old
        // marking has met yet: as many as the rise.
        let last = m.len() - 1;
        m.frames_mut_for_tests(1).graph = None;
        for (name, counts) in &MAP_LEAK_TYPES[..2] {
            let node = m.find(&["p", name]).unwrap();
            m.frames_mut_for_tests(last)
                .set_unconfirmed_for_tests(node, counts[2] - counts[0], 0);
        }
        m.frames_mut_for_tests(last).graph = None;
        let s = &suspects(&m)[0];
        assert!(!s.confirmed, "{s:#?}");
        assert_eq!(s.backed_growth, 0);
        assert_eq!(s.holder, "java.util.Map", "the trace still stands");
        // Half of it confirmed: a leak's worth is backed.
        for (name, counts) in &MAP_LEAK_TYPES[..2] {
            let node = m.find(&["p", name]).unwrap();
            m.frames_mut_for_tests(last).set_unconfirmed_for_tests(
                node,
                (counts[2] - counts[0]) / 2,
                0,
            );
        }
        assert!(suspects(&m)[0].confirmed);
    }

    #[test]
    fn a_pools_threads_holding_the_same_thread_local_are_named_together() {
        let m = session(MAP_LEAK_TYPES, |i| {
            let mut g = map_leak(i);
            // Three pool threads each hold a growing map as a thread-local value; a fourth holds
            // a small one; a JDK static holds another small map.
            g.roots = vec![
                thread_root("pool-1-thread-1"),
                thread_root("pool-1-thread-2"),
                thread_root("pool-1-thread-3"),
                thread_root("pool-1-thread-4"),
                static_root("static java.util.Registry.MAPS"),
            ];
            g.owned = Vec::new();
            for (root, table) in [(0, 30_000), (1, 32_768), (2, 20_000), (3, 100)] {
                g.owned.extend([
                    owned(root, 0, "", "", "java.lang.Thread", 0),
                    owned(root, 4, THREAD_LOCAL_ENTRY, "value", "java.util.Map", 0),
                    owned(
                        root,
                        5,
                        "java.util.Map",
                        "table",
                        "java.util.Map$Node[]",
                        table,
                    ),
                ]);
            }
            g.owned.extend([
                owned(4, 0, "", "", "java.util.Map", 0),
                owned(4, 1, "java.util.Map", "table", "java.util.Map$Node[]", 16),
            ]);
            g
        });
        let s = &suspects(&m)[0];
        assert_eq!(s.root, "thread \"pool-1-thread-2\"", "{s:#?}");
        let mut co = s.co_holders.clone();
        co.sort();
        assert_eq!(
            co,
            ["thread \"pool-1-thread-1\"", "thread \"pool-1-thread-3\""]
        );
        assert_eq!(s.confidence, Confidence::Exact, "the rival is small");
        assert!(
            s.signature
                .starts_with("thread \"pool-#-thread-#\" | java.util.Map |"),
            "{}",
            s.signature
        );
        assert_eq!(thread_family("worker-12 of 3"), "worker-# of #");
    }

    #[test]
    fn a_self_chain_is_entered_from_its_list() {
        let m = session(
            &[
                ("Person", [10, 5_010, 10_010]),
                ("List$Node", [10, 5_010, 10_010]),
                ("List", [1, 1, 1]),
            ],
            |i| {
                let n = [10, 5_010, 10_010][i];
                Graph {
                    fields: vec![
                        edge("List", "first", "List$Node", 1, 0),
                        edge("List", "last", "List$Node", 1, 0),
                        edge("List$Node", "next", "List$Node", n - 1, 0),
                        edge("List$Node", "prev", "List$Node", n - 1, 0),
                        edge("List$Node", "item", "Person", n, 0),
                    ],
                    roots: vec![RootRef {
                        kind: RootKind::StaticField,
                        name: "static App.PEOPLE".into(),
                        thread: String::new(),
                    }],
                    owned: vec![
                        owned(0, 0, "", "", "List", 0),
                        owned(0, 1, "List", "first", "List$Node", 0),
                    ],
                }
            },
        );
        let s = &suspects(&m)[0];
        assert_eq!(s.root, "static App.PEOPLE");
        assert_eq!(s.holder, "List");
        assert_eq!(s.suspect_reference, "List.first -> List$Node");
        assert_eq!(s.confidence, Confidence::Likely);
    }

    #[test]
    fn nothing_growing_names_nothing_and_growth_under_the_floor_is_not_a_leak() {
        let m = session(&[("Item", [100_000, 100_050, 100_100])], |_| Graph {
            fields: vec![edge("Holder", "items", "Item", 100_000, 0)],
            ..Default::default()
        });
        assert!(suspects(&m).is_empty());
    }

    #[test]
    fn an_empty_session_has_no_suspects() {
        let m = CityModel::new();
        assert!(suspects(&m).is_empty());
        assert_eq!(walks_in_window(&m), 0);
        assert!(type_trends(&m).is_empty());
    }

    #[test]
    fn internals_are_collection_insides() {
        assert!(is_internal("java.util.HashMap$Node[]"));
        assert!(is_internal("java.util.concurrent.ConcurrentHashMap$Node"));
        assert!(is_internal("java.lang.ThreadLocal$ThreadLocalMap$Entry"));
        assert!(!is_internal("java.util.HashMap"));
        assert!(!is_internal("com.example.Cache$Entry"));
    }

    fn thread_root(thread: &str) -> RootRef {
        RootRef {
            kind: RootKind::Thread,
            name: format!("thread \"{thread}\""),
            thread: thread.into(),
        }
    }

    fn frame_root(frame: &str, thread: &str) -> RootRef {
        RootRef {
            kind: RootKind::StackLocal,
            name: format!("local in {frame} of thread \"{thread}\""),
            thread: thread.into(),
        }
    }

    fn static_root(name: &str) -> RootRef {
        RootRef {
            kind: RootKind::StaticField,
            name: name.into(),
            thread: String::new(),
        }
    }

    #[test]
    fn of_two_holders_the_one_gaining_most_is_climbed() {
        let m = session(
            &[
                ("Item", [0, 5_000, 10_000]),
                ("A", [1, 1, 1]),
                ("B", [1, 1, 1]),
            ],
            |i| Graph {
                fields: vec![
                    edge("A", "items", "Item", [0, 3_000, 6_000][i], 0),
                    edge("B", "items", "Item", [0, 2_000, 4_000][i], 0),
                ],
                roots: vec![static_root("static App.A"), static_root("static App.B")],
                owned: vec![owned(0, 0, "", "", "A", 0), owned(1, 0, "", "", "B", 0)],
            },
        );
        let s = &suspects(&m)[0];
        assert_eq!(s.holder, "A");
        assert_eq!(s.root, "static App.A");
        assert_eq!(s.suspect_reference, "A.items -> Item");
    }

    #[test]
    fn a_cycle_of_growing_types_is_left_by_its_entry() {
        // Item <- Pair.item; Pair <-> Twin (both grow) ; Registry.pairs -> Pair (flat).
        let m = session(
            &[
                ("Item", [0, 5_000, 10_000]),
                ("Pair", [0, 5_000, 10_000]),
                ("Twin", [0, 5_000, 10_000]),
                ("Registry", [1, 1, 1]),
            ],
            |i| {
                let n = [0, 5_000, 10_000][i];
                Graph {
                    fields: vec![
                        edge("Pair", "item", "Item", n, 0),
                        edge("Twin", "pair", "Pair", n, 0),
                        edge("Pair", "twin", "Twin", n, 0),
                        edge("Registry", "pairs", "Pair", n, n),
                    ],
                    roots: vec![static_root("static App.REGISTRY")],
                    owned: vec![owned(0, 0, "", "", "Registry", 0)],
                }
            },
        );
        let s = &suspects(&m)[0];
        // Pair's growth comes through Twin.pair as much as Registry.pairs; Twin grows, so the
        // climb goes on to Twin, whose only way in is back into the trace: it ends without a
        // holder there, and Item's trace is named through the registry instead.
        assert!(
            s.holder == "Registry" || s.holder == "Twin",
            "the climb terminates: {s:#?}"
        );
    }

    #[test]
    fn a_holder_that_grows_slowly_is_still_the_holder() {
        let m = session(
            &[("Item", [0, 10_000, 20_000]), ("Bag", [10, 11, 12])],
            |i| Graph {
                fields: vec![edge("Bag", "items", "Item", [0, 10_000, 20_000][i], 0)],
                roots: vec![static_root("static App.BAGS")],
                owned: vec![owned(0, 0, "", "", "Bag", 0)],
            },
        );
        let s = &suspects(&m)[0];
        assert_eq!(s.holder, "Bag");
        assert_eq!(s.root, "static App.BAGS");
    }

    #[test]
    fn a_trace_from_an_older_walk_says_how_old() {
        let mut m = session(&[("Item", [0, 10_000, 20_000]), ("Bag", [1, 1, 1])], |i| {
            Graph {
                fields: vec![edge("Bag", "items", "Item", [0, 10_000, 20_000][i], 0)],
                ..Default::default()
            }
        });
        // The last snapshot is an estimate: no graph of its own.
        m.frames_mut_for_tests(2).graph = None;
        let s = &suspects(&m)[0];
        assert_eq!(s.walk_age_ms, 1_000);
        assert_eq!(s.walk_seq, 1);
        assert_eq!(s.confidence, Confidence::Ambiguous, "no root owns the bag");
    }
}
