//! The hive plot of allocation and death contexts (shared/papers/allocation-and-death-plots.txt,
//! after Krzywinski's hive plots), as geometry in a unit square with y down, as the screen has it.
//!
//! The paper's rules: contexts that only allocate sit on the north axis, those where objects only
//! die on the west axis, those that do both on the south axis, cloned as the east axis. So an
//! edge always leaves a vertical axis (its allocation end) for a horizontal one (its death end),
//! and its direction needs no arrow: north or south to west or east. Self edges (objects that
//! die in the class that made them) run south to east, green; others gray. Classes of a package
//! share a colour and sit together on their axis. A plot with too many edges splits into panels
//! by the in-degree of the death context, as the paper's figures do.

use std::collections::{BTreeSet, HashMap};

use crate::mapping::Rgb;

/// The plot's centre, and where its axes begin and end, as distances from it.
pub const CENTER: (f32, f32) = (0.5, 0.5);
pub const INNER: f32 = 0.08;
pub const OUTER: f32 = 0.46;
/// Edges of self contexts (allocated and last held by one class) and of the others.
pub const SELF_EDGE: Rgb = [0.15, 0.72, 0.25];
pub const OTHER_EDGE: Rgb = [0.55, 0.55, 0.55];
/// Most panels a plot splits into (the paper's four in-degree bands).
pub const MAX_PANELS: usize = 4;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Axis {
    North,
    West,
    South,
    East,
}

impl Axis {
    /// The axis's direction from the centre (y down).
    pub fn direction(self) -> (f32, f32) {
        match self {
            Axis::North => (0.0, -1.0),
            Axis::West => (-1.0, 0.0),
            Axis::South => (0.0, 1.0),
            Axis::East => (1.0, 0.0),
        }
    }
}

/// What a context is in the plot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// Objects are allocated there, none die there: the north axis.
    Allocation,
    /// Objects die there, none are allocated there: the west axis.
    Death,
    /// Both: the south axis, and its clone, the east axis.
    Both,
}

impl Role {
    /// Where the context's edges leave from (it allocated their objects).
    pub fn source_axis(self) -> Axis {
        match self {
            Role::Allocation => Axis::North,
            _ => Axis::South,
        }
    }

    /// Where the context's edges arrive (their objects died there).
    pub fn target_axis(self) -> Axis {
        match self {
            Role::Death => Axis::West,
            _ => Axis::East,
        }
    }

    /// The axes the context is drawn on.
    pub fn axes(self) -> &'static [Axis] {
        match self {
            Role::Allocation => &[Axis::North],
            Role::Death => &[Axis::West],
            Role::Both => &[Axis::South, Axis::East],
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub name: String,
    /// Index into [`Hive::packages`]: its colour.
    pub package: usize,
    pub role: Role,
    /// Where on its axes, from 0 (inner end) to 1 (outer end).
    pub t: f32,
    /// Objects allocated here that died (anywhere), and that died here.
    pub out_objects: f64,
    pub in_objects: f64,
    /// Allocation contexts whose objects died here.
    pub in_degree: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// Indices into [`Hive::nodes`]: the allocation context and the death context.
    pub from: usize,
    pub to: usize,
    pub objects: f64,
    /// Index into [`Hive::panels`].
    pub panel: usize,
}

impl Edge {
    pub fn is_self(&self) -> bool {
        self.from == self.to
    }

    pub fn color(&self) -> Rgb {
        if self.is_self() {
            SELF_EDGE
        } else {
            OTHER_EDGE
        }
    }
}

/// Edges whose death context has an in-degree within `min_in_degree..=max_in_degree`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Panel {
    pub min_in_degree: usize,
    pub max_in_degree: usize,
    pub edges: usize,
}

impl Panel {
    pub fn label(&self) -> String {
        if self.min_in_degree == self.max_in_degree {
            format!("in-degree {}", self.min_in_degree)
        } else {
            format!("in-degree {}-{}", self.min_in_degree, self.max_in_degree)
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct Hive {
    pub nodes: Vec<Node>,
    pub edges: Vec<Edge>,
    /// Package names, sorted; a node's colour is its package's.
    pub packages: Vec<String>,
    /// At least one when there are edges.
    pub panels: Vec<Panel>,
}

/// A class's package: up to its last dot. memcity's own contexts ("(died unseen)") and classes
/// of the default package are their own.
pub fn package_of(class: &str) -> &str {
    if class.starts_with('(') {
        return class;
    }
    class.rsplit_once('.').map_or("", |(package, _)| package)
}

/// The colour of package `index`: hues a golden angle apart, so neighbours differ, the first
/// blue (green is for self edges).
pub fn package_color(index: usize) -> Rgb {
    let hue = (0.6 + index as f32 * 0.381_966).fract() * 6.0;
    let (s, v) = (0.6, 0.9);
    let f = hue.fract();
    let (p, q, t) = (v * (1.0 - s), v * (1.0 - s * f), v * (1.0 - s * (1.0 - f)));
    match hue as u32 {
        0 => [v, t, p],
        1 => [q, v, p],
        2 => [p, v, t],
        3 => [p, q, v],
        4 => [t, p, v],
        _ => [v, p, q],
    }
}

/// The point at `t` (0 inner end, 1 outer end) of an axis.
pub fn axis_point(axis: Axis, t: f32) -> (f32, f32) {
    let r = INNER + (OUTER - INNER) * t;
    let (dx, dy) = axis.direction();
    (CENTER.0 + dx * r, CENTER.1 + dy * r)
}

/// An edge as a polyline of `segments` pieces: a quadratic Bézier whose control point is on the
/// bisector of the two axes at the ends' mean distance from the centre, so an edge bows around
/// the centre between its axes, as hive plots draw them.
pub fn edge_curve(from: (f32, f32), to: (f32, f32), segments: usize) -> Vec<(f32, f32)> {
    let rel = |p: (f32, f32)| (p.0 - CENTER.0, p.1 - CENTER.1);
    let (a, b) = (rel(from), rel(to));
    let (ra, rb) = (a.0.hypot(a.1), b.0.hypot(b.1));
    let unit = |v: (f32, f32), r: f32| {
        if r > 0.0 {
            (v.0 / r, v.1 / r)
        } else {
            (0.0, 0.0)
        }
    };
    let (ua, ub) = (unit(a, ra), unit(b, rb));
    let bisector = (ua.0 + ub.0, ua.1 + ub.1);
    let bisector = unit(bisector, bisector.0.hypot(bisector.1));
    let r = (ra + rb) / 2.0;
    let control = (CENTER.0 + bisector.0 * r, CENTER.1 + bisector.1 * r);
    let segments = segments.max(1);
    (0..=segments)
        .map(|i| {
            let s = i as f32 / segments as f32;
            let (wa, wc, wb) = ((1.0 - s) * (1.0 - s), 2.0 * s * (1.0 - s), s * s);
            (
                wa * from.0 + wc * control.0 + wb * to.0,
                wa * from.1 + wc * control.1 + wb * to.1,
            )
        })
        .collect()
}

impl Hive {
    /// The plot of `(allocation context, death context, objects)` edges; past `max_edges` per
    /// panel, split into panels (at most [`MAX_PANELS`]) by the death context's in-degree, each
    /// in-degree whole in one panel. A node keeps its place in every panel, so panels compare.
    pub fn build<'a>(
        pairs: impl IntoIterator<Item = (&'a str, &'a str, f64)>,
        max_edges: usize,
    ) -> Hive {
        let mut ids: HashMap<&str, usize> = HashMap::new();
        let mut names: Vec<&str> = Vec::new();
        let mut id = |name: &'a str, names: &mut Vec<&'a str>| {
            *ids.entry(name).or_insert_with(|| {
                names.push(name);
                names.len() - 1
            })
        };
        let mut raw: Vec<(usize, usize, f64)> = Vec::new();
        for (from, to, objects) in pairs {
            let (from, to) = (id(from, &mut names), id(to, &mut names));
            raw.push((from, to, objects));
        }
        let packages: Vec<String> = names
            .iter()
            .map(|n| package_of(n).to_string())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut nodes: Vec<Node> = names
            .iter()
            .map(|name| Node {
                name: name.to_string(),
                package: packages
                    .binary_search_by(|p| p.as_str().cmp(package_of(name)))
                    .unwrap_or(0),
                role: Role::Allocation,
                t: 0.0,
                out_objects: 0.0,
                in_objects: 0.0,
                in_degree: 0,
            })
            .collect();
        let (mut allocates, mut dies) = (vec![false; nodes.len()], vec![false; nodes.len()]);
        for &(from, to, objects) in &raw {
            allocates[from] = true;
            dies[to] = true;
            nodes[from].out_objects += objects;
            nodes[to].in_objects += objects;
        }
        let sources: BTreeSet<(usize, usize)> = raw.iter().map(|&(f, t, _)| (t, f)).collect();
        for &(to, _) in &sources {
            nodes[to].in_degree += 1;
        }
        for (i, node) in nodes.iter_mut().enumerate() {
            node.role = match (allocates[i], dies[i]) {
                (true, true) => Role::Both,
                (false, true) => Role::Death,
                _ => Role::Allocation,
            };
        }
        // Along each axis: by package, then by name, evenly spaced.
        let mut by_role: HashMap<Role, Vec<usize>> = HashMap::new();
        for (i, node) in nodes.iter().enumerate() {
            by_role.entry(node.role).or_default().push(i);
        }
        for members in by_role.values_mut() {
            members.sort_by(|&a, &b| {
                (nodes[a].package, &nodes[a].name).cmp(&(nodes[b].package, &nodes[b].name))
            });
            let n = members.len() as f32;
            for (k, &i) in members.iter().enumerate() {
                nodes[i].t = (k as f32 + 0.5) / n;
            }
        }
        let panels = panels(&raw, &nodes, max_edges);
        let edges = raw
            .into_iter()
            .map(|(from, to, objects)| Edge {
                from,
                to,
                objects,
                panel: panels
                    .iter()
                    .position(|p| nodes[to].in_degree <= p.max_in_degree)
                    .unwrap_or(0),
            })
            .collect();
        Hive {
            nodes,
            edges,
            packages,
            panels,
        }
    }

    /// Where an edge leaves its allocation context.
    pub fn source(&self, edge: &Edge) -> (f32, f32) {
        let node = &self.nodes[edge.from];
        axis_point(node.role.source_axis(), node.t)
    }

    /// Where an edge reaches its death context.
    pub fn target(&self, edge: &Edge) -> (f32, f32) {
        let node = &self.nodes[edge.to];
        axis_point(node.role.target_axis(), node.t)
    }

    /// The node drawn within `radius` of `(x, y)`, the nearest one; among the edges of `panel`
    /// only, when given.
    pub fn pick(&self, x: f32, y: f32, radius: f32, panel: Option<usize>) -> Option<usize> {
        let shown = |i: usize| {
            panel.is_none_or(|p| {
                self.edges
                    .iter()
                    .any(|e| e.panel == p && (e.from == i || e.to == i))
            })
        };
        self.nodes
            .iter()
            .enumerate()
            .filter(|&(i, _)| shown(i))
            .flat_map(|(i, node)| {
                node.role
                    .axes()
                    .iter()
                    .map(move |&axis| (i, axis_point(axis, node.t)))
            })
            .map(|(i, p)| (i, (p.0 - x).hypot(p.1 - y)))
            .filter(|&(_, d)| d <= radius)
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .map(|(i, _)| i)
    }
}

/// Panels by the death contexts' in-degree, ascending: one when the edges fit `max_edges`,
/// else as many as it takes (at most [`MAX_PANELS`]), cut where the edges so far reach each
/// panel's even share.
fn panels(raw: &[(usize, usize, f64)], nodes: &[Node], max_edges: usize) -> Vec<Panel> {
    if raw.is_empty() {
        return Vec::new();
    }
    let mut by_degree: std::collections::BTreeMap<usize, usize> = Default::default();
    for &(_, to, _) in raw {
        *by_degree.entry(nodes[to].in_degree).or_default() += 1;
    }
    let wanted = raw
        .len()
        .div_ceil(max_edges.max(1))
        .clamp(1, MAX_PANELS)
        .min(by_degree.len());
    let share = raw.len() as f64 / wanted as f64;
    let mut out: Vec<Panel> = Vec::new();
    let mut open: Option<Panel> = None;
    let mut so_far = 0;
    for (&degree, &edges) in &by_degree {
        let panel = open.get_or_insert(Panel {
            min_in_degree: degree,
            max_in_degree: degree,
            edges: 0,
        });
        panel.max_in_degree = degree;
        panel.edges += edges;
        so_far += edges;
        let cut = (out.len() + 1) as f64 * share;
        if so_far as f64 >= cut - 1e-9 && out.len() + 1 < wanted {
            out.extend(open.take());
        }
    }
    out.extend(open);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: (f32, f32), b: (f32, f32)) -> bool {
        (a.0 - b.0).abs() < 1e-6 && (a.1 - b.1).abs() < 1e-6
    }

    /// `app.Main` only allocates, `app.Cache` only holds last, `app.Worker` does both, `lib.Pool`
    /// only allocates.
    fn sample() -> Hive {
        Hive::build(
            [
                ("app.Main", "app.Cache", 10.0),
                ("app.Main", "app.Worker", 5.0),
                ("app.Worker", "app.Worker", 7.0),
                ("app.Worker", "app.Cache", 3.0),
                ("lib.Pool", "app.Cache", 1.0),
            ],
            100,
        )
    }

    #[test]
    fn contexts_go_to_the_axes_of_their_roles() {
        let hive = sample();
        let role = |name: &str| hive.nodes.iter().find(|n| n.name == name).unwrap().role;
        assert_eq!(role("app.Main"), Role::Allocation);
        assert_eq!(role("lib.Pool"), Role::Allocation);
        assert_eq!(role("app.Cache"), Role::Death);
        assert_eq!(role("app.Worker"), Role::Both);
        let axes: Vec<(Axis, Axis, bool)> = hive
            .edges
            .iter()
            .map(|e| {
                (
                    hive.nodes[e.from].role.source_axis(),
                    hive.nodes[e.to].role.target_axis(),
                    e.is_self(),
                )
            })
            .collect();
        assert_eq!(
            axes,
            [
                (Axis::North, Axis::West, false),
                (Axis::North, Axis::East, false),
                (Axis::South, Axis::East, true),
                (Axis::South, Axis::West, false),
                (Axis::North, Axis::West, false),
            ]
        );
        assert_eq!(hive.edges[2].color(), SELF_EDGE);
        assert_eq!(hive.edges[0].color(), OTHER_EDGE);
        let cache = hive.nodes.iter().find(|n| n.name == "app.Cache").unwrap();
        assert_eq!((cache.in_degree, cache.in_objects), (3, 14.0));
    }

    #[test]
    fn an_axis_orders_its_contexts_by_package_then_name() {
        let hive = sample();
        assert_eq!(hive.packages, ["app", "lib"]);
        let node = |name: &str| hive.nodes.iter().find(|n| n.name == name).unwrap();
        // North holds app.Main then lib.Pool, at the middles of two halves.
        assert_eq!((node("app.Main").t, node("lib.Pool").t), (0.25, 0.75));
        assert_eq!(node("app.Main").package, 0);
        assert_eq!(node("lib.Pool").package, 1);
        assert_eq!(node("app.Cache").t, 0.5);
        assert_eq!(package_of("(died unseen)"), "(died unseen)");
        assert_eq!(package_of("Main"), "");
        assert_eq!(package_of("a.b.C$D"), "a.b");
    }

    #[test]
    fn ends_sit_on_their_axes_and_curves_bow_between_them() {
        assert!(close(axis_point(Axis::North, 0.0), (0.5, 0.5 - INNER)));
        assert!(close(axis_point(Axis::North, 1.0), (0.5, 0.5 - OUTER)));
        assert!(close(axis_point(Axis::West, 1.0), (0.5 - OUTER, 0.5)));
        assert!(close(axis_point(Axis::South, 0.5), (0.5, 0.5 + 0.27)));
        assert!(close(axis_point(Axis::East, 0.0), (0.5 + INNER, 0.5)));
        let hive = sample();
        let main_to_cache = &hive.edges[0];
        assert!(close(
            hive.source(main_to_cache),
            axis_point(Axis::North, 0.25)
        ));
        assert!(close(
            hive.target(main_to_cache),
            axis_point(Axis::West, 0.5)
        ));
        let self_edge = &hive.edges[2];
        assert!(close(hive.source(self_edge), axis_point(Axis::South, 0.5)));
        assert!(close(hive.target(self_edge), axis_point(Axis::East, 0.5)));
        // North 0.2 away to West 0.2 away: the control point is 0.2 out on the north-west
        // bisector, and the curve's middle halfway between the chord's middle and it.
        let (a, b) = ((0.5, 0.3), (0.3, 0.5));
        let curve = edge_curve(a, b, 2);
        assert_eq!(curve.len(), 3);
        assert!(close(curve[0], a) && close(curve[2], b));
        let c = 0.2 / 2f32.sqrt();
        let control = (0.5 - c, 0.5 - c);
        let expected = (
            0.25 * a.0 + 0.5 * control.0 + 0.25 * b.0,
            0.25 * a.1 + 0.5 * control.1 + 0.25 * b.1,
        );
        assert!(close(curve[1], expected), "{:?} {expected:?}", curve[1]);
    }

    #[test]
    fn dense_plots_split_by_the_death_contexts_in_degree() {
        assert_eq!(sample().panels.len(), 1);
        // Death context Dk has in-degree k (k = 1..=4): 10 edges.
        let names: Vec<(String, String)> = (1..=4)
            .flat_map(|k| (0..k).map(move |i| (format!("a.A{i}"), format!("d.D{k}"))))
            .collect();
        let pairs = || names.iter().map(|(a, d)| (a.as_str(), d.as_str(), 1.0));
        let hive = Hive::build(pairs(), 5);
        let labels: Vec<(String, usize)> =
            hive.panels.iter().map(|p| (p.label(), p.edges)).collect();
        assert_eq!(
            labels,
            [
                ("in-degree 1-3".to_string(), 6),
                ("in-degree 4".to_string(), 4)
            ]
        );
        let d4 = hive.nodes.iter().position(|n| n.name == "d.D4").unwrap();
        assert!(hive.edges.iter().all(|e| (e.panel == 1) == (e.to == d4)));
        // No more panels than the paper's four, however dense.
        let many: Vec<(String, String)> = (1..=12)
            .flat_map(|k| (0..k).map(move |i| (format!("a.A{i}"), format!("d.D{k}"))))
            .collect();
        let dense = Hive::build(many.iter().map(|(a, d)| (a.as_str(), d.as_str(), 1.0)), 1);
        assert_eq!(dense.panels.len(), MAX_PANELS);
        assert_eq!(dense.panels.iter().map(|p| p.edges).sum::<usize>(), 78);
        assert!(Hive::build([], 5).panels.is_empty());
    }

    #[test]
    fn picking_finds_the_nearest_context_on_any_of_its_axes() {
        let hive = sample();
        let worker = hive
            .nodes
            .iter()
            .position(|n| n.name == "app.Worker")
            .unwrap();
        let (x, y) = axis_point(Axis::East, 0.5);
        assert_eq!(hive.pick(x + 0.005, y, 0.02, None), Some(worker));
        let (x, y) = axis_point(Axis::South, 0.5);
        assert_eq!(hive.pick(x, y - 0.01, 0.02, None), Some(worker));
        assert_eq!(hive.pick(0.5, 0.5, 0.02, None), None);
    }

    #[test]
    fn package_colours_differ() {
        let colors: Vec<Rgb> = (0..6).map(package_color).collect();
        for (i, a) in colors.iter().enumerate() {
            for b in &colors[i + 1..] {
                let d: f32 = a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum();
                assert!(d > 0.1, "{a:?} {b:?}");
            }
        }
    }
}
