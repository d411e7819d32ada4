//! The whole analysis of one dump or a series (counts, sizes, paths, dominators, retained
//! sizes, retainers) into a session's messages, timed: what `scripts/bench-dump.sh` measures.
//! `analyse --top DUMP` prints the five top-level dominators that retain most instead (MAT's
//! "biggest objects"), to hold memcity's retained sizes against another tool's.

/// As `memcity` reads dumps: big arrays in files when memory is short.
#[global_allocator]
static ALLOCATOR: memcity_dump::spill::Spill = memcity_dump::spill::Spill;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| a == "--top") {
        let path = args.get(1).expect("usage: analyse --top DUMP");
        let heap = memcity_dump::read(std::path::Path::new(path)).expect("a dump");
        let analysis = memcity_dump::Analysis::new(&heap).expect("analysed");
        let mut objects: Vec<u32> = analysis.dominators.children().top().to_vec();
        objects.sort_by_key(|&o| std::cmp::Reverse(analysis.retained[o as usize]));
        for &o in objects.iter().take(5) {
            let t = analysis.type_of(o);
            println!(
                "{} {}",
                analysis.retained[o as usize], analysis.types[t as usize].name
            );
        }
        return;
    }
    let paths: Vec<std::path::PathBuf> = args.drain(..).map(Into::into).collect();
    assert!(
        !paths.is_empty(),
        "usage: analyse DUMP... | analyse --top DUMP"
    );
    let started = std::time::Instant::now();
    let messages =
        memcity_dump::session(&paths, &memcity_dump::DEFAULT_LEVELS).unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(1)
        });
    for m in &messages {
        if let Some(memcity_proto::v1::stream_message::Kind::Snapshot(s)) = &m.kind {
            let d = s.dump.as_ref().expect("a dump's snapshot");
            println!(
                "{}: {} objects, {} references, {} retainers, read in {} ms",
                d.file,
                d.objects,
                d.references,
                d.retainers.len(),
                d.read_ms
            );
        }
    }
    println!("total {:.2} s", started.elapsed().as_secs_f64());
}
