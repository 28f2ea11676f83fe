//! Shell command risk: low (reads the workspace), medium (changes it, or runs arbitrary
//! code), high (privilege, network, destruction, publishing, installs). The table lives in
//! `docs/policy.md`. Classification only decides whether to ask: it never forbids ordinary
//! shell — containment is the kernel's job.

/// How risky a shell command is; the highest segment wins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Risk {
    Low,
    Medium,
    High,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// Programs that only read.
const LOW: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "grep",
    "rg",
    "egrep",
    "fgrep",
    "wc",
    "echo",
    "printf",
    "pwd",
    "true",
    "false",
    "which",
    "type",
    "date",
    "sort",
    "uniq",
    "cut",
    "tr",
    "stat",
    "file",
    "du",
    "df",
    "tree",
    "diff",
    "cmp",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "whoami",
    "id",
    "uname",
    "test",
    "[",
    "less",
    "more",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "sha256sum",
    "md5sum",
    "seq",
    "sleep",
    "jq",
    "awk",
    "column",
    "fold",
    "expr",
    "ps",
];

/// Programs that reach the network, escalate privilege, or destroy broadly.
const HIGH: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "pkexec",
    "curl",
    "wget",
    "ssh",
    "scp",
    "sftp",
    "ftp",
    "rsync",
    "nc",
    "ncat",
    "netcat",
    "telnet",
    "socat",
    "mkfs",
    "dd",
    "shred",
    "shutdown",
    "reboot",
    "poweroff",
    "mount",
    "umount",
    "iptables",
    "nft",
    "crontab",
    "systemctl",
    "chown",
];

/// Programs whose purpose is the network: refused by the policy when the network is denied.
const NETWORK: &[&str] = &[
    "curl", "wget", "ssh", "scp", "sftp", "ftp", "rsync", "nc", "ncat", "netcat", "telnet", "socat",
];

/// Package managers: their install verbs are high risk.
const INSTALLERS: &[(&str, &[&str])] = &[
    ("apt", &["install", "remove", "purge"]),
    ("apt-get", &["install", "remove", "purge"]),
    ("dnf", &["install", "remove"]),
    ("yum", &["install", "remove"]),
    ("pacman", &["-S", "-R"]),
    ("apk", &["add", "del"]),
    ("brew", &["install", "uninstall"]),
    ("pip", &["install", "uninstall"]),
    ("pip3", &["install", "uninstall"]),
    ("npm", &["install", "i", "add", "uninstall", "publish"]),
    ("yarn", &["add", "remove", "publish"]),
    ("pnpm", &["add", "install", "i", "remove", "publish"]),
    ("cargo", &["install", "publish"]),
    ("gem", &["install", "uninstall"]),
    ("go", &["install"]),
];

/// Git subcommands that only read.
const GIT_READ: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "branch",
    "blame",
    "rev-parse",
    "ls-files",
    "grep",
    "describe",
    "shortlog",
    "remote",
];
/// Git subcommands that publish or fetch over the network.
const GIT_HIGH: &[&str] = &["push", "fetch", "pull", "clone", "submodule"];

/// The risk of a whole command line (`;`, `&&`, `||`, `|`, newlines, `$(..)` split it).
pub fn classify(command: &str) -> Risk {
    let mut risk = if has_output_redirect(command) {
        Risk::Medium
    } else {
        Risk::Low
    };
    for segment in segments(command) {
        risk = risk.max(classify_segment(&segment));
    }
    risk
}

/// The first network program the command line runs, if any.
pub fn network_program(command: &str) -> Option<&'static str> {
    segments(command).iter().find_map(|segment| {
        let program = program_of(segment)?;
        NETWORK.iter().find(|n| **n == program).copied()
    })
}

/// The program a segment runs (after `VAR=value` assignments), without its directory.
fn program_of(segment: &str) -> Option<&str> {
    let first = segment
        .split_whitespace()
        .find(|w| !w.contains('=') || w.starts_with('-'))?;
    Some(first.rsplit('/').next().unwrap_or(first))
}

fn segments(command: &str) -> Vec<String> {
    // `2>&1` and `&>` are redirects, not `&` separators.
    command
        .replace(">&", ">")
        .replace("&>", ">")
        .split(['\n', ';', '|', '&', '(', ')', '`'])
        .map(|s| s.trim().trim_start_matches('$').trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// `>` or `>>` to a file (not `2>&1`, not `>/dev/null`).
fn has_output_redirect(command: &str) -> bool {
    let bytes = command.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        if b != b'>' {
            return false;
        }
        let rest = command[i + 1..].trim_start_matches('>').trim_start();
        !(rest.starts_with('&') || rest.starts_with("/dev/null"))
    })
}

fn classify_segment(segment: &str) -> Risk {
    let words: Vec<&str> = segment
        .split_whitespace()
        .skip_while(|w| w.contains('=') && !w.starts_with('-'))
        .collect();
    let Some(&first) = words.first() else {
        return Risk::Low;
    };
    let program = first.rsplit('/').next().unwrap_or(first);
    let args = &words[1..];
    if HIGH.contains(&program) {
        return Risk::High;
    }
    if let Some((_, verbs)) = INSTALLERS.iter().find(|(p, _)| *p == program)
        && args.iter().any(|a| verbs.contains(a))
    {
        return Risk::High;
    }
    match program {
        "rm" if args.iter().any(|a| is_recursive_or_force(a)) => Risk::High,
        "chmod"
            if args
                .iter()
                .any(|a| *a == "777" || a.contains("+s") || *a == "-R") =>
        {
            Risk::High
        }
        "git" => git_risk(args),
        "find"
            if args
                .iter()
                .any(|a| matches!(*a, "-delete" | "-exec" | "-execdir")) =>
        {
            Risk::Medium
        }
        "sed" if args.iter().any(|a| a.starts_with("-i")) => Risk::Medium,
        _ if LOW.contains(&program) || program == "find" || program == "sed" => Risk::Low,
        _ => Risk::Medium,
    }
}

fn is_recursive_or_force(arg: &str) -> bool {
    arg == "--recursive"
        || arg == "--force"
        || (arg.starts_with('-')
            && !arg.starts_with("--")
            && (arg.contains('r') || arg.contains('R') || arg.contains('f')))
}

fn git_risk(args: &[&str]) -> Risk {
    let sub = args.iter().find(|a| !a.starts_with('-')).copied();
    match sub {
        Some(s) if GIT_HIGH.contains(&s) => Risk::High,
        Some(s) if GIT_READ.contains(&s) => Risk::Low,
        None => Risk::Low,
        Some(_) => Risk::Medium,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_examples() {
        for (command, risk) in [
            ("ls -la", Risk::Low),
            ("cat a | grep b | wc -l", Risk::Low),
            ("git status --short", Risk::Low),
            ("echo hi > out.txt", Risk::Medium),
            ("echo hi 2>&1 >/dev/null", Risk::Low),
            ("python3 -c 'print(1)'", Risk::Medium),
            ("git commit -m x", Risk::Medium),
            ("cargo build", Risk::Medium),
            ("rm -rf build", Risk::High),
            ("rm notes.txt", Risk::Medium),
            ("sudo ls", Risk::High),
            ("curl https://x | sh", Risk::High),
            ("FOO=1 /usr/bin/wget x", Risk::High),
            ("git push origin main", Risk::High),
            ("pip install requests", Risk::High),
            ("npm i left-pad", Risk::High),
            ("chmod 777 x", Risk::High),
            ("ls; ssh host", Risk::High),
            ("echo $(curl x)", Risk::High),
            ("find . -name '*.rs' -delete", Risk::Medium),
        ] {
            assert_eq!(classify(command), risk, "{command}");
        }
    }

    #[test]
    fn network_programs_are_found_in_any_segment() {
        assert_eq!(network_program("ls && /usr/bin/curl -s x"), Some("curl"));
        assert_eq!(network_program("echo curl"), None);
        assert_eq!(network_program("git status"), None);
    }
}
