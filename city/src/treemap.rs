//! Treemap tilings: split a rectangle among weighted children.
//!
//! The default is the squarified treemap of Bruls, Huizing and van Wijk with a target aspect
//! ratio of the golden ratio rather than 1, as the online Memory Cities tool does (thesis 3.3:
//! "squarified treemap algorithm with a desired aspect ratio of the golden ratio" - squares read
//! less like buildings). Binary, slice, dice and slice-and-dice complete the tool's set.

/// The golden ratio, the default target aspect ratio (thesis 3.3).
pub const GOLDEN_RATIO: f64 = 1.618_033_988_749_895;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
}

impl Rect {
    pub const fn new(x: f64, y: f64, w: f64, h: f64) -> Self {
        Self { x, y, w, h }
    }

    pub fn area(&self) -> f64 {
        self.w * self.h
    }

    pub fn center(&self) -> (f64, f64) {
        (self.x + self.w / 2.0, self.y + self.h / 2.0)
    }

    /// Long side over short side (>= 1); 1 for a degenerate rectangle.
    pub fn aspect(&self) -> f64 {
        let (long, short) = if self.w >= self.h {
            (self.w, self.h)
        } else {
            (self.h, self.w)
        };
        if short <= 0.0 {
            1.0
        } else {
            long / short
        }
    }

    /// Shrunk by `pad` on every side (never below zero size).
    pub fn inset(&self, pad: f64) -> Rect {
        let pad_x = pad.min(self.w / 2.0).max(0.0);
        let pad_y = pad.min(self.h / 2.0).max(0.0);
        Rect::new(
            self.x + pad_x,
            self.y + pad_y,
            self.w - 2.0 * pad_x,
            self.h - 2.0 * pad_y,
        )
    }

    /// A rectangle with the same center and aspect, scaled to `fraction` of the area.
    pub fn scaled_area(&self, fraction: f64) -> Rect {
        let k = fraction.clamp(0.0, 1.0).sqrt();
        let (cx, cy) = self.center();
        Rect::new(
            cx - self.w * k / 2.0,
            cy - self.h * k / 2.0,
            self.w * k,
            self.h * k,
        )
    }

    pub fn contains(&self, x: f64, y: f64) -> bool {
        x >= self.x && x <= self.x + self.w && y >= self.y && y <= self.y + self.h
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tiling {
    #[default]
    Squarify,
    Binary,
    /// Children side by side along x.
    Slice,
    /// Children stacked along y.
    Dice,
    /// Slice at even depths, dice at odd ones.
    SliceDice,
}

impl Tiling {
    pub const ALL: [Tiling; 5] = [
        Tiling::Squarify,
        Tiling::Binary,
        Tiling::Slice,
        Tiling::Dice,
        Tiling::SliceDice,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Tiling::Squarify => "squarify",
            Tiling::Binary => "binary",
            Tiling::Slice => "slice",
            Tiling::Dice => "dice",
            Tiling::SliceDice => "slice-dice",
        }
    }
}

/// Splits `rect` among `weights` (same order), areas proportional to the weights. Zero weights
/// get empty rectangles. `depth` matters for slice-and-dice only; `ratio` for squarify only.
pub fn tile(tiling: Tiling, rect: Rect, weights: &[f64], depth: usize, ratio: f64) -> Vec<Rect> {
    let mut out = vec![Rect::new(rect.x, rect.y, 0.0, 0.0); weights.len()];
    let total: f64 = weights.iter().filter(|w| **w > 0.0).sum();
    if total <= 0.0 || rect.area() <= 0.0 {
        return out;
    }
    let items: Vec<(usize, f64)> = weights
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > 0.0)
        .map(|(i, w)| (i, *w))
        .collect();
    match tiling {
        Tiling::Slice => strip(rect, &items, total, true, &mut out),
        Tiling::Dice => strip(rect, &items, total, false, &mut out),
        Tiling::SliceDice => strip(rect, &items, total, depth.is_multiple_of(2), &mut out),
        Tiling::Binary => binary(rect, &items, &mut out),
        Tiling::Squarify => squarify(rect, &items, total, ratio.max(1.0), &mut out),
    }
    out
}

/// Lays `items` out in one strip: along x (`horizontal`) or along y.
fn strip(rect: Rect, items: &[(usize, f64)], total: f64, horizontal: bool, out: &mut [Rect]) {
    let mut offset = 0.0;
    for &(i, w) in items {
        let share = w / total;
        out[i] = if horizontal {
            Rect::new(rect.x + offset * rect.w, rect.y, share * rect.w, rect.h)
        } else {
            Rect::new(rect.x, rect.y + offset * rect.h, rect.w, share * rect.h)
        };
        offset += share;
    }
}

/// Recursive halving: split the items where their sums are closest to equal, cut the longer
/// side in that proportion.
fn binary(rect: Rect, items: &[(usize, f64)], out: &mut [Rect]) {
    if items.len() == 1 {
        out[items[0].0] = rect;
        return;
    }
    let total: f64 = items.iter().map(|(_, w)| w).sum();
    let mut running = 0.0;
    let mut split = 1;
    let mut best = f64::INFINITY;
    for (k, (_, w)) in items.iter().enumerate().take(items.len() - 1) {
        running += w;
        let imbalance = (total / 2.0 - running).abs();
        if imbalance < best {
            best = imbalance;
            split = k + 1;
        }
    }
    let left: f64 = items[..split].iter().map(|(_, w)| w).sum();
    let share = left / total;
    let (a, b) = if rect.w >= rect.h {
        (
            Rect::new(rect.x, rect.y, rect.w * share, rect.h),
            Rect::new(
                rect.x + rect.w * share,
                rect.y,
                rect.w * (1.0 - share),
                rect.h,
            ),
        )
    } else {
        (
            Rect::new(rect.x, rect.y, rect.w, rect.h * share),
            Rect::new(
                rect.x,
                rect.y + rect.h * share,
                rect.w,
                rect.h * (1.0 - share),
            ),
        )
    };
    binary(a, &items[..split], out);
    binary(b, &items[split..], out);
}

/// How far a rectangle of aspect `aspect` is from the target: 1 at the target, more either way.
fn deviation(aspect: f64, target: f64) -> f64 {
    (aspect / target).max(target / aspect)
}

/// The worst deviation of a row of `weights` (summing to `sum`) laid along a side of length
/// `side`, in a rectangle whose area per unit weight is `scale`.
fn worst(row_min: f64, row_max: f64, sum: f64, side: f64, scale: f64, target: f64) -> f64 {
    let row_area = sum * scale;
    let thickness = row_area / side;
    let aspect = |w: f64| {
        let length = w * scale / thickness;
        if length >= thickness {
            length / thickness
        } else {
            thickness / length
        }
    };
    deviation(aspect(row_min), target).max(deviation(aspect(row_max), target))
}

/// Bruls et al.: fill rows along the shorter side of the free rectangle, adding items while the
/// row's worst aspect deviation does not get worse, then cut the row off and continue.
/// Items keep their given order (callers sort for classic squarify, or keep a stable order).
fn squarify(rect: Rect, items: &[(usize, f64)], total: f64, target: f64, out: &mut [Rect]) {
    let scale = rect.area() / total;
    let mut free = rect;
    let mut start = 0;
    while start < items.len() {
        let side = free.w.min(free.h);
        let mut end = start + 1;
        let (mut min, mut max, mut sum) = (items[start].1, items[start].1, items[start].1);
        let mut current = worst(min, max, sum, side, scale, target);
        while end < items.len() {
            let w = items[end].1;
            let next = worst(min.min(w), max.max(w), sum + w, side, scale, target);
            if next > current {
                break;
            }
            current = next;
            min = min.min(w);
            max = max.max(w);
            sum += w;
            end += 1;
        }
        // Lay the row out along the shorter side, as a strip of thickness area / side.
        let row_area = sum * scale;
        let last_row = end == items.len();
        let mut offset = 0.0;
        if free.w >= free.h {
            // Shorter side is vertical: the row is a column at the left.
            let thickness = if last_row { free.w } else { row_area / free.h };
            for &(i, w) in &items[start..end] {
                let length = w / sum * free.h;
                out[i] = Rect::new(free.x, free.y + offset, thickness, length);
                offset += length;
            }
            free = Rect::new(free.x + thickness, free.y, free.w - thickness, free.h);
        } else {
            let thickness = if last_row { free.h } else { row_area / free.w };
            for &(i, w) in &items[start..end] {
                let length = w / sum * free.w;
                out[i] = Rect::new(free.x + offset, free.y, length, thickness);
                offset += length;
            }
            free = Rect::new(free.x, free.y + thickness, free.w, free.h - thickness);
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EPS: f64 = 1e-6;

    fn check_partition(rect: Rect, weights: &[f64], rects: &[Rect]) {
        let total: f64 = weights.iter().sum();
        for (w, r) in weights.iter().zip(rects) {
            let expected = rect.area() * w / total;
            assert!(
                (r.area() - expected).abs() < EPS * rect.area(),
                "area {} vs {expected}",
                r.area()
            );
            assert!(
                r.x >= rect.x - EPS && r.y >= rect.y - EPS,
                "{r:?} outside {rect:?}"
            );
            assert!(
                r.x + r.w <= rect.x + rect.w + EPS && r.y + r.h <= rect.y + rect.h + EPS,
                "{r:?} outside"
            );
        }
        // No two rectangles overlap.
        for (i, a) in rects.iter().enumerate() {
            for b in &rects[i + 1..] {
                let ox = (a.x + a.w).min(b.x + b.w) - a.x.max(b.x);
                let oy = (a.y + a.h).min(b.y + b.h) - a.y.max(b.y);
                assert!(ox <= EPS || oy <= EPS, "{a:?} overlaps {b:?}");
            }
        }
    }

    #[test]
    fn every_tiling_partitions_with_proportional_areas() {
        let rect = Rect::new(3.0, -2.0, 160.0, 90.0);
        let weights = [40.0, 25.0, 15.0, 10.0, 5.0, 3.0, 1.5, 0.5];
        for tiling in Tiling::ALL {
            for depth in 0..2 {
                let rects = tile(tiling, rect, &weights, depth, GOLDEN_RATIO);
                check_partition(rect, &weights, &rects);
            }
        }
    }

    #[test]
    fn bruls_paper_example_gives_its_rows() {
        // The worked example of Bruls et al.: 6x4 rectangle, values 6,6,4,3,2,2,1 with target
        // ratio 1. First row: 6,6 (a column of width 3 along the short side).
        let rect = Rect::new(0.0, 0.0, 6.0, 4.0);
        let weights = [6.0, 6.0, 4.0, 3.0, 2.0, 2.0, 1.0];
        let r = tile(Tiling::Squarify, rect, &weights, 0, 1.0);
        assert!(
            (r[0].w - 3.0).abs() < EPS && (r[0].h - 2.0).abs() < EPS,
            "{:?}",
            r[0]
        );
        assert!((r[1].x - 0.0).abs() < EPS && (r[1].y - 2.0).abs() < EPS);
        // The free 3x4 area's shorter side is horizontal: 4 and 3 form a row 7/3 high along it,
        // 12/7 and 9/7 wide.
        assert!(
            (r[2].x - 3.0).abs() < EPS && (r[2].h - 7.0 / 3.0).abs() < EPS,
            "{:?}",
            r[2]
        );
        assert!((r[2].w - 12.0 / 7.0).abs() < EPS && (r[3].w - 9.0 / 7.0).abs() < EPS);
        check_partition(rect, &weights, &r);
    }

    #[test]
    fn golden_ratio_target_yields_golden_rectangles_where_it_can() {
        // Two equal items in a golden rectangle: a 2-row split gives aspect 2*phi vs a column
        // split giving phi/2... the chosen layout is the one closest to phi.
        let rect = Rect::new(0.0, 0.0, GOLDEN_RATIO * 2.0, 2.0);
        let r = tile(Tiling::Squarify, rect, &[1.0], 0, GOLDEN_RATIO);
        assert!((r[0].aspect() - GOLDEN_RATIO).abs() < EPS);
        // Many equal items: squarify with ratio phi keeps every rectangle nearer phi than 1
        // does on average.
        let weights = vec![1.0; 24];
        let big = Rect::new(0.0, 0.0, 100.0, 100.0);
        let mean_dev = |ratio: f64| {
            let r = tile(Tiling::Squarify, big, &weights, 0, ratio);
            r.iter()
                .map(|r| deviation(r.aspect(), GOLDEN_RATIO))
                .sum::<f64>()
                / r.len() as f64
        };
        assert!(mean_dev(GOLDEN_RATIO) <= mean_dev(1.0) + EPS);
        let slice = tile(Tiling::Slice, big, &weights, 0, GOLDEN_RATIO);
        let slice_dev = slice
            .iter()
            .map(|r| deviation(r.aspect(), GOLDEN_RATIO))
            .sum::<f64>()
            / 24.0;
        assert!(
            mean_dev(GOLDEN_RATIO) < slice_dev / 4.0,
            "squarify is far squarer than slice"
        );
    }

    #[test]
    fn slice_dice_alternates_and_strips_are_ordered() {
        let rect = Rect::new(0.0, 0.0, 10.0, 10.0);
        let s = tile(Tiling::SliceDice, rect, &[1.0, 1.0], 0, 1.0);
        assert_eq!((s[0].w, s[0].h, s[1].x), (5.0, 10.0, 5.0));
        let d = tile(Tiling::SliceDice, rect, &[1.0, 3.0], 1, 1.0);
        assert_eq!((d[0].w, d[0].h, d[1].y), (10.0, 2.5, 2.5));
    }

    #[test]
    fn zero_and_empty_inputs() {
        let rect = Rect::new(0.0, 0.0, 10.0, 10.0);
        let r = tile(Tiling::Squarify, rect, &[0.0, 5.0, 0.0], 0, GOLDEN_RATIO);
        assert_eq!(r[0].area(), 0.0);
        assert!((r[1].area() - 100.0).abs() < EPS);
        assert!(tile(Tiling::Binary, rect, &[], 0, 1.0).is_empty());
        assert!(tile(Tiling::Dice, Rect::new(0.0, 0.0, 0.0, 5.0), &[1.0], 0, 1.0)[0].area() == 0.0);
    }

    #[test]
    fn rect_helpers() {
        let r = Rect::new(0.0, 0.0, 10.0, 4.0);
        assert_eq!(r.aspect(), 2.5);
        assert_eq!(r.inset(1.0), Rect::new(1.0, 1.0, 8.0, 2.0));
        assert_eq!(r.inset(3.0).h, 0.0);
        let s = r.scaled_area(0.25);
        assert!((s.area() - 10.0).abs() < EPS && (s.aspect() - 2.5).abs() < EPS);
        assert_eq!(s.center(), r.center());
        assert!(r.contains(10.0, 4.0) && !r.contains(10.1, 0.0));
    }
}
