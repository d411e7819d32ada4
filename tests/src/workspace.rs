//! Where the workspace, its builds and the test apps' classes are, and building them once per
//! test binary.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The workspace root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf()
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

/// The profile the agent and CLI under test were built with (`MEMCITY_TEST_PROFILE`, default
/// debug, like `cargo test`).
pub fn profile_dir() -> PathBuf {
    let profile = std::env::var("MEMCITY_TEST_PROFILE").unwrap_or_else(|_| "debug".into());
    target_dir().join(profile)
}

pub fn agent_path() -> PathBuf {
    profile_dir().join("libmemcity.so")
}

pub fn memcity_bin() -> PathBuf {
    profile_dir().join("memcity")
}

pub fn classes_dir() -> PathBuf {
    target_dir().join("jvm-test-apps")
}

/// Builds the agent, the CLI and the Java test apps once per test binary. `cargo test` does not
/// build a cdylib's file or another package's binary, so the harness asks cargo itself; when
/// they are fresh this is a no-op.
/// `cargo` at the workspace root, without the variables `cargo test` sets for the test crate:
/// `ring`'s build script reruns when `CARGO_MANIFEST_DIR` changes, so a build from inside a test
/// would otherwise rebuild `ring`, `rustls` and `tonic` (a minute of both cores, starving the
/// JVMs of the tests beside it) although scripts/test.sh built the same units beforehand.
fn cargo() -> Command {
    let mut command = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    command.current_dir(root());
    without_test_crate_env(&mut command);
    command
}

/// Removes the variables `cargo test` sets for the test crate from `command`'s environment, for
/// anything that runs cargo (see [`cargo`]).
pub fn without_test_crate_env(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        let per_crate = [
            "CARGO_MANIFEST_",
            "CARGO_PKG_",
            "CARGO_CRATE_",
            "CARGO_BIN_",
        ]
        .iter()
        .any(|p| name.starts_with(p))
            || [
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
            ]
            .contains(&name.as_ref());
        if per_crate {
            command.env_remove(name.as_ref());
        }
    }
}

pub fn ensure_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let mut build = cargo();
        build.args(["build", "-p", "memcity-agent", "-p", "memcity-viewer"]);
        if std::env::var("MEMCITY_TEST_PROFILE").as_deref() == Ok("release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build");
        assert!(status.success(), "building the agent and CLI failed");
        let status = Command::new(root().join("scripts/build-java.sh"))
            .status()
            .expect("run scripts/build-java.sh");
        assert!(status.success(), "building the Java test apps failed");
    });
}

/// The release build of the agent, built once per test binary. For tests whose outcome depends on
/// what the agent's own code costs: with the defaults, sampling is held to a measured cost, so a
/// debug build (whose samples cost several times more) samples more coarsely and estimates less
/// well than the agent users run.
pub fn release_agent_path() -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = cargo()
            .args(["build", "--release", "-p", "memcity-agent"])
            .status()
            .expect("run cargo build");
        assert!(status.success(), "building the release agent failed");
    });
    target_dir().join("release/libmemcity.so")
}

/// The test apps' classes in a directory any user can read, wherever the checkout lives (under
/// a home only its owner may enter, another user's JVM could not read them there). A JVM with a
/// private /tmp does not see it: `private_tmp` in the attach tests copies them in.
pub fn public_classes() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir_in("/tmp").unwrap();
    // The classes of the default package; the server apps' folder (`jetty/`) is not needed.
    for entry in std::fs::read_dir(classes_dir()).unwrap().flatten() {
        if entry.path().is_file() {
            std::fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}
