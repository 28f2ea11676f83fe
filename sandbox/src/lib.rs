//! zeroclaw-sandbox: confines every child process zeroclaw starts.
