//! The live heap as a pprof profile (`memcity export SOURCE --pprof FILE`), so that `go tool
//! pprof`, Pyroscope (`/ingest?format=pprof`) and the other tools that read pprof open a JVM's
//! heap at one snapshot, or its growth between two.
//!
//! **What a sample is.** One group of live objects: an allocated type at an allocation site
//! (and a thread, when the classifier chain has one), with Go's heap-profile values
//! `inuse_objects` (count) and `inuse_space` (bytes), live bytes shown first. Its stack is the
//! site's frames with the allocated type as the leaf above them, as Java heap profilers draw
//! allocations, so a flame graph ends in the type; the type is also the label `type`, the thread
//! the label `thread`. The type frames come in a mapping of their own, [`TYPES_MAPPING`], so
//! that `go tool pprof -hide=memcity-types` ranks the allocating methods instead.
//!
//! **Where the sites come from.** With a `site` level in the classifier chain
//! (`classifiers=package:type:site`), from the grouping tree: the agent split each type's live
//! objects (exact at a walk, estimated between walks) by the weights of its live allocation
//! samples at each site, and put what no sample stands for under `(unsampled)`
//! (`agent/src/census/tree.rs`). Those are the numbers the city and `memcity report` show, so the
//! profile says what they say.
//!
//! Without a `site` level but with lifetimes (the agent's defaults), every snapshot still
//! carries its survivors: the live samples by type and site (`Survivors`), of which one sample
//! in [`LIFETIME_SITES_EVERY`] recorded its site, each standing for that many. That is the same
//! estimator on a thinned sample, so it is sound: each type's total from the tree is split by
//! those weights exactly as the agent splits it for a `site` level (scaled down when they stand
//! for more than the total, the rest `(unsampled)`), with the error of the thinner sample (about
//! `sqrt(8)` times a `site` level's). Its limits are stated in the profile's comment and by the
//! command: the survivors are counted at the agent's last sweep of its samples (for a walk, the
//! one that predicted its pause, just before it), the agent sends the 1,000 largest (type, site) groups and folds the rest into the
//! types' `(unsampled)`, and objects of memcity's own threads (package `(memcity)`) have no
//! site. A session with neither (`lifetimes=off`, or a Memory Cities export without sites) is
//! refused with what to run instead.
//!
//! **Errors.** Site numbers are estimates. Each sample's 95 % error is kept
//! ([`HeapProfile::errors`]) and summed up in the profile's comment (`go tool pprof -comments`):
//! the largest stack's error and the mean relative error weighted by objects.

use memcity_proto::sites::SiteFrames;
use std::collections::{HashMap, HashSet};
use std::io::Write;

use memcity_proto::pprof::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use memcity_proto::sampled::{self, apportion};

use crate::model::{CityModel, Metric, NodeId, Role, ROOT};

/// The mapping of the allocated types' frames: hide them with `go tool pprof
/// -hide=memcity-types` to rank allocation sites. A `-` cannot occur in a Java name, so the
/// regex matches no method.
pub const TYPES_MAPPING: &str = "memcity-types";

/// The function standing for the library frames the agent skipped between a site's top frames
/// and its first application frame (a site name's `...`).
pub const LIBRARY_FRAMES: &str = "(library frames)";

/// The site of a type's objects that no live sample stands for, as the agent's tree names it.
pub const UNSAMPLED: &str = "(unsampled)";

/// One sample in this many records its site when the agent keeps lifetimes without a `site`
/// level, each standing for this many (the agent's `sampling::LIFETIME_SITES_EVERY`).
pub const LIFETIME_SITES_EVERY: f64 = 8.0;

/// Where a profile's allocation sites come from (see the module's head).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SiteSource {
    /// The grouping tree's `site` level.
    Tree,
    /// The lifetimes' survivors, for a session grouped without a `site` level.
    Survivors,
}

/// A snapshot's live heap, or the growth between two, as a pprof profile.
#[derive(Debug, Clone, PartialEq)]
pub struct HeapProfile {
    pub profile: Profile,
    pub sites: SiteSource,
    /// Distinct stacks among the samples (threads of one stack are samples of their own).
    pub stacks: usize,
    /// The 95 % error of each sample's objects, in `profile.sample`'s order (0 where exact).
    pub errors: Vec<u64>,
}

/// Why a profile cannot be made. Snapshots are numbered from 1 here, as people count them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PprofError {
    #[error("snapshot {number} does not exist: the session holds snapshots 1 to {len}")]
    NoSnapshot { number: usize, len: usize },
    #[error(
        "the growth is measured from an earlier snapshot to a later one: snapshot {since} is not \
         before snapshot {at}"
    )]
    SinceNotBefore { since: usize, at: usize },
    #[error(
        "snapshot {number} has no allocation sites: it is grouped by {classifiers} and carries \
         no lifetimes' survivors to take them from; run the agent with \
         classifiers=package:type:site (or keep lifetimes on, its default)"
    )]
    NoSites { number: usize, classifiers: String },
    #[error(
        "snapshot {number} is a heap dump, and heap dumps record no allocation sites (HotSpot \
         writes none): a pprof profile is of sites. Export it with --memory-cities, read it with \
         `memcity report`, or record the live JVM with the agent for its sites"
    )]
    DumpHasNoSites { number: usize },
    #[error(
        "snapshot {since} takes its sites from {since_source} and snapshot {at} from \
         {at_source}: their numbers are not comparable; choose two snapshots grouped by the same \
         classifiers"
    )]
    MixedSources {
        since: usize,
        since_source: &'static str,
        at: usize,
        at_source: &'static str,
    },
}

/// One frame of an allocation site's name, as the agent writes it (`Class.method(File.java:12)`
/// frames joined by ` <- `, `...` where it skipped library frames; `agent/src/sampling/mod.rs`
/// `site_name`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SiteFrame<'a> {
    /// `java.util.LinkedList.linkLast`; for what is not a method (`(unsampled)`, `(other
    /// sites)`, skipped frames), the name memcity gives it.
    pub function: &'a str,
    /// `LinkedList.java`; `None` when the class names no source file.
    pub file: Option<&'a str>,
    /// `None` when the method has no line numbers.
    pub line: Option<u32>,
}

/// The frames of a site, top (the allocating method) first, `...` where library frames were
/// skipped.
pub fn site_frames<'a>(site: &SiteFrames<&'a str>) -> Vec<SiteFrame<'a>> {
    site.listed().into_iter().map(frame).collect()
}

fn frame(text: &str) -> SiteFrame<'_> {
    let text = text.trim();
    if text == memcity_proto::sites::SKIPPED {
        return SiteFrame {
            function: LIBRARY_FRAMES,
            file: None,
            line: None,
        };
    }
    // `Class.method(where)`: the method's name holds no `(` and no `.`; anything else (memcity's
    // own names, which start with `(`) is one opaque frame.
    let method = text
        .strip_suffix(')')
        .and_then(|t| t.split_once('('))
        .filter(|(name, _)| name.contains('.') && !name.ends_with('.'));
    let Some((function, place)) = method else {
        return SiteFrame {
            function: text,
            file: None,
            line: None,
        };
    };
    let (file, line) = match place.rsplit_once(':') {
        Some((file, line)) if line.parse::<u32>().is_ok() => (file, line.parse().ok()),
        _ => (place, None),
    };
    let file = (!file.is_empty() && file != "Unknown Source").then_some(file);
    SiteFrame {
        function,
        file,
        line,
    }
}

/// What a sample is made of.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key<'a> {
    ty: Option<&'a str>,
    site: Option<&'a str>,
    thread: Option<&'a str>,
}

/// A group's values and their 95 % errors.
#[derive(Debug, Clone, Copy, Default)]
struct Amount {
    objects: i64,
    bytes: i64,
    error: f64,
}

type Groups<'a> = HashMap<Key<'a>, Amount>;

fn to_i64(v: u64) -> i64 {
    v.min(i64::MAX as u64) as i64
}

/// The groups of snapshot `index` from its tree: every leaf present there, named by its type,
/// site and thread levels. `None` when no leaf has a site.
fn tree_groups(model: &CityModel, index: usize) -> Option<Groups<'_>> {
    let values = model.values(index);
    let present = |id: NodeId| values.binary_search_by_key(&id, |v| v.0).is_ok();
    let mut groups = Groups::new();
    let mut sites = false;
    for &(id, objects, bytes) in values {
        let node = model.node(id);
        if id == ROOT || node.children.iter().any(|&c| present(c)) {
            continue;
        }
        let mut key = Key {
            ty: None,
            site: None,
            thread: None,
        };
        let mut at = Some(id);
        while let Some(n) = at.filter(|&n| n != ROOT) {
            let info = model.node(n);
            match info.role {
                Role::Type => key.ty = Some(info.name.as_str()),
                Role::AllocationSite => key.site = Some(info.name.as_str()),
                Role::Thread => key.thread = Some(info.name.as_str()),
                _ => {}
            }
            at = info.parent;
        }
        sites |= key.site.is_some();
        let amount = groups.entry(key).or_default();
        amount.objects += to_i64(objects);
        amount.bytes += to_i64(bytes);
        // Leaves merged into one key (two packages' types of one name) add their errors.
        amount.error += model.error(id, index, Metric::Objects) as f64;
    }
    sites.then_some(groups)
}

/// The sampling interval in force at snapshot `index` (the agent adapts it to its cost), else the
/// one the session started with (0: every allocation); `None` when the source does not say (a
/// Memory Cities export).
pub fn sampling_interval(model: &CityModel, index: usize) -> Option<u64> {
    model
        .frame(index)
        .and_then(|f| f.cost)
        .map(|c| c.sampling_interval)
        .filter(|&i| i > 0)
        .or_else(|| model.handshake.as_ref().map(|h| h.sampling_interval))
}

/// The groups of snapshot `index` from its survivors (see the module's head): each type's total
/// split by its survivors' weights. `None` when it carried none, or has no type level to scale.
fn survivor_groups(model: &CityModel, index: usize) -> Option<Groups<'_>> {
    let survivors = model.survivors(index)?;
    let interval = sampling_interval(model, index).unwrap_or(0);
    let mut by_type: HashMap<&str, Vec<(&str, f64)>> = HashMap::new();
    for (ty, site, objects) in survivors {
        // Site "" is no site: the agent's group of the survivors past its cap.
        if !site.is_empty() && objects > 0.0 {
            by_type.entry(ty).or_default().push((site, objects));
        }
    }
    let values = model.values(index);
    let mut groups = Groups::new();
    let mut types = false;
    for &(id, objects, bytes) in values {
        let node = model.node(id);
        if node.role != Role::Type {
            continue;
        }
        types = true;
        let ty = node.name.as_str();
        let error = model.error(id, index, Metric::Objects) as f64;
        let sites = by_type.get(ty).filter(|_| !node.own);
        let Some(sites) = sites else {
            let amount = groups
                .entry(Key {
                    ty: Some(ty),
                    site: None,
                    thread: None,
                })
                .or_default();
            amount.objects += to_i64(objects);
            amount.bytes += to_i64(bytes);
            amount.error += error;
            continue;
        };
        let weights: Vec<f64> = sites.iter().map(|s| s.1).collect();
        let sampled: f64 = weights.iter().sum();
        let covered = (sampled.round() as u64).min(objects);
        let parts = apportion(covered, &weights);
        let mut byte_weights: Vec<f64> = parts.iter().map(|&o| o as f64).collect();
        byte_weights.push((objects - covered) as f64);
        let byte_parts = apportion(bytes, &byte_weights);
        // A thinned sample's weight: each site-recording sample stands for this many objects.
        let size = if objects > 0 {
            bytes as f64 / objects as f64
        } else {
            1.0
        };
        let per_sample = LIFETIME_SITES_EVERY * sampled::weight(interval, size);
        let scale = covered as f64 / sampled.max(1.0);
        for (i, &(site, weight)) in sites.iter().enumerate() {
            if parts[i] == 0 {
                continue;
            }
            // A sum of samples of weight `w` each: variance `total * (w - 1)`, scaled like
            // the count.
            let variance = weight * (per_sample - 1.0).max(0.0) * scale * scale;
            let amount = groups
                .entry(Key {
                    ty: Some(ty),
                    site: Some(site),
                    thread: None,
                })
                .or_default();
            amount.objects += to_i64(parts[i]);
            amount.bytes += to_i64(byte_parts[i]);
            amount.error += 1.96 * variance.sqrt();
        }
        if objects > covered {
            let amount = groups
                .entry(Key {
                    ty: Some(ty),
                    site: Some(UNSAMPLED),
                    thread: None,
                })
                .or_default();
            amount.objects += to_i64(objects - covered);
            amount.bytes += to_i64(byte_parts[sites.len()]);
            // The rest carries the type's own uncertainty.
            amount.error += error;
        }
    }
    types.then_some(groups)
}

/// The groups of snapshot `index` and where their sites came from.
fn groups_at(model: &CityModel, index: usize) -> Result<(Groups<'_>, SiteSource), PprofError> {
    if let Some(groups) = tree_groups(model, index) {
        return Ok((groups, SiteSource::Tree));
    }
    if let Some(groups) = survivor_groups(model, index) {
        return Ok((groups, SiteSource::Survivors));
    }
    if model.frame(index).is_some_and(|f| f.dump.is_some()) {
        return Err(PprofError::DumpHasNoSites { number: index + 1 });
    }
    let classifiers = model
        .frame(index)
        .map(|f| f.classifiers.join(":"))
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| {
            let roles = model.level_roles();
            if roles.is_empty() {
                "nothing".to_string()
            } else {
                roles.join(":")
            }
        });
    Err(PprofError::NoSites {
        number: index + 1,
        classifiers,
    })
}

fn source_name(source: SiteSource) -> &'static str {
    match source {
        SiteSource::Tree => "its site level",
        SiteSource::Survivors => "the lifetimes' survivors",
    }
}

/// Builds the profile of snapshot `at` (an index), or of the growth since snapshot `since`:
/// each stack's values at `at` less those at `since`, negative where it shrank (pprof's tools
/// take negative values, as in Go's delta profiles), stacks unchanged left out.
pub fn heap_profile(
    model: &CityModel,
    at: usize,
    since: Option<usize>,
) -> Result<HeapProfile, PprofError> {
    let len = model.len();
    for index in std::iter::once(at).chain(since) {
        if index >= len {
            return Err(PprofError::NoSnapshot {
                number: index + 1,
                len,
            });
        }
    }
    if let Some(since) = since.filter(|&s| s >= at) {
        return Err(PprofError::SinceNotBefore {
            since: since + 1,
            at: at + 1,
        });
    }
    let (mut groups, sites) = groups_at(model, at)?;
    if let Some(since) = since {
        let (before, before_sites) = groups_at(model, since)?;
        if before_sites != sites {
            return Err(PprofError::MixedSources {
                since: since + 1,
                since_source: source_name(before_sites),
                at: at + 1,
                at_source: source_name(sites),
            });
        }
        for (key, old) in before {
            let amount = groups.entry(key).or_default();
            amount.objects -= old.objects;
            amount.bytes -= old.bytes;
            // Both ends' errors, added as `CityModel::significant_growth` adds them.
            amount.error += old.error;
        }
    }
    let mut groups: Vec<(Key, Amount)> = groups
        .into_iter()
        .filter(|(_, a)| a.objects != 0 || a.bytes != 0)
        .collect();
    // Largest first, so that the file reads like the report; ties by name for a stable file.
    groups.sort_by(|a, b| {
        b.1.objects
            .abs()
            .cmp(&a.1.objects.abs())
            .then_with(|| a.0.cmp(&b.0))
    });
    let mut builder = Builder::default();
    let mut stacks: HashSet<Vec<u64>> = HashSet::new();
    let mut errors = Vec::with_capacity(groups.len());
    let mut samples = Vec::with_capacity(groups.len());
    let type_key = builder.string("type");
    let thread_key = builder.string("thread");
    for (key, amount) in &groups {
        let mut locations = Vec::new();
        if let Some(ty) = key.ty {
            locations.push(builder.location(ty, None, None, MappingKind::Types));
        }
        let frames = key.site.map(|name| site_frames(&model.site(name)));
        for f in frames.unwrap_or_default() {
            locations.push(builder.location(f.function, f.file, f.line, MappingKind::Java));
        }
        stacks.insert(locations.clone());
        let mut label = Vec::new();
        if let Some(ty) = key.ty {
            label.push(Label {
                key: type_key,
                str: builder.string(ty),
                ..Default::default()
            });
        }
        if let Some(thread) = key.thread {
            label.push(Label {
                key: thread_key,
                str: builder.string(thread),
                ..Default::default()
            });
        }
        samples.push(Sample {
            location_id: locations,
            value: vec![amount.objects, amount.bytes],
            label,
        });
        errors.push(amount.error.round() as u64);
    }
    let comment = comments(model, at, since, sites, &groups);
    let mut profile = builder.finish(model, at, since, comment);
    profile.sample = samples;
    Ok(HeapProfile {
        profile,
        sites,
        stacks: stacks.len(),
        errors,
    })
}

/// The lines `go tool pprof -comments` prints: what the profile is, where its sites come from,
/// and how far off its numbers may be.
fn comments(
    model: &CityModel,
    at: usize,
    since: Option<usize>,
    sites: SiteSource,
    groups: &[(Key, Amount)],
) -> Vec<String> {
    let mut lines = Vec::new();
    let who = match &model.handshake {
        Some(h) if h.pid != 0 => format!(" of JVM pid {} ({})", h.pid, h.jvm_version),
        _ => String::new(),
    };
    let kind = |index: usize| match model.frame(index) {
        Some(f) if f.is_estimated() => "an estimate from allocation samples",
        Some(f) if f.exactness.is_some() => "a heap walk: types exact",
        _ => "a snapshot",
    };
    lines.push(match since {
        None => format!(
            "memcity: the live heap{who} at snapshot {} of {} ({})",
            at + 1,
            model.len(),
            kind(at)
        ),
        Some(since) => format!(
            "memcity: the live heap's growth{who} from snapshot {} ({}) to snapshot {} ({}) of {}: \
             each stack's values at the later less the earlier, negative where it shrank",
            since + 1,
            kind(since),
            at + 1,
            kind(at),
            model.len()
        ),
    });
    lines.push(match sites {
        SiteSource::Tree => format!(
            "Allocation sites: each type's live objects split by its live allocation samples \
             (the agent's `site` level; {}); what \
             no sample stands for is {UNSAMPLED}. The leaf frame and the label `type` are the \
             allocated type (-hide={TYPES_MAPPING} ranks the allocating methods).",
            interval_text(sampling_interval(model, at))
        ),
        SiteSource::Survivors => format!(
            "Allocation sites: this session has no `site` level, so each type's live objects \
             are split by the lifetimes' survivors, in which one sample in {LIFETIME_SITES_EVERY} \
             records its site and stands for {LIFETIME_SITES_EVERY} (about 2.8 times the error \
             of a `site` level; counted at the agent's last sweep; past its 1,000 largest \
             groups, and for memcity's own objects, no site). For the full sample run the \
             agent with classifiers=package:type:site. The leaf frame and the label `type` are \
             the allocated type (-hide={TYPES_MAPPING} ranks the allocating methods)."
        ),
    });
    let total: f64 = groups
        .iter()
        .map(|(_, a)| a.objects.unsigned_abs() as f64)
        .sum();
    let errors: f64 = groups.iter().map(|(_, a)| a.error).sum();
    if errors == 0.0 && !groups.is_empty() {
        lines.push(
            "Numbers at a site are estimates; this source states no error for them (a recording \
             from an agent older than its errors, or a Memory Cities export)."
                .to_string(),
        );
    } else if let Some((key, largest)) = groups.first() {
        let share = |e: f64, of: f64| if of > 0.0 { 100.0 * e / of } else { 0.0 };
        let name = match (key.ty, key.site) {
            (Some(ty), Some(site)) => format!("{ty} at {site}"),
            (Some(name), None) | (None, Some(name)) => name.to_string(),
            (None, None) => "the heap".to_string(),
        };
        lines.push(format!(
            "Numbers at a site are estimates; 95 % error of the objects: +/-{} ({:.1} %) on the \
             largest stack ({name}), +/-{:.1} % of a stack's objects on average (weighted by \
             objects).",
            largest.error.round() as u64,
            share(largest.error, largest.objects.unsigned_abs() as f64),
            share(errors, total)
        ));
    }
    lines.push(format!(
        "{LIBRARY_FRAMES} stands for library frames the agent did not record between a site's \
         top frames and its first application frame."
    ));
    lines
}

fn interval_text(interval: Option<u64>) -> String {
    match interval {
        Some(0) => "every allocation sampled".to_string(),
        Some(bytes) => format!(
            "one sample per {} allocated at this snapshot",
            crate::units::bytes(bytes)
        ),
        None => "the source does not say how often".to_string(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum MappingKind {
    Java = 1,
    Types = 2,
}

/// The profile's tables, each entry once.
#[derive(Default)]
struct Builder {
    strings: Vec<String>,
    string_ids: HashMap<String, i64>,
    functions: Vec<Function>,
    function_ids: HashMap<(i64, i64), u64>,
    locations: Vec<Location>,
    location_ids: HashMap<(u64, i64, MappingKind), u64>,
}

impl Builder {
    fn string(&mut self, s: &str) -> i64 {
        if self.strings.is_empty() {
            // pprof's rule: entry 0 is the empty string.
            self.strings.push(String::new());
            self.string_ids.insert(String::new(), 0);
        }
        if let Some(&id) = self.string_ids.get(s) {
            return id;
        }
        let id = self.strings.len() as i64;
        self.strings.push(s.to_string());
        self.string_ids.insert(s.to_string(), id);
        id
    }

    fn location(
        &mut self,
        function: &str,
        file: Option<&str>,
        line: Option<u32>,
        mapping: MappingKind,
    ) -> u64 {
        let name = self.string(function);
        let filename = self.string(file.unwrap_or(""));
        let next = self.functions.len() as u64 + 1;
        let function_id = *self.function_ids.entry((name, filename)).or_insert(next);
        if function_id == next {
            self.functions.push(Function {
                id: function_id,
                name,
                system_name: name,
                filename,
                start_line: 0,
            });
        }
        let line = i64::from(line.unwrap_or(0));
        let next = self.locations.len() as u64 + 1;
        let id = *self
            .location_ids
            .entry((function_id, line, mapping))
            .or_insert(next);
        if id == next {
            self.locations.push(Location {
                id,
                mapping_id: mapping as u64,
                address: 0,
                line: vec![Line { function_id, line }],
                is_folded: false,
            });
        }
        id
    }

    fn finish(
        mut self,
        model: &CityModel,
        at: usize,
        since: Option<usize>,
        comment: Vec<String>,
    ) -> Profile {
        let value_type = |b: &mut Self, ty: &str, unit: &str| ValueType {
            r#type: b.string(ty),
            unit: b.string(unit),
        };
        let sample_type = vec![
            value_type(&mut self, "inuse_objects", "count"),
            value_type(&mut self, "inuse_space", "bytes"),
        ];
        let period_type = Some(value_type(&mut self, "space", "bytes"));
        let default_sample_type = self.string("inuse_space");
        // The Java frames' mapping has no name: pprof matches -focus, -hide and the like
        // against mapping names too, and any name would catch every method for some regex.
        let mapping = [(MappingKind::Java, ""), (MappingKind::Types, TYPES_MAPPING)]
            .into_iter()
            .map(|(kind, file)| Mapping {
                id: kind as u64,
                filename: self.string(file),
                // Named already: readers must not try to symbolize addresses.
                has_functions: true,
                has_filenames: true,
                has_line_numbers: true,
                ..Default::default()
            })
            .collect();
        let comment = comment.iter().map(|c| self.string(c)).collect();
        let start_ms = model.handshake.as_ref().map_or(0, |h| h.start_time_unix_ms);
        let time_ms = |index: usize| model.frame(index).map_or(0, |f| f.time_ms);
        let nanos = |ms: u64| to_i64(ms.saturating_mul(1_000_000));
        // A source without a start time (a Memory Cities export) leaves the time unset rather
        // than dating the heap in 1970.
        let when = |index: usize| match start_ms {
            0 => 0,
            start => nanos(start + time_ms(index)),
        };
        let (time_nanos, duration_nanos) = match since {
            None => (when(at), 0),
            Some(since) => (
                when(since),
                nanos(time_ms(at).saturating_sub(time_ms(since))),
            ),
        };
        Profile {
            sample_type,
            sample: Vec::new(),
            mapping,
            location: self.locations,
            function: self.functions,
            string_table: self.strings,
            time_nanos,
            duration_nanos,
            period_type,
            // The interval the snapshot's estimates rest on: the one in force then, which the
            // agent adapts to its cost, rather than the handshake's first one.
            period: to_i64(sampling_interval(model, at).unwrap_or(0)),
            comment,
            default_sample_type,
        }
    }
}

/// `profile` encoded and gzipped, as pprof files are stored and sent (`go tool pprof` reads
/// both, Pyroscope's `/ingest?format=pprof` takes this). Public for the agent, which pushes the
/// same bytes.
pub fn encode_gzipped(profile: &Profile) -> Vec<u8> {
    use prost::Message;
    let raw = profile.encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(
        Vec::with_capacity(raw.len() / 4 + 64),
        flate2::Compression::default(),
    );
    gz.write_all(&raw)
        .and_then(|()| gz.finish())
        .expect("writing into a Vec cannot fail")
}

#[cfg(test)]
mod tests {
    /// A site's frames from its name, as a recording without site tables gives them.
    fn site_frames_of(name: &str) -> Vec<SiteFrame<'_>> {
        site_frames(&memcity_proto::sites::split(name))
    }

    use super::*;
    use memcity_proto::v1::{
        exactness, stream_message::Kind, Exactness, Handshake, Lifetimes, Node, Snapshot,
        StreamMessage, StringTable, Survivors, WalkCost,
    };
    use prost::Message;
    use std::io::Read;

    const START_MS: u64 = 1_700_000_000_000;
    const INTERVAL: u64 = 512 * 1024;

    const MAIN: &str = "app.Main.main(Main.java:33)";
    const LINK_LAST: &str =
        "java.util.LinkedList.linkLast(LinkedList.java:146) <- ... <- app.Main.main(Main.java:33)";
    const NEW_STRING: &str = "java.lang.StringConcatHelper.newString(StringConcatHelper.java:387) \
                              <- ... <- app.Main.main(Main.java:33)";

    /// The session's names; string ids are positions plus one.
    const NAMES: [&str; 13] = [
        "app",
        "app.Person",
        MAIN,
        "java.util",
        "java.util.LinkedList$Node",
        LINK_LAST,
        UNSAMPLED,
        "java.lang",
        "java.lang.String",
        NEW_STRING,
        "main",
        "worker-1",
        crate::model::MEMCITY,
    ];

    fn id(name: &str) -> u32 {
        NAMES.iter().position(|n| *n == name).unwrap() as u32 + 1
    }

    /// A leaf and the levels above it, by name: `[package, type, site]` (or whatever the chain
    /// is), with its objects (24 bytes each) and their 95 % error.
    type Leaf<'a> = (&'a [&'a str], u64, u64);

    /// A snapshot of `leaves`; inner nodes sum their children (errors too, as an upper bound).
    fn snapshot(seq: u64, time_ms: u64, estimate: bool, leaves: &[Leaf]) -> Snapshot {
        fn insert(node: &mut Node, path: &[&str], objects: u64, error: u64) {
            node.objects += objects;
            node.bytes += objects * 24;
            node.objects_error += error;
            node.bytes_error += error * 24;
            node.estimated |= error > 0;
            let Some((first, rest)) = path.split_first() else {
                return;
            };
            let at = match node.children.iter().position(|c| c.name == id(first)) {
                Some(at) => at,
                None => {
                    node.children.push(Node {
                        name: id(first),
                        ..Default::default()
                    });
                    node.children.len() - 1
                }
            };
            insert(&mut node.children[at], rest, objects, error);
        }
        let mut root = Node::default();
        for (path, objects, error) in leaves {
            insert(&mut root, path, *objects, *error);
        }
        Snapshot {
            seq,
            time_ms,
            root: Some(root),
            exactness: Some(Exactness {
                source: if estimate {
                    exactness::Source::Estimate
                } else {
                    exactness::Source::Walk
                } as i32,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn session(classifiers: &[&str], snapshots: Vec<Snapshot>) -> CityModel {
        let msg = |kind| StreamMessage { kind: Some(kind) };
        let mut m = CityModel::new();
        m.apply(&msg(Kind::Handshake(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            pid: 42,
            jvm_version: "17.0.15".into(),
            classifiers: classifiers.iter().map(|c| c.to_string()).collect(),
            sampling_interval: INTERVAL,
            start_time_unix_ms: START_MS,
            ..Default::default()
        })))
        .unwrap();
        m.apply(&msg(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names: NAMES.iter().map(|n| n.to_string()).collect(),
        })))
        .unwrap();
        for s in snapshots {
            m.apply(&msg(Kind::Snapshot(s))).unwrap();
        }
        m
    }

    /// A leak of people in a linked list, with their names steady: a walk at 1 s, an estimate
    /// at 3 s.
    fn leak() -> CityModel {
        let person: &[&str] = &["app", "app.Person", MAIN];
        let node: &[&str] = &["java.util", "java.util.LinkedList$Node", LINK_LAST];
        let node_unsampled: &[&str] = &["java.util", "java.util.LinkedList$Node", UNSAMPLED];
        let string: &[&str] = &["java.lang", "java.lang.String", NEW_STRING];
        session(
            &["package", "type", "site"],
            vec![
                snapshot(
                    0,
                    1000,
                    false,
                    &[
                        (person, 100_000, 9_000),
                        (node, 90_000, 8_000),
                        (node_unsampled, 10_000, 0),
                        (string, 50_000, 6_000),
                    ],
                ),
                snapshot(
                    1,
                    3000,
                    true,
                    &[
                        (person, 300_000, 15_000),
                        (node, 300_000, 14_000),
                        (string, 50_000, 6_000),
                    ],
                ),
            ],
        )
    }

    /// What a reader of the file gets: the bytes gunzipped and decoded.
    fn read_back(profile: &Profile) -> Profile {
        let gz = encode_gzipped(profile);
        assert_eq!(&gz[..2], &[0x1f, 0x8b], "gzip's magic");
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        Profile::decode(&raw[..]).unwrap()
    }

    fn text(p: &Profile, index: i64) -> &str {
        &p.string_table[index as usize]
    }

    /// A sample's stack, leaf first, as `function file:line` (mapping name when types').
    fn stack(p: &Profile, sample: &Sample) -> Vec<String> {
        sample
            .location_id
            .iter()
            .map(|&id| {
                let loc = &p.location[id as usize - 1];
                assert_eq!(loc.id, id, "locations are listed by id");
                assert_eq!(loc.line.len(), 1);
                let f = &p.function[loc.line[0].function_id as usize - 1];
                let mapping = &p.mapping[loc.mapping_id as usize - 1];
                let mut s = text(p, f.name).to_string();
                if !text(p, f.filename).is_empty() {
                    s += &format!(" {}:{}", text(p, f.filename), loc.line[0].line);
                }
                if !text(p, mapping.filename).is_empty() {
                    s += &format!(" [{}]", text(p, mapping.filename));
                }
                s
            })
            .collect()
    }

    fn labels(p: &Profile, sample: &Sample) -> Vec<(String, String)> {
        sample
            .label
            .iter()
            .map(|l| (text(p, l.key).to_string(), text(p, l.str).to_string()))
            .collect()
    }

    #[test]
    fn site_names_become_frames_with_files_and_lines() {
        let f = |function, file, line| SiteFrame {
            function,
            file,
            line,
        };
        assert_eq!(
            site_frames_of(LINK_LAST),
            [
                f(
                    "java.util.LinkedList.linkLast",
                    Some("LinkedList.java"),
                    Some(146)
                ),
                f(LIBRARY_FRAMES, None, None),
                f("app.Main.main", Some("Main.java"), Some(33)),
            ]
        );
        // The agent's other spellings (`agent/src/names.rs` `frame_name`): no line numbers, no
        // source file, a hidden class's frame, constructors and lambdas.
        assert_eq!(
            site_frames_of("a.B.<init>(B.java) <- a.B.lambda$run$0(Unknown Source)"),
            [
                f("a.B.<init>", Some("B.java"), None),
                f("a.B.lambda$run$0", None, None)
            ]
        );
        assert_eq!(
            site_frames_of(
                "java.lang.invoke.DirectMethodHandle$Holder.invokeStatic(DirectMethodHandle$Holder)"
            ),
            [f(
                "java.lang.invoke.DirectMethodHandle$Holder.invokeStatic",
                Some("DirectMethodHandle$Holder"),
                None
            )]
        );
        // memcity's names for what is no frame stay whole.
        for name in [UNSAMPLED, "(other sites)", "(site not recorded)"] {
            assert_eq!(site_frames_of(name), [f(name, None, None)]);
        }
    }

    #[test]
    fn a_snapshot_is_a_heap_profile_by_allocation_stack() {
        let model = leak();
        let built = heap_profile(&model, 1, None).unwrap();
        assert_eq!(built.sites, SiteSource::Tree);
        let p = read_back(&built.profile);
        assert_eq!(p, built.profile, "the encoding keeps every field");
        assert_eq!(p.string_table[0], "", "pprof's rule");
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (text(&p, t.r#type), text(&p, t.unit)))
            .collect();
        assert_eq!(
            types,
            [("inuse_objects", "count"), ("inuse_space", "bytes")]
        );
        assert_eq!(text(&p, p.default_sample_type), "inuse_space");
        let period = p.period_type.unwrap();
        assert_eq!(
            (text(&p, period.r#type), text(&p, period.unit), p.period),
            ("space", "bytes", INTERVAL as i64)
        );
        assert_eq!(p.time_nanos, (START_MS + 3000) as i64 * 1_000_000);
        assert_eq!(p.duration_nanos, 0);
        // Largest first; the type is the leaf frame, in the types' own mapping.
        let rows: Vec<(Vec<String>, Vec<i64>)> = p
            .sample
            .iter()
            .map(|s| (stack(&p, s), s.value.clone()))
            .collect();
        assert_eq!(
            rows,
            [
                (
                    vec![
                        "app.Person [memcity-types]".to_string(),
                        "app.Main.main Main.java:33".to_string(),
                    ],
                    vec![300_000, 7_200_000]
                ),
                (
                    vec![
                        "java.util.LinkedList$Node [memcity-types]".to_string(),
                        "java.util.LinkedList.linkLast LinkedList.java:146".to_string(),
                        "(library frames)".to_string(),
                        "app.Main.main Main.java:33".to_string(),
                    ],
                    vec![300_000, 7_200_000]
                ),
                (
                    vec![
                        "java.lang.String [memcity-types]".to_string(),
                        "java.lang.StringConcatHelper.newString StringConcatHelper.java:387"
                            .to_string(),
                        "(library frames)".to_string(),
                        "app.Main.main Main.java:33".to_string(),
                    ],
                    vec![50_000, 1_200_000]
                ),
            ]
        );
        assert_eq!(
            labels(&p, &p.sample[0]),
            [("type".to_string(), "app.Person".to_string())]
        );
        assert_eq!(built.errors, [15_000, 14_000, 6_000]);
        assert_eq!(built.stacks, 3);
        // One function and one location per frame, however many stacks share it.
        let mains = p
            .function
            .iter()
            .filter(|f| text(&p, f.name) == "app.Main.main")
            .count();
        assert_eq!((mains, p.location.len(), p.function.len()), (1, 7, 7));
        let comments: Vec<&str> = p.comment.iter().map(|&c| text(&p, c)).collect();
        assert!(
            comments[0].contains("at snapshot 2 of 2 (an estimate from allocation samples)")
                && comments[0].contains("pid 42"),
            "{comments:#?}"
        );
        assert!(comments[1].contains("512.0 KiB"), "{comments:#?}");
        // The largest stack: 15,000 of 300,000 is 5 %; all: 35,000 of 650,000 is 5.4 %.
        assert!(
            comments[2].contains("+/-15000 (5.0 %) on the largest stack (app.Person at app.Main")
                && comments[2].contains("+/-5.4 % of a stack's objects on average"),
            "{comments:#?}"
        );
    }

    #[test]
    fn growth_keeps_what_shrank_and_leaves_out_what_did_not_change() {
        let model = leak();
        let built = heap_profile(&model, 1, Some(0)).unwrap();
        let p = read_back(&built.profile);
        let rows: Vec<(String, Vec<i64>, u64)> = p
            .sample
            .iter()
            .zip(&built.errors)
            .map(|(s, &e)| (stack(&p, s)[1].clone(), s.value.clone(), e))
            .collect();
        // The strings did not change: no sample. The unsampled nodes went: negative.
        assert_eq!(
            rows,
            [
                (
                    "java.util.LinkedList.linkLast LinkedList.java:146".to_string(),
                    vec![210_000, 5_040_000],
                    22_000
                ),
                (
                    "app.Main.main Main.java:33".to_string(),
                    vec![200_000, 4_800_000],
                    24_000
                ),
                ("(unsampled)".to_string(), vec![-10_000, -240_000], 0),
            ]
        );
        // From the earlier snapshot, for as long as the two are apart.
        assert_eq!(
            (p.time_nanos, p.duration_nanos),
            ((START_MS + 1000) as i64 * 1_000_000, 2_000_000_000)
        );
        let comments: Vec<&str> = p.comment.iter().map(|&c| text(&p, c)).collect();
        assert!(
            comments[0].contains("growth")
                && comments[0].contains("from snapshot 1 (a heap walk: types exact) to snapshot 2"),
            "{comments:#?}"
        );
    }

    #[test]
    fn threads_are_labels_and_share_a_stack() {
        let at = |thread| -> Vec<&str> { vec!["app.Person", MAIN, thread] };
        let (main, worker) = (at("main"), at("worker-1"));
        let model = session(
            &["type", "site", "thread"],
            vec![snapshot(
                0,
                0,
                true,
                &[(&main, 600, 60), (&worker, 400, 50)],
            )],
        );
        let built = heap_profile(&model, 0, None).unwrap();
        let p = &built.profile;
        assert_eq!((p.sample.len(), built.stacks), (2, 1));
        assert_eq!(p.sample[0].location_id, p.sample[1].location_id);
        assert_eq!(
            labels(p, &p.sample[1]),
            [
                ("type".to_string(), "app.Person".to_string()),
                ("thread".to_string(), "worker-1".to_string())
            ]
        );
    }

    /// Without a site level: `app.Person` (1,000,000 objects, ±20,000) and `java.lang.String`
    /// (500,000), and memcity's own strings (2,000); survivors of Person at two sites and of
    /// String at one, more than String's total, plus the agent's group past its cap.
    fn survivors_session() -> CityModel {
        let lifetimes = Lifetimes {
            alive: vec![
                Survivors {
                    r#type: id("app.Person"),
                    site: id(MAIN),
                    by_gc_age: vec![600_000.0, 0.0, 100_000.0],
                },
                Survivors {
                    r#type: id("app.Person"),
                    site: id(LINK_LAST),
                    by_gc_age: vec![200_000.0],
                },
                Survivors {
                    r#type: id("java.lang.String"),
                    site: id(NEW_STRING),
                    by_gc_age: vec![800_000.0],
                },
                Survivors {
                    r#type: id("java.util.LinkedList$Node"),
                    site: 0,
                    by_gc_age: vec![50_000.0],
                },
            ],
            ..Default::default()
        };
        let mut s = snapshot(
            0,
            0,
            true,
            &[
                (&["app", "app.Person"], 1_000_000, 20_000),
                (&["java.lang", "java.lang.String"], 500_000, 0),
                (&[crate::model::MEMCITY, "java.lang.String"], 2_000, 0),
            ],
        );
        s.lifetimes = Some(lifetimes);
        s.cost = Some(WalkCost {
            sampling_interval: 64 * 1024,
            ..Default::default()
        });
        session(&["package", "type"], vec![s])
    }

    #[test]
    fn without_a_site_level_the_survivors_split_each_type() {
        let model = survivors_session();
        let built = heap_profile(&model, 0, None).unwrap();
        assert_eq!(built.sites, SiteSource::Survivors);
        let p = read_back(&built.profile);
        let rows: Vec<(Vec<String>, Vec<i64>, u64)> = p
            .sample
            .iter()
            .zip(&built.errors)
            .map(|(s, &e)| (stack(&p, s), s.value.clone(), e))
            .collect();
        // A sample of a 24-byte object at the snapshot's 64 KiB interval stands for
        // 1 / (1 - exp(-24 / 65536)) = 2731.17 objects; one in 8 records its site: 21849.3.
        let per_sample = 8.0 / -(-24.0f64 / 65536.0).exp_m1();
        let error = |weight: f64, scale: f64| {
            (1.96 * (weight * (per_sample - 1.0)).sqrt() * scale).round() as u64
        };
        let person = |site: &str| vec!["app.Person [memcity-types]".to_string(), site.to_string()];
        assert_eq!(
            rows,
            [
                // Person: 900,000 of 1,000,000 sampled, as weighed; the rest unsampled, with
                // the type's own error.
                (
                    person("app.Main.main Main.java:33"),
                    vec![700_000, 16_800_000],
                    error(700_000.0, 1.0)
                ),
                // String: 800,000 sampled of 500,000: scaled down to the total.
                (
                    vec![
                        "java.lang.String [memcity-types]".to_string(),
                        "java.lang.StringConcatHelper.newString StringConcatHelper.java:387"
                            .to_string(),
                        "(library frames)".to_string(),
                        "app.Main.main Main.java:33".to_string(),
                    ],
                    vec![500_000, 12_000_000],
                    error(800_000.0, 500_000.0 / 800_000.0)
                ),
                (
                    vec![
                        "app.Person [memcity-types]".to_string(),
                        "java.util.LinkedList.linkLast LinkedList.java:146".to_string(),
                        "(library frames)".to_string(),
                        "app.Main.main Main.java:33".to_string(),
                    ],
                    vec![200_000, 4_800_000],
                    error(200_000.0, 1.0)
                ),
                (person("(unsampled)"), vec![100_000, 2_400_000], 20_000),
                // memcity's own strings have no site; survivors without one are left out.
                (
                    vec!["java.lang.String [memcity-types]".to_string()],
                    vec![2_000, 48_000],
                    0
                ),
            ]
        );
        let comments: Vec<&str> = p.comment.iter().map(|&c| text(&p, c)).collect();
        assert!(
            comments[1].contains("no `site` level")
                && comments[1].contains("classifiers=package:type:site"),
            "{comments:#?}"
        );
    }

    #[test]
    fn a_source_without_a_handshake_states_no_time_nor_period() {
        // A Memory Cities export: roles by label, no JVM, no start time, no interval.
        let mut m = CityModel::new();
        let row = |path: &[&str], role: &str, objects: u64| {
            (
                path.iter().map(|p| p.to_string()).collect(),
                role.to_string(),
                objects,
                objects * 16,
            )
        };
        m.push_tree(
            2000,
            (30, 480),
            &[
                row(&["app.Person"], "Type", 30),
                row(&["app.Person", MAIN], "Allocation Site", 30),
            ],
            Vec::new(),
        );
        let built = heap_profile(&m, 0, None).unwrap();
        let p = &built.profile;
        assert_eq!((p.time_nanos, p.period), (0, 0));
        assert_eq!(p.sample[0].value, [30, 480]);
        let comments: Vec<&str> = p.comment.iter().map(|&c| text(p, c)).collect();
        assert!(
            comments[1].contains("the source does not say how often")
                && comments[2].contains("states no error"),
            "{comments:#?}"
        );
    }

    #[test]
    fn what_cannot_be_a_profile_says_why() {
        let model = leak();
        assert_eq!(
            heap_profile(&model, 2, None),
            Err(PprofError::NoSnapshot { number: 3, len: 2 })
        );
        assert_eq!(
            heap_profile(&model, 1, Some(5)),
            Err(PprofError::NoSnapshot { number: 6, len: 2 })
        );
        assert_eq!(
            heap_profile(&model, 0, Some(1)),
            Err(PprofError::SinceNotBefore { since: 2, at: 1 })
        );
        assert_eq!(
            heap_profile(&model, 1, Some(1)),
            Err(PprofError::SinceNotBefore { since: 2, at: 2 })
        );
        // Grouped by package and type, without lifetimes: nothing tells the sites.
        let plain = session(
            &["package", "type"],
            vec![snapshot(0, 0, false, &[(&["app", "app.Person"], 10, 0)])],
        );
        let err = heap_profile(&plain, 0, None).unwrap_err();
        assert_eq!(
            err,
            PprofError::NoSites {
                number: 1,
                classifiers: "package:type".into()
            }
        );
        assert!(
            err.to_string()
                .contains("run the agent with classifiers=package:type:site"),
            "{err}"
        );
        // One end from a site level, the other from survivors: not comparable.
        let mut mixed = survivors_session();
        let msg = |kind| StreamMessage { kind: Some(kind) };
        let mut later = snapshot(
            1,
            1000,
            true,
            &[(&["app", "app.Person", MAIN], 1_000_000, 20_000)],
        );
        later.classifiers = vec!["package".into(), "type".into(), "site".into()];
        mixed.apply(&msg(Kind::Snapshot(later))).unwrap();
        assert!(matches!(
            heap_profile(&mixed, 1, Some(0)),
            Err(PprofError::MixedSources {
                since: 1,
                at: 2,
                ..
            })
        ));
        assert!(heap_profile(&mixed, 1, None).is_ok());
    }
}
