//! The heap timeline strip: total objects or bytes per snapshot as a small chart, the current
//! position, click to jump, drag to choose the window growth and colors use. It also tells exact
//! snapshots (heap walks) from estimated ones, for the strip, the status bar and the details
//! panel. Geometry only; the window draws it.

use crate::model::{CityModel, Frame, Metric, Window, ROOT};

/// What a snapshot's numbers rest on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// A heap walk: types and packages exact, references counted. Sources that say nothing
    /// (recordings from before estimates, Memory Cities exports of heap dumps) are walks too.
    Walk,
    /// Read from a heap dump: every object it holds counted, references exact.
    Dump,
    /// Estimated from allocation samples at a GC; its references are the anchor walk's.
    Estimate(Anchor),
}

/// The exact snapshot an estimate is reconciled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// Snapshot `index` of the model.
    Snapshot(usize),
    /// A walk the model does not hold (the agent trimmed it before this viewer joined); the
    /// agent's `seq` of it.
    Earlier(u64),
    /// No walk had finished yet: no references, and objects older than sampling are missing.
    Unanchored,
}

/// What snapshot `index` rests on; `None` past the end.
pub fn basis(model: &CityModel, index: usize) -> Option<Basis> {
    let frame = model.frame(index)?;
    if frame.dump.is_some() {
        return Some(Basis::Dump);
    }
    if !frame.is_estimated() {
        return Some(Basis::Walk);
    }
    let Some(exactness) = frame.exactness.as_ref().filter(|e| e.anchored) else {
        return Some(Basis::Estimate(Anchor::Unanchored));
    };
    let seq = exactness.anchor_seq;
    // The anchor is the latest walk before the estimate: searching back from it finds it in a
    // few steps, which matters because the status bar asks every frame.
    let frames = &model.frames()[..index];
    let is_anchor = |f: &std::sync::Arc<Frame>| f.seq == seq && !f.is_estimated();
    Some(Basis::Estimate(match frames.iter().rposition(is_anchor) {
        Some(at) => Anchor::Snapshot(at),
        None => Anchor::Earlier(seq),
    }))
}

impl Basis {
    pub fn is_estimate(&self) -> bool {
        matches!(self, Basis::Estimate(_))
    }

    /// For the status bar: "exact (walk)", or "estimated" and where its references come from.
    /// Snapshots are numbered from 1, as the status bar counts them.
    pub fn label(&self) -> String {
        match self {
            Basis::Walk => "exact (walk)".to_string(),
            Basis::Dump => "exact (heap dump)".to_string(),
            Basis::Estimate(anchor) => match anchor.walk() {
                Some(walk) => format!("estimated, references from {walk}"),
                None => "estimated, no walk yet (no references)".to_string(),
            },
        }
    }
}

impl Anchor {
    /// The walk in words ("the walk of snapshot 3"); `None` when there is none.
    pub fn walk(&self) -> Option<String> {
        match self {
            Anchor::Snapshot(index) => Some(format!("the walk of snapshot {}", index + 1)),
            Anchor::Earlier(_) => Some("an earlier walk, before this view's history".to_string()),
            Anchor::Unanchored => None,
        }
    }
}

/// Length of a dash and of the gap after it where the chart line reaches an estimate, in pixels.
pub const DASH: f32 = 4.0;
pub const GAP: f32 = 3.0;
/// Radius of the dot on each snapshot, drawn while snapshots are at least `DOT_SPACING` apart.
pub const DOT_RADIUS: f32 = 3.0;
pub const DOT_SPACING: f32 = 8.0;
/// Height of the tick under a walk and under an estimate, up from the strip's bottom edge.
pub const WALK_TICK: f32 = 8.0;
/// The band at a chart's top kept for its labels (the largest total, what the marks mean),
/// which the line, its dots and the position marker keep out of.
pub const LABEL_BAND: f32 = 14.0;
pub const ESTIMATE_TICK: f32 = 4.0;

/// One snapshot on the chart.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChartPoint {
    pub x: f32,
    pub y: f32,
    pub estimated: bool,
}

/// A straight piece of the chart line; `estimated` pieces are dashes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Piece {
    pub from: (f32, f32),
    pub to: (f32, f32),
    pub estimated: bool,
}

/// The chart as drawn: where walks are solid and estimates hollow or dashed, so a viewer sees
/// which totals were counted and which were guessed from samples.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chart {
    /// One per snapshot, in order: a filled dot for a walk, a hollow one for an estimate.
    pub points: Vec<ChartPoint>,
    /// The line through them: solid between two walks, dashed where either end is an estimate.
    pub pieces: Vec<Piece>,
    /// `DOT_RADIUS`, or 0 when snapshots are too close for a dot each (the ticks remain).
    pub dot_radius: f32,
    /// Ticks along the bottom edge, one per snapshot: `(x, top)`, walks tall and estimates
    /// short, so the rhythm of walks shows however many snapshots share a pixel.
    pub ticks: Vec<(f32, f32, bool)>,
    /// Some snapshot is an estimate (the strip then explains its marks).
    pub any_estimate: bool,
}

/// Cuts a line into dashes, carrying the dash pattern on from `phase` (the distance already
/// walked into the current dash and gap) so a run of short segments still reads as dashed.
fn dash(from: (f32, f32), to: (f32, f32), phase: &mut f32, out: &mut Vec<Piece>) {
    let (dx, dy) = (to.0 - from.0, to.1 - from.1);
    let len = (dx * dx + dy * dy).sqrt();
    let at = |s: f32| (from.0 + dx * s / len, from.1 + dy * s / len);
    let mut s = 0.0;
    while s < len {
        let in_dash = *phase < DASH;
        let end = if in_dash { DASH } else { DASH + GAP };
        let next = (s + end - *phase).min(len);
        if in_dash {
            out.push(Piece {
                from: at(s),
                to: at(next),
                estimated: true,
            });
        }
        *phase += next - s;
        if *phase >= DASH + GAP - 1e-3 {
            *phase = 0.0;
        }
        s = next;
    }
}

/// Where the strip sits on screen, in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Strip {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Strip {
    pub fn contains(&self, px: f32, py: f32) -> bool {
        px >= self.x && px <= self.x + self.w && py >= self.y && py <= self.y + self.h
    }

    /// Horizontal position of snapshot `index` of `len`.
    pub fn x_of(&self, index: usize, len: usize) -> f32 {
        if len <= 1 {
            return self.x + self.w / 2.0;
        }
        self.x + self.w * index as f32 / (len - 1) as f32
    }

    /// The snapshot nearest to pixel column `px`.
    pub fn index_at(&self, px: f32, len: usize) -> usize {
        if len <= 1 {
            return 0;
        }
        let t = ((px - self.x) / self.w).clamp(0.0, 1.0);
        (t * (len - 1) as f32).round() as usize
    }

    /// The chart: one point per snapshot, the heap total scaled to the strip's height, marked
    /// by what each snapshot rests on. The largest total sits a dot's radius under the label
    /// band at the top, so no dot or line reaches the labels.
    pub fn chart(&self, model: &CityModel, metric: Metric) -> Chart {
        self.chart_under_labels(model, metric, DOT_RADIUS)
    }

    /// [`Strip::chart`] whose largest dot is `dot` in radius: its points keep that far under
    /// the label band.
    pub fn chart_under_labels(&self, model: &CityModel, metric: Metric, dot: f32) -> Chart {
        let len = model.len();
        let totals: Vec<u64> = (0..len).map(|i| model.value(ROOT, i, metric)).collect();
        let max = totals.iter().copied().max().unwrap_or(0).max(1) as f32;
        let points: Vec<ChartPoint> = totals
            .iter()
            .zip(model.frames())
            .enumerate()
            .map(|(i, (&v, frame))| ChartPoint {
                x: self.x_of(i, len),
                y: self.y + self.h - (self.h - LABEL_BAND - dot).max(0.0) * v as f32 / max,
                estimated: frame.is_estimated(),
            })
            .collect();
        let mut pieces = Vec::new();
        let mut phase = 0.0;
        for pair in points.windows(2) {
            let (a, b) = ((pair[0].x, pair[0].y), (pair[1].x, pair[1].y));
            if pair[0].estimated || pair[1].estimated {
                dash(a, b, &mut phase, &mut pieces);
            } else {
                phase = 0.0;
                pieces.push(Piece {
                    from: a,
                    to: b,
                    estimated: false,
                });
            }
        }
        let spacing = if len > 1 {
            self.w / (len - 1) as f32
        } else {
            f32::INFINITY
        };
        let bottom = self.y + self.h;
        Chart {
            ticks: points
                .iter()
                .map(|p| {
                    let tick = if p.estimated {
                        ESTIMATE_TICK
                    } else {
                        WALK_TICK
                    };
                    (p.x, bottom - tick, p.estimated)
                })
                .collect(),
            any_estimate: points.iter().any(|p| p.estimated),
            dot_radius: if spacing >= DOT_SPACING {
                DOT_RADIUS
            } else {
                0.0
            },
            points,
            pieces,
        }
    }

    /// The window a drag from `from_px` to `to_px` selects (either direction).
    pub fn window_between(&self, from_px: f32, to_px: f32, len: usize) -> Window {
        let (a, b) = (self.index_at(from_px, len), self.index_at(to_px, len));
        Window {
            start: a.min(b),
            end: a.max(b),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::model::tests::sample;
    use memcity_proto::v1::{
        exactness, stream_message::Kind, Exactness, Handshake, Node, Reference, Snapshot,
        StreamMessage, StringTable,
    };

    /// One group of an agent snapshot: name id, objects (16 bytes each), 95 % errors of objects
    /// and bytes when estimated.
    fn group(name: u32, objects: u64, error: Option<(u64, u64)>, children: Vec<Node>) -> Node {
        Node {
            name,
            objects,
            bytes: objects * 16,
            estimated: error.is_some(),
            objects_error: error.map_or(0, |e| e.0),
            bytes_error: error.map_or(0, |e| e.1),
            children,
            ..Default::default()
        }
    }

    /// An agent session as the viewer receives it: walks at seq 0 and 2, each followed by an
    /// estimate reconciled with it (seq 1 and 3). Package `app` holds types `Leak` (growing:
    /// 100, ~150 +/- 30, 200, ~260 +/- 40) and `Person` (50 throughout); `Leak` references
    /// `Person`, counted by the walks only. `first` drops the snapshots before it, as the
    /// agent's trimmed history does for a late viewer.
    pub(crate) fn estimated_session(first: u64) -> CityModel {
        let msg = |kind| StreamMessage { kind: Some(kind) };
        let mut m = CityModel::new();
        m.apply(&msg(Kind::Handshake(Handshake {
            protocol_version: memcity_proto::PROTOCOL_VERSION,
            classifiers: vec!["package".into(), "type".into()],
            ..Default::default()
        })))
        .unwrap();
        m.apply(&msg(Kind::Strings(StringTable {
            sites: Vec::new(),
            first_id: 1,
            names: vec!["app".into(), "Leak".into(), "Person".into()],
        })))
        .unwrap();
        // seq, Leak objects, their errors, and the referrers the snapshot's walk counted.
        for (seq, leak, error, referrers) in [
            (0u64, 100u64, None, 100u64),
            (1, 150, Some((30u64, 480u64)), 100),
            (2, 200, None, 200),
            (3, 260, Some((40, 640)), 200),
        ] {
            if seq < first {
                continue;
            }
            let person_error = error.map(|_| (0, 0));
            let app = group(
                1,
                leak + 50,
                error,
                vec![
                    group(2, leak, error, vec![]),
                    group(3, 50, person_error, vec![]),
                ],
            );
            let exactness = Exactness {
                source: if error.is_some() {
                    exactness::Source::Estimate
                } else {
                    exactness::Source::Walk
                } as i32,
                types_exact: error.is_none(),
                anchor_seq: seq & !1,
                anchored: error.is_some(),
                ..Default::default()
            };
            m.apply(&msg(Kind::Snapshot(Snapshot {
                seq,
                time_ms: seq * 1000,
                root: Some(group(0, leak + 50, error, vec![app])),
                // An estimate carries its anchor walk's references.
                references: vec![Reference {
                    from_type: 2,
                    to_type: 3,
                    referrers,
                    references: referrers,
                }],
                exactness: Some(exactness),
                ..Default::default()
            })))
            .unwrap();
        }
        m
    }

    const STRIP: Strip = Strip {
        x: 100.0,
        y: 10.0,
        w: 200.0,
        h: 50.0,
    };

    #[test]
    fn positions_and_indices_round_trip() {
        assert_eq!(STRIP.x_of(0, 3), 100.0);
        assert_eq!(STRIP.x_of(2, 3), 300.0);
        assert_eq!(STRIP.index_at(199.0, 3), 1);
        assert_eq!(STRIP.index_at(-50.0, 3), 0);
        assert_eq!(STRIP.index_at(900.0, 3), 2);
        assert_eq!(STRIP.index_at(150.0, 1), 0);
        assert!(STRIP.contains(150.0, 30.0) && !STRIP.contains(150.0, 70.0));
    }

    #[test]
    fn the_chart_shows_heap_totals_with_the_largest_at_the_top() {
        let m = sample();
        let chart = STRIP.chart(&m, Metric::Objects);
        let p = &chart.points;
        assert_eq!(p.len(), 3);
        // Totals 60, 550, 1045: the last is the largest.
        // A dot's radius under the label band: the dot stays out of it.
        let top = 10.0 + LABEL_BAND + DOT_RADIUS;
        assert_eq!((p[2].x, p[2].y), (300.0, top));
        let plot = 50.0 - LABEL_BAND - DOT_RADIUS;
        assert!((p[0].y - (60.0 - plot * 60.0 / 1045.0)).abs() < 1e-4);
        let larger = STRIP.chart_under_labels(&m, Metric::Objects, 6.0);
        assert_eq!(larger.points[2].y, 10.0 + LABEL_BAND + 6.0);
        assert!(p[0].y > p[1].y && p[1].y > p[2].y);
        // Trees pushed without exactness are walks: one solid piece per step, tall ticks.
        assert!(!chart.any_estimate);
        assert_eq!(chart.pieces.len(), 2);
        assert!(chart.pieces.iter().all(|piece| !piece.estimated));
        assert_eq!(chart.pieces[1].to, (300.0, top));
        assert_eq!(chart.ticks[0], (100.0, 60.0 - WALK_TICK, false));
        assert_eq!(chart.dot_radius, DOT_RADIUS);
    }

    #[test]
    fn walks_are_solid_and_estimates_hollow_and_dashed() {
        let m = estimated_session(0);
        let chart = STRIP.chart(&m, Metric::Objects);
        let estimated: Vec<bool> = chart.points.iter().map(|p| p.estimated).collect();
        assert_eq!(estimated, [false, true, false, true]);
        assert!(chart.any_estimate);
        let bottom = STRIP.y + STRIP.h;
        assert_eq!(
            chart.ticks.iter().map(|t| (t.1, t.2)).collect::<Vec<_>>(),
            [
                (bottom - WALK_TICK, false),
                (bottom - ESTIMATE_TICK, true),
                (bottom - WALK_TICK, false),
                (bottom - ESTIMATE_TICK, true),
            ]
        );
        // Every step touches an estimate: the whole line is dashes, none longer than a dash,
        // and the pattern runs on across snapshots (the gaps add up to the line's length).
        assert!(chart.pieces.iter().all(|p| p.estimated));
        let length =
            |a: (f32, f32), b: (f32, f32)| ((b.0 - a.0).powi(2) + (b.1 - a.1).powi(2)).sqrt();
        assert!(chart
            .pieces
            .iter()
            .all(|p| length(p.from, p.to) <= DASH + 1e-3));
        let line: f32 = chart
            .points
            .windows(2)
            .map(|w| length((w[0].x, w[0].y), (w[1].x, w[1].y)))
            .sum();
        let drawn: f32 = chart.pieces.iter().map(|p| length(p.from, p.to)).sum();
        assert!(
            (drawn / line - DASH / (DASH + GAP)).abs() < 0.02,
            "{drawn} of {line}"
        );
        assert_eq!(chart.pieces[0].from, (chart.points[0].x, chart.points[0].y));
        // Too many snapshots for a dot each: the ticks alone tell walks from estimates.
        let narrow = Strip { w: 20.0, ..STRIP };
        assert_eq!(narrow.chart(&m, Metric::Objects).dot_radius, 0.0);
    }

    #[test]
    fn dashes_follow_the_pattern_across_segments() {
        let mut pieces = Vec::new();
        let mut phase = 0.0;
        dash((0.0, 0.0), (10.0, 0.0), &mut phase, &mut pieces);
        // A 4 dash, a 3 gap, then 3 of the next dash; the next segment draws its last 1.
        dash((10.0, 0.0), (10.0, 10.0), &mut phase, &mut pieces);
        let ends: Vec<_> = pieces.iter().map(|p| (p.from, p.to)).collect();
        assert_eq!(
            ends,
            [
                ((0.0, 0.0), (4.0, 0.0)),
                ((7.0, 0.0), (10.0, 0.0)),
                ((10.0, 0.0), (10.0, 1.0)),
                ((10.0, 4.0), (10.0, 8.0)),
            ]
        );
    }

    #[test]
    fn an_estimate_names_the_walk_its_references_come_from() {
        let m = estimated_session(0);
        assert_eq!(basis(&m, 0), Some(Basis::Walk));
        assert_eq!(basis(&m, 1), Some(Basis::Estimate(Anchor::Snapshot(0))));
        assert_eq!(basis(&m, 3), Some(Basis::Estimate(Anchor::Snapshot(2))));
        assert_eq!(basis(&m, 4), None);
        assert_eq!(basis(&m, 0).unwrap().label(), "exact (walk)");
        assert_eq!(
            basis(&m, 3).unwrap().label(),
            "estimated, references from the walk of snapshot 3"
        );
        // A viewer that joined after the walk: the estimate still says where it stands.
        let late = estimated_session(1);
        assert_eq!(basis(&late, 0), Some(Basis::Estimate(Anchor::Earlier(0))));
        assert_eq!(
            basis(&late, 0).unwrap().label(),
            "estimated, references from an earlier walk, before this view's history"
        );
        assert_eq!(basis(&late, 2), Some(Basis::Estimate(Anchor::Snapshot(1))));
        let early = Basis::Estimate(Anchor::Unanchored);
        assert_eq!(early.label(), "estimated, no walk yet (no references)");
        assert!(early.is_estimate() && !Basis::Walk.is_estimate());
    }

    #[test]
    fn dragging_selects_a_window_either_way() {
        assert_eq!(
            STRIP.window_between(300.0, 190.0, 3),
            Window { start: 1, end: 2 }
        );
        assert_eq!(
            STRIP.window_between(100.0, 100.0, 3),
            Window { start: 0, end: 0 }
        );
    }
}
