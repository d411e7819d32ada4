//! Lifetimes end to end: a real JVM with the agent runs `Lifetimes` (one site whose objects die
//! at once, one whose objects a cache holds for three collections, one whose objects live to
//! the end), and the recording's `Lifetimes` messages are checked against what the app does:
//! the ages in GCs, the death contexts (the cache's field, or died unseen) and the share that
//! escapes the nursery.

use std::path::Path;
use std::time::Duration;

use memcity_e2e::*;
use memcity_proto::recording::RecordingReader;
use memcity_proto::strings::StringResolver;
use memcity_proto::v1::{stream_message::Kind, Death, Survivors};

/// One death, names resolved.
struct Life {
    type_name: String,
    site: String,
    /// `Class.field`, or empty when no walk or search saw it held.
    holder: String,
    survived_gcs: u64,
    weight: f64,
    collectors: String,
}

/// Every death and the last survivors of a recording.
struct Lives {
    deaths: Vec<Life>,
    /// The last snapshot's survivors: `(type, by_gc_age)`.
    survivors: Vec<(String, Vec<f64>)>,
    /// `allocated_bytes` of each snapshot that carried lifetimes.
    allocated: Vec<u64>,
    booked: u64,
}

fn read(path: &Path) -> Lives {
    let mut reader = RecordingReader::open(path).expect("open the recording");
    let mut names = StringResolver::new();
    let mut lives = Lives {
        deaths: Vec::new(),
        survivors: Vec::new(),
        allocated: Vec::new(),
        booked: 0,
    };
    let mut last_survivors: Vec<Survivors> = Vec::new();
    while let Some(message) = reader.next_message().expect("read a frame") {
        match message.kind {
            Some(Kind::Strings(table)) => names.apply(&table).expect("string table"),
            Some(Kind::Snapshot(snapshot)) => {
                let Some(l) = snapshot.lifetimes else {
                    continue;
                };
                lives.allocated.push(l.allocated_bytes);
                lives.booked += l.deaths_booked;
                for Death {
                    r#type,
                    site,
                    weight,
                    born,
                    died,
                    holder_type,
                    holder_field,
                    collectors,
                    ..
                } in l.deaths
                {
                    let (born, died) = (born.unwrap(), died.unwrap());
                    assert!(died.gc > born.gc, "a death comes at a GC after the birth");
                    assert!(died.allocated_bytes >= born.allocated_bytes);
                    let holder = if holder_type == 0 {
                        String::new()
                    } else {
                        format!(
                            "{}.{}",
                            names.resolve(holder_type),
                            names.resolve(holder_field)
                        )
                    };
                    lives.deaths.push(Life {
                        type_name: names.resolve(r#type).to_string(),
                        site: names.resolve(site).to_string(),
                        holder,
                        survived_gcs: died.gc - born.gc - 1,
                        weight,
                        collectors: names.resolve(collectors).to_string(),
                    });
                }
                last_survivors = l.alive;
            }
            _ => {}
        }
    }
    lives.survivors = last_survivors
        .into_iter()
        .map(|s| (names.resolve(s.r#type).to_string(), s.by_gc_age))
        .collect();
    lives
}

/// Deaths of one type: `(weight, the share of it that satisfies `pick`)`.
fn share(lives: &Lives, type_name: &str, pick: impl Fn(&Life) -> bool) -> (f64, f64) {
    let of: Vec<&Life> = lives
        .deaths
        .iter()
        .filter(|d| d.type_name == type_name)
        .collect();
    let total: f64 = of.iter().map(|d| d.weight).sum();
    let picked: f64 = of.iter().filter(|d| pick(d)).map(|d| d.weight).sum();
    (total, if total > 0.0 { picked / total } else { 0.0 })
}

/// Runs `Lifetimes` for 12 s with the agent's `options` (and a recording): its stdout and the
/// recording's lifetimes. A small young generation: a GC every few hundred ms.
fn run(options: &str) -> (Vec<String>, Lives) {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lifetimes.mcrec");
    let mut app = AppSpec::new(&jdk, "Lifetimes", 12.0)
        .flags(&["-Xmx256m", "-Xmn16m", "-XX:+UseG1GC"])
        .agent(format!(
            "port=0,record={},sampling=2k,sampling_cost=off,{options}",
            file.display()
        ))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, stdout) = app.wait_exit(Duration::from_secs(120));
    assert!(status.success(), "stderr: {}", app.stderr());
    eprintln!("{stdout:?}");
    (stdout, read(&file))
}

/// Walks often (a tenth of wall time on this small heap), so a cached object is seen by one
/// while the cache holds it.
#[test]
fn lifetimes_of_a_real_jvm_match_what_the_app_does() {
    let (stdout, lives) = run("budget=10%,min_interval=250ms");
    eprintln!(
        "{} deaths kept of {} booked; {} survivor groups at the end",
        lives.deaths.len(),
        lives.booked,
        lives.survivors.len()
    );
    assert!(
        lives.allocated.windows(2).all(|w| w[0] <= w[1]) && lives.allocated.last() > Some(&0),
        "the allocation clock only moves on: {:?}",
        lives.allocated
    );

    // Ephemeral objects die at the first GC after their birth, and no walk sees them alive.
    let ephemeral = "Lifetimes$Ephemeral";
    let (weight, young) = share(&lives, ephemeral, |d| d.survived_gcs == 0);
    eprintln!("{ephemeral}: {weight:.0} objects died, {young:.2} at their first GC");
    assert!(weight > 0.0, "no {ephemeral} died");
    assert!(
        young > 0.9,
        "{ephemeral}: only {young:.2} died at their first GC"
    );
    let (_, unseen) = share(&lives, ephemeral, |d| d.holder.is_empty());
    assert!(unseen > 0.9, "{ephemeral}: only {unseen:.2} died unseen");
    let (_, site) = share(&lives, ephemeral, |d| {
        d.site.contains("Lifetimes.ephemeral(")
    });
    // Freed by G1's young collections, as the JVM's performance data names them.
    let (_, young_gc) = share(&lives, ephemeral, |d| {
        d.collectors.contains("G1 young collection pauses")
    });
    assert!(
        young_gc > 0.9,
        "{ephemeral}: only {young_gc:.2} freed by a G1 young collection"
    );
    assert!(
        site > 0.9,
        "{ephemeral}: its site is Lifetimes.ephemeral for only {site:.2}"
    );

    // Cached objects live through collections (the cache keeps them for three of the app's
    // count) and die held by the cache's entry, as the walks saw them.
    let cached = "Lifetimes$Cached";
    let (weight, escaped) = share(&lives, cached, |d| d.survived_gcs >= 1);
    eprintln!("{cached}: {weight:.0} objects died, {escaped:.2} after surviving a GC");
    assert!(weight > 0.0, "no {cached} died");
    assert!(
        escaped > 0.9,
        "{cached}: only {escaped:.2} escaped the nursery"
    );
    // The app lets go after three of its GCs: each survived two or three (more when the agent
    // counts a pause the app's MXBeans do not, such as G1's remark).
    let (_, few) = share(&lives, cached, |d| (2..=5).contains(&d.survived_gcs));
    assert!(few > 0.8, "{cached}: only {few:.2} survived 2-5 GCs");
    let (_, held) = share(&lives, cached, |d| {
        d.holder == "Lifetimes$Cache$Entry.value"
    });
    eprintln!("{cached}: {held:.2} last seen in Cache.Entry.value");
    assert!(
        held > 0.5,
        "{cached}: only {held:.2} were seen held by the cache"
    );
    let (_, site) = share(&lives, cached, |d| d.site.contains("Lifetimes.cached("));
    assert!(
        site > 0.9,
        "{cached}: its site is Lifetimes.cached for only {site:.2}"
    );

    // Forever objects never die; at the end the survivors hold about as many as the app made,
    // the oldest of them through about every GC of the run.
    let done = |key: &str| -> f64 {
        stdout
            .iter()
            .find_map(|l| l.strip_prefix("DONE "))
            .and_then(|l| l.split(' ').find_map(|kv| kv.strip_prefix(key)))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in the DONE line: {stdout:?}"))
    };
    let (made, gcs) = (done("forever="), done("gcs="));
    assert!(
        gcs >= 6.0,
        "the app saw only {gcs} GCs: the test needs young GCs"
    );
    let forever = "Lifetimes$Forever";
    let (weight, _) = share(&lives, forever, |_| true);
    assert_eq!(weight, 0.0, "{forever} objects died");
    let ages: Vec<&Vec<f64>> = lives
        .survivors
        .iter()
        .filter(|(t, _)| t == forever)
        .map(|(_, a)| a)
        .collect();
    assert_eq!(ages.len(), 1, "{forever} comes from one site: {ages:?}");
    let alive: f64 = ages[0].iter().sum();
    assert!(
        (alive / made - 1.0).abs() < 0.3,
        "{forever}: {alive:.0} alive by the samples, {made} made"
    );
    // The bucket of GCs survived by the first ones: at least the app's count less one.
    let oldest = ages[0].iter().rposition(|&w| w > 0.0).unwrap();
    let expected = match (gcs as u32).saturating_sub(1) {
        0 => 0,
        n => (u32::BITS - n.leading_zeros()) as usize,
    }
    .min(6);
    assert!(
        oldest >= expected,
        "{forever}: the oldest survived GCs of bucket {oldest}, expected {expected} or more ({gcs} GCs): {:?}",
        ages[0]
    );
}

/// On a heap too large to walk (here: every walk refused by a 1 ms `max_pause`), the death
/// context comes from the path searches, which find the samples' holders while the
/// application runs.
#[test]
fn without_walks_the_path_search_names_what_held_the_dead() {
    let (_, lives) = run("max_pause=1ms,paths=50%");
    let cached = "Lifetimes$Cached";
    let (weight, held) = share(&lives, cached, |d| {
        d.holder == "Lifetimes$Cache$Entry.value"
    });
    eprintln!("{cached}: {weight:.0} died, {held:.2} last seen in Cache.Entry.value");
    let (_, elsewhere) = share(&lives, cached, |d| {
        !d.holder.is_empty() && d.holder != "Lifetimes$Cache$Entry.value"
    });
    assert!(weight > 0.0, "no {cached} died");
    // A search reaches the samples it looks for at its own pace (a share of a core, on the
    // test's debug build): it sees a part of the cache's short-lived objects (10-20 % here;
    // none without the search's holders, as walks never run), never another holder.
    assert!(
        held > 0.03,
        "{cached}: only {held:.2} were seen held by the cache"
    );
    assert!(
        elsewhere < 0.01,
        "{cached}: {elsewhere:.2} seen held elsewhere"
    );
}

/// With `lifetimes=off` the agent sends none, and `memcity lifetimes` says why from the
/// session's handshake.
#[test]
fn lifetimes_off_sends_none_and_the_command_says_so() {
    let jdk = jdk17();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("off.mcrec");
    let mut app = AppSpec::new(&jdk, "Lifetimes", 3.0)
        .flags(&["-Xmx256m", "-Xmn16m"])
        .agent(format!("port=0,record={},lifetimes=off", file.display()))
        .spawn();
    app.wait_for_line("READY", Duration::from_secs(60));
    let (status, _) = app.wait_exit(Duration::from_secs(60));
    assert!(status.success(), "stderr: {}", app.stderr());
    assert!(
        read(&file).allocated.is_empty(),
        "no snapshot carries lifetimes"
    );
    let out = memcity(
        &["lifetimes", file.to_str().unwrap()],
        Duration::from_secs(30),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("lifetimes option was off"), "{stderr}");
}
