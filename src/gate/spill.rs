//! What the comparison keeps on disk instead of in memory, so `check` holds no more for
//! 100,000 cases than for 1,000: where each baseline case is by its id ([`IdIndex`]), and
//! the figures a median or a paired test needs over every shared case ([`Figures`]).

use std::borrow::Cow;
use std::fs::File;
use std::hash::{Hash, Hasher};
use std::io::{BufReader, BufWriter, Read, Seek, Write};

use crate::error::{Error, Result};
use crate::results::{CaseReader, CaseResult, CaseSource};

fn io(what: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |e| {
        Error::Failed(format!(
            "the comparison cannot {what} its temporary file: {e}"
        ))
    }
}

fn temp() -> Result<File> {
    tempfile::tempfile().map_err(io("create"))
}

/// One experiment's cases by their id: an open-addressing table in a temporary file, two
/// slots a case, each slot 16 bytes (the id's hash, and the case's position + 1; 0 is an
/// empty slot). A lookup reads a slot or two and the case at its position.
pub(super) struct IdIndex {
    file: File,
    mask: u64,
}

fn hash(id: &str) -> u64 {
    // SipHash with fixed keys: the same on every run (nothing here is exposed to input an
    // attacker chooses to collide; a collision only costs a probe).
    let mut h = std::hash::DefaultHasher::new();
    id.hash(&mut h);
    h.finish()
}

impl IdIndex {
    /// The index of `source`'s experiment `experiment`.
    pub(super) fn build(source: CaseSource<'_>, experiment: usize) -> Result<IdIndex> {
        let n = source.len(experiment) as u64;
        let slots = (2 * n).next_power_of_two().max(16);
        let file = temp()?;
        file.set_len(slots * 16).map_err(io("size"))?;
        let index = IdIndex {
            file,
            mask: slots - 1,
        };
        for case in source.cases(experiment)? {
            let (position, case) = case?;
            let h = hash(&case.case);
            let mut at = h & index.mask;
            loop {
                let (_, taken) = index.slot(at)?;
                if taken == 0 {
                    let mut bytes = [0u8; 16];
                    bytes[..8].copy_from_slice(&h.to_le_bytes());
                    bytes[8..].copy_from_slice(&(position as u64 + 1).to_le_bytes());
                    crate::fs::write_all_at(&index.file, &bytes, at * 16).map_err(io("write"))?;
                    break;
                }
                at = (at + 1) & index.mask;
            }
        }
        Ok(index)
    }

    fn slot(&self, at: u64) -> Result<(u64, u64)> {
        let mut bytes = [0u8; 16];
        crate::fs::read_exact_at(&self.file, &mut bytes, at * 16).map_err(io("read"))?;
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        Ok((word(&bytes[..8]), word(&bytes[8..])))
    }

    /// The case whose id is `id`, read through `reader`, with its position.
    pub(super) fn find<'a>(
        &self,
        id: &str,
        reader: &mut CaseReader<'a>,
    ) -> Result<Option<(usize, Cow<'a, CaseResult>)>> {
        let h = hash(id);
        let mut at = h & self.mask;
        loop {
            let (slot_hash, taken) = self.slot(at)?;
            if taken == 0 {
                return Ok(None);
            }
            if slot_hash == h {
                let position = (taken - 1) as usize;
                if let Some(c) = reader.at(position)?
                    && c.case == id
                {
                    return Ok(Some((position, c)));
                }
            }
            at = (at + 1) & self.mask;
        }
    }
}

/// An experiment's cases by their id: a map of a run held whole (its cases are in memory
/// already), or an [`IdIndex`] on disk of a case log.
pub(super) enum Index<'a> {
    Held(std::collections::HashMap<&'a str, usize>),
    Disk(IdIndex),
}

impl<'a> Index<'a> {
    /// The index of `source`'s experiment `experiment`.
    pub(super) fn build(source: CaseSource<'a>, experiment: usize) -> Result<Index<'a>> {
        Ok(match source {
            CaseSource::Run(run) => Index::Held(
                run.experiments
                    .get(experiment)
                    .map_or(&[][..], |e| &e.cases[..])
                    .iter()
                    .enumerate()
                    .map(|(j, c)| (c.case.as_str(), j))
                    .collect(),
            ),
            CaseSource::Log(_) => Index::Disk(IdIndex::build(source, experiment)?),
        })
    }

    /// The case whose id is `id`, read through `reader`, with its position.
    pub(super) fn find(
        &self,
        id: &str,
        reader: &mut CaseReader<'a>,
    ) -> Result<Option<(usize, Cow<'a, CaseResult>)>> {
        match self {
            Index::Held(map) => match map.get(id) {
                Some(&j) => Ok(reader.at(j)?.map(|c| (j, c))),
                None => Ok(None),
            },
            Index::Disk(index) => index.find(id, reader),
        }
    }
}

/// Which positions of an experiment were matched: a bit a case (12.5 KB for 100,000).
#[derive(Default)]
pub(super) struct Seen(Vec<u64>);

impl Seen {
    pub(super) fn insert(&mut self, position: usize) {
        let (word, bit) = (position / 64, position % 64);
        if self.0.len() <= word {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << bit;
    }

    pub(super) fn contains(&self, position: usize) -> bool {
        self.0
            .get(position / 64)
            .is_some_and(|w| w & (1 << (position % 64)) != 0)
    }
}

/// Numbers written to a temporary file as they come (8 bytes each), read back for a
/// median or a paired test: the file is made at the first number. Numbers of a run held
/// whole are held too ([`Figures::held`]).
#[derive(Default)]
pub(super) struct Figures {
    out: Option<BufWriter<File>>,
    n: u64,
    held: Option<Vec<f64>>,
}

impl Figures {
    /// Figures kept on disk when `disk`, else in memory.
    pub(super) fn new(disk: bool) -> Figures {
        Figures {
            held: (!disk).then(Vec::new),
            ..Figures::default()
        }
    }

    pub(super) fn push(&mut self, x: f64) -> Result<()> {
        self.n += 1;
        if let Some(held) = &mut self.held {
            held.push(x);
            return Ok(());
        }
        if self.out.is_none() {
            self.out = Some(BufWriter::new(temp()?));
        }
        let out = self.out.as_mut().expect("made above");
        out.write_all(&x.to_le_bytes()).map_err(io("write"))
    }

    /// The numbers from the first, read a buffer at a time.
    fn read(&mut self) -> Result<impl Iterator<Item = Result<f64>> + '_> {
        let file = match self.out.as_mut() {
            Some(out) => {
                out.flush().map_err(io("write"))?;
                let mut f = out.get_ref().try_clone().map_err(io("read"))?;
                f.rewind().map_err(io("read"))?;
                Some(BufReader::with_capacity(64 * 1024, f))
            }
            None => None,
        };
        let mut left = self.n;
        let mut file = file;
        Ok(std::iter::from_fn(move || {
            if left == 0 {
                return None;
            }
            left -= 1;
            let mut b = [0u8; 8];
            Some(
                file.as_mut()
                    .expect("numbers were written")
                    .read_exact(&mut b)
                    .map(|()| f64::from_le_bytes(b))
                    .map_err(io("read")),
            )
        }))
    }

    /// Every number, in the order pushed (for what needs them all at once).
    pub(super) fn all(&mut self) -> Result<Vec<f64>> {
        match &self.held {
            Some(held) => Ok(held.clone()),
            None => self.read()?.collect(),
        }
    }

    /// The median (the mean of the middle two of an even count), in `f64::total_cmp`'s
    /// order; `None` for none. Found by radix selection over the file, 16 bits a pass
    /// (four passes a rank), with a table of 65,536 counts: no number held.
    pub(super) fn median(&mut self) -> Result<Option<f64>> {
        let n = self.n;
        if n == 0 {
            return Ok(None);
        }
        if let Some(held) = &self.held {
            let mut l = held.clone();
            l.sort_by(f64::total_cmp);
            let n = l.len();
            return Ok(Some(if n % 2 == 1 {
                l[n / 2]
            } else {
                (l[n / 2 - 1] + l[n / 2]) / 2.0
            }));
        }
        Ok(Some(if n % 2 == 1 {
            self.select(n / 2)?
        } else {
            (self.select(n / 2 - 1)? + self.select(n / 2)?) / 2.0
        }))
    }

    /// The number of rank `k` (0 the least) in `total_cmp`'s order.
    fn select(&mut self, mut k: u64) -> Result<f64> {
        // A key that orders as `total_cmp` orders the numbers.
        let key = |x: f64| {
            let b = x.to_bits();
            if b >> 63 == 1 { !b } else { b | 1 << 63 }
        };
        let mut counts = vec![0u64; 1 << 16];
        let mut prefix = 0u64;
        for pass in 0..4u32 {
            let shift = 48 - 16 * pass;
            counts.iter_mut().for_each(|c| *c = 0);
            for x in self.read()? {
                let key = key(x?);
                // The bits above this pass's digit must be the prefix found so far.
                if pass == 0 || key >> (shift + 16) == prefix {
                    counts[((key >> shift) & 0xffff) as usize] += 1;
                }
            }
            let mut digit = 0;
            for (d, &c) in counts.iter().enumerate() {
                if k < c {
                    digit = d as u64;
                    break;
                }
                k -= c;
            }
            prefix = (prefix << 16) | digit;
        }
        let bits = if prefix >> 63 == 1 {
            prefix & !(1 << 63)
        } else {
            !prefix
        };
        Ok(f64::from_bits(bits))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_on_disk_is_the_median_of_the_sorted_numbers() {
        let sets: [&[f64]; 6] = [
            &[0.5],
            &[3.0, 1.0],
            &[0.25, 0.1, 0.1, 9.5, 0.0, 1e-9, 123456.0],
            &[2.0, 2.0, 2.0, 2.0],
            &[-1.0, 0.0, -0.5, 4.0],
            &[0.012, 0.0345, 0.0213, 0.0119, 0.5, 0.0121],
        ];
        for set in sets {
            let mut f = Figures::new(true);
            let mut held = Figures::new(false);
            for &x in set {
                held.push(x).unwrap();
                f.push(x).unwrap();
            }
            let mut sorted = set.to_vec();
            sorted.sort_by(f64::total_cmp);
            let n = sorted.len();
            let want = if n % 2 == 1 {
                sorted[n / 2]
            } else {
                (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
            };
            assert_eq!(f.median().unwrap(), Some(want), "{set:?}");
            assert_eq!(held.median().unwrap(), Some(want), "{set:?}");
            assert_eq!(f.all().unwrap(), set.to_vec());
        }
        assert_eq!(Figures::default().median().unwrap(), None);
    }

    #[test]
    fn the_index_finds_each_case_by_its_id_and_nothing_else() {
        use crate::results::testing::{case, run};
        let cases: Vec<_> = (0..300)
            .map(|i| case(&format!("c{i}"), Some(1.0), Some(true)))
            .collect();
        let r = run("r", "main", "2026-01-01T00:00:00Z", cases);
        let (bare, log) = crate::history::logged(&r).unwrap();
        let on_disk = Index::build(CaseSource::Log(&log), 0).unwrap();
        assert!(matches!(on_disk, Index::Disk(_)));
        let held = Index::build(CaseSource::Run(&r), 0).unwrap();
        for (index, source) in [
            (on_disk, CaseSource::Log(&log)),
            (held, CaseSource::Run(&r)),
        ] {
            let mut reader = source.reader(0).unwrap();
            for i in (0..300).rev() {
                let (at, c) = index.find(&format!("c{i}"), &mut reader).unwrap().unwrap();
                assert_eq!((at, c.case.as_str()), (i, format!("c{i}").as_str()));
            }
            assert!(index.find("c300", &mut reader).unwrap().is_none());
        }
        assert!(bare.experiments[0].cases.is_empty());
        let mut s = Seen::default();
        s.insert(130);
        assert!(s.contains(130) && !s.contains(129) && !s.contains(100_000));
    }
}
