//! Benchmarks for the city model (run by scripts/bench-city.sh in release mode): the layout of a
//! 100,000-node city, appending live snapshots to a long session, and building one frame's scene.
//! Prints medians; asserts nothing (this machine is shared and noisy).

use std::time::{Duration, Instant};

use memcity_city::layout::{layout, LayoutConfig, LiveLayout};
use memcity_city::model::CityModel;
use memcity_city::scene::{build, ViewSettings};

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// A snapshot of `districts` packages with `per` types each; values drift with `step`.
fn snapshot(districts: usize, per: usize, step: u64) -> Vec<(Vec<String>, String, u64, u64)> {
    let mut nodes = Vec::with_capacity(districts * (per + 1));
    for d in 0..districts {
        let mut total = 0;
        let start = nodes.len();
        nodes.push((vec![format!("pkg{d}")], "Package".to_string(), 0, 0));
        for b in 0..per {
            let objects = (b as u64 + 1) * 10 + if b == 0 { step * 100 } else { step % 7 };
            total += objects;
            nodes.push((
                vec![format!("pkg{d}"), format!("Type{b}")],
                "Type".to_string(),
                objects,
                objects * 24,
            ));
        }
        nodes[start].2 = total;
        nodes[start].3 = total * 24;
    }
    nodes
}

fn main() {
    // Layout of 100,000 buildings (100 districts x 1,000), every child kept.
    let mut big = CityModel::new();
    big.push_tree(0, (1, 1), &snapshot(100, 1000, 0), vec![]);
    let config = LayoutConfig {
        children_per_parent: 1000,
        ..Default::default()
    };
    let runs: Vec<Duration> = (0..5)
        .map(|_| {
            let t = Instant::now();
            let l = layout(&big, &config);
            assert_eq!(l.lots.len(), 100_101);
            t.elapsed()
        })
        .collect();
    println!(
        "layout of 100,000 buildings (squarify): median {:.1} ms",
        median(runs).as_secs_f64() * 1e3
    );

    // A live session: 2,000 snapshots of 5,000 nodes (50 x 100), each appended, with the live
    // layout checked after each.
    let mut model = CityModel::new();
    let mut live = LiveLayout::new(LayoutConfig {
        children_per_parent: 100,
        ..Default::default()
    });
    let mut appends = Vec::new();
    let mut updates = Vec::new();
    for i in 0..2000u64 {
        let nodes = snapshot(50, 99, i);
        let t = Instant::now();
        model.push_tree(i * 1000, (1, 1), &nodes, vec![]);
        appends.push(t.elapsed());
        let t = Instant::now();
        live.update(&model, i * 1000);
        updates.push(t.elapsed());
    }
    println!(
        "append one snapshot of 5,000 nodes to a session of up to 2,000: median {:.2} ms, last {:.2} ms",
        median(appends.clone()).as_secs_f64() * 1e3,
        appends.last().unwrap().as_secs_f64() * 1e3
    );
    println!(
        "live layout check after each append: median {:.2} ms ({} re-layouts in 2,000 snapshots)",
        median(updates).as_secs_f64() * 1e3,
        live.relayouts()
    );
    let runs: Vec<Duration> = (0..5)
        .map(|i| {
            let t = Instant::now();
            let scene = build(
                &model,
                live.layout(),
                1000.5 + i as f64,
                &ViewSettings::default(),
                None,
            );
            assert!(scene.buildings.len() > 4000);
            t.elapsed()
        })
        .collect();
    println!(
        "scene of ~5,000 buildings at a tweened time: median {:.2} ms",
        median(runs).as_secs_f64() * 1e3
    );
}
