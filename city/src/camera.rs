//! Camera math that matches the renderer: macroquad's `Camera3D` draws with
//! `perspective_rh_gl(fovy, aspect, z_near, z_far) * look_at_rh(position, target, up)`, and so does
//! [`OrbitCamera::view_projection`], so a test can project a building's roof to the pixel the
//! window shows it at, and a click can be turned into a ray for picking.
//!
//! World axes: the city lies in the x-z plane (layout x -> world x, layout y -> world z), y up.

use glam::{Mat4, Vec3, Vec4};

/// Clip planes. The renderer passes the same to macroquad's `Camera3D` (`z_near`, `z_far`).
/// macroquad's own default near plane (0.01) leaves a 24-bit depth buffer about 6 units of
/// resolution at 1,000 units away, so stacked 1-unit district slabs would fight; 1.0 gives 0.06.
pub const Z_NEAR: f32 = 1.0;
pub const Z_FAR: f32 = 20000.0;

/// An orbit camera around a target on the ground: yaw around the vertical, pitch above the
/// horizon (never under the city), distance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OrbitCamera {
    pub target: Vec3,
    /// Radians around the vertical axis.
    pub yaw: f32,
    /// Radians above the horizon, kept within [`MIN_PITCH`, `MAX_PITCH`].
    pub pitch: f32,
    pub distance: f32,
    /// Vertical field of view, radians.
    pub fovy: f32,
}

/// The bird's eye's vertical field of view, degrees: nearly a map's orthographic view.
pub const BIRDS_EYE_FOVY: f32 = 12.0;
/// The camera never dips under the city: at least this far above the horizon.
pub const MIN_PITCH: f32 = 0.08;
/// Straight down (a bird's-eye view) would make `look_at` degenerate; stop just short.
pub const MAX_PITCH: f32 = 1.55;

impl OrbitCamera {
    /// A view of a city of side `size` centered on it, from the south-east and above.
    pub fn overview(size: f32) -> Self {
        Self {
            target: Vec3::new(size / 2.0, 0.0, size / 2.0),
            yaw: 0.8,
            pitch: 0.6,
            distance: size * 1.3,
            fovy: 45f32.to_radians(),
        }
    }

    /// The overview framed for a city whose tallest building is `tallest`: far enough back that
    /// towers stay in the picture.
    pub fn framing(size: f32, tallest: f32) -> Self {
        Self {
            target: Vec3::new(size / 2.0, tallest * 0.3, size / 2.0),
            distance: size.max(tallest) * 1.9,
            ..Self::overview(size)
        }
    }

    /// The bird's-eye view (Memory Cities VII.A, key `B`): from straight above the city, as a
    /// map reads: a narrow field of view from far away, so towers do not lean outward as they
    /// would seen from close above with a wide lens, and the whole city fits the picture.
    pub fn birds_eye(size: f32, tallest: f32) -> Self {
        let fovy = BIRDS_EYE_FOVY.to_radians();
        Self {
            pitch: MAX_PITCH,
            yaw: 0.0,
            distance: size * 0.62 / (fovy / 2.0).tan() + tallest,
            fovy,
            ..Self::overview(size)
        }
    }

    /// Near and far clip planes for this camera: the near plane moves out with the distance, so
    /// the depth buffer keeps its precision for a camera far away (the bird's eye), where a fixed
    /// near plane would let stacked district slabs fight.
    pub fn clip_planes(&self) -> (f32, f32) {
        (
            (self.distance * 0.05).max(Z_NEAR),
            Z_FAR.max(self.distance * 3.0),
        )
    }

    pub fn position(&self) -> Vec3 {
        let pitch = self.pitch.clamp(MIN_PITCH, MAX_PITCH);
        let horizontal = self.distance * pitch.cos();
        self.target
            + Vec3::new(
                horizontal * self.yaw.cos(),
                self.distance * pitch.sin(),
                horizontal * self.yaw.sin(),
            )
    }

    pub fn orbit(&mut self, d_yaw: f32, d_pitch: f32) {
        self.yaw += d_yaw;
        self.pitch = (self.pitch + d_pitch).clamp(MIN_PITCH, MAX_PITCH);
    }

    pub fn zoom(&mut self, factor: f32) {
        self.distance = (self.distance * factor).clamp(1.0, Z_FAR / 2.0);
    }

    /// Moves the target along the ground, in the camera's own left-right and forward directions.
    pub fn pan(&mut self, right: f32, forward: f32) {
        let to_target = self.target - self.position();
        let ahead = Vec3::new(to_target.x, 0.0, to_target.z).normalize_or_zero();
        let side = ahead.cross(Vec3::Y);
        self.target += side * right + ahead * forward;
    }

    /// The camera `t` (0 to 1) of the way from `self` to `to`, for flights between views: eased
    /// in and out, turning the short way round.
    pub fn toward(&self, to: &OrbitCamera, t: f32) -> OrbitCamera {
        let t = t.clamp(0.0, 1.0);
        let e = t * t * (3.0 - 2.0 * t);
        let tau = std::f32::consts::TAU;
        let turn =
            (to.yaw - self.yaw + std::f32::consts::PI).rem_euclid(tau) - std::f32::consts::PI;
        let mix = |a: f32, b: f32| a + (b - a) * e;
        OrbitCamera {
            target: self.target.lerp(to.target, e),
            yaw: self.yaw + turn * e,
            pitch: mix(self.pitch, to.pitch).clamp(MIN_PITCH, MAX_PITCH),
            // Distances span orders of magnitude: interpolate them geometrically.
            distance: (self.distance.ln() + (to.distance.ln() - self.distance.ln()) * e).exp(),
            fovy: mix(self.fovy, to.fovy),
        }
    }

    /// The matrix the renderer draws with.
    pub fn view_projection(&self, aspect: f32) -> Mat4 {
        let (near, far) = self.clip_planes();
        Mat4::perspective_rh_gl(self.fovy, aspect, near, far)
            * Mat4::look_at_rh(self.position(), self.target, Vec3::Y)
    }

    /// The pixel (origin top-left) where a world point appears in a `width` x `height` view, or
    /// `None` if it is behind the camera.
    pub fn project(&self, point: Vec3, width: f32, height: f32) -> Option<(f32, f32)> {
        let clip = self.view_projection(width / height) * point.extend(1.0);
        if clip.w <= 0.0 {
            return None;
        }
        let ndc = clip.truncate() / clip.w;
        Some(((ndc.x + 1.0) / 2.0 * width, (1.0 - ndc.y) / 2.0 * height))
    }

    /// The ray through a pixel: origin (on the near plane) and unit direction.
    pub fn ray(&self, x: f32, y: f32, width: f32, height: f32) -> (Vec3, Vec3) {
        let inverse = self.view_projection(width / height).inverse();
        let ndc_x = x / width * 2.0 - 1.0;
        let ndc_y = 1.0 - y / height * 2.0;
        let unproject = |z: f32| {
            let p: Vec4 = inverse * Vec4::new(ndc_x, ndc_y, z, 1.0);
            p.truncate() / p.w
        };
        let near = unproject(-1.0);
        let far = unproject(1.0);
        (near, (far - near).normalize())
    }
}

/// Distance along a ray to an axis-aligned box, if it hits (slab method).
pub fn ray_box(origin: Vec3, dir: Vec3, min: Vec3, max: Vec3) -> Option<f32> {
    let mut t_near = f32::NEG_INFINITY;
    let mut t_far = f32::INFINITY;
    for axis in 0..3 {
        let (o, d, lo, hi) = (origin[axis], dir[axis], min[axis], max[axis]);
        if d.abs() < 1e-12 {
            if o < lo || o > hi {
                return None;
            }
            continue;
        }
        let (mut t0, mut t1) = ((lo - o) / d, (hi - o) / d);
        if t0 > t1 {
            std::mem::swap(&mut t0, &mut t1);
        }
        t_near = t_near.max(t0);
        t_far = t_far.min(t1);
        if t_near > t_far {
            return None;
        }
    }
    if t_far < 0.0 {
        None
    } else {
        Some(t_near.max(0.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flights_start_and_end_on_their_views_and_turn_the_short_way() {
        let from = OrbitCamera {
            yaw: 3.0,
            ..OrbitCamera::framing(1000.0, 200.0)
        };
        let to = OrbitCamera {
            yaw: -3.0,
            ..OrbitCamera::birds_eye(1000.0, 200.0)
        };
        assert_eq!(from.toward(&to, 0.0), from);
        let end = from.toward(&to, 1.0);
        assert!(
            (end.yaw.sin() - to.yaw.sin()).abs() < 1e-4
                && (end.yaw.cos() - to.yaw.cos()).abs() < 1e-4
        );
        assert!((end.pitch - to.pitch).abs() < 1e-6 && (end.distance - to.distance).abs() < 1e-2);
        // From 3.0 to -3.0 the short way goes up through pi, not down through 0.
        let mid = from.toward(&to, 0.5);
        assert!(mid.yaw > 3.0, "{}", mid.yaw);
        // Every camera on the way stays above the horizon.
        for i in 0..=20 {
            let c = from.toward(&to, i as f32 / 20.0);
            assert!(c.pitch >= MIN_PITCH && c.position().y > 0.0);
        }
    }

    #[test]
    fn the_target_projects_to_the_center_of_the_view() {
        let cam = OrbitCamera::overview(1000.0);
        let (x, y) = cam.project(cam.target, 1280.0, 720.0).unwrap();
        assert!(
            (x - 640.0).abs() < 0.01 && (y - 360.0).abs() < 0.01,
            "{x},{y}"
        );
        // Something higher up appears higher on the screen.
        let (_, y_up) = cam
            .project(cam.target + Vec3::Y * 50.0, 1280.0, 720.0)
            .unwrap();
        assert!(y_up < y);
        // Behind the camera: no pixel.
        let behind = cam.position() + (cam.position() - cam.target);
        assert!(cam.project(behind, 1280.0, 720.0).is_none());
    }

    #[test]
    fn rays_go_back_through_projected_points() {
        let cam = OrbitCamera::overview(1000.0);
        let point = Vec3::new(300.0, 40.0, 700.0);
        let (px, py) = cam.project(point, 800.0, 600.0).unwrap();
        let (origin, dir) = cam.ray(px, py, 800.0, 600.0);
        let to_point = (point - origin).normalize();
        assert!(dir.dot(to_point) > 0.999_99, "{dir} vs {to_point}");
    }

    #[test]
    fn the_camera_never_dips_under_the_city() {
        let mut cam = OrbitCamera::overview(100.0);
        cam.orbit(0.0, -10.0);
        assert_eq!(cam.pitch, MIN_PITCH);
        assert!(cam.position().y > 0.0);
        cam.orbit(0.0, 10.0);
        assert_eq!(cam.pitch, MAX_PITCH);
        let bird = OrbitCamera::birds_eye(100.0, 0.0);
        let p = bird.position();
        let down = (bird.target - p).normalize();
        // Within 2 degrees of straight down, far away, the whole city in its field of view.
        assert!(down.dot(-Vec3::Y) > 2f32.to_radians().cos(), "{down}");
        assert!(p.y > 500.0, "{p}");
        for corner in [Vec3::ZERO, Vec3::new(100.0, 0.0, 100.0)] {
            let (x, y) = bird.project(corner, 1280.0, 720.0).unwrap();
            assert!(
                (0.0..1280.0).contains(&x) && (0.0..720.0).contains(&y),
                "{x},{y}"
            );
        }
    }

    #[test]
    fn pan_and_zoom() {
        let mut cam = OrbitCamera::overview(100.0);
        let before = cam.target;
        cam.pan(0.0, 10.0);
        assert!((cam.target - before).length() > 9.99);
        assert_eq!(cam.target.y, 0.0, "pans along the ground");
        cam.zoom(0.5);
        assert!((cam.distance - 65.0).abs() < 1e-3);
    }

    #[test]
    fn ray_box_hits_misses_and_starts_inside() {
        let (min, max) = (Vec3::ZERO, Vec3::ONE);
        assert_eq!(
            ray_box(Vec3::new(-1.0, 0.5, 0.5), Vec3::X, min, max),
            Some(1.0)
        );
        assert_eq!(ray_box(Vec3::new(-1.0, 2.0, 0.5), Vec3::X, min, max), None);
        assert_eq!(
            ray_box(Vec3::new(2.0, 0.5, 0.5), Vec3::X, min, max),
            None,
            "box behind"
        );
        assert_eq!(ray_box(Vec3::splat(0.5), Vec3::Y, min, max), Some(0.0));
    }
}
