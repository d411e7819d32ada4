//! What allocation samples stand for: the rules the agent applies when it estimates the heap,
//! which a reader applies again when it splits what the agent sent (`memcity export --pprof`
//! splits a type's objects by its sites as the agent splits them in the city). Written once,
//! here, so that both ends agree.

/// How many allocations of `size` bytes one sample stands for at `interval` bytes between
/// samples: the inverse of the chance that the JVM samples such an object. The JVM draws the
/// bytes between samples from an exponential distribution with mean `interval` (a Poisson
/// process over allocated bytes), so an object of `size` bytes holds a sampling point with
/// probability `1 - exp(-size / interval)`: about `size / interval` for small objects, and
/// below 1 even for objects as large as the interval (63 % at `size == interval`). An
/// interval of 0 samples every allocation.
pub fn weight(interval: u64, size: f64) -> f64 {
    if interval == 0 {
        return 1.0;
    }
    let size = size.max(1.0);
    let p = -(-size / interval as f64).exp_m1();
    if p > 0.0 {
        (1.0 / p).max(1.0)
    } else {
        interval as f64 / size
    }
}

/// Splits `total` in proportion to `weights` so that the parts add up to it exactly: each part
/// rounded down, then the largest remainders rounded up (as many rounds as the rounding left
/// over, which floating point can make more than one).
pub fn apportion(total: u64, weights: &[f64]) -> Vec<u64> {
    let sum: f64 = weights.iter().sum();
    if weights.is_empty() || sum <= 0.0 {
        return vec![0; weights.len()];
    }
    let exact: Vec<f64> = weights.iter().map(|w| total as f64 * w / sum).collect();
    let mut parts: Vec<u64> = exact.iter().map(|e| e.floor() as u64).collect();
    // Past 2^53 a double rounds: the parts rounded down may come to more than the total. The
    // excess comes off the largest parts first, so that they add up exactly all the same.
    let sum = |parts: &[u64]| parts.iter().map(|&p| u128::from(p)).sum::<u128>();
    let mut over = sum(&parts).saturating_sub(u128::from(total));
    while over > 0 {
        let largest = (0..parts.len())
            .max_by_key(|&i| parts[i])
            .expect("weights are not empty");
        let off = over.min(u128::from(parts[largest])) as u64;
        parts[largest] -= off;
        over -= u128::from(off);
    }
    let mut left = (u128::from(total) - sum(&parts)) as u64;
    let mut order: Vec<usize> = (0..weights.len()).collect();
    order.sort_by(|&a, &b| {
        let fa = exact[a] - exact[a].floor();
        let fb = exact[b] - exact[b].floor();
        fb.total_cmp(&fa).then(a.cmp(&b))
    });
    for &i in order.iter().cycle() {
        if left == 0 {
            break;
        }
        parts[i] += 1;
        left -= 1;
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_are_inverse_sampling_probabilities() {
        // Small objects: about interval / size.
        assert!((weight(1024, 16.0) - 64.5).abs() < 0.1);
        // An object as large as the interval is sampled 63 % of the time, not always.
        assert!((weight(1024, 1024.0) - 1.582).abs() < 0.001);
        assert!((weight(1024, (1 << 20) as f64) - 1.0).abs() < 1e-9);
        assert_eq!(weight(0, 16.0), 1.0);
        assert_eq!(weight(1 << 19, 0.0), weight(1 << 19, 1.0));
    }

    #[test]
    fn apportion_sums_exactly() {
        assert_eq!(apportion(10, &[1.0, 1.0, 1.0]), [4, 3, 3]);
        assert_eq!(apportion(0, &[1.0]), [0]);
        assert_eq!(apportion(5, &[]), Vec::<u64>::new());
        assert_eq!(apportion(7, &[0.0, 0.0]), [0, 0]);
        let parts = apportion(1_000_003, &[0.3, 0.3, 0.4]);
        assert_eq!(parts.iter().sum::<u64>(), 1_000_003);
        // Parts of a total past what a double holds exactly still add up to it.
        for total in [(1u64 << 60) + 7, (1 << 60) - 1, u64::MAX] {
            for weights in [&[1.0][..], &[1.0; 3], &[0.2, 0.8]] {
                let sum: u64 = apportion(total, weights).iter().sum();
                assert_eq!(sum, total, "{total} by {weights:?}");
            }
        }
    }
}
