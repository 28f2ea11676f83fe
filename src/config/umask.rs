//! `[sandbox] umask`: the file mode creation mask of tool children, an octal string such as
//! `"022"`, parsed once here (anything else is a configuration error naming the key).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A umask of tool children: only the permission bits (`0o000`..=`0o777`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Umask(u32);

impl Umask {
    /// The mask's bits.
    pub fn bits(self) -> u32 {
        self.0
    }
}

impl Default for Umask {
    /// `022`: files a child creates are `0644`, directories `0755`.
    fn default() -> Self {
        Umask(zeroclaw_sandbox::profile::DEFAULT_UMASK)
    }
}

impl std::str::FromStr for Umask {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let digits = s.strip_prefix("0o").unwrap_or(s);
        let valid =
            (1..=4).contains(&digits.len()) && digits.bytes().all(|b| (b'0'..=b'7').contains(&b));
        match u32::from_str_radix(digits, 8) {
            Ok(bits) if valid && bits <= 0o777 => Ok(Umask(bits)),
            _ => Err(format!(
                "{s:?} is not a umask: write its octal digits as a string, from \"000\" to \"777\" (e.g. \"022\")"
            )),
        }
    }
}

impl Serialize for Umask {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{:03o}", self.0))
    }
}

impl<'de> Deserialize<'de> for Umask {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn octal_strings_parse_and_nonsense_is_refused() {
        assert_eq!("022".parse::<Umask>().map(Umask::bits), Ok(0o022));
        assert_eq!("0027".parse::<Umask>().map(Umask::bits), Ok(0o027));
        assert_eq!("0o077".parse::<Umask>().map(Umask::bits), Ok(0o077));
        assert_eq!("0".parse::<Umask>().map(Umask::bits), Ok(0));
        for bad in ["", "8", "0999", "1777", "u=rwx", "-22", "22 ", "00000"] {
            assert!(bad.parse::<Umask>().is_err(), "{bad:?}");
        }
        assert_eq!(Umask::default().bits(), 0o022);
    }
}
