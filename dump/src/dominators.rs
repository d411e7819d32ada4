//! Dominator tree and retained sizes of a heap graph.
//!
//! An object's retained size, what the heap would shrink by if that object became garbage, is its
//! own (shallow) size plus that of every object it dominates: every object such that all paths
//! from the GC roots to it pass through the first one. The dominator tree is what lets a heap
//! view show retained sizes and who keeps what alive.
//!
//! # Algorithm
//!
//! SEMI-NCA (L. Georgiadis, "Linear-Time Algorithms for Dominators and Related Problems", PhD
//! thesis, Princeton 2005, pp. 21-23; evaluated in Georgiadis, Tarjan & Werneck, "Finding
//! Dominators in Practice", JGAA 10(1), 2006). It computes semidominators as Lengauer-Tarjan
//! does, with simple path compression, and then each immediate dominator as the nearest common
//! ancestor, in the dominator tree built so far, of the vertex's DFS parent and semidominator.
//! It was the fastest in practice in that evaluation, needs none of Lengauer-Tarjan's buckets,
//! and, unlike the iterative (Cooper-Harvey-Kennedy) algorithm, does not degrade into many
//! passes on deep graphs such as long linked lists, which heaps have.
//!
//! A virtual root R sits above the GC roots, so that the forest they span is one tree and an
//! object held from two roots is dominated by R alone ([`ROOT`]).
//!
//! Nothing recurses: heap graphs have paths millions of objects long, which would overflow the
//! thread's stack.
//!
//! # Memory
//!
//! Vertices are numbered in DFS preorder and every working array holds `u32`s indexed by that
//! number, so that an object the roots do not reach (often a large share of a dump) costs only its
//! entry in the one object-indexed array. The peak, while semidominators are computed, is
//! **1 u32 per object + 4 u32 per reached object + 1 u32 per reference outside the DFS tree**
//! (per object: DFS number; per reached object: DFS parent, predecessor offset that becomes the
//! semidominator, forest ancestor, best semidominator on the compressed path; per non-tree
//! reference: its source), plus 1 u32 per distinct GC root. Values read together sit side by side
//! in pairs, for one cache miss instead of two. The DFS before that holds 1 u32 per object + 2 per
//! reached object and its stack: 1 u32 per object on the current DFS path plus the references of
//! those not yet followed. The result keeps 1 u32 per object + 1 per reached object.

use std::fmt;

/// A virtual root above all GC roots: the immediate dominator of a GC root, and of anything that
/// no single object dominates (such as an object held from two roots).
pub const ROOT: u32 = u32::MAX;

/// Not reachable from any GC root: outside the tree, so it has no dominator and retains nothing.
pub const UNREACHED: u32 = u32::MAX - 1;

/// DFS number of the virtual root. DFS number 0 means "none", so that a zeroed array means "not
/// numbered yet" and costs nothing to initialise.
const R: u32 = 1;

/// On the DFS stack, separates an object's pending successors from its DFS parent's, so popping it
/// means the object is finished. It is never an object, since `compute` refuses object counts
/// that would reach it.
const END: u32 = u32::MAX;

/// The smallest object count refused: object indices must stay below [`UNREACHED`] and `END`,
/// and DFS numbers (objects, plus R, plus 0 for "none") must fit a `u32`.
const MAX_OBJECTS: usize = u32::MAX as usize - 2;

/// Returned when a heap graph does not fit the 32-bit indices that keep memory at a few `u32` per
/// object: `u32::MAX - 2` objects or more, or more than `u32::MAX` references outside the DFS tree
/// (whose predecessor offsets would overflow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TooBig {
    /// The number of objects of the refused graph.
    pub objects: usize,
}

impl fmt::Display for TooBig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a heap graph of {} objects is too big to compute dominators of: at most {} objects \
             and {} references outside the DFS tree are supported",
            self.objects,
            MAX_OBJECTS - 1,
            u32::MAX
        )
    }
}

impl std::error::Error for TooBig {}

/// The dominator tree of a heap graph, rooted at the virtual [`ROOT`] above the GC roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dominators {
    /// Per object (dense index 0..n): its immediate dominator's object index, ROOT, or UNREACHED.
    idom: Vec<u32>,
    /// Reached objects in DFS preorder (so every object comes after its immediate dominator).
    preorder: Vec<u32>,
}

/// The dominator tree's children lists, for walking the tree downwards (a retained-size tree
/// view), which `idom` alone, pointing upwards, cannot do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Children {
    /// Per object, where its children start in `list`; one more entry closes the last list. One
    /// flat list with offsets (CSR) instead of a `Vec` per object, which would cost an allocation
    /// and 24 bytes for each of millions of objects.
    offsets: Vec<u32>,
    /// All children, grouped by immediate dominator, each group in DFS preorder.
    list: Vec<u32>,
    /// The children of the virtual ROOT: the top-level dominators, in DFS preorder.
    top: Vec<u32>,
}

impl Children {
    /// The objects that `v` immediately dominates, in DFS preorder: empty for a leaf or an
    /// unreached object. Panics if `v` is not one of the objects.
    pub fn of(&self, v: u32) -> &[u32] {
        let v = v as usize;
        &self.list[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    /// The objects the virtual ROOT immediately dominates (the GC roots, and objects held by
    /// several of them), in DFS preorder: where a tree view starts.
    pub fn top(&self) -> &[u32] {
        &self.top
    }
}

/// Per DFS number, the two values that the passes over references read together, side by side so
/// that a random access costs one cache miss instead of two.
#[derive(Debug, Clone, Copy)]
struct Vertex {
    /// The DFS number of the tree parent (0 for the unused 0 and for R); from phase 4 on, of the
    /// immediate dominator.
    parent: u32,
    /// Phase 1: how many predecessors will be stored for this vertex (those other than its DFS
    /// parent and itself). Phase 2: where its predecessors end. From phase 3 on: its
    /// semidominator.
    pos: u32,
}

/// Per DFS number, the path-compressed forest of phase 3, whose two values `eval` reads together.
#[derive(Debug, Clone, Copy)]
struct Forest {
    /// For a linked vertex, an ancestor in the DFS tree, its parent until path compression.
    ancestor: u32,
    /// For a linked vertex, the smallest semidominator on its forest path up to `ancestor`.
    /// Storing that value instead of the vertex holding it (Lengauer-Tarjan's `label`) works
    /// because only the value is ever used.
    best: u32,
}

/// State of the depth-first search, bundled so that visiting an object can be a method.
struct Dfs {
    /// Per object: its DFS number, 0 while not visited.
    pre: Vec<u32>,
    /// Per DFS number: parent and predecessor count.
    vertices: Vec<Vertex>,
    /// The successors not followed yet of the objects on the DFS path, each object's behind an
    /// [`END`]: one shared stack in place of a frame per object.
    stack: Vec<u32>,
    /// The sum of the predecessor counts: the length of the predecessor list, which must fit
    /// `u32` offsets.
    stored: u32,
}

impl Dfs {
    /// Numbers `obj`, a child of DFS number `from`, and queues its successors; returns its number.
    fn visit<F>(&mut self, obj: u32, from: u32, successors: &mut F) -> u32
    where
        F: FnMut(u32, &mut dyn FnMut(u32)),
    {
        // Cannot overflow: at most n + 1 < u32::MAX numbers are handed out.
        let number = self.vertices.len() as u32;
        self.pre[obj as usize] = number;
        self.vertices.push(Vertex {
            parent: from,
            pos: 0,
        });
        self.stack.push(END);
        let objects = self.pre.len();
        let stack = &mut self.stack;
        successors(obj, &mut |w| {
            // Checked here because an out-of-range value such as END would be taken as a marker
            // instead of panicking when used as an index.
            assert!(
                (w as usize) < objects,
                "reference {obj} -> {w} points past the {objects} objects"
            );
            stack.push(w);
        });
        number
    }

    /// Records a reference to DFS number `to` that is neither a tree edge nor a self-loop.
    fn count_predecessor(&mut self, to: u32) -> Result<(), ()> {
        self.stored = self.stored.checked_add(1).ok_or(())?;
        self.vertices[to as usize].pos += 1;
        Ok(())
    }
}

impl Dominators {
    /// Computes the dominator tree of `n` objects `0..n` whose GC roots are `roots` (duplicates
    /// allowed: they are deduplicated) and whose references are reported by
    /// `successors(v, push)`, which calls `push(w)` for every reference `v -> w` (repeats and
    /// self-loops allowed, any `w < n`).
    ///
    /// `successors` is called exactly twice for each reached object (once in the DFS, once in
    /// object order to gather predecessors, the order a heap dump is stored in) and never for an
    /// unreached one, so that it can read references straight from a dump instead of from an
    /// in-memory copy of the graph. Both calls for an object must report the same references.
    ///
    /// # Errors
    ///
    /// [`TooBig`] if `n >= u32::MAX - 2`, or if more than `u32::MAX` references lie outside the
    /// DFS tree; in that case `successors` may have been called once per reached object.
    ///
    /// # Panics
    ///
    /// If a root or a reference is `>= n`, or, in some cases, if the two calls of `successors`
    /// for an object report different references.
    pub fn compute(
        n: usize,
        roots: &[u32],
        mut successors: impl FnMut(u32, &mut dyn FnMut(u32)),
    ) -> Result<Self, TooBig> {
        let too_big = TooBig { objects: n };
        if n >= MAX_OBJECTS {
            return Err(too_big);
        }
        // Deduplicated so that each root is R's successor once in both passes over the edges,
        // which must agree on how many predecessors each vertex has.
        let mut roots = roots.to_vec();
        roots.sort_unstable();
        roots.dedup();
        if let Some(&last) = roots.last() {
            assert!(
                (last as usize) < n,
                "GC root {last} is not one of the {n} objects"
            );
        }

        let dfs = dfs(n, &roots, &mut successors).map_err(|()| too_big)?;
        let Dfs {
            pre,
            mut vertices,
            stack,
            stored,
        } = dfs;
        drop(stack);
        vertices.shrink_to_fit();
        let pred = predecessors(&mut vertices, &pre, &roots, stored, &mut successors);
        semidominators(&mut vertices, &pred);
        drop(pred);
        nearest_common_ancestors(&mut vertices);
        Ok(to_objects(pre, &vertices))
    }

    /// The immediate dominator of object `v`: the object nearest to `v` on every path from the GC
    /// roots to it, [`ROOT`] if no object is, [`UNREACHED`] if no path exists. Panics if `v` is
    /// not one of the objects.
    pub fn idom(&self, v: u32) -> u32 {
        self.idom[v as usize]
    }

    /// How many objects the GC roots reach: the size of the tree without the virtual root.
    pub fn reached(&self) -> usize {
        self.preorder.len()
    }

    /// The reached objects in DFS preorder, where each comes after its immediate dominator, so
    /// that one pass in reverse can sum a value up the tree without recursion.
    pub fn preorder(&self) -> &[u32] {
        &self.preorder
    }

    /// Retained size per object: its shallow size plus everything it dominates; 0 for unreached
    /// objects. `shallow` is called once per reached object.
    pub fn retained(&self, shallow: impl Fn(u32) -> u64) -> Vec<u64> {
        let mut retained = vec![0u64; self.idom.len()];
        for &v in &self.preorder {
            retained[v as usize] = shallow(v);
        }
        // In reverse preorder every object is complete, all it dominates coming after it, before
        // it is added to its immediate dominator.
        for &v in self.preorder.iter().rev() {
            let up = self.idom[v as usize];
            if up != ROOT {
                retained[up as usize] += retained[v as usize];
            }
        }
        retained
    }

    /// The objects each object immediately dominates (children lists as CSR: offsets per object +
    /// flat list), with the ROOT's children (the top-level dominators) separately. Built with a
    /// counting sort: a `Vec` per object would cost an allocation and 24 bytes for each.
    pub fn children(&self) -> Children {
        let n = self.idom.len();
        let mut top = Vec::new();
        let mut offsets = vec![0u32; n + 1];
        for &v in &self.preorder {
            match self.idom[v as usize] {
                ROOT => top.push(v),
                up => offsets[up as usize] += 1,
            }
        }
        // Inclusive prefix sums, so each entry starts at the end of its list and, filled from the
        // back in reverse preorder, ends at its start with the list in preorder.
        let mut sum = 0u32;
        for entry in offsets.iter_mut() {
            sum += *entry;
            *entry = sum;
        }
        let mut list = vec![0u32; sum as usize];
        for &v in self.preorder.iter().rev() {
            let up = self.idom[v as usize];
            if up != ROOT {
                let slot = &mut offsets[up as usize];
                *slot -= 1;
                list[*slot as usize] = v;
            }
        }
        Children { offsets, list, top }
    }
}

/// The smallest semidominator on the forest path from linked vertex `v` up to, not including, its
/// forest root, compressing the path so that later queries on it are short. Vertices above `w` are
/// the linked ones. The path is walked up by reversing its `ancestor` links and back down along the
/// reversed links (pointer reversal), instead of keeping a stack, since it can be millions of
/// vertices long.
/// Phase 1: iterative DFS from R, numbering objects in preorder and counting each vertex's
/// predecessors other than its DFS parent, so that phase 2 can place them without a third call
/// of `successors`. The DFS parent is left out because it is the initial semidominator anyway,
/// which saves one stored u32 per reached object. Err: more stored predecessors than a u32
/// counts.
fn dfs(
    n: usize,
    roots: &[u32],
    successors: &mut impl FnMut(u32, &mut dyn FnMut(u32)),
) -> Result<Dfs, ()> {
    let mut dfs = Dfs {
        pre: vec![0; n],
        // Grown as objects are reached rather than reserved for all of them, which on a huge
        // dump with few reached objects could ask for more address space than overcommit
        // allows. Large blocks grow by remapping, without copying, in glibc.
        vertices: Vec::new(),
        stack: Vec::new(),
        stored: 0,
    };
    let none = Vertex { parent: 0, pos: 0 };
    dfs.vertices.extend([none, none]);
    for &root in roots {
        let p = dfs.pre[root as usize];
        if p != 0 {
            // Already reached through another root's references: R -> root is then a non-tree
            // edge like any other.
            if dfs.vertices[p as usize].parent != R {
                dfs.count_predecessor(p)?;
            }
            continue;
        }
        let mut current = dfs.visit(root, R, successors);
        while let Some(w) = dfs.stack.pop() {
            if w == END {
                current = dfs.vertices[current as usize].parent;
                continue;
            }
            let p = dfs.pre[w as usize];
            if p == 0 {
                current = dfs.visit(w, current, successors);
            } else if p != current && dfs.vertices[p as usize].parent != current {
                // Self-loops and repeats of a tree edge are skipped: neither can lower a
                // semidominator.
                dfs.count_predecessor(p)?;
            }
        }
    }
    Ok(dfs)
}

/// Phase 2: predecessors by DFS number, as CSR. Each `pos` starts as the exclusive prefix sum
/// of the counts and advances as its vertex's list fills, ending at the end of that list:
/// vertex w's predecessors are then pred[vertices[w - 1].pos..vertices[w].pos]. Counting in
/// phase 1 and filling here keeps the peak at one u32 per stored predecessor, where collecting
/// (vertex, predecessor) pairs and sorting them would take two.
fn predecessors(
    vertices: &mut [Vertex],
    pre: &[u32],
    roots: &[u32],
    stored: u32,
    successors: &mut impl FnMut(u32, &mut dyn FnMut(u32)),
) -> Vec<u32> {
    let mut sum = 0u32;
    for vertex in vertices.iter_mut() {
        let count = vertex.pos;
        vertex.pos = sum;
        sum += count;
    }
    let mut pred = vec![0u32; stored as usize];
    let mut filled = 0u32;
    for &root in roots {
        let vertex = &mut vertices[pre[root as usize] as usize];
        if vertex.parent != R {
            pred[vertex.pos as usize] = R;
            vertex.pos += 1;
            filled += 1;
        }
    }
    for (obj, &d) in pre.iter().enumerate() {
        if d == 0 {
            continue;
        }
        successors(obj as u32, &mut |w| {
            let p = pre[w as usize];
            assert!(
                p != 0,
                "successors({obj}) reported {w} only on its second call"
            );
            let vertex = &mut vertices[p as usize];
            if p != d && vertex.parent != d {
                pred[vertex.pos as usize] = d;
                vertex.pos += 1;
                filled += 1;
            }
        });
    }
    assert_eq!(
        filled, stored,
        "successors reported different references on its two calls"
    );
    pred
}

/// Phase 3: semidominators, in decreasing DFS number, left in each vertex's `pos`. A vertex is
/// linked into the forest right after its semidominator is known, so the vertices above the
/// current one are exactly the linked ones: that test replaces a "not linked" 0 in `ancestor`,
/// which can therefore start as the parent and needs no separate link step.
fn semidominators(vertices: &mut [Vertex], pred: &[u32]) {
    let last = vertices.len() - 1;
    let mut forest: Vec<Forest> = vertices
        .iter()
        .map(|vertex| Forest {
            ancestor: vertex.parent,
            best: 0,
        })
        .collect();
    for w in (2..=last).rev() {
        let mut semi = vertices[w].parent;
        for &v in &pred[vertices[w - 1].pos as usize..vertices[w].pos as usize] {
            // A vertex not linked yet still has its own number as semidominator.
            let candidate = if v as usize <= w {
                v
            } else {
                eval(&mut forest, v, w as u32)
            };
            semi = semi.min(candidate);
        }
        // Where w's predecessors end is read by no later (smaller) vertex, so that field takes
        // the semidominator, sparing an array.
        vertices[w].pos = semi;
        forest[w].best = semi;
    }
}

/// Phase 4: the immediate dominator is the nearest common ancestor, in the dominator tree of
/// the smaller vertices, of the DFS parent and the semidominator: walk up from the parent until
/// at or above the semidominator. Done in place over the `parent` fields, each read only
/// before being overwritten.
fn nearest_common_ancestors(vertices: &mut [Vertex]) {
    for w in 2..vertices.len() {
        let Vertex { parent, pos: semi } = vertices[w];
        let mut x = parent;
        while x > semi {
            x = vertices[x as usize].parent;
        }
        vertices[w].parent = x;
    }
}

/// Phase 5: back to object indices. `pre` becomes the result in place, and the preorder is
/// rebuilt from it only now, since nothing before needed number -> object.
fn to_objects(pre: Vec<u32>, vertices: &[Vertex]) -> Dominators {
    let last = vertices.len() - 1;
    let mut preorder = vec![0u32; last - 1];
    for (obj, &d) in pre.iter().enumerate() {
        if d != 0 {
            preorder[d as usize - 2] = obj as u32;
        }
    }
    let mut result = pre;
    for entry in result.iter_mut() {
        *entry = match *entry {
            0 => UNREACHED,
            d => match vertices[d as usize].parent {
                R => ROOT,
                i => preorder[i as usize - 2],
            },
        };
    }
    Dominators {
        idom: result,
        preorder,
    }
}

fn eval(forest: &mut [Forest], v: u32, w: u32) -> u32 {
    // 0, the number no vertex has, ends the reversed links.
    let mut below = 0u32;
    let mut x = v;
    loop {
        let up = forest[x as usize].ancestor;
        if up <= w {
            break;
        }
        forest[x as usize].ancestor = below;
        below = x;
        x = up;
    }
    // x is the topmost linked vertex of the path: its ancestor is the forest root, which every
    // vertex of the path now points to directly.
    let Forest {
        ancestor: root,
        best: mut min,
    } = forest[x as usize];
    while below != 0 {
        let node = &mut forest[below as usize];
        below = node.ancestor;
        min = min.min(node.best);
        node.best = min;
        node.ancestor = root;
    }
    min
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Adjacency lists from an edge list.
    fn graph(n: usize, edges: &[(u32, u32)]) -> Vec<Vec<u32>> {
        let mut adj = vec![Vec::new(); n];
        for &(from, to) in edges {
            adj[from as usize].push(to);
        }
        adj
    }

    /// Computes dominators, checking the promises about calls of `successors` and the shape of
    /// the result that every test relies on.
    fn run(adj: &[Vec<u32>], roots: &[u32]) -> Dominators {
        let mut calls = vec![0u32; adj.len()];
        let dom = Dominators::compute(adj.len(), roots, |v, push| {
            calls[v as usize] += 1;
            for &w in &adj[v as usize] {
                push(w);
            }
        })
        .unwrap();
        for (v, &c) in calls.iter().enumerate() {
            let expected = if dom.idom(v as u32) == UNREACHED {
                0
            } else {
                2
            };
            assert_eq!(c, expected, "calls of successors({v})");
        }
        check_shape(&dom);
        dom
    }

    /// The preorder holds each reached object once, after its immediate dominator, and the
    /// children lists are the inverse of `idom`.
    fn check_shape(dom: &Dominators) {
        let n = dom.idom.len();
        let mut position = vec![usize::MAX; n];
        for (i, &v) in dom.preorder().iter().enumerate() {
            assert_eq!(position[v as usize], usize::MAX, "{v} twice in preorder");
            position[v as usize] = i;
        }
        let mut reached = 0;
        for v in 0..n as u32 {
            match dom.idom(v) {
                UNREACHED => assert_eq!(position[v as usize], usize::MAX),
                ROOT => reached += 1,
                up => {
                    reached += 1;
                    assert!(position[up as usize] < position[v as usize]);
                }
            }
        }
        assert_eq!(dom.reached(), reached);
        let children = dom.children();
        let mut top: Vec<u32> = (0..n as u32).filter(|&v| dom.idom(v) == ROOT).collect();
        let mut got = children.top().to_vec();
        top.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, top);
        for v in 0..n as u32 {
            let mut expected: Vec<u32> = (0..n as u32).filter(|&w| dom.idom(w) == v).collect();
            let mut got = children.of(v).to_vec();
            expected.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, expected, "children of {v}");
        }
    }

    fn idoms(dom: &Dominators) -> Vec<u32> {
        (0..dom.idom.len() as u32).map(|v| dom.idom(v)).collect()
    }

    #[test]
    fn chain() {
        let dom = run(&graph(5, &[(0, 1), (1, 2), (2, 3), (3, 4)]), &[0]);
        assert_eq!(idoms(&dom), [ROOT, 0, 1, 2, 3]);
        assert_eq!(dom.preorder(), [0, 1, 2, 3, 4]);
        assert_eq!(dom.retained(|_| 1), [5, 4, 3, 2, 1]);
    }

    #[test]
    fn diamond() {
        // a=0 (the root), b=1, c=2, d=3.
        let dom = run(&graph(4, &[(0, 1), (0, 2), (1, 3), (2, 3)]), &[0]);
        assert_eq!(idoms(&dom), [ROOT, 0, 0, 0]);
        assert_eq!(dom.retained(|v| 1 << v), [15, 2, 4, 8]);
    }

    #[test]
    fn cycle() {
        let dom = run(&graph(3, &[(0, 1), (1, 2), (2, 0)]), &[0]);
        assert_eq!(idoms(&dom), [ROOT, 0, 1]);
        assert_eq!(dom.retained(|_| 1), [3, 2, 1]);
    }

    #[test]
    fn roots_sharing_a_child() {
        // Roots 0, 1, 2 all hold 3, which holds 4.
        let dom = run(&graph(5, &[(0, 3), (1, 3), (2, 3), (3, 4)]), &[2, 0, 1, 0]);
        assert_eq!(idoms(&dom), [ROOT, ROOT, ROOT, ROOT, 3]);
        assert_eq!(dom.retained(|_| 1), [1, 1, 1, 2, 1]);
        assert_eq!(dom.children().top().len(), 4);
    }

    #[test]
    fn unreached() {
        // 2 is referenced only by 1, which nothing references; 3 by 0 and 1.
        let dom = run(&graph(4, &[(1, 2), (0, 3), (1, 3)]), &[0]);
        assert_eq!(idoms(&dom), [ROOT, UNREACHED, UNREACHED, 0]);
        assert_eq!(dom.reached(), 2);
        assert_eq!(dom.retained(|_| 10), [20, 0, 0, 10]);
        assert!(dom.children().of(1).is_empty());
    }

    #[test]
    fn no_roots_or_no_objects() {
        let dom = run(&graph(3, &[(0, 1)]), &[]);
        assert_eq!(idoms(&dom), [UNREACHED; 3]);
        assert_eq!(dom.retained(|_| 1), [0, 0, 0]);
        let dom = run(&[], &[]);
        assert_eq!(dom.reached(), 0);
        assert!(dom.children().top().is_empty());
    }

    #[test]
    fn self_loops_and_duplicate_edges() {
        let edges = [
            (0, 0),
            (0, 1),
            (0, 1),
            (1, 1),
            (1, 2),
            (1, 2),
            (2, 2),
            (2, 1),
            (0, 1),
        ];
        let dom = run(&graph(3, &edges), &[0, 0]);
        assert_eq!(idoms(&dom), [ROOT, 0, 1]);
        assert_eq!(dom.retained(|v| u64::from(v) + 1), [6, 5, 3]);
    }

    #[test]
    fn root_referenced_from_the_heap() {
        // Roots 0 and 1; 0 -> 1 -> 2 and 2 -> 0. Whichever root the DFS starts from reaches the
        // other through the heap first, yet each stays dominated by ROOT alone.
        let adj = graph(3, &[(0, 1), (1, 2), (2, 0)]);
        for roots in [[0, 1], [1, 0]] {
            let dom = run(&adj, &roots);
            assert_eq!(idoms(&dom), [ROOT, ROOT, 1], "roots {roots:?}");
            assert_eq!(dom.retained(|_| 1), [1, 2, 1]);
        }
    }

    /// Figure 1 of Lengauer & Tarjan, "A Fast Algorithm for Finding Dominators in a Flowgraph"
    /// (TOPLAS 1979), with its dominator tree (their figure 2). R is an object here, the only GC
    /// root, so its idom is ROOT and the back edge K -> R is a heap reference to a root.
    #[test]
    fn lengauer_tarjan_example() {
        const NAMES: &str = "RABCDEFGHIJKL";
        let id = |c: char| NAMES.find(c).unwrap() as u32;
        let edges: Vec<(u32, u32)> = [
            "RA", "RB", "RC", "AD", "BA", "BD", "BE", "CF", "CG", "DL", "EH", "FI", "GI", "GJ",
            "HE", "HK", "IK", "JI", "KI", "KR", "LH",
        ]
        .iter()
        .map(|e| {
            let mut c = e.chars();
            (id(c.next().unwrap()), id(c.next().unwrap()))
        })
        .collect();
        let dom = run(&graph(13, &edges), &[id('R')]);
        // idom(A..E, H, I, K) = R, idom(F) = idom(G) = C, idom(J) = G, idom(L) = D.
        let expected = [
            ('R', ROOT),
            ('A', id('R')),
            ('B', id('R')),
            ('C', id('R')),
            ('D', id('R')),
            ('E', id('R')),
            ('F', id('C')),
            ('G', id('C')),
            ('H', id('R')),
            ('I', id('R')),
            ('J', id('G')),
            ('K', id('R')),
            ('L', id('D')),
        ];
        for (v, up) in expected {
            assert_eq!(dom.idom(id(v)), up, "idom({v})");
        }
        let retained = dom.retained(|_| 1);
        assert_eq!(retained[id('R') as usize], 13);
        assert_eq!(retained[id('C') as usize], 4);
        assert_eq!(retained[id('G') as usize], 2);
        assert_eq!(retained[id('D') as usize], 2);
        let children = dom.children();
        assert_eq!(children.top(), [id('R')]);
        let mut of_r = children.of(id('R')).to_vec();
        of_r.sort_unstable();
        assert_eq!(of_r, "ABCDEHIK".chars().map(id).collect::<Vec<_>>());
        let mut of_c = children.of(id('C')).to_vec();
        of_c.sort_unstable();
        assert_eq!(of_c, [id('F'), id('G')]);
        assert_eq!(children.of(id('G')), [id('J')]);
        assert_eq!(children.of(id('D')), [id('L')]);
        assert!(children.of(id('K')).is_empty());
    }

    #[test]
    fn retained_of_holders_sharing_objects() {
        // 0 is the root holding holders 1 and 2; 1 holds 3 alone, both hold 4 and 5 (4 -> 5).
        let edges = [(0, 1), (0, 2), (1, 3), (1, 4), (2, 4), (4, 5)];
        let adj = graph(6, &edges);
        let shallow = |v: u32| [1, 10, 100, 1000, 10_000, 100_000][v as usize];
        let dom = run(&adj, &[0]);
        assert_eq!(idoms(&dom), [ROOT, 0, 0, 1, 0, 4]);
        assert_eq!(
            dom.retained(shallow),
            [111_111, 1010, 100, 1000, 110_000, 100_000]
        );
        // With the holders as the roots, the shared objects have no common dominator but ROOT.
        let dom = run(&adj, &[1, 2]);
        assert_eq!(idoms(&dom), [UNREACHED, ROOT, ROOT, 1, ROOT, 4]);
        assert_eq!(
            dom.retained(shallow),
            [0, 1010, 100, 1000, 110_000, 100_000]
        );
    }

    #[test]
    fn children_lists_are_in_preorder() {
        let dom = run(&graph(5, &[(0, 1), (1, 2), (0, 3), (3, 4), (0, 4)]), &[0]);
        let children = dom.children();
        let position = |v: u32| dom.preorder().iter().position(|&x| x == v).unwrap();
        let of_root = children.of(0);
        assert_eq!(of_root.len(), 3);
        assert!(of_root.windows(2).all(|p| position(p[0]) < position(p[1])));
        assert_eq!(children.of(1), [2]);
    }

    #[test]
    fn refuses_too_many_objects() {
        let err =
            Dominators::compute(u32::MAX as usize - 2, &[], |_, _| unreachable!()).unwrap_err();
        assert_eq!(err.objects, u32::MAX as usize - 2);
        assert!(err.to_string().contains("too big"), "{err}");
    }

    #[test]
    #[should_panic(expected = "points past")]
    fn rejects_references_out_of_range() {
        let _ = Dominators::compute(2, &[0], |_, push| push(2));
    }

    #[test]
    fn long_linked_list() {
        // Deep enough that any recursion, in the DFS or in path compression, would overflow.
        const N: u32 = 2_000_000;
        let mut calls = 0u64;
        let dom = Dominators::compute(N as usize, &[0], |v, push| {
            calls += 1;
            if v + 1 < N {
                push(v + 1);
            }
        })
        .unwrap();
        assert_eq!(calls, 2 * u64::from(N));
        assert_eq!(dom.reached(), N as usize);
        assert_eq!(dom.idom(0), ROOT);
        assert!((1..N).all(|v| dom.idom(v) == v - 1));
        let retained = dom.retained(|v| u64::from(v) + 1);
        let n = u64::from(N);
        assert_eq!(retained[0], n * (n + 1) / 2);
        assert_eq!(retained[N as usize - 1], n);
    }

    #[test]
    fn long_path_compression() {
        // A long list whose tail points back at its second element: the semidominator of the
        // second one needs one eval over the whole uncompressed list.
        const N: u32 = 1_000_000;
        let dom = Dominators::compute(N as usize, &[0], |v, push| {
            push((v + 1) % N);
            if v == N - 1 {
                push(1);
            }
        })
        .unwrap();
        assert!((1..N).all(|v| dom.idom(v) == v - 1));
    }

    /// xorshift64*: deterministic pseudo-random numbers without a crate.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: u64) -> u32 {
            (self.next() % n) as u32
        }
    }

    /// Objects reachable from the roots when `removed` (if any) is taken out of the graph.
    fn reachable(adj: &[Vec<u32>], roots: &[u32], removed: Option<u32>) -> Vec<bool> {
        let mut seen = vec![false; adj.len()];
        let mut todo: Vec<u32> = Vec::new();
        for &r in roots {
            if Some(r) != removed && !seen[r as usize] {
                seen[r as usize] = true;
                todo.push(r);
            }
        }
        while let Some(v) = todo.pop() {
            for &w in &adj[v as usize] {
                if Some(w) != removed && !seen[w as usize] {
                    seen[w as usize] = true;
                    todo.push(w);
                }
            }
        }
        seen
    }

    /// Dominators and retained sizes straight from the definitions: v dominates w iff removing v
    /// makes w unreachable; the immediate dominator is the strict dominator that all others
    /// dominate; the retained size sums over the dominated set.
    fn naive(
        adj: &[Vec<u32>],
        roots: &[u32],
        shallow: &dyn Fn(u32) -> u64,
    ) -> (Vec<u32>, Vec<u64>) {
        let n = adj.len();
        let reached = reachable(adj, roots, None);
        // dominates[v][w]: v strictly dominates w.
        let dominates: Vec<Vec<bool>> = (0..n as u32)
            .map(|v| {
                let without = reachable(adj, roots, Some(v));
                (0..n)
                    .map(|w| reached[w] && w != v as usize && !without[w])
                    .collect()
            })
            .collect();
        let mut idom = vec![UNREACHED; n];
        let mut retained = vec![0u64; n];
        for w in 0..n {
            if !reached[w] {
                continue;
            }
            let strict: Vec<usize> = (0..n).filter(|&v| dominates[v][w]).collect();
            let nearest: Vec<usize> = strict
                .iter()
                .copied()
                .filter(|&v| strict.iter().all(|&u| u == v || dominates[u][v]))
                .collect();
            assert!(nearest.len() <= 1);
            idom[w] = nearest.first().map_or(ROOT, |&v| v as u32);
            retained[w] = shallow(w as u32)
                + (0..n)
                    .filter(|&x| dominates[w][x])
                    .map(|x| shallow(x as u32))
                    .sum::<u64>();
        }
        (idom, retained)
    }

    #[test]
    fn random_graphs_match_the_definition() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for case in 0..300 {
            let n = 1 + rng.below(40) as usize;
            let roots: Vec<u32> = (0..1 + rng.below(3)).map(|_| rng.below(n as u64)).collect();
            // Varying density, from trees and chains to tangles.
            let max_degree = 1 + rng.below(4);
            let mut adj = vec![Vec::new(); n];
            for (v, out) in adj.iter_mut().enumerate() {
                for _ in 0..rng.below(u64::from(max_degree) + 1) {
                    // Often a near neighbour, to get long paths rather than only shallow tangles.
                    let w = if rng.below(2) == 0 {
                        (v as u32 + 1 + rng.below(3)) % n as u32
                    } else {
                        rng.below(n as u64)
                    };
                    out.push(w);
                }
            }
            let shallow = |v: u32| u64::from(v) * 7 + 1;
            let (idom, retained) = naive(&adj, &roots, &shallow);
            let dom = run(&adj, &roots);
            assert_eq!(
                idoms(&dom),
                idom,
                "case {case}: roots {roots:?}, graph {adj:?}"
            );
            assert_eq!(dom.retained(shallow), retained, "case {case}");
        }
    }
}
