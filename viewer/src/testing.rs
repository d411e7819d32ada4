//! Sessions for the viewer's unit tests, made from the groups each snapshot holds.

use memcity_city::model::{CityModel, Reference};

/// A leak over three snapshots a second apart: `app.Node` grows from 100 to 500 to 900
/// objects, all from its site `a()`, while `app.String` stays at 400; every snapshot holds
/// `references`.
pub fn leak(references: Vec<Reference>) -> CityModel {
    let mut m = CityModel::new();
    for (time, node) in [(0u64, 100u64), (1000, 500), (2000, 900)] {
        let row = |path: &[&str], role: &str, n: u64| {
            (
                path.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
                role.to_string(),
                n,
                n * 24,
            )
        };
        let nodes = vec![
            row(&["app"], "Package", node + 400),
            row(&["app", "Node"], "Type", node),
            row(&["app", "Node", "a()"], "Site", node),
            row(&["app", "String"], "Type", 400),
        ];
        m.push_tree(
            time,
            (node + 400, (node + 400) * 24),
            &nodes,
            references.clone(),
        );
    }
    m
}
