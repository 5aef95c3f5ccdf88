//! A share of requests for a fault rule to apply to, drawn from a seeded sequence: a chaos run fails "20 % of
//! requests" without failing the same position of every retry, and a seed replays the same draws.

use serde::{Deserialize, Serialize};

/// Which of the requests a fault rule matches it applies to. The default applies to all of them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Chance {
    /// Percentage of matching requests the rule applies to (`None`: every one).
    #[serde(default)]
    pub percent: Option<u8>,
    /// Seed of the draws (the same seed and request order give the same choices).
    #[serde(default)]
    pub seed: u64,
    /// Draws made so far.
    #[serde(skip)]
    drawn: u64,
}

impl Chance {
    /// Applies to `percent` % of the matching requests, drawn from `seed`.
    pub fn percent(percent: u8, seed: u64) -> Self {
        Self {
            percent: Some(percent.min(100)),
            seed,
            drawn: 0,
        }
    }

    /// Draws for one matching request: whether the rule applies to it.
    pub fn draw(&mut self) -> bool {
        let Some(percent) = self.percent else { return true };
        self.drawn += 1;
        split_mix(self.seed ^ self.drawn.wrapping_mul(0x9E37_79B9_7F4A_7C15)) % 100 < u64::from(percent)
    }
}

/// SplitMix64's finaliser: consecutive inputs give well-spread outputs.
fn split_mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_percentage_applies_to_about_that_share_and_a_seed_replays_it() {
        let mut twenty = Chance::percent(20, 7);
        let draws: Vec<bool> = (0..10_000).map(|_| twenty.draw()).collect();
        let hits = draws.iter().filter(|d| **d).count();
        assert!((1_800..=2_200).contains(&hits), "{hits} of 10000");
        let mut again = Chance::percent(20, 7);
        assert!(draws.iter().all(|d| *d == again.draw()));
        let mut other = Chance::percent(20, 8);
        assert!(draws.iter().any(|d| *d != other.draw()));
    }

    #[test]
    fn no_percentage_means_every_request_and_the_bounds_hold() {
        let mut all = Chance::default();
        assert!((0..100).all(|_| all.draw()));
        let mut none = Chance::percent(0, 1);
        assert!((0..100).all(|_| !none.draw()));
        let mut capped = Chance::percent(250, 1);
        assert!((0..100).all(|_| capped.draw()));
    }
}
