//! Who holds a growing type, from object-level paths (the agent's `PathTree`), window-free.
//!
//! The agent merges the paths from GC roots to live sampled objects into a tree whose nodes are
//! objects (or chains of one type, `LinkedList$Node` x n). For one growing type this module
//! follows MAT's leak suspects (`FindLeaksQuery` over merged paths): weigh every node by the
//! samples of that type below it, descend from the roots while one child holds
//! `DESCEND_SHARE` of its parent's weight, and name the deepest such node, the accumulation
//! point. A collection's insides (a `HashMap$Node[]`, a chain of `LinkedList$Node`, the
//! `Object[]` of an `ArrayList`) are not where a fix goes: the holder climbs to the collection
//! that owns them. The holder is an instance: two `LinkedList`s are two nodes, so the
//! application's list and JFR's are never joined.
//!
//! Confidence says what the samples back: *exact* when one root's branch holds
//! `DESCEND_SHARE` of the type's paths (and there are `MIN_SAMPLES` of them), *likely* when the
//! paths split and the named branch holds most, else *ambiguous*; a split names the other
//! branches with their shares. Threads of one family holding the same structure (a pool's
//! threads, each with a thread-local list) are co-holders, not rivals.

use std::collections::HashMap;

use crate::leak::evidence::{Alternative, Confidence};
use crate::leak::paths::Paths;
use crate::leak::roots::RootRef;
use crate::names::thread_family;

/// One root's branch (and each step below) must hold this share of its parent's weight for the
/// descent to go on (MAT's leak suspects use 80 %).
pub const DESCEND_SHARE: f64 = 0.8;

/// New samples (of all growing types together) that make a growth's own evidence.
pub const GROWTH_SAMPLES: u64 = 20;

/// Fewer samples through a holder than this name it with no confidence.
pub const MIN_SAMPLES: u64 = 5;

/// The descent enters only nodes shared by at least this many sampled paths: one path alone
/// says nothing of where paths part (it would lead to the sample's own parent).
pub const SHARED_BY: u64 = 2;

/// A split's largest branch names the holder as *likely* from this share.
pub const LIKELY_SHARE: f64 = 0.5;

/// A same-family thread holding this share of the named root's counted objects is a co-holder.
pub const CO_HOLDER_SHARE: f64 = 0.25;

/// Steps shown below a holder at most.
const MAX_BELOW: usize = 12;

/// Roots' branches holding at least this share of the growing types' weight are searched for
/// holders of their own (the heaviest always is).
pub const BRANCH_SHARE: f64 = 0.1;

impl Paths {
    /// Per node, the weight of the sampled objects of `types` in its subtree, and their count,
    /// counting only the samples taken from each type's second on (see `Paths::leaks`).
    fn weights(&self, types: &[&str]) -> (Vec<f64>, Vec<u64>) {
        let n = self.nodes.len();
        let mut weight = vec![0.0; n];
        let mut samples = vec![0u64; n];
        for i in (0..n).rev() {
            for (t, s, w, born) in &self.nodes[i].targets {
                if types.contains(&t.as_str()) && *born >= self.growth_second(t) {
                    weight[i] += w;
                    samples[i] += s;
                }
            }
            if let Some(p) = self.nodes[i].parent {
                weight[p] += weight[i];
                samples[p] += samples[i];
            }
        }
        (weight, samples)
    }

    /// The second from which `type_name`'s samples count (see `Paths::weigh_growth_from`).
    fn growth_second(&self, type_name: &str) -> u32 {
        self.growth_from
            .iter()
            .find(|(t, _)| t == type_name)
            .map_or(0, |&(_, s)| s)
    }

    /// Weighs `types` by their samples taken lately: from the latest second at or before
    /// `latest_s` (and not before `earliest_s`) from which together they have
    /// `GROWTH_SAMPLES`, or from `earliest_s` when they have `MIN_SAMPLES` since. The holder of
    /// a growth is where the new objects go, and a steady structure built earlier may hold more
    /// of the same type (a catalog of `Item`s beside the map that leaks them). A type with no
    /// sample since that second is weighed from `earliest_s`, and one with none since then by
    /// all of its own. Returns the second chosen (0: all samples).
    pub fn weigh_growth_from(&mut self, types: &[&str], earliest_s: u32, latest_s: u32) -> u32 {
        self.growth_from.clear();
        let mut by_second: std::collections::BTreeMap<u32, u64> = Default::default();
        for (name, s, _, born) in self.nodes.iter().flat_map(|n| &n.targets) {
            if *born > 0 && types.contains(&name.as_str()) {
                *by_second.entry(*born).or_default() += s;
            }
        }
        let since = |from: u32| -> u64 { by_second.range(from..).map(|(_, n)| n).sum() };
        let earliest = earliest_s.max(1);
        let from = (earliest..=latest_s.max(earliest))
            .rev()
            .find(|&s| since(s) >= GROWTH_SAMPLES)
            .or_else(|| (since(earliest) >= MIN_SAMPLES).then_some(earliest));
        let Some(from) = from else {
            return 0;
        };
        for &t in types {
            let newest = self
                .nodes
                .iter()
                .flat_map(|n| &n.targets)
                .filter(|(name, _, _, born)| name == t && *born >= earliest)
                .map(|(_, _, _, born)| *born)
                .max();
            // A type of the growth with no sample since `from` (a small one beside a large
            // one: a leak's 16,000 map nodes carry a few samples at 64 KiB) is weighed by its
            // own samples since the window's start, not by all of them: those are mostly an
            // older stock of the type (a catalog's map), whose holder is not the growth's.
            match newest {
                Some(born) if born >= from => self.growth_from.push((t.to_string(), from)),
                Some(_) => self.growth_from.push((t.to_string(), earliest)),
                None => {}
            }
        }
        from
    }

    fn heaviest(&self, of: &[usize], weight: &[f64]) -> Option<usize> {
        of.iter()
            .copied()
            .filter(|&c| weight[c] > 0.0)
            .max_by(|&a, &b| weight[a].total_cmp(&weight[b]).then(b.cmp(&a)))
    }

    /// The next node of a route below a holder: of `at`'s children, the step (type and field)
    /// the first type's paths take most (`first_w`; where none does, all the explained types'
    /// `w`), and of that step's objects the one under which the explained types' paths go on
    /// furthest (`reach`), with most of those types (`type_ws`), then the heaviest. A step's
    /// objects are instances of one structure (a list's elements), each with a sample or two:
    /// the first type's heaviest element is likely one that was sampled itself, whose string
    /// no sample reached, and the route would end at it instead of showing the string and its
    /// bytes.
    fn next_below(
        &self,
        at: usize,
        (first_w, w): (&[f64], &[f64]),
        type_ws: &[&[f64]],
        reach: &[u32],
    ) -> Option<usize> {
        let children = &self.children[at];
        let step = |c: usize| (&self.nodes[c].type_name, &self.nodes[c].field);
        // (type, field) -> first_w and w summed over its objects: few steps per object.
        let mut steps: Vec<((&String, &String), f64, f64)> = Vec::new();
        for &c in children.iter().filter(|&&c| w[c] > 0.0) {
            match steps.iter_mut().find(|s| s.0 == step(c)) {
                Some(s) => {
                    s.1 += first_w[c];
                    s.2 += w[c];
                }
                None => steps.push((step(c), first_w[c], w[c])),
            }
        }
        let best = steps
            .iter()
            .max_by(|a, b| a.1.total_cmp(&b.1).then(a.2.total_cmp(&b.2)))?
            .0;
        let kinds = |c: usize| type_ws.iter().filter(|tw| tw[c] > 0.0).count();
        children
            .iter()
            .copied()
            .filter(|&c| w[c] > 0.0 && step(c) == best)
            .max_by(|&a, &b| {
                reach[a]
                    .cmp(&reach[b])
                    .then(kinds(a).cmp(&kinds(b)))
                    .then(first_w[a].total_cmp(&first_w[b]))
                    .then(w[a].total_cmp(&w[b]))
                    .then(b.cmp(&a))
            })
    }

    /// From `start`, down while one child holds `DESCEND_SHARE` of its parent's weight on at
    /// least `SHARED_BY` sampled paths, stopping above objects of `types` themselves (where
    /// paths end: the symptom, not a holder). One sample of a holder that is of a growing
    /// type itself (a session cache's map, where each session has a map of attributes) does
    /// not make it the symptom: it was sampled at its birth, and the paths go on below it.
    fn descend(&self, start: usize, types: &[&str], weight: &[f64], samples: &[u64]) -> usize {
        let own = |node: usize| {
            self.nodes[node]
                .targets
                .iter()
                .filter(|t| types.contains(&t.0.as_str()))
                .map(|t| t.1)
                .sum::<u64>()
                >= SHARED_BY
        };
        let mut at = start;
        while let Some(child) = self.heaviest(&self.children[at], weight) {
            if weight[child] >= DESCEND_SHARE * weight[at]
                && samples[child] >= SHARED_BY
                && !own(child)
            {
                at = child;
                continue;
            }
            // Where the paths part only to meet again at one object, they are one route.
            match self.rejoined(at, weight, samples) {
                Some(node) if !own(node) => at = node,
                _ => break,
            }
        }
        at
    }

    /// The nearest object below `at` that branches parting there meet again at, holding
    /// `DESCEND_SHARE` of `at`'s weight between its nodes: its heaviest node (the shallowest
    /// of equals). The search enters an object again when it meets it by a shorter way
    /// (agent/src/paths/), so the samples found before that go by the long way and the rest by the
    /// short one: Jetty's session handler, reached through its context's list of beans and
    /// then through its field, split a session cache's paths in two at the context, which was
    /// named the holder.
    fn rejoined(&self, at: usize, weight: &[f64], samples: &[u64]) -> Option<usize> {
        /// One object's nodes below `at`, `(node, depth)`, and what they hold together. A path
        /// passes an object once, so no two of its nodes are nested.
        #[derive(Default)]
        struct Met {
            weight: f64,
            samples: u64,
            depth: usize,
            nodes: Vec<(usize, usize)>,
        }
        let mut objects: HashMap<(u32, &str), Met> = HashMap::new();
        let mut stack: Vec<(usize, usize)> = self.children[at].iter().map(|&c| (c, 1)).collect();
        while let Some((node, depth)) = stack.pop() {
            if weight[node] <= 0.0 {
                continue;
            }
            let n = &self.nodes[node];
            if n.identity != 0 {
                let met = objects
                    .entry((n.identity, n.type_name.as_str()))
                    .or_insert_with(|| Met {
                        depth,
                        ..Met::default()
                    });
                met.weight += weight[node];
                met.samples += samples[node];
                met.depth = met.depth.min(depth);
                met.nodes.push((node, depth));
            }
            stack.extend(self.children[node].iter().map(|&c| (c, depth + 1)));
        }
        objects
            .into_values()
            .filter(|m| {
                m.nodes.len() > 1
                    && m.weight >= DESCEND_SHARE * weight[at]
                    && m.samples >= SHARED_BY
            })
            .min_by(|a, b| {
                (a.depth.cmp(&b.depth))
                    .then(b.weight.total_cmp(&a.weight))
                    .then(a.nodes[0].cmp(&b.nodes[0]))
            })
            .and_then(|m| {
                // The heaviest node, by the shortest way among equals.
                m.nodes
                    .into_iter()
                    .max_by(|a, b| weight[a.0].total_cmp(&weight[b.0]).then(b.1.cmp(&a.1)))
                    .map(|(node, _)| node)
            })
    }

    /// The weight and samples (`s`, where given) through the object of `node`, by every way
    /// its root's paths reach it (see `rejoined`; another root's object that shares its hash
    /// is another object, as a root adds no path to what an earlier one reached); a node
    /// without an identity hash alone.
    fn through_object(&self, node: usize, w: &[f64], s: &[u64]) -> (f64, u64) {
        let of = &self.nodes[node];
        let sample = |i: usize| s.get(i).copied().unwrap_or(0);
        if of.identity == 0 {
            return (w[node], sample(node));
        }
        let top = self.chain_to(node)[0];
        self.nodes
            .iter()
            .enumerate()
            .filter(|&(i, n)| {
                n.identity == of.identity
                    && n.type_name == of.type_name
                    && (i == node || self.chain_to(i)[0] == top)
            })
            .fold((0.0, 0), |(weight, samples), (i, _)| {
                (weight + w[i], samples + sample(i))
            })
    }

    /// Objects of `types` the search counted from root object `top`.
    fn reached(&self, top: usize, types: &[&str]) -> u64 {
        self.nodes[top]
            .reached
            .iter()
            .filter(|(t, _)| types.contains(&t.as_str()))
            .map(|(_, n)| n)
            .sum()
    }

    /// The collection owning the insides at `node` (a table, a list's chain of nodes, an
    /// `ArrayList`'s array), or `node` itself.
    fn fold(&self, mut node: usize) -> usize {
        while let Some(parent) = self.nodes[node].parent {
            if !self.is_collection_inside(node) {
                break;
            }
            node = parent;
        }
        node
    }

    /// Whether `node` is a collection's insides rather than a place a fix goes: an object of a
    /// collection's own internal class (a `HashMap$Node[]`, a `LinkedList$Node`, a thread-local
    /// map's entries), or an array a `java.util` class holds (an `ArrayList`'s `Object[]`). The
    /// holder climbs above such objects to the collection that owns them (`fold`), and a trace
    /// shows them as the collection's content (`Step::content`).
    pub fn is_collection_inside(&self, node: usize) -> bool {
        let n = &self.nodes[node];
        let array_of_collection = n.type_name.ends_with("[]")
            && n.parent
                .is_some_and(|p| self.nodes[p].type_name.starts_with("java.util."));
        is_internal(&n.type_name) || array_of_collection
    }

    /// The root objects of a holding's co-holders (a pool's other threads).
    fn co_holder_tops<'a>(&'a self, h: &'a Holding) -> impl Iterator<Item = usize> + 'a {
        self.tops.iter().copied().filter(|&t| {
            self.nodes[t]
                .root
                .as_ref()
                .is_some_and(|r| h.co_holders.contains(&r.name))
        })
    }

    /// Per type of `h.types`, the share of its weight whose paths pass through the holder (or
    /// a co-holder): how much of that type's growth this holding keeps alive. A type shared by
    /// two leaks (the `byte[]`s of two caches) is split between them by its own samples.
    pub fn type_shares(&self, h: &Holding) -> Vec<f64> {
        h.types
            .iter()
            .map(|t| {
                let (w, _) = self.weights(&[t.as_str()]);
                let total: f64 = self.tops.iter().map(|&top| w[top]).sum();
                let (w_holder, _) = self.through_object(h.holder, &w, &[]);
                let through = w_holder + self.co_holder_tops(h).map(|top| w[top]).sum::<f64>();
                if total > 0.0 {
                    (through / total).min(1.0)
                } else {
                    0.0
                }
            })
            .collect()
    }

    /// Who holds `type_name`'s sampled objects, or `None` when the paths reached none.
    pub fn holding(&self, type_name: &str) -> Option<Holding> {
        self.leaks(&[type_name]).into_iter().next()
    }

    /// The holders of the sampled objects of `types` (the growing ones), heaviest first: one
    /// per accumulation point, each with the types it explains. A root's branch holding at
    /// least `BRANCH_SHARE` of the weight is searched for holders; below the branch's common
    /// part, each type descends on its own, so two leaks under one root are two holders.
    pub fn leaks(&self, types: &[&str]) -> Vec<Holding> {
        let (weight, samples) = self.weights(types);
        let total: f64 = self.tops.iter().map(|&t| weight[t]).sum();
        if total <= 0.0 {
            return Vec::new();
        }
        let per_type: Vec<TypeWeights<'_>> = types
            .iter()
            .map(|&name| {
                let (weight, samples) = self.weights(&[name]);
                TypeWeights {
                    name,
                    weight,
                    samples,
                }
            })
            .collect();
        let found = self.accumulation_points(types, (&weight, &samples), total, &per_type);
        let mut out = self.holdings(found, &per_type);
        for h in &mut out {
            self.add_co_holders_by_counts(h);
        }
        for h in &mut out {
            self.rate(h);
        }
        out.sort_by(|a, b| b.shared_weight.total_cmp(&a.shared_weight));
        out
    }

    /// Where the growth accumulates, branch by branch (heaviest first): from each root's
    /// branch with `BRANCH_SHARE` of the `total` weight (or a small one that may be a pool's
    /// other thread), down the part the types share, then each type on its own to its holder,
    /// folded out of a collection's insides. Types that reach one holder are one point.
    fn accumulation_points(
        &self,
        types: &[&str],
        (weight, samples): (&[f64], &[u64]),
        total: f64,
        per_type: &[TypeWeights<'_>],
    ) -> Vec<Found> {
        let mut branches: Vec<usize> = self
            .tops
            .iter()
            .copied()
            .filter(|&t| weight[t] > 0.0)
            .collect();
        branches.sort_by(|&a, &b| weight[b].total_cmp(&weight[a]).then(a.cmp(&b)));
        let mut found: Vec<Found> = Vec::new();
        let first_root = branches.first().and_then(|&b| self.nodes[b].root.as_ref());
        for (rank, &branch) in branches.iter().enumerate() {
            // Small branches are searched only when they may be a pool's other threads.
            let small = rank > 0 && weight[branch] < BRANCH_SHARE * total;
            if small && !same_family(first_root, self.nodes[branch].root.as_ref()) {
                continue;
            }
            let common = self.descend(branch, types, weight, samples);
            for (i, t) in per_type.iter().enumerate() {
                if t.weight[common] <= 0.0 {
                    continue;
                }
                let holder = self.fold(self.descend(common, &[t.name], &t.weight, &t.samples));
                match found.iter_mut().find(|f| f.holder == holder) {
                    Some(f) => f.explained.push(i),
                    None => found.push(Found {
                        holder,
                        explained: vec![i],
                        branch,
                    }),
                }
            }
        }
        found
    }

    /// A holding per accumulation point, in the order found, with the route below it; a
    /// pool's threads each holding the same structure share one holding, the later ones as
    /// its co-holders. Shares and confidence come once co-holders are pooled (`rate`).
    fn holdings(&self, found: Vec<Found>, per_type: &[TypeWeights<'_>]) -> Vec<Holding> {
        let type_total = |t: &TypeWeights<'_>| -> (f64, u64) {
            (
                self.tops.iter().map(|&top| t.weight[top]).sum(),
                self.tops.iter().map(|&top| t.samples[top]).sum(),
            )
        };
        let mut out: Vec<Holding> = Vec::new();
        for Found {
            holder,
            explained,
            branch,
        } in found
        {
            let names: Vec<&str> = explained.iter().map(|&i| per_type[i].name).collect();
            let root = self.nodes[branch].root.as_ref();
            let holder_type = &self.nodes[holder].type_name;
            if let Some(known) = out.iter_mut().find(|h| {
                let known_root = self.root_of(h.holder);
                self.nodes[h.holder].type_name == *holder_type && same_family(known_root, root)
            }) {
                known
                    .co_holders
                    .push(root.map_or(String::new(), |r| r.name.clone()));
                for name in &names {
                    if !known.types.iter().any(|t| t == name) {
                        known.types.push(name.to_string());
                    }
                }
                continue;
            }
            let (w, s) = self.weights(&names);
            let (all_w, all_s) = explained.iter().fold((0.0, 0), |acc, &i| {
                let (tw, ts) = type_total(&per_type[i]);
                (acc.0 + tw, acc.1 + ts)
            });
            let type_ws: Vec<&[f64]> = explained.iter().map(|&i| &per_type[i].weight[..]).collect();
            out.push(Holding {
                chain: self.chain_to(holder),
                holder,
                below: self.route_below(holder, &names, &w, &type_ws),
                types: names.iter().map(|s| s.to_string()).collect(),
                samples: all_s,
                holder_samples: s[holder],
                weight: all_w,
                shared_weight: w[holder],
                share: 0.0,
                co_holders: Vec::new(),
                counted: 0,
                counted_through: 0,
                alternatives: Vec::new(),
                confidence: Confidence::Ambiguous,
            });
        }
        out
    }

    /// Below `holder`, the route the first (most grown) of `names` takes most, then on through
    /// the other explained types' paths to where they end (the list's node, the element, its
    /// strings, their bytes), `MAX_BELOW` steps at most. `w`: the explained types' weights
    /// together; `type_ws`: each one's.
    fn route_below(
        &self,
        holder: usize,
        names: &[&str],
        w: &[f64],
        type_ws: &[&[f64]],
    ) -> Vec<usize> {
        let (first_w, _) = self.weights(&names[..1]);
        // How many steps below each node the explained types' sampled paths go on (a
        // child's index is above its parent's).
        let mut reach = vec![0u32; self.nodes.len()];
        for i in (0..self.nodes.len()).rev() {
            if let (Some(p), true) = (self.nodes[i].parent, w[i] > 0.0) {
                reach[p] = reach[p].max(reach[i] + 1);
            }
        }
        let mut below = Vec::new();
        let mut at = holder;
        while let Some(child) = self.next_below(at, (&first_w, w), type_ws, &reach) {
            below.push(child);
            at = child;
            if below.len() >= MAX_BELOW {
                break;
            }
        }
        below
    }

    /// A pool's threads whose lists no sample happened to land in: their counted objects say
    /// they hold the same (`CO_HOLDER_SHARE` of what the holder's own thread reached).
    fn add_co_holders_by_counts(&self, h: &mut Holding) {
        let top = self.chain_to(h.holder)[0];
        let root = self.nodes[top].root.as_ref();
        let names: Vec<&str> = h.types.iter().map(String::as_str).collect();
        let mine = self.reached(top, &names);
        if mine == 0 {
            return;
        }
        for &other in &self.tops {
            let r = self.nodes[other].root.as_ref();
            if other == top
                || !same_family(root, r)
                || r.is_some_and(|r| h.co_holders.contains(&r.name))
            {
                continue;
            }
            if self.reached(other, &names) as f64 >= CO_HOLDER_SHARE * mine as f64 {
                h.co_holders
                    .push(r.map_or(String::new(), |r| r.name.clone()));
            }
        }
    }

    /// The holding's weights, share, alternatives, counts and confidence, once its co-holders
    /// are pooled.
    fn rate(&self, h: &mut Holding) {
        let names: Vec<&str> = h.types.iter().map(String::as_str).collect();
        let (w, s) = self.weights(&names);
        h.weight = self.tops.iter().map(|&t| w[t]).sum();
        h.samples = self.tops.iter().map(|&t| s[t]).sum();
        (h.shared_weight, h.holder_samples) = self.through_object(h.holder, &w, &s);
        let co_tops: Vec<usize> = self.co_holder_tops(h).collect();
        for top in co_tops {
            h.shared_weight += w[top];
            h.holder_samples += s[top];
        }
        // A co-holder's top can share samples with the holder's own (two roots of one
        // thread naming one object): the evidence never counts more paths than were
        // sampled ("220 of 110").
        h.holder_samples = h.holder_samples.min(h.samples);
        h.shared_weight = h.shared_weight.min(h.weight);
        h.share = if h.weight > 0.0 {
            h.shared_weight / h.weight
        } else {
            0.0
        };
        let own_top = self.chain_to(h.holder)[0];
        h.alternatives = self.alternatives(h, own_top, &w, &s);
        (h.counted, h.counted_through) = self.counted_through(h, own_top, &names);
        let count_share = if h.counted > 0 {
            h.counted_through as f64 / h.counted as f64
        } else {
            0.0
        };
        h.confidence = h.confidence_at(count_share);
    }

    /// The other roots' branches that hold some of the holding's weight `w` (samples `s`),
    /// heaviest first: neither the holder's own root (at `own_top`) nor a co-holder.
    fn alternatives(&self, h: &Holding, own_top: usize, w: &[f64], s: &[u64]) -> Vec<Alternative> {
        let co: Vec<&str> = h.co_holders.iter().map(String::as_str).collect();
        let mut alternatives: Vec<Alternative> = self
            .tops
            .iter()
            .copied()
            .filter(|&t| t != own_top && w[t] > 0.0)
            .filter(|&t| {
                self.nodes[t]
                    .root
                    .as_ref()
                    .is_none_or(|r| !co.contains(&r.name.as_str()))
            })
            .map(|t| Alternative {
                root: self.nodes[t]
                    .root
                    .as_ref()
                    .map_or_else(|| "(unknown root)".into(), |r| r.name.clone()),
                share: w[t] / h.weight.max(f64::MIN_POSITIVE),
                samples: s[t],
            })
            .collect();
        alternatives.sort_by(|a, b| b.share.total_cmp(&a.share).then(a.root.cmp(&b.root)));
        alternatives
    }

    /// The counts: the objects of `names` the search counted from every root, and of those
    /// from the holder's own root (at `own_top`) and its co-holders.
    fn counted_through(&self, h: &Holding, own_top: usize, names: &[&str]) -> (u64, u64) {
        let counted: u64 = self.tops.iter().map(|&t| self.reached(t, names)).sum();
        let ours: u64 = self
            .tops
            .iter()
            .copied()
            .filter(|&t| {
                t == own_top
                    || self.nodes[t]
                        .root
                        .as_ref()
                        .is_some_and(|r| h.co_holders.contains(&r.name))
            })
            .map(|t| self.reached(t, names))
            .sum();
        (counted, ours)
    }
}

/// Whether two roots are threads of one family (a pool's: names equal but for numbers).
fn same_family(a: Option<&RootRef>, b: Option<&RootRef>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => {
            a.kind == b.kind
                && !a.thread.is_empty()
                && thread_family(&a.name) == thread_family(&b.name)
        }
        _ => false,
    }
}

/// Whether a type is a collection's internals rather than a place a fix goes.
fn is_internal(type_name: &str) -> bool {
    let base = type_name.trim_end_matches("[]");
    (base.starts_with("java.util.") || base.starts_with("java.lang.ThreadLocal$"))
        && base.contains('$')
}

/// Where growing types' sampled paths lead (see `Paths::leaks`).
#[derive(Debug, Clone, PartialEq)]
pub struct Holding {
    /// Nodes from the root's object down to the holder.
    pub chain: Vec<usize>,
    pub holder: usize,
    /// From the holder's content down to where the explained types' paths end (the heaviest
    /// route).
    pub below: Vec<usize>,
    /// The types it explains, in the order given (strongest growth first).
    pub types: Vec<String>,
    /// Their samples the paths reached anywhere, those through the holder (and co-holders),
    /// and their weights.
    pub samples: u64,
    pub holder_samples: u64,
    pub weight: f64,
    pub shared_weight: f64,
    /// Share of the types' weight through the holder and its co-holders.
    pub share: f64,
    /// Roots of the same thread family holding the same structure (a pool).
    pub co_holders: Vec<String>,
    /// Objects of the types the search counted, and those from the holder's root and
    /// co-holders (counts, not samples; see `PathNode::reached`).
    pub counted: u64,
    pub counted_through: u64,
    /// Other roots' branches, heaviest first.
    pub alternatives: Vec<Alternative>,
    pub confidence: Confidence,
}

impl Holding {
    /// How sure the paths make the holder, with `count_share` of the counted objects through
    /// it: *exact* when `DESCEND_SHARE` of the weight passes through it on `MIN_SAMPLES`
    /// samples (or on `SHARED_BY` that the counts back), *likely* when one sample does and
    /// the weight or the counts give it `LIKELY_SHARE`, else *ambiguous*.
    fn confidence_at(&self, count_share: f64) -> Confidence {
        let agreed = self.share >= DESCEND_SHARE;
        if agreed
            && (self.holder_samples >= MIN_SAMPLES
                || (self.holder_samples >= SHARED_BY && count_share >= DESCEND_SHARE))
        {
            Confidence::Exact
        } else if self.holder_samples >= 1
            && (self.share >= LIKELY_SHARE || count_share >= LIKELY_SHARE)
        {
            Confidence::Likely
        } else {
            Confidence::Ambiguous
        }
    }
}

/// One growing type's weight and samples per node (`Paths::weights` of it alone).
struct TypeWeights<'a> {
    name: &'a str,
    weight: Vec<f64>,
    samples: Vec<u64>,
}

/// An accumulation point the descent found (`Paths::accumulation_points`): the holder, the
/// types it explains (indices into the per-type weights) and the root's branch it is in.
struct Found {
    holder: usize,
    explained: Vec<usize>,
    branch: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leak::evidence::describe_split;
    use crate::leak::paths::PathNode;
    use crate::leak::testing::named_root;

    /// `(parent, type, field, root, targets)`: one node of a test tree.
    type Row<'a> = (
        Option<usize>,
        &'a str,
        &'a str,
        Option<&'a str>,
        &'a [(&'a str, u64)],
    );

    /// A tree from rows.
    fn tree(rows: &[Row<'_>]) -> Paths {
        Paths::new(
            rows.iter()
                .map(|&(parent, type_name, field, root, targets)| PathNode {
                    parent,
                    type_name: type_name.into(),
                    field: field.into(),
                    root: root.map(named_root),
                    chain: 1,
                    length: 0,
                    identity: 0,
                    reached: Vec::new(),
                    also: Vec::new(),
                    targets: targets
                        .iter()
                        .map(|&(t, n)| (t.to_string(), n, n as f64 * 10.0, 1))
                        .collect(),
                })
                .collect(),
        )
    }

    fn people_list(extra: &[Row<'static>]) -> Paths {
        let mut rows: Vec<Row<'_>> = vec![
            (
                None,
                "java.util.LinkedList",
                "",
                Some("static App.PEOPLE"),
                &[],
            ),
            (Some(0), "java.util.LinkedList$Node", "first", None, &[]),
            (Some(1), "App$Person", "item", None, &[("App$Person", 1)]),
            (
                Some(2),
                "java.lang.String",
                "name",
                None,
                &[("java.lang.String", 30)],
            ),
            (Some(1), "App$Person", "item", None, &[("App$Person", 1)]),
            (
                Some(4),
                "java.lang.String",
                "name",
                None,
                &[("java.lang.String", 30)],
            ),
        ];
        rows.extend_from_slice(extra);
        tree(&rows)
    }

    #[test]
    fn the_holder_is_the_collection_whose_insides_the_paths_share() {
        let p = people_list(&[]);
        let h = p.holding("java.lang.String").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.LinkedList");
        assert_eq!(h.chain, vec![0]);
        assert_eq!(p.nodes[h.below[0]].type_name, "java.util.LinkedList$Node");
        assert_eq!(
            p.nodes[*h.below.last().unwrap()].type_name,
            "java.lang.String"
        );
        assert_eq!(h.confidence, Confidence::Exact);
        assert_eq!(h.samples, 60);
        assert!(h.alternatives.is_empty());
    }

    /// Jetty's session handler reached twice, through its context's list of beans and then,
    /// shorter, through its field: the sessions found before the search met it again go by
    /// the beans, the rest by the field. One object, one route: the cache's map holds them.
    #[test]
    fn branches_that_meet_again_at_one_object_are_one_route() {
        const MAP: &str = "java.util.concurrent.ConcurrentHashMap";
        let session = [("Session", 10)];
        let mut rows: Vec<Row<'_>> = vec![(
            None,
            "ServletContextHandler",
            "",
            Some("static App.CONTEXT"),
            &[],
        )];
        let via_beans: [Row<'_>; 3] = [
            (
                Some(0),
                "java.util.concurrent.CopyOnWriteArrayList",
                "_beans",
                None,
                &[],
            ),
            (Some(1), "java.lang.Object[]", "array", None, &[]),
            (Some(2), "SessionHandler", "[]", None, &[]),
        ];
        rows.extend(via_beans);
        let handler_via_field = 3 + 5;
        for (handler, field) in [(3, "[]"), (handler_via_field, "_sessionHandler")] {
            if handler != 3 {
                rows.push((Some(0), "SessionHandler", field, None, &[]));
            }
            rows.extend([
                (
                    Some(handler),
                    "DefaultSessionCache",
                    "_sessionCache",
                    None,
                    &[][..],
                ),
                (Some(handler + 1), MAP, "_sessions", None, &[]),
                (
                    Some(handler + 2),
                    "java.util.concurrent.ConcurrentHashMap$Node[]",
                    "table",
                    None,
                    &[],
                ),
                (Some(handler + 3), "Session", "[]", None, &session),
            ]);
        }
        let mut p = tree(&rows);
        // The same objects by both ways: handler, cache, map and table.
        let same = |p: &mut Paths, second_way: u32| {
            for (i, node) in p.nodes.iter_mut().enumerate() {
                let way = if i >= handler_via_field {
                    second_way
                } else {
                    0
                };
                node.identity = way
                    + match node.type_name.as_str() {
                        "SessionHandler" => 42,
                        "DefaultSessionCache" => 43,
                        MAP => 44,
                        "Session" => 100 + i as u32,
                        _ if node.type_name.ends_with("Node[]") => 45,
                        _ => 0,
                    };
            }
        };
        same(&mut p, 0);
        let h = p.holding("Session").expect("a holding");
        assert_eq!(p.nodes[h.holder].type_name, MAP, "{h:?}");
        assert_eq!(p.nodes[h.holder].field, "_sessions");
        assert_eq!(h.confidence, Confidence::Exact);
        // The shorter way, of two as heavy.
        assert!(
            p.chain_to(h.holder)
                .iter()
                .any(|&n| p.nodes[n].field == "_sessionHandler"),
            "{:?}",
            p.chain_to(h.holder)
        );
        // Distinct handlers (two contexts' caches) are a split, as before.
        same(&mut p, 1000);
        let h = p.holding("Session").expect("a holding");
        assert_eq!(p.nodes[h.holder].type_name, "ServletContextHandler");
    }

    #[test]
    fn a_holder_sampled_once_of_a_growing_type_is_still_the_holder() {
        // Jetty's session cache: its map was sampled at its birth, and each session it holds
        // has a map of attributes, so maps grow too.
        const MAP: &str = "java.util.concurrent.ConcurrentHashMap";
        const NODE: &str = "java.util.concurrent.ConcurrentHashMap$Node";
        let rows: Vec<Row<'_>> = vec![
            (None, "App$Cache", "", Some("static App.CACHE"), &[]),
            (Some(0), MAP, "sessions", None, &[(MAP, 1)]),
            (
                Some(1),
                "java.util.concurrent.ConcurrentHashMap$Node[]",
                "table",
                None,
                &[],
            ),
            (Some(2), NODE, "[]", None, &[]),
            (Some(3), "App$Session", "val", None, &[("App$Session", 20)]),
            (Some(4), MAP, "attributes", None, &[(MAP, 20)]),
            (Some(2), NODE, "[]", None, &[]),
            (Some(6), "App$Session", "val", None, &[("App$Session", 20)]),
            (Some(7), MAP, "attributes", None, &[(MAP, 20)]),
        ];
        let p = tree(&rows);
        let leaks = p.leaks(&["App$Session", MAP]);
        let h = leaks.first().expect("a holding");
        assert_eq!(p.nodes[h.holder].type_name, MAP);
        assert_eq!(p.nodes[h.holder].field, "sessions");
    }

    #[test]
    fn the_route_below_goes_through_an_element_that_shows_every_type() {
        // A thread's list of records, each with a payload string and its bytes (ThreadLocalLeak).
        // A sample lands on one object of an element: four records were sampled themselves,
        // one string, and two strings' bytes. Records grew most, but the route must not end at
        // a sampled record, whose string no sample reached.
        let mut rows: Vec<Row<'_>> = vec![
            (
                None,
                "java.util.ArrayList",
                "",
                Some("thread \"worker\""),
                &[],
            ),
            (Some(0), "java.lang.Object[]", "elementData", None, &[]),
        ];
        for _ in 0..4 {
            rows.push((Some(1), "Record", "[]", None, &[("Record", 4)]));
        }
        let record = rows.len();
        rows.push((Some(1), "Record", "[]", None, &[]));
        rows.push((
            Some(record),
            "java.lang.String",
            "payload",
            None,
            &[("java.lang.String", 1)],
        ));
        for _ in 0..2 {
            let record = rows.len();
            rows.push((Some(1), "Record", "[]", None, &[]));
            rows.push((Some(record), "java.lang.String", "payload", None, &[]));
            rows.push((Some(record + 1), "byte[]", "value", None, &[("byte[]", 1)]));
        }
        let p = tree(&rows);
        let leaks = p.leaks(&["Record", "java.lang.String", "byte[]"]);
        assert_eq!(leaks.len(), 1, "{leaks:?}");
        let h = &leaks[0];
        assert_eq!(p.nodes[h.holder].type_name, "java.util.ArrayList");
        let below: Vec<(&str, &str)> = h
            .below
            .iter()
            .map(|&n| (p.nodes[n].field.as_str(), p.nodes[n].type_name.as_str()))
            .collect();
        assert_eq!(
            below,
            [
                ("elementData", "java.lang.Object[]"),
                ("[]", "Record"),
                ("payload", "java.lang.String"),
                ("value", "byte[]"),
            ]
        );
    }

    #[test]
    fn two_instances_of_one_type_are_two_holders_and_the_bigger_is_named() {
        // JFR's list beside the application's: same types, other instance, other root.
        let p = people_list(&[
            (
                None,
                "java.util.LinkedList",
                "",
                Some("static jdk.jfr.Internal.CHUNKS"),
                &[],
            ),
            (Some(6), "java.util.LinkedList$Node", "first", None, &[]),
            (
                Some(7),
                "java.lang.String",
                "item",
                None,
                &[("java.lang.String", 6)],
            ),
        ]);
        let h = p.holding("java.lang.String").unwrap();
        assert_eq!(p.root_of(h.holder).unwrap().name, "static App.PEOPLE");
        assert_eq!(
            h.confidence,
            Confidence::Exact,
            "60 of 66 samples: over 80 %"
        );
        assert_eq!(h.alternatives.len(), 1);
        assert_eq!(h.alternatives[0].root, "static jdk.jfr.Internal.CHUNKS");
        assert!((h.alternatives[0].share - 6.0 / 66.0).abs() < 1e-9);
    }

    #[test]
    fn a_split_of_80_20_is_exact_and_of_60_40_is_likely_with_the_other_named() {
        let split = |a: u64, b: u64| {
            #[allow(clippy::type_complexity, reason = "a test table's rows, owned")]
            let rows: Vec<(Option<usize>, &str, &str, Option<&str>, Vec<(&str, u64)>)> = vec![
                (
                    None,
                    "java.util.ArrayList",
                    "",
                    Some("static A.LISTENERS"),
                    vec![],
                ),
                (Some(0), "java.lang.Object[]", "elementData", None, vec![]),
                (Some(1), "Listener", "[]", None, vec![("Listener", a)]),
                (
                    None,
                    "java.util.HashMap",
                    "",
                    Some("thread \"registry-worker\""),
                    vec![],
                ),
                (Some(3), "Listener", "value", None, vec![("Listener", b)]),
            ];
            let rows: Vec<Row<'_>> = rows
                .iter()
                .map(|(p, t, f, r, x)| (*p, *t, *f, *r, &x[..]))
                .collect();
            tree(&rows)
        };
        let p = split(80, 20);
        let h = p.holding("Listener").unwrap();
        assert_eq!(
            p.nodes[h.holder].type_name, "java.util.ArrayList",
            "the array folds into its list"
        );
        assert_eq!(h.confidence, Confidence::Exact);
        let p = split(60, 40);
        let h = p.holding("Listener").unwrap();
        assert_eq!(h.confidence, Confidence::Likely);
        assert_eq!(
            describe_split("static A.LISTENERS", h.share, &h.alternatives),
            "60 % through static A.LISTENERS, 40 % through thread \"registry-worker\""
        );
        let p = split(40, 60);
        let h = p.holding("Listener").unwrap();
        assert_eq!(
            p.root_of(h.holder).unwrap().name,
            "thread \"registry-worker\""
        );
    }

    #[test]
    fn a_pools_threads_holding_the_same_list_are_co_holders() {
        let mut rows: Vec<Row<'_>> = Vec::new();
        let names = [
            "thread \"pool-1-thread-1\"",
            "thread \"pool-1-thread-2\"",
            "thread \"pool-1-thread-3\"",
        ];
        for (i, name) in names.iter().enumerate() {
            let base = i * 3;
            rows.push((
                None,
                "java.lang.ThreadLocal$ThreadLocalMap",
                "",
                Some(name),
                &[],
            ));
            rows.push((Some(base), "java.util.ArrayList", "value", None, &[]));
            rows.push((Some(base + 1), "Request", "[]", None, &[("Request", 10)]));
        }
        let p = tree(&rows);
        let h = p.holding("Request").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.ArrayList");
        assert_eq!(h.co_holders.len(), 2, "{h:?}");
        assert!(h.alternatives.is_empty());
        assert_eq!(
            h.confidence,
            Confidence::Exact,
            "the pool together holds it all"
        );
    }

    #[test]
    fn few_samples_are_likely_at_best_unless_the_counts_agree() {
        let rows: Vec<Row<'_>> = vec![
            (None, "java.util.ArrayList", "", Some("static A.L"), &[]),
            (Some(0), "java.lang.Object[]", "elementData", None, &[]),
            (Some(1), "X", "[]", None, &[("X", 1)]),
            (Some(1), "X", "[]", None, &[("X", 1)]),
            (None, "java.util.HashMap", "", Some("static B.M"), &[]),
        ];
        let mut p = tree(&rows);
        let h = p.holding("X").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.ArrayList");
        assert_eq!(
            h.confidence,
            Confidence::Likely,
            "two paths agree: not yet exact"
        );
        // The search counted 9,000 X from A.L and 100 from B.M: the counts back the paths.
        p.nodes[0].reached = vec![("X".into(), 9000)];
        p.nodes[4].reached = vec![("X".into(), 100)];
        assert_eq!(p.holding("X").unwrap().confidence, Confidence::Exact);
        // ...or contradict them: most X sit elsewhere.
        p.nodes[4].reached = vec![("X".into(), 90_000)];
        assert_eq!(p.holding("X").unwrap().confidence, Confidence::Likely);
        assert!(p.holding("Y").is_none(), "no path reached a Y");
    }

    #[test]
    fn a_pools_thread_that_no_sample_landed_in_is_a_co_holder_by_its_counts() {
        let rows: Vec<Row<'_>> = vec![
            (
                None,
                "java.lang.ThreadLocal$ThreadLocalMap",
                "",
                Some("thread \"pool-1-thread-1\""),
                &[],
            ),
            (Some(0), "java.util.ArrayList", "value", None, &[]),
            (Some(1), "Request", "[]", None, &[("Request", 3)]),
            (Some(1), "Request", "[]", None, &[("Request", 3)]),
            (
                None,
                "java.lang.Thread",
                "",
                Some("thread \"pool-1-thread-2\""),
                &[],
            ),
            (None, "java.lang.Thread", "", Some("thread \"main\""), &[]),
        ];
        let mut p = tree(&rows);
        p.nodes[0].reached = vec![("Request".into(), 25_000)];
        p.nodes[4].reached = vec![("Request".into(), 24_000)];
        p.nodes[5].reached = vec![("Request".into(), 24_000)];
        let h = p.holding("Request").unwrap();
        assert_eq!(
            h.co_holders,
            vec!["thread \"pool-1-thread-2\"".to_string()],
            "main is no pool thread"
        );
        assert_eq!((h.counted, h.counted_through), (73_000, 49_000));
    }

    #[test]
    fn the_holder_of_a_growth_is_where_the_new_objects_go_not_the_bigger_older_stock() {
        // A catalog built at start-up holds 60 Item samples; a registry's list gains 20 since.
        let rows: Vec<Row<'_>> = vec![
            (
                None,
                "java.util.HashMap",
                "",
                Some("static App.CATALOG"),
                &[],
            ),
            (Some(0), "java.util.HashMap$Node[]", "table", None, &[]),
            (Some(1), "Item", "[]", None, &[("Item", 30)]),
            (Some(1), "Item", "[]", None, &[("Item", 30)]),
            (
                None,
                "java.util.ArrayList",
                "",
                Some("static App.LEAK"),
                &[],
            ),
            (Some(4), "java.lang.Object[]", "elementData", None, &[]),
            (Some(5), "Item", "[]", None, &[("Item", 10)]),
            (Some(5), "Item", "[]", None, &[("Item", 10)]),
        ];
        let mut p = tree(&rows);
        // The catalog's samples were taken in second 1, the list's in second 9.
        for node in &mut p.nodes[6..] {
            for t in &mut node.targets {
                t.3 = 9;
            }
        }
        let h = p.holding("Item").unwrap();
        assert_eq!(
            p.root_of(h.holder).unwrap().name,
            "static App.CATALOG",
            "by stock"
        );
        // From the window's middle back to its start, the latest second with 20 new samples.
        assert_eq!(p.weigh_growth_from(&["Item"], 2, 12), 9);
        let h = p.holding("Item").unwrap();
        assert_eq!(
            p.root_of(h.holder).unwrap().name,
            "static App.LEAK",
            "by growth"
        );
        assert_eq!(p.nodes[h.holder].type_name, "java.util.ArrayList");
        assert_eq!(h.confidence, Confidence::Exact);
        // No new samples in the window: all count.
        assert_eq!(p.weigh_growth_from(&["Item"], 10, 12), 0);
        assert!(p.growth_from.is_empty());
        // Weighed together with a type that has its 20 samples in second 11, `Item` has none
        // since then: its own since the window's start (second 9, the list's) count, not the
        // catalog's of second 1.
        p.nodes[0].targets.push(("Other".into(), 20, 1.0, 11));
        assert_eq!(p.weigh_growth_from(&["Item", "Other"], 2, 12), 11);
        let h = p.holding("Item").unwrap();
        assert_eq!(
            p.root_of(h.holder).unwrap().name,
            "static App.LEAK",
            "by its own growth"
        );
    }

    #[test]
    fn a_damaged_parent_cannot_make_a_cycle() {
        let mut p = people_list(&[]);
        p.nodes[0].parent = Some(3);
        let p = Paths::new(p.nodes);
        assert!(p.tops.contains(&0));
        assert!(p.holding("java.lang.String").is_some());
    }

    #[test]
    fn a_map_shared_by_two_roots_is_credited_to_the_branch_its_paths_took() {
        // The search credits a shared object to the first root that reached it: the tree then
        // has the map under one root only, and the other root's branch holds nothing of it.
        let rows: Vec<Row<'_>> = vec![
            (None, "Registry", "", Some("static App.REGISTRY"), &[]),
            (Some(0), "java.util.HashMap", "byName", None, &[]),
            (Some(1), "java.util.HashMap$Node[]", "table", None, &[]),
            (Some(2), "java.util.HashMap$Node", "[]", None, &[]),
            (Some(3), "Session", "value", None, &[("Session", 20)]),
            (Some(2), "java.util.HashMap$Node", "[]", None, &[]),
            (Some(5), "Session", "value", None, &[("Session", 20)]),
        ];
        let p = tree(&rows);
        let h = p.holding("Session").unwrap();
        assert_eq!(p.nodes[h.holder].type_name, "java.util.HashMap");
        assert_eq!(p.nodes[h.holder].field, "byName");
        assert_eq!(h.chain, vec![0, 1]);
        assert_eq!(p.nodes[h.below[0]].type_name, "java.util.HashMap$Node[]");
    }

    /// The one rule that both the holder's climb (`fold`) and a trace's content follow: a
    /// collection's own classes, and an array a `java.util` class holds, are insides; the
    /// application's types, an array it holds, and an array a root holds are not.
    #[test]
    fn collection_insides_are_one_rule_for_the_holder_and_the_trace() {
        let rows: Vec<Row<'_>> = vec![
            (None, "java.util.ArrayList", "", Some("static A.LIST"), &[]),
            (Some(0), "java.lang.Object[]", "elementData", None, &[]),
            (Some(1), "App$Item", "[]", None, &[]),
            (Some(2), "App$Item[]", "children", None, &[]),
            (None, "java.lang.Object[]", "", Some("static A.ARRAY"), &[]),
            (None, "java.util.HashMap", "", Some("static A.MAP"), &[]),
            (Some(5), "java.util.HashMap$Node[]", "table", None, &[]),
            (Some(6), "java.util.HashMap$Node", "[]", None, &[]),
            (Some(7), "App$Node", "value", None, &[]),
            (
                None,
                "java.lang.ThreadLocal$ThreadLocalMap",
                "",
                Some("thread \"w\""),
                &[],
            ),
            (
                Some(9),
                "java.lang.ThreadLocal$ThreadLocalMap$Entry[]",
                "table",
                None,
                &[],
            ),
        ];
        let p = tree(&rows);
        let inside: Vec<usize> = (0..p.nodes.len())
            .filter(|&n| p.is_collection_inside(n))
            .collect();
        assert_eq!(inside, [1, 6, 7, 9, 10]);
        // The holder climbs out of the insides to the collection that owns them, and no
        // further than the first object that is none.
        assert_eq!(p.fold(1), 0);
        assert_eq!(p.fold(7), 5);
        assert_eq!(p.fold(10), 9);
        assert_eq!((p.fold(2), p.fold(3), p.fold(4), p.fold(8)), (2, 3, 4, 8));
    }

    #[test]
    fn internals_are_collection_insides() {
        assert!(is_internal("java.util.HashMap$Node[]"));
        assert!(is_internal("java.util.LinkedList$Node"));
        assert!(is_internal("java.lang.ThreadLocal$ThreadLocalMap$Entry"));
        assert!(!is_internal("java.util.HashMap"));
        assert!(!is_internal("App$Node"));
    }
}
