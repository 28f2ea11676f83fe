//! A repository the run creates where the workspace had none: its private stage.
//!
//! The workspace's missing `.git` is a guarded placeholder (see [`super::missing`]); inside
//! it the helper makes a stage directory (`.git/.zeroclaw-stage-<id>`), which the child sees
//! bound at `.git`, so `git init` works. The host's git sees only the placeholder meanwhile —
//! an empty directory but for our marker and the stage, which git does not take for a
//! repository — never what the child writes. When the run's tree is gone, the helper
//! validates the stage ([`super::validate`]) and, if the command wrote anything, moves it into
//! place: the stage is renamed beside `.git` and then over the (empty) placeholder, one
//! atomic `rename` each, so the host sees either no repository or the validated one. An empty
//! stage is removed. A stage is kept only when this run alone holds the placeholder (another
//! run still masking it cannot have it replaced); otherwise it is dropped and the refusal
//! says so. Stages of killed runs in the placeholder are removed first ([`super::stage::lock`]:
//! each stage is locked by its helper for its run's lifetime), and entries the run named
//! `.zeroclaw-*` are refused (a fake stage).

use std::path::Path;

use crate::error::{SetupError, Stage};
use crate::plan::{DeferredRoot, MountOp, Plan};

pub mod lock;
pub mod name;

pub use self::name::{PREFIX, new_stage};

/// `(stage, .git)` of every stage in the plan.
fn stages(plan: &Plan) -> impl Iterator<Item = (&Path, &Path)> {
    plan.mounts.iter().filter_map(|op| match op {
        MountOp::Stage { src, path } => Some((src.as_path(), path.as_path())),
        _ => None,
    })
}

/// Whether the plan has a stage (the helper validates and applies it after the run, so the
/// call ends only then).
pub fn any(plan: &Plan) -> bool {
    stages(plan).next().is_some()
}

/// The plan's first stage and its `.git` (a plan has at most one: the workspace's).
pub fn first(plan: &Plan) -> Option<(&Path, &Path)> {
    stages(plan).next()
}

/// Whether `path` is the `.git` of one of the plan's stages.
pub fn is_stage_git(plan: &Plan, path: &Path) -> bool {
    stages(plan).any(|(_, git)| git == path)
}

/// Whether `path` is at or below the `.git` of one of the plan's stages.
fn under_stage_git(plan: &Plan, path: &Path) -> bool {
    stages(plan).any(|(_, git)| path.starts_with(git))
}

/// Whether the stage's `.git` is an existing repository (staged by [`super::copy`]) rather
/// than a placeholder for a new one.
pub fn is_existing(plan: &Plan, git: &Path) -> bool {
    !plan.placeholders.iter().any(|p| p.path == git)
}

/// The root a warm helper prepares for a plan with a stage, which is made only once its call
/// arrives (see `helper::git_late`): no placeholder at `.git` and nothing bound below it, so
/// a helper waiting for a call that may never come leaves nothing on the host. In a layered
/// workspace the host's `.git` is bound on itself instead (the overlay would otherwise be
/// what the init sees there): the init binds the stage from it once the helper has made it,
/// before the command exists. `None` when the plan has no stage. Decided once, by the pool
/// that prepares the helper ([`crate::plan::WarmPlan::deferred`]).
pub fn deferred(plan: &Plan) -> Option<DeferredRoot> {
    stages(plan).next()?;
    let mut now = DeferredRoot {
        mounts: plan.mounts.clone(),
        placeholders: plan.placeholders.clone(),
    };
    now.placeholders.retain(|p| !is_stage_git(plan, &p.path));
    // The stage and what is bound into it (an existing repository's directories).
    now.mounts.retain(|op| !under_stage_git(plan, op.path()));
    // Just after the layer: nothing else of the plan lies below `.git` any more.
    if let Some(at) = now
        .mounts
        .iter()
        .position(|op| matches!(op, MountOp::Layer { .. }))
    {
        let gits = stages(plan).filter(|(_, git)| bound_in_layer(plan, git));
        let binds: Vec<MountOp> = gits
            .map(|(_, git)| MountOp::Bind {
                path: git.to_path_buf(),
                rw: true,
                optional: false,
            })
            .collect();
        now.mounts.splice(at + 1..at + 1, binds);
    }
    Some(now)
}

/// Whether a warm helper can serve `plan`'s stages: each is the `.git` of the call's
/// writable workspace ([`in_writable_worktree`]), where the init reaches the host's `.git` to
/// bind the stage from. A stage elsewhere (a linked worktree's main repository, the larger
/// repository the workspace lies in) sits below a read-only root: such calls start cold.
pub fn warm_can_bind(plan: &Plan) -> bool {
    stages(plan).all(|(_, git)| in_writable_worktree(plan, git))
}

/// Whether the git directory `git` is the `.git` of a worktree the plan binds writable (its
/// bind or its layer): the workspace's own repository, rather than one beside it.
fn in_writable_worktree(plan: &Plan, git: &Path) -> bool {
    git.parent().is_some_and(|worktree| {
        plan.mounts.iter().any(|op| match op {
            MountOp::Layer { path, .. } | MountOp::Bind { path, rw: true, .. } => path == worktree,
            _ => false,
        })
    })
}

/// Whether `path` (a placeholder or mount path of `plan`) belongs to a stage, which a warm
/// helper makes only once its call arrives: not part of its root's identity, and not a
/// placeholder it keeps while waiting. (A layered workspace's `.git` is not: its root binds
/// the host's there, see [`deferred`].)
pub fn is_deferred(plan: &Plan, path: &Path) -> bool {
    under_stage_git(plan, path) && !(is_stage_git(plan, path) && bound_in_layer(plan, path))
}

/// Whether `git` lies directly in the plan's layered workspace.
fn bound_in_layer(plan: &Plan, git: &Path) -> bool {
    plan.layer()
        .is_some_and(|(workspace, _)| git.parent() == Some(workspace))
}

/// Makes each stage directory (the helper, once the placeholders are held); an existing
/// repository's is filled ([`super::copy`]).
pub fn prepare(plan: &Plan) -> Result<(), SetupError> {
    for (stage, git) in stages(plan) {
        let made = if is_existing(plan, git) {
            // The workspace's own repository is `.git`; another (a linked worktree's main
            // repository, the larger repository the workspace lies in: `git::repo`) is named
            // by its path.
            let label = if in_writable_worktree(plan, git) {
                ".git".into()
            } else {
                git.display().to_string()
            };
            super::copy::prepare(stage, git, label, &super::repo::bound(plan, git))
        } else {
            super::stage::lock::make(stage)
        };
        made.map_err(|e| {
            SetupError::os(
                Stage::Placeholders,
                format!("mkdir({})", stage.display()),
                &e,
            )
        })?;
    }
    Ok(())
}

/// After the run's tree is gone: validates each stage and moves the ones the command wrote
/// into place when `alone(.git)` (this run alone holds the placeholder, its lock now
/// exclusive); removes the others, and the stages of runs that are gone
/// ([`super::stage::lock::sweep`]). Returns one line per refusal.
pub fn finish(plan: &Plan, alone: impl Fn(&Path) -> bool) -> Vec<String> {
    let (refused, empty) = finish_leaving(plan, alone);
    empty.remove();
    refused
}

/// The stages a run left empty, for removal once its end is told ([`finish_leaving`]).
#[must_use = "the empty stages are removed by `remove`"]
pub struct EmptyStages(Vec<std::path::PathBuf>);

impl EmptyStages {
    /// Removes them (each an empty directory of ours; a stage is never reused).
    pub fn remove(self) {
        for stage in self.0 {
            let _ = std::fs::remove_dir(stage);
        }
    }
}

/// [`finish`], leaving the stages the command did not write to the caller: removing a
/// directory frees its block, which on a file system mounted with `discard` and without a
/// journal waits for the device (0.1 to several ms), so a helper removes them after telling
/// the call's end. Nothing in an empty stage is the host's to see, and the next run takes a
/// placeholder being removed for none (`git::missing::is_placeholder`).
pub fn finish_leaving(plan: &Plan, alone: impl Fn(&Path) -> bool) -> (Vec<String>, EmptyStages) {
    let mut refused = Vec::new();
    let mut empty = Vec::new();
    for (stage, git) in stages(plan) {
        if is_existing(plan, git) {
            if let Some(staged) = super::copy::take(stage) {
                refused.extend(super::land::finish(&staged));
            }
            continue;
        }
        refused.extend(finish_new(stage, git, alone(git), &mut empty));
        super::stage::lock::release(stage);
    }
    (refused, EmptyStages(empty))
}

/// [`finish`] for the stage of a new repository in the placeholder `git`.
fn finish_new(
    stage: &Path,
    git: &Path,
    alone: bool,
    empty: &mut Vec<std::path::PathBuf>,
) -> Vec<String> {
    // Killed runs' stages first: the placeholder must be empty for ours to land over it.
    let listing: Vec<std::ffi::OsString> = std::fs::read_dir(git)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    super::stage::lock::sweep(git, &listing);
    let Ok(entries) = std::fs::read_dir(stage) else {
        return Vec::new();
    };
    if entries.count() == 0 {
        empty.push(stage.to_path_buf());
        return Vec::new();
    }
    let mut refused = sanitize(stage, git);
    if !alone {
        remove(stage);
        refused.push(
            "git: the repository this run created in .git was not kept (another sandboxed \
             run in this workspace still holds .git; run git init again once it ended)"
                .into(),
        );
        return refused;
    }
    if let Err(e) = land(stage, git) {
        remove(stage);
        refused.push(format!(
            "git: the repository this run created in .git was not kept ({e})"
        ));
    }
    refused
}

/// Moves `stage` over the placeholder `git` (nobody else holds it): our marker removed, then
/// two renames.
fn land(stage: &Path, git: &Path) -> std::io::Result<()> {
    let name = stage.file_name().unwrap_or_default().to_string_lossy();
    let beside = git.with_file_name(format!(".zeroclaw-git-{}", &name[PREFIX.len()..]));
    std::fs::rename(stage, &beside)?;
    let _ = std::fs::remove_file(git.join(crate::wire::PLACEHOLDER_MARKER));
    std::fs::rename(&beside, git).inspect_err(|_| remove(&beside))
}

/// The stage's own control files, its submodules' (`modules/**`) and its linked worktrees'
/// (`worktrees/*`).
fn sanitize(stage: &Path, git: &Path) -> Vec<String> {
    let mut refused = Vec::new();
    // The sandbox's own names (a fake stage a later sweep would take for a killed run's).
    for entry in std::fs::read_dir(stage).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if super::stage::name::is_ours(&name) {
            remove(&entry.path());
            refused.push(format!(
                "git: refused .git/{name} (a name the sandbox keeps for itself)"
            ));
        }
    }
    refused.extend(super::validate::sanitize_git_dir(
        stage, ".git", false, None,
    ));
    let workspace = git.parent().unwrap_or(git);
    super::validate::sanitize_modules(
        &stage.join("modules"),
        ".git/modules",
        workspace,
        &mut refused,
    );
    // Never through a symlink the run planted (it could point anywhere on the host).
    let worktrees = stage.join("worktrees");
    let listed = super::validate::real_dir(&worktrees).then(|| std::fs::read_dir(&worktrees));
    if let Some(Ok(list)) = listed {
        for entry in list.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                let shown = format!(".git/worktrees/{}", entry.file_name().to_string_lossy());
                refused.extend(super::validate::sanitize_git_dir(
                    &entry.path(),
                    &shown,
                    true,
                    None,
                ));
            }
        }
    }
    refused
}

fn remove(path: &Path) {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => drop(std::fs::remove_dir_all(path)),
        Ok(_) => drop(std::fs::remove_file(path)),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placeholder() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::Builder::new()
            .prefix("zc-git-stage-")
            .tempdir_in("/var/tmp")
            .unwrap();
        let git = d.path().join(".git");
        std::fs::create_dir(&git).unwrap();
        std::fs::write(git.join(crate::wire::PLACEHOLDER_MARKER), "").unwrap();
        (d, git)
    }

    fn plan_for(git: &Path, stage: &Path) -> Plan {
        let mut plan = crate::plan::build_on_host(
            crate::Backend::Namespaces,
            &crate::Profile::for_workspace(git.parent().unwrap()),
            vec!["true".into()],
            None,
        );
        plan.mounts = vec![MountOp::Stage {
            src: stage.to_path_buf(),
            path: git.to_path_buf(),
        }];
        // As `git::missing::guard` plans it: the placeholder says the repository is new.
        plan.placeholders = vec![crate::plan::Placeholder {
            path: git.to_path_buf(),
            dir: true,
            denied: true,
        }];
        plan
    }

    #[test]
    fn a_written_stage_lands_validated_an_empty_one_vanishes() {
        let (_d, git) = placeholder();
        let stage = new_stage(&git);
        let plan = plan_for(&git, &stage);
        prepare(&plan).unwrap();
        std::fs::create_dir_all(stage.join("hooks")).unwrap();
        std::fs::write(stage.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(stage.join("hooks/pre-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(stage.join("hooks/pre-commit.sample"), "#!/bin/sh\n").unwrap();
        std::fs::write(
            stage.join("config"),
            "[core]\n\tbare = false\n\tfsmonitor = x\n",
        )
        .unwrap();
        let refused = finish(&plan, |_| true);
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(git.join("HEAD").is_file());
        assert!(!git.join("hooks/pre-commit").exists());
        assert!(git.join("hooks/pre-commit.sample").exists());
        assert!(!git.join(crate::wire::PLACEHOLDER_MARKER).exists());
        assert!(
            !std::fs::read_to_string(git.join("config"))
                .unwrap()
                .contains("fsmonitor")
        );

        let (_d, git) = placeholder();
        let stage = new_stage(&git);
        let plan = plan_for(&git, &stage);
        prepare(&plan).unwrap();
        assert!(finish(&plan, |_| true).is_empty());
        assert!(!stage.exists());
    }

    /// Symlinks the run planted never lead validation outside the stage.
    #[test]
    fn validation_never_follows_a_planted_symlink() {
        let (d, git) = placeholder();
        let outside = d.path().join("outside");
        std::fs::create_dir_all(outside.join("w/hooks")).unwrap();
        std::fs::write(outside.join("w/hooks/x"), "keep").unwrap();
        std::fs::write(outside.join("attributes"), "* filter=x\n").unwrap();
        std::fs::write(outside.join("victim"), "keep").unwrap();
        let stage = new_stage(&git);
        let plan = plan_for(&git, &stage);
        prepare(&plan).unwrap();
        std::fs::write(stage.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(stage.join("config"), "[core]\n\tfsmonitor = x\n").unwrap();
        std::os::unix::fs::symlink(&outside, stage.join("worktrees")).unwrap();
        std::os::unix::fs::symlink(&outside, stage.join("info")).unwrap();
        std::os::unix::fs::symlink(outside.join("victim"), stage.join("config.zeroclaw-tmp"))
            .unwrap();
        finish(&plan, |_| true);
        let read = |p: &str| std::fs::read_to_string(outside.join(p)).unwrap();
        assert_eq!(read("w/hooks/x"), "keep");
        assert_eq!(read("attributes"), "* filter=x\n");
        assert_eq!(read("victim"), "keep");
        let config = std::fs::read_to_string(git.join("config")).unwrap();
        assert!(!config.contains("fsmonitor"), "{config}");
    }

    #[test]
    fn a_stage_is_dropped_while_another_run_holds_the_placeholder() {
        let (_d, git) = placeholder();
        let stage = new_stage(&git);
        let plan = plan_for(&git, &stage);
        prepare(&plan).unwrap();
        std::fs::write(stage.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let refused = finish(&plan, |_| false);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(!stage.exists());
        assert!(!git.join("HEAD").exists());
    }
}
