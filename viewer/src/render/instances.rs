//! The scene as boxes: each district and building (its solid body, and its band of doubt as
//! glass) a box to draw, sorted for the depth test and for blending.

use glam::Vec3;
use memcity_city::mapping::Rgb;
use memcity_city::scene::Scene;

use super::{View, DOUBT_ALPHA, SELECTED};

/// One box to draw: its lower corner, its size and its color.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct Instance {
    pub(super) lo: [f32; 3],
    pub(super) size: [f32; 3],
    pub(super) tint: [f32; 4],
}

impl Instance {
    pub(super) fn new(min: Vec3, max: Vec3, rgb: Rgb, alpha: f32) -> Self {
        Self {
            lo: min.to_array(),
            size: (max - min).to_array(),
            tint: [rgb[0], rgb[1], rgb[2], alpha],
        }
    }
}

/// The districts' and buildings' boxes: opaque ones sorted near to far from `eye`, and glass
/// ones far to near (nearer glass blends over farther glass).
///
/// Near to far, a box's hidden pixels fail the depth test before they are written: a city of
/// solid buildings draws 5-11 % faster in the page (SwiftShader, whose frames are bound by
/// filling pixels); the window (llvmpipe) measured the same either way (BENCHMARKS.md).
pub(super) fn boxes(scene: &Scene, eye: Vec3, view: View) -> (Vec<Instance>, Vec<Instance>) {
    let mut opaque = Vec::with_capacity(scene.districts.len() + scene.buildings.len());
    for d in &scene.districts {
        let (min, max) = d.bounds();
        let rgb = if d.selected { SELECTED } else { d.color };
        let rgb = if view.hovered == Some(d.node) {
            lighten(rgb)
        } else {
            rgb
        };
        opaque.push(far(min, max, eye, rgb, 1.0));
    }
    let mut glass = Vec::new();
    building_instances(scene, eye, view, &mut opaque, &mut glass);
    // Unstable: boxes at the same distance may blend in either order; no allocation.
    glass.sort_unstable_by(|a, b| b.0.total_cmp(&a.0));
    (
        near_to_far(&opaque),
        glass.into_iter().map(|(_, i)| i).collect(),
    )
}

/// `boxes` nearly in order of their distances, nearest first: by distance bands, in linear
/// time, as every step and turn of the eye sorts them again. Opaque boxes need no exact order
/// (the depth test decides what shows).
fn near_to_far(boxes: &[(f32, Instance)]) -> Vec<Instance> {
    const BANDS: usize = 1024;
    let (near, far) = boxes
        .iter()
        .fold((f32::MAX, f32::MIN), |(lo, hi), &(d, _)| {
            (lo.min(d), hi.max(d))
        });
    let scale = (BANDS - 1) as f32 / (far - near).max(f32::MIN_POSITIVE);
    let band = |d: f32| (((d - near) * scale) as usize).min(BANDS - 1);
    // Counting sort: where each band starts, then each box into its band's next place.
    let mut starts = vec![0usize; BANDS + 1];
    for &(d, _) in boxes {
        starts[band(d) + 1] += 1;
    }
    for i in 1..=BANDS {
        starts[i] += starts[i - 1];
    }
    let mut sorted = vec![Instance::new(Vec3::ZERO, Vec3::ZERO, [0.0; 3], 0.0); boxes.len()];
    for &(d, instance) in boxes {
        let at = &mut starts[band(d)];
        sorted[*at] = instance;
        *at += 1;
    }
    sorted
}

/// A box and its center's squared distance from `eye`, to sort by.
fn far(min: Vec3, max: Vec3, eye: Vec3, rgb: Rgb, alpha: f32) -> (f32, Instance) {
    let distance = ((min + max) / 2.0).distance_squared(eye);
    (distance, Instance::new(min, max, rgb, alpha))
}

/// The buildings' boxes, each with its distance from `eye` for sorting: solid ones to `opaque`;
/// faded ones and the bands of doubt to `glass`.
fn building_instances(
    scene: &Scene,
    eye: Vec3,
    view: View,
    opaque: &mut Vec<(f32, Instance)>,
    glass: &mut Vec<(f32, Instance)>,
) {
    let View { lift, hovered, .. } = view;
    for b in &scene.buildings {
        let (mut min, mut max) = b.bounds();
        let rgb = if b.selected {
            min.y += lift;
            max.y += lift;
            SELECTED
        } else {
            b.color
        };
        let rgb = if hovered == Some(b.node) {
            lighten(rgb)
        } else {
            rgb
        };
        // The share the numbers cannot back: the top of the building as glass of its own
        // color over the solid body (from above, the roof still shows the body's color
        // through it; from the side, the top is haze).
        let (body_max, band) = match b.doubt_from() {
            Some(from) => {
                let split = from as f32 + (min.y - b.shape.bottom as f32);
                (
                    Vec3::new(max.x, split, max.z),
                    Some(Vec3::new(min.x, split, min.z)),
                )
            }
            None => (max, None),
        };
        if body_max.y <= min.y {
            // All of it in doubt: only the band.
        } else if b.opacity >= 1.0 {
            opaque.push(far(min, body_max, eye, rgb, 1.0));
        } else {
            glass.push(far(min, body_max, eye, rgb, b.opacity));
        }
        if let Some(band_min) = band {
            glass.push(far(band_min, max, eye, rgb, DOUBT_ALPHA * b.opacity));
        }
    }
}

/// A hovered structure: a third of the way to white, so it reads as "this one" in any color.
fn lighten(rgb: Rgb) -> Rgb {
    rgb.map(|c| c + (1.0 - c) * 0.35)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memcity_city::mapping::BuildingBox;
    use memcity_city::model::NodeId;
    use memcity_city::scene::Building;
    use memcity_city::treemap::Rect;

    fn building(node: NodeId, opacity: f32, doubt: f32) -> Building {
        Building {
            node,
            shape: BuildingBox {
                base: Rect::new(0.0, 0.0, 10.0, 10.0),
                bottom: 2.0,
                height: 100.0,
            },
            color: [0.9, 0.1, 0.1],
            opacity,
            selected: false,
            doubt,
        }
    }

    fn boxes(scene: &Scene) -> (Vec<Instance>, Vec<Instance>) {
        let view = View {
            width: 100.0,
            height: 100.0,
            lift: 0.0,
            hovered: None,
            revision: 0,
        };
        super::boxes(scene, Vec3::splat(500.0), view)
    }

    #[test]
    fn doubt_is_a_glass_band_of_the_buildings_color_above_its_solid_body() {
        let scene = Scene {
            buildings: vec![building(1, 1.0, 0.3)],
            ..Default::default()
        };
        let (opaque, glass) = boxes(&scene);
        assert_eq!((opaque.len(), glass.len()), (1, 1));
        // The body: from the ground to 70 % of the height; the band: the rest, as glass.
        assert_eq!(opaque[0].lo[1], 2.0);
        assert!((opaque[0].size[1] - 70.0).abs() < 1e-3);
        assert!((glass[0].lo[1] - 72.0).abs() < 1e-3);
        assert!((glass[0].size[1] - 30.0).abs() < 1e-3);
        assert_eq!(glass[0].tint, [0.9, 0.1, 0.1, DOUBT_ALPHA]);
        assert_eq!(opaque[0].tint, [0.9, 0.1, 0.1, 1.0]);
    }

    #[test]
    fn opaque_boxes_come_near_to_far_and_glass_far_to_near() {
        // Buildings along x, the eye at (500, 500, 500): the farther from x = 500, the farther.
        let at = |node: NodeId, x: f32, opacity: f32| {
            let mut b = building(node, opacity, 0.0);
            b.shape.base = Rect::new(x as f64, 0.0, 10.0, 10.0);
            b
        };
        let scene = Scene {
            buildings: vec![
                at(1, 0.0, 1.0),
                at(2, 480.0, 1.0),
                at(3, 200.0, 1.0),
                at(4, 0.0, 0.5),
                at(5, 480.0, 0.5),
                at(6, 200.0, 0.5),
            ],
            ..Default::default()
        };
        let (opaque, glass) = boxes(&scene);
        let xs = |boxes: &[Instance]| boxes.iter().map(|b| b.lo[0]).collect::<Vec<_>>();
        assert_eq!(xs(&opaque), [480.0, 200.0, 0.0]);
        assert_eq!(xs(&glass), [0.0, 200.0, 480.0]);
    }

    #[test]
    fn exact_faded_and_wholly_doubtful_buildings() {
        let scene = Scene {
            buildings: vec![
                building(1, 1.0, 0.0),
                building(2, 0.4, 0.5),
                building(3, 1.0, 1.0),
            ],
            ..Default::default()
        };
        let (opaque, glass) = boxes(&scene);
        // Exact: one solid box, whole.
        assert_eq!(opaque.len(), 1);
        assert!((opaque[0].size[1] - 100.0).abs() < 1e-3);
        // Faded: its body and its band are both glass, the band fainter; wholly doubtful: the
        // band alone.
        let alphas: Vec<f32> = glass.iter().map(|g| g.tint[3]).collect();
        assert_eq!(alphas.len(), 3, "{alphas:?}");
        assert!(alphas.contains(&0.4));
        assert!(alphas.contains(&(DOUBT_ALPHA * 0.4)));
        assert!(alphas.contains(&DOUBT_ALPHA));
    }
}
