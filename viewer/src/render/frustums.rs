//! The reference frustums and a suspect's trace: few, so drawn through macroquad's meshes.

use glam::Vec3;
use macroquad::prelude::{Mesh, Vertex};
use memcity_city::mapping::Rgb;

use super::{color, MESH_VERTICES};

/// Meshes of boxes, split where u16 indices run out.
#[derive(Default)]
pub(super) struct Batch {
    meshes: Vec<Mesh>,
}

impl Batch {
    fn current(&mut self) -> &mut Mesh {
        if self
            .meshes
            .last()
            .is_none_or(|m| m.vertices.len() + 8 > MESH_VERTICES)
        {
            self.meshes.push(Mesh {
                vertices: Vec::new(),
                indices: Vec::new(),
                texture: None,
            });
        }
        self.meshes.last_mut().expect("just pushed")
    }

    /// A frustum from roof to roof (thesis 5.5): an 8-sided tube whose radius goes from `r0` at
    /// `from` to `r1` at `to`, shaded around its axis, drawn from both sides (it is open).
    pub(super) fn push_frustum(&mut self, from: Vec3, to: Vec3, r0: f32, r1: f32, rgb: Rgb) {
        const SIDES: usize = 8;
        let axis = (to - from).normalize_or_zero();
        if axis == Vec3::ZERO {
            return;
        }
        // Thin references stay visible: at least a sliver.
        let (r0, r1) = (r0.max(0.6), r1.max(0.6));
        let helper = if axis.y.abs() < 0.9 { Vec3::Y } else { Vec3::X };
        let u = axis.cross(helper).normalize();
        let v = axis.cross(u);
        for side in 0..SIDES {
            let mesh = self.current();
            let angle = |k: usize| k as f32 / SIDES as f32 * std::f32::consts::TAU;
            let dir = |k: usize| u * angle(k).cos() + v * angle(k).sin();
            let shade = 0.7 + 0.3 * dir(side).y.max(0.0);
            let c = color([rgb[0] * shade, rgb[1] * shade, rgb[2] * shade], 1.0);
            let base = mesh.vertices.len() as u16;
            for p in [
                from + dir(side) * r0,
                from + dir(side + 1) * r0,
                to + dir(side + 1) * r1,
                to + dir(side) * r1,
            ] {
                mesh.vertices.push(Vertex::new(p.x, p.y, p.z, 0.0, 0.0, c));
            }
            mesh.indices
                .extend_from_slice(&[base, base + 1, base + 2, base, base + 2, base + 3]);
            mesh.indices
                .extend_from_slice(&[base, base + 2, base + 1, base, base + 3, base + 2]);
        }
    }

    pub(super) fn draw(&self) {
        for mesh in &self.meshes {
            macroquad::models::draw_mesh(mesh);
        }
    }
}
