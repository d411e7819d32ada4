//! What `jcmd` asks of a running JVM, as a user asks it: its class histogram (the reference the
//! exact counts are held to, its names in memcity's spelling) and its heap dumps.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::cli::output_within;
use crate::jdks::Jdk;

/// A full GC, a histogram or a dump of a heap of a few hundred MB takes seconds; a minute is
/// a JVM that does not answer.
const JCMD: Duration = Duration::from_secs(120);

/// `jcmd PID ARGS...`'s output, after failing unless it ran.
pub fn jcmd(jdk: &Jdk, pid: u32, args: &[&str]) -> String {
    let out = output_within(
        Command::new(jdk.jcmd()).arg(pid.to_string()).args(args),
        JCMD,
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "jcmd {pid} {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `jcmd PID GC.class_histogram OPTIONS...` as type name -> (instances, bytes), names in
/// memcity's spelling. A name that two loaders loaded is one row of each in the histogram and
/// one type in memcity: their rows are added up.
pub fn class_histogram(jdk: &Jdk, pid: u32, options: &[&str]) -> HashMap<String, (u64, u64)> {
    let mut args = vec!["GC.class_histogram"];
    args.extend_from_slice(options);
    let text = jcmd(jdk, pid, &args);
    let mut types: HashMap<String, (u64, u64)> = HashMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "   1:         50006        2001312  [J (java.base@17.0.15)"
        if fields.len() >= 4
            && fields[0].ends_with(':')
            && fields[0][..fields[0].len() - 1].parse::<u64>().is_ok()
        {
            let (Ok(n), Ok(b)) = (fields[1].parse::<u64>(), fields[2].parse::<u64>()) else {
                continue;
            };
            let row = types.entry(histogram_name(fields[3])).or_default();
            row.0 += n;
            row.1 += b;
        }
    }
    assert!(types.len() > 100, "unexpected histogram output: {text}");
    types
}

/// `[J` -> `long[]`, `[Ljava.lang.String;` -> `java.lang.String[]`: the histogram's spelling
/// (the JVM's) in memcity's (Java's), by memcity's own rule for arrays' signatures. Other names
/// are already Java's (and must not be read as signatures: `LinkedListLeak` is no `L...;`).
pub fn histogram_name(name: &str) -> String {
    if name.starts_with('[') {
        memcity_proto::names::java_name(name)
    } else {
        name.to_owned()
    }
}

/// `jcmd PID GC.heap_dump OPTIONS... FILE`, after failing unless the dump was written. `file`
/// must not exist (the JVM refuses to overwrite one, and says so with success) and is made
/// absolute (the JVM resolves a relative one against its own working directory).
pub fn heap_dump(jdk: &Jdk, pid: u32, file: &Path, options: &[&str]) {
    assert!(
        !file.exists(),
        "{} exists: the JVM would not overwrite it",
        file.display()
    );
    let file = std::path::absolute(file).expect("an absolute path");
    let mut args = vec!["GC.heap_dump"];
    args.extend_from_slice(options);
    let path = file.to_str().expect("a UTF-8 path");
    args.push(path);
    let out = jcmd(jdk, pid, &args);
    assert!(
        out.contains("Heap dump file created") && file.is_file(),
        "jcmd {pid} {args:?} wrote no dump: {out}"
    );
}
