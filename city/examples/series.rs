//! A diagnostic: each snapshot's numbers for the groups whose last name is given, the path
//! search each carries (what kind, and its count of the type), and the trend the report
//! judges them by.
//! `cargo run --release -p memcity-city --example series -- FILE TYPE...`

use memcity_city::leak::trends::Trend;
use memcity_city::model::Metric;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((file, names)) = args.split_first() else {
        eprintln!("usage: series FILE TYPE...");
        std::process::exit(2);
    };
    let model = match memcity_city::load::recording(std::path::Path::new(file)) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(1);
        }
    };
    let w = model.window();
    println!("window {}..={} of {}", w.start, w.end, model.len());
    for name in names {
        let ids: Vec<u32> = (0..model.nodes().len() as u32)
            .filter(|&id| model.node(id).name == *name)
            .collect();
        println!("== {name} ({} groups)", ids.len());
        let t0 = model.frames()[w.start].time_ms as f64;
        let mut points = Vec::new();
        for (i, f) in model.frames().iter().enumerate() {
            let sum = |g: &dyn Fn(u32) -> u64| ids.iter().map(|&id| g(id)).sum::<u64>();
            let objects = sum(&|id| model.value(id, i, Metric::Objects));
            let error = sum(&|id| model.error(id, i, Metric::Objects));
            let unconfirmed = sum(&|id| model.unconfirmed(id, i, Metric::Objects));
            println!(
                "{i:4} {:8.1} s {:9} {objects:10} ±{error:<8} unconfirmed {unconfirmed:<8} gc {}",
                f.time_ms as f64 / 1000.0,
                if f.is_estimated() { "estimate" } else { "walk" },
                f.gc_count
            );
            if let Some(p) = f.paths.as_ref() {
                println!(
                    "       paths: {}{}, counted {:?}{}",
                    if p.focused { "focused" } else { "full" },
                    if p.complete() { ", complete" } else { "" },
                    p.counted_of(name),
                    if p.incomplete.is_empty() {
                        String::new()
                    } else {
                        format!(" ({})", p.incomplete)
                    }
                );
            }
            if (w.start..=w.end).contains(&i) {
                points.push(((f.time_ms as f64 - t0) / 1000.0, objects as f64));
            }
        }
        if let Some(t) = Trend::fit(&points) {
            println!(
                "a line through every point: growth {:.0} recent {:.0} fit {:.2} steady {:.0}",
                t.growth,
                t.recent,
                t.fit,
                t.steady()
            );
        }
        if let Some(t) = memcity_city::leak::trends::trend_of(&model, &ids, Metric::Objects) {
            println!("as judged: {t:?}, steady {:.0}", t.steady());
        }
        let objects = |i: usize| {
            ids.iter()
                .map(|&id| model.value(id, i, Metric::Objects))
                .sum::<u64>()
        };
        if let Some(dead) = model.dead_rise_at(w.start, w.end, name, objects) {
            println!("dead: {dead:?}");
        }
    }
}
