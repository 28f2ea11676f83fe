# Offline evaluation of nix/package.nix with a stand-in for rustPlatform.buildRustPackage that
# returns its arguments:
#
#   nix-instantiate --eval --strict --json nix/tests/eval-package.nix
#
# Checks what can be checked without nixpkgs (the version comes from Cargo.toml, every source
# path exists) and hands `postInstall` to packaging/check.sh, which runs it into a scratch
# $out and verifies the installed units (ExecStart pointing into that $out).
let
  lib = import ./stub-nixpkgs/lib.nix;
  tool = name: { outPath = "/usr/bin-stub/${name}"; };
  args = import ../package.nix {
    inherit lib;
    rustPlatform.buildRustPackage = a: a;
    bubblewrap = tool "bubblewrap";
    git = tool "git";
    python3 = tool "python3";
    # The derivation's bin/kill: check.sh substitutes the path back to the host's /usr.
    util-linux = {
      outPath = "/usr";
    };
  };
  cargoToml = builtins.fromTOML (builtins.readFile ../../Cargo.toml);
in
assert args.version == cargoToml.workspace.package.version || throw "version is not Cargo.toml's";
assert args.meta.mainProgram == "zeroclaw" || throw "mainProgram";
{
  inherit (args) pname version postInstall;
}
