//! Lifetimes of the sampled objects: where they are born, how long they live, where they die
//! (shared/papers/allocation-and-death-plots.txt), from the `Lifetimes` each snapshot carries.
//!
//! Contexts are classes, as the paper trims them: the allocation context is the class of the
//! allocation site's first application frame, the death context the class of the holder a heap
//! walk last saw the object in. A stock JVM cannot tell the method that dropped an object's last
//! reference (Elephant Tracks instruments every pointer store for that), so the last holder seen
//! is what memcity can observe; an object no walk saw alive died "unseen".
//!
//! Deaths are kept aggregated per snapshot, per (site, death context, age bucket), never one
//! record per death: a snapshot's cells are at most its deaths (2,000 at the agent's cap) and
//! usually far fewer, and they answer any time window of death and any minimum age. Survivors
//! are kept from the newest snapshot only: they are the censored part of the survival curves.

use memcity_proto::sites::{self, SiteFrames};
use std::collections::HashMap;

use memcity_proto::frames::is_library_frame;
use memcity_proto::v1;

/// The allocation context of deaths whose site the agent did not know (site 0).
pub const UNKNOWN_SITE: &str = "(unknown site)";
/// The death context of objects no heap walk or path search saw held (`holder_type` 0): most
/// died young, between two of them.
pub const DIED_UNSEEN: &str = "(died unseen)";
/// What a death context is, for every place that shows one (the report, the view's caption).
pub const DEATH_CONTEXT_NOTE: &str = "death context = the class last seen holding the object \
     (a stock JVM cannot tell the method that dropped its last reference); \
     (died unseen) = no heap walk or path search saw it held";
/// The paper's line between short- and long-lived objects: those that died within 8 MiB of
/// allocation never escape a nursery of that size.
pub const SHORT_LIVED_BYTES: u64 = 8 << 20;

/// Ages in GCs come in the agent's buckets (`Survivors.by_gc_age`): 0, 1, 2-3, 4-7, 8-15,
/// 16-31, 32 or more. Deaths are bucketed the same way so that they meet the survivors in one
/// survival curve; a death's age is an upper bound anyway when several GCs ran between two
/// snapshots.
pub const GC_AGE_BUCKETS: usize = 7;
/// Ages in allocated bytes by powers of two: bucket `b` holds `[2^b, 2^(b+1))` (0 and 1 in 0).
pub const BYTES_AGE_BUCKETS: usize = 64;

/// The `by_gc_age` bucket of an age in GCs.
pub fn gc_age_bucket(age: u64) -> usize {
    ((u64::BITS - age.leading_zeros()) as usize).min(GC_AGE_BUCKETS - 1)
}

/// The least age in GCs of a bucket.
pub fn gc_age_floor(bucket: usize) -> u64 {
    match bucket {
        0 => 0,
        b => 1 << (b.min(GC_AGE_BUCKETS - 1) - 1),
    }
}

/// A bucket as people read it: "0", "1", "2-3", ..., "32+".
pub fn gc_age_label(bucket: usize) -> String {
    let floor = gc_age_floor(bucket);
    match bucket {
        0 | 1 => floor.to_string(),
        b if b >= GC_AGE_BUCKETS - 1 => format!("{floor}+"),
        b => format!("{floor}-{}", gc_age_floor(b + 1) - 1),
    }
}

/// The bytes-age bucket of an age in allocated bytes.
pub fn bytes_age_bucket(bytes: u64) -> usize {
    (u64::BITS - 1).saturating_sub(bytes.max(1).leading_zeros()) as usize
}

/// The ages `[low, high)` in allocated bytes of a bytes-age bucket.
pub fn bytes_age_range(bucket: usize) -> (u64, u64) {
    let low = if bucket == 0 { 0 } else { 1u64 << bucket };
    let high = 1u64.checked_shl(bucket as u32 + 1).unwrap_or(u64::MAX);
    (low, high)
}

/// The class of a frame named `com.x.Foo.bar(Foo.java:12)`: the method's name has no dot, so
/// the class is everything before the last dot ahead of the parenthesis.
pub fn frame_class(frame: &str) -> &str {
    let method = frame.split_once('(').map_or(frame, |(m, _)| m).trim();
    method.rsplit_once('.').map_or(method, |(class, _)| class)
}

/// The allocation context of a site name (its frames as the name lists them, for a name with
/// no site table: `memcity_proto::sites::split`).
pub fn allocation_context(site: &str) -> &str {
    context_of(&sites::split(site))
}

/// The allocation context of a site: the first application frame, else the first frame, trimmed
/// to its class (the paper trims contexts to one method, then groups methods by class).
pub fn context_of<'a>(site: &SiteFrames<&'a str>) -> &'a str {
    let mut frames = site.frames.iter().copied();
    let Some(first) = frames.next() else {
        return UNKNOWN_SITE;
    };
    let frame = if is_library_frame(first) {
        frames.find(|f| !is_library_frame(f)).unwrap_or(first)
    } else {
        first
    };
    frame_class(frame)
}

/// Which deaths a query counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Filter {
    /// Only deaths at least this old in GCs. Ages are bucketed (see [`GC_AGE_BUCKETS`]): a
    /// bucket counts when its least age is at least this, so give a bucket's floor (0, 1, 2, 4,
    /// 8, 16, 32) to count exactly those.
    pub min_gc_age: u64,
    /// Only deaths booked by snapshots taken from `from_ms` to `to_ms` (inclusive, in
    /// milliseconds since the session started).
    pub from_ms: u64,
    pub to_ms: u64,
}

impl Default for Filter {
    fn default() -> Self {
        Self {
            min_gc_age: 0,
            from_ms: 0,
            to_ms: u64::MAX,
        }
    }
}

impl Filter {
    fn admits_time(&self, time_ms: u64) -> bool {
        (self.from_ms..=self.to_ms).contains(&time_ms)
    }

    fn admits_age(&self, gc_bucket: usize) -> bool {
        gc_age_floor(gc_bucket) >= self.min_gc_age
    }
}

/// Objects by age: in GCs ([`GC_AGE_BUCKETS`]) and in allocated bytes ([`BYTES_AGE_BUCKETS`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Ages {
    pub by_gc: [f64; GC_AGE_BUCKETS],
    pub by_bytes: [f64; BYTES_AGE_BUCKETS],
}

impl Default for Ages {
    fn default() -> Self {
        Self {
            by_gc: [0.0; GC_AGE_BUCKETS],
            by_bytes: [0.0; BYTES_AGE_BUCKETS],
        }
    }
}

impl Ages {
    /// The bucket holding the median object by age in GCs (`None` when empty).
    pub fn median_gc_bucket(&self) -> Option<usize> {
        median_bucket(&self.by_gc)
    }

    /// The bucket holding the median object by age in allocated bytes.
    pub fn median_bytes_bucket(&self) -> Option<usize> {
        median_bucket(&self.by_bytes)
    }

    /// Objects that survived at least one GC (and died, for deaths).
    pub fn survived_a_gc(&self) -> f64 {
        self.by_gc[1..].iter().sum()
    }

    /// Objects that lived less than [`SHORT_LIVED_BYTES`] of allocation.
    pub fn short_lived(&self) -> f64 {
        self.by_bytes[..bytes_age_bucket(SHORT_LIVED_BYTES)]
            .iter()
            .sum()
    }
}

fn median_bucket(histogram: &[f64]) -> Option<usize> {
    let total: f64 = histogram.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let mut below = 0.0;
    histogram.iter().position(|&w| {
        below += w;
        below >= total / 2.0
    })
}

/// Deaths from one allocation context to one death context.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub alloc: String,
    pub death: String,
    /// Objects the dead samples stand for (the sum of their weights).
    pub objects: f64,
    pub samples: u64,
    pub ages: Ages,
    /// The holders' fields the objects were last seen in, with their objects, most first
    /// (none for deaths no walk or search saw held).
    pub fields: Vec<(String, f64)>,
}

/// The lives of one allocation site, or of one allocation context's sites together.
#[derive(Debug, Clone, PartialEq)]
pub struct Lives {
    /// The site's name, or the context's for a context.
    pub name: String,
    /// The allocation context (the name itself for a context).
    pub context: String,
    /// Objects that died, their samples and their ages.
    pub died: f64,
    pub samples: u64,
    pub ages: Ages,
    /// Objects alive in the newest snapshot, by age in GCs: the censored part of `survival`.
    pub alive: [f64; GC_AGE_BUCKETS],
    /// Kaplan-Meier: the share still alive past each GC-age bucket.
    pub survival: [f64; GC_AGE_BUCKETS],
}

impl Lives {
    /// Of the objects that died, the share that survived a GC first: the nursery escapees
    /// that a generational collector keeps until an old collection (the paper's problem case).
    pub fn escape_share(&self) -> f64 {
        share(self.ages.survived_a_gc(), self.died)
    }

    /// Of the objects that died, the share that lived less than [`SHORT_LIVED_BYTES`].
    pub fn short_lived_share(&self) -> f64 {
        share(self.ages.short_lived(), self.died)
    }
}

fn share(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        part / whole
    } else {
        0.0
    }
}

/// Kaplan-Meier over age buckets: `deaths[k]` died at age bucket `k`, `censored[k]` are still
/// alive at that age (so at risk up to it, and gone from view after). Returns the share
/// surviving past each bucket. Deaths in a bucket count before its censored ones, as usual.
pub fn kaplan_meier(
    deaths: &[f64; GC_AGE_BUCKETS],
    censored: &[f64; GC_AGE_BUCKETS],
) -> [f64; GC_AGE_BUCKETS] {
    let mut at_risk: f64 = deaths.iter().chain(censored).sum();
    let mut alive = 1.0;
    let mut out = [1.0; GC_AGE_BUCKETS];
    for k in 0..GC_AGE_BUCKETS {
        if at_risk > 0.0 {
            alive *= 1.0 - (deaths[k] / at_risk).min(1.0);
        }
        out[k] = alive;
        at_risk -= deaths[k] + censored[k];
    }
    out
}

/// A session's lifetimes, fed one snapshot's `Lifetimes` at a time.
#[derive(Debug, Clone, Default)]
pub struct Lifetimes {
    /// Context names (allocation and death contexts share ids: a class can be both).
    contexts: Vec<String>,
    context_ids: HashMap<String, u32>,
    sites: Vec<Site>,
    site_ids: HashMap<String, u32>,
    /// Names of the holders' fields ("" when none was seen).
    fields: Vec<String>,
    field_ids: HashMap<String, u32>,
    batches: Vec<Batch>,
    /// The newest snapshot's survivors, per site.
    alive: HashMap<u32, [f64; GC_AGE_BUCKETS]>,
    /// `Lifetimes.allocated_bytes` of the newest snapshot.
    allocated_bytes: u64,
}

#[derive(Debug, Clone)]
struct Site {
    name: String,
    context: u32,
}

/// One snapshot's deaths, aggregated.
#[derive(Debug, Clone)]
struct Batch {
    time_ms: u64,
    booked: u64,
    cells: Vec<Cell>,
}

/// A cell's `(site, death context, field, GC-age bucket, bytes-age bucket)`.
type CellKey = (u32, u32, u32, u8, u8);

#[derive(Debug, Clone, Copy)]
struct Cell {
    site: u32,
    death: u32,
    /// The holder's field (`Lifetimes::fields`).
    field: u32,
    gc: u8,
    bytes: u8,
    objects: f64,
    samples: u32,
}

impl Lifetimes {
    /// Adds the `Lifetimes` of the snapshot taken at `time_ms`; `name` resolves string ids
    /// through the session's string table.
    pub fn add<'a>(
        &mut self,
        time_ms: u64,
        lifetimes: &v1::Lifetimes,
        name: impl Fn(u32) -> &'a str,
    ) {
        self.add_with_sites(time_ms, lifetimes, name, sites::split);
    }

    /// As [`add`](Self::add), with `frames` giving a site's frames by its name (the session's
    /// string table's sites; a name's split for recordings without them).
    pub fn add_with_sites<'a>(
        &mut self,
        time_ms: u64,
        lifetimes: &v1::Lifetimes,
        name: impl Fn(u32) -> &'a str,
        frames: impl Fn(&'a str) -> SiteFrames<&'a str>,
    ) {
        let mut cells: HashMap<CellKey, (f64, u32)> = HashMap::new();
        for death in &lifetimes.deaths {
            let site = self.site(death.site, &name, &frames);
            let holder = match death.holder_type {
                0 => DIED_UNSEEN,
                id => name(id),
            };
            let holder = self.context(holder);
            let field = match (death.holder_type, death.holder_field) {
                (0, _) | (_, 0) => self.field(""),
                (_, id) => self.field(name(id)),
            };
            let born = death.born.unwrap_or_default();
            let died = death.died.unwrap_or_default();
            // GCs survived: the one that freed it is not one of them.
            let gc = gc_age_bucket(died.gc.saturating_sub(born.gc).saturating_sub(1)) as u8;
            let bytes =
                bytes_age_bucket(died.allocated_bytes.saturating_sub(born.allocated_bytes)) as u8;
            let cell = cells.entry((site, holder, field, gc, bytes)).or_default();
            cell.0 += death.weight;
            cell.1 += 1;
        }
        let mut cells: Vec<Cell> = cells
            .into_iter()
            .map(
                |((site, death, field, gc, bytes), (objects, samples))| Cell {
                    site,
                    death,
                    field,
                    gc,
                    bytes,
                    objects,
                    samples,
                },
            )
            .collect();
        cells.sort_by_key(|c| (c.site, c.death, c.field, c.gc, c.bytes));
        self.batches.push(Batch {
            time_ms,
            booked: lifetimes.deaths_booked,
            cells,
        });
        self.alive.clear();
        for survivors in &lifetimes.alive {
            let site = self.site(survivors.site, &name, &frames);
            let ages = self.alive.entry(site).or_insert([0.0; GC_AGE_BUCKETS]);
            for (bucket, &weight) in survivors.by_gc_age.iter().enumerate() {
                ages[bucket.min(GC_AGE_BUCKETS - 1)] += weight;
            }
        }
        self.allocated_bytes = lifetimes.allocated_bytes;
    }

    fn field(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.field_ids.get(name) {
            return id;
        }
        let id = self.fields.len() as u32;
        self.fields.push(name.to_string());
        self.field_ids.insert(name.to_string(), id);
        id
    }

    fn context(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.context_ids.get(name) {
            return id;
        }
        let id = self.contexts.len() as u32;
        self.contexts.push(name.to_string());
        self.context_ids.insert(name.to_string(), id);
        id
    }

    fn site<'a>(
        &mut self,
        id: u32,
        name: &impl Fn(u32) -> &'a str,
        frames: &impl Fn(&'a str) -> SiteFrames<&'a str>,
    ) -> u32 {
        let site = match id {
            0 => UNKNOWN_SITE,
            id => name(id),
        };
        if let Some(&id) = self.site_ids.get(site) {
            return id;
        }
        let context = match id {
            0 => self.context(UNKNOWN_SITE),
            _ => self.context(context_of(&frames(site))),
        };
        let id = self.sites.len() as u32;
        self.sites.push(Site {
            name: site.to_string(),
            context,
        });
        self.site_ids.insert(site.to_string(), id);
        id
    }

    /// Whether any snapshot carried lifetimes.
    pub fn is_empty(&self) -> bool {
        self.batches.is_empty()
    }

    /// Snapshots that carried lifetimes.
    pub fn snapshots(&self) -> usize {
        self.batches.len()
    }

    /// Deaths the agent booked in the filter's time window (whether it sent each or a scaled
    /// choice of them), and the dead samples it sent.
    pub fn deaths_booked(&self, filter: &Filter) -> (u64, u64) {
        self.batches
            .iter()
            .filter(|b| filter.admits_time(b.time_ms))
            .fold((0, 0), |(booked, sent), b| {
                let cells: u64 = b.cells.iter().map(|c| c.samples as u64).sum();
                (booked + b.booked, sent + cells)
            })
    }

    /// Objects alive in the newest snapshot that carried lifetimes.
    pub fn alive(&self) -> f64 {
        self.alive.values().flatten().sum()
    }

    /// Bytes the application allocated by the newest snapshot, by the agent's estimate.
    pub fn allocated_bytes(&self) -> u64 {
        self.allocated_bytes
    }

    fn cells<'a>(&'a self, filter: &'a Filter) -> impl Iterator<Item = &'a Cell> + 'a {
        self.batches
            .iter()
            .filter(|b| filter.admits_time(b.time_ms))
            .flat_map(|b| &b.cells)
            .filter(|c| filter.admits_age(c.gc as usize))
    }

    /// Deaths from each allocation context to each death context, most objects first.
    pub fn pairs(&self, filter: &Filter) -> Vec<Pair> {
        let mut pairs: HashMap<(u32, u32), (Pair, HashMap<u32, f64>)> = HashMap::new();
        for cell in self.cells(filter) {
            let alloc = self.sites[cell.site as usize].context;
            let (pair, fields) = pairs.entry((alloc, cell.death)).or_insert_with(|| {
                let pair = Pair {
                    alloc: self.contexts[alloc as usize].clone(),
                    death: self.contexts[cell.death as usize].clone(),
                    objects: 0.0,
                    samples: 0,
                    ages: Ages::default(),
                    fields: Vec::new(),
                };
                (pair, HashMap::new())
            });
            if !self.fields[cell.field as usize].is_empty() {
                *fields.entry(cell.field).or_default() += cell.objects;
            }
            pair.objects += cell.objects;
            pair.samples += cell.samples as u64;
            pair.ages.by_gc[cell.gc as usize] += cell.objects;
            pair.ages.by_bytes[cell.bytes as usize] += cell.objects;
        }
        let mut pairs: Vec<Pair> = pairs
            .into_values()
            .map(|(mut pair, fields)| {
                pair.fields = fields
                    .into_iter()
                    .map(|(id, objects)| (self.fields[id as usize].clone(), objects))
                    .collect();
                pair.fields
                    .sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                pair
            })
            .collect();
        pairs.sort_by(|a, b| {
            b.objects
                .total_cmp(&a.objects)
                .then_with(|| (&a.alloc, &a.death).cmp(&(&b.alloc, &b.death)))
        });
        pairs
    }

    /// The lives of every allocation site with deaths in the filter's window or survivors,
    /// most nursery escapees first. Only the time window applies: the shares are over all ages.
    pub fn sites(&self, filter: &Filter) -> Vec<Lives> {
        self.lives(filter, By::Site)
    }

    /// As [`Lifetimes::sites`], the sites of each allocation context together.
    pub fn allocation_contexts(&self, filter: &Filter) -> Vec<Lives> {
        self.lives(filter, By::Context)
    }

    /// The lives of one allocation context (`None` when it has no deaths nor survivors).
    pub fn allocation_context(&self, context: &str, filter: &Filter) -> Option<Lives> {
        self.lives(filter, By::Context)
            .into_iter()
            .find(|l| l.name == context)
    }

    fn lives(&self, filter: &Filter, by: By) -> Vec<Lives> {
        let key = |site: u32| match by {
            By::Site => site,
            By::Context => self.sites[site as usize].context,
        };
        let all_ages = Filter {
            min_gc_age: 0,
            ..*filter
        };
        #[derive(Default)]
        struct Acc {
            site: u32,
            died: f64,
            samples: u64,
            ages: Ages,
            alive: [f64; GC_AGE_BUCKETS],
        }
        let mut groups: HashMap<u32, Acc> = HashMap::new();
        for cell in self.cells(&all_ages) {
            let acc = groups.entry(key(cell.site)).or_insert_with(|| Acc {
                site: cell.site,
                ..Default::default()
            });
            acc.died += cell.objects;
            acc.samples += cell.samples as u64;
            acc.ages.by_gc[cell.gc as usize] += cell.objects;
            acc.ages.by_bytes[cell.bytes as usize] += cell.objects;
        }
        for (&site, ages) in &self.alive {
            let acc = groups.entry(key(site)).or_insert_with(|| Acc {
                site,
                ..Default::default()
            });
            for (sum, &w) in acc.alive.iter_mut().zip(ages) {
                *sum += w;
            }
        }
        let mut out: Vec<Lives> = groups
            .into_values()
            .map(|acc| {
                let site = &self.sites[acc.site as usize];
                let context = self.contexts[site.context as usize].clone();
                Lives {
                    name: match by {
                        By::Site => site.name.clone(),
                        By::Context => context.clone(),
                    },
                    context,
                    survival: kaplan_meier(&acc.ages.by_gc, &acc.alive),
                    died: acc.died,
                    samples: acc.samples,
                    ages: acc.ages,
                    alive: acc.alive,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            b.ages
                .survived_a_gc()
                .total_cmp(&a.ages.survived_a_gc())
                .then(b.died.total_cmp(&a.died))
                .then_with(|| a.name.cmp(&b.name))
        });
        out
    }
}

/// What [`Lives`] are grouped by.
#[derive(Clone, Copy)]
enum By {
    Site,
    Context,
}

#[cfg(test)]
mod tests {
    use super::*;
    use v1::{Death, Moment, Survivors};

    const NAMES: [&str; 9] = [
        "",
        "com.x.Foo.bar(Foo.java:12)",
        "java.util.ArrayList.grow(ArrayList.java:237) <- ... <- com.x.Foo.baz(Foo.java:40)",
        "com.x.Cache",
        "com.y.Bar.run(Bar.java:7)",
        "com.y.Bar",
        "byte[]",
        "entries",
        "next",
    ];

    fn name(id: u32) -> &'static str {
        NAMES[id as usize]
    }

    /// A death of `weight` objects from `site`, held last by `holder`, born at GC 0 and 0 bytes,
    /// freed by GC `gcs + 1` (having survived `gcs`) after `bytes` of allocation.
    fn death(site: u32, holder: u32, weight: f64, gcs: u64, bytes: u64) -> Death {
        Death {
            r#type: 6,
            site,
            weight,
            size: 16,
            born: Some(Moment::default()),
            died: Some(Moment {
                time_ms: 0,
                gc: gcs + 1,
                allocated_bytes: bytes,
            }),
            holder_type: holder,
            ..Default::default()
        }
    }

    fn lifetimes(deaths: Vec<Death>, alive: Vec<Survivors>) -> v1::Lifetimes {
        v1::Lifetimes {
            deaths_booked: deaths.len() as u64,
            deaths,
            alive,
            allocated_bytes: 1 << 30,
        }
    }

    #[test]
    fn contexts_are_the_first_application_frames_class() {
        assert_eq!(allocation_context(NAMES[1]), "com.x.Foo");
        assert_eq!(allocation_context(NAMES[2]), "com.x.Foo");
        assert_eq!(
            allocation_context("java.util.HashMap.resize(HashMap.java:700)"),
            "java.util.HashMap",
            "no application frame: the first frame"
        );
        assert_eq!(
            allocation_context(
                "com.x.Foo$Inner.<init>(Foo.java:3) <- com.x.Main.main(Main.java:1)"
            ),
            "com.x.Foo$Inner"
        );
        assert_eq!(
            allocation_context("com.x.Foo.lambda$run$0(Unknown Source)"),
            "com.x.Foo"
        );
        assert_eq!(allocation_context("Main.main(Main.java:5)"), "Main");
    }

    #[test]
    fn age_buckets_follow_the_agents_survivors() {
        let buckets: Vec<usize> = [0, 1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 1000]
            .into_iter()
            .map(gc_age_bucket)
            .collect();
        assert_eq!(buckets, [0, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6]);
        let floors: Vec<u64> = (0..GC_AGE_BUCKETS).map(gc_age_floor).collect();
        assert_eq!(floors, [0, 1, 2, 4, 8, 16, 32]);
        let labels: Vec<String> = (0..GC_AGE_BUCKETS).map(gc_age_label).collect();
        assert_eq!(labels, ["0", "1", "2-3", "4-7", "8-15", "16-31", "32+"]);
        assert_eq!(bytes_age_bucket(0), 0);
        assert_eq!(bytes_age_bucket(1), 0);
        assert_eq!(bytes_age_bucket(SHORT_LIVED_BYTES - 1), 22);
        assert_eq!(bytes_age_bucket(SHORT_LIVED_BYTES), 23);
        assert_eq!(bytes_age_bucket(u64::MAX), 63);
        assert_eq!(bytes_age_range(23), (8 << 20, 16 << 20));
        assert_eq!(bytes_age_range(63).1, u64::MAX);
    }

    #[test]
    fn kaplan_meier_counts_the_censored_as_at_risk_until_their_age() {
        let mut deaths = [0.0; GC_AGE_BUCKETS];
        let mut censored = [0.0; GC_AGE_BUCKETS];
        deaths[0] = 10.0;
        deaths[2] = 5.0;
        censored[1] = 5.0;
        censored[4] = 5.0;
        // At risk 25: 10 die (15/25 = 0.6 left); 5 leave at 1; of 10 at risk at 2, 5 die.
        assert_eq!(
            kaplan_meier(&deaths, &censored),
            [0.6, 0.6, 0.3, 0.3, 0.3, 0.3, 0.3]
        );
        assert_eq!(
            kaplan_meier(&[0.0; GC_AGE_BUCKETS], &[0.0; GC_AGE_BUCKETS]),
            [1.0; GC_AGE_BUCKETS]
        );
    }

    #[test]
    fn deaths_pair_allocation_contexts_with_their_last_holders() {
        let mut l = Lifetimes::default();
        l.add(
            1000,
            &lifetimes(
                vec![
                    Death {
                        holder_field: 7,
                        ..death(1, 3, 100.0, 0, 1 << 20)
                    },
                    Death {
                        holder_field: 8,
                        ..death(2, 3, 50.0, 2, 64 << 20)
                    },
                    death(1, 0, 30.0, 0, 1000),
                    death(0, 5, 7.0, 1, 1 << 20),
                    death(4, 5, 20.0, 40, 1 << 33),
                ],
                vec![],
            ),
            name,
        );
        let pairs = l.pairs(&Filter::default());
        let summary: Vec<(&str, &str, f64, u64)> = pairs
            .iter()
            .map(|p| (p.alloc.as_str(), p.death.as_str(), p.objects, p.samples))
            .collect();
        assert_eq!(
            summary,
            [
                ("com.x.Foo", "com.x.Cache", 150.0, 2),
                ("com.x.Foo", DIED_UNSEEN, 30.0, 1),
                ("com.y.Bar", "com.y.Bar", 20.0, 1),
                (UNKNOWN_SITE, "com.y.Bar", 7.0, 1),
            ]
        );
        // The holders' fields, most objects first; none where no holder was seen.
        assert_eq!(
            pairs[0].fields,
            [("entries".to_string(), 100.0), ("next".to_string(), 50.0)]
        );
        assert!(pairs[1].fields.is_empty());
        let foo = &pairs[0].ages;
        assert_eq!(foo.by_gc[0], 100.0);
        assert_eq!(foo.by_gc[2], 50.0);
        assert_eq!(foo.median_gc_bucket(), Some(0));
        assert_eq!(foo.by_bytes[20], 100.0);
        assert_eq!(foo.by_bytes[26], 50.0);
        assert_eq!(foo.median_bytes_bucket(), Some(20));
        // Survived at least one GC: the 2-GC deaths of Foo, Bar's, the unknown site's.
        let old = l.pairs(&Filter {
            min_gc_age: 1,
            ..Default::default()
        });
        let old: Vec<(&str, f64)> = old.iter().map(|p| (p.alloc.as_str(), p.objects)).collect();
        assert_eq!(
            old,
            [
                ("com.x.Foo", 50.0),
                ("com.y.Bar", 20.0),
                (UNKNOWN_SITE, 7.0)
            ]
        );
        let very_old = l.pairs(&Filter {
            min_gc_age: 3,
            ..Default::default()
        });
        assert_eq!(very_old.len(), 1, "the 2-3 bucket is below 3");
        assert_eq!(l.deaths_booked(&Filter::default()), (5, 5));
    }

    #[test]
    fn a_time_window_counts_the_deaths_its_snapshots_booked() {
        let mut l = Lifetimes::default();
        l.add(1000, &lifetimes(vec![death(1, 3, 1.0, 0, 0)], vec![]), name);
        l.add(2000, &lifetimes(vec![death(1, 3, 2.0, 0, 0)], vec![]), name);
        l.add(3000, &lifetimes(vec![death(1, 3, 4.0, 0, 0)], vec![]), name);
        let objects = |from_ms, to_ms| {
            l.pairs(&Filter {
                from_ms,
                to_ms,
                ..Default::default()
            })
            .iter()
            .map(|p| p.objects)
            .sum::<f64>()
        };
        assert_eq!(objects(0, u64::MAX), 7.0);
        assert_eq!(objects(1000, 2000), 3.0);
        assert_eq!(objects(1500, 3000), 6.0);
        assert_eq!(objects(4000, 5000), 0.0);
        assert_eq!(l.snapshots(), 3);
    }

    #[test]
    fn sites_tell_nursery_escapees_short_lives_and_survival() {
        let mut l = Lifetimes::default();
        // Foo.bar: 60 die before any GC within 1 MiB; 40 after one GC, 16 MiB later.
        l.add(
            1000,
            &lifetimes(
                vec![
                    death(1, 0, 60.0, 0, 1 << 20),
                    death(1, 3, 40.0, 1, 16 << 20),
                    death(4, 5, 10.0, 0, 10),
                ],
                vec![],
            ),
            name,
        );
        // The newest survivors: 100 of Foo.bar alive at 2-3 GCs (the old ones are forgotten).
        l.add(
            2000,
            &lifetimes(
                vec![],
                vec![Survivors {
                    r#type: 6,
                    site: 1,
                    by_gc_age: vec![0.0, 0.0, 100.0],
                }],
            ),
            name,
        );
        let sites = l.sites(&Filter::default());
        let foo = &sites[0];
        assert_eq!(foo.name, NAMES[1]);
        assert_eq!(foo.context, "com.x.Foo");
        assert_eq!((foo.died, foo.samples), (100.0, 2));
        assert_eq!(foo.escape_share(), 0.4);
        assert_eq!(foo.short_lived_share(), 0.6);
        assert_eq!(foo.alive[2], 100.0);
        // At risk 200: 60 die at 0 (0.7 left), 40 of 140 at 1 (0.5 left), then only survivors.
        let s = foo.survival;
        assert!(
            (s[0] - 0.7).abs() < 1e-12 && (s[1] - 0.5).abs() < 1e-12,
            "{s:?}"
        );
        assert_eq!(s[2..], [s[1]; 5]);
        assert_eq!(sites[1].name, NAMES[4]);
        assert_eq!(sites[1].escape_share(), 0.0);
        assert_eq!(l.alive(), 100.0);
        // The minimum age does not apply to shares.
        let filtered = l.sites(&Filter {
            min_gc_age: 1,
            ..Default::default()
        });
        assert_eq!(filtered[0].escape_share(), 0.4);
    }

    #[test]
    fn contexts_gather_their_sites() {
        let mut l = Lifetimes::default();
        l.add(
            1000,
            &lifetimes(
                vec![death(1, 3, 10.0, 0, 0), death(2, 3, 30.0, 1, 0)],
                vec![Survivors {
                    r#type: 6,
                    site: 2,
                    by_gc_age: vec![5.0],
                }],
            ),
            name,
        );
        let foo = l
            .allocation_context("com.x.Foo", &Filter::default())
            .unwrap();
        assert_eq!((foo.name.as_str(), foo.died), ("com.x.Foo", 40.0));
        assert_eq!(foo.escape_share(), 0.75);
        assert_eq!(foo.alive[0], 5.0);
        assert!(l
            .allocation_context("com.x.Cache", &Filter::default())
            .is_none());
        assert_eq!(l.allocation_contexts(&Filter::default()).len(), 1);
    }
}
