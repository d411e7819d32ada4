//! Compiles the agent's small Java helper (`java/memcity/GcCounts.java`, which reads JFR's
//! `jdk.ObjectCountAfterGC` in the application's JVM) with the JDK's `javac`, and embeds the
//! class file. Without a `javac` the agent builds all the same, without GC counts, and says so
//! when it starts.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    // HotSpot unloads (dlclose) a library whose first `Agent_OnAttach` fails, and a detach
    // cannot unload anything: a thread or callback left pointing into unmapped code would
    // crash the application. With `nodelete` the library stays mapped once loaded.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    let source = PathBuf::from("java/memcity/GcCounts.java");
    println!("cargo:rerun-if-changed={}", source.display());
    println!("cargo:rerun-if-env-changed=JAVA_HOME");
    println!("cargo:rustc-check-cfg=cfg(memcity_gc_counts)");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let javac = ["/usr/lib/jvm/java-17-openjdk-amd64/bin/javac"]
        .iter()
        .map(PathBuf::from)
        .chain(std::env::var_os("JAVA_HOME").map(|h| PathBuf::from(h).join("bin/javac")))
        .find(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("javac"));
    let status = Command::new(&javac)
        .args(["--release", "14", "-encoding", "UTF-8", "-d"])
        .arg(&out)
        .arg(&source)
        .status();
    match status {
        Ok(s) if s.success() => println!("cargo:rustc-cfg=memcity_gc_counts"),
        Ok(s) => println!("cargo:warning=javac failed ({s}): the agent is built without GC counts"),
        Err(e) => println!(
            "cargo:warning=no javac ({e}): the agent is built without GC counts; install a JDK"
        ),
    }
}
