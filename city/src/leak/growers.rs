//! Which types grow by a leak's worth: of every type's trend (`trends.rs`), those rising
//! steadily in objects and in bytes beyond what the estimates leave in doubt, by at least a
//! share of the heap, and not of dead objects a complete search could not reach. These are the
//! types whose holders the later stages look for (MAT's "find suspects" step, where MAT ranks
//! by retained size and memcity by growth over time).

use std::collections::HashMap;

use crate::leak::trends::{trend_of, trends_of, trends_of_rows, type_nodes, Trend};
use crate::model::{CityModel, Metric, ROOT};

/// The least growth named a leak: this share of the heap's objects (and at least 100 objects).
pub const MIN_GROWTH_SHARE: f64 = 0.002;

/// And this share of the heap's bytes: a few hundred of a pool's sockets waiting for their
/// cleaner between two GCs, 20 KB in a 10 MB heap, are a wobble, not a leak.
pub const MIN_GROWTH_BYTES_SHARE: f64 = 0.005;

/// A type's rise over the window and its size at the window's end, summed over every group it
/// appears under (memcity's own share left out).
#[derive(Debug, Clone, PartialEq)]
pub struct Growing {
    pub type_name: String,
    /// The fitted rise in objects (what types are ranked by) and in bytes.
    pub objects: Trend,
    pub bytes: Option<Trend>,
    /// Live objects and bytes at the window's end, and their 95 % errors (summed over the
    /// type's groups, which over-states an error of several estimated groups: an honest
    /// bound, not a tight one).
    pub objects_now: u64,
    pub bytes_now: u64,
    pub objects_error: u64,
    pub bytes_error: u64,
}

/// The `n` types that rose most over the window, in objects, of those that rose steadily by a
/// leak's worth (`Trend::is_leak` with the suspects' floor): for exports that must bound how
/// many they name and keep naming the same ones (the agent's metrics; the JDK's types that
/// drift by a few objects would come and go as series).
pub fn growing_types(model: &CityModel, n: usize) -> Vec<Growing> {
    let types = type_nodes(model);
    let end = model.window().end;
    let floor = (model.value(ROOT, end, Metric::Objects) as f64 * MIN_GROWTH_SHARE).max(100.0);
    let sum = |ids: &[u32], of: &dyn Fn(u32) -> u64| {
        ids.iter()
            .fold(0u64, |total, &id| total.saturating_add(of(id)))
    };
    trends_of(model, &types)
        .into_iter()
        .filter(|(_, t)| t.is_leak(floor))
        .take(n)
        .map(|(type_name, objects)| {
            let ids = types.get(type_name.as_str()).map_or(&[][..], Vec::as_slice);
            Growing {
                objects,
                bytes: trend_of(model, ids, Metric::Bytes),
                objects_now: sum(ids, &|id| model.value(id, end, Metric::Objects)),
                bytes_now: sum(ids, &|id| model.value(id, end, Metric::Bytes)),
                objects_error: sum(ids, &|id| model.error(id, end, Metric::Objects)),
                bytes_error: sum(ids, &|id| model.error(id, end, Metric::Bytes)),
                type_name,
            }
        })
        .collect()
}

/// The bytes' trends of the types rising in objects (`byte_candidates`), by type.
pub(super) type BytesTrends = HashMap<String, Option<Trend>>;

/// The growing types of the window, strongest first, with their trends and the leak floor, of
/// every type's trend (`trends_of`, fitted once by the caller).
pub(super) fn growers(
    model: &CityModel,
    types: &HashMap<&str, Vec<u32>>,
    trends: Vec<(String, Trend)>,
    in_bytes: Option<&BytesTrends>,
) -> (Vec<(String, Trend)>, f64) {
    let w = model.window();
    let floor = growth_floor(model);
    // A heap that ran out rose to its ceiling and then stood there while the collector
    // thrashed: a rise then a plateau, which a line fits badly. What filled it is the leak.
    let ran_out = model.out_of_memory().is_some_and(|(i, _)| i == w.end);
    // A rise within what the estimates' errors leave in doubt at the trend's ends is noise, not
    // growth (an early estimate of a big steady structure may be off by 100,000 objects, and a
    // walk then finds it as it was). What may be garbage is judged apart: backed or rising (a
    // leak's strings' bytes are among much garbage of their type, which no marking has freed
    // yet, and the leak's paths still name them).
    //
    // The same in bytes, which is what sampling measures (one sample per so many bytes): a
    // count of arrays of every size rests on the few small ones sampled (a map's 80-byte
    // tables beside its catalog's 4 MB one, each sample standing for thousands), and can rise
    // beyond its error while the bytes it stands for do not. A leak rises in bytes too, by at
    // least a share of the heap's.
    let bytes_floor = model.value(ROOT, w.end, Metric::Bytes) as f64 * MIN_GROWTH_BYTES_SHARE;
    let rises = |t: &Trend| rises_in_objects(model, floor, t);
    // The bytes of every type that rises in objects, fitted in one pass (`trends_of_rows`):
    // one by one, a tenth of 3,000 types rising cost 0.35 s at each live snapshot. Or given,
    // fitted a few at a time (`SuspectsInSteps`).
    let fitted;
    let in_bytes = match in_bytes {
        Some(given) => given,
        None => {
            let candidates = byte_candidates(model, &trends);
            let rows: Vec<&[u32]> = candidates
                .iter()
                .map(|name| types.get(name).map_or(&[][..], Vec::as_slice))
                .collect();
            fitted = candidates
                .iter()
                .map(|name| name.to_string())
                .zip(trends_of_rows(model, &rows, Metric::Bytes))
                .collect::<HashMap<_, _>>();
            &fitted
        }
    };
    let rises_in_bytes = |name: &str| {
        in_bytes
            .get(name)
            .and_then(Option::as_ref)
            .is_some_and(|b| b.growth >= bytes_floor && !b.within_doubt(false))
    };
    // A rise the last complete search's reached share cannot make is of dead objects
    // (`CityModel::dead_rise_at`): no leak, and the growth table says so.
    let dead = |name: &str| {
        let ids = types.get(name);
        model
            .dead_rise_at(w.start, w.end, name, |i| objects_at(model, ids, i))
            .is_some()
    };
    let mut growers: Vec<(String, Trend)> = trends
        .into_iter()
        .filter(|(name, t)| {
            (rises(t) && rises_in_bytes(name) && !dead(name))
                || (ran_out && t.filled_the_heap(floor))
        })
        .collect();
    growers.sort_by(|a, b| b.1.growth.total_cmp(&a.1.growth).then(a.0.cmp(&b.0)));
    (growers, floor)
}

/// The least rise in objects named a leak: a share of the heap's at the window's end, and at
/// least 100.
pub(super) fn growth_floor(model: &CityModel) -> f64 {
    let heap = model.value(ROOT, model.window().end, Metric::Objects) as f64;
    (heap * MIN_GROWTH_SHARE).max(100.0)
}

/// Whether trend `t` rises in objects by a leak's worth (`floor`) beyond what the estimates
/// leave in doubt. Two recordings compared are two points by the user's choice (yesterday's
/// and today's): a rise from one to the other is what they ask about, where within one
/// recording two points could be a pool that filled.
pub(super) fn rises_in_objects(model: &CityModel, floor: f64, t: &Trend) -> bool {
    (t.is_leak(floor) || (model.is_comparison() && t.points == 2 && t.filled_the_heap(floor)))
        && !t.within_doubt(false)
}

/// The types of `trends` whose bytes `growers` judges too: those rising in objects.
pub(super) fn byte_candidates<'a>(
    model: &CityModel,
    trends: &'a [(String, Trend)],
) -> Vec<&'a str> {
    let floor = growth_floor(model);
    trends
        .iter()
        .filter(|(_, t)| rises_in_objects(model, floor, t))
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Objects of `type_name` at snapshot `index`.
pub(super) fn objects_at(model: &CityModel, ids: Option<&Vec<u32>>, index: usize) -> u64 {
    ids.map_or(0, |ids| {
        ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.value(id, index, Metric::Objects))
        })
    })
}

/// Of a type's rise to snapshot `index`, what the numbers back: summed over its groups, less
/// the estimates' error and what may be garbage (`CityModel::significant_growth`).
pub(super) fn backed_growth(
    model: &CityModel,
    types: &HashMap<&str, Vec<u32>>,
    name: &str,
    index: usize,
) -> f64 {
    types.get(name).map_or(0.0, |ids| {
        ids.iter()
            .map(|&id| model.significant_growth(id, index, Metric::Objects) as f64)
            .sum()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leak::testing::session;

    /// A start-up fill that levels off (Jetty's sessions at their expiry's bound within 5 s of
    /// a 12 s window) fits a line well enough (R² 0.6) to pass the fit alone; what rises no
    /// more is not a leak, and ranks near nothing. A leak that starts late still is one.
    #[test]
    fn a_rise_within_the_estimates_doubt_is_no_grower() {
        // A big structure estimated early with a wide error, then walked: its rise from the
        // first estimate to the walk is within what that estimate left in doubt.
        let types: &[(&str, [u64; 3])] = &[("Catalog", [150_000, 175_000, 200_000])];
        let mut m = session(types);
        let id = m.find(&["p", "Catalog"]).unwrap();
        let w = m.window();
        assert!(w.end > w.start, "{w:?}");
        let kinds = |m: &CityModel| -> Vec<String> {
            let nodes = type_nodes(m);
            growers(m, &nodes, trends_of(m, &nodes), None)
                .0
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(
            kinds(&m),
            ["Catalog"],
            "the premise: a clear rise when exact"
        );
        m.frames_mut_for_tests(w.start).exactness = Some(memcity_proto::v1::Exactness {
            source: memcity_proto::v1::exactness::Source::Estimate as i32,
            ..Default::default()
        });
        m.set_error_for_tests(w.start, id, 111_000);
        assert!(kinds(&m).is_empty(), "{:?}", kinds(&m));
        // The same rise with a narrow error is growth again.
        m.set_error_for_tests(w.start, id, 4_000);
        assert_eq!(kinds(&m), ["Catalog"]);
    }

    #[test]
    fn growing_types_are_the_fastest_risers_only() {
        let m = session(&[
            ("Drift", [100, 120, 140]),
            ("Slow", [100, 200, 300]),
            ("Fast", [100, 1100, 2100]),
            ("Steady", [50, 50, 50]),
            ("Falling", [900, 500, 100]),
        ]);
        let growing = growing_types(&m, 5);
        let names: Vec<&str> = growing.iter().map(|g| g.type_name.as_str()).collect();
        assert_eq!(names, ["Fast", "Slow"]);
        let fast = &growing[0];
        assert_eq!(fast.objects.growth, 2000.0);
        assert_eq!(fast.bytes.unwrap().growth, 32_000.0);
        assert_eq!((fast.objects_now, fast.bytes_now), (2100, 2100 * 16));
        assert_eq!((fast.objects_error, fast.bytes_error), (0, 0));
        assert_eq!(growing_types(&m, 1).len(), 1);
        assert!(growing_types(&CityModel::new(), 5).is_empty());
    }
}
