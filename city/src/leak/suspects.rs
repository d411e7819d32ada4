//! Leak suspects, the report stage: from a growing group to the object that holds it.
//!
//! 1. **Trend.** A type grows when its live objects rise steadily over the window (after the
//!    warm-up, see `CityModel::warm_start`): the least-squares slope times the window's span, and
//!    how well a line fits (R²), in the spirit of JMC's live-set rule; first against last alone
//!    would call any start-up ramp a leak (`trends.rs`, `growers.rs`).
//! 2. **Holder.** From the agent's object-level paths (`holders.rs`): the growing types'
//!    sampled objects, weighed by their recent samples, are followed from the GC roots to the
//!    accumulation point, one instance, with the collection's insides folded into it. Types
//!    whose paths meet at one holder are one leak; the report says how many samples and
//!    counted objects back it, how the paths split, and how old the paths are.
//! 3. **Without paths** (a recording from before them, or `paths=off`) the growing types are
//!    listed with no holder: per-type edges join every instance of a type (the application's
//!    `LinkedList` and JFR's are one node), so they name none.

use std::collections::{HashMap, HashSet};

use crate::leak::evidence::{describe_split, Confidence, Evidence};
use crate::leak::growers::{backed_growth, byte_candidates, growers, objects_at, BytesTrends};
use crate::leak::holders::{Holding, MIN_SAMPLES, SHARED_BY};
use crate::leak::paths::{same_chain, PathNode, Paths};
use crate::leak::roots::RootRef;
use crate::leak::signature::Signature;
use crate::leak::trends::{
    sort_by_growth, trend_of, trend_snapshots, trends_of, trends_of_few_rows, type_nodes, Trend,
};
use crate::leak::{Held, Step, Suspect};
use crate::model::{CityModel, Metric, Role, Window};

/// Suspects named at most.
const MAX_SUSPECTS: usize = 5;

/// [`suspects`] worked out a step at a time, for a caller with no thread to work them out
/// beside it (the page, in WebAssembly): most of their cost, the trends over the window of
/// every type in objects and of those rising in bytes too (some 200 ms at 3,000 types), is
/// fitted a block of types per step, on a copy of the model taken at the start
/// (`CityModel::clone`, which shares its snapshots), whatever the session does meanwhile.
pub struct SuspectsInSteps {
    model: CityModel,
    /// The snapshots the trends read (`trend_snapshots`).
    at: Vec<usize>,
    /// Every type, in the order they are fitted in objects, with its nodes, and the trends
    /// fitted so far.
    names: Vec<String>,
    rows: Vec<Vec<u32>>,
    objects: Vec<Option<Trend>>,
    /// Once every type's is: the trends in objects (`trends_of`), the types rising (whose
    /// bytes are fitted next) and their bytes' trends fitted so far.
    all: Option<Vec<(String, Trend)>>,
    rising: Vec<String>,
    rising_rows: Vec<Vec<u32>>,
    bytes: Vec<Option<Trend>>,
}

impl SuspectsInSteps {
    pub fn new(model: CityModel) -> Self {
        let at = trend_snapshots(&model);
        let mut types: Vec<(String, Vec<u32>)> = type_nodes(&model)
            .into_iter()
            .map(|(name, ids)| (name.to_string(), ids))
            .collect();
        types.sort_unstable();
        let (names, rows) = types.into_iter().unzip();
        Self {
            model,
            at,
            names,
            rows,
            objects: Vec::new(),
            all: None,
            rising: Vec::new(),
            rising_rows: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// Fits the trends of some `cells` more trend cells (a type's nodes times the snapshots a
    /// trend reads; at least one type's); the suspects once every trend is fitted.
    pub fn step(&mut self, cells: usize) -> Option<Vec<Suspect>> {
        // Nodes looked up per snapshot this step: a type under many packages costs as many.
        let lookups = (cells / self.at.len().max(1)).max(1);
        let fit = |all_rows: &[Vec<u32>], from: usize, metric: Metric| {
            let mut rows: Vec<&[u32]> = Vec::new();
            let mut taken = 0;
            for ids in &all_rows[from..] {
                if taken >= lookups {
                    break;
                }
                taken += ids.len().max(1);
                rows.push(ids);
            }
            trends_of_few_rows(&self.model, &self.at, &rows, metric)
        };
        let Some(all) = &self.all else {
            let fitted = fit(&self.rows, self.objects.len(), Metric::Objects);
            self.objects.extend(fitted);
            if self.objects.len() == self.names.len() {
                let mut all: Vec<(String, Trend)> = self
                    .names
                    .iter()
                    .zip(&self.objects)
                    .filter_map(|(name, trend)| (*trend).map(|t| (name.clone(), t)))
                    .collect();
                sort_by_growth(&mut all);
                self.rising = byte_candidates(&self.model, &all)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                let at = |name: &String| self.names.binary_search(name).ok();
                self.rising_rows = (self.rising.iter())
                    .map(|name| at(name).map_or_else(Vec::new, |k| self.rows[k].clone()))
                    .collect();
                self.all = Some(all);
            }
            return None;
        };
        if self.bytes.len() < self.rising.len() {
            let fitted = fit(&self.rising_rows, self.bytes.len(), Metric::Bytes);
            self.bytes.extend(fitted);
            return None;
        }
        let types = type_nodes(&self.model);
        let in_bytes: BytesTrends = self
            .rising
            .iter()
            .cloned()
            .zip(self.bytes.iter().copied())
            .collect();
        Some(suspects_given(
            &self.model,
            &types,
            all.clone(),
            Some(&in_bytes),
        ))
    }
}

/// What a holder keeps alive of `type_name`'s growth: `share` of its fitted rise, in objects
/// and bytes (see `Held`).
fn held(model: &CityModel, types: &HashMap<&str, Vec<u32>>, type_name: &str, share: f64) -> Held {
    let ids = types.get(type_name).map_or(&[][..], Vec::as_slice);
    let rise = |metric| {
        trend_of(model, ids, metric).map_or(0, |t| (t.growth.max(0.0) * share).round() as i64)
    };
    let w = model.window();
    let error = |metric| {
        let sum = ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.error(id, w.start, metric))
                .saturating_add(model.error(id, w.end, metric))
        });
        (sum as f64 * share).round() as i64
    };
    let unconfirmed = |metric| {
        let sum = ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.unconfirmed(id, w.end, metric))
        });
        (sum as f64 * share).round() as i64
    };
    Held {
        type_name: type_name.to_string(),
        objects: rise(Metric::Objects),
        bytes: rise(Metric::Bytes),
        objects_error: error(Metric::Objects),
        bytes_error: error(Metric::Bytes),
        objects_unconfirmed: unconfirmed(Metric::Objects),
        bytes_unconfirmed: unconfirmed(Metric::Bytes),
    }
}

/// Most bytes first, then most objects, then by name (a stable order).
fn sort_held(holds: &mut [Held]) {
    holds.sort_by(|a, b| {
        (b.bytes, b.objects)
            .cmp(&(a.bytes, a.objects))
            .then_with(|| a.type_name.cmp(&b.type_name))
    });
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
    if model.frames().is_empty() {
        return Vec::new();
    }
    let types = type_nodes(model);
    let all = trends_of(model, &types);
    suspects_given(model, &types, all, None)
}

/// The suspects of the window of `model`, its types' nodes and every type's trend, `all`
/// (`trends_of`), given; and the bytes' trends of those rising, if fitted already.
fn suspects_given(
    model: &CityModel,
    types: &HashMap<&str, Vec<u32>>,
    all: Vec<(String, Trend)>,
    in_bytes: Option<&BytesTrends>,
) -> Vec<Suspect> {
    let w = model.window();
    if model.frames().is_empty() {
        return Vec::new();
    }
    if let Some((at, paths)) = model.paths_at(w.end) {
        return suspects_from_paths(model, at, paths, types, all, in_bytes);
    }
    // No object paths (a recording from before them, or paths=off): the growing types, and
    // no holder. Per-type edges join every instance of a type, so they name none.
    let (growers, floor) = growers(model, types, all, in_bytes);
    let mut out: Vec<Suspect> = growers
        .iter()
        .filter_map(|(name, trend)| {
            let backed = backed_growth(model, types, name, w.end);
            let suspect = Suspect {
                also_reached_from: Vec::new(),
                root: None,
                steps: Vec::new(),
                holder: String::new(),
                suspect_reference: String::new(),
                leaking: vec![name.clone()],
                growth: trend.growth.round() as i64,
                backed_growth: backed.round() as i64,
                confirmed: backed >= floor,
                confidence: Confidence::Ambiguous,
                co_holders: Vec::new(),
                signature: Signature::NoPaths {
                    type_name: name.clone(),
                },
                walk_seq: 0,
                walk_age_ms: 0,
                sites: top_sites(model, name, w.end, 3),
                evidence: None,
                holds: vec![held(model, types, name, 1.0)],
            };
            worth_naming(&suspect, trend).then_some(suspect)
        })
        .take(MAX_SUSPECTS)
        .collect();
    out.sort_by_key(|s| !s.is_backed());
    out
}

/// Whether a suspect is worth naming at all: confirmed (backed by a leak's worth beyond the
/// estimates' doubt, by paths as fresh as the rise), or else one that goes on beyond what its
/// later half's scatter and errors leave in doubt. A steady server's session data estimated
/// low while its sessions filled and at their plateau after rose within its doubt and no
/// further: noise on noise. So did, just beyond its doubt, a server's start-up catalog on
/// generational ZGC, whose estimate at the window's start was two errors low and whose
/// holder the paths of its build named (stale, and not going on: 6 runs in 25).
fn worth_naming(suspect: &Suspect, trend: &Trend) -> bool {
    suspect.confirmed || trend.steady() > 0.0
}

/// Where the path search judges liveness, whether a suspect rests on more than what it did not
/// find alive: backed (by numbers or a holder), or a rise beyond its estimates' error and
/// unconfirmed part together. Growth resting only on unconfirmed mass is garbage awaiting a
/// marking as far as the search can tell: the band of doubt, not a rise. A steady server's
/// expired sessions, promoted and dead in an old generation no marking had visited for 12 s (a
/// loaded machine, searches far apart), rose by 5,895 ±3,924 while 6,226 of the last
/// estimate's 6,568 might have been garbage. Without paths (`paths=off`) markings are the only
/// judge, and no search has looked: such a rise is shown as rising, not yet explained.
fn beyond_garbage(suspect: &Suspect, trend: &Trend) -> bool {
    suspect.is_backed() || !trend.within_doubt(true)
}

/// Suspects named from object-level paths (`holders.rs`): the paths carried by snapshot `at`.
fn suspects_from_paths(
    model: &CityModel,
    at: usize,
    paths: &Paths,
    types: &HashMap<&str, Vec<u32>>,
    all: Vec<(String, Trend)>,
    in_bytes: Option<&BytesTrends>,
) -> Vec<Suspect> {
    let (growers, floor) = growers(model, types, all, in_bytes);
    let names: Vec<&str> = growers
        .iter()
        .take(MAX_SUSPECTS * 4)
        .map(|(n, _)| n.as_str())
        .collect();
    let from = FromPaths::new(model, types, &growers, floor, (at, paths), &names);
    let mut out: Vec<Suspect> = Vec::new();
    let mut explained: HashSet<String> = HashSet::new();
    for h in from.paths.leaks(&names) {
        explained.extend(h.types.iter().cloned());
        out.push(from.suspect(&h));
    }
    absorb_thin_leaks(&mut out);
    // Growing types no sampled path reached: a trace that passes through one explains it
    // (a leak's strings may be sampled too rarely to weigh); else say so, not guess.
    for &name in &names {
        if !explained.contains(name) {
            from.add_unexplained(name, &mut out);
        }
    }
    rank(out, &from.trends)
}

/// What the suspects named from one search's paths are worked out from: the model's window,
/// the growing types' trends and the leak's floor, and the paths, weighed by the growth's own
/// samples.
struct FromPaths<'a> {
    model: &'a CityModel,
    types: &'a HashMap<&'a str, Vec<u32>>,
    trends: HashMap<&'a str, &'a Trend>,
    floor: f64,
    window: Window,
    end_ms: u64,
    /// The snapshot that carried the paths.
    at: usize,
    paths: Paths,
}

impl<'a> FromPaths<'a> {
    fn new(
        model: &'a CityModel,
        types: &'a HashMap<&'a str, Vec<u32>>,
        growers: &'a [(String, Trend)],
        floor: f64,
        (at, paths): (usize, &Paths),
        names: &[&str],
    ) -> Self {
        let window = model.window();
        let frames = model.frames();
        let end_ms = frames[window.end].time_ms;
        // The growth's own objects: samples taken in the window's second half (a steady rise
        // has them, a one-off jump at its start does not), where each type has enough of them.
        let mut paths = paths.clone();
        let start_ms = frames[window.start].time_ms;
        let mid_ms = start_ms + end_ms.saturating_sub(start_ms) / 2;
        paths.weigh_growth_from(
            names,
            start_ms.div_ceil(1000) as u32,
            (mid_ms / 1000) as u32,
        );
        FromPaths {
            model,
            types,
            trends: growers.iter().map(|(n, t)| (n.as_str(), t)).collect(),
            floor,
            window,
            end_ms,
            at,
            paths,
        }
    }

    /// Of `name`'s rise to snapshot `index`, what the numbers back (`backed_growth`).
    fn backed(&self, name: &str, index: usize) -> f64 {
        backed_growth(self.model, self.types, name, index)
    }

    /// `name`'s growth since the paths were found, and its objects then.
    fn since(&self, name: &str) -> (i64, u64) {
        let then = objects_at(self.model, self.types.get(name), self.at);
        let now = objects_at(self.model, self.types.get(name), self.window.end);
        (now as i64 - then as i64, then)
    }

    /// How much older the paths are than the window's end.
    fn age_ms(&self) -> u64 {
        self.end_ms.saturating_sub(self.paths.finished_ms)
    }

    /// The suspect a holding names: its trace, what it keeps alive, and what backs it.
    fn suspect(&self, h: &Holding) -> Suspect {
        let (model, paths, w) = (self.model, &self.paths, self.window);
        let name = h.types[0].as_str();
        let shares = paths.type_shares(h);
        let holds: Vec<Held> = h
            .types
            .iter()
            .zip(&shares)
            .map(|(t, &share)| held(model, self.types, t, share))
            .collect();
        // What the numbers back of the whole leak (each type's backed rise, its share), not of
        // its first type alone: a leak of a dozen small types each within its estimate's error
        // is still a leak's worth together.
        let leak_backed: f64 = h
            .types
            .iter()
            .zip(&shares)
            .map(|(t, &share)| self.backed(t, w.end) * share)
            .sum();
        let backed_growth = self.backed(name, w.end);
        let holder = &paths.nodes[h.holder];
        let root = paths.nodes[h.chain[0]].root.as_ref();
        let suspect_reference = h.below.first().map_or(String::new(), |&n| {
            let node = &paths.nodes[n];
            format!("{}.{} -> {}", holder.type_name, node.field, node.type_name)
        });
        let evidence = self.evidence(h, root);
        let mut confidence = h.confidence;
        if evidence.stale && confidence == Confidence::Exact {
            confidence = Confidence::Likely;
        }
        Suspect {
            also_reached_from: self.also_reached_from(h, root.map_or("", |r| r.name.as_str())),
            root: root.cloned(),
            steps: self.steps(h),
            holder: holder.type_name.clone(),
            suspect_reference,
            leaking: h.types.clone(),
            growth: self.trends[name].growth.round() as i64,
            backed_growth: backed_growth.round() as i64,
            confirmed: (backed_growth >= self.floor || leak_backed >= self.floor)
                && !evidence.stale,
            confidence,
            co_holders: h.co_holders.clone(),
            signature: Signature::held(root, &holder.type_name, evidence.holder_in.clone()),
            walk_seq: model.frames()[self.at].seq,
            walk_age_ms: self.age_ms(),
            sites: top_sites(model, name, w.end, 3),
            evidence: Some(evidence),
            holds,
        }
    }

    /// What a holding rests on: its samples and counts, how its paths split over the roots
    /// (`root`, the holder's own, first), and how old they are against the growth since.
    fn evidence(&self, h: &Holding, root: Option<&RootRef>) -> Evidence {
        let (growth_since, then) = self.since(&h.types[0]);
        let split = if h.alternatives.is_empty() {
            String::new()
        } else {
            describe_split(
                root.map_or("", |r| r.name.as_str()),
                h.share,
                &h.alternatives,
            )
        };
        Evidence {
            samples: h.samples,
            through_holder: h.holder_samples,
            share: h.share,
            split,
            witnessed_ms: self.paths.finished_ms,
            age_ms: self.age_ms(),
            growth_since,
            // Stale: more of the type appeared since the paths were found than existed then,
            // so the holder is not known to hold the new objects.
            stale: growth_since > (then as i64).max(self.floor as i64),
            counted: h.counted,
            counted_through: h.counted_through,
            holder_identity: self.paths.nodes[h.holder].identity,
            holder_in: self.paths.holder_in(h.holder),
        }
    }

    /// A holding's trace: its chain from the root's object to the holder, then the route
    /// below it, the first step below reached through the suspect reference.
    fn steps(&self, h: &Holding) -> Vec<Step> {
        let paths = &self.paths;
        let mut steps: Vec<Step> = h
            .chain
            .iter()
            .map(|&n| self.step(&paths.nodes[n], false, false))
            .collect();
        if let Some(first) = steps.first_mut() {
            first.field.clear();
        }
        for (i, &n) in h.below.iter().enumerate() {
            steps.push(self.step(&paths.nodes[n], paths.is_collection_inside(n), i == 0));
        }
        steps
    }

    /// A step's counts are the group table's, read from the model: a type no sample lands on
    /// (the one list holding a leak) has no trend to read them from. A type on a path exists
    /// though no walk counted it (the only walk came before it was made): one at least.
    fn step(&self, node: &PathNode, content: bool, suspect: bool) -> Step {
        let ids = self.types.get(node.type_name.as_str());
        let (first, last) = (
            objects_at(self.model, ids, self.window.start),
            objects_at(self.model, ids, self.window.end),
        );
        Step {
            type_name: node.type_name.clone(),
            field: node.field.clone(),
            objects: last.max(1),
            growth: if last == 0 {
                0
            } else {
                crate::units::growth(first, last)
            },
            content,
            suspect,
            size: node.length.max(if node.chain > 1 { node.chain } else { 0 }),
        }
    }

    /// Roots that hold an object on the chain to the holder themselves, the holder's own
    /// `root` and its pool's other threads aside.
    fn also_reached_from(&self, h: &Holding, root: &str) -> Vec<String> {
        let mut also_reached_from: Vec<String> = Vec::new();
        let chain: Vec<&PathNode> = h.chain.iter().map(|&n| &self.paths.nodes[n]).collect();
        // A focused search went through the roots that held the last finds alone: what other
        // roots hold on the same chain, the last full search says.
        let full = self
            .paths
            .focused
            .then(|| self.model.full_paths_at(self.at))
            .flatten()
            .map(|full| same_chain(full, &chain))
            .unwrap_or_default();
        for node in chain.iter().copied().chain(full) {
            for other in &node.also {
                if other.name != root
                    && !h.co_holders.contains(&other.name)
                    && !also_reached_from.contains(&other.name)
                {
                    also_reached_from.push(other.name.clone());
                }
            }
        }
        also_reached_from
    }

    /// A growing type no holding explains: absorbed by a trace that passes through it, else
    /// named apart, as a holder not seen yet, while there is room.
    fn add_unexplained(&self, name: &str, out: &mut Vec<Suspect>) {
        if let Some(j) = trace_through(out, name, 0) {
            absorb(
                &mut out[j],
                name.to_string(),
                held(self.model, self.types, name, 1.0),
            );
            return;
        }
        if out.len() >= MAX_SUSPECTS {
            return;
        }
        // Every sampled object of the type that a complete search looked for, unreached:
        // garbage awaiting a marking, whatever the estimates say, and no suspect (its row in
        // the growth table says so).
        if self.model.all_unreachable_at(self.at, name).is_some() {
            return;
        }
        out.push(self.not_seen(name));
    }

    /// A growing type whose holder the paths do not show.
    fn not_seen(&self, name: &str) -> Suspect {
        let (growth_since, _) = self.since(name);
        let backed_now = self.backed(name, self.window.end);
        Suspect {
            also_reached_from: Vec::new(),
            root: None,
            steps: Vec::new(),
            holder: String::new(),
            suspect_reference: String::new(),
            leaking: vec![name.to_string()],
            growth: self.trends[name].growth.round() as i64,
            backed_growth: backed_now.round() as i64,
            // A rise beyond the estimates' doubt is a leak whose holder is not seen yet;
            // within it, one that may be garbage (`Suspect::is_backed`).
            confirmed: backed_now >= self.floor,
            confidence: Confidence::Ambiguous,
            co_holders: Vec::new(),
            signature: Signature::NotSeen {
                type_name: name.to_string(),
            },
            walk_seq: self.model.frames()[self.at].seq,
            walk_age_ms: self.age_ms(),
            sites: top_sites(self.model, name, self.window.end, 3),
            evidence: Some(Evidence {
                witnessed_ms: self.paths.finished_ms,
                age_ms: self.age_ms(),
                growth_since,
                stale: true,
                ..Default::default()
            }),
            holds: vec![held(self.model, self.types, name, 1.0)],
        }
    }
}

/// A leak of one sampled path names no holder of its own (one path cannot show where paths
/// part), and its confidence is a guess: a trace that passes through its type with enough
/// paths of its own explains it (a server's sessions, met once, below the session cache that
/// 40 paths of their maps and data name), and takes its types in.
fn absorb_thin_leaks(out: &mut Vec<Suspect>) {
    let mut i = 0;
    while i < out.len() {
        let thin = out[i]
            .evidence
            .as_ref()
            .is_some_and(|e| e.through_holder < SHARED_BY);
        let explains = thin
            .then(|| trace_through(out, &out[i].leaking[0], MIN_SAMPLES))
            .flatten();
        match explains {
            Some(j) => {
                let weak = out.remove(i);
                let known = &mut out[if j > i { j - 1 } else { j }];
                for (t, h) in weak.leaking.into_iter().zip(weak.holds) {
                    absorb(known, t, h);
                }
            }
            None => i += 1,
        }
    }
}

/// The suspects worth naming (`worth_naming`, `beyond_garbage`, by their first type's trend in
/// `trends`), `MAX_SUSPECTS` at most: named holders first, then the confirmed; within each
/// part, leaks by what they surely keep alive (bytes, then objects), not by their first type's
/// growth.
fn rank(mut out: Vec<Suspect>, trends: &HashMap<&str, &Trend>) -> Vec<Suspect> {
    out.retain(|s| {
        let trend = trends[s.leaking[0].as_str()];
        worth_naming(s, trend) && beyond_garbage(s, trend)
    });
    out.truncate(MAX_SUSPECTS);
    for s in &mut out {
        sort_held(&mut s.holds);
    }
    out.sort_by_cached_key(|s| {
        let (objects, bytes) = s.surely_held();
        (
            !s.is_backed(),
            s.holder.is_empty(),
            !s.confirmed,
            std::cmp::Reverse(bytes),
            std::cmp::Reverse(objects),
        )
    });
    out
}

/// The first suspect whose holder is named, with at least `paths` sampled paths through it, and
/// whose trace passes through `type_name`: that trace explains the type's growth too.
fn trace_through(out: &[Suspect], type_name: &str, paths: u64) -> Option<usize> {
    out.iter().position(|s| {
        !s.holder.is_empty()
            && s.evidence.as_ref().map_or(0, |e| e.through_holder) >= paths
            && s.steps.iter().any(|step| step.type_name == type_name)
    })
}

/// Adds a type's growth to a suspect that explains it (once).
fn absorb(known: &mut Suspect, type_name: String, held: Held) {
    if !known.leaking.contains(&type_name) {
        known.leaking.push(type_name);
        known.holds.push(held);
    }
}

fn top_sites(model: &CityModel, type_name: &str, index: usize, n: usize) -> Vec<(String, u64)> {
    let types: Vec<u32> = (0..model.nodes().len() as u32)
        .filter(|&id| {
            let node = model.node(id);
            node.role == Role::Type && node.name == type_name
        })
        .collect();
    model.top_sites(&types, index, Metric::Objects, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leak::paths::{HolderIn, PathNode, Paths};
    use crate::leak::roots::{root_kind_label, RootKind, RootRef};
    use crate::leak::testing::{
        local_root, map_paths, node, session, snapshots_of, static_root, MAP_LEAK_TYPES,
    };

    use crate::leak::trends::type_trends;
    use crate::model::DeadRise;

    /// A holder named for a rise just beyond its doubt, by paths older than most of the rise
    /// (not confirmed), is named only if the rise goes on; confirmed, or going on, it is.
    #[test]
    fn an_unconfirmed_holder_of_a_rise_that_does_not_go_on_is_not_named() {
        let levelled: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, if i < 2 { 1000.0 * i as f64 } else { 2000.0 }))
            .collect();
        let rising: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, 100.0 + 50.0 * i as f64))
            .collect();
        let (levelled, rising) = (Trend::fit(&levelled).unwrap(), Trend::fit(&rising).unwrap());
        assert!(levelled.steady() == 0.0 && rising.steady() > 0.0);
        let held = crate::leak::Held {
            type_name: "java.lang.String".into(),
            objects: 187_158,
            bytes: 187_158 * 32,
            objects_error: 138_880,
            bytes_error: 138_880 * 32,
            ..Default::default()
        };
        let catalog = Suspect {
            holder: "java.util.concurrent.ConcurrentHashMap".into(),
            holds: vec![held],
            ..Suspect::default()
        };
        assert!(
            catalog.is_backed(),
            "the premise: its holder holds some beyond the doubt"
        );
        assert!(!worth_naming(&catalog, &levelled));
        assert!(worth_naming(&catalog, &rising));
        let confirmed = Suspect {
            confirmed: true,
            ..catalog
        };
        assert!(worth_naming(&confirmed, &levelled));
    }

    /// Where paths judge, a rise no holder backs that goes on, but within what may be garbage
    /// (its estimates' unconfirmed part), is not named; beyond it, it is (rising, not yet
    /// explained).
    #[test]
    fn a_rise_resting_only_on_unconfirmed_mass_is_not_named() {
        let xy: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 1000.0 * i as f64)).collect();
        let garbage = Trend {
            error: 1_000.0,
            unconfirmed: 8_500.0,
            ..Trend::fit(&xy).unwrap()
        };
        assert!(garbage.within_doubt(true) && !garbage.within_doubt(false));
        let unseen = Suspect::default();
        assert!(!unseen.is_backed(), "the premise: nothing backs it");
        assert!(worth_naming(&unseen, &garbage) && !beyond_garbage(&unseen, &garbage));
        let live = Trend {
            unconfirmed: 2_000.0,
            ..garbage
        };
        assert!(beyond_garbage(&unseen, &live));
    }

    /// Within one recording two snapshots could be a pool that filled; two recordings compared
    /// are the user's two points, and what rose between them beyond its doubt is the answer.
    #[test]
    fn a_rise_between_two_compared_recordings_is_a_suspect() {
        let m = session(MAP_LEAK_TYPES);
        let two = CityModel::comparison(&m, 0, &m, 2).unwrap();
        assert!(two.is_comparison() && !m.is_comparison());
        let named: Vec<String> = suspects(&two).into_iter().flat_map(|s| s.leaking).collect();
        assert!(named.contains(&"Item".to_string()), "{named:?}");
        // The same two points within one recording name nothing.
        let pair = snapshots_of(MAP_LEAK_TYPES, &[0, 2]);
        assert!(suspects(&pair).is_empty());
        // A fall between them is none.
        let back = CityModel::comparison(&m, 2, &m, 0).unwrap();
        assert!(suspects(&back).is_empty());
    }

    /// A server's sessions, each holding an item, in its session cache, and its audit log
    /// beside it: 40 sampled paths to the items name the cache, 15 to the log's entries name
    /// the log, and the sessions' own one sampled path, met by another of the server's fields,
    /// names the server itself (one path cannot show where paths part). The items' trace
    /// passes through the sessions and explains them: two suspects, not three.
    #[test]
    fn a_leak_of_one_sampled_path_is_explained_by_a_trace_through_its_type() {
        let mut m = session(&[
            ("Item", [110, 10_010, 20_010]),
            ("Session", [110, 10_010, 20_010]),
            ("Entry", [110, 10_010, 20_010]),
            ("java.util.HashMap$Node", [105, 10_005, 20_005]),
            ("java.util.HashMap$Node[]", [3, 3, 3]),
            ("java.util.HashMap", [3, 3, 3]),
        ]);
        let mut nodes = vec![
            node(None, "App$Server", "", Some("static App.SERVER")),
            node(Some(0), "java.util.HashMap", "sessions", None),
            node(Some(1), "java.util.HashMap$Node[]", "table", None),
        ];
        for i in 0..40 {
            nodes.push(node(Some(2), "java.util.HashMap$Node", "[]", None));
            let mut session = node(Some(nodes.len() - 1), "Session", "value", None);
            session.identity = 2 * i;
            nodes.push(session);
            let mut item = node(Some(nodes.len() - 1), "Item", "item", None);
            item.targets = vec![("Item".into(), 1, 10.0, 2)];
            item.identity = 2 * i + 1;
            nodes.push(item);
        }
        nodes.push(node(Some(0), "App$Log", "log", None));
        let log = nodes.len() - 1;
        for i in 0..15 {
            let mut entry = node(Some(log), "Entry", "[]", None);
            entry.targets = vec![("Entry".into(), 1, 10.0, 2)];
            entry.identity = 100 + i;
            nodes.push(entry);
        }
        let mut session = node(Some(0), "Session", "current", None);
        session.targets = vec![("Session".into(), 1, 10.0, 2)];
        session.identity = 200;
        nodes.push(session);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(Paths::new(nodes)));
        let s = suspects(&m);
        let named: Vec<(&str, &[String])> = s
            .iter()
            .map(|s| (s.holder.as_str(), s.leaking.as_slice()))
            .collect();
        assert_eq!(s.len(), 2, "{named:?}");
        let cache = s
            .iter()
            .find(|s| s.leaking[0] == "Item")
            .expect("the items' leak");
        assert_eq!(cache.holder, "java.util.HashMap", "{named:?}");
        assert!(
            cache.leaking.contains(&"Session".to_string())
                && cache.holds.iter().any(|h| h.type_name == "Session"),
            "{named:?}"
        );
    }

    #[test]
    fn other_roots_holding_the_holder_are_named_apart_from_its_lasting_root() {
        let mut m = session(MAP_LEAK_TYPES);
        let mut paths = map_paths();
        // The request loop's frame holds the cached map in a local too: the search came to it
        // from the static first, and noted the frame on the map's node.
        let local = local_root("App.serve(App.java:40)", "thread", "main");
        assert_eq!(
            local.name,
            "local in App.serve(App.java:40) of thread \"main\""
        );
        paths.nodes[0].also = vec![local.clone()];
        // A root on a branch the suspect does not take is none of its.
        paths.nodes[2].also = vec![RootRef {
            name: "JNI global".into(),
            kind: RootKind::JniGlobal,
            ..static_root("", "")
        }];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths));
        let s = suspects(&m);
        assert_eq!(s[0].root_name(), "static App.CACHE");
        assert_eq!(s[0].confidence, Confidence::Exact);
        assert_eq!(s[0].also_reached_from, [local.name]);
    }

    #[test]
    fn a_focused_search_keeps_the_other_roots_the_last_full_one_saw() {
        let mut m = session(MAP_LEAK_TYPES);
        let local = local_root("App.serve(App.java:40)", "thread", "main");
        assert_eq!(
            local.name,
            "local in App.serve(App.java:40) of thread \"main\""
        );
        let mut full = map_paths();
        full.nodes[0].also = vec![local.clone()];
        m.frames_mut_for_tests(1).paths = Some(std::sync::Arc::new(full));
        // The focused search went through the static alone: it saw no frame.
        let mut focused = map_paths();
        focused.focused = true;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused.clone()));
        let s = suspects(&m);
        assert_eq!(s[0].root_name(), "static App.CACHE");
        assert_eq!(s[0].also_reached_from, [local.name]);
        // A full search that saw no other root says so: nothing older is carried over.
        focused.focused = false;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused));
        assert!(suspects(&m)[0].also_reached_from.is_empty());
    }

    /// A type whose samples the last full search looked for and reached none of is dead in the
    /// old generation, through the focused searches after it (which leave roots unsearched and
    /// judge nothing dead) until one of them reaches one of its samples: alive, then.
    #[test]
    fn dead_in_the_old_generation_is_the_last_full_searchs_verdict() {
        let mut m = session(MAP_LEAK_TYPES);
        let mut full = map_paths();
        full.targeted = vec![("Garbage".into(), 9), ("Item".into(), 4)];
        full.unreached = vec![("Garbage".into(), 9)];
        m.frames_mut_for_tests(1).paths = Some(std::sync::Arc::new(full));
        let mut focused = map_paths();
        focused.focused = true;
        focused.stopped_early = true;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused.clone()));
        assert_eq!(m.all_unreachable_at(2, "Garbage"), Some((9, 9)));
        assert_eq!(m.all_unreachable_at(2, "Item"), None);
        assert_eq!(
            m.all_unreachable_at(0, "Garbage"),
            None,
            "before any search"
        );
        // A focused search that looked for one and missed it judges nothing.
        focused.targeted = vec![("Garbage".into(), 1)];
        focused.unreached = vec![("Garbage".into(), 1)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused.clone()));
        assert_eq!(m.all_unreachable_at(2, "Garbage"), Some((9, 9)));
        // One that reached one: alive.
        focused.unreached.clear();
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused));
        assert_eq!(m.all_unreachable_at(2, "Garbage"), None);
    }

    /// The page's suspects, a block of types per step, are the window's: with paths and
    /// without, one type a step or all at once.
    #[test]
    fn suspects_worked_out_in_steps_are_the_suspects() {
        let plain = session(MAP_LEAK_TYPES);
        let mut with_paths = session(MAP_LEAK_TYPES);
        with_paths.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        for m in [plain, with_paths] {
            let whole = format!("{:?}", suspects(&m));
            assert!(whole.contains("Node"), "the premise: {whole}");
            for cells in [1, 5, usize::MAX] {
                let mut steps = SuspectsInSteps::new(m.clone());
                let mut taken = 0;
                let found = loop {
                    taken += 1;
                    if let Some(found) = steps.step(cells) {
                        break found;
                    }
                };
                assert_eq!(format!("{found:?}"), whole, "{cells} cells a step");
                // A step a type in objects, one a rising type in bytes, and the suspects; or the
                // objects, the bytes and the suspects.
                let rising = byte_candidates(&m, &trends_of(&m, &type_nodes(&m))).len();
                assert!(rising > 0, "the premise");
                match cells {
                    1 => assert_eq!(taken, type_nodes(&m).len() + rising + 1),
                    usize::MAX => assert_eq!(taken, 3),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn the_holder_is_named_from_paths_with_its_evidence() {
        let mut m = session(MAP_LEAK_TYPES);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        let s = suspects(&m);
        assert_eq!(s.len(), 1, "{s:#?}");
        let s = &s[0];
        assert_eq!(s.root_name(), "static App.CACHE");
        assert_eq!(
            s.root.as_ref().map(|r| root_kind_label(r.kind)),
            Some("static field")
        );
        assert_eq!(s.holder, "java.util.HashMap");
        assert_eq!(
            s.suspect_reference,
            "java.util.HashMap.table -> java.util.HashMap$Node[]"
        );
        assert_eq!(s.confidence, Confidence::Exact);
        assert_eq!(
            s.leaking,
            ["Item", "java.util.HashMap$Node"],
            "the nodes are on the trace: explained by it"
        );
        assert_eq!(
            s.signature,
            Signature::Held {
                root: "static App.CACHE".into(),
                holder_type: "java.util.HashMap".into(),
                holder_in: HolderIn::Root,
            }
        );
        assert_eq!(
            s.signature.to_string(),
            "static App.CACHE | java.util.HashMap | static App.CACHE"
        );
        let e = s.evidence.as_ref().unwrap();
        assert_eq!((e.samples, e.through_holder), (42, 40));
        assert!(
            e.split.starts_with(
                "95 % through static App.CACHE, 5 % through static java.util.Registry.MAPS"
            ),
            "{}",
            e.split
        );
        assert!(s.steps[1].content && s.steps[1].suspect, "{:?}", s.steps);
        // The steps count as the group table does.
        assert_eq!(
            (s.steps[0].objects, s.steps[0].growth),
            (3, 0),
            "{:?}",
            s.steps
        );
    }

    /// The list that holds a leak, made after the session's only walk and never sampled: the
    /// model counts none of it, yet the path shows one; its step says one, not "0 objects".
    #[test]
    fn a_holder_no_walk_counted_is_one_object_on_its_trace() {
        let types: Vec<(&str, [u64; 3])> = MAP_LEAK_TYPES
            .iter()
            .map(|&(name, counts)| {
                if name == "java.util.HashMap" {
                    (name, [0, 0, 0])
                } else {
                    (name, counts)
                }
            })
            .collect();
        let mut m = session(&types);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        let s = suspects(&m);
        assert_eq!(s[0].holder, "java.util.HashMap");
        assert_eq!(s[0].steps[0].type_name, "java.util.HashMap");
        assert_eq!((s[0].steps[0].objects, s[0].steps[0].growth), (1, 0));
    }

    /// Two leaks: 20,000 small `Event`s into a list, and 5,000 `Session`s into a map, each
    /// dragging a 1 KiB `byte[]` along (a few `byte[]`s hang off events too).
    #[test]
    fn leaks_rank_by_what_their_holder_keeps_alive_not_by_their_first_type() {
        let mut m = CityModel::new();
        let types: [(&str, [u64; 3], u64); 7] = [
            ("Event", [0, 10_000, 20_000], 16),
            ("Session", [0, 2_500, 5_000], 32),
            ("byte[]", [0, 2_500, 5_000], 1024),
            ("java.util.ArrayList", [1, 1, 1], 24),
            ("java.lang.Object[]", [1, 1, 1], 80_000),
            ("java.util.HashMap", [1, 1, 1], 48),
            ("java.util.HashMap$Node", [0, 2_500, 5_000], 32),
        ];
        for i in 0..3 {
            let rows: Vec<(Vec<String>, String, u64, u64)> = types
                .iter()
                .map(|(name, counts, each)| {
                    (
                        vec!["p".into(), name.to_string()],
                        "Type".into(),
                        counts[i],
                        counts[i] * each,
                    )
                })
                .collect();
            let total = rows.iter().fold((0, 0), |t, r| (t.0 + r.2, t.1 + r.3));
            m.push_tree(i as u64 * 1000, total, &rows, Vec::new());
        }
        let target = |n: PathNode, t: &str, weight: f64| PathNode {
            targets: vec![(t.into(), 1, weight, 2)],
            ..n
        };
        // The list's events weigh most by samples (the old order, heaviest paths first).
        let mut nodes = vec![
            node(None, "java.util.ArrayList", "", Some("static App.EVENTS")),
            node(Some(0), "java.lang.Object[]", "elementData", None),
        ];
        for i in 0..20 {
            nodes.push(PathNode {
                identity: i,
                ..target(node(Some(1), "Event", "[]", None), "Event", 1000.0)
            });
        }
        nodes.push(target(
            node(Some(2), "byte[]", "payload", None),
            "byte[]",
            500.0,
        ));
        let map = nodes.len();
        nodes.push(node(
            None,
            "java.util.HashMap",
            "",
            Some("static App.SESSIONS"),
        ));
        nodes.push(node(Some(map), "java.util.HashMap$Node[]", "table", None));
        for i in 0..10 {
            let entry = nodes.len();
            nodes.push(PathNode {
                identity: 100 + i,
                ..node(Some(map + 1), "java.util.HashMap$Node", "[]", None)
            });
            nodes.push(PathNode {
                identity: 200 + i,
                ..target(node(Some(entry), "Session", "val", None), "Session", 500.0)
            });
            let session = nodes.len() - 1;
            nodes.push(PathNode {
                identity: 300 + i,
                ..target(node(Some(session), "byte[]", "data", None), "byte[]", 500.0)
            });
        }
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(Paths::new(nodes)));
        let s = suspects(&m);
        let holders: Vec<&str> = s.iter().map(|s| s.holder.as_str()).collect();
        assert_eq!(
            holders,
            ["java.util.HashMap", "java.util.ArrayList"],
            "{s:#?}"
        );
        let sessions = &s[0];
        let first = &sessions.holds[0];
        assert_eq!(
            first.type_name, "byte[]",
            "most bytes first: {:?}",
            sessions.holds
        );
        // Of the byte[]s' samples, 10 of 11 go through the map: so much of their growth.
        assert_eq!(first.objects, (5_000.0_f64 * 10.0 / 11.0).round() as i64);
        assert_eq!(
            first.bytes,
            (5_000.0_f64 * 1024.0 * 10.0 / 11.0).round() as i64
        );
        let session = sessions
            .holds
            .iter()
            .find(|h| h.type_name == "Session")
            .unwrap();
        assert_eq!((session.objects, session.bytes), (5_000, 160_000));
        let events = &s[1];
        let event = events
            .holds
            .iter()
            .find(|h| h.type_name == "Event")
            .unwrap();
        assert_eq!((event.objects, event.bytes), (20_000, 320_000));
        assert_eq!(
            events
                .holds
                .iter()
                .find(|h| h.type_name == "byte[]")
                .map(|h| h.objects),
            Some((5_000.0_f64 / 11.0).round() as i64)
        );
        assert!(
            sessions.held().1 > events.held().1,
            "{:?} {:?}",
            sessions.held(),
            events.held()
        );
        assert!(
            sessions.held().0 < events.held().0,
            "fewer objects, more bytes"
        );
    }

    #[test]
    fn a_recording_without_paths_lists_the_growth_and_names_no_holder() {
        let m = session(MAP_LEAK_TYPES);
        let s = suspects(&m);
        assert_eq!(s.len(), 2, "{s:#?}");
        assert!(s
            .iter()
            .all(|s| s.holder.is_empty() && s.evidence.is_none()));
        assert_eq!(s[0].leaking, ["Item"]);
    }

    /// A complete search that reached none of a rising type's sampled objects: they are dead
    /// in the old generation, and the rise is no leak (an incomplete search proves nothing).
    #[test]
    fn a_type_no_complete_search_reached_is_dead_not_a_leak() {
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [100, 20_100, 40_100]));
        let mut m = session(&types);
        let mut paths = map_paths();
        paths.targeted = vec![("Item".into(), 40), ("Garbage".into(), 14)];
        paths.unreached = vec![("Garbage".into(), 14)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        let s = suspects(&m);
        assert!(s.iter().all(|s| s.leaking[0] != "Garbage"), "{s:?}");
        assert!(
            s[0].is_backed() && s[0].holder == "java.util.HashMap",
            "{s:?}"
        );
        paths.incomplete = "the search's time ran out".into();
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths));
        let s = suspects(&m);
        let garbage = s.iter().find(|s| s.leaking[0] == "Garbage").unwrap();
        assert!(garbage.is_backed(), "exact counts back it: {garbage:?}");
    }

    /// A complete search that reached a few of a rising type's sampled objects: at the share
    /// it reached, the objects alive at the end are no more than there were at the start, so
    /// the rise is dead (a ring's live arrays among the dead ones generational ZGC keeps for
    /// the samples); at a share that makes the rise, it is a leak.
    #[test]
    fn a_rise_the_reached_share_cannot_make_is_dead_not_a_leak() {
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [10_000, 20_000, 40_000]));
        let mut m = session(&types);
        // Garbage's estimates at snapshots 0 and 2, and what the search counted, by hand.
        let dead = |m: &CityModel, name: &str, first: u64, last: u64| {
            m.dead_rise_at(0, 2, name, |i| if i == 0 { first } else { last })
        };
        let sampled = |unreached, looked_for| {
            Some(DeadRise::Unreached {
                unreached,
                looked_for,
            })
        };
        let mut paths = map_paths();
        paths.targeted = vec![("Item".into(), 40), ("Garbage".into(), 100)];
        paths.unreached = vec![("Garbage".into(), 96)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), sampled(96, 100));
        let s = suspects(&m);
        assert!(s.iter().all(|s| s.leaking[0] != "Garbage"), "{s:?}");
        // A type none of whose samples it missed, and a type that did not rise: no verdict.
        assert_eq!(dead(&m, "Item", 10_000, 40_000), None);
        assert_eq!(dead(&m, "Garbage", 40_000, 40_000), None);
        paths.unreached = vec![("Garbage".into(), 60)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), None);
        let s = suspects(&m);
        assert!(
            s.iter().any(|s| s.leaking.iter().any(|t| t == "Garbage")),
            "{s:?}"
        );
        // Sampled by bytes: 96 of 100 samples missed were big garbage arrays standing for few
        // objects each, the 4 reached small live ones standing for many. By weight the rise is
        // alive, where by count it looked dead.
        paths.unreached = vec![("Garbage".into(), 96)];
        paths.targeted_weight = vec![("Item".into(), 40.0), ("Garbage".into(), 96.0 + 4_000.0)];
        paths.unreached_weight = vec![("Garbage".into(), 96.0)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), None);
        // And the other way: the few reached stand for few objects.
        paths.targeted_weight = vec![("Garbage".into(), 9_600.0 + 4.0)];
        paths.unreached_weight = vec![("Garbage".into(), 9_600.0)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), sampled(96, 100));
    }

    /// A complete search counts every object of a type that a root reaches. Counted after
    /// most of the estimates' rise and holding a quarter of it at most, the rise is dead
    /// (generational ZGC's young collections keeping millions of sampled strings for their
    /// weak references), and no suspect; counted more, or before the rise, no verdict.
    #[test]
    fn a_rise_the_search_counted_none_of_is_dead_not_a_leak() {
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [10_000, 30_000, 40_000]));
        let mut m = session(&types);
        let mut paths = map_paths();
        paths.counted = vec![("Garbage".into(), 9_000), ("Item".into(), 20_010)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        let objects =
            |m: &CityModel, i| m.value(m.find(&["p", "Garbage"]).unwrap(), i, Metric::Objects);
        let dead = |m: &CityModel, name: &str| m.dead_rise_at(0, 2, name, |i| objects(m, i));
        assert_eq!(
            dead(&m, "Garbage"),
            Some(DeadRise::Counted {
                objects: 9_000,
                estimated: 40_000,
                at: 2
            })
        );
        let s = suspects(&m);
        assert!(s.iter().all(|s| s.leaking[0] != "Garbage"), "{s:?}");
        assert!(s.iter().any(|s| s.leaking[0] == "Item"), "{s:?}");
        // A quarter of the rise there, the rest garbage: dead still (generational ZGC's ring of
        // live strings counted among millions estimated). More, and the rise lives.
        paths.counted = vec![("Garbage".into(), 17_500)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert!(dead(&m, "Garbage").is_some());
        paths.counted = vec![("Garbage".into(), 17_501)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage"), None);
        // A search that left roots unsearched counts only what it passed.
        paths.counted = vec![("Garbage".into(), 9_000)];
        paths.stopped_early = true;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage"), None);
        // Counted at snapshot 1, before most of a rise (10,000 to 12,000 of 40,000): what came
        // after waits for the next count.
        paths.stopped_early = false;
        m.frames_mut_for_tests(2).paths = None;
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [10_000, 12_000, 40_000]));
        let mut late = session(&types);
        late.frames_mut_for_tests(1).paths = Some(std::sync::Arc::new(paths));
        assert_eq!(dead(&late, "Garbage"), None);
    }

    /// A rise that rests on what may be garbage (pending births of a short-lived type,
    /// promoted objects no marking has freed) is no leak: not backed; without paths, listed apart
    /// (no search looked); the same rise counted is.
    #[test]
    fn a_rise_within_the_doubt_is_not_a_backed_suspect() {
        use memcity_proto::v1::{exactness, Exactness};
        let counted = session(&[("Item", [100, 10_100, 20_100]), ("Other", [500, 500, 500])]);
        let s = suspects(&counted);
        assert_eq!(s.len(), 1);
        assert!(s[0].confirmed && s[0].is_backed(), "{s:?}");
        let mut doubtful = counted.clone();
        doubtful.frames_mut_for_tests(2).exactness = Some(Exactness {
            source: exactness::Source::Estimate as i32,
            ..Default::default()
        });
        let item = doubtful.node_named("Item").unwrap();
        doubtful.set_unconfirmed_for_tests(2, item, 20_000);
        let s = suspects(&doubtful);
        assert_eq!(s.len(), 1, "still rising");
        assert!(!s[0].confirmed && !s[0].is_backed(), "{s:?}");
        assert_eq!(s[0].backed_growth, 0);
    }

    /// A steady server's buffers (`byte[]`, sampled by bytes, so each estimate is ±110,000 of
    /// 600,000): from a walk's count as the server started they wobble up within their errors,
    /// a line through them rises past the ends' errors, the numbers back none of it (the last
    /// estimate's pending births may be garbage), and no point of the later half goes beyond
    /// what the others leave in doubt. Neither a suspect nor rising. The same rise, each point
    /// counted, is named.
    #[test]
    fn a_rise_within_every_points_doubt_is_not_listed_as_rising() {
        use memcity_proto::v1::{exactness, Exactness};
        let counts = [
            450_000u64, 540_000, 530_000, 560_000, 545_000, 590_000, 580_000, 610_000,
        ];
        let mut m = CityModel::new();
        for (i, &n) in counts.iter().enumerate() {
            let rows = vec![
                (vec!["p".into(), "byte[]".into()], "Type".into(), n, n * 40),
                (
                    vec!["p".into(), "Other".into()],
                    "Type".into(),
                    400_000,
                    400_000 * 16,
                ),
            ];
            m.push_tree(
                i as u64 * 2_000,
                (n + 400_000, n * 40 + 400_000 * 16),
                &rows,
                Vec::new(),
            );
        }
        let counted = m.clone();
        let named: Vec<String> = suspects(&counted)
            .into_iter()
            .flat_map(|s| s.leaking)
            .collect();
        assert_eq!(named, ["byte[]"], "counted, the rise is named");
        let id = m.node_named("byte[]").unwrap();
        for i in 1..counts.len() {
            m.frames_mut_for_tests(i).exactness = Some(Exactness {
                source: exactness::Source::Estimate as i32,
                ..Default::default()
            });
            m.set_error_for_tests(i, id, 110_000);
        }
        // The last estimate's pending births, which no GC has judged yet.
        m.set_unconfirmed_for_tests(counts.len() - 1, id, 50_000);
        m.set_window(None);
        let trend = type_trends(&m)
            .into_iter()
            .find(|(name, _)| name == "byte[]")
            .unwrap()
            .1;
        assert!(
            trend.is_leak(100.0) && !trend.within_doubt(false) && trend.steady() == 0.0,
            "the premise: a rise beyond the ends' doubt, not beyond the later half's: {trend:?}"
        );
        assert!(suspects(&m).is_empty(), "{:?}", suspects(&m));
    }

    #[test]
    fn nothing_growing_names_nothing_and_growth_under_the_floor_is_not_a_leak() {
        let mut m = session(&[("Item", [100, 100, 100]), ("Small", [10, 30, 50])]);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        assert!(suspects(&m).is_empty());
    }

    #[test]
    fn an_empty_session_has_no_suspects() {
        assert!(suspects(&CityModel::new()).is_empty());
    }
}
