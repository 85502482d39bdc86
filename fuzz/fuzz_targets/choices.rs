//! The fuzzer's bytes read as a stream of choices, shared by the fuzz targets: each target
//! decodes its input with these, so that a short input is a small, common case and the
//! fuzzer reaches edge values by changing a few bytes.

/// Reads the fuzzer's bytes as a stream of choices (zeros once they run out).
pub struct Choices<'a>(pub &'a [u8]);

impl Choices<'_> {
    pub fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&first, rest)) => {
                self.0 = rest;
                first
            }
            None => 0,
        }
    }

    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0, |value, _| (value << 8) | u64::from(self.byte()))
    }

    /// Mostly small values, sometimes edge cases, sometimes anything.
    pub fn extent(&mut self) -> i64 {
        match self.byte() % 16 {
            0..=11 => i64::from(self.byte() % 6),
            12 => -i64::from(self.byte() % 4) - 1,
            13 => i64::MAX - i64::from(self.byte()),
            14 => 1 << (self.byte() % 63),
            _ => self.u64() as i64,
        }
    }

    pub fn stride(&mut self) -> i64 {
        match self.byte() % 16 {
            0..=11 => i64::from(self.byte() % 13) - 6,
            12 => i64::from(self.byte()) * 7,
            13 => i64::MIN + i64::from(self.byte()),
            14 => 1 << (self.byte() % 63),
            _ => self.u64() as i64,
        }
    }
}
