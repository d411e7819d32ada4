//! `memcity lifetimes`: where the sampled objects were born and where they died, as allocation
//! -> death context pairs, and the allocation sites whose objects escape the nursery and then die.

use std::fmt::Write as _;

use serde::Serialize;

use crate::units::{bytes as human_bytes, count};
use memcity_city::lifetimes::{
    self as lt, Filter, Lives, Pair, DEATH_CONTEXT_NOTE, GC_AGE_BUCKETS,
};
use memcity_city::model::CityModel;

/// Why a session has nothing to show.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NoLifetimes {
    #[error("it holds no whole snapshot")]
    NoSnapshots,
    #[error("none of its {0} snapshots carries lifetimes: {1}")]
    NotRecorded(usize, &'static str),
    #[error(
        "its {0} snapshots with lifetimes book no death and no live sample: the agent took no \
         allocation samples (a session too short for its sampling interval)"
    )]
    NoSamples(usize),
}

#[derive(Debug, Clone, Serialize)]
pub struct LifetimesReport {
    /// Snapshots that carried lifetimes.
    pub snapshots: usize,
    /// Deaths the agent booked, and the dead samples it sent (past its cap per snapshot, an
    /// even choice with weights scaled to stand for all).
    pub deaths_booked: u64,
    pub deaths_sent: u64,
    /// Objects the live samples of the newest snapshot stand for.
    pub objects_alive: f64,
    /// Bytes allocated by the newest snapshot, the agent's estimate.
    pub allocated_bytes: u64,
    /// Pairs count deaths at least this many GCs old.
    pub min_gc_age: u64,
    /// What the death context means (and cannot mean).
    pub death_context: &'static str,
    /// Allocation -> death context pairs, most objects first.
    pub pairs: Vec<PairJson>,
    /// Allocation sites, most nursery escapees first (those with any).
    pub escapees: Vec<SiteJson>,
}

#[derive(Debug, Clone, Serialize)]
pub struct PairJson {
    pub alloc: String,
    pub death: String,
    /// Objects that died (the sum of the dead samples' weights), and the samples.
    pub objects: f64,
    pub samples: u64,
    /// Objects by age in GCs: 0, 1, 2-3, 4-7, 8-15, 16-31, 32 or more.
    pub by_gc_age: [f64; GC_AGE_BUCKETS],
    /// The age bucket of the median object ("2-3").
    pub median_gc_age: String,
    /// The median object's age in bytes allocated during its life, as a range `[low, high)`.
    pub median_bytes_age: [u64; 2],
    /// The death context's fields the objects were last seen held in, most objects first.
    pub death_fields: Vec<FieldJson>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FieldJson {
    pub field: String,
    pub objects: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SiteJson {
    pub site: String,
    pub context: String,
    pub died: f64,
    pub samples: u64,
    /// Objects that survived a GC and then died, and their share of the deaths.
    pub escaped: f64,
    pub escape_share: f64,
    /// The share of the deaths that lived less than 8 MiB of allocation (short-lived, per the
    /// paper).
    pub short_lived_share: f64,
    /// Objects alive in the newest snapshot, and the share surviving past each GC-age bucket
    /// (Kaplan-Meier over the deaths and those survivors).
    pub alive: f64,
    pub survival: [f64; GC_AGE_BUCKETS],
}

fn pair_json(p: Pair) -> PairJson {
    let median_gc = p.ages.median_gc_bucket().unwrap_or(0);
    let (low, high) = lt::bytes_age_range(p.ages.median_bytes_bucket().unwrap_or(0));
    PairJson {
        median_gc_age: lt::gc_age_label(median_gc),
        median_bytes_age: [low, high],
        by_gc_age: p.ages.by_gc,
        alloc: p.alloc,
        death: p.death,
        death_fields: p
            .fields
            .into_iter()
            .map(|(field, objects)| FieldJson { field, objects })
            .collect(),
        objects: p.objects,
        samples: p.samples,
    }
}

fn site_json(l: Lives) -> SiteJson {
    SiteJson {
        escaped: l.ages.survived_a_gc(),
        escape_share: l.escape_share(),
        short_lived_share: l.short_lived_share(),
        alive: l.alive.iter().sum(),
        survival: l.survival,
        site: l.name,
        context: l.context,
        died: l.died,
        samples: l.samples,
    }
}

/// A pair's death context with the field most of its objects were held in (`Class.field`, and
/// how many other fields held the rest).
fn death_with_field(p: &PairJson) -> String {
    match p.death_fields.as_slice() {
        [] => p.death.clone(),
        [one] => format!("{}.{}", p.death, one.field),
        [top, rest @ ..] => format!("{}.{} (and {} more fields)", p.death, top.field, rest.len()),
    }
}

/// Why a session's agent sent no lifetimes, as its handshake says.
pub fn why_not_recorded(session: &CityModel) -> &'static str {
    use memcity_proto::v1::handshake::LifetimesState;
    let state = session
        .handshake
        .as_ref()
        .map_or(LifetimesState::LifetimesUnknown, |h| h.lifetimes());
    match state {
        LifetimesState::LifetimesOff => {
            "the agent's lifetimes option was off (run it with lifetimes=on, the default)"
        }
        LifetimesState::LifetimesNoSamples => {
            "the agent took no allocation samples (sampling=off), which lifetimes follow"
        }
        LifetimesState::LifetimesOn => {
            "the agent followed lifetimes but sent none (a session ended before its first snapshot after the start?)"
        }
        LifetimesState::LifetimesUnknown => {
            "the agent that recorded it predates lifetimes (or this is not a memcity recording); record again with this memcity's agent"
        }
    }
}

/// The report of `session`'s lifetimes: the `top` pairs and escaping sites (all with
/// `usize::MAX`), pairs of deaths at least `min_gc_age` GCs old.
pub fn build(
    session: &CityModel,
    min_gc_age: u64,
    top: usize,
) -> Result<LifetimesReport, NoLifetimes> {
    let lifetimes = session.lifetimes();
    if lifetimes.is_empty() {
        return Err(match session.len() {
            0 => NoLifetimes::NoSnapshots,
            n => NoLifetimes::NotRecorded(n, why_not_recorded(session)),
        });
    }
    let all = Filter::default();
    let (booked, sent) = lifetimes.deaths_booked(&all);
    if booked == 0 && lifetimes.alive() <= 0.0 {
        return Err(NoLifetimes::NoSamples(lifetimes.snapshots()));
    }
    let filter = Filter { min_gc_age, ..all };
    Ok(LifetimesReport {
        snapshots: lifetimes.snapshots(),
        deaths_booked: booked,
        deaths_sent: sent,
        objects_alive: lifetimes.alive(),
        allocated_bytes: lifetimes.allocated_bytes(),
        min_gc_age,
        death_context: DEATH_CONTEXT_NOTE,
        pairs: lifetimes
            .pairs(&filter)
            .into_iter()
            .take(top)
            .map(pair_json)
            .collect(),
        escapees: lifetimes
            .sites(&filter)
            .into_iter()
            .filter(|l| l.ages.survived_a_gc() > 0.0)
            .take(top)
            .map(site_json)
            .collect(),
    })
}

fn objects(n: f64) -> String {
    count(n.round().max(0.0) as u64)
}

fn percent(share: f64) -> String {
    format!("{:.0} %", share * 100.0)
}

/// The report as the table `memcity lifetimes` prints; `source` names the session.
pub fn render_text(r: &LifetimesReport, source: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "LIFETIMES of {source}: {} snapshots, {} deaths booked ({} samples sent), {} objects of live samples, {} allocated",
        r.snapshots,
        count(r.deaths_booked),
        count(r.deaths_sent),
        objects(r.objects_alive),
        human_bytes(r.allocated_bytes)
    );
    let _ = writeln!(out, "({})", r.death_context);
    let _ = writeln!(out);
    let which = if r.min_gc_age > 0 {
        format!(", at least {} GCs old", r.min_gc_age)
    } else {
        String::new()
    };
    let _ = writeln!(out, "ALLOCATION -> DEATH (objects that died{which})");
    if r.pairs.is_empty() {
        let _ = writeln!(out, "  none");
    } else {
        let _ = writeln!(
            out,
            "{:>12} {:>8} {:>9} {:>21}  ALLOCATION CONTEXT -> DEATH CONTEXT",
            "OBJECTS", "SAMPLES", "AGE (GCs)", "AGE (ALLOCATED)"
        );
        for p in &r.pairs {
            let [low, high] = p.median_bytes_age;
            let _ = writeln!(
                out,
                "{:>12} {:>8} {:>9} {:>21}  {} -> {}",
                objects(p.objects),
                count(p.samples),
                p.median_gc_age,
                format!("{}-{}", human_bytes(low), human_bytes(high)),
                p.alloc,
                death_with_field(p)
            );
        }
        let _ = writeln!(
            out,
            "  (ages are medians: GCs survived, and bytes the application allocated meanwhile)"
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "NURSERY ESCAPEES (survived a GC, then died: kept until an old collection)"
    );
    if r.escapees.is_empty() {
        let _ = writeln!(out, "  none: every sampled death came before its first GC");
    } else {
        let _ = writeln!(
            out,
            "{:>12} {:>6} {:>11} {:>12}  SITE",
            "ESCAPED", "SHARE", "SHORT-LIVED", "ALIVE"
        );
        for s in &r.escapees {
            let _ = writeln!(
                out,
                "{:>12} {:>6} {:>11} {:>12}  {}",
                objects(s.escaped),
                percent(s.escape_share),
                percent(s.short_lived_share),
                objects(s.alive),
                s.site
            );
        }
        let _ = writeln!(
            out,
            "  (share: of the site's deaths; short-lived: died within 8 MiB of allocation)"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_proto::v1::{
        stream_message::Kind, Death, Lifetimes, Moment, Node, Snapshot, StreamMessage, StringTable,
    };

    fn session(lifetimes: Option<Lifetimes>) -> CityModel {
        let mut m = CityModel::new();
        let mut apply = |kind| m.apply(&StreamMessage { kind: Some(kind) }).unwrap();
        apply(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names: vec!["app.Cache".into(), "app.Loader.load(Loader.java:9)".into()],
        }));
        apply(Kind::Snapshot(Snapshot {
            seq: 1,
            root: Some(Node::default()),
            lifetimes,
            ..Default::default()
        }));
        m
    }

    /// Born at GC 0, survived `gcs`, freed by the next.
    fn death(weight: f64, gcs: u64) -> Death {
        Death {
            site: 2,
            holder_type: 1,
            weight,
            died: Some(Moment {
                gc: gcs + 1,
                allocated_bytes: 3 << 20,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn pairs_and_escapees_are_reported_with_their_ages() {
        let m = session(Some(Lifetimes {
            deaths: vec![death(10.0, 0), death(30.0, 2)],
            deaths_booked: 2,
            allocated_bytes: 1 << 30,
            ..Default::default()
        }));
        let r = build(&m, 0, usize::MAX).unwrap();
        assert_eq!((r.deaths_booked, r.deaths_sent), (2, 2));
        assert_eq!(r.pairs.len(), 1);
        let p = &r.pairs[0];
        assert_eq!(
            (p.alloc.as_str(), p.death.as_str()),
            ("app.Loader", "app.Cache")
        );
        assert_eq!((p.objects, p.median_gc_age.as_str()), (40.0, "2-3"));
        assert_eq!(p.median_bytes_age, [2 << 20, 4 << 20]);
        let s = &r.escapees[0];
        assert_eq!(
            (s.escaped, s.escape_share, s.short_lived_share),
            (30.0, 0.75, 1.0)
        );
        let text = render_text(&r, "app.mcrec");
        assert!(text.contains("app.Loader -> app.Cache"), "{text}");
        assert!(text.contains("75 %"), "{text}");
        assert!(text.contains("cannot tell the method"), "{text}");
        let old = build(&m, 4, usize::MAX).unwrap();
        assert!(old.pairs.is_empty());
        assert!(render_text(&old, "x").contains("at least 4 GCs old"));
    }

    #[test]
    fn a_session_without_lifetimes_says_why() {
        assert_eq!(
            build(&CityModel::new(), 0, 10).unwrap_err(),
            NoLifetimes::NoSnapshots
        );
        let none = build(&session(None), 0, 10).unwrap_err();
        assert!(
            matches!(none, NoLifetimes::NotRecorded(1, why) if why.contains("predates")),
            "a session without a handshake: {none}"
        );
        let mut off = session(None);
        off.handshake = Some(memcity_proto::v1::Handshake {
            lifetimes: memcity_proto::v1::handshake::LifetimesState::LifetimesOff as i32,
            ..Default::default()
        });
        let off = build(&off, 0, 10).unwrap_err().to_string();
        assert!(off.contains("lifetimes option was off"), "{off}");
        let empty = build(&session(Some(Lifetimes::default())), 0, 10).unwrap_err();
        assert_eq!(empty, NoLifetimes::NoSamples(1));
    }
}
