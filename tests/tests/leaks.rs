//! The leaking apps, on a real JVM with the real agent under G1, Parallel and ZGC (and JDK 25 when
//! installed): the leaking groups are the top growers of `memcity report --json`, and the
//! references from their holders are in the maps. The steady app shows no group growing.

use std::path::PathBuf;

use memcity_e2e::*;
use serde_json::Value;

const GCS: [&str; 3] = ["-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:+UseZGC"];

/// Runs `main` for `seconds` with the agent recording to a file, with a generous budget so a
/// short run yields several snapshots; returns the recording and its report.
fn run_recorded(
    jdk: &Jdk,
    main: &str,
    gc: &str,
    seconds: f64,
) -> (tempfile::TempDir, PathBuf, Value) {
    // Walks only: these tests check exact counts and the references of the last snapshot,
    // which estimates carry from their walk (estimates.rs tests those).
    let (dir, file) = record_run(jdk, main, &[gc], "estimates=off", seconds);
    let report = report_json(&file);
    let snapshots = report["snapshots"].as_u64().unwrap();
    assert!(
        snapshots >= 3,
        "{main} {gc}: only {snapshots} snapshots: {report:#}"
    );
    (dir, file, report)
}

fn last_objects(report: &Value, name: &str) -> u64 {
    report["groups"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["path"].as_array().unwrap().last().unwrap() == name)
        .map(|g| g["objects_last"].as_u64().unwrap())
        .sum()
}

/// `seen` equals `all` but for the few objects an app thread may hold only on its stack.
fn in_flight(seen: u64, all: u64) -> bool {
    seen <= all && seen + 4 >= all
}

fn check_linked_list_leak(report: &Value, label: &str) {
    let top = top_growers(report, 4);
    for leaking in [
        "LinkedListLeak$Person",
        "java.util.LinkedList$Node",
        "java.lang.String",
        "byte[]",
    ] {
        assert!(
            top.contains(&leaking.to_string()),
            "{label}: {leaking} not in top 4 {top:?}"
        );
    }
    let persons = last_objects(report, "LinkedListLeak$Person");
    assert!(
        growth(report, "LinkedListLeak$Person") > 5_000,
        "{label}: {persons}"
    );
    // Every live Person hangs off exactly one list node and holds two names, except the one the
    // app may be constructing at the safepoint (held by a stack local only).
    let (referrers, references) =
        reference(report, "java.util.LinkedList$Node", "LinkedListLeak$Person")
            .expect("Node -> Person");
    assert!(
        in_flight(referrers, persons),
        "{label}: {referrers} of {persons}"
    );
    assert_eq!(references, referrers, "{label}");
    let (referrers, references) =
        reference(report, "LinkedListLeak$Person", "java.lang.String").expect("Person -> String");
    assert!(
        in_flight(referrers, persons),
        "{label}: {referrers} of {persons}"
    );
    assert!(in_flight(references, 2 * persons), "{label}: {references}");
    assert!(
        reference(report, "java.lang.String", "byte[]").is_some(),
        "{label}"
    );
}

#[test]
fn linked_list_leak_is_found_under_each_collector() {
    let jdk = jdk17();
    for gc in GCS {
        let (_dir, _file, report) = run_recorded(&jdk, "LinkedListLeak", gc, 4.0);
        check_linked_list_leak(&report, gc);
    }
}

#[test]
fn linked_list_leak_on_jdk25() {
    let Some(jdk) = jdk25() else {
        skip(
            "jdk25",
            "no JDK 25 under /usr/lib/jvm (or MEMCITY_JDK25): the JDK 25 run is skipped",
        );
        return;
    };
    for gc in ["-XX:+UseG1GC", "-XX:+UseZGC"] {
        let (_dir, _file, report) = run_recorded(&jdk, "LinkedListLeak", gc, 4.0);
        check_linked_list_leak(&report, &format!("JDK 25 {gc}"));
    }
}

#[test]
fn host_pool_leak_is_found_under_each_collector() {
    let jdk = jdk17();
    for gc in GCS {
        let (_dir, _file, report) = run_recorded(&jdk, "HostPoolLeak", gc, 4.0);
        let top = top_growers(&report, 8);
        for leaking in [
            "HostPoolLeak$HostConnectionPool",
            "HostPoolLeak$HostConfiguration",
            "java.util.HashMap$Node",
        ] {
            assert!(
                top.contains(&leaking.to_string()),
                "{gc}: {leaking} not in top 8 {top:?}"
            );
        }
        let pools = last_objects(&report, "HostPoolLeak$HostConnectionPool");
        assert!(
            growth(&report, "HostPoolLeak$HostConnectionPool") > 2_000,
            "{gc}"
        );
        // The map's entries hold the pools: the path from the symptom to the cause.
        let (referrers, _) = reference(
            &report,
            "java.util.HashMap$Node",
            "HostPoolLeak$HostConnectionPool",
        )
        .expect("Node -> Pool");
        assert!(in_flight(referrers, pools), "{gc}: {referrers} of {pools}");
        assert!(reference(
            &report,
            "HostPoolLeak$HostConnectionPool",
            "java.util.LinkedList"
        )
        .is_some());
        assert!(reference(
            &report,
            "java.util.HashMap$Node[]",
            "java.util.HashMap$Node"
        )
        .is_some());
        // Closed connections are garbage: they must not be counted as live.
        assert!(
            last_objects(&report, "HostPoolLeak$Connection") < 100,
            "{gc}"
        );
    }
}

#[test]
fn cache_key_leak_is_found_under_each_collector() {
    let jdk = jdk17();
    for gc in GCS {
        let (_dir, _file, report) = run_recorded(&jdk, "CacheKeyLeak", gc, 4.0);
        let top = top_growers(&report, 6);
        for leaking in ["CacheKeyLeak$Location", "java.util.Date"] {
            assert!(
                top.contains(&leaking.to_string()),
                "{gc}: {leaking} not in top 6 {top:?}"
            );
        }
        let keys = last_objects(&report, "CacheKeyLeak$QueryKey");
        let locations = last_objects(&report, "CacheKeyLeak$Location");
        assert!(keys > 2_000, "{gc}: {keys}");
        // Three locations per cached query, each with its own date.
        assert!(
            in_flight(3 * keys, locations + 3) || in_flight(locations, 3 * keys),
            "{gc}: {locations} for {keys}"
        );
        let (referrers, _) = reference(&report, "CacheKeyLeak$Location", "java.util.Date").unwrap();
        assert!(in_flight(referrers, locations), "{gc}");
        let (referrers, _) = reference(
            &report,
            "java.util.concurrent.ConcurrentHashMap$Node",
            "CacheKeyLeak$QueryKey",
        )
        .unwrap();
        assert!(in_flight(referrers, keys), "{gc}: {referrers} of {keys}");
        assert!(reference(&report, "java.lang.Object[]", "CacheKeyLeak$Location").is_some());
    }
}

#[test]
fn steady_state_shows_no_group_growing() {
    let jdk = jdk17();
    for gc in GCS {
        let (_dir, file, _report) = run_recorded(&jdk, "SteadyState", gc, 4.0);
        let session = load_recording(&file).unwrap();
        let n = session.len();
        // From the first third on, the ring is full: any group that keeps growing is a leak.
        let from = n / 3;
        let baseline = session.leaves(from);
        let last = session.leaves(n - 1);
        // memcity's own objects (its JFR stream's, once started; an estimate's share of a
        // type sampled on its threads) are one labelled group, not the application's growth.
        for leaf in last
            .iter()
            .filter(|l| l.path.first().map(String::as_str) != Some(memcity_city::model::MEMCITY))
        {
            let before = baseline
                .iter()
                .filter(|b| b.path == leaf.path)
                .map(|b| b.objects)
                .sum::<u64>();
            assert!(
                leaf.objects <= before + before / 10 + 500,
                "{gc}: {:?} grew from {before} to {} (snapshots {from}..{n})",
                leaf.path,
                leaf.objects
            );
        }
        // The ring itself is seen whole (plus a new message the app may hold on its stack at the
        // safepoint, before it replaces its slot).
        let messages: u64 = last
            .iter()
            .filter(|l| l.path.last().unwrap() == "SteadyState$Message")
            .map(|l| l.objects)
            .sum();
        assert!((20_000..=20_004).contains(&messages), "{gc}: {messages}");
    }
}
