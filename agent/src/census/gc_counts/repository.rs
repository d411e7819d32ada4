//! Where the GC counts' JFR stream keeps its repository: in memcity's run directory, not in the
//! application's `java.io.tmpdir`.
//!
//! A `RecordingStream` reads chunk files from JFR's disk repository, by default
//! `java.io.tmpdir/<date>_<pid>/`. JFR deletes it when the JVM exits cleanly, but a JVM killed or
//! dead of an `OutOfMemoryError` leaves it (measured: 111 KB after a `kill -9` of a `MixedHeap`
//! with the agent, JDK 17). A guest must not litter the host's /tmp, so before the stream starts
//! the agent moves the repository's base to `<run dir>/jfr/<pid>/` (the 0700 run directory of
//! `memcity_proto::registry`), and every agent that starts removes the directories there whose
//! JVM is gone.
//!
//! How: JFR reads no property for its repository (`jdk.jfr.repository` is only written, for
//! tools), and `jdk.jfr.internal.Repository` changed its signature between JDK 17 (`SafePath`)
//! and 25 (`Path`). What is stable from JDK 11 to 25 is the diagnostic command `jcmd` runs,
//! `JFR.configure repositorypath=`; see [`diagnostic_command`] for how the agent runs it from
//! inside. A repository someone else chose is left alone: one the application configured
//! (`-XX:FlightRecorderOptions:repository=`, `JFR.configure`), one its own recordings already
//! use, or one it asked JFR to preserve. Where the agent can neither tell nor move it (a runtime
//! without `jdk.management`), the stream does not start.
//!
//! A directory's JVM is alive while it holds an `flock` on the directory's `.owner` file; the
//! kernel drops the lock however the JVM ends. Not `/proc/<pid>`: a JVM in a container's pid
//! namespace that shares this `TMPDIR` has other pids, and a pid is reused. After a clean exit
//! JFR has removed its chunks itself; the emptied directory goes with the next agent's start.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use jni::objects::{JObject, JString, JValue};
use jni::JNIEnv;

use super::{check, thrown};
use crate::jvmti::JavaError;

/// The file a JVM's directory holds locked while the JVM lives.
const OWNER: &str = ".owner";

/// Names a JVM tries for its directory (`<pid>`, then `<pid>.1`, ...): a JVM with the same pid in
/// another pid namespace, or an agent clearing a stale directory of that name, may hold one.
const NAMES: u32 = 8;

/// Where memcity's JFR repositories live: `<run dir>/jfr`.
fn base() -> PathBuf {
    memcity_proto::registry::run_dir_in_use().join("jfr")
}

/// Removes the repository directories whose JVM is gone (a killed JVM cannot remove its own).
/// Best effort and cheap when there are none; for every agent's start.
pub fn clear_stale() {
    let removed = clear_stale_in(&base());
    if removed > 0 {
        crate::log::debug!("removed {removed} JFR repositories of JVMs that are gone");
    }
}

fn clear_stale_in(base: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        if !entry.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let dir = entry.path();
        let owner = dir.join(OWNER);
        // A directory another agent is creating may not have its file yet: taking the lock
        // first makes that agent move on to its next name (see `own_dir`).
        let Ok(file) = open_owner(&owner) else {
            continue;
        };
        if lock(&file).unwrap_or(false)
            && same_file(&owner, &file)
            && std::fs::remove_dir_all(&dir).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

/// This JVM's directory, made and locked once and kept for the JVM's life: JFR keeps its
/// repository after the stream closes (a detach), and closing the file would drop the lock.
static OWN: OnceLock<Result<(PathBuf, File), JavaError>> = OnceLock::new();

fn own() -> Result<&'static Path, JavaError> {
    let own = OWN.get_or_init(|| {
        let run = memcity_proto::registry::private_run_dir()
            .map_err(|e| answer("memcity's run directory", e))?;
        let base = run.join("jfr");
        create_private_dir(&base).map_err(|e| answer(base.display(), e))?;
        clear_stale_in(&base);
        own_dir(&base, std::process::id()).map_err(|e| answer(base.display(), e))
    });
    own.as_ref()
        .map(|(dir, _)| dir.as_path())
        .map_err(Clone::clone)
}

/// What a directory or file operation answered.
fn answer(asked: impl std::fmt::Display, answer: impl std::fmt::Display) -> JavaError {
    JavaError::Answer {
        asked: asked.to_string(),
        answer: answer.to_string(),
    }
}

/// Makes and locks a directory of `base` for this JVM.
fn own_dir(base: &Path, pid: u32) -> io::Result<(PathBuf, File)> {
    for n in 0..NAMES {
        let dir = base.join(if n == 0 {
            pid.to_string()
        } else {
            format!("{pid}.{n}")
        });
        create_private_dir(&dir)?;
        let owner = dir.join(OWNER);
        let file = match open_owner(&owner) {
            Ok(file) => file,
            // Removed meanwhile by an agent that took it for stale.
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        // The lock counts only on the file that is still there: an agent clearing a stale
        // directory holds the lock while it removes the directory, and releases it after.
        if lock(&file)? && same_file(&owner, &file) {
            return Ok((dir, file));
        }
    }
    Err(io::Error::other(format!(
        "the {NAMES} names for pid {pid} are all held by live JVMs"
    )))
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    match DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != io::ErrorKind::AlreadyExists => Err(e),
        _ => Ok(()),
    }
}

fn open_owner(path: &Path) -> io::Result<File> {
    // Close-on-exec (Rust's default): a child process of the JVM must not hold the lock on.
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)
}

/// Takes `file`'s exclusive lock without waiting: `Ok(false)` when another holds it.
fn lock(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a descriptor `file` owns for the whole call; no memory is passed.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// Whether `path` still names the open `file`.
fn same_file(path: &Path, file: &File) -> bool {
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// JFR's repository as `JFR.configure` (without arguments) reports it.
#[derive(Debug, PartialEq, Eq)]
struct Configuration {
    /// `None` while no one set a base and no disk recording ran ("N/A").
    repository: Option<String>,
    /// JDK 21+: the repository is kept at exit (`preserve-repository=true`).
    preserve: bool,
}

fn parse(output: &str) -> Option<Configuration> {
    let field = |name: &str| {
        output
            .lines()
            .find_map(|line| line.trim().strip_prefix(name))
            .map(str::trim)
    };
    let repository = field("Repository path:")?;
    Some(Configuration {
        repository: (repository != "N/A").then(|| repository.to_string()),
        preserve: field("Preserve repository:") == Some("true"),
    })
}

/// Puts JFR's repository in this JVM's directory unless someone else chose it; says where it
/// is. An error means the stream must not start (it would write to `java.io.tmpdir`).
pub(super) fn place(env: &mut JNIEnv) -> Result<String, JavaError> {
    let query = |env: &mut JNIEnv| {
        let output = diagnostic_command(env, "JFR.configure")?;
        parse(&output).ok_or_else(|| answer("JFR.configure said", output.trim()))
    };
    let current = query(env)?;
    if let Some(repository) = current.repository {
        let ours = OWN
            .get()
            .and_then(|own| own.as_ref().ok())
            .is_some_and(|(dir, _)| Path::new(&repository).starts_with(dir));
        return Ok(if ours {
            format!("{repository} (memcity's, from an earlier session)")
        } else {
            format!("{repository} (the application's)")
        });
    }
    if current.preserve {
        return Ok("the application's (preserve-repository=true), in java.io.tmpdir".into());
    }
    let dir = own()?;
    let path = dir
        .to_str()
        .filter(|p| !p.contains(|c: char| c.is_whitespace() || c == '"' || c == '\''))
        .ok_or_else(|| {
            JavaError::Refused(format!(
                "{} cannot be given to JFR.configure",
                dir.display()
            ))
        })?;
    diagnostic_command(env, &format!("JFR.configure repositorypath={path}"))?;
    match query(env)?.repository {
        Some(repository) if Path::new(&repository).starts_with(dir) => Ok(repository),
        other => Err(JavaError::Refused(format!(
            "JFR did not take {path} as its repository (it reports {other:?})"
        ))),
    }
}

/// Runs diagnostic command `command` (what `jcmd PID command` runs) in this JVM; returns its
/// output, which HotSpot captures in the string (nothing is printed).
///
/// The public way in is the `DiagnosticCommand` MBean, which would start the platform MBean
/// server in the application's JVM, and with it `java.util.logging`'s `LogManager`, which
/// application servers must configure before anyone touches it. The MBean's implementation is a
/// native method of `com.sun.management.internal.DiagnosticCommandImpl` that ignores its receiver
/// and hands the text to HotSpot (`jmm_ExecuteDiagnosticCommand`); JNI reaches it across the
/// module boundary, and its library (`libmanagement_ext`) is loaded by the initializer of the
/// module's `PlatformMBeanProviderImpl`. The same from JDK 11 to 25 (2026-11-25: javap on 11, 17,
/// 21 and 25); a JDK without them throws here, which is returned as an error.
pub(crate) fn diagnostic_command(env: &mut JNIEnv, command: &str) -> Result<String, JavaError> {
    let framed = env.with_local_frame(8, |env| {
        Ok::<_, jni::errors::Error>(diagnostic_command_in_frame(env, command))
    });
    framed.map_err(|e| JavaError::jni("JNI local frame", e))?
}

fn diagnostic_command_in_frame(env: &mut JNIEnv, command: &str) -> Result<String, JavaError> {
    const NO_MANAGEMENT: &str = "no jdk.management module to run JFR.configure";
    let provider = env.find_class("com/sun/management/internal/PlatformMBeanProviderImpl");
    let provider = match provider {
        Ok(class) => class,
        Err(e) => return Err(thrown(env, NO_MANAGEMENT, e)),
    };
    // Looking up a method initializes the class (JNI), which loads the library.
    let initialized = env.get_method_id(&provider, "<init>", "()V").map(|_| ());
    check(env, NO_MANAGEMENT, initialized)?;
    let class = env.find_class("com/sun/management/internal/DiagnosticCommandImpl");
    let class = match class {
        Ok(class) => class,
        Err(e) => return Err(thrown(env, NO_MANAGEMENT, e)),
    };
    // No constructor: it wants the JDK's VM management object, and the method reads nothing
    // of its receiver.
    let receiver = match env.alloc_object(&class) {
        Ok(object) => object,
        Err(e) => return Err(thrown(env, NO_MANAGEMENT, e)),
    };
    let text: JObject = env
        .new_string(command)
        .map_err(|e| JavaError::jni("JNI", e))?
        .into();
    let output = env
        .call_method(
            &receiver,
            "executeDiagnosticCommand",
            "(Ljava/lang/String;)Ljava/lang/String;",
            &[JValue::Object(&text)],
        )
        .and_then(|v| v.l());
    let output = match output {
        Ok(output) if !output.is_null() => output,
        Ok(_) => return Err(answer(command, "no output")),
        Err(e) => return Err(thrown(env, command, e)),
    };
    env.get_string(&JString::from(output))
        .map(String::from)
        .map_err(|e| JavaError::jni(command, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configurations_as_jdks_print_them() {
        // JDK 11 and 17, nothing set.
        let jdk17 = "Current configuration:\n\nRepository path: N/A\n\nStack depth: 64\nGlobal buffer count: 20\n";
        assert_eq!(
            parse(jdk17),
            Some(Configuration {
                repository: None,
                preserve: false
            })
        );
        // JDK 21 and 25, with -XX:FlightRecorderOptions:repository=.
        let jdk25 = "Current configuration:\n\nPreserve repository: false\nRepository path: /srv/jfr/2026_11_25_16_51_06_25265\n\nStack depth: 64\n";
        assert_eq!(
            parse(jdk25),
            Some(Configuration {
                repository: Some("/srv/jfr/2026_11_25_16_51_06_25265".into()),
                preserve: false
            })
        );
        assert!(
            parse("Preserve repository: true\nRepository path: N/A\n")
                .unwrap()
                .preserve
        );
        // JFR off, or an error instead of the configuration.
        assert_eq!(parse("Flight Recorder is disabled.\n"), None);
    }

    #[test]
    fn a_directory_whose_jvm_is_gone_is_cleared_and_a_live_one_kept() {
        let base = tempfile::tempdir().unwrap();
        // A live JVM's directory: its lock is held (here by this test).
        let (live, _held) = own_dir(base.path(), 41).unwrap();
        std::fs::create_dir(live.join("2026_11_25_16_53_01_41")).unwrap();
        // A killed JVM's: its repository is there, its lock is not held.
        let dead = base.path().join("42");
        std::fs::create_dir_all(dead.join("2026_11_25_16_53_01_42")).unwrap();
        std::fs::write(dead.join("2026_11_25_16_53_01_42/chunk.jfr"), [0u8; 64]).unwrap();
        drop(open_owner(&dead.join(OWNER)).unwrap());
        // One made before the lock file existed.
        std::fs::create_dir(base.path().join("43")).unwrap();
        assert_eq!(clear_stale_in(base.path()), 2);
        let left: Vec<_> = std::fs::read_dir(base.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["41"]);
        assert!(live.join("2026_11_25_16_53_01_41").is_dir());
    }

    #[test]
    fn a_pid_held_by_another_live_jvm_gets_the_next_name() {
        let base = tempfile::tempdir().unwrap();
        // The same pid in another pid namespace sharing this TMPDIR.
        let (first, _held) = own_dir(base.path(), 1).unwrap();
        assert_eq!(first, base.path().join("1"));
        let (second, _also_held) = own_dir(base.path(), 1).unwrap();
        assert_eq!(second, base.path().join("1.1"));
        // Neither is stale.
        assert_eq!(clear_stale_in(base.path()), 0);
    }
}
