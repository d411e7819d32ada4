//! A diagnostic: which snapshots of a recording carry object paths, of what search, and the
//! counts they carry for the given types.
//! `cargo run --release -p memcity-city --example pathsinfo -- FILE TYPE...`

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((file, names)) = args.split_first() else {
        eprintln!("usage: pathsinfo FILE TYPE...");
        std::process::exit(2);
    };
    let model = match memcity_city::load::recording(std::path::Path::new(file)) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("{file}: {e}");
            std::process::exit(1);
        }
    };
    for (i, f) in model.frames().iter().enumerate() {
        let Some(p) = f.paths.as_ref() else { continue };
        let counts: Vec<String> = names
            .iter()
            .map(|n| format!("{n}={:?}", p.counted_of(n)))
            .collect();
        println!(
            "{i:4} seq {} focused {} complete {} stopped_early {} incomplete {:?} finished {} ms; {}",
            f.seq,
            p.focused,
            p.complete(),
            p.stopped_early,
            p.incomplete,
            p.finished_ms,
            counts.join(" ")
        );
    }
}
