//! The cost of a live snapshot at the end of a long session (run by scripts/bench-long.sh in
//! release mode): loads a recording, as a viewer left open for hours would hold it, then takes
//! its last snapshot again `N` times, a second apart, timing the model's push, the suspects
//! the viewer works out again for each, and the copy of the model it works them out from. Prints medians and the largest; asserts nothing (this
//! machine is shared and noisy).
//! `bench_push FILE [N]`

use std::time::{Duration, Instant};

use memcity_proto::recording::RecordingReader;
use memcity_proto::v1::stream_message::Kind;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(file) = args.first().map(std::path::PathBuf::from) else {
        eprintln!("usage: bench_push FILE [N]");
        std::process::exit(2);
    };
    let n: u64 = args.get(1).map_or(20, |a| a.parse().expect("N: a number"));
    let mut model = memcity_city::load::recording(&file).unwrap_or_else(|e| {
        eprintln!("{}: {e}", file.display());
        std::process::exit(1);
    });
    // The last snapshot as it came: pushed again, it costs what a live one of its size does.
    let mut reader = RecordingReader::open(&file).expect("the recording");
    let mut last = None;
    while let Some(message) = reader.next_message().expect("a message") {
        if matches!(message.kind, Some(Kind::Snapshot(_))) {
            last = Some(message);
        }
    }
    let last = last.expect("a snapshot in the recording");
    let (mut pushes, mut suspects, mut copies) = (Vec::new(), Vec::new(), Vec::new());
    let (mut in_steps, mut largest_steps, mut step_counts) = (Vec::new(), Vec::new(), Vec::new());
    for i in 1..=n {
        let mut message = last.clone();
        if let Some(Kind::Snapshot(s)) = &mut message.kind {
            s.seq += i;
            s.time_ms += i * 1000;
        }
        let t = Instant::now();
        model.apply(&message).expect("the snapshot again");
        pushes.push(t.elapsed());
        // What the drawing thread pays for the suspects worked out beside it: a copy of the
        // model, whose snapshots are shared.
        let t = Instant::now();
        let copy = std::hint::black_box(model.clone());
        copies.push(t.elapsed());
        let t = Instant::now();
        let found = std::hint::black_box(memcity_city::leak::suspects::suspects(&copy));
        suspects.push(t.elapsed());
        // The page's way, in steps of the viewer's `STEP_CELLS` (a frame takes as many as fit
        // in 4 ms): the largest step bounds what a frame pays beyond that.
        let mut steps = memcity_city::leak::suspects::SuspectsInSteps::new(copy);
        let (started, mut largest, mut count) = (Instant::now(), Duration::ZERO, 0);
        let stepped = loop {
            let t = Instant::now();
            let done = steps.step(1 << 13);
            largest = largest.max(t.elapsed());
            count += 1;
            if let Some(done) = done {
                break done;
            }
        };
        in_steps.push(started.elapsed());
        largest_steps.push(largest);
        step_counts.push(count);
        assert_eq!(
            format!("{stepped:?}"),
            format!("{found:?}"),
            "in steps as at once"
        );
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let median = |mut v: Vec<Duration>| {
        v.sort();
        (ms(v[v.len() / 2]), ms(*v.last().expect("a run")))
    };
    let ((push, push_max), (found, found_max)) = (median(pushes), median(suspects));
    let (copy, copy_max) = median(copies);
    let (stepped, _) = median(in_steps);
    let (step, step_max) = median(largest_steps);
    step_counts.sort_unstable();
    println!(
        "live push after {} snapshots kept ({} nodes): model {push:.2} ms (largest {push_max:.2}), suspects {found:.1} ms (largest {found_max:.1}) beside the drawing, which copies the model in {copy:.2} ms (largest {copy_max:.2}); medians of {n}",
        model.len(),
        model.nodes().len()
    );
    println!(
        "in steps (the page): {stepped:.1} ms in {} steps, the largest {step:.2} ms (largest {step_max:.2})",
        step_counts[step_counts.len() / 2]
    );
}
