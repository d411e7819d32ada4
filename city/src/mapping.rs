//! From numbers to what a structure looks like: height, color, opacity of buildings, the color of
//! districts, the frustums of references. Formulas from Memory Cities VI and the online thesis
//! 3.4 and 5.5.

use std::collections::HashSet;

use crate::model::{CityModel, Metric, NodeId};
use crate::treemap::Rect;

/// RGB in 0..=1.
pub type Rgb = [f32; 3];

/// Gray: shrinking or no growth (VI.B.2, Fig. 6).
pub const GRAY: Rgb = [0.62, 0.62, 0.62];
/// Orange: medium growth.
pub const ORANGE: Rgb = [1.0, 0.55, 0.0];
/// Red: strong growth.
pub const RED: Rgb = [0.86, 0.08, 0.06];
/// Darkest district (the whole heap) and lightest (VI.A: dark blue to light blue by level).
pub const DISTRICT_DARK: Rgb = [0.05, 0.12, 0.38];
pub const DISTRICT_LIGHT: Rgb = [0.55, 0.76, 1.0];
/// The highlight of a selected building (the papers use a distinct hue: blue).
pub const SELECTED: Rgb = [0.2, 0.45, 1.0];
/// How far the buildings of a selected district are tinted toward [`SELECTED`]: the district's
/// own slab lies under them, so without it a selected package or type would vanish from sight.
pub const IN_SELECTION: f32 = 0.55;
/// Outgoing references (VII.D: green) and incoming ones (purple).
pub const OUTGOING: Rgb = [0.15, 0.75, 0.25];
pub const INCOMING: Rgb = [0.58, 0.22, 0.78];
/// Height of every district slab (VI.A: flat, fixed height).
pub const DISTRICT_HEIGHT: f64 = 1.0;
/// The thesis's downsizing factor for frustum radii (5.5).
pub const FRUSTUM_FACTOR: f64 = 0.175;
/// The thinnest end of a reference frustum, in city units (the city is 1,000 across): a few
/// pixels at the overview's distance.
pub const MIN_FRUSTUM_RADIUS: f64 = 3.0;
/// Buildings that stay opaque by default, and the others' opacity (VI.B.3).
pub const DEFAULT_OPAQUE: usize = 10;
pub const DEFAULT_FADED_OPACITY: f32 = 0.4;

/// Height of a building with base area `area`: 2 * sqrt(area) (VI.B.1), so a square building is
/// twice as tall as wide.
pub fn building_height(area: f64) -> f64 {
    2.0 * area.max(0.0).sqrt()
}

/// Exact at both ends (t = 0 gives `a`, t = 1 gives `b`), so the gradient's stops are the
/// constants themselves.
pub fn lerp(a: Rgb, b: Rgb, t: f32) -> Rgb {
    let mix = |x: f32, y: f32| x * (1.0 - t) + y * t;
    [mix(a[0], b[0]), mix(a[1], b[1]), mix(a[2], b[2])]
}

/// The building gradient (VI.B.2): 0 gray, 0.5 orange, 1 red, linear in between; below 0 gray.
pub fn growth_color(alpha: f64) -> Rgb {
    let a = alpha.clamp(0.0, 1.0) as f32;
    if a <= 0.5 {
        lerp(GRAY, ORANGE, a * 2.0)
    } else {
        lerp(ORANGE, RED, (a - 0.5) * 2.0)
    }
}

/// The color input of a building at snapshot `index`: (cur - first) / largest absolute growth
/// of any building (VI.B.2), in the model's window; growth within the estimates' stated errors
/// does not count (`CityModel::significant_growth`).
pub fn growth_alpha(model: &CityModel, node: NodeId, index: usize, metric: Metric) -> f64 {
    model.significant_growth(node, index, metric) as f64 / model.max_growth(metric) as f64
}

/// District color by level: `depth` 0 (the heap) darkest, `max_depth` lightest (VI.A).
pub fn district_color(depth: usize, max_depth: usize) -> Rgb {
    let t = if max_depth == 0 {
        0.0
    } else {
        depth as f32 / max_depth as f32
    };
    lerp(DISTRICT_DARK, DISTRICT_LIGHT, t.clamp(0.0, 1.0))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Opacity {
    /// Off: every building opaque.
    pub enabled: bool,
    /// The N strongest absolute growers stay opaque.
    pub opaque: usize,
    /// Everyone else's opacity.
    pub faded: f32,
}

impl Default for Opacity {
    fn default() -> Self {
        Self {
            enabled: true,
            opaque: DEFAULT_OPAQUE,
            faded: DEFAULT_FADED_OPACITY,
        }
    }
}

impl Opacity {
    /// The buildings that stay opaque: the N strongest absolute growers of the window (VI.B.3);
    /// only growers count, a city with nothing growing has no highlighted buildings.
    pub fn solid(&self, model: &CityModel, metric: Metric) -> HashSet<NodeId> {
        model.top_growers(metric, self.opaque).into_iter().collect()
    }

    pub fn of(&self, node: NodeId, solid: &HashSet<NodeId>) -> f32 {
        if !self.enabled || solid.contains(&node) {
            1.0
        } else {
            self.faded
        }
    }
}

/// A drawn reference between two buildings: a frustum from roof to roof.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frustum {
    pub from: NodeId,
    pub to: NodeId,
    /// Radius at `from`'s roof and at `to`'s roof.
    pub start_radius: f64,
    pub end_radius: f64,
    /// True for references into the selected building (incoming), false for outgoing.
    pub incoming: bool,
}

/// Frustum radii (thesis 5.5): at each end, half that building's height times 0.175 times the
/// fraction of its objects involved. `referrers` of the `from` building hold references;
/// `targets` objects of the `to` building are referenced (memcity counts references, an upper
/// bound of distinct targets, so the fraction is capped at 1). Few-to-many and many-to-few read
/// at a glance.
pub fn frustum_radii(
    from_height: f64,
    from_objects: u64,
    referrers: u64,
    to_height: f64,
    to_objects: u64,
    targets: u64,
) -> (f64, f64) {
    let fraction = |part: u64, whole: u64| {
        if whole == 0 {
            0.0
        } else {
            (part as f64 / whole as f64).min(1.0)
        }
    };
    // The thesis's radii vanish at a one-object holder (a `LinkedList` holding a million
    // nodes is a tiny building, and a single reference is a tiny share of the nodes): the paper's
    // figure 10 would lose the very end that names the leak's root. A floor keeps every reference
    // drawn visible.
    (
        (from_height / 2.0 * FRUSTUM_FACTOR * fraction(referrers, from_objects))
            .max(MIN_FRUSTUM_RADIUS),
        (to_height / 2.0 * FRUSTUM_FACTOR * fraction(targets, to_objects)).max(MIN_FRUSTUM_RADIUS),
    )
}

/// A building's box: its base rectangle on the ground plane, standing on the district stack.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BuildingBox {
    pub base: Rect,
    /// Ground level: one district slab per level below it.
    pub bottom: f64,
    pub height: f64,
}

impl BuildingBox {
    pub fn new(base: Rect, depth: usize) -> Self {
        Self {
            base,
            bottom: depth as f64 * DISTRICT_HEIGHT,
            height: building_height(base.area()),
        }
    }

    /// Center of the roof, where frustums attach.
    pub fn roof(&self) -> (f64, f64, f64) {
        let (x, z) = self.base.center();
        (x, self.bottom + self.height, z)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::sample;

    fn close(a: Rgb, b: Rgb) -> bool {
        a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-6)
    }

    #[test]
    fn height_is_twice_the_square_root_of_the_area() {
        assert_eq!(building_height(100.0), 20.0);
        assert_eq!(building_height(400.0), 40.0);
        assert_eq!(building_height(-1.0), 0.0);
        let b = BuildingBox::new(Rect::new(0.0, 0.0, 10.0, 10.0), 2);
        assert_eq!(b.roof(), (5.0, 22.0, 5.0));
    }

    #[test]
    fn gradient_gray_orange_red() {
        assert!(close(growth_color(0.0), GRAY));
        assert!(close(growth_color(-3.0), GRAY), "shrinking is gray");
        assert!(close(growth_color(0.5), ORANGE));
        assert!(close(growth_color(1.0), RED));
        assert!(close(growth_color(7.0), RED));
        let quarter = growth_color(0.25);
        assert!(close(quarter, lerp(GRAY, ORANGE, 0.5)));
    }

    #[test]
    fn color_at_known_points_of_the_sample() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let b = m.find(&["p", "B"]).unwrap();
        // A: 10 -> 500 -> 1000, largest growth 990: at snapshot 1 alpha = 490/990.
        assert!((growth_alpha(&m, a, 1, Metric::Objects) - 490.0 / 990.0).abs() < 1e-12);
        assert!(close(
            growth_color(growth_alpha(&m, a, 2, Metric::Objects)),
            RED
        ));
        assert!(close(
            growth_color(growth_alpha(&m, b, 2, Metric::Objects)),
            GRAY
        ));
    }

    #[test]
    fn strongest_growers_stay_opaque() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let b = m.find(&["p", "B"]).unwrap();
        let c = m.find(&["p", "C"]).unwrap();
        let o = Opacity {
            opaque: 1,
            ..Default::default()
        };
        let solid = o.solid(&m, Metric::Objects);
        assert_eq!(solid, HashSet::from([a]));
        assert_eq!(o.of(a, &solid), 1.0);
        assert_eq!(o.of(c, &solid), 0.4);
        let all = Opacity::default().solid(&m, Metric::Objects);
        assert!(
            all.contains(&c) && !all.contains(&b),
            "shrinking B never counts as a grower"
        );
        let off = Opacity {
            enabled: false,
            ..Default::default()
        };
        assert_eq!(off.of(b, &solid), 1.0);
    }

    #[test]
    fn districts_lighten_by_level() {
        assert!(close(district_color(0, 2), DISTRICT_DARK));
        assert!(close(district_color(2, 2), DISTRICT_LIGHT));
        assert!(close(district_color(0, 0), DISTRICT_DARK));
    }

    #[test]
    fn frustum_radii_show_few_to_many() {
        // 1 % of A's objects reference 80 % of B's: thin at A, thick at B.
        let (start, end) = frustum_radii(100.0, 1000, 10, 100.0, 1000, 800);
        assert_eq!(start, MIN_FRUSTUM_RADIUS, "0.0875 is under the floor");
        assert!((end - 50.0 * 0.175 * 0.8).abs() < 1e-12);
        // More references than objects (an upper bound) caps at the whole building.
        assert_eq!(frustum_radii(100.0, 5, 5, 100.0, 2, 9).1, 50.0 * 0.175);
        assert_eq!(
            frustum_radii(10.0, 0, 5, 10.0, 0, 9),
            (MIN_FRUSTUM_RADIUS, MIN_FRUSTUM_RADIUS)
        );
        // The paper's figure 10: one small LinkedList holds a million nodes by one reference.
        let (list, nodes) = frustum_radii(2.0, 1, 1, 400.0, 1_000_000, 1);
        assert!(list >= MIN_FRUSTUM_RADIUS && nodes >= MIN_FRUSTUM_RADIUS);
    }
}
