//! `squall run EXP --shard I/N`: a deterministic, disjoint slice of an
//! experiment's runs, so that a sweep too large for one machine is spread
//! over many by whatever starts processes there (a Slurm job array, GNU
//! parallel, a PBS array, plain ssh), with no scheduler of squall's own.
//!
//! The runs are numbered in the order of the experiment's manifest
//! (experiment.json: set, sweep point, replication), and shard `I` of `N`
//! takes every run whose number is `I` modulo `N`. Shards are numbered from
//! 0, as Slurm numbers the tasks of `sbatch --array=0-(N-1)`
//! (`$SLURM_ARRAY_TASK_ID`, sbatch(1)) and GNU parallel's `{%}` less one:
//! the shards of one `N` are disjoint and together make the whole
//! experiment, whatever `N`. Taking every N-th run (rather than N
//! contiguous blocks) spreads the replications of one sweep point over the
//! shards, so a costly point does not fall to one shard alone.

use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count` (0 ≤ `index` < `count`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// Whether the run numbered `run` (from 0, in the manifest's order)
    /// belongs to this shard.
    pub fn holds(self, run: usize) -> bool {
        run as u64 % self.count == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, both decimal, 0 ≤ I < N; the message says what was expected
    /// (clap prefixes it with the argument and the value given).
    fn from_str(s: &str) -> Result<Self, String> {
        let expected = "expected I/N with 0 ≤ I < N (shards count from 0, as $SLURM_ARRAY_TASK_ID of \
                        sbatch --array=0-(N-1)), e.g. 0/4, 1/4, 2/4, 3/4";
        let Some((i, n)) = s.split_once('/') else {
            return Err(format!("no `/` in `{s}`; {expected}"));
        };
        let count: u64 =
            n.trim().parse().map_err(|_| format!("the shard count `{n}` is not a whole number; {expected}"))?;
        let index: u64 =
            i.trim().parse().map_err(|_| format!("the shard index `{i}` is not a whole number; {expected}"))?;
        if count == 0 {
            return Err(format!("the shard count is 0; {expected}"));
        }
        if index >= count {
            return Err(format!(
                "shard {index} of {count} does not exist: the last of {count} is {}/{count}; {expected}",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_of_any_count_are_disjoint_and_cover_every_run() {
        for count in [1u64, 2, 3, 7, 10] {
            for run in 0..100 {
                let holders: Vec<u64> = (0..count).filter(|&index| Shard { index, count }.holds(run)).collect();
                assert_eq!(holders.len(), 1, "run {run} of {count} shards held by {holders:?}");
            }
        }
        // Every N-th run: 10 runs over 3 shards are 4, 3 and 3.
        let taken = |index| (0..10).filter(|&r| Shard { index, count: 3 }.holds(r)).collect::<Vec<_>>();
        assert_eq!(taken(0), [0, 3, 6, 9]);
        assert_eq!(taken(1), [1, 4, 7]);
        assert_eq!(taken(2), [2, 5, 8]);
    }

    #[test]
    fn bad_shards_say_what_was_expected() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, count: 3 }));
        assert_eq!("0/1".parse(), Ok(Shard { index: 0, count: 1 }));
        let err = |s: &str| s.parse::<Shard>().unwrap_err();
        assert!(err("3/3").contains("the last of 3 is 2/3"), "{}", err("3/3"));
        assert!(err("1/0").contains("count is 0"), "{}", err("1/0"));
        assert!(err("3").contains("no `/`"), "{}", err("3"));
        assert!(err("a/3").contains("index `a`"), "{}", err("a/3"));
        assert!(err("1/-2").contains("count `-2`"), "{}", err("1/-2"));
    }
}
