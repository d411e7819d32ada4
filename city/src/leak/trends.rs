//! How each type's live objects moved over the window: a line fitted to its snapshots, how well
//! it fits, the rise that goes on over the window's later half and what the estimates leave in
//! doubt of it (in the spirit of JMC's live-set rule: first against last alone would call any
//! start-up ramp a leak). The first stage of the leak analysis: every later one asks a type's
//! trend, and the growth table and the agent's metrics read the same.

use std::collections::HashMap;

use crate::model::{CityModel, Metric, Role};

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

/// The nodes of each type (one per package path it appears under), memcity's own share of a
/// type (under [`MEMCITY`]) left out: it is not the application's.
pub(super) fn type_nodes(model: &CityModel) -> HashMap<&str, Vec<u32>> {
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

/// `type_trends` for the nodes of each type, `types`, most growth first.
pub(super) fn trends_of(
    model: &CityModel,
    types: &HashMap<&str, Vec<u32>>,
) -> Vec<(String, Trend)> {
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
pub(super) fn sort_by_growth(trends: &mut [(String, Trend)]) {
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
        Metric::Bytes | Metric::Retained => v.2,
    }
}

/// [`trends_of_rows`] for a few rows over snapshots `at` (`trend_snapshots`): each row's nodes
/// looked up in each snapshot's lists (sorted by node), so that the cost is the rows' nodes'
/// and not every node's, as a step of [`SuspectsInSteps`] must be. Snapshot after snapshot, so
/// that one snapshot's lists are searched for every row while they are at hand.
pub(super) fn trends_of_few_rows(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leak::testing::session;

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
}
