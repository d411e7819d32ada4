//! What the machine has (tools on PATH, root), and a test skipped, saying why, where a
//! dependency is missing.

use std::path::PathBuf;

/// The first `name` on PATH (tools the tests drive, such as Xvfb and xdotool).
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(name))
            .find(|p| p.exists())
    })
}

/// Skips the rest of a test whose dependency (`need`: `xvfb`, `jdk25`, `dev-full`) is missing,
/// saying why. Where the dependency must be present (`MEMCITY_REQUIRE`, a comma list that
/// `scripts/test.sh` sets from what it installed and found), a skip is a failure instead: a CI
/// must not pass by skipping.
pub fn skip(need: &str, reason: &str) {
    check_skip(
        &std::env::var("MEMCITY_REQUIRE").unwrap_or_default(),
        need,
        reason,
    );
    eprintln!("SKIPPED: {reason}");
}

/// Panics when `need` is in the `required` list (see [`skip`]).
pub fn check_skip(required: &str, need: &str, reason: &str) {
    if required.split(',').any(|r| r.trim() == need) {
        panic!("{need} is required here (MEMCITY_REQUIRE={required}) but missing: {reason}");
    }
}

/// Whether `unshare ARGS true` may run here (namespaces need privileges), or else a skip of
/// `what` that fails where `unshare` is required.
pub fn can_unshare(args: &[&str], what: &str) -> bool {
    let ran = std::process::Command::new("unshare")
        .args(args)
        .arg("true")
        .status();
    if ran.is_ok_and(|s| s.success()) {
        return true;
    }
    skip(
        "unshare",
        &format!("no permission for unshare {}: {what}", args.join(" ")),
    );
    false
}

pub fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_skip_of_a_required_dependency_fails() {
        super::check_skip("", "xvfb", "not required");
        super::check_skip("dev-full", "xvfb", "another dependency is required");
        let failed =
            std::panic::catch_unwind(|| super::check_skip("xvfb, jdk25", "jdk25", "required"));
        assert!(failed.is_err(), "a required dependency's skip must fail");
    }
}
