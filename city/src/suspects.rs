//! Leak suspects: from a growing group to the object that holds it, window-free.
//!
//! 1. **Trend.** A type grows when its live objects rise steadily over the window (after the
//!    warm-up, see `CityModel::warm_start`): the least-squares slope times the window's span, and
//!    how well a line fits (R²), in the spirit of JMC's live-set rule; first against last alone
//!    would call any start-up ramp a leak.
//! 2. **Holder.** From the agent's object-level paths (`holders.rs`): the growing types'
//!    sampled objects, weighed by their recent samples, are followed from the GC roots to the
//!    accumulation point, one instance, with the collection's insides folded into it. Types
//!    whose paths meet at one holder are one leak; the report says how many samples and
//!    counted objects back it, how the paths split, and how old the paths are.
//! 3. **Without paths** (a recording from before them, or `paths=off`) the growing types are
//!    listed with no holder: per-type edges join every instance of a type (the application's
//!    `LinkedList` and JFR's are one node), so they name none.

use std::collections::{HashMap, HashSet};

// A suspect's data lives in `leak.rs`, so the details panel reads it without this module; its
// paths here stay.
pub use crate::leak::{Confidence, Evidence, Held, Step, Suspect};
use crate::model::{CityModel, Metric, Role, ROOT};

/// How a type's live objects moved over the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trend {
    pub first: u64,
    pub last: u64,
    /// The fitted line's rise over the window (objects).
    pub growth: f64,
    /// How well a line fits, 0..1 (1 for a straight rise).
    pub fit: f64,
    /// The rise that continues: the slope over the window's later half, times the whole
    /// span (as `growth` is). A start-up fill that levelled off, or a cache at its bound,
    /// rose once and rises no more: `growth` is large and `recent` near 0. With too few
    /// points in the later half to fit, `growth`.
    pub recent: f64,
    /// What the later half's own scatter leaves in doubt of `recent`: the 95 % half-width of
    /// its fitted slope (from the points' spread around their line) times the span. A pool
    /// filled and purged in turn (a sawtooth, counted by walks at whatever phase) scatters
    /// widely, and a line through its later half rises or falls by chance; a leak hardly
    /// scatters. 0 with too few points to tell.
    pub recent_spread: f64,
    /// What the estimates' own errors leave in doubt of `recent`: each point's 95 % error
    /// carried into the fitted slope as if independent (an overstatement for estimates that
    /// share their samples, and for a walk none), times the span. A type whose every
    /// estimate is ±160,000 rises or falls over a window's later half by chance; a leak's
    /// estimates are each close to its line. The table's ranking (`steady`) weighs it; whether a
    /// rise is a leak (`is_leak`) does not: a small leak's estimates, each ±6,000 of 9,000 and
    /// sharing their samples, rise together, and this doubt would hide it.
    pub recent_doubt: f64,
    /// What the estimates leave in doubt of the rise: the 95 % errors of the first and last
    /// points fitted (0 for walks).
    pub error: f64,
    /// Of the last point, what may be garbage (no old-generation marking has confirmed it).
    pub unconfirmed: f64,
    /// The points fitted.
    pub points: usize,
}

/// One snapshot's value of a type, for a trend: seconds into the window, objects, and the
/// estimate's 95 % error and unconfirmed part there.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Point {
    pub seconds: f64,
    pub value: f64,
    pub error: f64,
    pub unconfirmed: f64,
    /// A walk's count, not an estimate.
    pub exact: bool,
}

impl Trend {
    /// Least squares over `(seconds, objects)` points.
    pub fn fit(points: &[(f64, f64)]) -> Option<Trend> {
        let (slope, fit) = least_squares(points)?;
        let span = points.last().unwrap().0 - points[0].0;
        let half = points[0].0 + span / 2.0;
        let later = &points[points.partition_point(|p| p.0 < half)..];
        let recent = match later.len() >= MIN_RECENT_POINTS {
            true => least_squares(later).map_or(slope, |(s, _)| s),
            false => slope,
        };
        let recent_spread = match later.len() >= MIN_RECENT_POINTS {
            true => slope_half_width(later),
            false => 0.0,
        };
        Some(Trend {
            first: points[0].1.max(0.0) as u64,
            last: points.last().unwrap().1.max(0.0) as u64,
            growth: slope * span,
            fit,
            recent: recent * span,
            recent_spread: recent_spread * span,
            recent_doubt: 0.0,
            error: 0.0,
            unconfirmed: 0.0,
            points: points.len(),
        })
    }

    /// The trend of `points` with the doubt of its ends (see `error`, `unconfirmed`). Estimates
    /// compare with their own walk, not across walks: an estimate may be off by more than its
    /// error (a big structure built between two GCs, with few samples), and the next walk then
    /// finds it as a step that a line through all points reads as a rise going on. So with a
    /// walk in the later half, the rise that continues is judged from that walk on: by the
    /// estimates after it where they span a quarter of the window or more, else, where the
    /// estimates had climbed past the walk, no steeper than the steepest rise to the walk from a
    /// point of the later half at the top of its error.
    pub fn of_points(points: &[Point]) -> Option<Trend> {
        let xy: Vec<(f64, f64)> = points.iter().map(|p| (p.seconds, p.value)).collect();
        let (first, last) = (points.first()?, points.last()?);
        let mut trend = Trend::fit(&xy)?;
        trend.error = first.error + last.error;
        trend.unconfirmed = last.unconfirmed;
        let span = last.seconds - first.seconds;
        let half = first.seconds + span / 2.0;
        let later = &points[points.partition_point(|p| p.seconds < half)..];
        if later.len() >= MIN_RECENT_POINTS {
            trend.recent_doubt = slope_error(later) * span;
        }
        let walk = points.iter().rposition(|p| p.exact);
        if let Some(k) = walk.filter(|&k| points[k].seconds >= half) {
            // The estimates after the walk judge the rise when they span enough of the window
            // to (a leak's last seconds, an application idling before it exits, say little),
            // or whatever they span when the walk found more than the estimates before it
            // could have missed: their level was wrong (objects no sample landed in, such as
            // a JFR stream's metadata), and the step is no rise.
            let judged = last.seconds - points[k].seconds >= span * SINCE_WALK_SHARE;
            if missed_by_estimates(points, k) {
                // Only a rise since the walk beyond what the last estimate leaves in doubt goes
                // on: a line through a walk and an estimate a moment later, the same within
                // its error, would make a steep slope of nothing.
                let since = last.value - points[k].value;
                trend.recent = match least_squares(&xy[k..]) {
                    Some((slope, _)) if since > last.error + last.unconfirmed => {
                        trend.recent_spread = slope_half_width(&xy[k..]) * span;
                        trend.recent_doubt = slope_error(&points[k..]) * span;
                        trend.recent.min(slope * span)
                    }
                    _ => 0.0,
                };
            } else if k + 1 < points.len() && judged {
                if let Some((slope, _)) = least_squares(&xy[k..]) {
                    // Judged from the walk on: so is its doubt (a step at the walk from the
                    // estimates before it is no scatter of what follows).
                    trend.recent_spread = slope_half_width(&xy[k..]) * span;
                    trend.recent_doubt = slope_error(&points[k..]) * span;
                    trend.recent = trend.recent.min(slope * span);
                }
            } else if k > 0 && !points[k - 1].exact && points[k - 1].value > points[k].value {
                // The estimates climbed past what the walk found: the steepest rise to the walk
                // that any point of the later half allows at the top of its error (an earlier
                // walk's exactly).
                let walked = &points[k];
                let sure = points[..k]
                    .iter()
                    .filter(|p| p.seconds >= half && p.seconds < walked.seconds)
                    .map(|p| (walked.value - (p.value + p.error)) / (walked.seconds - p.seconds))
                    .reduce(f64::max);
                if let Some(slope) = sure {
                    trend.recent = trend.recent.min(slope * span);
                }
            }
        }
        Some(trend)
    }

    /// Whether the fitted rise is within what the estimates leave in doubt: their errors at
    /// both ends and, with `unconfirmed`, what may be garbage at the last. Such a rise ranks
    /// as none.
    pub fn within_doubt(&self, unconfirmed: bool) -> bool {
        let doubt = self.error + if unconfirmed { self.unconfirmed } else { 0.0 };
        self.growth <= doubt
    }

    /// A steady rise worth naming: a line fits well, it rose by at least `floor` objects, and
    /// it goes on rising (the later half's rise is a leak's worth and at least half the
    /// whole): a plateau is not a leak. Two points cannot tell: a line through them always
    /// fits, and a pool's connections counted by a walk while it filled and again once full
    /// rose as a leak would (a type no sample landed in has only its walks to go by).
    pub fn is_leak(&self, floor: f64) -> bool {
        self.points >= MIN_LEAK_POINTS
            && self.growth >= floor
            && self.fit >= MIN_FIT
            && self.last > self.first
            && self.recent >= floor.max(self.growth / 2.0)
    }

    /// What a growth table ranks by: the rise a line fits, as far as it continues beyond the
    /// later half's own scatter and its estimates' errors, together (a plateau ranks near 0, a
    /// sawtooth's chance slope too, a small type's estimates that lagged its fill and then a
    /// walk that found it whole too, and a rise that began late counts no more than it rose).
    pub fn steady(&self) -> f64 {
        let doubt = self.recent_spread.hypot(self.recent_doubt);
        self.growth.min(self.recent - doubt).max(0.0) * self.fit
    }

    /// Up to an OutOfMemoryError: a rise of at least `floor` objects from first to last,
    /// however it went (a rise then a plateau at the heap's ceiling fits a line badly).
    pub fn filled_the_heap(&self, floor: f64) -> bool {
        self.growth >= floor && self.last as f64 - self.first as f64 >= floor
    }
}

/// Whether the walk at `points[k]` found more than the estimate before it stated it could be:
/// above that estimate, carried on by the line through the points before it, by more than its
/// 95 % error and its unconfirmed part together. (Below is no miss: a leak that stopped, or
/// garbage the estimate stated as unconfirmed.)
fn missed_by_estimates(points: &[Point], k: usize) -> bool {
    let Some(before) = k.checked_sub(1).map(|i| &points[i]).filter(|p| !p.exact) else {
        return false;
    };
    let xy: Vec<(f64, f64)> = points[..k].iter().map(|p| (p.seconds, p.value)).collect();
    let slope = least_squares(&xy).map_or(0.0, |(slope, _)| slope.max(0.0));
    let expected = before.value + slope * (points[k].seconds - before.seconds);
    points[k].value > expected + before.error + before.unconfirmed
}

/// The least-squares slope of `points` and how well the line fits (R², 0..1); `None` for
/// fewer than two points or no spread in time.
fn least_squares(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    if points.len() < 2 {
        return None;
    }
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for &(x, y) in points {
        sxy += (x - mx) * (y - my);
        sxx += (x - mx) * (x - mx);
        syy += (y - my) * (y - my);
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let fit = if syy > 0.0 {
        (sxy * sxy / (sxx * syy)).clamp(0.0, 1.0)
    } else {
        0.0
    };
    Some((slope, fit))
}

/// Student's t at 97.5 % for `df` degrees of freedom: a 95 % interval's half-width in standard
/// errors, wide for the few points a window's later half may have.
fn t95(df: usize) -> f64 {
    const TABLE: [f64; 10] = [12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23];
    match df {
        0 => f64::INFINITY,
        1..=10 => TABLE[df - 1],
        11..=20 => 2.09,
        21..=30 => 2.04,
        _ => 1.96,
    }
}

/// The 95 % half-width of the slope of a line through `points` (three or more), from their
/// spread around it: `t95(n - 2)` standard errors, `sqrt(residuals² / (n - 2) / Sxx)`.
fn slope_half_width(points: &[(f64, f64)]) -> f64 {
    let Some((slope, _)) = least_squares(points) else {
        return 0.0;
    };
    if points.len() < 3 {
        return 0.0;
    }
    let n = points.len() as f64;
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(x, y), p| (x + p.0 / n, y + p.1 / n));
    let (mut residuals, mut sxx) = (0.0, 0.0);
    for &(x, y) in points {
        let off = y - (my + slope * (x - mx));
        residuals += off * off;
        sxx += (x - mx) * (x - mx);
    }
    t95(points.len() - 2) * (residuals / (n - 2.0) / sxx).sqrt()
}

/// The 95 % half-width of the least-squares slope through `points` that their own stated
/// errors make, each taken as independent: `sqrt(Σ (x - x̄)² e²) / Sxx` (the slope is
/// `Σ (x - x̄) y / Sxx`). 0 for walks alone or no spread in time.
fn slope_error(points: &[Point]) -> f64 {
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.seconds).sum::<f64>() / n;
    let (mut sxx, mut spread) = (0.0, 0.0);
    for p in points {
        let dx = p.seconds - mx;
        sxx += dx * dx;
        spread += dx * dx * p.error * p.error;
    }
    if sxx <= 0.0 {
        return 0.0;
    }
    spread.sqrt() / sxx
}

/// The share of the window the estimates after its last walk must span to judge the rise that
/// goes on by themselves (`Trend::of_points`).
const SINCE_WALK_SHARE: f64 = 0.25;

/// How well a line must fit a type's objects over time to call it a steady rise.
pub const MIN_FIT: f64 = 0.6;
/// Points the window's later half needs for its own slope (`Trend::recent`): two snapshots
/// there are one difference of two estimates, too noisy to overrule the whole window's line.
const MIN_RECENT_POINTS: usize = 3;
/// Points a rise needs before it can be a leak (see `Trend::is_leak`).
const MIN_LEAK_POINTS: usize = 3;
/// The least growth named a leak: this share of the heap's objects (and at least 100 objects).
pub const MIN_GROWTH_SHARE: f64 = 0.002;
/// And this share of the heap's bytes: a few hundred of a pool's sockets waiting for their
/// cleaner between two GCs, 20 KB in a 10 MB heap, are a wobble, not a leak.
pub const MIN_GROWTH_BYTES_SHARE: f64 = 0.005;
/// Suspects named at most.
const MAX_SUSPECTS: usize = 5;

/// The nodes of each type (one per package path it appears under), memcity's own share of a
/// type (under [`MEMCITY`]) left out: it is not the application's.
fn type_nodes(model: &CityModel) -> HashMap<&str, Vec<u32>> {
    let mut types: HashMap<&str, Vec<u32>> = HashMap::new();
    for (id, node) in model.nodes().iter().enumerate() {
        if node.role == Role::Type && !node.own {
            types.entry(node.name.as_str()).or_default().push(id as u32);
        }
    }
    types
}

/// The trend of every type in the window, strongest growth first (memcity's own group left
/// out).
pub fn type_trends(model: &CityModel) -> Vec<(String, Trend)> {
    trends_of(model, &type_nodes(model))
}

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

/// `type_trends` for the nodes of each type, `types`, most growth first.
fn trends_of(model: &CityModel, types: &HashMap<&str, Vec<u32>>) -> Vec<(String, Trend)> {
    let names: Vec<&str> = types.keys().copied().collect();
    let rows: Vec<&[u32]> = names.iter().map(|name| types[name].as_slice()).collect();
    let mut out: Vec<(String, Trend)> = names
        .iter()
        .zip(trends_of_rows(model, &rows, Metric::Objects))
        .filter_map(|(name, trend)| trend.map(|t| (name.to_string(), t)))
        .collect();
    sort_by_growth(&mut out);
    out
}

/// Most growth first, then by name.
fn sort_by_growth(trends: &mut [(String, Trend)]) {
    trends.sort_by(|a, b| b.1.growth.total_cmp(&a.1.growth).then(a.0.cmp(&b.0)));
}

/// Points a trend is fitted to at most. A line and its later half need no more: past this, a
/// window of thousands of snapshots (a session recorded for hours) is thinned evenly, keeping
/// its two ends and, up to half of the points, its walks (exact, and what tells a step from a
/// rise), so that a trend costs the same however long the session.
pub const MAX_TREND_POINTS: usize = 2048;

/// The snapshots of the window a trend reads: every one, or past [`MAX_TREND_POINTS`] the
/// window's ends, its walks (thinned evenly if more than half the points) and evenly spaced
/// estimates between them, in order.
pub fn trend_snapshots(model: &CityModel) -> Vec<usize> {
    if model.frames().is_empty() {
        return Vec::new();
    }
    let w = model.window();
    let span = w.end + 1 - w.start.min(w.end + 1);
    if span <= MAX_TREND_POINTS {
        return (w.start..=w.end).collect();
    }
    let frames = model.frames();
    let evenly = |from: &[usize], n: usize| -> Vec<usize> {
        if from.len() <= n {
            return from.to_vec();
        }
        (0..n)
            .map(|k| from[k * (from.len() - 1) / (n - 1).max(1)])
            .collect()
    };
    let walks: Vec<usize> = (w.start..=w.end)
        .filter(|&i| !frames[i].is_estimated())
        .collect();
    let mut chosen = evenly(&walks, MAX_TREND_POINTS / 2);
    let all: Vec<usize> = (w.start..=w.end).collect();
    chosen.extend(evenly(&all, MAX_TREND_POINTS - chosen.len()));
    chosen.extend([w.start, w.end]);
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

/// Cells (rows times points) summed at once by [`trends_of_rows`]: the rows are taken in
/// chunks of this many cells, so that its memory is bounded however many rows are asked for.
const TREND_CELLS: usize = 1 << 22;

/// The trend over the window of the summed `metric` of each row of nodes (a type's nodes in
/// every package or site it appears under, or one group's node), from the snapshots that say
/// something of them (see `point`). Each snapshot's values are read once per chunk of rows, in
/// node order: looking every row's nodes up in every snapshot (`trend_of`) costs a search per
/// node and snapshot, and the report, suspects and the agent's metrics fit thousands of rows.
pub fn trends_of_rows(model: &CityModel, rows: &[&[u32]], metric: Metric) -> Vec<Option<Trend>> {
    let frames = model.frames();
    let at = trend_snapshots(model);
    if at.is_empty() {
        return vec![None; rows.len()];
    }
    let span = at.len();
    let times = trend_times(model, &at);
    let pick = |v: &(u32, u64, u64)| pick(v, metric);
    let per_chunk = (TREND_CELLS / span).max(1).min(rows.len().max(1));
    let mut out = Vec::with_capacity(rows.len());
    // The chunk's row of each node (`u32::MAX`: none), set and cleared chunk by chunk.
    let mut row_of = vec![u32::MAX; model.nodes().len()];
    // A cell per snapshot and row, snapshot after snapshot: a snapshot's values, read in node
    // order, land close together (row after snapshot, 2,048 snapshots apart, made each write
    // a cache miss: most of a live recomputation's time at 3,000 groups). Made once, cleared
    // for each chunk.
    let cells = per_chunk * span;
    let mut sums = vec![0u64; cells];
    // A row's doubt at each snapshot, which tells whether its value there says anything
    // (`point`).
    let mut errors = vec![0u64; cells];
    let mut unconfirmed = vec![0u64; cells];
    let mut points: Vec<Vec<Point>> = Vec::new();
    for chunk in rows.chunks(per_chunk) {
        let n = chunk.len();
        for (row, ids) in chunk.iter().enumerate() {
            for &id in ids.iter() {
                if let Some(r) = row_of.get_mut(id as usize) {
                    *r = row as u32;
                }
            }
        }
        for buffer in [&mut sums, &mut errors, &mut unconfirmed] {
            buffer[..n * span].fill(0);
        }
        for (i, &index) in at.iter().enumerate() {
            for (list, into) in [
                (frames[index].values(), &mut sums),
                (model.errors(index), &mut errors),
                (model.unconfirmed_values(index), &mut unconfirmed),
            ] {
                let column = &mut into[i * n..(i + 1) * n];
                for v in list {
                    let row = row_of.get(v.0 as usize).copied().unwrap_or(u32::MAX);
                    if let Some(cell) = column.get_mut(row as usize) {
                        // Saturating: a damaged file's counts must not overflow.
                        *cell = cell.saturating_add(pick(v));
                    }
                }
            }
        }
        // Rows' points are gathered a block of rows at a time, snapshot after snapshot, so
        // that each snapshot's cells are read together.
        const BLOCK: usize = 64;
        for first_row in (0..n).step_by(BLOCK) {
            let block = first_row..(first_row + BLOCK).min(n);
            points.resize_with(block.len(), Vec::new);
            for p in points.iter_mut() {
                p.clear();
            }
            for i in 0..span {
                let exact = !frames[at[i]].is_estimated();
                for (k, row) in block.clone().enumerate() {
                    let c = i * n + row;
                    if let Some(p) = point(
                        times[i],
                        exact,
                        model.is_comparison(),
                        sums[c],
                        errors[c],
                        unconfirmed[c],
                    ) {
                        points[k].push(p);
                    }
                }
            }
            out.extend(points[..block.len()].iter().map(|p| Trend::of_points(p)));
        }
        for ids in chunk {
            for &id in ids.iter() {
                if let Some(r) = row_of.get_mut(id as usize) {
                    *r = u32::MAX;
                }
            }
        }
    }
    out
}

/// Seconds from the first of snapshots `at` to each.
fn trend_times(model: &CityModel, at: &[usize]) -> Vec<f64> {
    let frames = model.frames();
    let t0 = at.first().map_or(0.0, |&i| frames[i].time_ms as f64);
    at.iter()
        .map(|&i| (frames[i].time_ms as f64 - t0) / 1000.0)
        .collect()
}

/// A snapshot's `(node, objects, bytes)` in `metric`.
fn pick(v: &(u32, u64, u64), metric: Metric) -> u64 {
    match metric {
        Metric::Objects => v.1,
        Metric::Bytes => v.2,
    }
}

/// [`trends_of_rows`] for a few rows over snapshots `at` (`trend_snapshots`): each row's nodes
/// looked up in each snapshot's lists (sorted by node), so that the cost is the rows' nodes'
/// and not every node's, as a step of [`SuspectsInSteps`] must be. Snapshot after snapshot, so
/// that one snapshot's lists are searched for every row while they are at hand.
fn trends_of_few_rows(
    model: &CityModel,
    at: &[usize],
    rows: &[&[u32]],
    metric: Metric,
) -> Vec<Option<Trend>> {
    let frames = model.frames();
    let times = trend_times(model, at);
    let sum = |list: &[(u32, u64, u64)], ids: &[u32]| -> u64 {
        ids.iter().fold(0u64, |total, &id| {
            list.binary_search_by_key(&id, |v| v.0)
                .map_or(total, |k| total.saturating_add(pick(&list[k], metric)))
        })
    };
    let mut points: Vec<Vec<Point>> = vec![Vec::with_capacity(at.len()); rows.len()];
    for (&index, &seconds) in at.iter().zip(&times) {
        let exact = !frames[index].is_estimated();
        let (values, errors, unconfirmed) = (
            frames[index].values(),
            model.errors(index),
            model.unconfirmed_values(index),
        );
        for (ids, points) in rows.iter().zip(points.iter_mut()) {
            points.extend(point(
                seconds,
                exact,
                model.is_comparison(),
                sum(values, ids),
                sum(errors, ids),
                sum(unconfirmed, ids),
            ));
        }
    }
    points.iter().map(|p| Trend::of_points(p)).collect()
}

/// [`suspects`] worked out a step at a time, for a caller with no thread to work them out
/// beside it (the page, in WebAssembly): most of their cost, the trends over the window of
/// every type in objects and of those rising in bytes too (some 200 ms at 3,000 types), is
/// fitted a block of types per step, on a copy of the model taken at the start
/// (`CityModel::clone`, which shares its snapshots), whatever the session does meanwhile.
pub struct SuspectsInSteps {
    model: CityModel,
    /// The snapshots the trends read (`trend_snapshots`).
    at: Vec<usize>,
    /// Every type, in the order they are fitted in objects, with its nodes, and the trends
    /// fitted so far.
    names: Vec<String>,
    rows: Vec<Vec<u32>>,
    objects: Vec<Option<Trend>>,
    /// Once every type's is: the trends in objects (`trends_of`), the types rising (whose
    /// bytes are fitted next) and their bytes' trends fitted so far.
    all: Option<Vec<(String, Trend)>>,
    rising: Vec<String>,
    rising_rows: Vec<Vec<u32>>,
    bytes: Vec<Option<Trend>>,
}

impl SuspectsInSteps {
    pub fn new(model: CityModel) -> Self {
        let at = trend_snapshots(&model);
        let mut types: Vec<(String, Vec<u32>)> = type_nodes(&model)
            .into_iter()
            .map(|(name, ids)| (name.to_string(), ids))
            .collect();
        types.sort_unstable();
        let (names, rows) = types.into_iter().unzip();
        Self {
            model,
            at,
            names,
            rows,
            objects: Vec::new(),
            all: None,
            rising: Vec::new(),
            rising_rows: Vec::new(),
            bytes: Vec::new(),
        }
    }

    /// Fits the trends of some `cells` more trend cells (a type's nodes times the snapshots a
    /// trend reads; at least one type's); the suspects once every trend is fitted.
    pub fn step(&mut self, cells: usize) -> Option<Vec<Suspect>> {
        // Nodes looked up per snapshot this step: a type under many packages costs as many.
        let lookups = (cells / self.at.len().max(1)).max(1);
        let fit = |all_rows: &[Vec<u32>], from: usize, metric: Metric| {
            let mut rows: Vec<&[u32]> = Vec::new();
            let mut taken = 0;
            for ids in &all_rows[from..] {
                if taken >= lookups {
                    break;
                }
                taken += ids.len().max(1);
                rows.push(ids);
            }
            trends_of_few_rows(&self.model, &self.at, &rows, metric)
        };
        let Some(all) = &self.all else {
            let fitted = fit(&self.rows, self.objects.len(), Metric::Objects);
            self.objects.extend(fitted);
            if self.objects.len() == self.names.len() {
                let mut all: Vec<(String, Trend)> = self
                    .names
                    .iter()
                    .zip(&self.objects)
                    .filter_map(|(name, trend)| (*trend).map(|t| (name.clone(), t)))
                    .collect();
                sort_by_growth(&mut all);
                self.rising = byte_candidates(&self.model, &all)
                    .into_iter()
                    .map(str::to_string)
                    .collect();
                let at = |name: &String| self.names.binary_search(name).ok();
                self.rising_rows = (self.rising.iter())
                    .map(|name| at(name).map_or_else(Vec::new, |k| self.rows[k].clone()))
                    .collect();
                self.all = Some(all);
            }
            return None;
        };
        if self.bytes.len() < self.rising.len() {
            let fitted = fit(&self.rising_rows, self.bytes.len(), Metric::Bytes);
            self.bytes.extend(fitted);
            return None;
        }
        let types = type_nodes(&self.model);
        let in_bytes: BytesTrends = self
            .rising
            .iter()
            .cloned()
            .zip(self.bytes.iter().copied())
            .collect();
        Some(suspects_given(
            &self.model,
            &types,
            all.clone(),
            Some(&in_bytes),
        ))
    }
}

/// A type's point at a snapshot, or `None` when the snapshot only carries the numbers of its
/// last walk: an estimate in which the type has neither error nor unconfirmed births, because
/// no sample of its was born or died since. Such a value says nothing new: a type of small
/// objects may have grown by thousands that no sample happened to land in, which the next walk
/// then finds as a step. Trends leave these points out. The one place that rule is written:
/// `trends_of` (every type at once) and `trend_of` (one) both build their points here. Two
/// recordings compared (`compared`) keep both points: each is what its recording said of the
/// type then, and without either there is nothing to compare.
fn point(
    seconds: f64,
    exact: bool,
    compared: bool,
    value: u64,
    error: u64,
    unconfirmed: u64,
) -> Option<Point> {
    (exact || compared || error > 0 || unconfirmed > 0).then_some(Point {
        seconds,
        value: value as f64,
        error: error as f64,
        unconfirmed: unconfirmed as f64,
        exact,
    })
}

/// The point of nodes `ids` (summed) at snapshot `index`, `metric`, dated from `t0_ms`.
fn point_at(
    model: &CityModel,
    ids: &[u32],
    index: usize,
    metric: Metric,
    t0_ms: u64,
) -> Option<Point> {
    let frame = model.frames().get(index)?;
    // Saturating: a damaged file's counts must not overflow.
    let sum = |of: &dyn Fn(u32) -> u64| -> u64 {
        ids.iter().fold(0u64, |sum, &id| sum.saturating_add(of(id)))
    };
    point(
        (frame.time_ms as f64 - t0_ms as f64) / 1000.0,
        !frame.is_estimated(),
        model.is_comparison(),
        sum(&|id| model.value(id, index, metric)),
        sum(&|id| model.error(id, index, metric)),
        sum(&|id| model.unconfirmed(id, index, metric)),
    )
}

/// Whether snapshot `index` only carries the numbers of nodes `ids` from their last walk (see
/// `point`).
pub fn carried(model: &CityModel, ids: &[u32], index: usize) -> bool {
    point_at(model, ids, index, Metric::Objects, 0).is_none()
}

/// The trend over the window of the summed `metric` of nodes `ids` (a type's, in every package
/// or site it appears under), from the snapshots that say something of them (see `point`).
pub fn trend_of(model: &CityModel, ids: &[u32], metric: Metric) -> Option<Trend> {
    let at = trend_snapshots(model);
    let t0 = model.frames().get(*at.first()?)?.time_ms;
    let points: Vec<Point> = at
        .into_iter()
        .filter_map(|i| point_at(model, ids, i, metric, t0))
        .collect();
    Trend::of_points(&points)
}

/// What a holder keeps alive of `type_name`'s growth: `share` of its fitted rise, in objects
/// and bytes (see `Held`).
fn held(model: &CityModel, types: &HashMap<&str, Vec<u32>>, type_name: &str, share: f64) -> Held {
    let ids = types.get(type_name).map_or(&[][..], Vec::as_slice);
    let rise = |metric| {
        trend_of(model, ids, metric).map_or(0, |t| (t.growth.max(0.0) * share).round() as i64)
    };
    let w = model.window();
    let error = |metric| {
        let sum = ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.error(id, w.start, metric))
                .saturating_add(model.error(id, w.end, metric))
        });
        (sum as f64 * share).round() as i64
    };
    let unconfirmed = |metric| {
        let sum = ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.unconfirmed(id, w.end, metric))
        });
        (sum as f64 * share).round() as i64
    };
    Held {
        type_name: type_name.to_string(),
        objects: rise(Metric::Objects),
        bytes: rise(Metric::Bytes),
        objects_error: error(Metric::Objects),
        bytes_error: error(Metric::Bytes),
        objects_unconfirmed: unconfirmed(Metric::Objects),
        bytes_unconfirmed: unconfirmed(Metric::Bytes),
    }
}

/// Most bytes first, then most objects, then by name (a stable order).
fn sort_held(holds: &mut [Held]) {
    holds.sort_by(|a, b| {
        (b.bytes, b.objects)
            .cmp(&(a.bytes, a.objects))
            .then_with(|| a.type_name.cmp(&b.type_name))
    });
}

/// " and N more threads" after a root that a pool's threads share (`Suspect::co_holders`),
/// " and N more virtual threads" after a virtual thread's frame, else nothing.
pub fn more_threads(root: &str, n: usize) -> String {
    let kind = if root.contains("virtual thread \"") {
        "virtual thread"
    } else {
        "thread"
    };
    match n {
        0 => String::new(),
        1 => format!(" and 1 more {kind}"),
        n => format!(" and {n} more {kind}s"),
    }
}

pub use crate::names::{is_internal, thread_family};

/// Walks (snapshots with a reference graph) in the window: suspects are traced from them.
pub fn walks_in_window(model: &CityModel) -> usize {
    let w = model.window();
    model.frames().get(w.start..=w.end).map_or(0, |frames| {
        frames.iter().filter(|f| f.graph.is_some()).count()
    })
}

/// The leak suspects of the window, most growth first (empty when nothing grows steadily or no
/// walk has a graph).
pub fn suspects(model: &CityModel) -> Vec<Suspect> {
    if model.frames().is_empty() {
        return Vec::new();
    }
    let types = type_nodes(model);
    let all = trends_of(model, &types);
    suspects_given(model, &types, all, None)
}

/// The bytes' trends of the types rising in objects (`byte_candidates`), by type.
type BytesTrends = HashMap<String, Option<Trend>>;

/// The suspects of the window of `model`, its types' nodes and every type's trend, `all`
/// (`trends_of`), given; and the bytes' trends of those rising, if fitted already.
fn suspects_given(
    model: &CityModel,
    types: &HashMap<&str, Vec<u32>>,
    all: Vec<(String, Trend)>,
    in_bytes: Option<&BytesTrends>,
) -> Vec<Suspect> {
    let w = model.window();
    if model.frames().is_empty() {
        return Vec::new();
    }
    if let Some((at, paths)) = model.paths_at(w.end) {
        return suspects_from_paths(model, at, paths, types, all, in_bytes);
    }
    // No object paths (a recording from before them, or paths=off): the growing types, and
    // no holder. Per-type edges join every instance of a type, so they name none.
    let (growers, floor) = growers(model, types, all, in_bytes);
    let mut out: Vec<Suspect> = growers
        .iter()
        .filter_map(|(name, trend)| {
            let backed = backed_growth(model, types, name, w.end);
            let suspect = Suspect {
                also_reached_from: Vec::new(),
                root_kind: None,
                root: String::new(),
                steps: Vec::new(),
                holder: String::new(),
                suspect_reference: String::new(),
                leaking: vec![name.clone()],
                growth: trend.growth.round() as i64,
                backed_growth: backed.round() as i64,
                confirmed: backed >= floor,
                confidence: Confidence::Ambiguous,
                co_holders: Vec::new(),
                signature: format!("(no paths) | {name}"),
                walk_seq: 0,
                walk_age_ms: 0,
                sites: top_sites(model, name, w.end, 3),
                evidence: None,
                holds: vec![held(model, types, name, 1.0)],
            };
            worth_naming(&suspect, trend).then_some(suspect)
        })
        .take(MAX_SUSPECTS)
        .collect();
    out.sort_by_key(|s| !s.is_backed());
    out
}

/// Whether a suspect is worth naming at all: confirmed (backed by a leak's worth beyond the
/// estimates' doubt, by paths as fresh as the rise), or else one that goes on beyond what its
/// later half's scatter and errors leave in doubt. A steady server's session data estimated
/// low while its sessions filled and at their plateau after rose within its doubt and no
/// further: noise on noise. So did, just beyond its doubt, a server's start-up catalog on
/// generational ZGC, whose estimate at the window's start was two errors low and whose
/// holder the paths of its build named (stale, and not going on: 6 runs in 25).
fn worth_naming(suspect: &Suspect, trend: &Trend) -> bool {
    suspect.confirmed || trend.steady() > 0.0
}

/// Where the path search judges liveness, whether a suspect rests on more than what it did not
/// find alive: backed (by numbers or a holder), or a rise beyond its estimates' error and
/// unconfirmed part together. Growth resting only on unconfirmed mass is garbage awaiting a
/// marking as far as the search can tell: the band of doubt, not a rise. A steady server's
/// expired sessions, promoted and dead in an old generation no marking had visited for 12 s (a
/// loaded machine, searches far apart), rose by 5,895 ±3,924 while 6,226 of the last
/// estimate's 6,568 might have been garbage. Without paths (`paths=off`) markings are the only
/// judge, and no search has looked: such a rise is shown as rising, not yet explained.
fn beyond_garbage(suspect: &Suspect, trend: &Trend) -> bool {
    suspect.is_backed() || !trend.within_doubt(true)
}

/// Of a type's rise to snapshot `index`, what the numbers back: summed over its groups, less
/// the estimates' error and what may be garbage (`CityModel::significant_growth`).
fn backed_growth(
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

/// A root's name with its thread's name (`thread "..."`, `... of thread "..."`) made
/// run-independent (`names::stable_thread_name`); other roots as they are.
pub fn stable_root(root: &str) -> String {
    let Some(start) = root.find("thread \"") else {
        return root.to_string();
    };
    let name_at = start + "thread \"".len();
    let Some(len) = root[name_at..].rfind('"') else {
        return root.to_string();
    };
    format!(
        "{}{}{}",
        &root[..name_at],
        crate::names::stable_thread_name(&root[name_at..name_at + len]),
        &root[name_at + len..]
    )
}

pub use crate::model::MEMCITY;

/// The growing types of the window, strongest first, with their trends and the leak floor, of
/// every type's trend (`trends_of`, fitted once by the caller).
fn growers(
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
fn growth_floor(model: &CityModel) -> f64 {
    let heap = model.value(ROOT, model.window().end, Metric::Objects) as f64;
    (heap * MIN_GROWTH_SHARE).max(100.0)
}

/// Whether trend `t` rises in objects by a leak's worth (`floor`) beyond what the estimates
/// leave in doubt. Two recordings compared are two points by the user's choice (yesterday's
/// and today's): a rise from one to the other is what they ask about, where within one
/// recording two points could be a pool that filled.
fn rises_in_objects(model: &CityModel, floor: f64, t: &Trend) -> bool {
    (t.is_leak(floor) || (model.is_comparison() && t.points == 2 && t.filled_the_heap(floor)))
        && !t.within_doubt(false)
}

/// The types of `trends` whose bytes `growers` judges too: those rising in objects.
fn byte_candidates<'a>(model: &CityModel, trends: &'a [(String, Trend)]) -> Vec<&'a str> {
    let floor = growth_floor(model);
    trends
        .iter()
        .filter(|(_, t)| rises_in_objects(model, floor, t))
        .map(|(name, _)| name.as_str())
        .collect()
}

/// Objects of `type_name` at snapshot `index`.
fn objects_at(model: &CityModel, ids: Option<&Vec<u32>>, index: usize) -> u64 {
    ids.map_or(0, |ids| {
        ids.iter().fold(0u64, |sum, &id| {
            sum.saturating_add(model.value(id, index, Metric::Objects))
        })
    })
}

/// Suspects named from object-level paths (`holders.rs`): the paths carried by snapshot `at`.
fn suspects_from_paths(
    model: &CityModel,
    at: usize,
    paths: &crate::holders::Paths,
    types: &HashMap<&str, Vec<u32>>,
    all: Vec<(String, Trend)>,
    in_bytes: Option<&BytesTrends>,
) -> Vec<Suspect> {
    let w = model.window();
    let frames = model.frames();
    let (growers, floor) = growers(model, types, all, in_bytes);
    let trends: HashMap<&str, &Trend> = growers.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let end_ms = frames[w.end].time_ms;
    let backed = |name: &str, index: usize| backed_growth(model, types, name, index);
    // A step's counts are the group table's, read from the model: a type no sample lands on
    // (the one list holding a leak) has no trend to read them from. A type on a path exists
    // though no walk counted it (the only walk came before it was made): one at least.
    let step_of = |node: &crate::holders::PathNode, content: bool, suspect: bool| {
        let ids = types.get(node.type_name.as_str());
        let (first, last) = (
            objects_at(model, ids, w.start),
            objects_at(model, ids, w.end),
        );
        Step {
            type_name: node.type_name.clone(),
            field: node.field.clone(),
            objects: last.max(1),
            growth: if last == 0 {
                0
            } else {
                crate::units::growth(first, last)
            },
            content,
            suspect,
            size: node.length.max(if node.chain > 1 { node.chain } else { 0 }),
        }
    };
    let names: Vec<&str> = growers
        .iter()
        .take(MAX_SUSPECTS * 4)
        .map(|(n, _)| n.as_str())
        .collect();
    let since = |name: &str| -> (i64, u64) {
        let then = objects_at(model, types.get(name), at);
        let now = objects_at(model, types.get(name), w.end);
        (now as i64 - then as i64, then)
    };
    // The growth's own objects: samples taken in the window's second half (a steady rise
    // has them, a one-off jump at its start does not), where each type has enough of them.
    let mut paths = paths.clone();
    let start_ms = frames[w.start].time_ms;
    let mid_ms = start_ms + end_ms.saturating_sub(start_ms) / 2;
    paths.weigh_growth_from(
        &names,
        start_ms.div_ceil(1000) as u32,
        (mid_ms / 1000) as u32,
    );
    let paths = &paths;
    let mut out: Vec<Suspect> = Vec::new();
    let mut explained: HashSet<String> = HashSet::new();
    for h in paths.leaks(&names) {
        let name = h.types[0].as_str();
        explained.extend(h.types.iter().cloned());
        let shares = paths.type_shares(&h);
        let holds: Vec<Held> = h
            .types
            .iter()
            .zip(&shares)
            .map(|(t, &share)| held(model, types, t, share))
            .collect();
        // What the numbers back of the whole leak (each type's backed rise, its share), not of
        // its first type alone: a leak of a dozen small types each within its estimate's error
        // is still a leak's worth together.
        let leak_backed: f64 = h
            .types
            .iter()
            .zip(&shares)
            .map(|(t, &share)| backed(t, w.end) * share)
            .sum();
        let trend = trends[name];
        let backed_growth = backed(name, w.end);
        let (growth_since, then) = since(name);
        let holder = &paths.nodes[h.holder];
        let top = &paths.nodes[h.chain[0]];
        let (root, root_kind) = top
            .root
            .as_ref()
            .map_or((String::new(), None), |r| (r.name.clone(), Some(r.kind)));
        let content = |node: &crate::holders::PathNode,
                       parent: Option<&crate::holders::PathNode>| {
            is_internal(&node.type_name)
                || (node.type_name.ends_with("[]")
                    && parent.is_some_and(|p| p.type_name.starts_with("java.util.")))
        };
        let mut steps: Vec<Step> = h
            .chain
            .iter()
            .map(|&n| step_of(&paths.nodes[n], false, false))
            .collect();
        if let Some(first) = steps.first_mut() {
            first.field.clear();
        }
        for (i, &n) in h.below.iter().enumerate() {
            let node = &paths.nodes[n];
            let parent = node.parent.map(|p| &paths.nodes[p]);
            steps.push(step_of(node, content(node, parent), i == 0));
        }
        let suspect_reference = h.below.first().map_or(String::new(), |&n| {
            let node = &paths.nodes[n];
            format!("{}.{} -> {}", holder.type_name, node.field, node.type_name)
        });
        let holder_in = match holder.parent {
            Some(p) => format!("{}.{}", paths.nodes[p].type_name, holder.field),
            None => root.clone(),
        };
        // What names the leak and stays the same across runs: the root, the holder's type and
        // where it sits (not which of its insides a run's samples happened to pass), with a
        // thread named by its family (a Jetty acceptor's name carries its port and a hash; a
        // pool's holding thread varies).
        let signature = format!(
            "{} | {} | {}",
            stable_root(&root),
            holder.type_name,
            stable_root(&holder_in)
        );
        // Stale: more of the type appeared since the paths were found than existed then, so
        // the holder is not known to hold the new objects.
        let stale = growth_since > (then as i64).max(floor as i64);
        let mut confidence = h.confidence;
        if stale && confidence == Confidence::Exact {
            confidence = Confidence::Likely;
        }
        let split = if h.alternatives.is_empty() {
            String::new()
        } else {
            crate::holders::describe_split(&root, h.share, &h.alternatives)
        };
        // Roots that hold an object on the chain to the holder themselves, the holder's own
        // root and its pool's other threads aside.
        let mut also_reached_from: Vec<String> = Vec::new();
        let chain: Vec<&crate::holders::PathNode> =
            h.chain.iter().map(|&n| &paths.nodes[n]).collect();
        // A focused search went through the roots that held the last finds alone: what other
        // roots hold on the same chain, the last full search says.
        let full = paths
            .focused
            .then(|| model.full_paths_at(at))
            .flatten()
            .map(|full| crate::holders::same_chain(full, &chain))
            .unwrap_or_default();
        for node in chain.iter().copied().chain(full) {
            for other in &node.also {
                if other.name != root
                    && !h.co_holders.contains(&other.name)
                    && !also_reached_from.contains(&other.name)
                {
                    also_reached_from.push(other.name.clone());
                }
            }
        }
        out.push(Suspect {
            also_reached_from,
            root_kind,
            root,
            steps,
            holder: holder.type_name.clone(),
            suspect_reference,
            leaking: h.types.clone(),
            growth: trend.growth.round() as i64,
            backed_growth: backed_growth.round() as i64,
            confirmed: (backed_growth >= floor || leak_backed >= floor) && !stale,
            confidence,
            co_holders: h.co_holders.clone(),
            signature,
            walk_seq: frames[at].seq,
            walk_age_ms: end_ms.saturating_sub(paths.finished_ms),
            sites: top_sites(model, name, w.end, 3),
            evidence: Some(Evidence {
                samples: h.samples,
                through_holder: h.holder_samples,
                share: h.share,
                split,
                witnessed_ms: paths.finished_ms,
                age_ms: end_ms.saturating_sub(paths.finished_ms),
                growth_since,
                stale,
                counted: h.counted,
                counted_through: h.counted_through,
                holder_identity: holder.identity,
                holder_in,
            }),
            holds,
        });
    }
    // A leak of one sampled path names no holder of its own (one path cannot show where
    // paths part), and its confidence is a guess: a trace that passes through its type with
    // enough paths of its own explains it (a server's sessions, met once, below the session
    // cache that 40 paths of their maps and data name).
    let mut i = 0;
    while i < out.len() {
        let thin = out[i]
            .evidence
            .as_ref()
            .is_some_and(|e| e.through_holder < crate::holders::SHARED_BY);
        let explains = thin
            .then(|| trace_through(&out, &out[i].leaking[0], crate::holders::MIN_SAMPLES))
            .flatten();
        match explains {
            Some(j) => {
                let weak = out.remove(i);
                let known = &mut out[if j > i { j - 1 } else { j }];
                for (t, h) in weak.leaking.into_iter().zip(weak.holds) {
                    absorb(known, t, h);
                }
            }
            None => i += 1,
        }
    }
    // Growing types no sampled path reached: a trace that passes through one explains it
    // (a leak's strings may be sampled too rarely to weigh); else say so, not guess.
    for &name in &names {
        if explained.contains(name) {
            continue;
        }
        if let Some(j) = trace_through(&out, name, 0) {
            absorb(&mut out[j], name.to_string(), held(model, types, name, 1.0));
            continue;
        }
        if out.len() >= MAX_SUSPECTS {
            continue;
        }
        // Every sampled object of the type that a complete search looked for, unreached:
        // garbage awaiting a marking, whatever the estimates say, and no suspect (its row in
        // the growth table says so).
        if model.all_unreachable_at(at, name).is_some() {
            continue;
        }
        let (growth_since, _) = since(name);
        let backed_now = backed(name, w.end);
        out.push(Suspect {
            also_reached_from: Vec::new(),
            root_kind: None,
            root: String::new(),
            steps: Vec::new(),
            holder: String::new(),
            suspect_reference: String::new(),
            leaking: vec![name.to_string()],
            growth: trends[name].growth.round() as i64,
            backed_growth: backed_now.round() as i64,
            // A rise beyond the estimates' doubt is a leak whose holder is not seen yet;
            // within it, one that may be garbage (`Suspect::is_backed`).
            confirmed: backed_now >= floor,
            confidence: Confidence::Ambiguous,
            co_holders: Vec::new(),
            signature: format!("(not seen) | {name}"),
            walk_seq: frames[at].seq,
            walk_age_ms: end_ms.saturating_sub(paths.finished_ms),
            sites: top_sites(model, name, w.end, 3),
            evidence: Some(Evidence {
                witnessed_ms: paths.finished_ms,
                age_ms: end_ms.saturating_sub(paths.finished_ms),
                growth_since,
                stale: true,
                ..Default::default()
            }),
            holds: vec![held(model, types, name, 1.0)],
        });
    }
    out.retain(|s| {
        let trend = trends[s.leaking[0].as_str()];
        worth_naming(s, trend) && beyond_garbage(s, trend)
    });
    out.truncate(MAX_SUSPECTS);
    // Named holders first, then the confirmed; within each part, leaks by what they surely
    // keep alive (bytes, then objects), not by their first type's growth.
    for s in &mut out {
        sort_held(&mut s.holds);
    }
    out.sort_by_cached_key(|s| {
        let (objects, bytes) = s.surely_held();
        (
            !s.is_backed(),
            s.holder.is_empty(),
            !s.confirmed,
            std::cmp::Reverse(bytes),
            std::cmp::Reverse(objects),
        )
    });
    out
}

/// The first suspect whose holder is named, with at least `paths` sampled paths through it, and
/// whose trace passes through `type_name`: that trace explains the type's growth too.
fn trace_through(out: &[Suspect], type_name: &str, paths: u64) -> Option<usize> {
    out.iter().position(|s| {
        !s.holder.is_empty()
            && s.evidence.as_ref().map_or(0, |e| e.through_holder) >= paths
            && s.steps.iter().any(|step| step.type_name == type_name)
    })
}

/// Adds a type's growth to a suspect that explains it (once).
fn absorb(known: &mut Suspect, type_name: String, held: Held) {
    if !known.leaking.contains(&type_name) {
        known.leaking.push(type_name);
        known.holds.push(held);
    }
}

fn top_sites(model: &CityModel, type_name: &str, index: usize, n: usize) -> Vec<(String, u64)> {
    let types: Vec<u32> = (0..model.nodes().len() as u32)
        .filter(|&id| {
            let node = model.node(id);
            node.role == Role::Type && node.name == type_name
        })
        .collect();
    model.top_sites(&types, index, Metric::Objects, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::holders::{PathNode, Paths};
    use crate::model::{root_kind_label, DeadRise, RootKind, RootRef};

    /// Three snapshots of types `(name, objects)` a second apart.
    fn session(types: &[(&str, [u64; 3])]) -> CityModel {
        snapshots_of(types, &[0, 1, 2])
    }

    /// A holder named for a rise just beyond its doubt, by paths older than most of the rise
    /// (not confirmed), is named only if the rise goes on; confirmed, or going on, it is.
    #[test]
    fn an_unconfirmed_holder_of_a_rise_that_does_not_go_on_is_not_named() {
        let levelled: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, if i < 2 { 1000.0 * i as f64 } else { 2000.0 }))
            .collect();
        let rising: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, 100.0 + 50.0 * i as f64))
            .collect();
        let (levelled, rising) = (Trend::fit(&levelled).unwrap(), Trend::fit(&rising).unwrap());
        assert!(levelled.steady() == 0.0 && rising.steady() > 0.0);
        let held = crate::leak::Held {
            type_name: "java.lang.String".into(),
            objects: 187_158,
            bytes: 187_158 * 32,
            objects_error: 138_880,
            bytes_error: 138_880 * 32,
            ..Default::default()
        };
        let catalog = Suspect {
            holder: "java.util.concurrent.ConcurrentHashMap".into(),
            holds: vec![held],
            ..Suspect::default()
        };
        assert!(
            catalog.is_backed(),
            "the premise: its holder holds some beyond the doubt"
        );
        assert!(!worth_naming(&catalog, &levelled));
        assert!(worth_naming(&catalog, &rising));
        let confirmed = Suspect {
            confirmed: true,
            ..catalog
        };
        assert!(worth_naming(&confirmed, &levelled));
    }

    /// Where paths judge, a rise no holder backs that goes on, but within what may be garbage
    /// (its estimates' unconfirmed part), is not named; beyond it, it is (rising, not yet
    /// explained).
    #[test]
    fn a_rise_resting_only_on_unconfirmed_mass_is_not_named() {
        let xy: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 1000.0 * i as f64)).collect();
        let garbage = Trend {
            error: 1_000.0,
            unconfirmed: 8_500.0,
            ..Trend::fit(&xy).unwrap()
        };
        assert!(garbage.within_doubt(true) && !garbage.within_doubt(false));
        let unseen = Suspect::default();
        assert!(!unseen.is_backed(), "the premise: nothing backs it");
        assert!(worth_naming(&unseen, &garbage) && !beyond_garbage(&unseen, &garbage));
        let live = Trend {
            unconfirmed: 2_000.0,
            ..garbage
        };
        assert!(beyond_garbage(&unseen, &live));
    }

    /// The snapshots `at` of types `(name, objects at 0, 1, 2)`, at their seconds.
    fn snapshots_of(types: &[(&str, [u64; 3])], at: &[usize]) -> CityModel {
        let mut m = CityModel::new();
        for &i in at {
            let rows: Vec<(Vec<String>, String, u64, u64)> = types
                .iter()
                .map(|(name, counts)| {
                    (
                        vec!["p".into(), name.to_string()],
                        "Type".into(),
                        counts[i],
                        counts[i] * 16,
                    )
                })
                .collect();
            let total: u64 = types.iter().map(|t| t.1[i]).sum();
            m.push_tree(i as u64 * 1000, (total, total * 16), &rows, Vec::new());
        }
        m
    }

    const MAP_LEAK_TYPES: &[(&str, [u64; 3])] = &[
        ("Item", [110, 10_010, 20_010]),
        ("java.util.HashMap$Node", [105, 10_005, 20_005]),
        ("java.util.HashMap$Node[]", [3, 3, 3]),
        ("java.util.HashMap", [3, 3, 3]),
    ];

    fn node(parent: Option<usize>, type_name: &str, field: &str, root: Option<&str>) -> PathNode {
        PathNode {
            parent,
            type_name: type_name.into(),
            field: field.into(),
            root: root.map(|r| RootRef {
                kind: RootKind::StaticField,
                name: r.into(),
                thread: String::new(),
            }),
            chain: 1,
            length: 0,
            identity: 7,
            targets: Vec::new(),
            reached: Vec::new(),
            also: Vec::new(),
        }
    }

    /// Paths of 40 sampled `Item`s in a map under `static App.CACHE`, beside a JDK map under
    /// `static java.util.Registry.MAPS` with 2.
    fn map_paths() -> Paths {
        let mut nodes = vec![
            node(None, "java.util.HashMap", "", Some("static App.CACHE")),
            node(Some(0), "java.util.HashMap$Node[]", "table", None),
        ];
        for i in 0..40 {
            nodes.push(node(Some(1), "java.util.HashMap$Node", "[]", None));
            let mut item = node(Some(nodes.len() - 1), "Item", "value", None);
            item.targets = vec![("Item".into(), 1, 10.0, 2)];
            item.identity = i;
            nodes.push(item);
        }
        nodes.push(node(
            None,
            "java.util.HashMap",
            "",
            Some("static java.util.Registry.MAPS"),
        ));
        let at = nodes.len() - 1;
        let mut item = node(Some(at), "Item", "value", None);
        item.targets = vec![("Item".into(), 2, 20.0, 2)];
        nodes.push(item);
        Paths::new(nodes)
    }

    /// A type only walks counted (no sample landed in it): a walk while a pool filled and one
    /// once it was full are no leak however they differ; a third point that goes on rising is.
    /// JFR's metadata maps, which no sample landed in, found by the first walk after JFR
    /// started: a step, then an estimate a moment later that rose within its error. No rise
    /// goes on (the series of a steady Jetty run's `HashMap$Node`).
    #[test]
    fn a_step_at_a_walk_then_nothing_beyond_doubt_goes_on() {
        let point = |seconds: f64, value: f64, error: f64, unconfirmed: f64, exact: bool| Point {
            seconds,
            value,
            error,
            unconfirmed,
            exact,
        };
        let points = [
            point(0.1, 995.0, 0.0, 0.0, true),
            point(13.8, 1_258.0, 1_454.0, 263.0, false),
            point(20.3, 5_152.0, 0.0, 0.0, true),
            point(20.6, 5_207.0, 656.0, 55.0, false),
        ];
        let trend = Trend::of_points(&points).unwrap();
        assert_eq!(trend.recent, 0.0, "{trend:?}");
        assert!(!trend.is_leak(100.0));
        // The same, but rising past its doubt after the walk: that goes on.
        let mut rising = points;
        rising[3].value = 7_000.0;
        let trend = Trend::of_points(&rising).unwrap();
        assert!(trend.recent > 0.0, "{trend:?}");
    }

    /// Within one recording two snapshots could be a pool that filled; two recordings compared
    /// are the user's two points, and what rose between them beyond its doubt is the answer.
    #[test]
    fn a_rise_between_two_compared_recordings_is_a_suspect() {
        let m = session(MAP_LEAK_TYPES);
        let two = CityModel::comparison(&m, 0, &m, 2).unwrap();
        assert!(two.is_comparison() && !m.is_comparison());
        let named: Vec<String> = suspects(&two).into_iter().flat_map(|s| s.leaking).collect();
        assert!(named.contains(&"Item".to_string()), "{named:?}");
        // The same two points within one recording name nothing.
        let pair = snapshots_of(MAP_LEAK_TYPES, &[0, 2]);
        assert!(suspects(&pair).is_empty());
        // A fall between them is none.
        let back = CityModel::comparison(&m, 2, &m, 0).unwrap();
        assert!(suspects(&back).is_empty());
    }

    #[test]
    fn two_points_are_no_leak() {
        let walk = |seconds: f64, value: f64| Point {
            seconds,
            value,
            exact: true,
            ..Point::default()
        };
        let two = Trend::of_points(&[walk(0.0, 1_500.0), walk(19.0, 1_960.0)]).unwrap();
        assert_eq!(two.points, 2);
        assert!(!two.is_leak(100.0), "{two:?}");
        let three =
            Trend::of_points(&[walk(0.0, 1_500.0), walk(10.0, 1_730.0), walk(19.0, 1_960.0)])
                .unwrap();
        assert!(three.is_leak(100.0), "{three:?}");
    }

    /// A session of 5,000 snapshots (hours, recorded): its trends read at most
    /// `MAX_TREND_POINTS` of them, the window's two ends among them, and come out as the
    /// line says; every row at once is every row alone.
    #[test]
    fn a_long_window_is_thinned_to_a_bounded_trend_that_says_the_same() {
        let mut m = CityModel::new();
        for i in 0..5_000u64 {
            let nodes = [
                (
                    vec!["p".to_string()],
                    "Package".to_string(),
                    600 + 10 * i,
                    0,
                ),
                (
                    vec!["p".into(), "Leak".into()],
                    "Type".into(),
                    100 + 10 * i,
                    0,
                ),
                (vec!["p".into(), "Steady".into()], "Type".into(), 500, 0),
            ];
            m.push_tree(i * 1000, (600 + 10 * i, 0), &nodes, vec![]);
        }
        let w = m.window();
        let at = trend_snapshots(&m);
        assert!(at.len() <= MAX_TREND_POINTS + 2, "{}", at.len());
        assert_eq!((at[0], *at.last().unwrap()), (w.start, w.end));
        assert!(at.windows(2).all(|p| p[0] < p[1]));
        let leak = m.find(&["p", "Leak"]).unwrap();
        let steady = m.find(&["p", "Steady"]).unwrap();
        let trends = trends_of_rows(&m, &[&[leak][..], &[steady][..], &[]], Metric::Objects);
        assert_eq!(trends[0], trend_of(&m, &[leak], Metric::Objects));
        assert_eq!(trends[1], trend_of(&m, &[steady], Metric::Objects));
        let rise = trends[0].unwrap();
        let whole = 10.0 * (w.end - w.start) as f64;
        assert!((rise.growth - whole).abs() < 1e-6 * whole, "{rise:?}");
        assert!(rise.recent > 0.0 && rise.fit > 0.99, "{rise:?}");
        assert_eq!(trends[1].unwrap().growth, 0.0);
        assert_eq!(trends[2], trend_of(&m, &[], Metric::Objects));
    }

    #[test]
    fn more_threads_say_which_kind_of_thread_holds_alike() {
        let platform = "local in App.run(App.java:12) of thread \"pool-3-thread-7\"";
        let virtual_ = "local in Events.run(Events.java:40) of virtual thread \"events-17\"";
        assert_eq!(more_threads(platform, 0), "");
        assert_eq!(more_threads(platform, 1), " and 1 more thread");
        assert_eq!(more_threads(platform, 5), " and 5 more threads");
        assert_eq!(more_threads(virtual_, 1), " and 1 more virtual thread");
        assert_eq!(more_threads(virtual_, 199), " and 199 more virtual threads");
        // One family, as a pool's: the numbers go.
        assert_eq!(
            stable_root(virtual_),
            "local in Events.run(Events.java:40) of virtual thread \"events-#\""
        );
    }

    /// A pool filled and purged in turn, counted at whatever phase: its later half's line may
    /// rise by chance, but within its own scatter, so nothing continues; a leak's points hug
    /// their line and its rise stands.
    #[test]
    fn a_sawtooth_continues_nothing_and_a_leak_continues() {
        // Seven walks of a pool that fills by 100 a second and is purged every 5 s (as
        // Commons HttpClient's idle connections are in HttpClientChurn), the last at a peak.
        let saw: Vec<(f64, f64)> = [0.9, 4.0, 6.5, 9.7, 13.0, 16.2, 19.4]
            .iter()
            .map(|&t: &f64| (t, 100.0 * (t % 5.0)))
            .collect();
        let t = Trend::fit(&saw).unwrap();
        assert!(t.recent > 0.0, "a chance rise: {t:?}");
        assert_eq!(t.steady(), 0.0, "{t:?}");
        // A leak of 20 a second with a little noise.
        let leak: Vec<(f64, f64)> = (0..20)
            .map(|i| {
                (
                    i as f64,
                    20.0 * i as f64 + if i % 2 == 0 { 3.0 } else { -3.0 },
                )
            })
            .collect();
        let t = Trend::fit(&leak).unwrap();
        assert!(t.steady() > 0.9 * t.growth, "{t:?}");
    }

    #[test]
    fn a_steady_rise_is_a_trend_and_a_ramp_then_flat_is_not() {
        let rise: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, 100.0 + 50.0 * i as f64))
            .collect();
        let t = Trend::fit(&rise).unwrap();
        assert!((t.growth - 450.0).abs() < 1e-6 && t.fit > 0.99);
        assert!(t.is_leak(100.0));
        let flat: Vec<(f64, f64)> = (0..10)
            .map(|i| (i as f64, if i % 2 == 0 { 1000.0 } else { 1010.0 }))
            .collect();
        assert!(!Trend::fit(&flat).unwrap().is_leak(100.0));
        assert!(Trend::fit(&rise[..1]).is_none());
        // A rise to the heap's ceiling, then a plateau while the collector thrashes: a poor
        // line, but what filled the heap.
        let filled: Vec<(f64, f64)> = (0..12)
            .map(|i| (i as f64, if i < 4 { 1000.0 * i as f64 } else { 3000.0 }))
            .collect();
        let t = Trend::fit(&filled).unwrap();
        assert!(t.filled_the_heap(1000.0) && !t.is_leak(1000.0), "{t:?}");
        assert!(!Trend::fit(&flat).unwrap().filled_the_heap(100.0));
    }

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
    fn estimates_that_only_carry_a_walk_are_left_out_of_trends() {
        use memcity_proto::v1::{exactness, Exactness};
        // Small objects no sample landed in: the estimates say 0 (no error, nothing unconfirmed),
        // then a walk finds the 1,500 made at start-up. No trend rests on that one step.
        let types: &[(&str, [u64; 3])] = &[("Small", [0, 0, 1_500])];
        let mut m = session(types);
        let id = m.find(&["p", "Small"]).unwrap();
        let walked = trend_of(&m, &[id], Metric::Objects).expect("walks: a trend");
        assert!(walked.growth > 0.0, "{walked:?}");
        for i in 0..2 {
            m.frames_mut_for_tests(i).exactness = Some(Exactness {
                source: exactness::Source::Estimate as i32,
                ..Default::default()
            });
        }
        assert!(carried(&m, &[id], 0) && !carried(&m, &[id], 2));
        assert_eq!(trend_of(&m, &[id], Metric::Objects), None);
        let nodes = type_nodes(&m);
        assert!(trends_of(&m, &nodes).is_empty());
        // An estimate with an error of its own is evidence, and stays in.
        m.set_error_for_tests(1, id, 300);
        assert!(!carried(&m, &[id], 1));
        assert!(trend_of(&m, &[id], Metric::Objects).is_some());
    }

    /// A server's sessions, each holding an item, in its session cache, and its audit log
    /// beside it: 40 sampled paths to the items name the cache, 15 to the log's entries name
    /// the log, and the sessions' own one sampled path, met by another of the server's fields,
    /// names the server itself (one path cannot show where paths part). The items' trace
    /// passes through the sessions and explains them: two suspects, not three.
    #[test]
    fn a_leak_of_one_sampled_path_is_explained_by_a_trace_through_its_type() {
        let mut m = session(&[
            ("Item", [110, 10_010, 20_010]),
            ("Session", [110, 10_010, 20_010]),
            ("Entry", [110, 10_010, 20_010]),
            ("java.util.HashMap$Node", [105, 10_005, 20_005]),
            ("java.util.HashMap$Node[]", [3, 3, 3]),
            ("java.util.HashMap", [3, 3, 3]),
        ]);
        let mut nodes = vec![
            node(None, "App$Server", "", Some("static App.SERVER")),
            node(Some(0), "java.util.HashMap", "sessions", None),
            node(Some(1), "java.util.HashMap$Node[]", "table", None),
        ];
        for i in 0..40 {
            nodes.push(node(Some(2), "java.util.HashMap$Node", "[]", None));
            let mut session = node(Some(nodes.len() - 1), "Session", "value", None);
            session.identity = 2 * i;
            nodes.push(session);
            let mut item = node(Some(nodes.len() - 1), "Item", "item", None);
            item.targets = vec![("Item".into(), 1, 10.0, 2)];
            item.identity = 2 * i + 1;
            nodes.push(item);
        }
        nodes.push(node(Some(0), "App$Log", "log", None));
        let log = nodes.len() - 1;
        for i in 0..15 {
            let mut entry = node(Some(log), "Entry", "[]", None);
            entry.targets = vec![("Entry".into(), 1, 10.0, 2)];
            entry.identity = 100 + i;
            nodes.push(entry);
        }
        let mut session = node(Some(0), "Session", "current", None);
        session.targets = vec![("Session".into(), 1, 10.0, 2)];
        session.identity = 200;
        nodes.push(session);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(Paths::new(nodes)));
        let s = suspects(&m);
        let named: Vec<(&str, &[String])> = s
            .iter()
            .map(|s| (s.holder.as_str(), s.leaking.as_slice()))
            .collect();
        assert_eq!(s.len(), 2, "{named:?}");
        let cache = s
            .iter()
            .find(|s| s.leaking[0] == "Item")
            .expect("the items' leak");
        assert_eq!(cache.holder, "java.util.HashMap", "{named:?}");
        assert!(
            cache.leaking.contains(&"Session".to_string())
                && cache.holds.iter().any(|h| h.type_name == "Session"),
            "{named:?}"
        );
    }

    /// A steady Jetty run's session attribute tables (`ConcurrentHashMap$Node[]`, 80 bytes
    /// each, so few samples): the sessions filled in the first 5 s and stood at 1,500 after,
    /// but the estimates lagged the fill within their errors until a walk near the end found
    /// it whole. A line through the later half rises; the errors leave that rise in doubt, so
    /// the table ranks it near nothing. A leak's estimates, as wide, still rank.
    #[test]
    fn a_rise_the_later_half_errors_leave_in_doubt_ranks_near_nothing() {
        let point = |seconds: f64, value: f64, error: f64, unconfirmed: f64| Point {
            seconds,
            value,
            error,
            unconfirmed,
            exact: error == 0.0 && unconfirmed == 0.0,
        };
        let lagging = [
            point(0.6, 12.0, 0.0, 1.0),
            point(1.2, 35.0, 90.0, 24.0),
            point(1.7, 68.0, 108.0, 57.0),
            point(2.2, 68.0, 108.0, 57.0),
            point(5.2, 409.0, 807.0, 397.0),
            point(5.9, 70.0, 108.0, 58.0),
            point(8.1, 70.0, 108.0, 58.0),
            point(9.4, 173.0, 555.0, 158.0),
            point(12.0, 480.0, 810.0, 466.0),
            point(19.3, 1_501.0, 0.0, 0.0),
            point(21.1, 1_795.0, 776.0, 294.0),
        ];
        let t = Trend::of_points(&lagging).unwrap();
        assert!(
            t.recent - t.recent_spread > 1_000.0,
            "the premise: beyond its scatter alone it goes on: {t:?}"
        );
        assert!(t.steady() < 400.0, "{t:?}");
        // The same errors on a rise that goes on at every point, a leak's worth beyond them.
        let rising: Vec<Point> = lagging
            .iter()
            .map(|p| Point {
                value: 500.0 * p.seconds,
                ..*p
            })
            .collect();
        let t = Trend::of_points(&rising).unwrap();
        assert!(t.steady() > 0.5 * t.growth, "{t:?}");
    }

    #[test]
    fn estimates_climbing_past_a_walk_are_no_rise_that_goes_on() {
        let point = |seconds, value, error: f64| Point {
            seconds,
            value,
            error,
            unconfirmed: 0.0,
            exact: error == 0.0,
        };
        // A small type's sessions, filled in the first seconds: the estimates climb past the
        // truth within their errors, and the walk at the end finds the plateau.
        let climbing = [
            point(0.5, 12.0, 0.0),
            point(1.1, 12.0, 0.0),
            point(5.4, 189.0, 680.0),
            point(11.4, 1242.0, 1391.0),
            point(16.8, 2925.0, 2531.0),
            point(18.2, 1455.0, 0.0),
        ];
        let t = Trend::of_points(&climbing).unwrap();
        assert!(
            t.growth > 1000.0,
            "the premise: a line through them rises: {t:?}"
        );
        assert!(t.recent <= 0.0 && t.steady() == 0.0, "{t:?}");
        assert!(!t.is_leak(100.0), "{t:?}");
        // A leak's estimates, each well within its error of a steady rise, still rise.
        let rising: Vec<Point> = (0..10)
            .map(|i| point(i as f64 * 2.0, 10_000.0 + 5_000.0 * i as f64, 800.0))
            .collect();
        let t = Trend::of_points(&rising).unwrap();
        assert!(t.is_leak(100.0) && t.steady() > 0.8 * t.growth, "{t:?}");
        // A big structure estimated low before a walk found it whole, and flat for the quarter
        // of the window since: no rise that goes on; a leak's estimates after its walk go on
        // rising.
        let mut stepped: Vec<Point> = (0..6)
            .map(|i| {
                point(
                    0.6 + 2.0 * i as f64,
                    82_000.0 + 1_000.0 * i as f64,
                    72_000.0,
                )
            })
            .collect();
        stepped.push(point(13.0, 210_823.0, 0.0));
        for (i, seconds) in [15.0, 17.5, 20.6].into_iter().enumerate() {
            stepped.push(Point {
                unconfirmed: 500.0,
                ..point(seconds, 210_823.0 + 300.0 * i as f64, 2_241.0)
            });
        }
        let t = Trend::of_points(&stepped).unwrap();
        assert!(t.growth > 50_000.0, "the premise: {t:?}");
        assert!(!t.is_leak(100.0), "{t:?}");
        let leak: Vec<Point> = stepped
            .iter()
            .map(|p| match p.seconds > 13.0 {
                true => Point {
                    value: 210_823.0 + 8_000.0 * (p.seconds - 13.0),
                    ..*p
                },
                false => *p,
            })
            .collect();
        let t = Trend::of_points(&leak).unwrap();
        assert!(t.is_leak(100.0), "{t:?}");
        // A leak that idles its last seconds after a walk (an application about to exit) is
        // still judged by its rise before.
        let idle: Vec<Point> = (0..10)
            .map(|i| point(1.5 * i as f64, 20_000.0 * i as f64, 4_000.0))
            .chain([point(14.0, 180_000.0, 0.0), point(15.0, 180_000.0, 4_000.0)])
            .collect();
        let t = Trend::of_points(&idle).unwrap();
        assert!(t.is_leak(100.0), "{t:?}");
        // Objects no sample landed in (JFR's metadata, made as memcity's stream started): the
        // estimates stay near 1,000 within their errors and the next walk finds 5,000, past
        // what they stated. A step, not a rise; the same walk after estimates that rose to it
        // within their errors is one.
        let mut missed: Vec<Point> = (0..8)
            .map(|i| point(0.5 + 2.4 * i as f64, 1_000.0 + 20.0 * i as f64, 850.0))
            .collect();
        missed.push(point(19.8, 5_151.0, 0.0));
        let t = Trend::of_points(&missed).unwrap();
        assert!(t.growth > 1_000.0 && !t.is_leak(100.0), "{t:?}");
        let rose: Vec<Point> = (0..8)
            .map(|i| point(0.5 + 2.4 * i as f64, 1_000.0 + 550.0 * i as f64, 850.0))
            .chain([point(19.8, 5_151.0, 0.0)])
            .collect();
        let t = Trend::of_points(&rose).unwrap();
        assert!(t.is_leak(100.0), "{t:?}");
    }

    #[test]
    fn a_ramp_then_a_plateau_is_not_a_leak() {
        let ramp: Vec<(f64, f64)> = (0..12)
            .map(|i| {
                let x = 0.7 + i as f64;
                (
                    x,
                    1800.0 * (x / 5.0).min(1.0) + if i % 2 == 0 { 10.0 } else { -10.0 },
                )
            })
            .collect();
        let t = Trend::fit(&ramp).unwrap();
        assert!(t.fit >= MIN_FIT && t.growth >= 1000.0, "the premise: {t:?}");
        assert!(!t.is_leak(100.0), "{t:?}");
        assert!(t.steady() < 0.05 * t.growth * t.fit, "{t:?}");
        // A steady rise: its later half rises as the whole.
        let rise: Vec<(f64, f64)> = (0..15).map(|i| (i as f64, 100.0 * i as f64)).collect();
        let t = Trend::fit(&rise).unwrap();
        assert!(
            (t.recent - t.growth).abs() < 1e-6 && t.is_leak(100.0),
            "{t:?}"
        );
        assert!((t.steady() - t.growth).abs() < 1e-6);
        // Flat, then a steady rise from the middle on: a leak, ranked by its whole rise.
        let late: Vec<(f64, f64)> = (0..16)
            .map(|i| (i as f64, 1000.0 + 200.0 * (i as f64 - 6.0).max(0.0)))
            .collect();
        let t = Trend::fit(&late).unwrap();
        assert!(t.is_leak(100.0) && t.recent > t.growth, "{t:?}");
        assert!((t.steady() - t.growth * t.fit).abs() < 1e-6);
        // Three snapshots (or a comparison of two): too few to judge the later half apart.
        let three = [(0.0, 0.0), (1.0, 500.0), (2.0, 1000.0)];
        let t = Trend::fit(&three).unwrap();
        assert_eq!(t.recent, t.growth);
    }

    #[test]
    fn other_roots_holding_the_holder_are_named_apart_from_its_lasting_root() {
        let mut m = session(MAP_LEAK_TYPES);
        let mut paths = map_paths();
        // The request loop's frame holds the cached map in a local too: the search came to it
        // from the static first, and noted the frame on the map's node.
        let local = RootRef {
            kind: RootKind::StackLocal,
            name: "local in App.serve(App.java:40) of thread \"main\"".into(),
            thread: "main".into(),
        };
        paths.nodes[0].also = vec![local.clone()];
        // A root on a branch the suspect does not take is none of its.
        paths.nodes[2].also = vec![RootRef {
            name: "JNI global".into(),
            kind: RootKind::JniGlobal,
            thread: String::new(),
        }];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths));
        let s = suspects(&m);
        assert_eq!(s[0].root, "static App.CACHE");
        assert_eq!(s[0].confidence, Confidence::Exact);
        assert_eq!(s[0].also_reached_from, [local.name]);
    }

    #[test]
    fn a_focused_search_keeps_the_other_roots_the_last_full_one_saw() {
        let mut m = session(MAP_LEAK_TYPES);
        let local = RootRef {
            kind: RootKind::StackLocal,
            name: "local in App.serve(App.java:40) of thread \"main\"".into(),
            thread: "main".into(),
        };
        let mut full = map_paths();
        full.nodes[0].also = vec![local.clone()];
        m.frames_mut_for_tests(1).paths = Some(std::sync::Arc::new(full));
        // The focused search went through the static alone: it saw no frame.
        let mut focused = map_paths();
        focused.focused = true;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused.clone()));
        let s = suspects(&m);
        assert_eq!(s[0].root, "static App.CACHE");
        assert_eq!(s[0].also_reached_from, [local.name]);
        // A full search that saw no other root says so: nothing older is carried over.
        focused.focused = false;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused));
        assert!(suspects(&m)[0].also_reached_from.is_empty());
    }

    /// A type whose samples the last full search looked for and reached none of is dead in the
    /// old generation, through the focused searches after it (which leave roots unsearched and
    /// judge nothing dead) until one of them reaches one of its samples: alive, then.
    #[test]
    fn dead_in_the_old_generation_is_the_last_full_searchs_verdict() {
        let mut m = session(MAP_LEAK_TYPES);
        let mut full = map_paths();
        full.targeted = vec![("Garbage".into(), 9), ("Item".into(), 4)];
        full.unreached = vec![("Garbage".into(), 9)];
        m.frames_mut_for_tests(1).paths = Some(std::sync::Arc::new(full));
        let mut focused = map_paths();
        focused.focused = true;
        focused.stopped_early = true;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused.clone()));
        assert_eq!(m.all_unreachable_at(2, "Garbage"), Some((9, 9)));
        assert_eq!(m.all_unreachable_at(2, "Item"), None);
        assert_eq!(
            m.all_unreachable_at(0, "Garbage"),
            None,
            "before any search"
        );
        // A focused search that looked for one and missed it judges nothing.
        focused.targeted = vec![("Garbage".into(), 1)];
        focused.unreached = vec![("Garbage".into(), 1)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused.clone()));
        assert_eq!(m.all_unreachable_at(2, "Garbage"), Some((9, 9)));
        // One that reached one: alive.
        focused.unreached.clear();
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(focused));
        assert_eq!(m.all_unreachable_at(2, "Garbage"), None);
    }

    /// A few rows' trends, looked up node by node, are those of every row gathered at once,
    /// estimates' errors and unconfirmed parts included.
    #[test]
    fn a_few_rows_fit_as_all_rows_do() {
        let mut m = CityModel::new();
        for step in 0..40u64 {
            let rows: Vec<(Vec<String>, String, u64, u64)> = (0..30u64)
                .map(|t| {
                    let n = 1000 + t * step * (t % 3) + (step * 7 + t) % 11;
                    let package = format!("p{}", t % 3);
                    (
                        vec![package, format!("T{}", t % 20)],
                        "Type".into(),
                        n,
                        n * 24,
                    )
                })
                .collect();
            m.push_tree(step * 1000, (1, 1), &rows, Vec::new());
        }
        for (i, &(index, objects)) in [(5usize, 300u64), (17, 90), (33, 4000)].iter().enumerate() {
            let estimate = memcity_proto::v1::Exactness {
                source: memcity_proto::v1::exactness::Source::Estimate as i32,
                ..Default::default()
            };
            m.frames_mut_for_tests(index).exactness = Some(estimate);
            let node = m.find(&["p1", "T5"]).unwrap();
            if i % 2 == 0 {
                m.set_error_for_tests(index, node, objects);
            } else {
                m.set_unconfirmed_for_tests(index, node, objects);
            }
        }
        let types = type_nodes(&m);
        assert!(
            types.values().any(|ids| ids.len() > 1),
            "types under two packages"
        );
        let rows: Vec<&[u32]> = types.values().map(Vec::as_slice).collect();
        let at = trend_snapshots(&m);
        for metric in [Metric::Objects, Metric::Bytes] {
            assert_eq!(
                format!("{:?}", trends_of_few_rows(&m, &at, &rows, metric)),
                format!("{:?}", trends_of_rows(&m, &rows, metric)),
                "{metric:?}"
            );
        }
    }

    /// The page's suspects, a block of types per step, are the window's: with paths and
    /// without, one type a step or all at once.
    #[test]
    fn suspects_worked_out_in_steps_are_the_suspects() {
        let plain = session(MAP_LEAK_TYPES);
        let mut with_paths = session(MAP_LEAK_TYPES);
        with_paths.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        for m in [plain, with_paths] {
            let whole = format!("{:?}", suspects(&m));
            assert!(whole.contains("Node"), "the premise: {whole}");
            for cells in [1, 5, usize::MAX] {
                let mut steps = SuspectsInSteps::new(m.clone());
                let mut taken = 0;
                let found = loop {
                    taken += 1;
                    if let Some(found) = steps.step(cells) {
                        break found;
                    }
                };
                assert_eq!(format!("{found:?}"), whole, "{cells} cells a step");
                // A step a type in objects, one a rising type in bytes, and the suspects; or the
                // objects, the bytes and the suspects.
                let rising = byte_candidates(&m, &trends_of(&m, &type_nodes(&m))).len();
                assert!(rising > 0, "the premise");
                match cells {
                    1 => assert_eq!(taken, type_nodes(&m).len() + rising + 1),
                    usize::MAX => assert_eq!(taken, 3),
                    _ => {}
                }
            }
        }
    }

    #[test]
    fn the_holder_is_named_from_paths_with_its_evidence() {
        let mut m = session(MAP_LEAK_TYPES);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        let s = suspects(&m);
        assert_eq!(s.len(), 1, "{s:#?}");
        let s = &s[0];
        assert_eq!(s.root, "static App.CACHE");
        assert_eq!(s.root_kind.map(root_kind_label), Some("static field"));
        assert_eq!(s.holder, "java.util.HashMap");
        assert_eq!(
            s.suspect_reference,
            "java.util.HashMap.table -> java.util.HashMap$Node[]"
        );
        assert_eq!(s.confidence, Confidence::Exact);
        assert_eq!(
            s.leaking,
            ["Item", "java.util.HashMap$Node"],
            "the nodes are on the trace: explained by it"
        );
        assert_eq!(
            s.signature,
            "static App.CACHE | java.util.HashMap | static App.CACHE"
        );
        let e = s.evidence.as_ref().unwrap();
        assert_eq!((e.samples, e.through_holder), (42, 40));
        assert!(
            e.split.starts_with(
                "95 % through static App.CACHE, 5 % through static java.util.Registry.MAPS"
            ),
            "{}",
            e.split
        );
        assert!(s.steps[1].content && s.steps[1].suspect, "{:?}", s.steps);
        // The steps count as the group table does.
        assert_eq!(
            (s.steps[0].objects, s.steps[0].growth),
            (3, 0),
            "{:?}",
            s.steps
        );
    }

    /// The list that holds a leak, made after the session's only walk and never sampled: the
    /// model counts none of it, yet the path shows one; its step says one, not "0 objects".
    #[test]
    fn a_holder_no_walk_counted_is_one_object_on_its_trace() {
        let types: Vec<(&str, [u64; 3])> = MAP_LEAK_TYPES
            .iter()
            .map(|&(name, counts)| {
                if name == "java.util.HashMap" {
                    (name, [0, 0, 0])
                } else {
                    (name, counts)
                }
            })
            .collect();
        let mut m = session(&types);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        let s = suspects(&m);
        assert_eq!(s[0].holder, "java.util.HashMap");
        assert_eq!(s[0].steps[0].type_name, "java.util.HashMap");
        assert_eq!((s[0].steps[0].objects, s[0].steps[0].growth), (1, 0));
    }

    /// Two leaks: 20,000 small `Event`s into a list, and 5,000 `Session`s into a map, each
    /// dragging a 1 KiB `byte[]` along (a few `byte[]`s hang off events too).
    #[test]
    fn leaks_rank_by_what_their_holder_keeps_alive_not_by_their_first_type() {
        let mut m = CityModel::new();
        let types: [(&str, [u64; 3], u64); 7] = [
            ("Event", [0, 10_000, 20_000], 16),
            ("Session", [0, 2_500, 5_000], 32),
            ("byte[]", [0, 2_500, 5_000], 1024),
            ("java.util.ArrayList", [1, 1, 1], 24),
            ("java.lang.Object[]", [1, 1, 1], 80_000),
            ("java.util.HashMap", [1, 1, 1], 48),
            ("java.util.HashMap$Node", [0, 2_500, 5_000], 32),
        ];
        for i in 0..3 {
            let rows: Vec<(Vec<String>, String, u64, u64)> = types
                .iter()
                .map(|(name, counts, each)| {
                    (
                        vec!["p".into(), name.to_string()],
                        "Type".into(),
                        counts[i],
                        counts[i] * each,
                    )
                })
                .collect();
            let total = rows.iter().fold((0, 0), |t, r| (t.0 + r.2, t.1 + r.3));
            m.push_tree(i as u64 * 1000, total, &rows, Vec::new());
        }
        let target = |n: PathNode, t: &str, weight: f64| PathNode {
            targets: vec![(t.into(), 1, weight, 2)],
            ..n
        };
        // The list's events weigh most by samples (the old order, heaviest paths first).
        let mut nodes = vec![
            node(None, "java.util.ArrayList", "", Some("static App.EVENTS")),
            node(Some(0), "java.lang.Object[]", "elementData", None),
        ];
        for i in 0..20 {
            nodes.push(PathNode {
                identity: i,
                ..target(node(Some(1), "Event", "[]", None), "Event", 1000.0)
            });
        }
        nodes.push(target(
            node(Some(2), "byte[]", "payload", None),
            "byte[]",
            500.0,
        ));
        let map = nodes.len();
        nodes.push(node(
            None,
            "java.util.HashMap",
            "",
            Some("static App.SESSIONS"),
        ));
        nodes.push(node(Some(map), "java.util.HashMap$Node[]", "table", None));
        for i in 0..10 {
            let entry = nodes.len();
            nodes.push(PathNode {
                identity: 100 + i,
                ..node(Some(map + 1), "java.util.HashMap$Node", "[]", None)
            });
            nodes.push(PathNode {
                identity: 200 + i,
                ..target(node(Some(entry), "Session", "val", None), "Session", 500.0)
            });
            let session = nodes.len() - 1;
            nodes.push(PathNode {
                identity: 300 + i,
                ..target(node(Some(session), "byte[]", "data", None), "byte[]", 500.0)
            });
        }
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(Paths::new(nodes)));
        let s = suspects(&m);
        let holders: Vec<&str> = s.iter().map(|s| s.holder.as_str()).collect();
        assert_eq!(
            holders,
            ["java.util.HashMap", "java.util.ArrayList"],
            "{s:#?}"
        );
        let sessions = &s[0];
        let first = &sessions.holds[0];
        assert_eq!(
            first.type_name, "byte[]",
            "most bytes first: {:?}",
            sessions.holds
        );
        // Of the byte[]s' samples, 10 of 11 go through the map: so much of their growth.
        assert_eq!(first.objects, (5_000.0_f64 * 10.0 / 11.0).round() as i64);
        assert_eq!(
            first.bytes,
            (5_000.0_f64 * 1024.0 * 10.0 / 11.0).round() as i64
        );
        let session = sessions
            .holds
            .iter()
            .find(|h| h.type_name == "Session")
            .unwrap();
        assert_eq!((session.objects, session.bytes), (5_000, 160_000));
        let events = &s[1];
        let event = events
            .holds
            .iter()
            .find(|h| h.type_name == "Event")
            .unwrap();
        assert_eq!((event.objects, event.bytes), (20_000, 320_000));
        assert_eq!(
            events
                .holds
                .iter()
                .find(|h| h.type_name == "byte[]")
                .map(|h| h.objects),
            Some((5_000.0_f64 / 11.0).round() as i64)
        );
        assert!(
            sessions.held().1 > events.held().1,
            "{:?} {:?}",
            sessions.held(),
            events.held()
        );
        assert!(
            sessions.held().0 < events.held().0,
            "fewer objects, more bytes"
        );
    }

    #[test]
    fn a_recording_without_paths_lists_the_growth_and_names_no_holder() {
        let m = session(MAP_LEAK_TYPES);
        let s = suspects(&m);
        assert_eq!(s.len(), 2, "{s:#?}");
        assert!(s
            .iter()
            .all(|s| s.holder.is_empty() && s.evidence.is_none()));
        assert_eq!(s[0].leaking, ["Item"]);
    }

    /// A complete search that reached none of a rising type's sampled objects: they are dead
    /// in the old generation, and the rise is no leak (an incomplete search proves nothing).
    #[test]
    fn a_type_no_complete_search_reached_is_dead_not_a_leak() {
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [100, 20_100, 40_100]));
        let mut m = session(&types);
        let mut paths = map_paths();
        paths.targeted = vec![("Item".into(), 40), ("Garbage".into(), 14)];
        paths.unreached = vec![("Garbage".into(), 14)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        let s = suspects(&m);
        assert!(s.iter().all(|s| s.leaking[0] != "Garbage"), "{s:?}");
        assert!(
            s[0].is_backed() && s[0].holder == "java.util.HashMap",
            "{s:?}"
        );
        paths.incomplete = "the search's time ran out".into();
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths));
        let s = suspects(&m);
        let garbage = s.iter().find(|s| s.leaking[0] == "Garbage").unwrap();
        assert!(garbage.is_backed(), "exact counts back it: {garbage:?}");
    }

    /// A complete search that reached a few of a rising type's sampled objects: at the share
    /// it reached, the objects alive at the end are no more than there were at the start, so
    /// the rise is dead (a ring's live arrays among the dead ones generational ZGC keeps for
    /// the samples); at a share that makes the rise, it is a leak.
    #[test]
    fn a_rise_the_reached_share_cannot_make_is_dead_not_a_leak() {
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [10_000, 20_000, 40_000]));
        let mut m = session(&types);
        // Garbage's estimates at snapshots 0 and 2, and what the search counted, by hand.
        let dead = |m: &CityModel, name: &str, first: u64, last: u64| {
            m.dead_rise_at(0, 2, name, |i| if i == 0 { first } else { last })
        };
        let sampled = |unreached, looked_for| {
            Some(DeadRise::Unreached {
                unreached,
                looked_for,
            })
        };
        let mut paths = map_paths();
        paths.targeted = vec![("Item".into(), 40), ("Garbage".into(), 100)];
        paths.unreached = vec![("Garbage".into(), 96)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), sampled(96, 100));
        let s = suspects(&m);
        assert!(s.iter().all(|s| s.leaking[0] != "Garbage"), "{s:?}");
        // A type none of whose samples it missed, and a type that did not rise: no verdict.
        assert_eq!(dead(&m, "Item", 10_000, 40_000), None);
        assert_eq!(dead(&m, "Garbage", 40_000, 40_000), None);
        paths.unreached = vec![("Garbage".into(), 60)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), None);
        let s = suspects(&m);
        assert!(
            s.iter().any(|s| s.leaking.iter().any(|t| t == "Garbage")),
            "{s:?}"
        );
        // Sampled by bytes: 96 of 100 samples missed were big garbage arrays standing for few
        // objects each, the 4 reached small live ones standing for many. By weight the rise is
        // alive, where by count it looked dead.
        paths.unreached = vec![("Garbage".into(), 96)];
        paths.targeted_weight = vec![("Item".into(), 40.0), ("Garbage".into(), 96.0 + 4_000.0)];
        paths.unreached_weight = vec![("Garbage".into(), 96.0)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), None);
        // And the other way: the few reached stand for few objects.
        paths.targeted_weight = vec![("Garbage".into(), 9_600.0 + 4.0)];
        paths.unreached_weight = vec![("Garbage".into(), 9_600.0)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths));
        assert_eq!(dead(&m, "Garbage", 10_000, 40_000), sampled(96, 100));
    }

    /// A complete search counts every object of a type that a root reaches. Counted after
    /// most of the estimates' rise and holding a quarter of it at most, the rise is dead
    /// (generational ZGC's young collections keeping millions of sampled strings for their
    /// weak references), and no suspect; counted more, or before the rise, no verdict.
    #[test]
    fn a_rise_the_search_counted_none_of_is_dead_not_a_leak() {
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [10_000, 30_000, 40_000]));
        let mut m = session(&types);
        let mut paths = map_paths();
        paths.counted = vec![("Garbage".into(), 9_000), ("Item".into(), 20_010)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        let objects =
            |m: &CityModel, i| m.value(m.find(&["p", "Garbage"]).unwrap(), i, Metric::Objects);
        let dead = |m: &CityModel, name: &str| m.dead_rise_at(0, 2, name, |i| objects(m, i));
        assert_eq!(
            dead(&m, "Garbage"),
            Some(DeadRise::Counted {
                objects: 9_000,
                estimated: 40_000,
                at: 2
            })
        );
        let s = suspects(&m);
        assert!(s.iter().all(|s| s.leaking[0] != "Garbage"), "{s:?}");
        assert!(s.iter().any(|s| s.leaking[0] == "Item"), "{s:?}");
        // A quarter of the rise there, the rest garbage: dead still (generational ZGC's ring of
        // live strings counted among millions estimated). More, and the rise lives.
        paths.counted = vec![("Garbage".into(), 17_500)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert!(dead(&m, "Garbage").is_some());
        paths.counted = vec![("Garbage".into(), 17_501)];
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage"), None);
        // A search that left roots unsearched counts only what it passed.
        paths.counted = vec![("Garbage".into(), 9_000)];
        paths.stopped_early = true;
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(paths.clone()));
        assert_eq!(dead(&m, "Garbage"), None);
        // Counted at snapshot 1, before most of a rise (10,000 to 12,000 of 40,000): what came
        // after waits for the next count.
        paths.stopped_early = false;
        m.frames_mut_for_tests(2).paths = None;
        let mut types = MAP_LEAK_TYPES.to_vec();
        types.push(("Garbage", [10_000, 12_000, 40_000]));
        let mut late = session(&types);
        late.frames_mut_for_tests(1).paths = Some(std::sync::Arc::new(paths));
        assert_eq!(dead(&late, "Garbage"), None);
    }

    /// A rise that rests on what may be garbage (pending births of a short-lived type,
    /// promoted objects no marking has freed) is no leak: not backed; without paths, listed apart
    /// (no search looked); the same rise counted is.
    #[test]
    fn a_rise_within_the_doubt_is_not_a_backed_suspect() {
        use memcity_proto::v1::{exactness, Exactness};
        let counted = session(&[("Item", [100, 10_100, 20_100]), ("Other", [500, 500, 500])]);
        let s = suspects(&counted);
        assert_eq!(s.len(), 1);
        assert!(s[0].confirmed && s[0].is_backed(), "{s:?}");
        let mut doubtful = counted.clone();
        doubtful.frames_mut_for_tests(2).exactness = Some(Exactness {
            source: exactness::Source::Estimate as i32,
            ..Default::default()
        });
        let item = doubtful.node_named("Item").unwrap();
        doubtful.set_unconfirmed_for_tests(2, item, 20_000);
        let s = suspects(&doubtful);
        assert_eq!(s.len(), 1, "still rising");
        assert!(!s[0].confirmed && !s[0].is_backed(), "{s:?}");
        assert_eq!(s[0].backed_growth, 0);
    }

    /// A steady server's buffers (`byte[]`, sampled by bytes, so each estimate is ±110,000 of
    /// 600,000): from a walk's count as the server started they wobble up within their errors,
    /// a line through them rises past the ends' errors, the numbers back none of it (the last
    /// estimate's pending births may be garbage), and no point of the later half goes beyond
    /// what the others leave in doubt. Neither a suspect nor rising. The same rise, each point
    /// counted, is named.
    #[test]
    fn a_rise_within_every_points_doubt_is_not_listed_as_rising() {
        use memcity_proto::v1::{exactness, Exactness};
        let counts = [
            450_000u64, 540_000, 530_000, 560_000, 545_000, 590_000, 580_000, 610_000,
        ];
        let mut m = CityModel::new();
        for (i, &n) in counts.iter().enumerate() {
            let rows = vec![
                (vec!["p".into(), "byte[]".into()], "Type".into(), n, n * 40),
                (
                    vec!["p".into(), "Other".into()],
                    "Type".into(),
                    400_000,
                    400_000 * 16,
                ),
            ];
            m.push_tree(
                i as u64 * 2_000,
                (n + 400_000, n * 40 + 400_000 * 16),
                &rows,
                Vec::new(),
            );
        }
        let counted = m.clone();
        let named: Vec<String> = suspects(&counted)
            .into_iter()
            .flat_map(|s| s.leaking)
            .collect();
        assert_eq!(named, ["byte[]"], "counted, the rise is named");
        let id = m.node_named("byte[]").unwrap();
        for i in 1..counts.len() {
            m.frames_mut_for_tests(i).exactness = Some(Exactness {
                source: exactness::Source::Estimate as i32,
                ..Default::default()
            });
            m.set_error_for_tests(i, id, 110_000);
        }
        // The last estimate's pending births, which no GC has judged yet.
        m.set_unconfirmed_for_tests(counts.len() - 1, id, 50_000);
        m.set_window(None);
        let trend = type_trends(&m)
            .into_iter()
            .find(|(name, _)| name == "byte[]")
            .unwrap()
            .1;
        assert!(
            trend.is_leak(100.0) && !trend.within_doubt(false) && trend.steady() == 0.0,
            "the premise: a rise beyond the ends' doubt, not beyond the later half's: {trend:?}"
        );
        assert!(suspects(&m).is_empty(), "{:?}", suspects(&m));
    }

    #[test]
    fn nothing_growing_names_nothing_and_growth_under_the_floor_is_not_a_leak() {
        let mut m = session(&[("Item", [100, 100, 100]), ("Small", [10, 30, 50])]);
        m.frames_mut_for_tests(2).paths = Some(std::sync::Arc::new(map_paths()));
        assert!(suspects(&m).is_empty());
    }

    #[test]
    fn signatures_name_threads_by_their_family() {
        assert_eq!(
            stable_root("thread \"qtp1702297201-14-acceptor-0@36ae3dd9-ServerConnector@1a2b3c{HTTP/1.1,[http/1.1]}{0.0.0.0:46741}\""),
            "thread \"qtp#-#-acceptor-#@#-ServerConnector@#{HTTP/#.#,[http/#.#]}{host:#}\""
        );
        assert_eq!(
            stable_root("local in App.run(App.java:12) of thread \"pool-3-thread-7\""),
            "local in App.run(App.java:12) of thread \"pool-#-thread-#\""
        );
        assert_eq!(stable_root("static App.CACHE2"), "static App.CACHE2");
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

    #[test]
    fn an_empty_session_has_no_suspects() {
        assert!(suspects(&CityModel::new()).is_empty());
    }

    #[test]
    fn internals_are_collection_insides() {
        assert!(is_internal("java.util.HashMap$Node[]"));
        assert!(is_internal("java.util.LinkedList$Node"));
        assert!(is_internal("java.lang.ThreadLocal$ThreadLocalMap$Entry"));
        assert!(!is_internal("java.util.HashMap"));
        assert!(!is_internal("App$Node"));
    }
}
