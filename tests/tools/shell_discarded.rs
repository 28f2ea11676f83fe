//! The shell tool tells the model, in one line, when a command left files in the private
//! places of its call (`/tmp` and `~` on the namespace rungs, `$TMPDIR` and `$HOME` on the
//! Landlock rung), which are discarded when it ends — on every rung the machine has — and
//! says nothing when it wrote only in the workspace or removed what it made there.

use crate::tools_support::{Scene, Setup, backend_available};

use serde_json::json;

const RUNGS: [&str; 3] = ["namespaces", "bubblewrap", "landlock"];
const NOTE: &str = "were discarded when it ended";

#[test]
fn files_left_in_private_places_are_told_and_workspace_writes_are_not() {
    for backend in RUNGS {
        if !backend_available(backend) {
            continue;
        }
        eprintln!("rung: {backend}");
        let s = Scene::start(Setup::level("supervised").backend(backend));
        let private = s.call(
            "shell",
            json!({"command": "echo a > /tmp/x; echo b > ~/y; echo c > kept"}),
        );
        private.assert_completed().assert_result_contains(NOTE);
        let note = private
            .text
            .lines()
            .find(|l| l.contains(NOTE))
            .unwrap_or_default();
        if backend == "landlock" {
            // No /tmp of its own there (writing it is refused): its HOME is private.
            assert!(note.contains("$HOME"), "{backend}: {note}");
        } else {
            assert!(note.contains("/tmp"), "{backend}: {note}");
            let home = s.home.path().canonicalize().unwrap();
            assert!(
                note.contains(&home.display().to_string()),
                "{backend}: {note}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(s.ws().join("kept")).unwrap(),
            "c\n",
            "{backend}: the workspace write landed"
        );
        let quiet = s.call(
            "shell",
            json!({"command": "echo d > kept2; t=$(mktemp); echo e > \"$t\"; rm \"$t\""}),
        );
        quiet.assert_completed();
        assert!(
            !quiet.text.contains(NOTE),
            "{backend}: {}",
            quiet.describe()
        );
        assert!(
            !quiet.model_saw.contains(NOTE),
            "{backend}: {}",
            quiet.model_saw
        );
        assert!(
            private.model_saw.contains(NOTE),
            "{backend}: {}",
            private.model_saw
        );
    }
}
