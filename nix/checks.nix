# `nix flake check`: the build, clippy, rustfmt, the test suite and (Linux) the NixOS VM test.
# The test suite's sandbox tests need unprivileged user namespaces; in a builder without them
# they skip with a printed reason (CI=true is not set inside the Nix build).
{ pkgs, self }:

let
  inherit (pkgs) lib zeroclaw;
  # Same sources and vendored dependencies as the package, another phase instead of the build.
  cargoCheck =
    name: phase:
    zeroclaw.overrideAttrs (old: {
      pname = "zeroclaw-${name}";
      nativeBuildInputs = old.nativeBuildInputs ++ [
        pkgs.clippy
        pkgs.rustfmt
      ];
      buildPhase = ''
        runHook preBuild
        ${phase}
        runHook postBuild
      '';
      doCheck = false;
      installPhase = "touch $out";
      postInstall = "";
    });
in
{
  build = zeroclaw;
  clippy = cargoCheck "clippy" "cargo clippy --workspace --all-targets --offline -- -D warnings";
  fmt = cargoCheck "fmt" "cargo fmt --all -- --check";
  tests = zeroclaw.overrideAttrs { doCheck = true; };
}
// lib.optionalAttrs pkgs.stdenv.isLinux {
  vm = pkgs.testers.runNixOSTest (import ./tests/vm.nix { inherit self pkgs; });
}
