//! `[store] url`: which backend, and where.

use std::fmt;
use std::path::{Path, PathBuf};

/// Where the session store lives.
#[derive(Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file (the embedded default).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://…` or `postgresql://…`).
    Postgres(String),
}

impl Location {
    /// Parses a `[store] url`; a relative `sqlite:` path is relative to `config_dir`.
    pub fn parse(url: &str, config_dir: &Path) -> Result<Location, String> {
        if let Some(path) = url.strip_prefix("sqlite:") {
            let path = path.strip_prefix("//").unwrap_or(path);
            if path.is_empty() {
                return Err(
                    "`sqlite:` needs a file path, e.g. `sqlite:/var/lib/zeroclaw/sessions.db`"
                        .into(),
                );
            }
            let path = PathBuf::from(path);
            return Ok(Location::Sqlite(if path.is_absolute() {
                path
            } else {
                config_dir.join(path)
            }));
        }
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            url.parse::<tokio_postgres::Config>()
                .map_err(|e| format!("not a usable PostgreSQL URL: {e}"))?;
            return Ok(Location::Postgres(url.to_owned()));
        }
        Err(format!(
            "`{}` is neither `sqlite:PATH` nor a `postgres://` URL",
            redact(url)
        ))
    }
}

/// `url` with any password replaced by `***`.
fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rsplit_once('@') {
        Some((userinfo, _)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[userinfo.len()..]),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "{}", path.display()),
            Location::Postgres(url) => f.write_str(&redact(url)),
        }
    }
}

impl fmt::Debug for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Location({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_and_postgres_urls() {
        let dir = Path::new("/etc/zeroclaw");
        assert_eq!(
            Location::parse("sqlite:s.db", dir).unwrap(),
            Location::Sqlite("/etc/zeroclaw/s.db".into())
        );
        assert_eq!(
            Location::parse("sqlite:///var/s.db", dir).unwrap(),
            Location::Sqlite("/var/s.db".into())
        );
        let pg = Location::parse("postgres://zc:pw@db:5432/zc", dir).unwrap();
        assert_eq!(pg.to_string(), "postgres://zc:***@db:5432/zc");
        let err = Location::parse("mysql://u:hunter2@h/db", dir).unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(Location::parse("sqlite:", dir).is_err());
    }
}
