# Offline evaluation of flake.nix's outputs against nix/tests/stub-nixpkgs (no nixpkgs here):
#
#   nix-instantiate --eval --strict --json nix/tests/eval-flake.nix
#
# Asserts the outputs the issue asks for exist on every system, with the right shape, and
# prints their names. It cannot build anything; `nix flake check` does that.
let
  flake = import ../../flake.nix;
  nixpkgs = {
    lib = import ./stub-nixpkgs/lib.nix;
    outPath = ./stub-nixpkgs;
  };
  self = flake.outputs { inherit self nixpkgs; };
  systems = builtins.attrNames self.packages;
  linux = "x86_64-linux";
  pkgs = import ./stub-nixpkgs { system = linux; };
  module = self.nixosModules.default {
    inherit pkgs;
    inherit (nixpkgs) lib;
  };
  checks = [
    {
      ok = systems == [ "aarch64-darwin" "aarch64-linux" "x86_64-darwin" "x86_64-linux" ];
      what = "packages for Linux and macOS";
    }
    {
      ok = builtins.all (s: self.packages.${s}.default.pname == "zeroclaw") systems;
      what = "packages.<system>.default is zeroclaw";
    }
    {
      ok = builtins.all (s: self.apps.${s}.default.type == "app" && builtins.isString self.apps.${s}.default.program) systems;
      what = "apps.<system>.default is an app (nix run)";
    }
    {
      ok = builtins.all (s: builtins.any (p: (p.pname or null) == "zeroclaw") self.devShells.${s}.default.inputsFrom) systems;
      what = "devShells.<system>.default builds on the package's inputs";
    }
    {
      ok = builtins.attrNames self.checks.${linux} == [ "build" "clippy" "fmt" "tests" "vm" ];
      what = "checks on Linux: build, clippy, fmt, tests, vm";
    }
    {
      ok = !(self.checks.aarch64-darwin ? vm);
      what = "no NixOS VM test on macOS";
    }
    {
      ok = self.checks.${linux}.tests.doCheck && !self.packages.${linux}.default.doCheck;
      what = "the tests check runs the test suite, the package build does not";
    }
    {
      ok = builtins.match ".*cargo clippy --workspace --all-targets.*-D warnings.*" self.checks.${linux}.clippy.buildPhase != null;
      what = "the clippy check denies warnings";
    }
    {
      ok = self.checks.${linux}.vm.test.name == "zeroclaw-socket-activation" && builtins.isFunction self.checks.${linux}.vm.test.nodes.machine;
      what = "the VM test is a runNixOSTest with a machine";
    }
    {
      ok = module.imports == [ ../module.nix ] && module.services.zeroclaw.package.content.pname == "zeroclaw";
      what = "nixosModules.default imports nix/module.nix and defaults the package to the flake's";
    }
    {
      ok = (self.overlays.default pkgs pkgs).zeroclaw.pname == "zeroclaw";
      what = "overlays.default adds pkgs.zeroclaw";
    }
    {
      ok = builtins.all (s: self.formatter.${s}._builder == "nixfmt-rfc-style") systems;
      what = "formatter is nixfmt";
    }
  ];
  failed = builtins.filter (c: !c.ok) checks;
in
if failed != [ ] then
  throw "eval-flake: ${builtins.concatStringsSep "\n  " (builtins.map (c: c.what) failed)}"
else
  {
    passed = builtins.map (c: c.what) checks;
  }
