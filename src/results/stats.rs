//! The statistics of repeats and of the statistical gate: τ-bench's `pass^k` and `pass@k`,
//! a mean's 95% interval, the paired sign-flip permutation test on per-case means, the
//! exact McNemar test on pass/fail pairs, and an estimate of the repeats that would decide
//! an inconclusive drop.
//!
//! The random draws come from a small generator written here with a fixed seed: the same
//! two runs give the same p-value on every machine and every check, so a verdict never
//! flips between two replays of the same cassettes.

/// How many random sign flips the permutation test draws when the cases are too many to
/// enumerate every flip.
pub const ROUNDS: usize = 10_000;

/// Up to this many differing cases, the sign-flip test enumerates every flip (2^n): the
/// p-value is then exact.
const EXACT_UP_TO: usize = 12;

/// The seed of every draw: fixed, so a verdict is reproducible.
const SEED: u64 = 0x05ee_d0fe_7a15;

/// SplitMix64: a small, well-mixed generator (Steele, Lea, Flood 2014), enough for
/// resampling and reproducible from its seed alone.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A uniform draw in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn choose(n: u64, k: u64) -> f64 {
    if k > n {
        return 0.0;
    }
    let k = k.min(n - k);
    (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
}

/// τ-bench's `pass^k` of one case tried `n` times with `c` successes: the chance that `k`
/// tries drawn without replacement from the `n` all pass, `C(c, k) / C(n, k)`. With
/// `k = n` it is 1 when every try passed, else 0. An experiment's `pass^k` is the mean of
/// its cases'.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    if n == 0 || k > n {
        return 0.0;
    }
    choose(c, k) / choose(n, k)
}

/// `pass@k` of one case tried `n` times with `c` successes (Chen et al. 2021): the chance
/// that at least one of `k` tries drawn from the `n` passes, `1 - C(n - c, k) / C(n, k)`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    if n == 0 || k > n {
        return 0.0;
    }
    1.0 - choose(n - c.min(n), k) / choose(n, k)
}

/// The mean of `values` and the half-width of its 95% confidence interval (Student's t
/// over the values' sample deviation); the half-width is `None` with fewer than two values.
pub fn mean_ci95(values: &[f64]) -> Option<(f64, Option<f64>)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Some((mean, None));
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    Some((mean, Some(t95(n - 1) * (var / n as f64).sqrt())))
}

/// [`mean_ci95`] from running sums: how many values, their sum and their sum of squares.
pub fn ci95_of_sums(n: usize, sum: f64, sum_sq: f64) -> Option<f64> {
    if n < 2 {
        return None;
    }
    let mean = sum / n as f64;
    let var = ((sum_sq - n as f64 * mean * mean) / (n - 1) as f64).max(0.0);
    Some(t95(n - 1) * (var / n as f64).sqrt())
}

/// The two-sided 95% quantile of Student's t with `df` degrees of freedom.
fn t95(df: usize) -> f64 {
    const T: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => T[df - 1],
        31..=60 => 2.000,
        61..=120 => 1.980,
        _ => 1.960,
    }
}

/// The one-sided p-value that the paired differences `diffs` (candidate − baseline, one per
/// shared case) are this low by chance: under "no change" each difference is as likely
/// positive as negative, so the test flips their signs at random and counts how often the
/// mean is as low as the one observed. Every flip is enumerated up to 12 differing cases;
/// beyond, [`ROUNDS`] random ones (with the observed one counted, so the p-value is never
/// 0 and the test never rejects more often than `alpha`). `None` with no difference at all.
pub fn sign_flip_p(diffs: &[f64]) -> Option<f64> {
    sign_flip_p_with(diffs, ROUNDS, SEED)
}

/// [`sign_flip_p`] with its rounds and seed.
pub fn sign_flip_p_with(diffs: &[f64], rounds: usize, seed: u64) -> Option<f64> {
    // A zero difference flips to itself: only the others move the mean.
    let nz: Vec<f64> = diffs.iter().copied().filter(|d| d.abs() > 1e-12).collect();
    if diffs.is_empty() {
        return None;
    }
    if nz.is_empty() {
        return Some(1.0);
    }
    let observed: f64 = nz.iter().sum();
    // Sums equal up to rounding count as equal: the observed flip is one of them.
    let tol = 1e-9 * nz.iter().map(|d| d.abs()).sum::<f64>().max(1.0);
    if nz.len() <= EXACT_UP_TO {
        let total = 1u64 << nz.len();
        let mut low = 0u64;
        for mask in 0..total {
            let s: f64 = nz
                .iter()
                .enumerate()
                .map(|(i, d)| if mask >> i & 1 == 1 { -d } else { *d })
                .sum();
            if s <= observed + tol {
                low += 1;
            }
        }
        return Some(low as f64 / total as f64);
    }
    let mut rng = Rng::new(seed);
    let mut low = 0usize;
    for _ in 0..rounds {
        let mut s = 0.0;
        let mut bits = 0u64;
        for (i, d) in nz.iter().enumerate() {
            if i % 64 == 0 {
                bits = rng.next_u64();
            }
            s += if bits >> (i % 64) & 1 == 1 { -d } else { *d };
        }
        if s <= observed + tol {
            low += 1;
        }
    }
    Some((low + 1) as f64 / (rounds + 1) as f64)
}

/// The exact McNemar test (one-sided) on pass/fail pairs: `lost` cases passed in the
/// baseline and fail now, `gained` failed and pass now. Under "no change" a discordant
/// case is as likely either way; the p-value is the chance of `lost` or more of the
/// `lost + gained`, a fair coin's binomial tail.
pub fn mcnemar_p(lost: u64, gained: u64) -> f64 {
    let n = lost + gained;
    if n == 0 {
        return 1.0;
    }
    let tail: f64 = (lost..=n).map(|i| choose(n, i)).sum();
    (tail / 2f64.powi(n as i32)).min(1.0)
}

/// The tries per case that would likely decide a drop the test left undecided. The spread
/// of the per-case differences `diffs` (at `k` tries) is the cases' own (which more tries
/// do not shrink) plus the tries' noise, `within / k` (`within`: the mean over the cases of
/// their tries' variance, both sides summed), which falls as 1/K'. The drop clears `alpha`
/// once `se(K')² = (between + within / K') / n ≤ (mean / z)²`. An estimate, never below
/// `k + 1`; `None` when there is no drop, or when more tries cannot decide it (the spread is
/// between the cases: only more cases would).
pub fn repeats_to_decide(diffs: &[f64], within: f64, k: usize, alpha: f64) -> Option<usize> {
    let n = diffs.len();
    let (mean, _) = mean_ci95(diffs)?;
    if n < 2 || mean >= 0.0 || within <= 0.0 {
        return None;
    }
    let k = k.max(1);
    let var = diffs.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let between = (var - within / k as f64).max(0.0);
    let z = z_one_sided(alpha);
    let room = n as f64 * mean * mean / (z * z) - between;
    if room <= 0.0 {
        return None;
    }
    let want = (within / room).ceil();
    Some((want as usize).max(k + 1))
}

/// The sample variance of `values` (0 for fewer than two).
pub fn variance(values: &[f64]) -> f64 {
    let n = values.len();
    if n < 2 {
        return 0.0;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64
}

/// The one-sided normal quantile of `alpha`: the common levels from a table, any other by
/// bisection on [`normal_cdf`] (enough for an estimate of tries).
fn z_one_sided(alpha: f64) -> f64 {
    let p = 1.0 - alpha.clamp(1e-9, 0.5);
    match p {
        p if (p - 0.95).abs() < 1e-12 => 1.6449,
        p if (p - 0.99).abs() < 1e-12 => 2.3263,
        p if (p - 0.9).abs() < 1e-12 => 1.2816,
        p if (p - 0.975).abs() < 1e-12 => 1.9600,
        _ => {
            // Bisection on the normal CDF.
            let (mut lo, mut hi) = (0.0f64, 8.0f64);
            for _ in 0..60 {
                let mid = (lo + hi) / 2.0;
                if normal_cdf(mid) < p {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            (lo + hi) / 2.0
        }
    }
}

/// The standard normal CDF (Abramowitz–Stegun 7.1.26 for erf, error under 1.5e-7).
fn normal_cdf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * (x.abs() / std::f64::consts::SQRT_2));
    let y = 1.0
        - (((((1.061_405_429 * t - 1.453_152_027) * t) + 1.421_413_741) * t - 0.284_496_736) * t
            + 0.254_829_592)
            * t
            * (-(x * x / 2.0)).exp();
    if x >= 0.0 {
        0.5 * (1.0 + y)
    } else {
        0.5 * (1.0 - y)
    }
}

/// The paired test of one experiment's shared cases: the p-value that the candidate is
/// this much lower by chance. Every case scored 0 or 1 once on both sides (pass rates):
/// the exact McNemar test; else the sign-flip test on the per-case means.
pub fn paired_p(pairs: &[(f64, f64)], binary: bool) -> Option<f64> {
    if pairs.is_empty() {
        return None;
    }
    if binary {
        let lost = pairs.iter().filter(|(b, c)| *b > 0.5 && *c < 0.5).count() as u64;
        let gained = pairs.iter().filter(|(b, c)| *b < 0.5 && *c > 0.5).count() as u64;
        return Some(mcnemar_p(lost, gained));
    }
    let diffs: Vec<f64> = pairs.iter().map(|(b, c)| c - b).collect();
    sign_flip_p(&diffs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_hat_k_is_tau_benchs_all_k_tries_pass_checked_by_hand() {
        // τ-bench: n = 4 tries, c = 3 passed. pass^1 = 3/4; pass^2 = C(3,2)/C(4,2) = 3/6;
        // pass^3 = C(3,3)/C(4,3) = 1/4; pass^4 = 0 (one try failed).
        assert_eq!(pass_hat_k(4, 3, 1), 0.75);
        assert_eq!(pass_hat_k(4, 3, 2), 0.5);
        assert_eq!(pass_hat_k(4, 3, 3), 0.25);
        assert_eq!(pass_hat_k(4, 3, 4), 0.0);
        // k = n: 1 exactly when every try passed.
        assert_eq!(pass_hat_k(3, 3, 3), 1.0);
        assert_eq!(pass_hat_k(3, 2, 3), 0.0);
        // pass@k: at least one of k passes. 4 tries, 1 passed: pass@2 = 1 - C(3,2)/C(4,2).
        assert_eq!(pass_at_k(4, 1, 2), 0.5);
        assert_eq!(pass_at_k(3, 1, 3), 1.0);
        assert_eq!(pass_at_k(3, 0, 3), 0.0);
        // An experiment of three cases tried 3 times, passing 3, 2 and 0 times: pass^3 is
        // the mean of 1, 0, 0; pass@3 the mean of 1, 1, 0.
        let cases = [3u64, 2, 0];
        let hat: f64 = cases.iter().map(|&c| pass_hat_k(3, c, 3)).sum::<f64>() / 3.0;
        let at: f64 = cases.iter().map(|&c| pass_at_k(3, c, 3)).sum::<f64>() / 3.0;
        assert!((hat - 1.0 / 3.0).abs() < 1e-12);
        assert!((at - 2.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn a_mean_s_interval_is_students_t_over_the_sample_deviation() {
        // 1, 2, 3: mean 2, sd 1, se 1/√3, t(2) = 4.303.
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m, 2.0);
        assert!((h.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-9);
        let from_sums = ci95_of_sums(3, 6.0, 14.0).unwrap();
        assert!((from_sums - h.unwrap()).abs() < 1e-9);
        assert_eq!(mean_ci95(&[0.5]), Some((0.5, None)));
    }

    #[test]
    fn a_consistent_drop_is_significant_and_one_noisy_case_is_not() {
        // 40 cases, each 0.025 lower on every try.
        let consistent = vec![-0.025; 40];
        assert!(sign_flip_p(&consistent).unwrap() < 0.001);
        // The same mean drop (0.025) from one case of 40 falling from 1 to 0, the rest
        // unchanged: a coin flip.
        let mut one = vec![0.0; 40];
        one[7] = -1.0;
        assert_eq!(sign_flip_p(&one), Some(0.5));
        assert_eq!(sign_flip_p(&[0.0, 0.0]), Some(1.0));
        assert_eq!(sign_flip_p(&[]), None);
    }

    #[test]
    fn the_exact_sign_flip_p_counts_every_flip() {
        // Diffs -1, -1, +1: sums of the 8 flips ≤ -1 are {-3, -1, -1, -1}: 4/8.
        assert_eq!(sign_flip_p(&[-1.0, -1.0, 1.0]), Some(0.5));
        // All three down: only the observed flip is as low: 1/8.
        assert_eq!(sign_flip_p(&[-1.0, -2.0, -3.0]), Some(0.125));
    }

    #[test]
    fn mcnemar_is_a_fair_coins_tail_on_the_discordant_cases() {
        // 5 lost, 0 gained: 1/32.
        assert_eq!(mcnemar_p(5, 0), 1.0 / 32.0);
        // 2 lost, 1 gained: P(X ≥ 2 | n = 3) = 4/8.
        assert_eq!(mcnemar_p(2, 1), 0.5);
        assert_eq!(mcnemar_p(0, 0), 1.0);
        let pairs = [(1.0, 0.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0)];
        assert_eq!(paired_p(&pairs, true), Some(0.5));
    }

    #[test]
    fn repeats_to_decide_grows_with_the_tries_noise_and_is_none_when_the_cases_differ() {
        // Differences spread by the tries' noise alone (within = 3 · var(diffs)): more tries
        // shrink it; the noisier, the more tries.
        let diffs = [-0.3, 0.2, -0.1, 0.1, -0.2, 0.0, -0.05, 0.05];
        let w = 3.0 * variance(&diffs);
        let noisy = repeats_to_decide(&diffs, w, 3, 0.05).unwrap();
        let calmer: Vec<f64> = diffs.iter().map(|d| (d + 0.0375) / 2.0 - 0.0375).collect();
        let quiet = repeats_to_decide(&calmer, 3.0 * variance(&calmer), 3, 0.05).unwrap();
        assert!(noisy > quiet && quiet >= 4, "{noisy} vs {quiet}");
        // Most of the spread the cases' own: more tries cannot bring it under the drop.
        assert_eq!(repeats_to_decide(&diffs, w / 4.0, 3, 0.05), None);
        // by hand: mean -0.0375, n 8, z 1.6449: room = 8 · 0.0375² / 1.6449² = 0.004158;
        // between = 0; K' = ceil(w / room).
        assert_eq!(
            noisy,
            (w / (8.0 * 0.0375f64.powi(2) / 1.6449f64.powi(2))).ceil() as usize
        );
        // One case fell, its tries all alike: more tries change nothing.
        let mut one = vec![0.0; 40];
        one[7] = -0.9;
        assert_eq!(repeats_to_decide(&one, 0.0, 3, 0.05), None);
        assert_eq!(repeats_to_decide(&[0.1, 0.2], 1.0, 3, 0.05), None);
        assert!((z_one_sided(0.05) - 1.6449).abs() < 1e-3);
        assert!((z_one_sided(0.01) - 2.3263).abs() < 1e-3);
        assert!((z_one_sided(0.2) - 0.8416).abs() < 1e-3);
    }

    /// The benchmark note of issue 16: over 1,000 simulated pairs of runs with no change
    /// (each case's chance of passing the same in both; 30 cases, 3 repeats), the test
    /// rejects at alpha no more often than alpha.
    #[test]
    fn the_false_positive_rate_over_1000_no_change_pairs_stays_at_or_under_alpha() {
        let alpha = 0.05;
        let mut rng = Rng::new(16);
        let (cases, k, pairs) = (30, 3, 1000);
        let mut rejected = 0;
        for pair in 0..pairs {
            let diffs: Vec<f64> = (0..cases)
                .map(|_| {
                    let p = rng.next_f64();
                    let mean = |rng: &mut Rng| {
                        (0..k).filter(|_| rng.next_f64() < p).count() as f64 / k as f64
                    };
                    let b = mean(&mut rng);
                    mean(&mut rng) - b
                })
                .collect();
            let p = sign_flip_p_with(&diffs, 1_000, pair).unwrap();
            if p < alpha {
                rejected += 1;
            }
        }
        let rate = rejected as f64 / pairs as f64;
        // With this seed: 30 of 1,000 (3.0%); discrete per-case means make the test a
        // little conservative.
        assert!(
            rate <= alpha,
            "false-positive rate {rate} over {pairs} pairs"
        );
        // And the test is not vacuous: a real drop of 0.2 per case is found every time.
        let drop: Vec<f64> = (0..cases).map(|i| -0.2 + 0.01 * (i % 3) as f64).collect();
        assert!(sign_flip_p(&drop).unwrap() < alpha);
    }
}
