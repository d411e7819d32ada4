//! What a report says of heap dumps: each dump read, and what keeps most of the last one alive
//! (MAT's leak suspects of one dump), with what each of those kept at every dump of a series.

use std::fmt::Write as _;

use serde::Serialize;

use memcity_city::leak::roots::root_kind_label;
use memcity_city::model::CityModel;

use crate::units::{bytes as human_bytes, count};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DumpJson {
    /// The snapshot it became, counted from 1.
    pub snapshot: usize,
    pub file: String,
    pub file_bytes: u64,
    pub compressed: bool,
    pub objects: u64,
    pub references: u64,
    pub unreachable_objects: u64,
    pub unreachable_bytes: u64,
    /// How sizes were found: the object layout the addresses confirm, and the share of objects
    /// a neighbour confirmed.
    pub layout: String,
    pub sizes_confirmed: f64,
    pub read_ms: u64,
    /// Bytes of arrays kept in files while it was read, for want of free memory.
    #[serde(skip_serializing_if = "is_zero")]
    pub spilled_bytes: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RetainerJson {
    /// The GC root its path starts at (`static LinkedListLeak.PEOPLE`), empty when none.
    pub root: String,
    pub root_kind: String,
    /// From the root's object to the accumulation point: `java.util.LinkedList`,
    /// `.elementData java.lang.Object[]`.
    pub trace: Vec<String>,
    /// The accumulation point's type.
    pub holder: String,
    pub retained_bytes: u64,
    /// Of the heap reachable from GC roots.
    pub share: f64,
    pub objects: u64,
    pub content: Vec<ContentJson>,
    /// For a group of objects of one type that keep this together, none alone (MAT's group
    /// suspects): the type, and how many; `trace` then leads to where their paths meet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_type: Option<String>,
    #[serde(skip_serializing_if = "is_zero")]
    pub group_objects: u64,
    /// What the same retainer (same root, same holder type) kept at each dump of the window,
    /// `null` where it was not among that dump's retainers.
    pub retained_by_dump: Vec<Option<u64>>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ContentJson {
    #[serde(rename = "type")]
    pub type_name: String,
    pub objects: u64,
    pub bytes: u64,
}

/// A suspect of a series of dumps, its holder checked in each dump's own paths: whether they
/// reach an object of the holder's type from the same root. Unchanged for other sessions.
pub(super) fn checked_in_dumps(
    session: &CityModel,
    start: usize,
    end: usize,
    mut suspect: super::SuspectJson,
) -> super::SuspectJson {
    let frames = &session.frames()[start..=end.min(session.len() - 1)];
    if suspect.holder.is_empty() || frames.iter().any(|f| f.dump.is_none()) {
        return suspect;
    }
    suspect.in_dumps = frames
        .iter()
        .map(|f| {
            let Some(paths) = f.paths.as_deref() else {
                return false;
            };
            paths.nodes.iter().any(|n| {
                if n.type_name != suspect.holder {
                    return false;
                }
                let mut at = n;
                while let Some(up) = at.parent {
                    at = &paths.nodes[up];
                }
                at.root.as_ref().is_some_and(|r| r.name == suspect.root)
            })
        })
        .collect();
    suspect
}

/// The dumps of snapshots `start` to `end` (empty for sessions from an agent).
pub(super) fn dumps(session: &CityModel, start: usize, end: usize) -> Vec<DumpJson> {
    (start..=end)
        .filter_map(|i| {
            let d = session.frames().get(i)?.dump.as_ref()?;
            Some(DumpJson {
                snapshot: i + 1,
                file: d.file.clone(),
                file_bytes: d.file_bytes,
                compressed: d.compressed,
                objects: d.objects,
                references: d.references,
                unreachable_objects: d.unreachable_objects,
                unreachable_bytes: d.unreachable_bytes,
                layout: d.layout.clone(),
                sizes_confirmed: d.sizes_confirmed,
                read_ms: d.read_ms,
                spilled_bytes: d.spilled_bytes,
            })
        })
        .collect()
}

/// The retainers of the dump at `end`, each with what it kept at every dump from `start`.
pub(super) fn retainers(session: &CityModel, start: usize, end: usize) -> Vec<RetainerJson> {
    let Some(last) = session.frames().get(end).and_then(|f| f.dump.clone()) else {
        return Vec::new();
    };
    last.retainers
        .iter()
        .map(|r| RetainerJson {
            root: r.root.as_ref().map(|r| r.name.clone()).unwrap_or_default(),
            root_kind: r
                .root
                .as_ref()
                .map(|r| root_kind_label(r.kind).to_owned())
                .unwrap_or_default(),
            trace: r
                .steps
                .iter()
                .map(|s| {
                    if s.field.is_empty() {
                        s.type_name.clone()
                    } else {
                        format!(".{} {}", s.field, s.type_name)
                    }
                })
                .collect(),
            holder: r.holder().to_owned(),
            retained_bytes: r.retained_bytes,
            share: r.retained_bytes as f64 / r.reachable_bytes.max(1) as f64,
            objects: r.objects,
            content: r
                .content
                .iter()
                .map(|(t, objects, bytes)| ContentJson {
                    type_name: t.clone(),
                    objects: *objects,
                    bytes: *bytes,
                })
                .collect(),
            group_type: r.group.as_ref().map(|g| g.0.clone()),
            group_objects: r.group.as_ref().map_or(0, |g| g.1),
            retained_by_dump: (start..=end)
                .map(|i| {
                    let d = session.frames().get(i)?.dump.as_ref()?;
                    d.retainers
                        .iter()
                        .find(|other| other.same_as(r))
                        .map(|other| other.retained_bytes)
                })
                .collect(),
        })
        .collect()
}

/// "3 heap dumps ..." and one line per dump.
pub(super) fn render_dumps(out: &mut String, dumps: &[DumpJson]) {
    let _ = writeln!(
        out,
        "{} heap {}: every object each holds, counted as `jcmd GC.class_histogram` counts them; sizes from the objects' addresses; retained sizes from each dump's dominator tree",
        dumps.len(),
        if dumps.len() == 1 { "dump" } else { "dumps" }
    );
    for d in dumps {
        let unreachable = if d.unreachable_objects > 0 {
            format!(
                "; {} no GC root reaches ({}: garbage the dump kept, counted in the groups, outside every retained size)",
                count(d.unreachable_objects),
                human_bytes(d.unreachable_bytes)
            )
        } else {
            String::new()
        };
        let spilled = if d.spilled_bytes > 0 {
            format!(
                "; it needed more memory than was free, so {} of its arrays were kept in files beside it",
                human_bytes(d.spilled_bytes)
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {}. {}: {} objects, {} references{unreachable}; {} ({:.0} % of sizes confirmed by a neighbour); read in {:.1} s{spilled}",
            d.snapshot,
            d.file,
            count(d.objects),
            count(d.references),
            d.layout,
            d.sizes_confirmed * 100.0,
            d.read_ms as f64 / 1000.0
        );
    }
}

/// The biggest retainers of the last dump, as MAT's leak suspects report them.
pub(super) fn render_retainers(out: &mut String, retainers: &[RetainerJson], series: bool) {
    if retainers.is_empty() {
        let _ = writeln!(
            out,
            "BIGGEST RETAINERS: none (no object alone keeps more than a tenth of the reachable heap)"
        );
        let _ = writeln!(out);
        return;
    }
    let _ = writeln!(
        out,
        "BIGGEST RETAINERS in the last dump (each object that alone keeps more than a tenth of the reachable heap, followed to where what it keeps splits)"
    );
    for (i, r) in retainers.iter().enumerate() {
        let content: Vec<String> = r
            .content
            .iter()
            .map(|c| {
                format!(
                    "{} {} ({})",
                    c.type_name,
                    count(c.objects),
                    human_bytes(c.bytes)
                )
            })
            .collect();
        let who = match &r.group_type {
            Some(t) => format!("{} {t} together", count(r.group_objects)),
            None => r.holder.clone(),
        };
        let _ = writeln!(
            out,
            "{}. {who} {} {} alive ({:.0} % of the reachable heap), {} objects: {}",
            i + 1,
            if r.group_type.is_some() {
                "keep"
            } else {
                "keeps"
            },
            human_bytes(r.retained_bytes),
            r.share * 100.0,
            count(r.objects),
            content.join(", ")
        );
        if r.group_type.is_some() {
            let _ = writeln!(
                out,
                "   {}",
                if r.trace.is_empty() {
                    "their paths from GC roots meet at no one object (none holds 80 % of them)"
                        .to_owned()
                } else {
                    format!("their paths from GC roots meet at {}", r.holder)
                }
            );
        }
        if !r.root.is_empty() {
            let _ = writeln!(out, "   GC root: {} [{}]", r.root, r.root_kind);
        }
        for step in &r.trace {
            let _ = writeln!(out, "   --> {step}");
        }
        if series {
            let kept: Vec<String> = r
                .retained_by_dump
                .iter()
                .map(|k| k.map_or("-".to_owned(), human_bytes))
                .collect();
            let _ = writeln!(out, "   kept at each dump: {}", kept.join(", "));
        }
    }
    let _ = writeln!(out);
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
