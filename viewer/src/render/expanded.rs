//! The unit box every box is drawn from, and the expanded path: boxes written out corner by
//! corner as the instanced shader would place and shade them, only the faces toward the eye,
//! and boxes a few pixels across as their outlines.

use glam::Vec3;

use super::instances::Instance;

/// One corner of the expanded path: where it is and its shaded color.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Corner {
    position: [f32; 3],
    color: [u8; 4],
}

/// Faces of the unit box (its bottom is never seen), and corners of a face.
const BOX_FACES: usize = 5;
pub(super) const FACE_CORNERS: usize = 4;

/// Whether face `face` of the unit box (`unit_box`'s order: top, +x, -x, +z, -z), placed at
/// `lo` and sized `size`, turns toward `eye`: the others are culled anyway, so the expanded path
/// does not send them (most boxes show three of five).
fn faces_eye(face: usize, lo: [f32; 3], size: [f32; 3], eye: Vec3) -> bool {
    match face {
        0 => eye.y > lo[1] + size[1],
        1 => eye.x > lo[0] + size[0],
        2 => eye.x < lo[0],
        3 => eye.z > lo[2] + size[2],
        _ => eye.z < lo[2],
    }
}

/// How much of a box is written out, by how wide it looks (radians seen from the eye; 0.001 is
/// about a pixel of a 720 px high window at the camera's 45 degrees). Triangles, not pixels,
/// are what a city of many small buildings costs a software rasterizer (llvmpipe's rasterizer
/// threads spend most of a 50,000-building frame on triangles a few pixels across), so small
/// boxes get fewer of them, drawn where the box's faces would be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Detail {
    /// Every face toward the eye: two triangles each, six for most boxes.
    Faces,
    /// Under about 8 px: the box's outline, the hexagon its roof and two sides make, as four
    /// triangles shaded as the faces are at its corners (the shades blend across it).
    Outline,
    /// Under about 4 px: the outline as one quad, from the far roof corner to the near bottom
    /// corner and half-way down the two sides (it leaves out about half of each side).
    Coarse,
}

impl Detail {
    fn of(b: &Instance, eye: Vec3) -> Detail {
        let center = Vec3::from(b.lo) + Vec3::from(b.size) / 2.0;
        let across = b.size[0].max(b.size[1]).max(b.size[2]) / center.distance(eye);
        if across < 0.004 {
            Detail::Coarse
        } else if across < 0.008 {
            Detail::Outline
        } else {
            Detail::Faces
        }
    }
}

/// Writes the corner of box `b` at `unit` (a corner of the unit box) shaded `shade`.
fn push_corner(out: &mut Vec<Corner>, b: &Instance, unit: [f32; 3], shade: f32) {
    let byte = |v: f32| (v.clamp(0.0, 1.0) * 255.0 + 0.5) as u8;
    out.push(Corner {
        position: [
            b.lo[0] + unit[0] * b.size[0],
            b.lo[1] + unit[1] * b.size[1],
            b.lo[2] + unit[2] * b.size[2],
        ],
        color: [
            byte(b.tint[0] * shade),
            byte(b.tint[1] * shade),
            byte(b.tint[2] * shade),
            byte(b.tint[3]),
        ],
    });
}

/// Box `b`'s outline seen from `eye` (`Outline` or `Coarse`), when it shows its roof and two
/// sides; false, with nothing written, when it shows fewer faces (from straight above a row
/// of boxes), which then go face by face.
///
/// The outline is the hexagon of the far roof corner, the roof corners on either side of it
/// and the three bottom corners below those and the near corner: two quads fanned from the far
/// corner, counter-clockwise as the faces are. Coarse, one quad: the far corner, the side
/// corners half-way down, the near bottom corner.
fn outline(
    b: &Instance,
    unit: &[[f32; 4]],
    eye: Vec3,
    detail: Detail,
    out: &mut Vec<Corner>,
) -> bool {
    let shows = |face: usize| faces_eye(face, b.lo, b.size, eye);
    if !shows(0) {
        return false;
    }
    // The near corner's x and z in the unit box, and the sides that meet there.
    let (near_x, x_face) = match (shows(1), shows(2)) {
        (true, _) => (1.0, 1),
        (_, true) => (0.0, 2),
        _ => return false,
    };
    let (near_z, z_face) = match (shows(3), shows(4)) {
        (true, _) => (1.0, 3),
        (_, true) => (0.0, 4),
        _ => return false,
    };
    let shade = |face: usize| unit[face * FACE_CORNERS][3];
    // The roof's corners (x, z) in the top face's counter-clockwise order, from the far one.
    let roof = [[0.0, 0.0], [0.0, 1.0], [1.0, 1.0], [1.0, 0.0f32]];
    let far = roof
        .iter()
        .position(|c| c[0] != near_x && c[1] != near_z)
        .expect("one roof corner differs from the near one in both x and z");
    let [t, a, n, c] = [0, 1, 2, 3].map(|k| roof[(far + k) % 4]);
    // The side under the roof's edge from corner `r` to the near corner.
    let side = |r: [f32; 2]| {
        if r[0] == near_x {
            shade(x_face)
        } else {
            shade(z_face)
        }
    };
    let (top, near) = (shade(0), (shade(x_face) + shade(z_face)) / 2.0);
    let mut corner = |xz: [f32; 2], y: f32, shade: f32| {
        push_corner(out, b, [xz[0], y, xz[1]], shade);
    };
    if detail == Detail::Coarse {
        corner(t, 1.0, top);
        corner(a, 0.5, (top + side(a)) / 2.0);
        corner(n, 0.0, near);
        corner(c, 0.5, (top + side(c)) / 2.0);
    } else {
        for quad in [
            [(t, 1.0), (a, 1.0), (a, 0.0), (n, 0.0)],
            [(t, 1.0), (n, 0.0), (c, 0.0), (c, 1.0)],
        ] {
            for (xz, y) in quad {
                let shade = match (y == 1.0, xz == n) {
                    (true, _) => top,
                    (false, true) => near,
                    (false, false) => side(xz),
                };
                corner(xz, y, shade);
            }
        }
    }
    true
}

/// `boxes` written out corner by corner as the instanced shader would place and shade them,
/// seen from `eye`: four corners a face, or fewer for boxes a few pixels across ([`Detail`]).
pub(super) fn expand(boxes: &[Instance], unit: &[[f32; 4]], eye: Vec3, out: &mut Vec<Corner>) {
    out.clear();
    out.reserve(boxes.len() * 3 * FACE_CORNERS);
    for b in boxes {
        let detail = Detail::of(b, eye);
        if detail != Detail::Faces && outline(b, unit, eye, detail, out) {
            continue;
        }
        for face in 0..BOX_FACES {
            if faces_eye(face, b.lo, b.size, eye) {
                for c in &unit[face * FACE_CORNERS..(face + 1) * FACE_CORNERS] {
                    push_corner(out, b, [c[0], c[1], c[2]], c[3]);
                }
            }
        }
    }
}

/// A unit box without its bottom face: 5 faces of 4 corners, counter-clockwise seen from outside,
/// each with a shade by direction so neighbours read apart.
pub(super) fn unit_box() -> (Vec<[f32; 4]>, Vec<u16>) {
    let faces: [([[f32; 3]; 4], f32); 5] = [
        // top (+y)
        (
            [[0., 1., 0.], [0., 1., 1.], [1., 1., 1.], [1., 1., 0.]],
            1.0,
        ),
        // +x
        (
            [[1., 0., 0.], [1., 1., 0.], [1., 1., 1.], [1., 0., 1.]],
            0.82,
        ),
        // -x
        (
            [[0., 0., 1.], [0., 1., 1.], [0., 1., 0.], [0., 0., 0.]],
            0.62,
        ),
        // +z
        (
            [[1., 0., 1.], [1., 1., 1.], [0., 1., 1.], [0., 0., 1.]],
            0.72,
        ),
        // -z
        (
            [[0., 0., 0.], [0., 1., 0.], [1., 1., 0.], [1., 0., 0.]],
            0.55,
        ),
    ];
    let mut corners = Vec::new();
    let mut indices = Vec::new();
    for (quad, shade) in faces {
        let base = corners.len() as u16;
        corners.extend(quad.iter().map(|c| [c[0], c[1], c[2], shade]));
        indices.extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
    }
    (corners, indices)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Mat4;

    /// The expanded path writes out what the instanced shader computes: each corner at
    /// `lo + corner * size`, colored `tint * shade`, the unit box's indices repeated per box.
    #[test]
    fn expanded_boxes_are_the_instanced_boxes_written_out() {
        let (unit, indices) = unit_box();
        assert_eq!(
            (unit.len(), indices.len()),
            (BOX_FACES * FACE_CORNERS, BOX_FACES * 6)
        );
        let boxes = [
            Instance::new(
                Vec3::new(1.0, 2.0, 3.0),
                Vec3::new(3.0, 12.0, 4.0),
                [1.0, 0.5, 0.0],
                1.0,
            ),
            Instance::new(Vec3::ZERO, Vec3::ONE, [0.2, 0.2, 0.2], 0.4),
        ];
        let mut out = Vec::new();
        // Seen from above, +x and +z, near enough that neither box is drawn as its outline: the
        // top, +x and +z faces of each box, no others.
        expand(&boxes, &unit, Vec3::splat(20.0), &mut out);
        let per_box = 3 * FACE_CORNERS;
        assert_eq!(out.len(), 2 * per_box);
        // The first box's top face (shade 1): its far corner at lo + size.
        assert!(out[..4].iter().any(|c| c.position == [3.0, 12.0, 4.0]));
        assert_eq!(out[0].color, [255, 128, 0, 255]);
        // The +x face, darker by its shade, all at x = 3; the glass box keeps its alpha.
        assert!(out[4..8].iter().all(|c| c.position[0] == 3.0));
        assert_eq!(out[4].color[0], (0.82f32 * 255.0 + 0.5) as u8);
        assert_eq!(out[per_box].color[3], (0.4f32 * 255.0 + 0.5) as u8);
        assert!(out[per_box..]
            .iter()
            .all(|c| c.position.iter().all(|&v| v == 0.0 || v == 1.0)));
        // From below and -x, -z: the -x and -z faces only (the top turns away).
        expand(&boxes[..1], &unit, Vec3::splat(-100.0), &mut out);
        assert_eq!(out.len(), 2 * FACE_CORNERS);
        assert!(out[..4].iter().all(|c| c.position[0] == 1.0));
        assert!(out[4..].iter().all(|c| c.position[2] == 3.0));
    }

    /// Signed areas on screen, seen from `eye` toward the origin, of the triangles in
    /// `corners` (quads of four; positive: counter-clockwise, kept by back-face culling).
    fn screen_areas(corners: &[Corner], eye: Vec3) -> Vec<f32> {
        let view_projection = Mat4::perspective_rh_gl(0.8, 1.0, 0.1, 1e5)
            * Mat4::look_at_rh(eye, Vec3::ZERO, Vec3::Y);
        let screen = |c: &Corner| {
            let p = view_projection * Vec3::from(c.position).extend(1.0);
            glam::Vec2::new(p.x / p.w, p.y / p.w)
        };
        corners
            .chunks(FACE_CORNERS)
            .flat_map(|quad| {
                let q: Vec<glam::Vec2> = quad.iter().map(screen).collect();
                [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]
            })
            .map(|[a, b, c]| (b - a).perp_dot(c - a) / 2.0)
            .collect()
    }

    /// A box a few pixels across is drawn as its outline: from each side, the outline covers on
    /// screen what the box's three faces cover, in four triangles instead of six, all turned
    /// toward the eye; smaller still, one quad covers most of it.
    #[test]
    fn small_boxes_are_drawn_as_their_outline() {
        let (unit, _) = unit_box();
        let b = Instance::new(Vec3::ZERO, Vec3::new(1.0, 1.5, 0.8), [0.5; 3], 0.3);
        let faces = |eye: Vec3| {
            let mut corners = Vec::new();
            for face in (0..BOX_FACES).filter(|&f| faces_eye(f, b.lo, b.size, eye)) {
                for c in &unit[face * FACE_CORNERS..(face + 1) * FACE_CORNERS] {
                    push_corner(&mut corners, &b, [c[0], c[1], c[2]], c[3]);
                }
            }
            screen_areas(&corners, eye)
        };
        let expanded = |eye: Vec3| {
            let mut corners = Vec::new();
            expand(&[b], &unit, eye, &mut corners);
            screen_areas(&corners, eye)
        };
        for (dx, dz) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
            let direction = Vec3::new(dx * 0.8, 1.0, dz * 0.6).normalize();
            // Seen from `distance` times the box's width away.
            let eye = |distance: f32| Vec3::new(0.5, 0.75, 0.4) + direction * 1.5 * distance;
            let near = expanded(eye(50.0));
            assert_eq!(near, faces(eye(50.0)), "near, every face");
            assert_eq!(near.len(), 6);
            // About 6 px (0.006 rad).
            let (outline, whole) = (expanded(eye(166.0)), faces(eye(166.0)));
            assert_eq!(outline.len(), 4, "from {dx}, {dz}");
            assert!(outline.iter().all(|&a| a > 0.0), "{outline:?}");
            let covered = outline.iter().sum::<f32>() / whole.iter().sum::<f32>();
            assert!((covered - 1.0).abs() < 1e-3, "the outline covers {covered}");
            // About 3 px.
            let (coarse, whole) = (expanded(eye(333.0)), faces(eye(333.0)));
            assert_eq!(coarse.len(), 2, "from {dx}, {dz}");
            assert!(coarse.iter().all(|&a| a > 0.0), "{coarse:?}");
            let covered = coarse.iter().sum::<f32>() / whole.iter().sum::<f32>();
            assert!((0.6..1.0).contains(&covered), "the quad covers {covered}");
        }
    }
}
