//! Steady applications at the agent's defaults: nothing named a leak, nothing listed as rising,
//! and no group of the application's rising beyond what its estimates leave in doubt. The
//! promoted garbage of a steady application waits for an old-generation marking; the collectors'
//! counts (`collectors.rs` `MarkingClock`) and canaries tell the estimates when one has run.

use std::time::Duration;

use memcity_e2e::*;

/// How long SteadyState runs, and its ring of live messages (the rest dies young).
const SECONDS: f64 = 20.0;
const RING: &str = "200000";

/// Runs SteadyState on `jdk` with `flags` and the agent at its defaults (a port and a recording
/// only), and checks its report.
fn steady_at_defaults(jdk: &Jdk, flags: &[&str]) {
    let label = format!("JDK {} {flags:?}", jdk.major);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steady.mcrec");
    let mut app = AppSpec::new(jdk, "SteadyState", SECONDS)
        .arg(RING)
        .flags(flags)
        .flag("-Xmx1g")
        .agent(format!("port=0,record={}", file.display()))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "{label}: {stdout:?}: {}", app.stderr());
    keep_recording(&file, &format!("steady-{}-{}", jdk.major, flags.join("")));
    // Every row (`--top 0`), so that each the JSON finds dead is in the text too.
    let out = memcity(
        &["report", file.to_str().unwrap(), "--top", "0"],
        Duration::from_secs(60),
    );
    eprintln!("{label}:\n{}", String::from_utf8_lossy(&out.stdout));
    let report = report_json(&file);
    with_series_on_failure(&file, &report, || assert_quiet(&report, &label));
    assert_every_rise_explained(&report, &label);
    assert_dead_rises_said(&report, &String::from_utf8_lossy(&out.stdout), &label);
}

/// Each row the JSON finds dead says so in the text table, as the README shows it.
fn assert_dead_rises_said(report: &serde_json::Value, text: &str, label: &str) {
    for (path, g) in application_groups(report) {
        let dead = &g["unreachable"];
        let said = if let Some(counted) = dead["counted"].as_u64() {
            format!(
                "({} reachable at snapshot {} of {} estimated, every root searched: the rise is dead in the old generation)",
                memcity_city::units::count(counted),
                dead["snapshot"],
                memcity_city::units::count(dead["estimated"].as_u64().unwrap())
            )
        } else if let Some(unreached) = dead["unreached"].as_u64() {
            format!(
                "({} of {} sampled objects unreachable:",
                memcity_city::units::count(unreached),
                memcity_city::units::count(dead["looked_for"].as_u64().unwrap())
            )
        } else {
            continue;
        };
        let name = path.last().unwrap();
        assert!(
            text.lines().any(|l| l.contains(*name) && l.contains(&said)),
            "{label}: {} has no row saying {said:?}:\n{text}",
            path.join(" > ")
        );
    }
}

/// A group of the application's that rose by more objects than the app holds alive (its ring
/// of messages, four objects each, and what a JVM has besides) says why on its row: what may
/// be garbage no marking has met yet covers the rise, or a complete path search found it dead
/// in the old generation (`unreachable`, "... dead in the old generation"). Generational ZGC
/// keeps the sampled garbage through its young collections: the byte[] estimate rises by
/// millions there between major collections.
fn assert_every_rise_explained(report: &serde_json::Value, label: &str) {
    let alive_at_most = 4 * RING.parse::<i64>().unwrap();
    let mut unexplained = Vec::new();
    for (path, g) in application_groups(report) {
        let number = |key: &str| g[key].as_i64().unwrap_or_else(|| panic!("{key} in {g}"));
        let growth = number("objects_last") - number("objects_first");
        let explained = g.get("unreachable").is_some_and(|u| !u.is_null())
            || growth <= number("objects_last_error") + number("objects_last_unconfirmed");
        if growth > alive_at_most && !explained {
            unexplained.push(format!("{}: {growth:+} {g}", path.join(" > ")));
        }
    }
    assert!(
        unexplained.is_empty(),
        "{label}: rises no row explains:\n{}",
        unexplained.join("\n")
    );
}

#[test]
fn steady_state_at_defaults_on_g1_and_parallel() {
    let jdk = jdk17();
    for gc in ["-XX:+UseG1GC", "-XX:+UseParallelGC"] {
        steady_at_defaults(&jdk, &[gc]);
    }
}

/// Generational ZGC (the only ZGC from JDK 24): its young collections promote the ring's
/// garbage and only its major collections free it.
#[test]
fn steady_state_at_defaults_on_jdk25_zgc() {
    let Some(jdk) = jdk25() else {
        skip(
            "jdk25",
            "no JDK 25 under /usr/lib/jvm (or MEMCITY_JDK25): the generational ZGC run is skipped",
        );
        return;
    };
    steady_at_defaults(&jdk, &["-XX:+UseZGC"]);
}
