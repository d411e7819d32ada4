//! What a Prometheus scrape costs the agent (scripts/bench-metrics.sh): a session of GROUPS
//! types (100 per package), a tenth of them growing, followed snapshot by snapshot as the
//! agent's metrics follow it; per snapshot, the time to take it in, to render the first scrape
//! after it, and to answer a scrape from the cache, and the answer's size. Prints medians, and
//! what the model holds at the end (the process's resident memory before and after).
//!
//! Usage: bench_metrics GROUPS [SNAPSHOTS] [TOP]

use std::time::{Duration, Instant};

use memcity::ports::metrics::synthetic::Session;
use memcity::ports::metrics::{Feed, Format, Settings};

/// This process's resident memory, bytes (`VmRSS`).
fn resident() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let groups: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let snapshots: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(60);
    let top: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10);
    let session = Session {
        packages: (groups / 100).max(1),
        types: groups.min(100),
        rise: 100,
        every_ms: 1000,
    };
    let mut feed = Feed::new(Settings {
        top,
        window: Duration::from_secs(600),
        agent: "bench:7788".into(),
        service: "bench".into(),
        page: None,
    });
    let before = resident();
    let messages = session.messages(snapshots);
    let (preamble, snapshots) = messages.split_at(2);
    for message in preamble {
        feed.apply(message);
    }
    let (mut apply, mut render, mut cached) = (Vec::new(), Vec::new(), Vec::new());
    let mut size = 0;
    for message in snapshots {
        let t = Instant::now();
        feed.apply(message);
        apply.push(t.elapsed());
        let t = Instant::now();
        size = feed.render(Format::OpenMetrics).len();
        render.push(t.elapsed());
        let t = Instant::now();
        feed.render(Format::OpenMetrics);
        cached.push(t.elapsed());
    }
    // The session's messages are freed and returned first: what stays is the model.
    let count = snapshots.len();
    drop(messages);
    // SAFETY: malloc_trim only returns free heap pages to the system.
    unsafe { libc::malloc_trim(0) };
    let held = resident().saturating_sub(before);
    println!(
        "{groups} groups, {count} snapshots, metrics_top={top}: take in a snapshot {:.2} ms, first scrape after it {:.2} ms, later scrapes {:.1} us, {size} bytes; the model holds about {:.0} MB",
        median(apply).as_secs_f64() * 1e3,
        median(render).as_secs_f64() * 1e3,
        median(cached).as_secs_f64() * 1e6,
        held as f64 / 1e6,
    );
}
