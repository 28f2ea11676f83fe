//! A plan's shape: the part of it a warm helper applies before its call arrives (the
//! namespaces, the root, the confinement its init passes on), which a call must share with
//! the helper that serves it. [`normalized`] is that part as a plan, compared whole by the
//! init when the call arrives; [`digest`] is its SHA-256, which the planner records in the
//! plan ([`Plan::shape`]) and the launcher matches waiting helpers by.

use sha2::{Digest, Sha256};

use super::types::{MountOp, Plan};

/// `plan` without what a warm helper does not apply before its call: the command, its
/// environment, cwd, the limits set after the last fork, the git global config written when
/// the call arrives; the names of its git stages and of its layer, unique per call (a stage
/// is made once the call arrives and bound by the init: what the stage binds is left out
/// too); and the shape field itself.
pub fn normalized(plan: &Plan) -> Plan {
    let mut k = plan.clone();
    k.argv.clear();
    k.op = None;
    k.env.clear();
    k.cwd.clear();
    k.launcher_pid = 0;
    k.warm = None;
    k.shape = None;
    k.home.git_global = None;
    let limits = &plan.process.limits;
    k.process.limits = crate::profile::Limits {
        processes: limits.processes,
        file_size_bytes: limits.file_size_bytes,
        memory_bytes: limits.memory_bytes,
        // Watched by the helper, which a warm call keeps.
        written_bytes: limits.written_bytes,
        ..Default::default()
    };
    let gits: Vec<std::path::PathBuf> = plan
        .mounts
        .iter()
        .filter_map(|op| match op {
            MountOp::Stage { path, .. } => Some(path.clone()),
            _ => None,
        })
        .collect();
    if !gits.is_empty() {
        k.placeholders.retain(|p| !gits.contains(&p.path));
        k.mounts
            .retain(|op| !gits.iter().any(|git| op.path().starts_with(git)));
    }
    for op in &mut k.mounts {
        if let MountOp::Layer { dir, .. } = op {
            dir.clear();
        }
    }
    k
}

/// The SHA-256 of [`normalized`] `plan` (what [`Plan::shape`] records).
pub fn digest(plan: &Plan) -> [u8; 32] {
    let json = serde_json::to_vec(&normalized(plan)).unwrap_or_default();
    Sha256::digest(json).into()
}

#[cfg(test)]
mod tests {
    use crate::backend::Backend;
    use crate::plan::planner::Planner;
    use crate::profile::{Network, Profile};

    fn planner() -> Planner {
        Planner {
            backend: Backend::Namespaces,
            allow_partial: false,
            bwrap: None,
            bwrap_refuses_cap_add: false,
            git: crate::git::READER,
        }
    }

    #[test]
    fn the_planner_records_a_shape_that_calls_of_one_shape_share() {
        let ws = tempfile::tempdir().unwrap();
        let layers = tempfile::tempdir().unwrap();
        // A repository (a stage per call) in a layered workspace (a layer per call): their
        // unique names are not part of the shape.
        std::fs::create_dir_all(ws.path().join(".git/hooks")).unwrap();
        std::fs::write(ws.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(ws.path().join(".git/config"), "").unwrap();
        let profile = Profile::for_workspace(ws.path()).land_through(layers.path());
        let plan = |profile: &Profile, argv: &str| {
            planner()
                .plan(profile, vec![argv.into()], None)
                .expect("planned")
        };
        let (a, b) = (plan(&profile, "true"), plan(&profile, "false"));
        assert!(
            a.mounts != b.mounts,
            "each call has a stage and a layer of its own"
        );
        assert_eq!(a.shape, Some(super::digest(&a)));
        assert_eq!(a.shape, b.shape);
        let online = plan(&profile.clone().network(Network::Allow), "true");
        assert_ne!(a.shape, online.shape);
    }
}
