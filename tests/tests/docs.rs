//! The docs cannot rot: the README's two commands exist and work, its options table is the
//! agent's own list of keys, and `--help` output is checked against snapshots.

use std::time::Duration;

use memcity_e2e::*;

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).unwrap()
}

/// The commands in the README's "Two commands on a fresh machine" block.
fn readme_commands() -> Vec<String> {
    let text = readme();
    let section = &text[text
        .find("## Two commands on a fresh machine")
        .expect("section")..];
    let block = &section[section.find("```sh").unwrap() + 5..];
    let block = &block[..block.find("```").unwrap()];
    block
        .lines()
        .map(|l| l.split('#').next().unwrap().trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// The page's address parameters the README's browser section lists are those the page takes.
#[test]
fn readme_lists_the_pages_address_parameters() {
    let text = readme();
    let section = &text[text
        .find("**In the browser.**")
        .expect("the browser section")..];
    let table = &section[section
        .find("| Parameter |")
        .expect("the parameters' table")..];
    let table = &table[..table.find("\n\n").unwrap_or(table.len())];
    let documented: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| &l[..l.find('`').unwrap()])
        .collect();
    assert_eq!(documented, memcity_viewer::page_look::KEYS);
}

#[test]
fn readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one() {
    let commands = readme_commands();
    assert_eq!(commands, ["scripts/demo.sh", "scripts/test.sh"]);
    for command in &commands {
        let path = root().join(command);
        let mode = std::os::unix::fs::PermissionsExt::mode(
            &std::fs::metadata(&path).unwrap().permissions(),
        );
        assert!(mode & 0o111 != 0, "{command} is not executable");
    }
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    assert!(
        ci.contains("scripts/test.sh"),
        ".ci/run must call the README's test command"
    );
}

#[test]
fn readme_demo_command_runs_and_shows_the_leak() {
    ensure_built();
    let mut demo = std::process::Command::new(root().join("scripts/demo.sh"));
    // The script builds with cargo: not with this test's per-crate variables (see `cargo`).
    without_test_crate_env(&mut demo);
    // As the README runs it: no arguments, 20 s of LinkedListLeak. Its recording and logs go
    // to a folder of the test's: the user's own demo under target/demo stays as it was.
    let out_dir = tempfile::tempdir().unwrap();
    let out = demo
        .env("MEMCITY_PROFILE", "debug")
        .env("MEMCITY_DEMO_DIR", out_dir.path())
        // The text path (the window path is `memcity demo`, tested under Xvfb in window.rs); on
        // a desktop a display would otherwise open a window that waits for its user.
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("snapshots"),
        "the live record step ran: {stderr}"
    );
    assert!(
        out_dir.path().join("demo.mcrec").is_file(),
        "the demo recorded into MEMCITY_DEMO_DIR: {stdout}"
    );
    // The growth table's row (the suspects above it mention the type too).
    let person = stdout
        .lines()
        // A row may end with how much of an estimate may be garbage: "  (up to ...)".
        .map(|l| l.split("  (up to").next().unwrap_or(l))
        .find(|l| {
            l.trim_end().ends_with("LinkedListLeak$Person")
                && l.trim_start()
                    .starts_with(|c: char| c == '+' || c == '-' || c.is_ascii_digit())
        })
        .unwrap_or_else(|| panic!("no Person row in the demo report: {stdout}"));
    assert!(
        person.trim_start().starts_with('+'),
        "Person grows: {person}"
    );
    assert!(
        stdout.contains("java.util.LinkedList$Node -> LinkedListLeak$Person"),
        "{stdout}"
    );
    assert!(
        stdout.contains("GC root: static LinkedListLeak.PEOPLE"),
        "the demo's report names the leak's root: {stdout}"
    );
    // The first suspect is the application's list, named from object paths, exactly as the
    // README shows it (memcity's own JFR stream, started as the heap grows, never is).
    let first = stdout
        .lines()
        .find(|l| l.starts_with("1. "))
        .unwrap_or_else(|| panic!("no suspect in the demo report: {stdout}"));
    assert!(
        first.starts_with(
            "1. java.util.LinkedList (static LinkedListLeak.PEOPLE, confidence exact) holds a growth of +"
        ),
        "{first}\n{stdout}"
    );
    // What it holds, most bytes first: the people's names, their bytes and then their strings.
    let holds = first.rsplit(": ").next().unwrap_or_default();
    assert!(holds.starts_with("byte[], java.lang.String, "), "{first}");
    // Suspects and the growth table (the references table lists what points where, JFR's too).
    let ranked = stdout.split("REFERRERS").next().unwrap_or_default();
    assert!(
        !ranked.contains("jdk.jfr"),
        "memcity's JFR objects ranked as the application's growth: {stdout}"
    );
}

#[test]
fn readme_options_table_lists_exactly_the_agents_keys() {
    let text = readme();
    let section = &text[text.find("## Agent options").unwrap()..];
    let section = &section[..section[3..].find("\n## ").unwrap()];
    let mut documented: Vec<String> = section
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|l| l[..l.find('`').unwrap()].to_string())
        .collect();
    // The agent's own list, as it prints it when an option is wrong.
    let jdk = jdk17();
    let mut app = AppSpec::new(&jdk, "SteadyState", 1.0)
        .agent("port=bad")
        .spawn();
    app.wait_exit(Duration::from_secs(60));
    let stderr = app.stderr();
    let mut listed: Vec<String> = stderr
        .lines()
        .skip_while(|l| !l.contains("valid keys:"))
        .skip(1)
        .filter_map(|l| l.strip_prefix("[memcity] ERROR   "))
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    documented.sort();
    listed.sort();
    assert!(!listed.is_empty(), "{stderr}");
    assert_eq!(documented, listed);
}

/// The scrape config and alert rule the README shows are the files the fleet test runs in a
/// real Prometheus, word for word.
#[test]
fn readme_shows_the_prometheus_files_the_fleet_test_runs() {
    let readme = readme();
    for file in ["prometheus.yml", "memcity-rules.yml"] {
        let text = std::fs::read_to_string(root().join("docs/prometheus").join(file)).unwrap();
        assert!(
            readme.contains(&format!("```yaml\n{}\n```", text.trim_end())),
            "README.md must show docs/prometheus/{file} as it is"
        );
    }
}

fn check_snapshot(name: &str, actual: &str) {
    let path = root().join("tests/snapshots").join(name);
    if std::env::var_os("MEMCITY_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} missing: run with MEMCITY_UPDATE_SNAPSHOTS=1",
            path.display()
        )
    });
    assert_eq!(
        actual, expected,
        "{name} changed: review, then run with MEMCITY_UPDATE_SNAPSHOTS=1"
    );
}

#[test]
fn help_output_matches_snapshots() {
    for (args, name) in [
        (vec!["--help"], "help.txt"),
        (vec!["record", "--help"], "help-record.txt"),
        (vec!["report", "--help"], "help-report.txt"),
        (vec!["export", "--help"], "help-export.txt"),
    ] {
        let out = memcity(&args, Duration::from_secs(30));
        assert!(out.status.success());
        check_snapshot(name, &String::from_utf8_lossy(&out.stdout));
    }
    let out = memcity(&["frobnicate"], Duration::from_secs(30));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand"));
}

/// `report` numbers snapshots from 1 as the viewer does, and compares two recordings of one
/// application: the growth it prints is the second's value less the first's, group by group.
#[test]
fn report_windows_count_from_1_and_two_recordings_compare() {
    use memcity_city::model::Metric;
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let golden = golden.to_str().unwrap();
    let model = load_recording(std::path::Path::new(golden)).unwrap();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = memcity(args, Duration::from_secs(30));
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // --from 2 is the second snapshot, index 1.
    let window = json(&["report", golden, "--json", "--from", "2", "--to", "4"]);
    assert_eq!(window["window"]["from"], 1);
    assert_eq!(window["window"]["to"], 3);
    let out = memcity(&["report", golden, "--from", "0"], Duration::from_secs(30));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("holds snapshots 1 to 5"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Two recordings (here the same one at two points): snapshot 2 of the first against the
    // last of the second.
    let both = json(&[
        "report", golden, golden, "--json", "--top", "0", "--from", "2",
    ]);
    let groups = both["groups"].as_array().unwrap();
    assert!(!groups.is_empty());
    for group in groups {
        let path: Vec<&str> = group["path"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap())
            .collect();
        let node = model.find(&path).unwrap();
        assert_eq!(
            group["objects_first"].as_u64().unwrap(),
            model.value(node, 1, Metric::Objects),
            "{path:?}"
        );
        assert_eq!(
            group["objects_last"].as_u64().unwrap(),
            model.value(node, 4, Metric::Objects),
            "{path:?}"
        );
    }
    // A second recording cut off before its first whole snapshot: said, with why.
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("cut.mcrec");
    let bytes = std::fs::read(golden).unwrap();
    std::fs::write(&cut, &bytes[..bytes.len().min(3000)]).unwrap();
    let out = memcity(
        &["report", golden, cut.to_str().unwrap()],
        Duration::from_secs(30),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("cut.mcrec holds no whole snapshot to compare") && err.contains("cut off"),
        "{err}"
    );
    let text = memcity(
        &["report", golden, golden, "--from", "2"],
        Duration::from_secs(30),
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines().next().unwrap().contains("snapshot 2 against") && text.contains("snapshot 5"),
        "{text}"
    );
}

/// `memcity --version` says what it is: the version, the commit it was built from (the
/// checkout's, where there is one) and the protocol it speaks.
#[test]
fn version_names_the_commit_and_the_protocol() {
    let out = memcity(&["--version"], Duration::from_secs(30));
    assert!(out.status.success());
    let line = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map_or("unknown".to_string(), |o| {
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        });
    assert_eq!(
        line,
        format!(
            "memcity {} (commit {head}, memcity protocol {})",
            env!("CARGO_PKG_VERSION"),
            memcity_proto::PROTOCOL_VERSION
        )
    );
}
