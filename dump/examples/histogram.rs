//! Prints a dump's classes as `jcmd GC.class_histogram` does: `count bytes name`, by bytes.
//! A development aid, and what `scripts/bench-dump.sh` times for the shallow pass.

/// As `memcity` reads dumps: big arrays in files when memory is short.
#[global_allocator]
static ALLOCATOR: memcity_dump::spill::Spill = memcity_dump::spill::Spill;

fn main() {
    let path = std::env::args().nth(1).expect("usage: histogram DUMP");
    let started = std::time::Instant::now();
    let heap = memcity_dump::read(std::path::Path::new(&path)).unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    let sizes = memcity_dump::Sizes::infer(&heap);
    let mut rows: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
    for o in 0..heap.objects() as u32 {
        let c = heap.class_of[o as usize];
        let row = rows.entry(&heap.classes[c as usize].name).or_default();
        row.0 += 1;
        row.1 += sizes.of(&heap, o);
    }
    let mut rows: Vec<_> = rows.into_iter().collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.1 .1));
    for (name, (count, bytes)) in rows {
        println!("{count} {bytes} {name}");
    }
    eprintln!(
        "{} objects, {} references, layout {}, {:.2} s",
        heap.objects(),
        heap.edges.len(),
        sizes.layout.name,
        started.elapsed().as_secs_f64()
    );
}
