//! The details panel of a selected group: its numbers now and over time (the sparkline), its
//! estimated top allocation sites, and the references that lead into and out of it, each naming
//! the group at the other end so a click can follow the chain toward the root cause.

use crate::model::{CityModel, Metric, NodeId};
use crate::scene::reference_name;

/// Allocation sites listed at most.
pub const TOP_SITES: usize = 5;
/// References listed at most, each way.
pub const TOP_LINKS: usize = 5;

#[derive(Debug, Clone, PartialEq)]
pub struct Details {
    pub node: NodeId,
    pub name: String,
    /// Its role ("Type", "Package"), empty for the heap.
    pub role: String,
    /// The path below the heap, roles included, for the panel's second line.
    pub path: Vec<String>,
    /// At the snapshot shown.
    pub objects: u64,
    pub bytes: u64,
    /// From the growth window's first snapshot to the one shown, in the chosen metric.
    pub growth: i64,
    /// The chosen metric in every snapshot of the session (zero where the group is absent).
    pub series: Vec<u64>,
    /// The numbers below the group are estimates scaled from sampled allocations.
    pub estimated: bool,
    pub sites: Sites,
    /// What keeps this group alive (references into it), strongest first.
    pub incoming: Vec<Link>,
    /// What this group keeps alive (references out of it), strongest first.
    pub outgoing: Vec<Link>,
}

/// Where a type's objects were allocated, as far as the session knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Sites {
    /// The session has a site level below this type: the largest, in the chosen metric, with
    /// the share of the type each holds.
    Listed { sites: Vec<(String, u64)>, of: u64 },
    /// A type whose sessions has no site level (the agent ran without `site` in `classifiers`).
    NotClassified,
    /// Not a type, nor below one: sites do not apply.
    NotApplicable,
}

/// One reference map entry as seen from the selected group.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    /// The group at the other end, by its reference name (a type).
    pub name: String,
    /// A node of that group to select, if the city has one.
    pub node: Option<NodeId>,
    /// Distinct objects holding such references (exact), and references (an upper bound).
    pub referrers: u64,
    pub references: u64,
}

/// The node standing for a reference name: a `Type` of that name (the first found), else any
/// node of that name (Memory Cities JSON names groups by their full keys).
fn node_named(model: &CityModel, name: &str) -> Option<NodeId> {
    let nodes = model.nodes();
    let named = |want_type: bool| {
        (1..nodes.len())
            .find(|&i| nodes[i].name == name && (!want_type || nodes[i].role == "Type"))
            .map(|i| i as NodeId)
    };
    named(true).or_else(|| named(false))
}

/// The details of `node` at snapshot `index`.
pub fn details(model: &CityModel, node: NodeId, index: usize, metric: Metric) -> Details {
    let info = model.node(node);
    let sites = match model.nearest_type(node) {
        None => Sites::NotApplicable,
        Some(ty) => {
            let mut listed: Vec<(String, u64)> = model
                .node(ty)
                .children
                .iter()
                .filter(|&&c| model.node(c).role == "Allocation Site")
                .map(|&c| (model.node(c).name.clone(), model.value(c, index, metric)))
                .filter(|s| s.1 > 0)
                .collect();
            let has_level = model
                .node(ty)
                .children
                .iter()
                .any(|&c| model.node(c).role == "Allocation Site");
            if has_level {
                listed.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
                listed.truncate(TOP_SITES);
                Sites::Listed {
                    sites: listed,
                    of: model.value(ty, index, metric),
                }
            } else {
                Sites::NotClassified
            }
        }
    };

    let mut incoming = Vec::new();
    let mut outgoing = Vec::new();
    if let Some(frame) = model.frame(index) {
        let me = reference_name(model, node);
        for r in &frame.references {
            if r.from == r.to {
                continue; // a group holding itself (list nodes) leads nowhere new
            }
            let (list, other) = if r.to == me {
                (&mut incoming, &r.from)
            } else if r.from == me {
                (&mut outgoing, &r.to)
            } else {
                continue;
            };
            list.push(Link {
                name: other.clone(),
                node: node_named(model, other),
                referrers: r.referrers,
                references: r.references,
            });
        }
    }
    for list in [&mut incoming, &mut outgoing] {
        list.sort_by(|a, b| {
            b.referrers
                .cmp(&a.referrers)
                .then_with(|| a.name.cmp(&b.name))
        });
        list.truncate(TOP_LINKS);
    }

    Details {
        node,
        name: info.name.clone(),
        role: info.role.clone(),
        path: model.labeled_path(node),
        objects: model.value(node, index, Metric::Objects),
        bytes: model.value(node, index, Metric::Bytes),
        growth: model.relative_growth(node, index, metric),
        series: (0..model.len())
            .map(|i| model.value(node, i, metric))
            .collect(),
        estimated: info.estimated,
        sites,
        incoming,
        outgoing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tests::row;
    use crate::model::Reference;

    /// app -> LinkedList$Node (two sites) and Person, with Node -> Person references.
    fn model() -> CityModel {
        let mut m = CityModel::new();
        for (time, n) in [(0u64, 10u64), (1000, 100), (2000, 1000)] {
            let nodes = vec![
                row(&["app"], "Package", 2 * n + 5),
                row(&["app", "LinkedList$Node"], "Type", n),
                row(
                    &["app", "LinkedList$Node", "Leak.add:12"],
                    "Allocation Site",
                    n * 3 / 4,
                ),
                row(
                    &["app", "LinkedList$Node", "Leak.init:3"],
                    "Allocation Site",
                    n / 4,
                ),
                row(&["app", "Person"], "Type", n + 5),
            ];
            let refs = vec![
                Reference {
                    from: "LinkedList$Node".into(),
                    to: "Person".into(),
                    referrers: n,
                    references: n,
                },
                Reference {
                    from: "LinkedList$Node".into(),
                    to: "LinkedList$Node".into(),
                    referrers: n,
                    references: 2 * n,
                },
            ];
            m.push_tree(time, (2 * n + 5, (2 * n + 5) * 24), &nodes, refs);
        }
        m
    }

    #[test]
    fn a_type_shows_its_series_sites_and_what_it_keeps_alive() {
        let m = model();
        let node = m.find(&["app", "LinkedList$Node"]).unwrap();
        let d = details(&m, node, 2, Metric::Objects);
        assert_eq!(d.path, ["Package: app", "Type: LinkedList$Node"]);
        assert_eq!((d.objects, d.bytes, d.growth), (1000, 24_000, 990));
        assert_eq!(d.series, [10, 100, 1000]);
        assert_eq!(
            d.sites,
            Sites::Listed {
                sites: vec![("Leak.add:12".into(), 750), ("Leak.init:3".into(), 250)],
                of: 1000
            }
        );
        assert!(d.incoming.is_empty(), "the self reference is left out");
        let person = m.find(&["app", "Person"]).unwrap();
        assert_eq!(
            d.outgoing,
            [Link {
                name: "Person".into(),
                node: Some(person),
                referrers: 1000,
                references: 1000
            }]
        );
        // Following the chain: Person is kept alive by the list nodes.
        let p = details(&m, person, 1, Metric::Bytes);
        assert_eq!(p.incoming[0].node, Some(node));
        assert_eq!(p.incoming[0].referrers, 100);
        assert_eq!(p.sites, Sites::NotClassified);
        assert_eq!(p.series, [15 * 24, 105 * 24, 1005 * 24]);
    }

    #[test]
    fn a_site_lists_its_siblings_and_a_package_has_none() {
        let m = model();
        let site = m.find(&["app", "LinkedList$Node", "Leak.init:3"]).unwrap();
        let d = details(&m, site, 0, Metric::Objects);
        match d.sites {
            Sites::Listed { sites, of } => {
                assert_eq!(of, 10);
                assert_eq!(sites[0], ("Leak.add:12".to_string(), 7));
            }
            other => panic!("{other:?}"),
        }
        // A site's references are its type's.
        assert_eq!(d.outgoing[0].name, "Person");
        let app = m.find(&["app"]).unwrap();
        assert_eq!(
            details(&m, app, 2, Metric::Objects).sites,
            Sites::NotApplicable
        );
    }
}
