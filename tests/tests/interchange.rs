//! Sessions to and from the original tools (issue 19): `memcity export --memory-cities` writes
//! what `memcity report` and `replay` read back as the same city; every command that reads a
//! session takes a recording or a Memory Cities folder alike.

use std::time::Duration;

use memcity_e2e::*;

#[test]
fn an_exported_session_reports_as_its_recording_does() {
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("mc");
    let out = memcity(
        &[
            "export",
            golden.to_str().unwrap(),
            "--memory-cities",
            out_dir.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
