//! The whole analysis of one dump or a series (counts, sizes, paths, dominators, retained
//! sizes, retainers) into a session's messages, timed: what `scripts/bench-dump.sh` measures.

fn main() {
    let paths: Vec<std::path::PathBuf> = std::env::args().skip(1).map(Into::into).collect();
    assert!(!paths.is_empty(), "usage: analyse DUMP...");
    let started = std::time::Instant::now();
    let messages = memcity_dump::session(&paths).unwrap_or_else(|e| {
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
