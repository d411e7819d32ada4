//! JVM facts: what the worker reads about the JVM it runs in (its command line, Java version
//! and collector) and the handshake it sends viewers. Separate because, apart from reading
//! `/proc/self/cmdline` and the JVM's properties, these are pure functions of strings, tested
//! here without a JVM.

use memcity_proto::v1::{handshake::LifetimesState, Handshake};
use memcity_proto::PROTOCOL_VERSION;

use crate::Agent;

/// This process's command line, arguments joined by spaces.
pub(super) fn command_line() -> String {
    memcity_proto::command::args_of(None).join(" ")
}

pub fn handshake(agent: &Agent) -> Handshake {
    let property = |name| agent.jvmti.system_property(name).unwrap_or_default();
    let command_line = command_line();
    Handshake {
        protocol_version: PROTOCOL_VERSION,
        agent_version: env!("CARGO_PKG_VERSION").into(),
        pid: std::process::id(),
        jvm_version: property("java.vm.version"),
        jvm_vendor: property("java.vm.vendor"),
        jvm_name: property("java.vm.name"),
        gc_name: gc_name(&command_line),
        command_line,
        classifiers: agent
            .options
            .classifiers
            .iter()
            .map(|c| c.name().to_string())
            .collect(),
        sampling_interval: agent.sampler.as_ref().map_or(0, |s| s.interval()),
        start_time_unix_ms: agent.start_unix_ms,
        pause_budget: agent.options.budget,
        lifetimes: match (agent.options.lifetimes, agent.sampler.is_some()) {
            (false, _) => LifetimesState::LifetimesOff,
            (true, false) => LifetimesState::LifetimesNoSamples,
            (true, true) => LifetimesState::LifetimesOn,
        } as i32,
    }
}

/// What the worker needs to know of this JVM to judge its samples: its command line, its
/// collector and its version, read once.
pub(super) struct JvmFacts {
    pub(super) command_line: String,
    /// `G1`, `Parallel`, `Z`... (`gc_name`).
    pub(super) gc: String,
    pub(super) major: Option<u32>,
}

impl JvmFacts {
    pub(super) fn read(agent: &Agent) -> JvmFacts {
        let command_line = command_line();
        JvmFacts {
            gc: gc_name(&command_line),
            major: java_major(
                &agent
                    .jvmti
                    // A VM property, so JVMTI has it (`java.specification.version` is the
                    // library's).
                    .system_property("java.vm.specification.version")
                    .unwrap_or_default(),
            ),
            command_line,
        }
    }

    /// Every collection marks the whole heap (`every_gc_marks_all`).
    pub(super) fn every_gc_marks_all(&self) -> bool {
        every_gc_marks_all(&self.gc, self.major, &jvm_flags(&self.command_line))
    }
}

/// The first JDK whose sampler charges allocations outside TLABs correctly (JDK-8356372).
pub(super) const FIRST_EXACT_OUTSIDE_TLAB_SAMPLING: u32 = 25;

/// The feature release of `java.vm.specification.version` ("17", "1.8" is 8); `None` if
/// unreadable.
pub(super) fn java_major(version: &str) -> Option<u32> {
    let version = version.strip_prefix("1.").unwrap_or(version);
    version.split('.').next()?.parse().ok()
}

/// The command line and the environment variables the launcher reads flags from.
pub(super) fn jvm_flags(command_line: &str) -> String {
    let env = ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .collect::<Vec<_>>()
        .join(" ");
    format!("{command_line} {env}")
}

/// Whether every GC of this collector marks the whole heap (one generation): ZGC before its
/// generational mode (the default from JDK 23, the only mode from 24) and Shenandoah outside
/// its generational mode. Where in doubt, no: the canaries then age as for a generational
/// collector, which is only slower to confirm.
pub(super) fn every_gc_marks_all(gc: &str, major: Option<u32>, flags: &str) -> bool {
    let last = |on: &str, off: &str| match (flags.rfind(on), flags.rfind(off)) {
        (Some(a), Some(b)) => Some(a > b),
        (a, b) => a.map(|_| true).or(b.map(|_| false)),
    };
    match (gc, major) {
        ("Z", Some(m)) if m < 21 => true,
        ("Z", Some(m)) if m < 23 => last("-XX:+ZGenerational", "-XX:-ZGenerational") != Some(true),
        ("Z", Some(23)) => last("-XX:+ZGenerational", "-XX:-ZGenerational") == Some(false),
        ("Shenandoah", Some(_)) => !flags.contains("ShenandoahGCMode=generational"),
        _ => false,
    }
}

/// The collector, from the flags that choose it (command line, then the environment variables
/// the launcher reads). Without a flag the JVM picks G1 on server-class machines.
pub(super) fn gc_name(command_line: &str) -> String {
    let flags = jvm_flags(command_line);
    let chosen = [
        ("-XX:+UseZGC", "Z"),
        ("-XX:+UseShenandoahGC", "Shenandoah"),
        ("-XX:+UseParallelGC", "Parallel"),
        ("-XX:+UseSerialGC", "Serial"),
        ("-XX:+UseEpsilonGC", "Epsilon"),
        ("-XX:+UseG1GC", "G1"),
    ]
    .iter()
    .filter_map(|(flag, name)| flags.rfind(flag).map(|at| (at, *name)))
    .max_by_key(|(at, _)| *at);
    match chosen {
        Some((_, name)) => name.to_string(),
        None => "G1 (default)".to_string(),
    }
}

/// Whether memcity lets this collector count types for JFR's `jdk.ObjectCountAfterGC`
/// (`gc_counts.rs`): ZGC has no such phase and Epsilon never collects, so a stream there would
/// only put JFR's objects and threads into the application's heap. Shenandoah counts at its
/// cycles from JDK 22 on (none before), and with the event on it kept more of the heap: a
/// JDK 25 application dropping million-entry maps at 1 GB had a median of 99-174 MB after its
/// cycles with memcity's stream against 81-85 MB alone, and 81 MB with the agent and no stream.
/// The guest's rule comes first: no counts there.
pub(super) fn gc_counts_types(gc: &str) -> bool {
    !matches!(gc, "Z" | "Epsilon" | "Shenandoah")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_generation_collectors_are_told_from_their_flags_and_version() {
        assert!(every_gc_marks_all("Z", Some(17), ""));
        assert!(every_gc_marks_all("Z", Some(21), "-XX:+UseZGC"));
        assert!(!every_gc_marks_all(
            "Z",
            Some(21),
            "-XX:+UseZGC -XX:+ZGenerational"
        ));
        assert!(every_gc_marks_all(
            "Z",
            Some(21),
            "-XX:+ZGenerational -XX:-ZGenerational"
        ));
        assert!(!every_gc_marks_all("Z", Some(23), "-XX:+UseZGC"));
        assert!(every_gc_marks_all("Z", Some(23), "-XX:-ZGenerational"));
        assert!(!every_gc_marks_all("Z", Some(25), "-XX:-ZGenerational"));
        assert!(every_gc_marks_all("Shenandoah", Some(17), ""));
        assert!(!every_gc_marks_all(
            "Shenandoah",
            Some(21),
            "-XX:ShenandoahGCMode=generational"
        ));
        assert!(!every_gc_marks_all("G1", Some(17), ""));
        assert!(
            !every_gc_marks_all("Z", None, ""),
            "in doubt, age the canaries"
        );
    }

    #[test]
    fn java_major_reads_old_and_new_version_schemes() {
        assert_eq!(java_major("17"), Some(17));
        assert_eq!(java_major("25"), Some(25));
        assert_eq!(java_major("1.8"), Some(8));
        assert_eq!(java_major("26.0.1"), Some(26));
        assert_eq!(java_major(""), None);
    }

    #[test]
    fn gc_name_follows_the_last_flag() {
        assert_eq!(gc_name("java -XX:+UseZGC -jar app.jar"), "Z");
        assert_eq!(
            gc_name("java -XX:+UseSerialGC -XX:+UseParallelGC x"),
            "Parallel"
        );
        assert_eq!(gc_name("java -XX:+UseShenandoahGC x"), "Shenandoah");
    }

    #[test]
    fn zgc_epsilon_and_shenandoah_count_no_types() {
        assert!(!gc_counts_types(&gc_name("java -XX:+UseZGC x")));
        assert!(!gc_counts_types("Epsilon"));
        assert!(!gc_counts_types(&gc_name("java -XX:+UseShenandoahGC x")));
        assert!(gc_counts_types(&gc_name("java x")), "the default G1 counts");
        assert!(gc_counts_types("Parallel") && gc_counts_types("Serial"));
    }
}
