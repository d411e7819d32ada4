//! The report as a table for people: what the session is, the leak suspects, the top groups
//! under their parents, and the last snapshot's references.

use std::fmt::Write as _;

use super::dumps::{render_dumps, render_retainers};
use super::groups::UNSAMPLED_INTERVALS;
use super::oom::render_out_of_memory;
use super::suspects::{render_suspects, Source};
use super::{ReferenceJson, Report};
use crate::units::{bytes as human_bytes, count, signed_count};

/// The report as a tree table for people: the top groups under their parents.
pub fn render_text(report: &Report, source: &str, references: usize) -> String {
    let mut out = String::new();
    render_header(&mut out, report, source);
    if let Some(oom) = &report.out_of_memory {
        render_out_of_memory(&mut out, oom, &report.suspects, &report.retainers);
    }
    if !report.dumps.is_empty() {
        render_retainers(&mut out, &report.retainers, report.dumps.len() > 1);
    }
    // No handshake: a Memory Cities export (as the header says).
    let source = if !report.dumps.is_empty() {
        Source::Dumps
    } else if report.jvm.is_empty() && report.pid == 0 {
        Source::Export
    } else {
        Source::Recording
    };
    render_suspects(
        &mut out,
        &report.suspects,
        &report.rising,
        report.compared,
        source,
    );
    render_groups(&mut out, report);
    render_references(&mut out, &report.references, references);
    out
}

/// What the session is (its JVM, snapshots, overhead), what it is grouped by, the window, and
/// the warnings.
fn render_header(out: &mut String, report: &Report, source: &str) {
    if !report.dumps.is_empty() {
        let _ = writeln!(
            out,
            "{source}: {} {} over {:.1} s, read from heap dumps",
            report.snapshots,
            if report.snapshots == 1 {
                "snapshot"
            } else {
                "snapshots"
            },
            report.duration_ms as f64 / 1000.0,
        );
        render_dumps(out, &report.dumps);
    } else if report.jvm.is_empty() && report.pid == 0 {
        // No JVM in the handshake: a Memory Cities export (a folder) carries none; a recording
        // that names none was written by something other than the agent (a synthetic one) or
        // lost its header.
        let why = if std::path::Path::new(source).is_dir() {
            "a Memory Cities export carries none"
        } else {
            "its handshake names no JVM"
        };
        let _ = writeln!(
            out,
            "{source}: {} snapshots over {:.1} s; no JVM details ({why})",
            report.snapshots,
            report.duration_ms as f64 / 1000.0,
        );
    } else {
        let _ = writeln!(
        out,
        "{source}: {} snapshots over {:.1} s; {} ({}), pid {}; walks stopped the JVM {:.2}% of the time, sampling took {:.2}% of a core",
        report.snapshots,
        report.duration_ms as f64 / 1000.0,
        if report.jvm.is_empty() { "unknown JVM" } else { &report.jvm },
        if report.gc.is_empty() { "unknown GC" } else { &report.gc },
        report.pid,
        report.overhead * 100.0,
        report.sampling_overhead * 100.0
    );
    }
    if report.dumps.is_empty() {
        render_sources(out, report);
    }
    let _ = writeln!(
        out,
        "grouped by {}; growth over snapshots {} to {} ({:.1} s to {:.1} s)",
        report.classifiers.join(" > "),
        report.window.from + 1,
        report.window.to + 1,
        report.window.from_ms as f64 / 1000.0,
        report.window.to_ms as f64 / 1000.0
    );
    for warning in &report.warnings {
        let _ = writeln!(out, "warning: {warning}");
    }
    let _ = writeln!(out);
}

/// How many snapshots are walks and how many estimates.
fn render_sources(out: &mut String, report: &Report) {
    let _ = writeln!(
        out,
        "{} exact (heap walks), {} estimated from allocation samples at GCs{}",
        report.exact_snapshots,
        report.estimated_snapshots,
        match (report.last_estimated, report.last_anchor, report.last_anchor_seq) {
            // Numbered as the viewer's status bar numbers snapshots (from 1).
            (true, Some(anchor), _) => format!(
                "; the last is an estimate reconciled with the walk of snapshot {anchor}, whose references it shows"
            ),
            (true, None, Some(_)) => "; the last is an estimate reconciled with an earlier walk, before this recording's history".to_string(),
            (true, None, None) => "; the last is an estimate with no walk to reconcile with".to_string(),
            (false, _, _) => String::new(),
        }
    );
}

/// The groups ranked by growth, each under its parents, then what the estimated rows cannot
/// show.
fn render_groups(out: &mut String, report: &Report) {
    let retained = report.groups.iter().any(|g| g.retained_last.is_some());
    let order = if retained && report.window.from == report.window.to {
        "most retained first"
    } else {
        "strongest growth first"
    };
    let _ = writeln!(
        out,
        "{:>12} {:>12} {:>12} {:>9} {:>11} {:>11}  {}GROUP ({order}; ~ = estimate, ± its 95 % error)",
        "GROWTH",
        "OBJ FIRST",
        "OBJ LAST",
        "±",
        "BYTES FIRST",
        "BYTES LAST",
        if retained { format!("{:>11}  ", "RETAINED") } else { String::new() }
    );
    // Rows are ranked by growth, not grouped by parent, so a parent is printed again whenever
    // the path changes under it: each row then sits under its own ancestors.
    let mut previous: &[String] = &[];
    for group in &report.groups {
        let depth = group.path.len();
        let ancestors = &group.path[..depth.saturating_sub(1)];
        let shared = ancestors
            .iter()
            .zip(previous)
            .take_while(|(a, b)| a == b)
            .count();
        for (level, name) in ancestors.iter().enumerate().skip(shared) {
            let _ = writeln!(out, "{:>73}  {}{}", "", "  ".repeat(level), name);
        }
        previous = ancestors;
        let doubt = if let Some(dead) = group.unreachable {
            format!("  ({})", dead.describe())
        } else if group.objects_last_unconfirmed > 0 {
            format!(
                "  (up to {} may be garbage: no old-gen marking since)",
                count(group.objects_last_unconfirmed)
            )
        } else {
            String::new()
        };
        let kept = match (retained, group.retained_last) {
            (true, Some(r)) => format!("{:>11}  ", human_bytes(r)),
            (true, None) => format!("{:>11}  ", ""),
            (false, _) => String::new(),
        };
        let _ = writeln!(
            out,
            "{:>12} {:>12} {:>12} {:>9} {:>11} {:>11}  {kept}{}{}{}{doubt}",
            signed_count(group.objects_growth()),
            count(group.objects_first),
            count(group.objects_last),
            if group.objects_last_error > 0 {
                format!("±{}", count(group.objects_last_error))
            } else {
                String::new()
            },
            human_bytes(group.bytes_first),
            human_bytes(group.bytes_last),
            "  ".repeat(depth.saturating_sub(1)),
            if group.estimated { "~" } else { "" },
            group.path.last().map(String::as_str).unwrap_or("")
        );
    }
    if report.unfollowed_samples > 0 {
        let _ = writeln!(
            out,
            "{:>73}  ~ rows with no ± stand at their last walk's count: on this collector {} allocation samples of types that reference more were not followed, so what such a type grew by since its walk is not known",
            "",
            count(report.unfollowed_samples)
        );
    }
    if let Some(bound) = report.unsampled_bound_bytes {
        let _ = writeln!(
            out,
            "{:>73}  ~ rows with no ± had no allocation sample since their walk and stand at its count: together they may have grown by up to {} unseen (95 %: {} sampling intervals)",
            "",
            human_bytes(bound),
            UNSAMPLED_INTERVALS
        );
    }
}

/// The first `references` references of the last snapshot, when asked for and there are any.
fn render_references(out: &mut String, all: &[ReferenceJson], references: usize) {
    if references > 0 && !all.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:>12} {:>12}  REFERENCES in the last snapshot (referrers = distinct objects holding one)",
            "REFERRERS", "REFERENCES"
        );
        for r in all.iter().take(references) {
            let _ = writeln!(
                out,
                "{:>12} {:>12}  {} -> {}",
                count(r.referrers),
                count(r.references),
                r.from,
                r.to
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::session;
    use super::super::{build, GroupGrowth, WindowJson};
    use super::*;

    #[test]
    fn rows_sit_under_their_own_parents() {
        let report = Report {
            window: WindowJson {
                from: 0,
                to: 1,
                from_ms: 0,
                to_ms: 0,
            },
            suspects: Vec::new(),
            rising: Vec::new(),
            walks_in_window: 0,
            out_of_memory: None,
            compared: false,
            unsampled_bound_bytes: None,
            unfollowed_samples: 0,
            snapshots: 2,
            exact_snapshots: 2,
            estimated_snapshots: 0,
            last_estimated: false,
            last_anchor_seq: None,
            last_anchor: None,
            duration_ms: 0,
            classifiers: vec![],
            jvm: String::new(),
            gc: String::new(),
            pid: 0,
            groups: [["a", "x"], ["b", "y"], ["a", "z"]]
                .iter()
                .map(|p| GroupGrowth {
                    path: p.iter().map(|s| s.to_string()).collect(),
                    objects_first: 0,
                    objects_last: 1,
                    bytes_first: 0,
                    bytes_last: 0,
                    estimated: false,
                    objects_last_error: 0,
                    objects_last_unconfirmed: 0,
                    continuing: 1,
                    unreachable: None,
                    retained_last: None,
                })
                .collect(),
            references: vec![],
            overhead: 0.0,
            sampling_overhead: 0.0,
            warnings: vec![],
            dumps: vec![],
            retainers: vec![],
        };
        let text = render_text(&report, "f", 0);
        let names: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.contains("GROWTH"))
            .skip(1)
            .map(|l| l.trim_end().rsplit(' ').next().unwrap())
            .collect();
        assert_eq!(names, ["a", "x", "b", "y", "a", "z"], "{text}");
        // A recording with no JVM in its handshake is not called an export.
        assert!(
            text.lines()
                .next()
                .unwrap()
                .ends_with("no JVM details (its handshake names no JVM)"),
            "{text}"
        );
        let folder = tempfile::tempdir().unwrap();
        let text = render_text(&report, folder.path().to_str().unwrap(), 0);
        assert!(
            text.contains("(a Memory Cities export carries none)"),
            "{text}"
        );
    }

    #[test]
    fn text_is_a_tree() {
        let text = render_text(&build(&session(), 100).unwrap(), "x.mcrec", 5);
        assert!(text.contains("+990"), "{text}");
        let lines: Vec<&str> = text.lines().collect();
        let parent = lines
            .iter()
            .position(|l| l.trim_end().ends_with(" p"))
            .unwrap();
        assert!(lines[parent + 1].trim_end().ends_with("  A"), "{text}");
    }
}
