//! Sessions to and from the original tools (issue 19): `memcity export --memory-cities` writes
//! what `memcity report` and `replay` read back as the same city; every command that reads a
//! session takes a recording or a Memory Cities folder alike.

use std::time::Duration;

use memcity_e2e::*;

/// `memcity export FILE --memory-cities DIR`, which must succeed.
fn export_memory_cities(file: &std::path::Path, dir: &std::path::Path) -> std::process::Output {
    let out = memcity(
        &[
            "export",
            file.to_str().unwrap(),
            "--memory-cities",
            dir.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn an_exported_session_reports_as_its_recording_does() {
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("mc");
    let out = export_memory_cities(&golden, &out_dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let folder = out_dir.join("PackageTypeAllocationSite");
    assert_eq!(
        stdout.trim_end(),
        format!(
            "memcity: wrote 5 snapshots to {} (open it with `memcity replay` or the original Memory Cities tool)",
            folder.display()
        )
    );
    // The report says what an export is, and groups it by its levels.
    let text = memcity(
        &["report", folder.to_str().unwrap()],
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    assert!(
        first.ends_with("no JVM details (a Memory Cities export carries none)"),
        "{text}"
    );
    assert!(
        text.contains("grouped by Package > Type > Allocation Site;"),
        "{text}"
    );
    // Suspects without a holder say why in an export's terms, not a recording's.
    assert!(
        text.contains("holder unknown: a Memory Cities export carries no object paths")
            && !text.contains("Record with the current agent"),
        "{text}"
    );
    // The export root and its classifier folder both open.
    for source in [&out_dir, &folder] {
        let from_export = report_json(source);
        let from_recording = report_json(&golden);
        assert_eq!(
            top_growers(&from_export, 5),
            top_growers(&from_recording, 5),
            "{}",
            source.display()
        );
        for name in ["LinkedListLeak$Person", "java.lang.String"] {
            assert_eq!(
                growth(&from_export, name),
                growth(&from_recording, name),
                "{name}"
            );
        }
    }
}

/// Two recordings of one leaking application made by this agent, a short one and a longer one:
/// `report A B` names the leak's holder from the second's object paths, as a rise from one to
/// the other; and the longer one's Memory Cities export reads back with the same growth window
/// and top growers, and no warning of anything it cannot place.
#[test]
fn two_real_recordings_compare_with_their_paths_and_export_alike() {
    let jdk = jdk17();
    let (_short_dir, short) = record_run(&jdk, "LinkedListLeak", &["-XX:+UseG1GC"], "", 3.0);
    let (long_dir, long) = record_run(&jdk, "LinkedListLeak", &["-XX:+UseG1GC"], "", 8.0);
    keep_recording(&short, "compare-short");
    keep_recording(&long, "compare-long");
    let (short_s, long_s) = (short.to_str().unwrap(), long.to_str().unwrap());

    let out = memcity(
        &["report", short_s, long_s, "--json", "--top", "0"],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let both: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(both["compared"], true);
    // The holder is named, whether its rise is beyond the estimates' doubt (a suspect) or not
    // yet (rising, with its holder).
    let named: Vec<&serde_json::Value> = both["suspects"]
        .as_array()
        .unwrap()
        .iter()
        .chain(both["rising"].as_array().unwrap())
        .filter(|s| s["root"] == "static LinkedListLeak.PEOPLE")
        .collect();
    assert!(!named.is_empty(), "{both:#}");
    assert!(
        named.iter().all(|s| s["holder"] == "java.util.LinkedList"),
        "{both:#}"
    );
    let text = memcity(&["report", short_s, long_s], Duration::from_secs(60));
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    assert!(
        text.contains("static LinkedListLeak.PEOPLE") && !text.contains("carries no object paths"),
        "{text}"
    );

    // Export and read back: the same window, the same growers, nothing left unplaced.
    let out_dir = long_dir.path().join("mc");
    export_memory_cities(&long, &out_dir);
    let folder = out_dir.join("PackageType");
    let out = memcity(
        &["report", folder.to_str().unwrap(), "--json", "--top", "0"],
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stderr.contains("warning"),
        "{stderr}"
    );
    let from_export: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let from_recording = report_json(&long);
    assert_eq!(from_export["window"], from_recording["window"]);
    // The leak's groups grew by the same counts in both. (Not their rank: an export keeps the
    // numbers, not the estimates' error and unconfirmed part that rank a rise.)
    for name in [
        "java.lang.String",
        "byte[]",
        "LinkedListLeak$Person",
        "java.util.LinkedList$Node",
    ] {
        let grew = growth(&from_recording, name);
        assert!(grew > 10_000, "{name}: {grew}");
        assert_eq!(growth(&from_export, name), grew, "{name}");
    }
    assert_eq!(
        from_export["groups"].as_array().unwrap().len(),
        from_recording["groups"].as_array().unwrap().len()
    );
}
