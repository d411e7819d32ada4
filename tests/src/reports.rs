//! `memcity report` of a recording, as JSON, and what the tests read and assert of it.

use std::path::Path;
use std::time::Duration;

use crate::cli::memcity;
use crate::{load_recording, CityModel};

/// `memcity report FILE --json --top 0`, parsed.
pub fn report_json(file: &Path) -> serde_json::Value {
    let out = memcity(
        &["report", file.to_str().unwrap(), "--json", "--top", "0"],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "report failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

/// Growth (objects) of the leaf whose last path element is `name`.
pub fn growth(report: &serde_json::Value, name: &str) -> i64 {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["path"].as_array().unwrap().last().unwrap() == name)
        .map(|g| g["objects_last"].as_i64().unwrap() - g["objects_first"].as_i64().unwrap())
        .sum()
}

/// Fails unless the report of a steady application is quiet: no suspect, nothing listed as
/// rising, and no group rising beyond its doubt (`assert_no_group_keeps_rising`). `label` names
/// the run in the messages.
pub fn assert_quiet(report: &serde_json::Value, label: &str) {
    assert_no_suspect(report, label);
    let rising = report["rising"].as_array().cloned().unwrap_or_default();
    assert!(rising.is_empty(), "{label}: rising: {rising:#?}");
}

/// Fails unless the report names no suspect and no group rises beyond its doubt
/// (`assert_no_group_keeps_rising`); what it lists as rising within the estimates' doubt
/// must be that: nothing of it backed. For a collector that marks the old generation only at
/// a full GC (Parallel, Serial), where promoted garbage stays in doubt until a full search or
/// a full GC judges it.
pub fn assert_no_suspect(report: &serde_json::Value, label: &str) {
    let suspects = report["suspects"].as_array().cloned().unwrap_or_default();
    assert!(suspects.is_empty(), "{label}: suspects: {suspects:#?}");
    for rising in report["rising"].as_array().into_iter().flatten() {
        assert!(
            rising["confirmed"] == false && rising["backed_growth"] == 0,
            "{label}: rising, and backed: {rising:#?}"
        );
    }
    assert_no_group_keeps_rising(report);
}

/// The report's groups with their paths, memcity's own aside (it is not the application's).
pub fn application_groups(report: &serde_json::Value) -> Vec<(Vec<&str>, &serde_json::Value)> {
    report["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| {
            let path: Vec<&str> = g["path"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect();
            (path, g)
        })
        .filter(|(path, _)| path.first() != Some(&memcity_city::model::MEMCITY))
        .collect()
}

/// Fails when a group of the application's (memcity's own aside) keeps rising beyond what its
/// estimate leaves in doubt, by a leak's worth: its `continuing` rise past its 95 % error and
/// its unconfirmed part, with a little slack for the noise of a line fitted to a steady,
/// churning count (2 % of the group, at least 200 objects), and, in bytes, past the share of
/// the heap that memcity calls the least leak (`leak::growers::MIN_GROWTH_BYTES_SHARE`: a few
/// hundred of a pool's closed sockets waiting for their cleaner until the next old collection,
/// which walks count, are really there, and are a wobble). Wants the report of every group
/// (`--top 0`, as `report_json` asks), whose bytes sum to the heap's.
pub fn assert_no_group_keeps_rising(report: &serde_json::Value) {
    let mut rising = Vec::new();
    let groups = report["groups"].as_array().expect("groups");
    let heap_bytes: i64 = groups
        .iter()
        .map(|g| g["bytes_last"].as_i64().unwrap_or(0))
        .sum();
    let least_bytes = heap_bytes as f64 * memcity_city::leak::growers::MIN_GROWTH_BYTES_SHARE;
    for (path, g) in application_groups(report) {
        let number = |key: &str| g[key].as_i64().unwrap_or_else(|| panic!("{key} in {g}"));
        let doubt = number("objects_last_error") + number("objects_last_unconfirmed");
        let slack = (number("objects_last") / 50).max(200);
        let bytes_each = number("bytes_last") as f64 / number("objects_last").max(1) as f64;
        let continuing_bytes = number("continuing") as f64 * bytes_each;
        if number("continuing") > doubt + slack && continuing_bytes > least_bytes {
            rising.push(format!(
                "{}: continuing +{} (growth {:+}, ±{}, {} unconfirmed)",
                path.join(" > "),
                number("continuing"),
                number("objects_last") - number("objects_first"),
                number("objects_last_error"),
                number("objects_last_unconfirmed")
            ));
        }
    }
    assert!(
        rising.is_empty(),
        "groups rising beyond their error:\n{}",
        rising.join("\n")
    );
}

/// Runs `check` on the report of `file`; when it fails, fails again with the series behind the
/// group its message names, or else the one the growth table ranks first (each snapshot's count, error, unconfirmed part, walk or
/// estimate) in the message, which is what CI keeps of a failure: a rare flake on another
/// machine is then diagnosed from its own numbers.
pub fn with_series_on_failure(file: &Path, report: &serde_json::Value, check: impl FnOnce()) {
    let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check)) else {
        return;
    };
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    // The group the message names (a suspect's or rising entry's type, quoted in its JSON, or a
    // growth row), else the one the growth table ranks first.
    let groups = application_groups(report);
    let named = |path: &[&str]| {
        path.last().is_some_and(|leaf| {
            message.contains(&format!("\"{leaf}\"")) || message.contains(&format!("{leaf}: "))
        })
    };
    let first = groups
        .iter()
        .filter(|(path, _)| named(path))
        .chain(groups.iter())
        .max_by_key(|(path, g)| (named(path), g["continuing"].as_i64().unwrap_or(0)))
        .map(|(path, _)| path.clone());
    let series = match (first, load_recording(file)) {
        (Some(path), Ok(model)) => group_series(&model, &path),
        (_, Err(e)) => format!("(the recording did not load: {e})"),
        (None, _) => String::new(),
    };
    // The series first: CI shows a failure's first 60 lines, and the message may be long.
    panic!("{series}\n{message}");
}

/// One line per snapshot of the window for the group at `path`: seconds, count, ± error,
/// unconfirmed part, `W` for a walk and `E` for an estimate, `P` where a path search ended.
fn group_series(model: &CityModel, path: &[&str]) -> String {
    use memcity_city::model::Metric;
    let Some(id) = model.find(path) else {
        return format!("(no group {path:?} in the recording)");
    };
    let w = model.window();
    let mut out = format!(
        "series of {} (window {}..={}):",
        path.join(" > "),
        w.start,
        w.end
    );
    // At most 40 lines, evenly spaced, the window's ends among them: CI shows 60 of a failure.
    let step = (w.end - w.start).div_ceil(39).max(1);
    let shown = (w.start..=w.end)
        .filter(|i| (i - w.start).is_multiple_of(step) || *i == w.end)
        .filter_map(|i| model.frames().get(i).map(|f| (i, f)));
    for (i, f) in shown {
        out.push_str(&format!(
            "\n{i:3} {:6.1} s {:>8} ±{:<7} u {:<7} {}{}",
            f.time_ms as f64 / 1000.0,
            model.value(id, i, Metric::Objects),
            model.error(id, i, Metric::Objects),
            model.unconfirmed(id, i, Metric::Objects),
            if f.is_estimated() { "E" } else { "W" },
            if f.paths.is_some() { " P" } else { "" },
        ));
    }
    out
}

/// Leaf names of the `k` strongest growers.
pub fn top_growers(report: &serde_json::Value, k: usize) -> Vec<String> {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .take(k)
        .map(|g| {
            g["path"]
                .as_array()
                .unwrap()
                .last()
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect()
}

/// `(referrers, references)` from `from` to `to` in the last snapshot, if present.
pub fn reference(report: &serde_json::Value, from: &str, to: &str) -> Option<(u64, u64)> {
    report["references"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["from"] == from && r["to"] == to)
        .map(|r| {
            (
                r["referrers"].as_u64().unwrap(),
                r["references"].as_u64().unwrap(),
            )
        })
}
