//! Recordings of a test app's run, and keeping them (with its log) past the test.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::jdks::Jdk;
use crate::jvm::AppSpec;

/// Runs `main` for `seconds` with the agent recording to a file in a new temporary directory,
/// walks allowed often (so a short run has several snapshots) plus `options`, and waits for its
/// READY and its exit; asserts that it ran to its DONE line. Returns the directory (the file
/// lives as long as it) and the recording.
pub fn record_run(
    jdk: &Jdk,
    main: &str,
    flags: &[&str],
    options: &str,
    seconds: f64,
) -> (tempfile::TempDir, PathBuf) {
    let (dir, file, _) = record_run_output(jdk, main, flags, options, seconds);
    (dir, file)
}

/// [`record_run`], with the app's standard output (its last line the DONE line, which may say
/// what the app holds).
pub fn record_run_output(
    jdk: &Jdk,
    main: &str,
    flags: &[&str],
    options: &str,
    seconds: f64,
) -> (tempfile::TempDir, PathBuf, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join(format!("{main}.mcrec"));
    let mut app = AppSpec::new(jdk, main, seconds)
        .flag("-Xmn16m")
        .flags(flags)
        .agent(format!(
            "port=0,record={},budget=50,min_interval=250ms,period=400ms,paths=30%{}{options}",
            file.display(),
            if options.is_empty() { "" } else { "," }
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(
        status.success(),
        "{main} {flags:?}: stderr {}",
        app.stderr()
    );
    assert!(
        stdout.last().is_some_and(|l| l.starts_with("DONE")),
        "{main}: {stdout:?}"
    );
    (dir, file, stdout)
}

/// Keeps a copy of a test's recording in `$MEMCITY_TEST_KEEP/<name>.mcrec` when that is set:
/// for reading what a test saw (`city/examples/series.rs`) after its temporary folder is gone.
pub fn keep_recording(file: &Path, name: &str) {
    if let Ok(dir) = std::env::var("MEMCITY_TEST_KEEP") {
        let to = Path::new(&dir).join(format!("{name}.mcrec"));
        match std::fs::create_dir_all(&dir).and_then(|_| std::fs::copy(file, &to)) {
            Ok(_) => eprintln!("kept the recording: {}", to.display()),
            Err(e) => eprintln!("could not keep the recording in {dir}: {e}"),
        }
    }
}

/// Keeps `text` (an application's stderr, with the agent's log) as `NAME.log` in the folder
/// `MEMCITY_TEST_KEEP` names, when it names one, beside the recordings `keep_recording` keeps.
pub fn keep_log(text: &str, name: &str) {
    if let Ok(dir) = std::env::var("MEMCITY_TEST_KEEP") {
        let to = Path::new(&dir).join(format!("{name}.log"));
        if let Err(e) = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&to, text)) {
            eprintln!("could not keep the log in {dir}: {e}");
        }
    }
}
