//! A `[gateway].listen` entry, `unix:PATH` or `tcp:HOST:PORT`, parsed: what the config's
//! validation checks and what `gateway::listen` binds and the bridge connects to.

use std::path::PathBuf;

/// One `[gateway].listen` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    Unix(PathBuf),
    /// `HOST:PORT` as written (`[::1]:42617` for IPv6).
    Tcp(String),
}

impl Address {
    pub fn parse(text: &str) -> Result<Address, String> {
        if let Some(path) = text.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("`unix:` needs a socket path".into());
            }
            return Ok(Address::Unix(PathBuf::from(path)));
        }
        if let Some(host_port) = text.strip_prefix("tcp:") {
            let port = host_port.rsplit_once(':').map(|(_, p)| p.parse::<u16>());
            return match port {
                Some(Ok(_)) => Ok(Address::Tcp(host_port.to_owned())),
                _ => Err(format!("`{text}` is not tcp:HOST:PORT")),
            };
        }
        Err(format!("`{text}` is neither unix:PATH nor tcp:HOST:PORT"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(
            Address::parse("unix:/run/z.sock"),
            Ok(Address::Unix("/run/z.sock".into()))
        );
        assert_eq!(
            Address::parse("tcp:[::1]:42617"),
            Ok(Address::Tcp("[::1]:42617".into()))
        );
        assert!(Address::parse("tcp:localhost").is_err());
        assert!(Address::parse("unix:").is_err());
        assert!(Address::parse("http://x").is_err());
    }
}
