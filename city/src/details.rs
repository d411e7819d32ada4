//! The details panel of a selected group: its numbers now and over time (the sparkline), its
//! estimated top allocation sites, and the references that lead into and out of it, each naming
//! the group at the other end so a click can follow the chain toward the root cause.

use crate::leak::Suspect;
use crate::model::{CityModel, Metric, NodeId, Role};
use crate::timeline::{self, Anchor, Basis};
use crate::units;

/// Allocation sites listed at most.
pub const TOP_SITES: usize = 5;
/// References listed at most, each way.
pub const TOP_LINKS: usize = 5;

#[derive(Debug, Clone, PartialEq)]
pub struct Details {
    pub node: NodeId,
    pub name: String,
    /// Its role (`Role::Type`, `Role::Package`), `Role::Unclassified` for the heap.
    pub role: Role,
    /// The path below the heap, roles included, for the panel's second line.
    pub path: Vec<String>,
    /// At the snapshot shown.
    pub objects: u64,
    pub bytes: u64,
    /// What the group keeps alive (its retained bytes), for a snapshot read from a heap dump.
    pub retained: Option<u64>,
    /// From the growth window's first snapshot to the one shown, in the chosen metric.
    pub growth: i64,
    /// The chosen metric in every snapshot of the session (zero where the group is absent).
    pub series: Vec<u64>,
    /// The numbers below the group are estimates scaled from sampled allocations.
    pub estimated: bool,
    /// `(objects, bytes)` of the numbers shown that no old-generation marking has confirmed:
    /// possibly garbage (see `units::unconfirmed_line`).
    pub unconfirmed: (u64, u64),
    pub sites: Sites,
    /// What keeps this group alive (references into it), strongest first.
    pub incoming: Vec<Link>,
    /// What this group keeps alive (references out of it), strongest first.
    pub outgoing: Vec<Link>,
    /// The leak suspect whose trace passes through this group's type, if any: from its GC root
    /// down, each step a link.
    pub trace: Option<Trace>,
}

/// A leak suspect's trace as the panel shows it (see `leak::Suspect`).
#[derive(Debug, Clone, PartialEq)]
pub struct Trace {
    /// `static LinkedListLeak.PEOPLE`, or empty when no root was found.
    pub root: String,
    pub confidence: &'static str,
    /// False while the rise may be garbage no walk or old marking has checked
    /// (`Suspect::confirmed`).
    pub confirmed: bool,
    pub steps: Vec<TraceStep>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// `.first java.util.LinkedList$Node`: the field from the step above, and the type.
    pub label: String,
    pub type_name: String,
    /// The holder (the accumulation point).
    pub holder: bool,
    pub node: Option<NodeId>,
    /// Reached through the suspect reference.
    pub suspect: bool,
    /// A collection's internals.
    pub content: bool,
    pub growth: i64,
}

/// The trace of the first suspect that passes through `type_name`.
pub fn trace_through(model: &CityModel, suspects: &[Suspect], type_name: &str) -> Option<Trace> {
    let s = suspects.iter().find(|s| {
        s.steps.iter().any(|t| t.type_name == type_name) || s.leaking.iter().any(|l| l == type_name)
    })?;
    Some(Trace {
        root: format!(
            "{}{}",
            s.root_name(),
            crate::leak::roots::more_threads(s.root_name(), s.co_holders.len())
        ),
        confidence: s.confidence.label(),
        confirmed: s.confirmed,
        steps: s
            .steps
            .iter()
            .map(|t| TraceStep {
                label: if t.field.is_empty() {
                    t.type_name.clone()
                } else {
                    format!(".{} {}", t.field, t.type_name)
                },
                node: model.node_named(&t.type_name),
                type_name: t.type_name.clone(),
                holder: t.type_name == s.holder,
                suspect: t.suspect,
                content: t.content,
                growth: t.growth,
            })
            .collect(),
    })
}

/// Where a type's objects were allocated, as far as the session knows.
#[derive(Debug, Clone, PartialEq)]
pub enum Sites {
    /// The session has a site level below this type: the largest, in the chosen metric, with
    /// the share of the type each holds.
    /// `estimated`: the site shares come from allocation samples (the agent's sessions), not a
    /// trace of every allocation (Memory Cities' JSON exports).
    Listed {
        sites: Vec<(String, u64)>,
        of: u64,
        estimated: bool,
    },
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

/// The details of `node` at snapshot `index`. `suspects`: the window's leak suspects
/// (`leak::suspects::suspects`), computed once by the caller; the panel shows the trace through this
/// group's type.
pub fn details(
    model: &CityModel,
    node: NodeId,
    index: usize,
    metric: Metric,
    suspects: &[Suspect],
) -> Details {
    let info = model.node(node);
    let sites = match model.nearest_type(node) {
        None => Sites::NotApplicable,
        Some(ty) => {
            let has_level = model
                .node(ty)
                .children
                .iter()
                .any(|&c| model.node(c).role == Role::AllocationSite);
            if has_level {
                Sites::Listed {
                    sites: model.top_sites(&[ty], index, metric, TOP_SITES),
                    of: model.value(ty, index, metric),
                    estimated: model
                        .frame(index)
                        .and_then(|f| f.exactness.as_ref())
                        .is_some_and(|e| e.sites_estimated),
                }
            } else {
                Sites::NotClassified
            }
        }
    };

    let mut incoming = Vec::new();
    let mut outgoing = Vec::new();
    if let Some(frame) = model.frame(index) {
        let me = model.reference_name(node);
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
                node: model.node_named(other),
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
        retained: model.retained(node, index),
        growth: model.relative_growth(node, index, metric),
        unconfirmed: model.frame(index).map_or((0, 0), |f| f.unconfirmed(node)),
        series: (0..model.len())
            .map(|i| model.value(node, i, metric))
            .collect(),
        estimated: info.estimated,
        sites,
        incoming,
        outgoing,
        trace: model
            .nearest_type(node)
            .and_then(|ty| trace_through(model, suspects, &model.node(ty).name)),
    }
}

/// How much the panel's numbers can be trusted: their errors where the snapshot shown estimates
/// them, and which walk its references come from (an estimate counts no references of its own).
#[derive(Debug, Clone, PartialEq)]
pub struct Accuracy {
    /// 95 % half-widths of `Details::objects` and `bytes` when they are estimates (0 when the
    /// agent gave none); `None` when counted.
    pub error: Option<(u64, u64)>,
    /// What the snapshot shown rests on.
    pub basis: Basis,
}

/// The accuracy of `node`'s details at snapshot `index`.
pub fn accuracy(model: &CityModel, node: NodeId, index: usize) -> Accuracy {
    Accuracy {
        error: model.frame(index).and_then(|f| f.estimate(node)),
        basis: timeline::basis(model, index).unwrap_or(Basis::Walk),
    }
}

impl Accuracy {
    /// The panel's numbers line: `1,000 objects   15.6 KiB`, estimates as `~n ±e`.
    pub fn numbers(&self, d: &Details) -> String {
        let (objects, bytes) = units::numbers(d.objects, d.bytes, self.error);
        let noun = if d.objects == 1 { "object" } else { "objects" };
        match d.retained {
            Some(kept) => format!(
                "{objects} {noun}   {bytes}   keeps {} alive",
                units::bytes(kept)
            ),
            None => format!("{objects} {noun}   {bytes}"),
        }
    }

    /// Where the references listed come from, for their headings: an estimate's are its
    /// anchor walk's, which may be well in the past.
    fn walk(&self) -> Option<String> {
        match self.basis {
            Basis::Estimate(Anchor::Snapshot(index)) => {
                Some(format!("walk of snapshot {}", index + 1))
            }
            Basis::Estimate(Anchor::Earlier(_)) => Some("an earlier walk".to_string()),
            Basis::Estimate(Anchor::Unanchored) | Basis::Walk | Basis::Dump => None,
        }
    }

    pub fn incoming_heading(&self) -> String {
        match self.walk() {
            Some(walk) => format!("Kept alive by ({walk}; click to follow)"),
            None => "Kept alive by (click to follow)".to_string(),
        }
    }

    pub fn outgoing_heading(&self) -> String {
        match self.walk() {
            Some(walk) => format!("Keeps alive ({walk})"),
            None => "Keeps alive (what it references)".to_string(),
        }
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
        let d = details(&m, node, 2, Metric::Objects, &[]);
        assert_eq!(d.path, ["Package: app", "Type: LinkedList$Node"]);
        assert_eq!((d.objects, d.bytes, d.growth), (1000, 24_000, 990));
        assert_eq!(d.series, [10, 100, 1000]);
        assert_eq!(
            d.sites,
            Sites::Listed {
                sites: vec![("Leak.add:12".into(), 750), ("Leak.init:3".into(), 250)],
                of: 1000,
                // Trees pushed directly carry no exactness: nothing says they are samples.
                estimated: false
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
        let p = details(&m, person, 1, Metric::Bytes, &[]);
        assert_eq!(p.incoming[0].node, Some(node));
        assert_eq!(p.incoming[0].referrers, 100);
        assert_eq!(p.sites, Sites::NotClassified);
        assert_eq!(p.series, [15 * 24, 105 * 24, 1005 * 24]);
    }

    #[test]
    fn a_site_lists_its_siblings_and_a_package_has_none() {
        let m = model();
        let site = m.find(&["app", "LinkedList$Node", "Leak.init:3"]).unwrap();
        let d = details(&m, site, 0, Metric::Objects, &[]);
        match d.sites {
            Sites::Listed { sites, of, .. } => {
                assert_eq!(of, 10);
                assert_eq!(sites[0], ("Leak.add:12".to_string(), 7));
            }
            other => panic!("{other:?}"),
        }
        // A site's references are its type's.
        assert_eq!(d.outgoing[0].name, "Person");
        let app = m.find(&["app"]).unwrap();
        assert_eq!(
            details(&m, app, 2, Metric::Objects, &[]).sites,
            Sites::NotApplicable
        );
    }

    #[test]
    fn an_estimate_shows_its_errors_and_the_walk_of_its_references() {
        let m = crate::timeline::tests::estimated_session(0);
        let leak = m.find(&["app", "Leak"]).unwrap();
        let d = details(&m, leak, 3, Metric::Objects, &[]);
        let a = accuracy(&m, leak, 3);
        assert_eq!(a.error, Some((40, 640)));
        assert_eq!(a.numbers(&d), "~260 ±40 objects   ~4.1 KiB ±640 B");
        // The estimate lists the references its anchor walk (snapshot 3) counted.
        assert_eq!(d.outgoing[0].referrers, 200);
        assert_eq!(a.outgoing_heading(), "Keeps alive (walk of snapshot 3)");
        assert_eq!(
            a.incoming_heading(),
            "Kept alive by (walk of snapshot 3; click to follow)"
        );
        // At a walk: plain numbers and headings.
        let walk = accuracy(&m, leak, 2);
        assert_eq!(
            walk,
            Accuracy {
                error: None,
                basis: Basis::Walk
            }
        );
        assert_eq!(
            walk.numbers(&details(&m, leak, 2, Metric::Objects, &[])),
            "200 objects   3.1 KiB"
        );
        // The outgoing list holds what the group references, not its holders.
        assert_eq!(walk.outgoing_heading(), "Keeps alive (what it references)");
        assert_eq!(walk.incoming_heading(), "Kept alive by (click to follow)");
        // A viewer that joined after the walk cannot number it.
        let late = crate::timeline::tests::estimated_session(1);
        let late_leak = late.find(&["app", "Leak"]).unwrap();
        assert_eq!(
            accuracy(&late, late_leak, 0).incoming_heading(),
            "Kept alive by (an earlier walk; click to follow)"
        );
    }
}
