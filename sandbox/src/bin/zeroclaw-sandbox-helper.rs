//! A stand-alone helper binary: what the launcher re-executes when the host binary is not
//! itself a helper (tests, embedders). Does nothing unless started as the helper.

fn main() {
    zeroclaw_sandbox::helper::run_if_helper();
    eprintln!("zeroclaw-sandbox-helper: only started by zeroclaw_sandbox::Sandbox");
    std::process::exit(2);
}
