//! The city at one moment, ready to draw: districts, buildings with their boxes, colors and
//! opacity, the frustums of the selected building, and what a pointer over it would show.
//! The renderer draws this and nothing else, so everything here is testable without a window.

use std::collections::HashSet;

use glam::Vec3;

use crate::camera::ray_box;
use crate::layout::{CityLayout, Scaling};
use crate::mapping::{self, BuildingBox, Frustum, Opacity, Rgb, DISTRICT_HEIGHT};
use crate::model::{CityModel, Metric, NodeId};
use crate::treemap::Rect;
use crate::units;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewSettings {
    pub metric: Metric,
    pub scaling: Scaling,
    pub opacity: Opacity,
    /// Growth colors on (the papers' default); off draws every building gray.
    pub color: bool,
    /// Draw the selected building's references.
    pub references: bool,
    /// Draw what the numbers cannot back as a glass band under each roof (`Building::doubt`).
    pub doubt: bool,
}

impl Default for ViewSettings {
    fn default() -> Self {
        Self {
            metric: Metric::Objects,
            scaling: Scaling::Sqrt,
            opacity: Opacity::default(),
            color: true,
            references: true,
            doubt: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct District {
    pub node: NodeId,
    pub rect: Rect,
    pub depth: usize,
    pub color: Rgb,
    /// Picked by the user (a type with a site level below it is a district).
    pub selected: bool,
}

impl District {
    /// The slab: from its level's floor to one district height above.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        let bottom = self.depth as f64 * DISTRICT_HEIGHT;
        (
            Vec3::new(self.rect.x as f32, bottom as f32, self.rect.y as f32),
            Vec3::new(
                (self.rect.x + self.rect.w) as f32,
                (bottom + DISTRICT_HEIGHT) as f32,
                (self.rect.y + self.rect.h) as f32,
            ),
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Building {
    pub node: NodeId,
    pub shape: BuildingBox,
    pub color: Rgb,
    pub opacity: f32,
    pub selected: bool,
    /// The share of the value, 0..1, that the numbers cannot back: an estimate's 95 % error and
    /// what may be garbage no old-generation marking has met (the truth lies between the value
    /// less both and the value plus the error). 0 for an exact count. Drawn as the roof's band.
    pub doubt: f32,
}

/// Doubt under this share of a building is not drawn: a band thinner than a few pixels reads
/// as noise on every estimated building.
pub const MIN_DRAWN_DOUBT: f32 = 0.05;

impl Building {
    /// Where the roof's band of doubt begins (its share of the height is `doubt`), or `None`
    /// when the doubt is too small to draw.
    pub fn doubt_from(&self) -> Option<f64> {
        let b = &self.shape;
        (self.doubt >= MIN_DRAWN_DOUBT).then(|| b.bottom + b.height * (1.0 - f64::from(self.doubt)))
    }

    pub fn bounds(&self) -> (Vec3, Vec3) {
        let b = &self.shape;
        (
            Vec3::new(b.base.x as f32, b.bottom as f32, b.base.y as f32),
            Vec3::new(
                (b.base.x + b.base.w) as f32,
                (b.bottom + b.height) as f32,
                (b.base.y + b.base.h) as f32,
            ),
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Scene {
    pub districts: Vec<District>,
    pub buildings: Vec<Building>,
    pub frustums: Vec<(Frustum, Vec3, Vec3)>,
    /// A leak suspect's trace through the city, when the selection is on one (`trace`).
    pub trace: Option<Trace3d>,
    /// Groups without a lot (pruned), over the whole city.
    pub hidden: usize,
}

impl Scene {
    /// Height of the tallest building's roof, for framing the camera.
    pub fn tallest(&self) -> f64 {
        self.buildings
            .iter()
            .map(|b| b.shape.bottom + b.shape.height)
            .fold(0.0, f64::max)
    }
}

/// Reads one snapshot's values for nodes asked in increasing order.
struct Cursor<'a> {
    values: &'a [(NodeId, u64, u64)],
    metric: Metric,
}

impl<'a> Cursor<'a> {
    fn new(values: &'a [(NodeId, u64, u64)], metric: Metric) -> Self {
        Self { values, metric }
    }

    /// The node's value; zero when the snapshot does not have it.
    fn get(&mut self, node: NodeId) -> u64 {
        let skip = self.values.partition_point(|v| v.0 < node);
        self.values = &self.values[skip..];
        match self.values.first() {
            Some(&(n, objects, bytes)) if n == node => match self.metric {
                Metric::Objects => objects,
                // Retained sizes are read from `values_in`'s retained values, shaped alike.
                Metric::Bytes | Metric::Retained => bytes,
            },
            _ => 0,
        }
    }
}

/// Builds the scene at fractional time `t` (see `TimeTravel::t`).
pub fn build(
    model: &CityModel,
    layout: &CityLayout,
    t: f64,
    view: &ViewSettings,
    selected: Option<NodeId>,
) -> Scene {
    let mut scene = Scene {
        hidden: layout.hidden.values().sum(),
        ..Default::default()
    };
    if model.is_empty() {
        return scene;
    }
    let metric = view.metric;
    let max_depth = model
        .nodes()
        .iter()
        .filter(|n| !n.is_leaf())
        .map(|n| n.depth)
        .max()
        .unwrap_or(0);
    let solid: HashSet<NodeId> = view.opacity.solid(model, metric);
    let growth_scale = model.max_growth(metric) as f64;
    // Lots in node order (as `NodeMap` keeps them), so the three snapshots involved are read by
    // merging, not searching: a time-travel step rebuilds this every frame of its tween.
    let lots = layout.lots.iter().map(|(n, &r)| (n, r));
    // A selected district (a package, or a type with sites below it) tints the buildings on it.
    let selected_district = selected.filter(|&n| !model.node(n).is_leaf());
    let in_selected_district = |node: NodeId| {
        let Some(district) = selected_district else {
            return false;
        };
        let mut at = model.node(node).parent;
        while let Some(n) = at {
            if n == district {
                return true;
            }
            at = model.node(n).parent;
        }
        false
    };
    let last = model.len() - 1;
    let t = t.clamp(0.0, last as f64);
    let mut tween = Tween::new(model, t, metric);
    for (node, lot) in lots {
        let info = model.node(node);
        if !info.is_leaf() {
            scene.districts.push(District {
                node,
                rect: lot,
                depth: info.depth,
                color: mapping::district_color(info.depth, max_depth),
                selected: selected == Some(node),
            });
            continue;
        }
        let Tweened {
            value,
            backed,
            error_now,
            doubt_now,
        } = tween.at(node);
        if value <= 0.0 {
            continue;
        }
        let Some(base) = layout.base(node, value, view.scaling) else {
            continue;
        };
        let color = if view.color && !model.is_own(node) {
            mapping::growth_color(backed / growth_scale)
        } else {
            mapping::GRAY
        };
        let color = if in_selected_district(node) {
            mapping::lerp(color, mapping::SELECTED, mapping::IN_SELECTION)
        } else {
            color
        };
        scene.buildings.push(Building {
            node,
            shape: BuildingBox::new(base, info.depth),
            color,
            opacity: view.opacity.of(node, &solid),
            selected: selected == Some(node),
            doubt: if view.doubt {
                ((error_now + doubt_now) / value).clamp(0.0, 1.0) as f32
            } else {
                0.0
            },
        });
    }
    if let (Some(selected), true) = (selected, view.references) {
        scene.frustums = frustums(model, &scene, t.round() as usize, selected);
    }
    scene
}

/// A leaf's numbers at a fractional time, read by merging the snapshots around it and the
/// window's start in node order.
struct Tween<'a> {
    frac: f64,
    before: Cursor<'a>,
    after: Cursor<'a>,
    first: Cursor<'a>,
    // What the numbers cannot back (`CityModel::significant_growth`), tweened like the values.
    before_error: Cursor<'a>,
    after_error: Cursor<'a>,
    first_error: Cursor<'a>,
    before_doubt: Cursor<'a>,
    after_doubt: Cursor<'a>,
    first_doubt: Cursor<'a>,
}

/// What `Tween::at` gives of a leaf.
struct Tweened {
    value: f64,
    /// Growth since the window's start that the numbers back.
    backed: f64,
    /// The value's error and what of it may be garbage no marking has seen.
    error_now: f64,
    doubt_now: f64,
}

impl<'a> Tween<'a> {
    fn new(model: &'a CityModel, t: f64, metric: Metric) -> Tween<'a> {
        let last = model.len() - 1;
        let i = t.floor() as usize;
        let next = (i + 1).min(last);
        let start = model.window().start;
        Tween {
            frac: t - i as f64,
            before: Cursor::new(model.values_in(i, metric), metric),
            after: Cursor::new(model.values_in(next, metric), metric),
            first: Cursor::new(model.values_in(start, metric), metric),
            before_error: Cursor::new(model.errors(i), metric),
            after_error: Cursor::new(model.errors(next), metric),
            first_error: Cursor::new(model.errors(start), metric),
            before_doubt: Cursor::new(model.unconfirmed_values(i), metric),
            after_doubt: Cursor::new(model.unconfirmed_values(next), metric),
            first_doubt: Cursor::new(model.unconfirmed_values(start), metric),
        }
    }

    /// `node`'s numbers; nodes are asked for in node order.
    fn at(&mut self, node: NodeId) -> Tweened {
        let frac = self.frac;
        let tween = |a: u64, b: u64| a as f64 + (b as f64 - a as f64) * frac;
        let value = tween(self.before.get(node), self.after.get(node));
        let first = self.first.get(node) as f64;
        // Growth the numbers back: less the errors of both ends and, for a rise, what may be
        // garbage no marking has seen at its end (for a fall, at its start).
        let error_now = tween(self.before_error.get(node), self.after_error.get(node));
        let error = error_now + self.first_error.get(node) as f64;
        let doubt_now = tween(self.before_doubt.get(node), self.after_doubt.get(node));
        let doubt_first = self.first_doubt.get(node) as f64;
        let growth = value - first;
        let backed = if growth > 0.0 {
            (growth - error - doubt_now).max(0.0)
        } else {
            (growth + error + doubt_first).min(0.0)
        };
        Tweened {
            value,
            backed,
            error_now,
            doubt_now,
        }
    }
}

/// One end of a frustum: a building's roof, or for a district, the point above its tallest
/// building (a type whose sites are its buildings reads as one group).
struct End {
    node: NodeId,
    roof: Vec3,
    /// Sets the radius, as a building's height does.
    height: f64,
}

impl End {
    fn of(b: &Building) -> Self {
        let (x, y, z) = b.shape.roof();
        Self {
            node: b.node,
            roof: Vec3::new(x as f32, y as f32, z as f32),
            height: b.shape.height,
        }
    }
}

fn end_of(model: &CityModel, scene: &Scene, node: NodeId) -> Option<End> {
    if let Some(b) = scene.buildings.iter().find(|b| b.node == node) {
        return Some(End::of(b));
    }
    let district = scene.districts.iter().find(|d| d.node == node)?;
    let inside = |mut at: NodeId| loop {
        if at == node {
            return true;
        }
        match model.node(at).parent {
            Some(p) => at = p,
            None => return false,
        }
    };
    let tallest = scene
        .buildings
        .iter()
        .filter(|b| inside(b.node))
        .max_by(|a, b| a.shape.roof().1.total_cmp(&b.shape.roof().1))?;
    let (x, z) = district.rect.center();
    Some(End {
        node,
        roof: Vec3::new(x as f32, tallest.shape.roof().1 as f32, z as f32),
        height: tallest.shape.height,
    })
}

/// The selected building's references in snapshot `index`: outgoing (to what it keeps alive)
/// and incoming (what keeps it alive), each to every building of the other group.
fn frustums(
    model: &CityModel,
    scene: &Scene,
    index: usize,
    selected: NodeId,
) -> Vec<(Frustum, Vec3, Vec3)> {
    let Some(frame) = model.frame(index) else {
        return Vec::new();
    };
    let Some(me) = end_of(model, scene, selected) else {
        return Vec::new();
    };
    let my_name = model.reference_name(selected);
    let objects = |node: NodeId| model.value(node, index, Metric::Objects);
    let mut out = Vec::new();
    for reference in &frame.references {
        let (incoming, other_name) = if reference.from == my_name {
            (false, &reference.to)
        } else if reference.to == my_name {
            (true, &reference.from)
        } else {
            continue;
        };
        if reference.from == reference.to {
            continue; // a group referencing itself (list nodes) has no second end to draw
        }
        for other in scene
            .buildings
            .iter()
            .filter(|b| model.reference_name(b.node) == other_name.as_str())
        {
            let other = End::of(other);
            let (from, to) = if incoming {
                (&other, &me)
            } else {
                (&me, &other)
            };
            let (start_radius, end_radius) = mapping::frustum_radii(
                from.height,
                objects(from.node),
                reference.referrers,
                to.height,
                objects(to.node),
                reference.references,
            );
            out.push((
                Frustum {
                    from: from.node,
                    to: to.node,
                    start_radius,
                    end_radius,
                    incoming,
                },
                from.roof,
                to.roof,
            ));
        }
    }
    out
}

/// A leak suspect's trace drawn through the city: tubes from roof to roof along its steps (the
/// suspect reference marked), a pole over the holder and a taller landmark over the root's
/// object. Steps whose group has no lot (pruned as small) are passed over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Trace3d {
    /// `(from roof, to roof, radius, suspect reference)`, from the root down.
    pub links: Vec<(Vec3, Vec3, f32, bool)>,
    /// Bottom and top of the holder's pole and of the root's landmark.
    pub holder: Option<(Vec3, Vec3)>,
    pub root: Option<(Vec3, Vec3)>,
    /// The steps' roofs, from the root down, for a camera tour.
    pub stops: Vec<Vec3>,
}

/// Places a trace's steps (`(type name, reached through the suspect reference, is the holder)`,
/// from the root down) on the scene's buildings.
pub fn trace(model: &CityModel, scene: &Scene, steps: &[(String, bool, bool)]) -> Trace3d {
    let mut out = Trace3d::default();
    let mut previous: Option<End> = None;
    for (name, suspect, holder) in steps {
        let Some(end) = model.node_named(name).and_then(|n| end_of(model, scene, n)) else {
            continue;
        };
        let pole = |end: &End, times: f32| {
            let top = end.roof + Vec3::Y * (end.height as f32 * times).clamp(8.0, 60.0);
            (end.roof, top)
        };
        if out.root.is_none() {
            out.root = Some(pole(&end, 1.0));
        }
        if *holder {
            out.holder = Some(pole(&end, 0.5));
        }
        if let Some(from) = &previous {
            // Thicker than the reference frustums between the same roofs (at most 0.0875 of a
            // building's height), so the trace shows over them.
            let radius = (from.height.max(end.height) as f32 * 0.1).max(0.6);
            out.links.push((from.roof, end.roof, radius, *suspect));
        }
        out.stops.push(end.roof);
        previous = Some(end);
    }
    out
}

/// The structure under a ray: the nearest building or district it hits.
pub fn pick(scene: &Scene, origin: Vec3, dir: Vec3) -> Option<NodeId> {
    let buildings = scene.buildings.iter().map(|b| (b.node, b.bounds()));
    let districts = scene.districts.iter().map(|d| (d.node, d.bounds()));
    buildings
        .chain(districts)
        .filter_map(|(node, (min, max))| ray_box(origin, dir, min, max).map(|t| (t, node)))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, node)| node)
}

/// Tooltip text (Memory Cities VII.C): the path with roles, one level per line and indented
/// (site names are long), then objects, bytes, and growth in the window up to `index`, marked
/// as estimates (with their errors) where the snapshots say so.
pub fn tooltip(model: &CityModel, node: NodeId, index: usize, metric: Metric) -> String {
    let mut lines: Vec<String> = model
        .labeled_path(node)
        .into_iter()
        .enumerate()
        .map(|(level, part)| format!("{}{part}", "  ".repeat(level)))
        .collect();
    if lines.is_empty() {
        lines.push("Heap".to_string());
    }
    let estimate = |at: usize| model.frame(at).and_then(|f| f.estimate(node));
    let error = estimate(index);
    let (objects, bytes) = units::numbers(
        model.value(node, index, Metric::Objects),
        model.value(node, index, Metric::Bytes),
        error,
    );
    // Growth is as rough as the rougher of its two ends.
    let rough = error.is_some() || estimate(model.window().start).is_some();
    let mut text = format!(
        "{}\nobjects: {objects}   bytes: {bytes}   growth: {}{}",
        lines.join("\n"),
        if rough { "~" } else { "" },
        units::signed_amount(model.relative_growth(node, index, metric), metric)
    );
    let (u_objects, u_bytes) = model.frame(index).map_or((0, 0), |f| f.unconfirmed(node));
    if let Some(line) = units::unconfirmed_line(u_objects, u_bytes) {
        text.push('\n');
        text.push_str(&line);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::camera::OrbitCamera;
    use crate::layout::{layout, LayoutConfig};
    use crate::model::tests::{row, sample};
    use crate::model::Reference;
    use crate::units::unconfirmed_line;

    #[test]
    fn a_selected_district_tints_its_buildings() {
        let m = chain_model();
        let plan = layout(&m, &LayoutConfig::default());
        let app = m.find(&["app"]).unwrap();
        let plain = build(&m, &plan, 1.0, &ViewSettings::default(), None);
        let picked = build(&m, &plan, 1.0, &ViewSettings::default(), Some(app));
        assert!(picked.districts.iter().any(|d| d.node == app && d.selected));
        for (a, b) in plain.buildings.iter().zip(&picked.buildings) {
            assert_eq!(a.node, b.node);
            assert_eq!(
                b.color,
                mapping::lerp(a.color, mapping::SELECTED, mapping::IN_SELECTION)
            );
        }
        // A building selected alone tints nothing else.
        let node = m.find(&["app", "Person"]).unwrap();
        let one = build(&m, &plan, 1.0, &ViewSettings::default(), Some(node));
        for (a, b) in plain.buildings.iter().zip(&one.buildings) {
            assert_eq!(a.color, b.color);
        }
    }

    fn chain_model() -> CityModel {
        // LinkedList$Node -> Person -> String, the leak of the paper's Fig. 10.
        let mut m = CityModel::new();
        for (time, n) in [(0u64, 10u64), (1000, 1000)] {
            let mut nodes = Vec::new();
            for (name, count) in [("LinkedList$Node", n), ("Person", n), ("String", 2 * n)] {
                nodes.push((
                    vec!["app".to_string(), name.to_string()],
                    "Type".to_string(),
                    count,
                    count * 24,
                ));
            }
            nodes.insert(
                0,
                (
                    vec!["app".to_string()],
                    "Package".to_string(),
                    4 * n,
                    96 * n,
                ),
            );
            let refs = vec![
                Reference {
                    from: "LinkedList$Node".into(),
                    to: "Person".into(),
                    referrers: n,
                    references: n,
                },
                Reference {
                    from: "Person".into(),
                    to: "String".into(),
                    referrers: n,
                    references: 2 * n,
                },
                Reference {
                    from: "LinkedList$Node".into(),
                    to: "LinkedList$Node".into(),
                    referrers: n,
                    references: 2 * n,
                },
            ];
            m.push_tree(time, (4 * n, 96 * n), &nodes, refs);
        }
        m
    }

    #[test]
    fn scene_at_the_end_has_red_growers_and_blue_districts() {
        let m = sample();
        let l = layout(&m, &LayoutConfig::default());
        let s = build(&m, &l, 2.0, &ViewSettings::default(), None);
        assert_eq!(s.districts.len(), 2, "heap and package p");
        let a = m.find(&["p", "A"]).unwrap();
        let b = m.find(&["p", "B"]).unwrap();
        let building = |n| s.buildings.iter().find(|x| x.node == n).unwrap();
        assert_eq!(building(a).color, mapping::RED);
        assert_eq!(building(b).color, mapping::GRAY);
        assert_eq!(building(a).opacity, 1.0);
        assert_eq!(building(b).opacity, 0.4);
        assert_eq!(
            building(a).shape.bottom,
            2.0,
            "stands on two district slabs"
        );
        assert_eq!(s.districts[0].color, mapping::DISTRICT_DARK);
        // Halfway through the first step the building is tweened between its sizes.
        let mid = build(&m, &l, 0.5, &ViewSettings::default(), None);
        let area = |s: &Scene| {
            s.buildings
                .iter()
                .find(|x| x.node == a)
                .unwrap()
                .shape
                .base
                .area()
        };
        assert!(area(&mid) > area(&build(&m, &l, 0.0, &ViewSettings::default(), None)));
        assert!(area(&mid) < area(&s));
    }

    #[test]
    fn picking_finds_the_building_under_a_projected_roof() {
        let m = sample();
        let l = layout(&m, &LayoutConfig::default());
        let s = build(&m, &l, 2.0, &ViewSettings::default(), None);
        let cam = OrbitCamera::overview(1000.0);
        let a = m.find(&["p", "A"]).unwrap();
        let target = s.buildings.iter().find(|b| b.node == a).unwrap();
        let (x, y, z) = target.shape.roof();
        let (px, py) = cam
            .project(Vec3::new(x as f32, y as f32 - 0.5, z as f32), 1280.0, 720.0)
            .unwrap();
        let (origin, dir) = cam.ray(px, py, 1280.0, 720.0);
        assert_eq!(pick(&s, origin, dir), Some(a));
        // A ray into the sky hits nothing.
        assert_eq!(pick(&s, cam.position(), Vec3::Y), None);
    }

    #[test]
    fn selection_draws_incoming_and_outgoing_frustums() {
        let m = chain_model();
        let l = layout(&m, &LayoutConfig::default());
        let person = m.find(&["app", "Person"]).unwrap();
        let s = build(&m, &l, 1.0, &ViewSettings::default(), Some(person));
        assert!(
            s.buildings
                .iter()
                .find(|b| b.node == person)
                .unwrap()
                .selected
        );
        assert_eq!(s.frustums.len(), 2);
        let incoming = s.frustums.iter().find(|f| f.0.incoming).unwrap().0;
        assert_eq!(incoming.from, m.find(&["app", "LinkedList$Node"]).unwrap());
        assert_eq!(incoming.to, person);
        let outgoing = s.frustums.iter().find(|f| !f.0.incoming).unwrap().0;
        assert_eq!(outgoing.to, m.find(&["app", "String"]).unwrap());
        // All persons hold strings: full radius at the Person end (h/2 * 0.175).
        let h = s
            .buildings
            .iter()
            .find(|b| b.node == person)
            .unwrap()
            .shape
            .height;
        assert!((outgoing.start_radius - h / 2.0 * 0.175).abs() < 1e-9);
        let off = ViewSettings {
            references: false,
            ..Default::default()
        };
        assert!(build(&m, &l, 1.0, &off, Some(person)).frustums.is_empty());
    }

    #[test]
    fn a_selected_type_district_is_highlighted_and_anchors_its_frustums() {
        // With a site level, a type is a district and its sites are the buildings.
        let mut m = CityModel::new();
        for (time, n) in [(0u64, 10u64), (1000, 1000)] {
            let nodes = vec![
                row(&["app"], "Package", 2 * n),
                row(&["app", "Node"], "Type", n),
                row(&["app", "Node", "add:1"], "Allocation Site", n / 2),
                row(&["app", "Node", "add:2"], "Allocation Site", n / 2),
                row(&["app", "Person"], "Type", n),
            ];
            let refs = vec![Reference {
                from: "Node".into(),
                to: "Person".into(),
                referrers: n,
                references: n,
            }];
            m.push_tree(time, (2 * n, 48 * n), &nodes, refs);
        }
        let l = layout(&m, &LayoutConfig::default());
        let node = m.find(&["app", "Node"]).unwrap();
        let s = build(&m, &l, 1.0, &ViewSettings::default(), Some(node));
        assert!(s.districts.iter().any(|d| d.node == node && d.selected));
        assert_eq!(s.frustums.len(), 1);
        let (f, from, to) = s.frustums[0];
        assert_eq!((f.from, f.incoming), (node, false));
        assert_eq!(f.to, m.find(&["app", "Person"]).unwrap());
        // The district's end stands above its tallest site, over the district's center.
        let top = s
            .buildings
            .iter()
            .filter(|b| m.node(b.node).parent == Some(node))
            .map(|b| b.shape.roof().1)
            .fold(0.0, f64::max);
        assert_eq!(from.y as f64, top as f32 as f64);
        let center = s
            .districts
            .iter()
            .find(|d| d.node == node)
            .unwrap()
            .rect
            .center();
        assert!((from.x as f64 - center.0).abs() < 1e-3 && (from.z as f64 - center.1).abs() < 1e-3);
        assert!(to.y > 0.0 && f.start_radius > 0.0 && f.end_radius > 0.0);
    }

    #[test]
    fn tooltip_shows_path_with_roles_and_numbers() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let text = tooltip(&m, a, 2, Metric::Objects);
        assert_eq!(
            text,
            "Package: p\n  Type: A\nobjects: 1,000   bytes: 15.6 KiB   growth: +990 objects"
        );
        assert!(
            tooltip(&m, m.find(&["p", "B"]).unwrap(), 2, Metric::Bytes).ends_with("growth: -160 B")
        );
    }

    #[test]
    fn tooltip_marks_estimates_with_their_errors() {
        let m = crate::timeline::tests::estimated_session(0);
        let leak = m.find(&["app", "Leak"]).unwrap();
        assert_eq!(
            tooltip(&m, leak, 3, Metric::Objects),
            "Package: app\n  Type: Leak\nobjects: ~260 ±40   bytes: ~4.1 KiB ±640 B   growth: ~+160 objects"
        );
        // The walk after it counted: plain numbers, exact growth from the first walk.
        assert_eq!(
            tooltip(&m, leak, 2, Metric::Bytes),
            "Package: app\n  Type: Leak\nobjects: 200   bytes: 3.1 KiB   growth: +1.6 KiB"
        );
        // An estimate without an error shows no `±`.
        let person = m.find(&["app", "Person"]).unwrap();
        assert!(tooltip(&m, person, 1, Metric::Objects)
            .ends_with("objects: ~50   bytes: ~800 B   growth: ~0 objects"));
        // Growth from an estimated start is rough even at a walk.
        let mut from_estimate = m.clone();
        from_estimate.set_window(Some(crate::model::Window { start: 1, end: 3 }));
        assert!(tooltip(&from_estimate, leak, 2, Metric::Objects)
            .ends_with("objects: 200   bytes: 3.1 KiB   growth: ~+50 objects"));
    }

    #[test]
    fn buildings_are_colored_by_the_growth_the_numbers_back() {
        let mut m = crate::timeline::tests::estimated_session(0);
        m.set_window(Some(crate::model::Window { start: 0, end: 3 }));
        let leak = m.find(&["app", "Leak"]).unwrap();
        let plan = layout(&m, &LayoutConfig::default());
        let color_at = |m: &CityModel, t: f64| {
            build(m, &plan, t, &ViewSettings::default(), None)
                .buildings
                .iter()
                .find(|b| b.node == leak)
                .unwrap()
                .color
        };
        let same_as_the_model = |m: &CityModel| {
            for index in 0..m.len() {
                let alpha = mapping::growth_alpha(m, leak, index, Metric::Objects);
                assert_eq!(
                    color_at(m, index as f64),
                    mapping::growth_color(alpha),
                    "snapshot {index}"
                );
            }
        };
        // 100 to ~260 ±40: 120 of the 160 is backed.
        same_as_the_model(&m);
        // At ~150 ±30 the rise of 50 backs 20 (the largest backed growth is 120), not 50.
        assert_eq!(color_at(&m, 1.0), mapping::growth_color(20.0 / 120.0));
        // All of the rise may be garbage no marking has seen: gray.
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 200, 3200);
        same_as_the_model(&m);
        assert_eq!(color_at(&m, 3.0), mapping::GRAY);
        // Between snapshots the doubt is tweened with the value.
        let halfway = color_at(&m, 2.5);
        assert_ne!(halfway, color_at(&m, 2.0));
        assert_ne!(halfway, mapping::GRAY);
    }

    #[test]
    fn a_buildings_doubt_is_the_share_of_its_value_the_numbers_cannot_back() {
        let mut m = crate::timeline::tests::estimated_session(0);
        let leak = m.find(&["app", "Leak"]).unwrap();
        let plan = layout(&m, &LayoutConfig::default());
        let at = |m: &CityModel, t: f64, view: &ViewSettings| {
            build(m, &plan, t, view, None)
                .buildings
                .into_iter()
                .find(|b| b.node == leak)
                .unwrap()
        };
        let view = ViewSettings::default();
        // A walk's count: nothing in doubt, no band.
        let walked = at(&m, 2.0, &view);
        assert_eq!((walked.doubt, walked.doubt_from()), (0.0, None));
        // ~260 ±40: the band is the top 40/260 of the height.
        let estimated = at(&m, 3.0, &view);
        assert!((estimated.doubt - 40.0 / 260.0).abs() < 1e-6);
        let b = &estimated.shape;
        let from = estimated.doubt_from().unwrap();
        assert!((from - (b.bottom + b.height * (1.0 - 40.0 / 260.0))).abs() < 1e-4);
        // Tweened with the value: ±20 of 230 halfway.
        assert!((at(&m, 2.5, &view).doubt - 20.0 / 230.0).abs() < 1e-6);
        // What may be garbage adds to it...
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 100, 1600);
        assert!((at(&m, 3.0, &view).doubt - 140.0 / 260.0).abs() < 1e-6);
        // ...up to the whole building.
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 1000, 16000);
        let all = at(&m, 3.0, &view);
        assert_eq!(all.doubt, 1.0);
        assert!((all.doubt_from().unwrap() - all.shape.bottom).abs() < 1e-9);
        // Off: none drawn; and a sliver is not drawn either.
        let off = ViewSettings {
            doubt: false,
            ..view
        };
        assert_eq!(at(&m, 3.0, &off).doubt_from(), None);
        let sliver = Building {
            doubt: MIN_DRAWN_DOUBT / 2.0,
            ..all
        };
        assert_eq!(sliver.doubt_from(), None);
    }

    #[test]
    fn tooltip_says_how_much_of_an_estimate_may_be_garbage() {
        let mut m = crate::timeline::tests::estimated_session(0);
        let leak = m.find(&["app", "Leak"]).unwrap();
        m.frames_mut_for_tests(3)
            .set_unconfirmed_for_tests(leak, 1_200, 19_200);
        assert!(tooltip(&m, leak, 3, Metric::Objects).ends_with(
            "growth: ~+160 objects\nup to 1,200 objects, 18.8 KiB may be garbage (no old-gen marking since)"
        ));
        // Nothing in doubt, no line.
        assert!(tooltip(&m, leak, 1, Metric::Objects).ends_with("objects"));
        assert_eq!(unconfirmed_line(0, 0), None);
    }

    #[test]
    fn selection_survives_relayout_because_it_is_a_node_id() {
        let m = sample();
        let a = m.find(&["p", "A"]).unwrap();
        let squarified = layout(&m, &LayoutConfig::default());
        let sliced = layout(
            &m,
            &LayoutConfig {
                tiling: crate::treemap::Tiling::Slice,
                ..Default::default()
            },
        );
        let s1 = build(&m, &squarified, 2.0, &ViewSettings::default(), Some(a));
        let s2 = build(&m, &sliced, 2.0, &ViewSettings::default(), Some(a));
        let selected = |s: &Scene| s.buildings.iter().find(|b| b.selected).map(|b| b.node);
        assert_eq!(selected(&s1), Some(a));
        assert_eq!(selected(&s2), Some(a));
        assert_ne!(
            s1.buildings
                .iter()
                .find(|b| b.node == a)
                .unwrap()
                .shape
                .base,
            s2.buildings
                .iter()
                .find(|b| b.node == a)
                .unwrap()
                .shape
                .base
        );
    }
}
