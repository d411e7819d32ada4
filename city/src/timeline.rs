//! The heap timeline strip: total objects or bytes per snapshot as a small chart, the current
//! position, click to jump, drag to choose the window growth and colors use. Geometry only; the
//! window draws it.

use crate::model::{CityModel, Metric, Window, ROOT};

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

    /// The chart's polyline: one point per snapshot, the heap total scaled to the strip's height
    /// (the largest total touches the top).
    pub fn points(&self, model: &CityModel, metric: Metric) -> Vec<(f32, f32)> {
        let len = model.len();
        let totals: Vec<u64> = (0..len).map(|i| model.value(ROOT, i, metric)).collect();
        let max = totals.iter().copied().max().unwrap_or(0).max(1) as f32;
        totals
            .iter()
            .enumerate()
            .map(|(i, &v)| (self.x_of(i, len), self.y + self.h - self.h * v as f32 / max))
            .collect()
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
mod tests {
    use super::*;
    use crate::model::tests::sample;

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
        let p = STRIP.points(&m, Metric::Objects);
        assert_eq!(p.len(), 3);
        // Totals 60, 550, 1045: the last is the largest.
        assert_eq!(p[2], (300.0, 10.0));
        assert!((p[0].1 - (60.0 - 50.0 * 60.0 / 1045.0)).abs() < 1e-4);
        assert!(p[0].1 > p[1].1 && p[1].1 > p[2].1);
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
