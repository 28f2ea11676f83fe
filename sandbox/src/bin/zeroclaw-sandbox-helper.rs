//! A stand-alone helper binary: what the launcher re-executes when the host binary is not
//! itself a helper (tests, embedders). Registers one demonstration operation, `read`
//! (payload: a path; result: the file's bytes). Does nothing unless started as the helper.

fn read(payload: &[u8]) -> Result<Vec<u8>, String> {
    let path = String::from_utf8_lossy(payload).into_owned();
    std::fs::read(&path).map_err(|e| format!("read {path}: {e}"))
}

fn main() {
    zeroclaw_sandbox::helper::run_if_helper_with(&[("read", read)]);
    eprintln!("zeroclaw-sandbox-helper: only started by zeroclaw_sandbox::Sandbox");
    std::process::exit(2);
}
