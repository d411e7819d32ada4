//! `memcity lifetimes` on a recording with lifetimes (written by `synthetic`), and its clear
//! refusals where a session has none.

use std::time::Duration;

use memcity_e2e::synthetic::lifetimes_recording;
use memcity_e2e::*;

fn run(args: &[&str]) -> (bool, String, String) {
    let out = memcity(args, Duration::from_secs(30));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn lifetimes_prints_pairs_and_nursery_escapees() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lives.mcrec");
    lifetimes_recording(&file).unwrap();
    let file = file.to_str().unwrap();

    let (ok, stdout, stderr) = run(&["lifetimes", file, "--json"]);
    assert!(ok, "{stderr}");
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    // Four snapshots book deaths (the first has none).
    let pairs: Vec<(String, String, f64)> = json["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["alloc"].as_str().unwrap().to_string(),
                p["death"].as_str().unwrap().to_string(),
                p["objects"].as_f64().unwrap(),
            )
        })
        .collect();
    let pair = |a: &str, d: &str, n: f64| (a.to_string(), d.to_string(), n);
    assert_eq!(
        pairs,
        [
            pair("app.Loader", "app.Cache", 1600.0),
            pair("app.Cache", "app.Cache", 1200.0),
            pair("app.Worker", "app.Session", 800.0),
            pair("app.Cache", "(died unseen)", 400.0),
            pair("app.Worker", "(died unseen)", 200.0),
        ]
    );
    assert_eq!(json["pairs"][0]["median_gc_age"], "2-3");
    assert_eq!(json["deaths_booked"], 20);
    assert_eq!(json["objects_alive"], 65.0);
    let escapees = json["escapees"].as_array().unwrap();
    assert_eq!(escapees.len(), 2, "{escapees:?}");
    assert_eq!(escapees[0]["site"], "app.Loader.load(Loader.java:9)");
    assert_eq!(escapees[0]["escape_share"], 1.0);
    assert_eq!(escapees[0]["short_lived_share"], 0.0);
    assert_eq!(escapees[1]["context"], "app.Worker");
    assert_eq!(escapees[1]["escape_share"], 0.8);
    assert_eq!(escapees[1]["short_lived_share"], 1.0);

    let (ok, text, _) = run(&["lifetimes", file, "--min-gcs", "1"]);
    assert!(ok);
    assert!(text.contains("app.Loader -> app.Cache"), "{text}");
    assert!(
        !text.contains("app.Cache -> app.Cache"),
        "died young: {text}"
    );
    assert!(text.contains("cannot tell the method"), "{text}");
}

#[test]
fn sessions_without_lifetimes_say_why() {
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let (ok, _, stderr) = run(&["lifetimes", golden.to_str().unwrap()]);
    assert!(!ok);
    assert!(
        // The golden recording predates lifetimes: its handshake does not know them.
        stderr.contains("carries lifetimes") && stderr.contains("predates lifetimes"),
        "{stderr}"
    );
    let dir = tempfile::tempdir().unwrap();
    let (ok, _, stderr) = run(&["lifetimes", dir.path().to_str().unwrap()]);
    assert!(!ok);
    assert!(stderr.contains("Memory Cities export"), "{stderr}");
    let (ok, _, stderr) = run(&["lifetimes", "x.mcrec", "--min-gcs", "3"]);
    assert!(!ok);
    assert!(stderr.contains("give 0, 1, 2, 4"), "{stderr}");
}
