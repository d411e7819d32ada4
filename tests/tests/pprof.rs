//! `memcity export --pprof` end to end: `LinkedListLeak` runs on a real JVM with the real agent
//! recording, the real `memcity` writes the live heap at the last snapshot as a pprof profile,
//! and Go's own `go tool pprof` (Debian's `golang-go`) reads it. Ranked by allocating method
//! (the type frames and the JDK's hidden), its top entry must be the leak's allocation site, the
//! line of `LinkedListLeak.java` that adds a `Person` with its two names to the list, with the
//! objects and bytes `memcity report` gives that site; and the people it counts must be the
//! app's own count within the stated error. Once with a `site` level, once with the agent's
//! default grouping, where the sites come from the lifetimes' survivors.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use memcity_city::model::{Metric, Role};
use memcity_e2e::*;
use serde_json::Value;

/// Seconds of leaking: about 120,000 people at the app's 20,000 a second.
const SECONDS: f64 = 6.0;

/// A sampling interval small enough that a 6 s leak has hundreds of samples per leaking type
/// (at the default 512 KiB it would have a handful), fixed (no adaptation to cost) so that the
/// numbers do not depend on how slow a debug agent is on a loaded machine.
const SAMPLING: &str = "sampling=16k,sampling_cost=off";

/// Hides the type frames (their mapping) and the JDK's frames, so that every stack ends in the
/// application method that allocated: what `-top` ranks is then allocation sites.
const APP_SITES: &str = r"memcity-types|^(java|jdk|sun)\.|\(library frames\)";

/// What the estimates' stated 95 % errors are widened by where an estimate is compared with the
/// truth (the app's own count): about 3.3 standard errors, as `estimates.rs` does, so that a
/// sound estimate fails one run in a thousand rather than one in twenty.
const TRUTH_MARGIN: f64 = 1.7;

fn go() -> Option<PathBuf> {
    find_on_path("go")
}

/// The line of `LinkedListLeak.java` that allocates what leaks: a `Person`, its two names (by
/// string concatenation) and the list's node.
fn leak_line() -> usize {
    let source =
        std::fs::read_to_string(root().join("jvm-test-apps/src/LinkedListLeak.java")).unwrap();
    source
        .lines()
        .position(|l| l.contains("PEOPLE.add(new Person("))
        .expect("LinkedListLeak adds people")
        + 1
}

/// `go tool pprof -symbolize=none ARGS FILE`'s standard output. Offline and out of the user's
/// home: pprof keeps fetched profiles under `$PPROF_TMPDIR` (else `$HOME/pprof`), and the go
/// command reads `$HOME` for its caches.
fn pprof(go: &Path, args: &[&str], file: &Path) -> String {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(go)
        .args(["tool", "pprof", "-symbolize=none"])
        .args(args)
        .arg(file)
        .env("HOME", home.path())
        .env("PPROF_TMPDIR", home.path())
        .env("GOTOOLCHAIN", "local")
        .env("GOPROXY", "off")
        .env("GOFLAGS", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run go tool pprof");
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("go tool pprof {args:?} did not finish within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "go tool pprof {args:?}: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The entries of `-top` output, `(flat, name)`, in pprof's order (flat, largest first).
fn top_entries(output: &str) -> Vec<(String, String)> {
    output
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("flat  flat%"))
        .skip(1)
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            (fields.len() >= 6).then(|| (fields[0].to_string(), fields[5..].join(" ")))
        })
        .collect()
}

/// A `-top` value as a number: objects as pprof prints counts, bytes with `-unit=B` (`1234B`).
fn number(value: &str) -> i64 {
    value
        .trim_end_matches('B')
        .parse()
        .unwrap_or_else(|_| panic!("not a whole number: {value}"))
}

/// Runs the leak with `options`, exports its last snapshot with the real `memcity`, and
/// returns the recording's directory (the files live as long as it), the recording, the
/// profile, the people the app made and what `memcity export` printed.
fn leak_profile(options: &str) -> (tempfile::TempDir, PathBuf, PathBuf, u64, String) {
    let jdk = jdk17();
    let (dir, recording, stdout) = record_run_output(
        &jdk,
        "LinkedListLeak",
        &["-XX:+UseG1GC"],
        &format!("{SAMPLING},{options}"),
        SECONDS,
    );
    let people: u64 = stdout
        .last()
        .and_then(|l| l.strip_prefix("DONE people="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no people count: {stdout:?}"));
    let profile = dir.path().join("heap.pb.gz");
    let out = memcity(
        &[
            "export",
            recording.to_str().unwrap(),
            "--pprof",
            profile.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "export failed: {}\n{said}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains(&format!("wrote {}", profile.display()))
            && said.contains(" samples, ")
            && said.contains(" stacks, "),
        "{said}"
    );
    (dir, recording, profile, people, said)
}

/// The report's leaf groups (last snapshot) of `type_name`, or of every type when `None`,
/// whose site's first application frame is `frame`: their objects, bytes and objects' errors.
fn report_sites(report: &Value, type_name: Option<&str>, frame: &str) -> (u64, u64, u64) {
    let mut sum = (0, 0, 0);
    for group in report["groups"].as_array().unwrap() {
        let path: Vec<&str> = group["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        let [_, ty, site] = path[..] else {
            panic!("grouped by package, type and site: {path:?}");
        };
        // With one naming frame, a site is the allocating frame, then (below library code)
        // `... <- ` the first application frame.
        if type_name.is_some_and(|t| t != ty) || site.rsplit(" <- ").next() != Some(frame) {
            continue;
        }
        sum.0 += group["objects_last"].as_u64().unwrap();
        sum.1 += group["bytes_last"].as_u64().unwrap();
        sum.2 += group["objects_last_error"].as_u64().unwrap();
    }
    sum
}

#[test]
fn the_leak_site_tops_go_tool_pprof_with_the_reports_numbers() {
    let Some(go) = go() else {
        skip(
            "go",
            "no go command (scripts/setup.sh installs Debian's golang-go): pprof export unchecked",
        );
        return;
    };
    let line = leak_line();
    let (_dir, recording, profile, people, said) = leak_profile("classifiers=package:type:site");
    assert!(!said.contains("survivors"), "a site level is used: {said}");
    let report = report_json(&recording);
    let frame = format!("LinkedListLeak.main(LinkedListLeak.java:{line})");
    let (objects, bytes, error) = report_sites(&report, None, &frame);
    assert!(
        objects > people * 4,
        "the leak's site holds the leak: {objects}"
    );

    // By objects and by bytes, the leak's line tops the allocating methods.
    let site = format!("LinkedListLeak.main LinkedListLeak.java:{line}");
    let by_objects = pprof(
        &go,
        &[
            "-top",
            "-lines",
            "-sample_index=inuse_objects",
            &format!("-hide={APP_SITES}"),
        ],
        &profile,
    );
    let top = top_entries(&by_objects);
    assert_eq!(top.first().map(|t| &t.1), Some(&site), "{by_objects}");
    let counted = number(&top[0].0);
    eprintln!("pprof: {counted} objects at {site}; the report: {objects} ±{error}");
    assert!(
        counted.abs_diff(objects as i64) <= error,
        "pprof reads {counted} objects at the leak's site, the report says {objects} ±{error}\n{by_objects}"
    );
    let by_bytes = pprof(
        &go,
        &[
            "-top",
            "-lines",
            "-unit=B",
            "-sample_index=inuse_space",
            &format!("-hide={APP_SITES}"),
        ],
        &profile,
    );
    let top = top_entries(&by_bytes);
    assert_eq!(top.first().map(|t| &t.1), Some(&site), "{by_bytes}");
    let model = load_recording(&recording).unwrap();
    let last = model.len() - 1;
    let bytes_error: u64 = (1..model.nodes().len() as u32)
        .filter(|&n| {
            let node = model.node(n);
            node.role == Role::AllocationSite && node.name.rsplit(" <- ").next() == Some(&frame)
        })
        .map(|n| model.error(n, last, Metric::Bytes))
        .sum();
    assert!(
        number(&top[0].0).abs_diff(bytes as i64) <= bytes_error,
        "pprof reads {} at the leak's site, the report says {bytes} ±{bytes_error}\n{by_bytes}",
        top[0].0
    );

    // The people, by the type's label: all of them, as the app counted, within the error.
    let person = pprof(
        &go,
        &[
            "-top",
            "-sample_index=inuse_objects",
            r"-tagfocus=type=^LinkedListLeak\$Person$",
        ],
        &profile,
    );
    let top = top_entries(&person);
    assert_eq!(
        top.first().map(|t| t.1.as_str()),
        Some("LinkedListLeak$Person"),
        "the type is the leaf frame: {person}"
    );
    let counted = number(&top[0].0);
    let (_, _, person_error) = report_sites(&report, Some("LinkedListLeak$Person"), &frame);
    let unsampled = report_sites(&report, Some("LinkedListLeak$Person"), "(unsampled)");
    let stated = person_error + unsampled.2;
    eprintln!("pprof: {counted} people; the app made {people}; stated error ±{stated}");
    assert!(
        counted.abs_diff(people as i64) as f64 <= stated as f64 * TRUTH_MARGIN + 1.0,
        "pprof counts {counted} people, the app made {people}, the stated error is ±{stated}\n{person}"
    );

    // What the profile says about itself: the snapshot, where sites come from, the error.
    let comments = pprof(&go, &["-comments"], &profile);
    assert!(
        comments.contains(&format!("at snapshot {} of {}", model.len(), model.len()))
            && comments.contains("the agent's `site` level")
            && comments.contains("95 % error of the objects"),
        "{comments}"
    );
}

#[test]
fn without_a_site_level_the_survivors_name_the_leak_site() {
    let Some(go) = go() else {
        skip(
            "go",
            "no go command (scripts/setup.sh installs Debian's golang-go): pprof export unchecked",
        );
        return;
    };
    let line = leak_line();
    // The agent's default grouping (package:type) with its default lifetimes.
    let (_dir, recording, profile, people, said) = leak_profile("");
    assert!(
        said.contains("from the lifetimes' survivors")
            && said.contains("classifiers=package:type:site"),
        "the command says where the sites come from and what gives better: {said}"
    );
    let site = format!("LinkedListLeak.main LinkedListLeak.java:{line}");
    let by_objects = pprof(
        &go,
        &[
            "-top",
            "-lines",
            "-sample_index=inuse_objects",
            &format!("-hide={APP_SITES}"),
        ],
        &profile,
    );
    let top = top_entries(&by_objects);
    assert_eq!(top.first().map(|t| &t.1), Some(&site), "{by_objects}");
    // Each person is six live objects allocated on that line: itself, its list node, its two
    // names and their two byte arrays. The stated error of those stacks, from the same
    // profile built in memory.
    let counted = number(&top[0].0);
    let model = load_recording(&recording).unwrap();
    let built = memcity_city::pprof::heap_profile(&model, model.len() - 1, None).unwrap();
    let p = &built.profile;
    let text = |i: i64| p.string_table[i as usize].as_str();
    let frame_of = |location: u64| {
        let loc = &p.location[location as usize - 1];
        let f = &p.function[loc.line[0].function_id as usize - 1];
        (text(f.name).to_string(), loc.line[0].line)
    };
    let stated: u64 = p
        .sample
        .iter()
        .zip(&built.errors)
        .filter(|(s, _)| {
            s.location_id.last().map(|&l| frame_of(l))
                == Some(("LinkedListLeak.main".to_string(), line as i64))
        })
        .map(|(_, &e)| e)
        .sum();
    let truth = people * 6;
    eprintln!("pprof: {counted} objects at {site}; the app made {truth}; stated error ±{stated}");
    assert!(
        counted.abs_diff(truth as i64) as f64 <= stated as f64 * TRUTH_MARGIN,
        "pprof reads {counted} objects at the leak's site, the app made {truth}, the stated error is ±{stated}\n{by_objects}"
    );
    let comments = pprof(&go, &["-comments"], &profile);
    assert!(
        comments.contains("no `site` level") && comments.contains("one sample in 8"),
        "{comments}"
    );
}
