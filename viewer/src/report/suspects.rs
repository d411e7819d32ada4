//! The report's leak suspects: each as scripts read it (`SuspectJson`), and as a trace from its
//! GC root down to what grows for people, with the types that rose only within the estimates'
//! doubt apart.

use std::fmt::Write as _;

use serde::Serialize;

use crate::units::{count, signed_count};
use memcity_city::leak::roots::root_kind_label;
use memcity_city::leak::Suspect;

#[derive(Debug, Clone, Default, Serialize)]
pub struct SuspectJson {
    pub root_kind: String,
    pub root: String,
    pub holder: String,
    pub suspect_reference: String,
    pub leaking: Vec<String>,
    pub growth: i64,
    /// What the numbers back of `growth` (less the estimates' error and what may be garbage no
    /// old-generation marking has met), and whether that is a leak's worth.
    pub backed_growth: i64,
    pub confirmed: bool,
    /// Listed among the leak suspects: a holder named, or `confirmed`.
    pub backed: bool,
    pub confidence: String,
    /// Other threads holding the same thread-local (a pool's), see `Suspect::co_holders`.
    pub co_holders: Vec<String>,
    /// Other roots that hold the holder (or an object on its path) too, see
    /// `Suspect::also_reached_from`.
    pub also_reached_from: Vec<String>,
    pub signature: String,
    /// The walk (snapshot seq) the trace comes from, and how much older than the window's end.
    pub walk_seq: u64,
    pub walk_age_ms: u64,
    pub steps: Vec<StepJson>,
    /// Where the first leaking type is allocated (when the grouping has a `site` level).
    pub sites: Vec<SiteJson>,
    /// The object-level paths the holder rests on; absent when it comes from per-type edges
    /// only (a recording without paths).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceJson>,
    /// The growth the holder keeps alive, summed over `holds` (what suspects are ranked by).
    pub held_objects: i64,
    pub held_bytes: i64,
    /// Per growing type (see `memcity_city::leak::Held`), most bytes first.
    pub holds: Vec<HeldJson>,
    /// Sessions read from heap dumps: whether each dump of the window, first to last, has its
    /// own paths reach an object of the holder's type from the same root (the holder named
    /// from the last dump's paths, checked against the earlier ones).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub in_dumps: Vec<bool>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct HeldJson {
    #[serde(rename = "type")]
    pub type_name: String,
    pub objects: i64,
    pub bytes: i64,
    /// The estimates' 95 % error on that rise (0 between exact snapshots).
    pub objects_error: i64,
    pub bytes_error: i64,
}

/// See `memcity_city::leak::evidence::Evidence`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EvidenceJson {
    pub samples: u64,
    pub through_holder: u64,
    pub share: f64,
    pub split: String,
    pub witnessed_ms: u64,
    pub age_ms: u64,
    pub growth_since: i64,
    pub stale: bool,
    pub counted: u64,
    pub counted_through: u64,
    pub holder_identity: String,
    pub holder_in: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct SiteJson {
    pub site: String,
    pub objects: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct StepJson {
    #[serde(rename = "type")]
    pub type_name: String,
    pub field: String,
    pub objects: u64,
    pub growth: i64,
    pub content: bool,
    pub suspect: bool,
    pub size: u64,
}

impl From<Suspect> for SuspectJson {
    fn from(s: Suspect) -> Self {
        let (held_objects, held_bytes) = s.held();
        let backed = s.is_backed();
        let root_kind = s
            .root
            .as_ref()
            .map_or_else(String::new, |r| root_kind_label(r.kind).to_string());
        let root = s.root_name().to_string();
        let evidence = s.evidence.map(|e| EvidenceJson {
            samples: e.samples,
            through_holder: e.through_holder,
            share: e.share,
            split: e.split,
            witnessed_ms: e.witnessed_ms,
            age_ms: e.age_ms,
            growth_since: e.growth_since,
            stale: e.stale,
            counted: e.counted,
            counted_through: e.counted_through,
            holder_identity: format!("{:08x}", e.holder_identity),
            holder_in: e.holder_in.name(&root),
        });
        SuspectJson {
            backed,
            held_objects,
            held_bytes,
            in_dumps: Vec::new(),
            holds: s
                .holds
                .into_iter()
                .map(|h| HeldJson {
                    type_name: h.type_name,
                    objects: h.objects,
                    bytes: h.bytes,
                    objects_error: h.objects_error,
                    bytes_error: h.bytes_error,
                })
                .collect(),
            root_kind,
            root,
            holder: s.holder,
            suspect_reference: s.suspect_reference,
            leaking: s.leaking,
            growth: s.growth,
            backed_growth: s.backed_growth,
            confirmed: s.confirmed,
            confidence: s.confidence.label().to_string(),
            co_holders: s.co_holders,
            also_reached_from: s.also_reached_from,
            signature: s.signature.to_string(),
            walk_seq: s.walk_seq,
            walk_age_ms: s.walk_age_ms,
            evidence,
            sites: s
                .sites
                .into_iter()
                .map(|(site, objects)| SiteJson { site, objects })
                .collect(),
            steps: s
                .steps
                .into_iter()
                .map(|t| StepJson {
                    type_name: t.type_name,
                    field: t.field,
                    objects: t.objects,
                    growth: t.growth,
                    content: t.content,
                    suspect: t.suspect,
                    size: t.size,
                })
                .collect(),
        }
    }
}

/// The first `n` types a holder keeps alive, and how many more: `byte[], java.lang.String and
/// 2 more types`.
fn held_types(holds: &[HeldJson], n: usize) -> String {
    let names: Vec<&str> = holds.iter().take(n).map(|h| h.type_name.as_str()).collect();
    match holds.len().saturating_sub(n) {
        0 => names.join(", "),
        1 => format!("{} and 1 more type", names.join(", ")),
        more => format!("{} and {more} more types", names.join(", ")),
    }
}

/// Where a session without object paths came from, for what the report says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Source {
    Recording,
    /// A Memory Cities export: no handshake, and no place in the format for paths.
    Export,
    /// Heap dumps: exact paths, to objects chosen evenly, not samples.
    Dumps,
}

/// Leak suspects as traces from the root down, one line per step (LeakCanary's leak trace is
/// the model): the suspect reference marked, collection internals indented as content.
pub(super) fn render_suspects(
    out: &mut String,
    suspects: &[SuspectJson],
    rising: &[SuspectJson],
    compared: bool,
    source: Source,
) {
    if suspects.is_empty() {
        let doubt = if rising.is_empty() {
            ""
        } else {
            " beyond the estimates' doubt"
        };
        let _ = if compared {
            writeln!(
                out,
                "LEAK SUSPECTS: none (no type rose from one recording to the other{doubt})"
            )
        } else {
            writeln!(
                out,
                "LEAK SUSPECTS: none (no type grows steadily in this window{doubt})"
            )
        };
        render_rising(out, rising);
        let _ = writeln!(out);
        return;
    }
    if compared {
        let _ = writeln!(
            out,
            "LEAK SUSPECTS (what rose from one recording to the other: two snapshots show a rise, not whether it goes on)"
        );
    } else {
        let _ = writeln!(out, "LEAK SUSPECTS");
    }
    // Beside named leaks, a growing type no sampled path reached (a tiny per-session lock,
    // sampled too rarely) is one line at the end, not a numbered suspect of its own.
    let any_named = suspects.iter().any(|s| !s.holder.is_empty());
    let mut unseen: Vec<&SuspectJson> = Vec::new();
    let mut number = 0;
    for s in suspects {
        if s.holder.is_empty() && any_named {
            unseen.push(s);
            continue;
        }
        number += 1;
        if s.holder.is_empty() {
            render_holder_not_seen(out, number, s, source);
        } else {
            render_held(out, number, s, source);
        }
        let _ = writeln!(out);
    }
    if !unseen.is_empty() {
        render_also_growing(out, &unseen);
        let _ = writeln!(out);
    }
    if !rising.is_empty() {
        render_rising(out, rising);
        let _ = writeln!(out);
    }
}

/// A suspect numbered `number` whose holder no path named: what grows, and why no holder.
fn render_holder_not_seen(out: &mut String, number: usize, s: &SuspectJson, source: Source) {
    let what = s.leaking.first().map(String::as_str).unwrap_or("?");
    let why = match &s.evidence {
        Some(e) => format!(
            "holder not seen yet: no sampled path from a GC root reached one (the last path search ended {:.1} s before the window's end, {} of them since). The agent searches again as its `paths=` share of a core allows; a longer recording settles it.",
            e.age_ms as f64 / 1000.0,
            signed_count(e.growth_since),
        ),
        None if source == Source::Export => "holder unknown: a Memory Cities export carries no object paths, and per-type references cannot tell one instance of a type from another. The memcity recording it was exported from names the holder.".to_string(),
        None => "holder unknown: this recording carries no object paths (an agent from before them, or paths=off), and per-type references cannot tell one instance of a type from another. Record with the current agent to name the holder.".to_string(),
    };
    let _ = writeln!(
        out,
        "{number}. {what} grows by {} objects; {why}",
        signed_count(s.growth),
    );
}

/// A suspect numbered `number` with a holder. The leak is the accumulation point: what it
/// keeps alive leads, its types follow; then its roots, the trace down from them, what it
/// holds and where that is allocated, and the paths the holder rests on.
fn render_held(out: &mut String, number: usize, s: &SuspectJson, source: Source) {
    let _ = writeln!(
        out,
        "{number}. {} ({}{}, confidence {}) holds a growth of {} objects, {}: {}",
        s.holder,
        if s.root.is_empty() {
            "root unknown"
        } else {
            &s.root
        },
        memcity_city::leak::roots::more_threads(&s.root, s.co_holders.len()),
        s.confidence,
        signed_count(s.held_objects),
        memcity_city::units::signed_amount(s.held_bytes, memcity_city::model::Metric::Bytes),
        held_types(&s.holds, 3),
    );
    if !s.confirmed {
        let backed = if s.backed_growth > 0 {
            format!("{} of it backed", signed_count(s.backed_growth))
        } else {
            "none of it backed yet".to_string()
        };
        let _ = writeln!(
            out,
            "   unconfirmed: the rise is in estimates made since the last walk and \
             old-generation marking ({backed}); objects promoted to the old generation and \
             dead there rise the same way until a marking frees them. A walk (`memcity \
             snapshot`) or a full GC settles it."
        );
    }
    render_roots(out, s);
    render_steps(out, &s.steps);
    render_holds(out, s);
    if let Some(e) = &s.evidence {
        render_evidence(out, s, e, source);
    }
    render_in_dumps(out, s);
}

/// The suspect's GC root, the other threads that hold it the same way, and the other roots
/// that reach it.
fn render_roots(out: &mut String, s: &SuspectJson) {
    let _ = writeln!(
        out,
        "   GC root: {}{}",
        if s.root.is_empty() {
            "(none found)"
        } else {
            &s.root
        },
        if s.root_kind.is_empty() {
            String::new()
        } else {
            format!(" [{}]", s.root_kind)
        }
    );
    if !s.co_holders.is_empty() {
        const NAMED: usize = 5;
        let mut names = s.co_holders[..s.co_holders.len().min(NAMED)].join(", ");
        if s.co_holders.len() > NAMED {
            let _ = write!(names, " and {} more", s.co_holders.len() - NAMED);
        }
        let n = s.co_holders.len();
        let threads = if n == 1 { "thread" } else { "threads" };
        let _ = writeln!(
            out,
            "   held the same way (a thread-local) by {n} more {threads}: {names}"
        );
    }
    if !s.also_reached_from.is_empty() {
        let _ = writeln!(
            out,
            "   also reached from: {}",
            s.also_reached_from.join("; ")
        );
    }
}

/// The trace from the root down, one line per step: the suspect reference marked, collection
/// internals indented as content.
fn render_steps(out: &mut String, steps: &[StepJson]) {
    for step in steps {
        let arrow = if step.suspect { "~~>" } else { "-->" };
        let via = if step.field.is_empty() {
            String::new()
        } else {
            format!(".{} ", step.field)
        };
        let size = if step.size > 1 {
            format!(", largest {}", count(step.size))
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "   {}{} {}{}  ({}, {}{}){}",
            if step.content { "    " } else { "" },
            arrow,
            via,
            step.type_name,
            memcity_city::units::amount(step.objects, memcity_city::model::Metric::Objects),
            signed_count(step.growth),
            size,
            if step.suspect {
                "  <- suspect reference"
            } else {
                ""
            }
        );
    }
}

/// The growth the holder keeps, type by type when there is more than one, and where the first
/// leaking type is allocated.
fn render_holds(out: &mut String, s: &SuspectJson) {
    if s.holds.len() > 1 {
        let each: Vec<String> = s
            .holds
            .iter()
            .map(|h| {
                format!(
                    "{} {} ({})",
                    h.type_name,
                    signed_count(h.objects),
                    memcity_city::units::signed_amount(h.bytes, memcity_city::model::Metric::Bytes)
                )
            })
            .collect();
        let _ = writeln!(out, "   the growth it holds: {}", each.join(", "));
    }
    for (i, site) in s.sites.iter().enumerate() {
        let _ = writeln!(
            out,
            "   {} {} (~{})",
            if i == 0 {
                "allocated at"
            } else {
                "          and"
            },
            site.site,
            memcity_city::units::amount(site.objects, memcity_city::model::Metric::Objects)
        );
    }
}

/// The object-level paths the holder rests on: how many sampled paths pass through it, how
/// many counted objects it reaches, and how old the paths are.
/// A series of dumps: the holder checked in each dump's own paths.
fn render_in_dumps(out: &mut String, s: &SuspectJson) {
    if s.in_dumps.is_empty() {
        return;
    }
    let missing: Vec<String> = s
        .in_dumps
        .iter()
        .enumerate()
        .filter(|(_, &seen)| !seen)
        .map(|(i, _)| (i + 1).to_string())
        .collect();
    let _ = if missing.is_empty() {
        writeln!(
            out,
            "   in every dump: the paths of each of the {} reach a {} from {}",
            s.in_dumps.len(),
            s.holder,
            s.root
        )
    } else {
        writeln!(
            out,
            "   not in every dump: the paths of dump {} reach no {} from {} (the holder may be newer, or the leak elsewhere then)",
            missing.join(", "),
            s.holder,
            s.root
        )
    };
}

fn render_evidence(out: &mut String, s: &SuspectJson, e: &EvidenceJson, source: Source) {
    let types = match s.leaking.len() {
        0 | 1 => s.leaking.first().cloned().unwrap_or_default(),
        2 => s.leaking.join(" and "),
        n => format!("{} and {} more types", s.leaking[..2].join(", "), n - 2),
    };
    let _ = writeln!(
        out,
        "   evidence: {} of {} {} to {} pass through this {} ({}@{}){}",
        count(e.through_holder),
        count(e.samples),
        if source == Source::Dumps {
            "shortest paths (to objects chosen evenly in the dump)"
        } else {
            "sampled paths"
        },
        types,
        s.holder,
        e.holder_in,
        e.holder_identity,
        if e.split.is_empty() {
            String::new()
        } else {
            format!("; split: {}", e.split)
        }
    );
    if e.counted > 0 {
        let _ = writeln!(
            out,
            "   counted: {} of the {} such objects the search went through are reached from this root{}",
            count(e.counted_through),
            count(e.counted),
            if s.co_holders.is_empty() { "" } else { " and its co-holders" }
        );
    }
    if e.stale {
        let _ = writeln!(
            out,
            "   holder not seen since {} objects (paths found {:.1} s before the window's end): not confirmed until a search sees the new ones",
            signed_count(e.growth_since),
            e.age_ms as f64 / 1000.0
        );
    } else if e.age_ms > 0 {
        let _ = writeln!(
            out,
            "   (paths found {:.1} s before the window's end, {} objects since)",
            e.age_ms as f64 / 1000.0,
            signed_count(e.growth_since)
        );
    }
}

/// Beside named leaks, the growing types no sampled path reached, on one line.
fn render_also_growing(out: &mut String, unseen: &[&SuspectJson]) {
    let each: Vec<String> = unseen
        .iter()
        .map(|s| {
            format!(
                "{} {}",
                s.leaking.first().map(String::as_str).unwrap_or("?"),
                signed_count(s.growth)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "Also growing, holder not seen yet (no sampled path from a GC root reached one; the agent searches again as its `paths=` share of a core allows): {}",
        each.join(", ")
    );
}

/// The types that rose only within the estimates' doubt: one line, apart from the suspects,
/// each with its holder where a search named one (the paths reached it, but what it holds is
/// not yet more than the doubt: a short window, or births no marking or search has met).
fn render_rising(out: &mut String, rising: &[SuspectJson]) {
    if rising.is_empty() {
        return;
    }
    let each: Vec<String> = rising
        .iter()
        .map(|s| {
            let held = if s.holder.is_empty() {
                " (holder not seen yet)".to_string()
            } else if s.root.is_empty() {
                format!(" held by {}", s.holder)
            } else {
                format!(" held by {} ({})", s.holder, s.root)
            };
            format!(
                "{} {}{held}",
                s.leaking.first().map(String::as_str).unwrap_or("?"),
                signed_count(s.growth)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "Rising within the estimates' doubt (their error and what may be garbage no marking has freed; a walk, an old-generation marking or the next path search settles it): {}",
        each.join(", ")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leak_leads_with_its_holder_and_types_not_seen_held_are_one_line_after() {
        let held = |t: &str, objects, bytes| HeldJson {
            type_name: t.into(),
            objects,
            bytes,
            ..Default::default()
        };
        let named = SuspectJson {
            root: "static App.SESSIONS".into(),
            holder: "java.util.HashMap".into(),
            leaking: vec!["Session".into(), "byte[]".into()],
            growth: 5_000,
            confirmed: true,
            confidence: "exact".into(),
            held_objects: 10_000,
            held_bytes: 5_280_000,
            holds: vec![
                held("byte[]", 5_000, 5_120_000),
                held("Session", 5_000, 160_000),
            ],
            ..Default::default()
        };
        let unseen = |t: &str, growth| SuspectJson {
            leaking: vec![t.into()],
            growth,
            evidence: Some(EvidenceJson::default()),
            ..Default::default()
        };
        let mut out = String::new();
        render_suspects(
            &mut out,
            &[
                named.clone(),
                unseen("java.util.concurrent.locks.ReentrantLock", 4_000),
                unseen("Lock$Sync", 3_000),
            ],
            &[],
            false,
            Source::Recording,
        );
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[1],
            "1. java.util.HashMap (static App.SESSIONS, confidence exact) holds a growth of +10,000 objects, +5.0 MiB: byte[], Session",
            "{out}"
        );
        assert!(
            lines.contains(
                &"   the growth it holds: byte[] +5,000 (+4.9 MiB), Session +5,000 (+156.2 KiB)"
            ),
            "{out}"
        );
        assert!(!out.contains("\n2. "), "{out}");
        assert!(out.contains("Also growing, holder not seen yet (no sampled path from a GC root reached one; the agent searches again as its `paths=` share of a core allows): java.util.concurrent.locks.ReentrantLock +4,000, Lock$Sync +3,000"), "{out}");
        // With no named holder, the growing types are the suspects, numbered.
        let mut alone = String::new();
        render_suspects(
            &mut alone,
            &[unseen("A", 4_000), unseen("B", 3_000)],
            &[],
            false,
            Source::Recording,
        );
        assert!(
            alone.contains("\n1. A grows by +4,000 objects; holder not seen yet"),
            "{alone}"
        );
        assert!(alone.contains("\n2. B grows by +3,000 objects"), "{alone}");
        assert!(!alone.contains("Also growing"), "{alone}");
        // A rise within the estimates' doubt that no search explained is no suspect: apart.
        let mut doubtful = String::new();
        render_suspects(
            &mut doubtful,
            &[],
            &[unseen("C", 32_777)],
            false,
            Source::Recording,
        );
        assert!(
            doubtful.starts_with("LEAK SUSPECTS: none (no type grows steadily in this window beyond the estimates' doubt)\nRising within the estimates' doubt (their error and what may be garbage no marking has freed; a walk, an old-generation marking or the next path search settles it): C +32,777 (holder not seen yet)\n"),
            "{doubtful}"
        );
        let mut both = String::new();
        render_suspects(
            &mut both,
            std::slice::from_ref(&named),
            &[unseen("C", 32_777)],
            false,
            Source::Recording,
        );
        assert!(both.contains("\n1. java.util.HashMap"), "{both}");
        assert!(
            both.contains("\nRising within the estimates' doubt ("),
            "{both}"
        );
        assert!(!both.contains("\n2. "), "{both}");
    }
}
