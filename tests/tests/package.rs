//! The release archive (issue 34) as a Java developer gets it: `scripts/package.sh` writes
//! `memcity-<version>-linux-x86_64.tar.gz`, which is unpacked into a fresh folder and run with a
//! `PATH` that holds no cargo and from outside the build tree. Its binaries must need no glibc
//! newer than 2.28 and no library outside glibc; its `memcity` must find the agent and the page
//! beside itself; its agent must load by `-agentpath` and serve its page.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use memcity_e2e::browser::{chromium_path, Browser};
use memcity_e2e::serve::Serve;
use memcity_e2e::*;

const GLIBC_AT_MOST: (u32, u32) = (2, 28);

/// Libraries a binary may need: glibc's own (and libgcc_s, which glibc itself loads).
const GLIBC_LIBRARIES: [&str; 9] = [
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libgcc_s.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
];

fn name() -> String {
    format!("memcity-{}-linux-x86_64", env!("CARGO_PKG_VERSION"))
}

/// The archive unpacked into a fresh folder: the folder and the archive's top directory in it.
/// `None` (a skip that fails where `package` is required) when it is not built.
fn unpacked() -> Option<(tempfile::TempDir, PathBuf)> {
    let archive = target_dir().join(format!("package/{}.tar.gz", name()));
    if !archive.is_file() {
        skip(
            "package",
            &format!(
                "{} is not built (scripts/package.sh builds it)",
                archive.display()
            ),
        );
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(&archive)
        .arg("-C")
        .arg(dir.path())
        .output()
        .expect("run tar");
    assert!(
        out.status.success(),
        "tar: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let top = dir.path().join(name());
    Some((dir, top))
}

fn readelf(args: &[&str], file: &Path) -> String {
    let out = Command::new("readelf")
        .args(args)
        .arg(file)
        .output()
        .expect("run readelf (binutils)");
    assert!(out.status.success(), "readelf {args:?} {}", file.display());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The glibc symbol versions `file` needs, newest last.
fn glibc_versions(file: &Path) -> Vec<(u32, u32)> {
    let text = readelf(&["-W", "-V"], file);
    let mut versions: Vec<(u32, u32)> = text
        .split(|c: char| c.is_whitespace())
        .filter_map(|word| word.strip_prefix("GLIBC_"))
        .filter_map(|v| {
            let mut parts = v.split('.').map(|p| p.parse::<u32>().ok());
            Some((parts.next()??, parts.next().flatten().unwrap_or(0)))
        })
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions
}

fn needed_libraries(file: &Path) -> Vec<String> {
    readelf(&["-d"], file)
        .lines()
        .filter_map(|l| l.split_once("Shared library: ["))
        .map(|(_, rest)| rest.trim_end_matches(']').to_string())
        .collect()
}

#[test]
fn the_archive_holds_the_command_the_agent_the_page_and_their_licenses() {
    let Some((_dir, top)) = unpacked() else {
        return;
    };
    for file in [
        "bin/memcity",
        "lib/libmemcity.so",
        "web/index.html",
        "web/gl.js",
        "web/memcity.js",
        "web/memcity-web.wasm",
        "LICENSE",
        "THIRD-PARTY-LICENSES.txt",
        "README.txt",
    ] {
        assert!(top.join(file).is_file(), "no {file} in the archive");
    }
    let readme = std::fs::read_to_string(top.join("README.txt")).unwrap();
    for what in [
        "memcity attach PID",
        "-agentpath:/opt/memcity/lib/libmemcity.so",
        "memcity view --pid PID",
        "memcity serve",
        "memcity report app.mcrec",
        env!("CARGO_PKG_VERSION"),
    ] {
        assert!(readme.contains(what), "the README says nothing of {what}");
    }
    let licenses = std::fs::read_to_string(top.join("THIRD-PARTY-LICENSES.txt")).unwrap();
    // Crates every build bundles, named with their licenses, and their texts.
    for crate_name in ["tokio ", "tonic ", "prost ", "miniquad ", "jni "] {
        assert!(
            licenses
                .lines()
                .any(|l| l.trim_start().starts_with(crate_name)),
            "{crate_name}is not among the bundled crates"
        );
    }
    assert!(
        licenses.contains("Permission is hereby granted"),
        "no MIT text"
    );
    assert!(licenses.contains("Apache License"), "no Apache text");
}

/// What the issue asks of a Linux the users have: glibc 2.28 (RHEL 8, Debian 10, Ubuntu 20.04).
#[test]
fn the_archives_binaries_need_glibc_2_28_at_most_and_nothing_outside_it() {
    let Some((_dir, top)) = unpacked() else {
        return;
    };
    for file in ["bin/memcity", "lib/libmemcity.so"] {
        let path = top.join(file);
        let header = readelf(&["-h"], &path);
        assert!(header.contains("X86-64"), "{file} is not x86-64: {header}");
        let versions = glibc_versions(&path);
        let newest = versions.last().copied().unwrap_or_default();
        eprintln!("{file}: glibc {}.{} at most", newest.0, newest.1);
        assert!(
            newest <= GLIBC_AT_MOST && newest >= (2, 2),
            "{file} needs glibc {}.{}, newer than {}.{}: {versions:?}",
            newest.0,
            newest.1,
            GLIBC_AT_MOST.0,
            GLIBC_AT_MOST.1
        );
        for library in needed_libraries(&path) {
            assert!(
                GLIBC_LIBRARIES.contains(&library.as_str()),
                "{file} needs {library}, which is not part of glibc"
            );
        }
    }
}

/// The archive's `memcity` with a `PATH` of the system's alone (no cargo, no build tree),
/// run from the archive's own folder.
fn archived(top: &Path, args: &[&str], timeout: Duration) -> Output {
    let mut command = Command::new(top.join("bin/memcity"));
    command
        .args(args)
        .current_dir(top)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", top)
        .stdin(Stdio::null());
    run_with_timeout(command, timeout)
}

fn run_with_timeout(mut command: Command, timeout: Duration) -> Output {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the archive's memcity");
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().unwrap();
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{command:?} did not finish within {timeout:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn assert_ran(what: &str, out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what}: {stderr}\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// The first ten minutes with the archive: attach to a running JVM, record it, report it, and
/// serve the recording to a browser, which draws it.
#[test]
fn the_unpacked_archive_attaches_records_reports_and_serves() {
    let Some((_dir, top)) = unpacked() else {
        return;
    };
    let jdk = jdk17();
    let version = archived(&top, &["--version"], Duration::from_secs(30));
    let version = String::from_utf8_lossy(&version.stdout).into_owned();
    assert!(
        version.starts_with(&format!("memcity {} (commit ", env!("CARGO_PKG_VERSION")))
            && version.contains("memcity protocol "),
        "{version}"
    );
    let mut app = AppSpec {
        agent: None,
        ..AppSpec::new(&jdk, "LinkedListLeak", 120.0)
    }
    .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let pid = app.pid().to_string();
    // The agent found in ../lib, whatever the folder the archive was unpacked to.
    let attached = archived(&top, &["attach", &pid], Duration::from_secs(60));
    let said = assert_ran("attach", &attached);
    assert!(
        said.contains(&format!(
            "memcity: attached to {pid}; listening on 127.0.0.1:"
        )),
        "{said}"
    );
    let agent_log = app.stderr();
    assert!(
        agent_log.contains(&format!(
            "[memcity] INFO memcity {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "the agent's first line names its version: {agent_log}"
    );
    let recording = top.join("app.mcrec");
    let recorded = archived(
        &top,
        &[
            "record",
            "--pid",
            &pid,
            "-o",
            "app.mcrec",
            "--duration",
            "10",
        ],
        Duration::from_secs(90),
    );
    assert_ran("record", &recorded);
    assert!(recording.is_file());
    let report = archived(&top, &["report", "app.mcrec"], Duration::from_secs(90));
    assert_ran("report", &report);
    let report = String::from_utf8_lossy(&report.stdout);
    assert!(report.contains("LEAK SUSPECTS"), "{report}");
    assert!(report.contains("LinkedListLeak$Person"), "{report}");
    let detached = archived(&top, &["detach", &pid], Duration::from_secs(60));
    assert_ran("detach", &detached);
    app.kill();

    // The page, from the archive's web/ folder.
    let serve = Serve::start_with(&top.join("bin/memcity"), &[recording.to_str().unwrap()]);
    let index = serve.get("/");
    assert_eq!(index.status, 200, "{index:?}");
    let wasm = serve.get("/memcity-web.wasm");
    assert_eq!(wasm.status, 200);
    if chromium_path().is_none() {
        skip("chromium", "the archive's page: no chromium to draw it");
        return;
    }
    let mut browser = Browser::open(&serve.url, 1280, 720);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots > 1 && memcity_page.drawn > 5",
        Duration::from_secs(120),
        "the archive's page draws the recording",
    );
}

/// A JVM started with the archive's agent (`-agentpath:.../lib/libmemcity.so`): it listens,
/// serves its own page from the archive's web/ folder, and the archive's `memcity` records it.
#[test]
fn the_archives_agent_loads_by_agentpath_and_serves_its_page() {
    let Some((_dir, top)) = unpacked() else {
        return;
    };
    let jdk = jdk17();
    let portfile = top.join("port");
    let mut spec = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .agent(format!("port=0,portfile={},http=0", portfile.display()));
    spec.agent_library = Some(top.join("lib/libmemcity.so"));
    let mut app = spec.spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    let log = app.stderr();
    assert!(
        log.contains(&format!(
            "[memcity] INFO memcity {} (commit ",
            env!("CARGO_PKG_VERSION")
        )),
        "the first line names the version: {log}"
    );
    assert!(log.contains("serving the web page on http://"), "{log}");
    let recorded = archived(
        &top,
        &[
            "record",
            &format!("127.0.0.1:{}", port.trim()),
            "-o",
            "direct.mcrec",
            "--duration",
            "4",
        ],
        Duration::from_secs(60),
    );
    let said = assert_ran("record", &recorded);
    assert!(said.contains("snapshots"), "{said}");
    app.kill();
}

/// The agent baked into a container image (`JAVA_TOOL_OPTIONS=-agentpath:/opt/memcity/lib/
/// libmemcity.so`, the archive unpacked at /opt/memcity), the JVM pid 1 of its own pid
/// namespace with a /tmp of its own, as in a container that shares the host's network: from
/// the host, `memcity list` finds it listening and `memcity record --pid` records it by its
/// host pid, through the container's root.
#[test]
fn the_archives_agent_baked_into_a_container_is_recorded_from_the_host() {
    let Some((_dir, top)) = unpacked() else {
        return;
    };
    if !can_unshare(
        &["-m", "-p", "-f", "--mount-proc", "--kill-child"],
        "the agent baked into a container",
    ) {
        return;
    }
    let classes = public_classes();
    let image = [
        "unshare",
        "-m",
        "-p",
        "-f",
        "--mount-proc",
        "--kill-child=SIGTERM",
        "--propagation",
        "private",
        "sh",
        "-c",
        // The image's /opt/memcity, then its own /tmp (which hides the host's, where the
        // classes are: the shell holds their folder as its working directory).
        "archive=\"$1\"; shift; cd \"$1\" && shift \
         && mount -t tmpfs tmpfs /opt && mkdir /opt/memcity && cp -R \"$archive\"/. /opt/memcity \
         && mount -t tmpfs tmpfs /tmp && mkdir /tmp/memcity-classes && cp -R . /tmp/memcity-classes \
         && export JAVA_TOOL_OPTIONS=-agentpath:/opt/memcity/lib/libmemcity.so \
         && cd / && exec \"$@\"",
        "sh",
        top.to_str().unwrap(),
        classes.path().to_str().unwrap(),
    ];
    let app = Wrapped::spawn(&image, Path::new("/tmp/memcity-classes"), 60);
    let pid = app.forked_pid();
    listening_port(pid, Duration::from_secs(60));
    let recording = top.join("container.mcrec");
    let out = memcity(
        &[
            "record",
            "--pid",
            &pid.to_string(),
            "-o",
            recording.to_str().unwrap(),
            "--duration",
            "4",
        ],
        Duration::from_secs(60),
    );
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}\nJVM: {}", app.stderr());
    // It was listening already: nothing was attached.
    assert!(!said.contains("attached to"), "{said}");
    let model = load_recording(&recording).unwrap();
    assert!(model.len() >= 2, "{said}");
    assert!(
        app.stderr().contains("[memcity] INFO memcity "),
        "{}",
        app.stderr()
    );
}

/// The README's build command (`scripts/build.sh`, which the test command runs from CI's fresh
/// clone) leaves a `memcity` whose `serve` finds the page it built, with nothing more to run:
/// the page is served and a real browser draws the recording.
#[test]
fn the_readme_build_leaves_a_memcity_that_serves_its_page() {
    let memcity = target_dir().join("release/memcity");
    if !memcity.is_file() || !target_dir().join("web/memcity-web.wasm").is_file() {
        skip(
            "release",
            "the release build and its page are not built (scripts/build.sh builds them)",
        );
        return;
    }
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let serve = Serve::start_with(&memcity, &[golden.to_str().unwrap()]);
    assert_eq!(serve.get("/").status, 200);
    if chromium_path().is_none() {
        skip(
            "chromium",
            "the release build's page: no chromium to draw it",
        );
        return;
    }
    let mut browser = Browser::open(&serve.url, 1280, 720);
    browser.wait_for(
        "window.memcity_page && memcity_page.snapshots === 5 && memcity_page.drawn > 5",
        Duration::from_secs(120),
        "the release build's page draws the golden recording",
    );
}
