//! The true holder, from object-level paths (issue 18): leaks into container types that larger,
//! steady holders in the same heap also use, held by each kind of root, and LinkedListLeak with
//! memcity's own JFR stream running beside it. Real JVMs with the real agent; `memcity report
//! --json` must name the leak's own holder, never the big container's.

use memcity_e2e::*;
use serde_json::Value;

fn text(v: &Value, key: &str) -> String {
    v[key].as_str().unwrap_or_default().to_string()
}

/// Records ContainerLeaks in `mode` for 20 s and returns the first suspect and the report.
/// Sampling at 64 KiB and a path search allowed half a core: the leak must be told apart from
/// 400,000 steady Items of the same type within a short run.
fn container_leak(mode: &str) -> (Value, Value) {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("containers.mcrec");
    let mut app = AppSpec::new(&jdk, "ContainerLeaks", 20.0)
        .arg(mode)
        .flag("-XX:+UseG1GC")
        .flag("-Xmn16m")
        .flag("-Xmx1g")
        .agent(format!(
            "port=0,record={},budget=50,min_interval=250ms,period=400ms,paths=50%,sampling=64k",
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", std::time::Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(std::time::Duration::from_secs(120));
    assert!(status.success(), "{mode}: {}", app.stderr());
    assert!(
        stdout.last().is_some_and(|l| l.starts_with("DONE")),
        "{mode}: {stdout:?}"
    );
    keep_recording(&file, &format!("containers-{mode}"));
    let report = report_json(&file);
    let first = report["suspects"]
        .as_array()
        .and_then(|s| s.first())
        .cloned()
        .unwrap_or(Value::Null);
    (first, report)
}

/// `holder_in`: the field of the object above the holder, `None` when the root holds it
/// directly (then it is the root's name).
fn assert_holder(mode: &str, root: impl Fn(&str) -> bool, holder: &str, holder_in: Option<&str>) {
    let (s, report) = container_leak(mode);
    let got = text(&s, "root");
    assert!(root(&got), "{mode}: root {got}: {report:#}");
    assert_eq!(text(&s, "holder"), holder, "{mode}: {report:#}");
    assert_eq!(
        s["evidence"]["holder_in"].as_str(),
        Some(holder_in.unwrap_or(&got)),
        "{mode}: {s:#}"
    );
    assert_eq!(text(&s, "confidence"), "exact", "{mode}: {s:#}");
    // The steady containers hold more Items than the leak: no suspect may name them.
    for suspect in report["suspects"].as_array().unwrap() {
        let r = text(suspect, "root");
        for steady in ["CATALOG", "INDEX", "HISTORY"] {
            assert!(
                !r.contains(&format!("ContainerLeaks.{steady}")),
                "{mode}: a steady holder named: {suspect:#}"
            );
        }
    }
}

#[test]
fn a_static_hashmap_leak_beside_a_bigger_catalog_names_its_own_map() {
    assert_holder(
        "static",
        |r| r == "static ContainerLeaks.SESSIONS",
        "java.util.HashMap",
        None,
    );
}

#[test]
fn a_static_concurrent_map_leak_beside_a_bigger_index_names_its_own_map() {
    assert_holder(
        "chm",
        |r| r == "static ContainerLeaks.LISTENERS",
        "java.util.concurrent.ConcurrentHashMap",
        None,
    );
}

#[test]
fn a_thread_local_list_leak_beside_the_catalogs_lists_names_the_thread() {
    assert_holder(
        "thread",
        |r| r == "thread \"registry-worker\"",
        "java.util.ArrayList",
        Some("java.lang.ThreadLocal$ThreadLocalMap$Entry.value"),
    );
}

#[test]
fn a_local_linked_list_leak_beside_a_bigger_history_names_mains_frame() {
    assert_holder(
        "local",
        |r| {
            r.starts_with("local in ContainerLeaks.main(ContainerLeaks.java:")
                && r.ends_with(" of thread \"main\"")
        },
        "java.util.LinkedList",
        None,
    );
}

/// The README's demo leak with memcity's JFR stream started mid-run (the heap passes the size
/// where the agent lets full GCs count types): JFR's own `LinkedList` must not be taken for the
/// application's.
#[test]
fn linked_list_leak_with_the_jfr_stream_running_names_people() {
    let jdk = jdk17();
    let (_dir, file) = record_run(
        &jdk,
        "LinkedListLeak",
        &["-XX:+UseG1GC"],
        "gc_counts=100ms",
        14.0,
    );
    let model = load_recording(&file).expect("recording");
    assert!(
        model
            .frames()
            .iter()
            .any(|f| f.cost.is_some_and(|c| c.gc_counts_on)),
        "the JFR stream never started: the heap stayed under the size that starts it"
    );
    // A walk after JFR started counts its metadata's strings as memcity's: reached through
    // its lists' arrays, where the application's strings are of the same type.
    let on = model
        .frames()
        .iter()
        .position(|f| f.cost.is_some_and(|c| c.gc_counts_on))
        .unwrap();
    let walk = (on..model.frames().len())
        .rev()
        .find(|&i| !model.frames()[i].is_estimated())
        .expect("no walk after the JFR stream started");
    let ours = |type_name: &str| {
        model
            .find(&[memcity_city::model::MEMCITY, type_name])
            .map_or(0, |n| {
                model.value(n, walk, memcity_city::model::Metric::Objects)
            })
    };
    assert!(
        ours("java.lang.String") >= 2_000 && ours("java.util.ArrayList") >= 2_000,
        "memcity's strings {} and lists {} at the walk of snapshot {walk}",
        ours("java.lang.String"),
        ours("java.util.ArrayList")
    );
    let report = report_json(&file);
    let s = &report["suspects"][0];
    assert_eq!(
        text(s, "root"),
        "static LinkedListLeak.PEOPLE",
        "{report:#}"
    );
    assert_eq!(text(s, "holder"), "java.util.LinkedList", "{report:#}");
    assert_eq!(text(s, "confidence"), "exact", "{s:#}");
    for suspect in report["suspects"].as_array().unwrap() {
        for step in suspect["steps"].as_array().unwrap() {
            let t = text(step, "type");
            assert!(
                !t.starts_with("jdk.jfr") && !t.starts_with("memcity."),
                "memcity's own objects in a chain: {suspect:#}"
            );
        }
    }
}
